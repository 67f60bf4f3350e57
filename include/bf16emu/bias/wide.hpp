// bf16emu bias: exact wide fixed-point accumulators.
//
// fixed<Limbs, LsbExp> is a two's-complement integer of Limbs*64 bits counting units of
// 2^LsbExp. Every binary floating-point value whose last significant bit is at or above
// 2^LsbExp is added without error, so
//   - fixed<6, -149> holds any sum of up to 2^40 fp32/bf16 values exactly (the reference
//     sum of an accumulation), and
//   - superacc = fixed<34, -1074> holds any sum of up to 2^64 finite binary64 values
//     exactly (the sufficient statistics of the bias tool: sums of errors and of squared
//     errors). Integer addition is associative, so statistics merged from threads, chunks
//     or shards in any order give the same bits: the basis of --threads and --shard.
#pragma once

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>

#include "bf16emu/core/format.hpp"

namespace bf16emu::bias {

template <int Limbs, int LsbExp> struct fixed {
  static_assert(Limbs >= 2);
  static constexpr int limbs = Limbs;
  static constexpr int lsb_exp = LsbExp;
  std::array<std::uint64_t, Limbs> w{};

  // Adds (neg ? -1 : 1) * mag * 2^exp. Returns false (and adds nothing) when bits of mag
  // fall below 2^LsbExp or above the top limb; the caller decides what that means.
  bool add_scaled(bool neg, std::uint64_t mag, int exp) noexcept {
    if (mag == 0) return true;
    int pos = exp - LsbExp;
    if (pos < 0) {
      const int drop = -pos;
      if (drop >= 64 || (mag & ((std::uint64_t{1} << drop) - 1)) != 0) return false;
      mag >>= drop;
      pos = 0;
    }
    const int li = pos / 64, sh = pos % 64;
    const std::uint64_t lo = mag << sh;
    const std::uint64_t hi = sh ? mag >> (64 - sh) : 0;
    if (li >= Limbs || (li == Limbs - 1 && hi != 0)) return false;
    if (!neg) {
      std::uint64_t carry = 0;
      for (int i = li; i < Limbs; ++i) {
        const std::uint64_t add = (i == li ? lo : i == li + 1 ? hi : 0);
        const std::uint64_t s1 = w[i] + add;
        const std::uint64_t c1 = s1 < add;
        const std::uint64_t s2 = s1 + carry;
        const std::uint64_t c2 = s2 < carry;
        w[i] = s2;
        carry = c1 | c2;
        if (!carry && i >= li + 1) break;
      }
    } else {
      std::uint64_t borrow = 0;
      for (int i = li; i < Limbs; ++i) {
        const std::uint64_t sub = (i == li ? lo : i == li + 1 ? hi : 0);
        const std::uint64_t d1 = w[i] - sub;
        const std::uint64_t b1 = w[i] < sub;
        const std::uint64_t d2 = d1 - borrow;
        const std::uint64_t b2 = d1 < borrow;
        w[i] = d2;
        borrow = b1 | b2;
        if (!borrow && i >= li + 1) break;
      }
    }
    return true;
  }

  // Adds a finite value of any format (bit pattern); false for NaN/Inf or lost bits.
  template <class F> bool add(fp<F> x, bool negate = false) noexcept {
    if (!x.is_finite()) return false;
    const int be = x.biased_exp();
    std::uint64_t sig = x.frac();
    int e = F::emin;
    if (be != 0) {
      sig |= std::uint64_t{1} << F::frac_bits;
      e = be - F::bias;
    }
    return add_scaled(x.sign() != negate, sig, e - F::frac_bits);
  }
  bool add(double x) noexcept { return add(from_double(x)); }

  void add(const fixed &o) noexcept {
    std::uint64_t carry = 0;
    for (int i = 0; i < Limbs; ++i) {
      const std::uint64_t s1 = w[i] + o.w[i];
      const std::uint64_t c1 = s1 < o.w[i];
      const std::uint64_t s2 = s1 + carry;
      carry = c1 | (s2 < carry);
      w[i] = s2;
    }
  }
  void negate() noexcept {
    std::uint64_t carry = 1;
    for (int i = 0; i < Limbs; ++i) {
      w[i] = ~w[i] + carry;
      carry = carry && w[i] == 0;
    }
  }
  bool negative() const noexcept { return (w[Limbs - 1] >> 63) != 0; }
  bool is_zero() const noexcept {
    for (auto x : w)
      if (x) return false;
    return true;
  }
  int sign() const noexcept { return is_zero() ? 0 : negative() ? -1 : 1; }

  // floor(log2 |value|) for a nonzero value (exact, from the leading bit); 0 for zero.
  int ilogb() const noexcept {
    fixed m = *this;
    if (m.negative()) m.negate();
    for (int top = Limbs - 1; top >= 0; --top)
      if (m.w[top]) return top * 64 + 63 - detail::clz64(m.w[top]) + LsbExp;
    return 0;
  }

  // The value rounded to nearest-even binary64 (the 64 leading bits plus a sticky bit are
  // converted by the hardware's correctly rounded uint64 -> double).
  double to_double() const noexcept {
    fixed m = *this;
    const bool neg = m.negative();
    if (neg) m.negate();
    int top = Limbs - 1;
    while (top >= 0 && m.w[top] == 0)
      --top;
    if (top < 0) return neg ? -0.0 : 0.0;
    const int lead = 63 - detail::clz64(m.w[top]); // bit index within limb `top`
    const int msb = top * 64 + lead;               // global bit index of the leading one
    const int low = msb - 63;                      // global index of bit 0 of the 64-bit window
    std::uint64_t win = 0;
    bool sticky = false;
    if (low <= 0) {
      win = m.bit_window(0) << -low;
    } else {
      win = m.bit_window(low);
      for (int b = 0; b < low && !sticky; b += 64) {
        const int li = b / 64;
        const int upto = low - b; // bits of this limb below `low`
        const std::uint64_t mask = upto >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << upto) - 1;
        sticky = (m.w[li] & mask) != 0;
      }
    }
    if (sticky) win |= 1;
    const double v = std::ldexp(static_cast<double>(win), low + LsbExp);
    return neg ? -v : v;
  }

  friend bool operator==(const fixed &a, const fixed &b) noexcept { return a.w == b.w; }

private:
  // 64 bits starting at global bit index `low` (>= 0).
  std::uint64_t bit_window(int low) const noexcept {
    const int li = low / 64, sh = low % 64;
    std::uint64_t v = w[li] >> sh;
    if (sh && li + 1 < Limbs) v |= w[li + 1] << (64 - sh);
    return v;
  }
};

// Exact sums of fp32 (or narrower) values: the reference of every accumulation.
using exact_sum = fixed<6, -149>;
// Exact sums of finite binary64 values: the sufficient statistics.
using superacc = fixed<34, -1074>;

} // namespace bf16emu::bias
