// bf16emu io (internal): a small unsigned big integer, base 2^32 limbs, enough for
// exact decimal <-> binary conversion of floating-point values (a few thousand bits).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace bf16emu::io::detail {

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

inline int bitlen(const big &b) {
  if (b.zero()) return 0;
  return int(32 * (b.d.size() - 1)) + 32 - __builtin_clz(b.d.back());
}

} // namespace bf16emu::io::detail
