// bf16emu io: exact decimal printing. A small unsigned big integer (base 2^32 limbs)
// is enough: a sum of binary64 values is N / 2^k for an integer N, and N / 2^k = N * 5^k / 10^k.
#include "io/decimal.hpp"

#include "io/bigint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bf16emu::io {

namespace {

using detail::big;
using detail::limb;

// x = m * 2^e with m < 2^53 an integer.
void decompose(double x, std::uint64_t &m, int &e) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, 8);
  int be = int(bits >> 52 & 0x7FF);
  m = bits & ((std::uint64_t(1) << 52) - 1);
  if (be == 0)
    e = -1074;
  else {
    m |= std::uint64_t(1) << 52;
    e = be - 1075;
  }
}

} // namespace

std::string exact_decimal_sum(std::span<const double> terms) {
  bool any_nan = false, pos_inf = false, neg_inf = false, neg_zero_only = !terms.empty();
  int emin = 0;
  bool first = true;
  for (double x : terms) {
    if (std::isnan(x))
      any_nan = true;
    else if (std::isinf(x))
      (x > 0 ? pos_inf : neg_inf) = true;
    if (!(x == 0 && std::signbit(x))) neg_zero_only = false;
    if (std::isfinite(x) && x != 0) {
      std::uint64_t m;
      int e;
      decompose(x, m, e);
      if (first || e < emin) emin = e;
      first = false;
    }
  }
  if (any_nan || (pos_inf && neg_inf)) return "nan";
  if (pos_inf) return "inf";
  if (neg_inf) return "-inf";
  if (neg_zero_only) return "-0";
  big pos, neg;
  for (double x : terms) {
    if (x == 0) continue;
    std::uint64_t m;
    int e;
    decompose(x, m, e);
    big t = big::from(m);
    t.shl(unsigned(e - emin));
    (x > 0 ? pos : neg).add(t);
  }
  bool negative = cmp(pos, neg) < 0;
  big n = negative ? neg : pos;
  n.sub(negative ? pos : neg);
  if (n.zero()) return "0";
  std::string out = negative ? "-" : "";
  if (emin >= 0) {
    n.shl(unsigned(emin));
    return out + n.decimal();
  }
  unsigned k = unsigned(-emin);
  big frac = n.split_low(k); // n is now the integer part
  out += n.decimal();
  if (frac.zero()) return out;
  // frac / 2^k = frac * 5^k / 10^k: exactly k decimal digits after the point.
  for (unsigned i = 0; i < k; i += 13)
    frac.mul_small(i + 13 <= k ? 1220703125u : [&] {
      limb p = 1;
      for (unsigned j = i; j < k; ++j)
        p *= 5;
      return p;
    }());
  std::string f = frac.decimal();
  f.insert(0, k - f.size(), '0');
  while (!f.empty() && f.back() == '0')
    f.pop_back();
  return out + "." + f;
}

std::string exact_decimal_sum(std::initializer_list<double> terms) {
  return exact_decimal_sum(std::span<const double>(terms.begin(), terms.size()));
}

std::string exact_decimal(double x) { return exact_decimal_sum({x}); }

std::string shortest_decimal(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

} // namespace bf16emu::io
