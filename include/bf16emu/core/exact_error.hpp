// bf16emu: exact sums of a few binary64 terms, for the rounding error in the trace.
//
// The error of a rounding is a sum of at most four exactly representable binary64
// terms. grow() adds a term to a nonoverlapping expansion without error (Shewchuk's
// Grow-Expansion built on TwoSum); the result is reported as hi + lo, exact when the
// expansion needs no more than two components.
#pragma once

#include <cstdint>

#include "bf16emu/core/config.hpp"

namespace bf16emu::detail {

// 2^k as a binary64, for -1074 <= k <= 1023 (0 below, +Inf above).
BF16EMU_CXHD double pow2(int k) noexcept {
  if (k > 1023) return bit_cast<double>(std::uint64_t{0x7ff0000000000000});
  if (k >= -1022) return bit_cast<double>(std::uint64_t(k + 1023) << 52);
  if (k >= -1074) return bit_cast<double>(std::uint64_t{1} << (k + 1074));
  return 0.0;
}

// v * 2^k, exact whenever the true product is representable (v an integer < 2^53).
BF16EMU_CXHD double scale(double v, int k) noexcept {
  while (k > 1000) {
    v *= pow2(1000);
    k -= 1000;
  }
  while (k < -1000) { // first scale into range, then take the last step once
    if (k >= -2000) return (v * pow2(k + 1000)) * pow2(-1000);
    v *= pow2(-1000);
    k += 1000;
  }
  return v * pow2(k);
}

// Exact uint64 * 2^k as two binary64 terms (hi part and lo part).
struct two_terms {
  double hi, lo;
};
BF16EMU_CXHD two_terms split_u64(std::uint64_t v, int k) noexcept {
  return {scale(double(v >> 32), k + 32), scale(double(v & 0xffffffffu), k)};
}

// TwoSum (Knuth): a + b = sum + err exactly, sum = fl(a + b), for any binary64 a, b (no overflow),
// in round-to-nearest.
struct sum_err {
  double sum, err;
};
BF16EMU_CXHD sum_err two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double bv = s - a;
  const double av = s - bv;
  return {s, (a - av) + (b - bv)};
}

// The binary64 round-to-odd of an exact sum given as TwoSum's hi + lo: hi when lo is zero or hi's
// last bit is odd, else hi's neighbour toward lo (the one with the odd last bit; hi != 0 when lo
// != 0). The exact sum lies strictly between that neighbour and hi, so the round-to-odd value
// has the exact sum's binade and its bits down to 2 above its last bit, and its last bit is
// set exactly when a bit below is: any cut 2 or more bits above the last bit (a result of up to
// 51 bits) sees the exact sum's guard, round, sticky and inexact bits.
BF16EMU_CXHD double odd_binary64(sum_err x) noexcept {
  const std::uint64_t hb = bit_cast<std::uint64_t>(x.sum);
  const bool toward_zero = ((bit_cast<std::uint64_t>(x.err) ^ hb) >> 63) != 0; // lo of the other sign
  const bool move = x.err != 0 && (hb & 1) == 0;
  return bit_cast<double>(move ? (toward_zero ? hb - 1 : hb + 1) : hb);
}

struct expansion {
  double c[6]; // only c[0, n) is read: no zero fill (GCC 12 emits a slow rep stos for it)
  int n = 0;

  BF16EMU_CXHD void grow(double b) noexcept {
    if (b == 0) return;
    int m = 0;
    double out[6]; // only out[0, m) is read: no zero fill (GCC turned it into a slow rep stos)
    for (int i = 0; i < n; ++i) {
      const sum_err t = two_sum(c[i], b);
      if (t.err != 0 && m < 6) out[m++] = t.err;
      b = t.sum;
    }
    if (m < 6) out[m++] = b;
    n = m;
    for (int i = 0; i < n; ++i)
      c[i] = out[i];
  }

  // hi + lo after Shewchuk's Compress; `exact` is false if more than two components remain.
  BF16EMU_CXHD void to_pair(double &hi, double &lo, bool &exact) const noexcept {
    hi = 0;
    lo = 0;
    exact = true;
    if (n == 0) return;
    double g[6] = {};
    double q_hi = c[n - 1];
    int bottom = n - 1;
    for (int i = n - 2; i >= 0; --i) {
      const double s = q_hi + c[i]; // Fast2Sum, |q_hi| >= |c[i]|
      const double q = c[i] - (s - q_hi);
      if (q != 0) {
        g[bottom--] = s;
        q_hi = q;
      } else {
        q_hi = s;
      }
    }
    g[bottom] = q_hi;
    double h[6] = {};
    int top = 0;
    double acc = g[bottom];
    for (int i = bottom + 1; i < n; ++i) {
      const double s = g[i] + acc;
      const double q = acc - (s - g[i]);
      if (q != 0) h[top++] = q;
      acc = s;
    }
    h[top++] = acc;
    hi = h[top - 1];
    lo = top >= 2 ? h[top - 2] : 0.0;
    exact = top <= 2;
    if (top == 3) {
      // Compression pairs the top component first, so a value that two doubles hold only
      // with another split arrives as three components. Two other splits can do it:
      // (a) the two low components add exactly (e.g. hi = 2^111..2^59, lo = 2^57..2^5);
      // (b) the top component moved one ulp toward zero takes the second one's opposite sign.
      if (const sum_err low = two_sum(h[1], h[0]); low.err == 0) {
        hi = h[2];
        lo = low.sum;
        exact = true;
      } else if ((h[1] < 0) != (h[2] < 0)) {
        const double hi_tz = bit_cast<double>(bit_cast<std::uint64_t>(h[2]) - 1); // next toward zero
        const double r = (h[2] - hi_tz) + h[1]; // exact: |h[1]| <= ulp(h[2]), opposite signs
        if (const sum_err low = two_sum(r, h[0]); low.err == 0) {
          hi = hi_tz;
          lo = low.sum;
          exact = true;
        }
      }
    }
  }
};

} // namespace bf16emu::detail
