// Operand reading against independent references: the C library's strtof (correctly rounded,
// nearest-even) for fp32, and MPFR (precision, exponent range and mpfr_subnormalize set to the
// format) for bf16, fp16, tf32 and e5m2. Inputs: random decimal strings of 1..30 digits over
// each format's whole range, plus exact midpoints between neighbours, nudged by one unit of
// the 40th digit either way (the hard cases for double rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/names.hpp"
#include "io/number.hpp"

#ifdef BF16EMU_HAVE_MPFR
#include <mpfr.h>
#endif

using namespace bf16emu;
using namespace bf16emu::io;

namespace {

std::vector<std::string> decimal_inputs(std::mt19937_64 &rng, int lo_exp10, int hi_exp10, int count) {
  std::vector<std::string> v;
  std::uniform_int_distribution<int> ndig(1, 30), digit(0, 9), e10(lo_exp10, hi_exp10), sign(0, 1);
  for (int i = 0; i < count; ++i) {
    std::string s = sign(rng) ? "-" : "";
    int n = ndig(rng);
    s += char('1' + digit(rng) % 9);
    s += '.';
    for (int k = 1; k < n; ++k)
      s += char('0' + digit(rng));
    s += 'e';
    s += std::to_string(e10(rng));
    v.push_back(s);
  }
  return v;
}

// Midpoint of two neighbours (bits b and b+1 of a format of `prec` bits, as doubles x < y),
// printed exactly by printf, with the digit after it nudged.
void add_midpoints(std::vector<std::string> &v, double x, double y) {
  char buf[1200];
  double mid = x + (y - x) / 2; // exact: one more bit than the format, well within binary64
  std::snprintf(buf, sizeof buf, "%.1100e", mid);
  std::string s = buf;
  std::size_t e = s.find('e');
  std::string mant = s.substr(0, e), ex = s.substr(e);
  while (mant.back() == '0')
    mant.pop_back();
  if (mant.back() == '.') mant += '0';
  v.push_back(mant + ex);
  v.push_back(mant + "0000000000000000000000000000000000000001" + ex);
  // Just below: the same digits minus one unit far below (mid - 10^-k), via 9999 after a borrow
  // is awkward; instead use the neighbour midpoint's other side: x + (y-x)/2 - tiny.
  double below = std::nextafter(mid, x);
  std::snprintf(buf, sizeof buf, "%.60e", below);
  v.push_back(buf);
}

} // namespace

TEST(NumberReference, Fp32AgainstStrtof) {
  std::mt19937_64 rng(20251022);
  auto in = decimal_inputs(rng, -47, 40, 200000);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7F7FFFFE);
  for (int i = 0; i < 20000; ++i) {
    std::uint32_t b = bits(rng);
    float x, y;
    std::uint32_t b1 = b + 1;
    std::memcpy(&x, &b, 4);
    std::memcpy(&y, &b1, 4);
    add_midpoints(in, x, y);
  }
  for (const auto &s : in) {
    float f = std::strtof(s.c_str(), nullptr);
    std::uint32_t want;
    std::memcpy(&want, &f, 4);
    ASSERT_EQ(parse_operand(s, format_id::fp32).bits, want) << s;
  }
}

#ifdef BF16EMU_HAVE_MPFR
namespace {

// Reference: round the decimal with MPFR to the format, then encode the (exact) value.
std::uint64_t mpfr_reference(const std::string &s, format_id f, bool &exact) {
  const format_desc d = describe(f);
  mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  mpfr_set_emin(d.emin - d.frac_bits + 1); // 2^(emin-M) = 0.1b x 2^(emin-M+1)
  mpfr_set_emax(d.emax + 1);
  mpfr_t x;
  mpfr_init2(x, d.precision);
  int t = mpfr_strtofr(x, s.c_str(), nullptr, 10, MPFR_RNDN);
  t = mpfr_check_range(x, t, MPFR_RNDN);
  t = mpfr_subnormalize(x, t, MPFR_RNDN);
  exact = t == 0;
  double v = mpfr_get_d(x, MPFR_RNDN); // exact: at most 24 bits, in binary64 range
  mpfr_clear(x);
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  std::uint64_t sign = std::signbit(v) ? std::uint64_t{1} << (d.width - 1) : 0;
  double a = std::fabs(v);
  if (std::isinf(a)) return sign | (std::uint64_t(1 << d.exp_bits) - 1) << d.frac_bits;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int unbiased = e - 1;
  if (unbiased < d.emin) return sign | std::uint64_t(std::ldexp(a, -(d.emin - d.frac_bits)));
  std::uint64_t frac =
      std::uint64_t(std::ldexp(a, d.frac_bits - unbiased)) - (std::uint64_t{1} << d.frac_bits);
  return sign | std::uint64_t(unbiased + d.bias) << d.frac_bits | frac;
}

} // namespace

TEST(NumberReference, SmallFormatsAgainstMpfr) {
  std::mt19937_64 rng(7);
  struct {
    format_id f;
    int lo, hi;
  } const cases[] = {{format_id::bf16, -42, 39},
                     {format_id::fp16, -9, 6},
                     {format_id::tf32, -42, 39},
                     {format_id::e5m2, -9, 6}};
  for (const auto &c : cases) {
    auto in = decimal_inputs(rng, c.lo, c.hi, 50000);
    const format_desc d = describe(c.f);
    std::uniform_int_distribution<std::uint64_t> bits(0, ((std::uint64_t(1) << (d.width - 1)) - 1) -
                                                             (1u << d.frac_bits) - 1);
    for (int i = 0; i < 5000; ++i) {
      std::uint64_t b = bits(rng);
      // Neighbours b, b+1 as doubles (positive finite encodings below the top binade code).
      auto value = [&](std::uint64_t p) {
        int be = int(p >> d.frac_bits);
        double m = double(p & ((std::uint64_t(1) << d.frac_bits) - 1));
        return be == 0 ? std::ldexp(m, d.emin - d.frac_bits)
                       : std::ldexp(m + std::ldexp(1.0, d.frac_bits), be - d.bias - d.frac_bits);
      };
      add_midpoints(in, value(b), value(b + 1));
    }
    for (const auto &s : in) {
      bool exact = false;
      std::uint64_t want = mpfr_reference(s, c.f, exact);
      operand o = parse_operand(s, c.f);
      ASSERT_EQ(o.bits, want) << s << " in " << d.name;
      ASSERT_EQ(o.exact, exact) << s << " in " << d.name;
    }
  }
}
#endif
