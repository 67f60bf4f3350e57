// bf16emu CPU models: the input lanes the real-CPU probe (bf16emu cpu-probe) and the exact
// tests run through. Counter-based (splitmix64 of seed and index), so lane i is the same on any
// thread count, and pure numerics (no <random>, no state).
//
//   kind 0  normal values of moderate range (products and accumulator within ~2^+-40)
//   kind 1  random bit patterns, one in eight operands a special (zeros, denormals, Inf, NaNs)
//   kind 2  near-cancelling pairs: a[2i+1] = -a[2i] (last bits perturbed), b[2i+1] = b[2i],
//           a small accumulator
//   kind 3  large exponent spreads: every biased exponent 1..254
#pragma once

#include <cstdint>

#include "bf16emu/core/config.hpp"

namespace bf16emu::cpu {

inline constexpr int vector_kinds = 4;
inline constexpr int max_lane_k = 8;

struct lane_inputs {
  std::uint16_t a[max_lane_k]{}, b[max_lane_k]{};
  std::uint32_t c = 0;
};

namespace detail {

BF16EMU_CXHD std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct bits_stream {
  std::uint64_t state;
  BF16EMU_CXHD std::uint64_t next() noexcept { return splitmix64(state++); }
  BF16EMU_CXHD std::uint32_t below(std::uint32_t n) noexcept { return std::uint32_t(next() % n); }
  // Random sign and fraction, biased exponent in [lo, hi].
  BF16EMU_CXHD std::uint16_t bf16_exp(int lo, int hi) noexcept {
    const std::uint64_t r = next();
    return std::uint16_t(((r & 1) << 15) | (std::uint64_t(lo + int(below(std::uint32_t(hi - lo + 1)))) << 7) |
                         ((r >> 1) & 0x7F));
  }
  BF16EMU_CXHD std::uint32_t fp32_exp(int lo, int hi) noexcept {
    const std::uint64_t r = next();
    return std::uint32_t(((r & 1) << 31) |
                         (std::uint64_t(lo + int(below(std::uint32_t(hi - lo + 1)))) << 23) |
                         ((r >> 1) & 0x7FFFFF));
  }
  BF16EMU_CXHD std::uint16_t bf16_any() noexcept {
    constexpr std::uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80,
                                         0x7FC0, 0x7F81, 0xFFA5, 0x7F7F, 0x0080, 0xFFFF};
    const std::uint64_t r = next();
    return (r & 7) == 0 ? special[(r >> 3) % 12] : std::uint16_t(r >> 16);
  }
  BF16EMU_CXHD std::uint32_t fp32_any() noexcept {
    constexpr std::uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu,
                                         0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
                                         0x7F7FFFFFu, 0x00800000u, 0xFFC00001u, 0x80800000u};
    const std::uint64_t r = next();
    return (r & 7) == 0 ? special[(r >> 3) % 12] : std::uint32_t(r >> 32);
  }
};

} // namespace detail

// Lane `index` of stream `seed`: k BF16 products (k <= max_lane_k) and an FP32 accumulator.
BF16EMU_CXHD lane_inputs make_lane(int kind, int k, std::uint64_t seed, std::uint64_t index) noexcept {
  detail::bits_stream s{detail::splitmix64(seed ^ 0xC0FFEEull) ^ (index * 0x9E3779B97F4A7C15ull)};
  lane_inputs l;
  switch (kind) {
  case 0:
    for (int i = 0; i < k; ++i) {
      l.a[i] = s.bf16_exp(107, 147);
      l.b[i] = s.bf16_exp(107, 147);
    }
    l.c = s.fp32_exp(87, 167);
    break;
  case 1:
    for (int i = 0; i < k; ++i) {
      l.a[i] = s.bf16_any();
      l.b[i] = s.bf16_any();
    }
    l.c = s.fp32_any();
    break;
  case 2:
    for (int i = 0; i < k; ++i) {
      if (i % 2 == 0) {
        l.a[i] = s.bf16_exp(117, 137);
        l.b[i] = s.bf16_exp(117, 137);
      } else { // the negated previous product, its last bits moved by -2 .. +2
        l.a[i] = std::uint16_t((l.a[i - 1] ^ 0x8000u) + std::uint16_t(int(s.below(5)) - 2));
        l.b[i] = l.b[i - 1];
      }
    }
    l.c = s.fp32_exp(97, 127);
    break;
  default:
    for (int i = 0; i < k; ++i) {
      l.a[i] = s.bf16_exp(1, 254);
      l.b[i] = s.bf16_exp(1, 254);
    }
    l.c = s.fp32_exp(1, 254);
    break;
  }
  return l;
}

// The discriminating probes for a two-product lane (a0 a1 b0 b1 c, a0 the low element). Each
// separates two readings of the manuals (docs/cpu-bf16.md explains every one).
struct probe_lane {
  const char *what;
  std::uint16_t a0, a1, b0, b1;
  std::uint32_t c;
};
inline constexpr probe_lane dot_probes[] = {
    {"pair order (odd first vs even first)", 0x3380, 0xBF80, 0x3F80, 0x3F80, 0x3F800000u},
    {"pair order, mirrored", 0xBF80, 0x3380, 0x3F80, 0x3F80, 0x3F800000u},
    {"FMA vs separately rounded product (2^-140 below 2^-126)", 0, 0x1C80, 0, 0x1C80, 0x00800000u},
    {"FMA vs separately rounded product, low pair", 0x1C80, 0, 0x1C80, 0, 0x00800000u},
    {"fused dot (one rounding of both products) vs two roundings", 0x3F80, 0x3080, 0x3F80, 0x3F80,
     0xBF800000u},
    {"DAZ on BF16 inputs", 0x0001, 0, 0x7F7F, 0, 0x3F800000u},
    {"DAZ on the FP32 accumulator, sign kept", 0x8000, 0x8000, 0x3F80, 0x3F80, 0x80000001u},
    {"FTZ on the result (2^-127)", 0, 0x2000, 0, 0x1F80, 0},
    {"tininess after vs before rounding (2^-126 - 2^-151)", 0, 0x9A00, 0, 0x1980, 0x00800000u},
    {"FTZ: tiny after rounding vs denormal result (2^-126 - 2^-150)", 0, 0x9A00, 0, 0x1A00, 0x00800000u},
    {"invalid Inf * 0: which NaN", 0, 0x7F80, 0, 0, 0},
    {"invalid Inf * denormal (DAZ)", 0x7F80, 0, 0x0001, 0, 0},
    {"NaN priority: src1 low sNaN vs src1 high qNaN vs accumulator", 0x7FA1, 0xFFC5, 0x3F80, 0x3F80,
     0x7FC00123u},
    {"NaN priority: src2 low vs src1 high", 0x3F80, 0xFFC5, 0x7F8F, 0x3F80, 0},
    {"NaN payload of the accumulator (signaling)", 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x7F800001u},
    {"overflow of the sum to Inf (RNE)", 0x7F7F, 0, 0x3F80, 0, 0x7F7FFFFFu},
    {"Inf - Inf", 0x7F80, 0xFF80, 0x3F80, 0x3F80, 0},
    {"exact cancellation: sign of zero", 0x3F80, 0, 0x3F80, 0, 0xBF800000u},
};
inline constexpr int dot_probe_count = int(sizeof(dot_probes) / sizeof(dot_probes[0]));

} // namespace bf16emu::cpu
