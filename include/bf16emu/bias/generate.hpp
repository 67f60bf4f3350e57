// bf16emu bias: addend generators.
//
// One trial is a start value s0 (FP32) and n products v_i * w_i of BF16 values; the
// accumulations sum s0 + sum_i v_i*w_i. The products of two BF16 values are exact in FP32
// (8 x 8 significant bits), so every accumulation mode sees the same exact addends.
//
// Knobs (struct knobs):
//   n         number of products
//   neg       probability that a value v_i (and the start value) is negative: the sign skew
//             (0.5 = symmetric)
//   spread    magnitude spread in binades: |v| = 2^-j * (1 + k/128), j uniform in
//             {0, ..., floor(spread)} (0: every |v| in [1, 2))
//   ones      share of weights exactly 1 (the P-bar = 1 case of attention: the product is the
//             BF16 value v itself)
//   weights   distribution of the other weights, all BF16 in (0, 1]:
//               uniform: u uniform in (0, 1];  softmax: exp(-t), t exponential with mean 4
//               (= u^4: mostly small, like unnormalised attention probabilities);  tiny: 2^-U(0,16) (wide
//               dynamic range)
//   residual  start value = b0 + r with b0 a BF16 value drawn like v and r of the same sign,
//             |r| < residual * ulp_bf16(b0) with random low FP32 bits: the running sum's low
//             bits that set the sticky bit of the final rounding. 0: s0 = 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bf16emu/bias/rng.hpp"
#include "bf16emu/core.hpp"

namespace bf16emu::bias {

enum class weight_dist : std::uint8_t { uniform, softmax, tiny };

inline const char *to_string(weight_dist w) noexcept {
  switch (w) {
  case weight_dist::uniform: return "uniform";
  case weight_dist::softmax: return "softmax";
  default: return "tiny";
  }
}

struct knobs {
  std::uint32_t n = 64;
  double neg = 0.5;
  double spread = 4;
  double ones = 0;
  weight_dist weights = weight_dist::uniform;
  double residual = 0;
};

struct trial_input {
  f32 start{};
  std::vector<bf16> v, w;
  std::vector<f32> x; // x_i = v_i * w_i, exact
};

// A BF16 value from the double d (rounded to nearest-even by the core).
inline bf16 to_bf16(double d) noexcept { return convert<bfloat16>(from_double(d)).value; }

inline bf16 draw_value(counter_rng &g, const knobs &k) {
  const std::uint64_t levels = static_cast<std::uint64_t>(k.spread < 0 ? 0 : std::floor(k.spread)) + 1;
  const int j = static_cast<int>(g.below(levels));
  const std::uint64_t frac = g.below(128);
  const bool neg = g.chance(k.neg);
  // sign | biased exponent 127 - j | 7-bit fraction: exactly (1 + frac/128) * 2^-j.
  return bf16::from_bits((neg ? 0x8000u : 0u) | (std::uint32_t(127 - j) << 7) | std::uint32_t(frac));
}

inline bf16 draw_weight(counter_rng &g, const knobs &k) {
  if (g.chance(k.ones)) return bf16::from_bits(0x3f80);
  double u = 1.0 - g.uniform(); // (0, 1]
  switch (k.weights) {
  case weight_dist::uniform: break;
  case weight_dist::softmax: u = u * u * u * u; break; // exp(-t), t ~ Exp(mean 4)
  case weight_dist::tiny: u = std::exp2(-16.0 * g.uniform()); break;
  }
  bf16 w = to_bf16(u);
  if (w.is_zero()) w = bf16::from_bits(0x0080); // keep weights nonzero (never reached in practice)
  return w;
}

// Generates trial `trial` of the configuration into `in` (buffers reused).
inline void generate(const knobs &k, std::uint64_t seed, std::uint64_t trial, trial_input &in) {
  counter_rng g{key(seed, stream::generate, trial)};
  in.v.resize(k.n);
  in.w.resize(k.n);
  in.x.resize(k.n);
  in.start = f32{};
  if (k.residual > 0) {
    const bf16 b0 = draw_value(g, k);
    // r = low * 2^(e - 23): the 16 FP32 bits below the BF16 lsb of b0, at most residual ulps.
    const double cap = std::fmin(k.residual, 1.0) * 65536.0;
    std::uint32_t low = static_cast<std::uint32_t>(g.uniform() * cap);
    if (low == 0) low = 1;
    if (low > 0xffff) low = 0xffff;
    in.start = f32::from_bits((std::uint32_t(b0.bits) << 16) | low);
  }
  for (std::uint32_t i = 0; i < k.n; ++i) {
    in.v[i] = draw_value(g, k);
    in.w[i] = draw_weight(g, k);
    in.x[i] = mul_to<binary32>(in.v[i], in.w[i]).value; // exact: 16 significant bits
  }
}

} // namespace bf16emu::bias
