// Tier d: TestFloat-style structured and random FP32 cases against the exact oracle:
// 1,000,000 cases per operation (add, sub, mul, fma, div, sqrt) per rounding mode (7,000,000 per
// operation, 42,000,000 in all). Operands mix uniform random bit patterns with structured ones:
// boundary exponents, subnormals, few-bit and run-of-ones significands, near-ties (alignment by
// 22..27 binades), cancellation, overflow/underflow products, exact quotients and squares.
// Environments are random per case: both tininess settings, NaN policies, flush/DAZ and
// saturation in some share, stochastic with random words including 0 and 0xFFFFFFFF.
// Value bits and all five flags must match.
#include <gtest/gtest.h>

#include <cmath>

#include "common.hpp"

namespace {

using namespace coretest;

constexpr long long kPerMode = 1000000;

std::uint32_t frac_pattern(rng &r) {
  switch (r.below(9)) {
  case 0: return 0;
  case 1: return 1;
  case 2: return 0x7FFFFF;
  case 3: return 0x400000;
  case 4: return 0x7FFFFF - std::uint32_t(r.below(4));
  case 5: { // a few bits set
    std::uint32_t f = 0;
    for (int i = r.below(3) + 1; i > 0; --i)
      f |= 1u << r.below(23);
    return f;
  }
  case 6: { // a run of ones
    const int lo = r.below(23), hi = lo + r.below(23 - lo);
    return ((2u << hi) - 1) & ~((1u << lo) - 1) & 0x7FFFFF;
  }
  case 7: return std::uint32_t(r.below(16));
  default: return r.u32() & 0x7FFFFF;
  }
}

std::uint32_t exp_pattern(rng &r) {
  static const std::uint32_t boundary[] = {0,   1,   2,   3,   22,  23,  24,  25,  26,  100, 125,
                                           126, 127, 128, 129, 150, 200, 230, 252, 253, 254, 255};
  switch (r.below(4)) {
  case 0:
  case 1: return boundary[r.below(int(sizeof boundary / sizeof boundary[0]))];
  default: return std::uint32_t(r.below(256));
  }
}

std::uint32_t gen(rng &r) {
  const std::uint32_t s = r.coin() ? 0x80000000u : 0u;
  switch (r.below(6)) {
  case 0:
  case 1: return r.u32();                                                             // uniform bit pattern
  case 2: return s | (exp_pattern(r) << 23) | frac_pattern(r);                        // structured
  case 3: return s | frac_pattern(r) | (r.below(4) == 0 ? 0u : (1u << 23));           // subnormal / tiny
  case 4: return s | ((std::uint32_t(r.below(40)) + 100) << 23) | frac_pattern(r);    // around 1
  default: return s | (std::uint32_t(r.below(254) + 1) << 23) | (r.u32() & 0x7FFFFF); // normal
  }
}

// A second addend related to a: cancellation, alignment near the rounding point, or independent.
std::uint32_t related_addend(rng &r, std::uint32_t a) {
  const std::uint32_t ea = (a >> 23) & 0xFF;
  switch (r.below(5)) {
  case 0: return (a ^ 0x80000000u) + std::uint32_t(r.below(7)) - 3u; // massive cancellation
  case 1: {                                                          // exponent gap 22..27
    const int d = 22 + r.below(6);
    const std::uint32_t eb = ea > std::uint32_t(d) ? ea - std::uint32_t(d) : 0u;
    return (r.coin() ? 0x80000000u : 0u) | (eb << 23) | frac_pattern(r);
  }
  case 2: return ((a & 0xFF800000u) ^ (r.coin() ? 0x80000000u : 0u)) | frac_pattern(r); // same binade
  default: return gen(r);
  }
}

float as_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
std::uint32_t as_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

enum class opk { add, sub, mul, fma, div, sqrt };

void run(opk op, std::uint64_t seed) {
  tally t;
  parallel_for(kPerMode * round_mode_count, [&](long long i) {
    const round_mode m = round_mode(i % round_mode_count);
    rng r(seed * 0x100000000ull + std::uint64_t(i));
    const env e = random_env(r, m);
    const auto oe = oenv(e);
    std::uint32_t a = gen(r), b = 0, c = 0;
    switch (op) {
    case opk::add:
    case opk::sub: b = related_addend(r, a); break;
    case opk::mul:
    case opk::div:
      b = gen(r);
      if (r.below(4) == 0) { // exponents summing near the overflow / underflow thresholds
        const std::uint32_t ea = (a >> 23) & 0xFF;
        // mul: biased exponent of the product ~ ea + eb - 127; overflow near 254, underflow near 1.
        // div: ~ ea - eb + 127.
        const std::int32_t ia = std::int32_t(ea);
        std::int32_t eb = op == opk::mul ? (r.coin() ? 381 - ia : 128 - ia - r.below(26))
                                         : (r.coin() ? ia - 127 : ia + 126 + r.below(26));
        eb += r.below(5) - 2;
        if (eb >= 1 && eb <= 254) b = (b & 0x807FFFFFu) | (std::uint32_t(eb) << 23);
      }
      if (op == opk::div && r.below(4) == 0) { // exact quotient: a = b * q with q of few bits
        const float q = float(r.below(64) + 1) * std::ldexp(1.0f, r.below(20) - 10);
        const double p = double(as_float(b)) * double(q);
        if (std::isfinite(p) && double(float(p)) == p) a = as_bits(float(p));
      }
      break;
    case opk::fma: {
      b = gen(r);
      const double p = double(as_float(a)) * double(as_float(b)); // exact (48-bit product)
      switch (r.below(4)) {
      case 0: c = as_bits(-float(p)); break;                   // cancellation
      case 1: c = related_addend(r, as_bits(float(p))); break; // near-tie alignment
      default: c = gen(r); break;
      }
      if (!std::isfinite(p) && r.coin()) c = gen(r);
      break;
    }
    case opk::sqrt:
      if (r.below(3) == 0) { // exact squares
        const float s = float(r.below(4096) + 1) * std::ldexp(1.0f, r.below(120) - 60);
        a = as_bits(s * s);
      }
      break;
    }
    const f32 x = f32::from_bits(a), y = f32::from_bits(b), z = f32::from_bits(c);
    const oracle::operand oa{a, oracle::fp32}, ob{b, oracle::fp32}, oc{c, oracle::fp32};
    auto what = [&](const char *name) {
      return std::string(name) + " a=" + hex(a) + " b=" + hex(b) + " c=" + hex(c) + " " + env_string(e);
    };
    switch (op) {
    case opk::add:
      check_result(t, add(x, y, e), oracle::add(oa, ob, oracle::fp32, oe), [&] { return what("add"); });
      break;
    case opk::sub:
      check_result(t, sub(x, y, e), oracle::sub(oa, ob, oracle::fp32, oe), [&] { return what("sub"); });
      break;
    case opk::mul:
      check_result(t, mul(x, y, e), oracle::mul(oa, ob, oracle::fp32, oe), [&] { return what("mul"); });
      break;
    case opk::fma:
      check_result(t, fma(x, y, z, e), oracle::fma(oa, ob, oc, oracle::fp32, oe),
                   [&] { return what("fma"); });
      break;
    case opk::div:
      check_result(t, div(x, y, e), oracle::div(oa, ob, oracle::fp32, oe), [&] { return what("div"); });
      break;
    case opk::sqrt:
      check_result(t, sqrt(x, e), oracle::sqrt(oa, oracle::fp32, oe), [&] { return what("sqrt"); });
      break;
    }
  });
  EXPECT_EQ(t.cases.load(), kPerMode * round_mode_count);
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("%lld cases (%lld per mode), %lld mismatches\n", t.cases.load(), kPerMode, t.bad.load());
}

TEST(RandomFp32, Add) { run(opk::add, 11); }
TEST(RandomFp32, Sub) { run(opk::sub, 12); }
TEST(RandomFp32, Mul) { run(opk::mul, 13); }
TEST(RandomFp32, Fma) { run(opk::fma, 14); }
TEST(RandomFp32, Div) { run(opk::div, 15); }
TEST(RandomFp32, Sqrt) { run(opk::sqrt, 16); }

// Mixed-format operations (bf16 * bf16 + fp32 -> fp32/bf16, fp16 -> e4m3, ...): 200,000 each.
template <class Out, class FA, class FB, class FC> void mixed(std::uint64_t seed) {
  tally t;
  parallel_for(200000, [&](long long i) {
    rng r(seed * 0x100000000ull + std::uint64_t(i));
    const env e = random_env(r, round_mode(i % round_mode_count));
    const auto oe = oenv(e);
    auto pick = [&](int width) {
      const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
      if (width == 32) return std::uint64_t(gen(r));
      return r.below(3) == 0 ? (std::uint64_t(gen(r)) >> (32 - width)) & mask : r.next() & mask;
    };
    const std::uint64_t a = pick(FA::width), b = pick(FB::width), c = pick(FC::width);
    const auto x = fp<FA>::from_bits(a);
    const auto y = fp<FB>::from_bits(b);
    const auto z = fp<FC>::from_bits(c);
    const oracle::operand oa{a, ofmt<FA>()}, ob{b, ofmt<FB>()}, oc{c, ofmt<FC>()};
    auto what = [&](const char *name) {
      return std::string(name) + " " + oracle::name(ofmt<FA>()) + "," + oracle::name(ofmt<FB>()) + "," +
             oracle::name(ofmt<FC>()) + "->" + oracle::name(ofmt<Out>()) + " a=" + hex(a) + " b=" + hex(b) +
             " c=" + hex(c) + " " + env_string(e);
    };
    check_result(t, fma_to<Out>(x, y, z, e), oracle::fma(oa, ob, oc, ofmt<Out>(), oe),
                 [&] { return what("fma_to"); });
    check_result(t, add_to<Out>(x, z, e), oracle::add(oa, oc, ofmt<Out>(), oe),
                 [&] { return what("add_to"); });
    check_result(t, sub_to<Out>(z, y, e), oracle::sub(oc, ob, ofmt<Out>(), oe),
                 [&] { return what("sub_to"); });
    check_result(t, mul_to<Out>(x, y, e), oracle::mul(oa, ob, ofmt<Out>(), oe),
                 [&] { return what("mul_to"); });
    check_result(t, div_to<Out>(z, x, e), oracle::div(oc, oa, ofmt<Out>(), oe),
                 [&] { return what("div_to"); });
    check_result(t, sqrt_to<Out>(z, e), oracle::sqrt(oc, ofmt<Out>(), oe), [&] { return what("sqrt_to"); });
  });
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("%lld checks, %lld mismatches\n", t.cases.load(), t.bad.load());
}

TEST(RandomMixed, Bf16Bf16Fp32ToFp32) { mixed<binary32, bfloat16, bfloat16, binary32>(21); }
TEST(RandomMixed, Bf16Bf16Fp32ToBf16) { mixed<bfloat16, bfloat16, bfloat16, binary32>(22); }
TEST(RandomMixed, Fp16Fp16Fp32ToFp16) { mixed<binary16, binary16, binary16, binary32>(23); }
TEST(RandomMixed, E4m3E5m2Fp16ToE4m3) { mixed<float8_e4m3, float8_e4m3, float8_e5m2, binary16>(24); }
TEST(RandomMixed, Tf32Tf32Fp32ToFp32) { mixed<binary32, tensorfloat32, tensorfloat32, binary32>(25); }
TEST(RandomMixed, Fp32Fp32Fp32ToE5m2) { mixed<float8_e5m2, binary32, binary32, binary32>(26); }

} // namespace
