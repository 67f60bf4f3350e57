// bf16emu pitfalls: how far apart two tensors are, in the units the tools report.
//
//   rel_norm = ||x - y||_2 / ||y||_2 (binary64, compensated sums), rel_eps = rel_norm / 2^-7
//   (units of BF16 epsilon), differing = count of elements whose bits differ (binary64 bit
//   patterns of the held values), max_ulp = max
//   distance in units in the last place of the tensors' format, counted as the number of
//   representable values between the two (the encodings' order; +0 and -0 are one value).
//   Near zero the ULP count explodes (two tiny values of opposite sign are ~2^31 FP32 values
//   apart), so the scale-aware max_abs_ulps = max |x - y| / ulp(max |y|) is given too: the
//   largest error in units of the last place of the tensor's largest reference element.
//
// Every value must be exactly representable in the stated format (BF16, FP32 or binary64):
// the conversions below are then exact and only read the bit pattern.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/core.hpp"

namespace bf16emu::pitfalls {

inline constexpr double bf16_eps = 0x1p-7;

// Storage formats of attention tensors by fraction bits: 7 = BF16, 23 = FP32, 52 = binary64.
inline std::int64_t ordinal(double x, int frac_bits) {
  std::uint64_t mag;
  bool neg;
  if (frac_bits == 7) {
    const bf16 b = convert<bfloat16>(from_double(x)).value;
    mag = b.bits & 0x7fffu, neg = (b.bits >> 15) != 0;
  } else if (frac_bits == 23) {
    const f32 b = convert<binary32>(from_double(x)).value;
    mag = b.bits & 0x7fffffffu, neg = (b.bits >> 31) != 0;
  } else {
    std::uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    mag = u & 0x7fffffffffffffffull, neg = (u >> 63) != 0;
  }
  return neg ? -std::int64_t(mag) : std::int64_t(mag);
}

inline std::uint64_t ulp_distance(double a, double b, int frac_bits) {
  const std::int64_t d = ordinal(a, frac_bits) - ordinal(b, frac_bits);
  return std::uint64_t(d < 0 ? -d : d);
}

struct diff_stats {
  std::uint64_t n = 0, differing = 0, max_ulp = 0;
  double rel_norm = 0, max_abs = 0, max_ref = 0;
  int frac_bits = 52;
  double rel_eps() const { return rel_norm / bf16_eps; }
  double max_abs_ulps() const { return max_ref > 0 ? max_abs / attention::ulp_of(max_ref, frac_bits) : 0.0; }
};

// x compared with the reference y.
inline diff_stats compare(const std::vector<double> &x, const std::vector<double> &y, int frac_bits) {
  diff_stats s;
  s.n = x.size();
  s.frac_bits = frac_bits;
  attention::comp_sum num, den;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    const double e = x[i] - y[i];
    num.add(e * e);
    den.add(y[i] * y[i]);
    s.max_abs = std::fmax(s.max_abs, std::fabs(e));
    s.max_ref = std::fmax(s.max_ref, std::fabs(y[i]));
    std::uint64_t bx, by;
    std::memcpy(&bx, &x[i], sizeof bx);
    std::memcpy(&by, &y[i], sizeof by);
    if (bx != by) { // bitwise: +0 and -0 differ (0 ulp apart)
      ++s.differing;
      const std::uint64_t u = ulp_distance(x[i], y[i], frac_bits);
      if (u > s.max_ulp) s.max_ulp = u;
    }
  }
  s.rel_norm = den.value() > 0 ? std::sqrt(num.value() / den.value()) : (num.value() > 0 ? INFINITY : 0.0);
  return s;
}

// FNV-1a over the bit patterns: a short fingerprint to show two runs gave the same bits.
inline std::uint64_t fingerprint(const std::vector<double> &x, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (double v : x) {
    std::uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    for (int b = 0; b < 8; ++b) {
      h ^= (u >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

} // namespace bf16emu::pitfalls
