// bf16emu support: exact decimal printing. A small unsigned big integer (base 2^32 limbs)
// is enough: a sum of binary64 values is N / 2^k for an integer N, and N / 2^k = N * 5^k / 10^k.
#include "support/decimal.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bf16emu::support {

namespace {

using limb = std::uint32_t;
struct big {
  std::vector<limb> d; // little-endian, no leading zero limbs

  void trim() {
    while (!d.empty() && d.back() == 0)
      d.pop_back();
  }
  bool zero() const { return d.empty(); }
  static big from(std::uint64_t v) {
    big b;
    b.d = {limb(v), limb(v >> 32)};
    b.trim();
    return b;
  }
  void shl(unsigned n) {
    if (zero() || n == 0) return;
    unsigned words = n / 32, bits = n % 32;
    std::vector<limb> r(d.size() + words + 1, 0);
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::uint64_t v = std::uint64_t(d[i]) << bits;
      r[i + words] |= limb(v);
      r[i + words + 1] |= limb(v >> 32);
    }
    d = std::move(r);
    trim();
  }
  void mul_small(limb m) {
    std::uint64_t carry = 0;
    for (auto &x : d) {
      std::uint64_t v = std::uint64_t(x) * m + carry;
      x = limb(v);
      carry = v >> 32;
    }
    if (carry) d.push_back(limb(carry));
    trim();
  }
  limb div_small(limb m) { // *this /= m, returns remainder
    std::uint64_t rem = 0;
    for (std::size_t i = d.size(); i-- > 0;) {
      std::uint64_t v = (rem << 32) | d[i];
      d[i] = limb(v / m);
      rem = v % m;
    }
    trim();
    return limb(rem);
  }
  friend int cmp(const big &a, const big &b) {
    if (a.d.size() != b.d.size()) return a.d.size() < b.d.size() ? -1 : 1;
    for (std::size_t i = a.d.size(); i-- > 0;)
      if (a.d[i] != b.d[i]) return a.d[i] < b.d[i] ? -1 : 1;
    return 0;
  }
  void add(const big &b) {
    if (d.size() < b.d.size()) d.resize(b.d.size(), 0);
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::uint64_t v = std::uint64_t(d[i]) + (i < b.d.size() ? b.d[i] : 0) + carry;
      d[i] = limb(v);
      carry = v >> 32;
    }
    if (carry) d.push_back(limb(carry));
  }
  void sub(const big &b) { // requires *this >= b
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::int64_t v = std::int64_t(d[i]) - (i < b.d.size() ? std::int64_t(b.d[i]) : 0) - borrow;
      borrow = v < 0;
      d[i] = limb(v + (borrow ? (std::int64_t(1) << 32) : 0));
    }
    trim();
  }
  // Bits [0, n) as a new number, and *this >>= n.
  big split_low(unsigned n) {
    big lo;
    unsigned words = n / 32, bits = n % 32;
    lo.d.assign(d.begin(), d.begin() + std::min<std::size_t>(d.size(), words + (bits ? 1 : 0)));
    if (bits && lo.d.size() == words + 1) lo.d[words] &= (limb(1) << bits) - 1;
    lo.trim();
    big hi;
    for (std::size_t i = words; i < d.size(); ++i) {
      std::uint64_t v = d[i] >> bits;
      if (bits && i + 1 < d.size()) v |= std::uint64_t(d[i + 1]) << (32 - bits);
      hi.d.push_back(limb(v));
    }
    hi.trim();
    *this = std::move(hi);
    return lo;
  }
  std::string decimal() const {
    if (zero()) return "0";
    big t = *this;
    std::string s;
    while (!t.zero()) {
      limb r = t.div_small(1000000000u);
      for (int i = 0; i < 9; ++i) {
        s.push_back(char('0' + r % 10));
        r /= 10;
      }
    }
    while (s.size() > 1 && s.back() == '0')
      s.pop_back();
    std::reverse(s.begin(), s.end());
    return s;
  }
};

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

} // namespace bf16emu::support
