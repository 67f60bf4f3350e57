// bf16emu CPU models: the x86 BF16 instructions, as the Intel SDM's pseudo-code describes them
// (docs/cpu-bf16.md cites the sections and lists what the manual leaves open).
//
//   AVX512_BF16    VDPBF16PS       per FP32 lane: acc = fma(a[2i+1], b[2i+1], acc), then
//                                  acc = fma(a[2i], b[2i], acc): two FP32 FMAs, odd pair first,
//                                  DAZ on inputs, FTZ on outputs, RNE, MXCSR ignored
//                  VCVTNEPS2BF16   FP32 -> BF16, RNE, denormal inputs -> signed zero, NaN:
//                  VCVTNE2PS2BF16  truncated payload with the quiet bit set
//   AVX-NE-CONVERT VCVTNEPS2BF16 (VEX form) as above; VBCSTNEBF162PS, VCVTNEEBF162PS,
//                  VCVTNEOBF162PS: BF16 -> FP32 exactly (the bits move up 16 places);
//                  VBCSTNESH2PS, VCVTNEEPH2PS, VCVTNEOPH2PS: FP16 -> FP32 exactly
//   AMX-BF16       TDPBF16PS       per FP32 element: for every BF16 pair k,
//                                  acc = fma(a[2k], b[2k], acc), then acc = fma(a[2k+1], b[2k+1], acc)
//                                  (even first), DAZ/FTZ, RNE
//
// Pure numerics on the core soft-float: header-only, no I/O, no exceptions, no allocation.
// Every function takes an optional tracer (core/env.hpp) that sees each rounding step.
#pragma once

#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu::cpu {

// The QNaN "floating-point indefinite" that x86 returns for an invalid operation without a NaN
// operand (Intel SDM Vol. 1, 4.8.3.7): negative, quiet bit set, zero payload.
inline constexpr std::uint32_t x86_indefinite = 0xFFC00000u;

// make_fp32 of the SDM: a BF16 pattern in the upper half of an FP32 pattern (exact).
BF16EMU_CXHD f32 make_fp32(std::uint16_t bf) noexcept { return f32{std::uint32_t(bf) << 16}; }

// The FP32 FMA the BF16 instructions are written with: DAZ=FTZ=1, RNE, tininess after
// rounding (x86), NaN operands propagated quiet in the order a, b, c (the SDM's VDPBF16PS
// NaN-priority table: src1, src2, then the accumulator), invalid gives the indefinite.
BF16EMU_CXHD env x86_bf16_env() noexcept {
  env e{};
  e.mode = round_mode::nearest_even;
  e.tiny = tininess::after_rounding;
  e.nan = nan_policy::ieee;
  e.subnormal = subnormals::flush_both;
  return e;
}

template <class Tr = no_trace>
BF16EMU_CXHD f32 x86_fma_daz_ftz(f32 a, f32 b, f32 c, Tr &&tr = Tr{}) noexcept {
  const result<binary32> r = fma_to<binary32>(a, b, c, x86_bf16_env(), tr);
  if (r.value.is_nan() && !a.is_nan() && !b.is_nan() && !c.is_nan()) return f32{x86_indefinite};
  return r.value;
}

// VDPBF16PS, one FP32 lane: srcdest.fp32[i] with src1.bf16[2i], [2i+1] (a_lo, a_hi) and
// src2.bf16[2i], [2i+1] (b_lo, b_hi). Returns the new srcdest.fp32[i].
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t vdpbf16ps(std::uint32_t acc, std::uint16_t a_lo, std::uint16_t a_hi,
                                     std::uint16_t b_lo, std::uint16_t b_hi, Tr &&tr = Tr{}) noexcept {
  f32 t = x86_fma_daz_ftz(make_fp32(a_hi), make_fp32(b_hi), f32{acc}, tr);
  t = x86_fma_daz_ftz(make_fp32(a_lo), make_fp32(b_lo), t, tr);
  return t.bits;
}

// convert_fp32_to_bfloat16 of the SDM (VCVTNEPS2BF16, VCVTNE2PS2BF16, and the VEX form of
// AVX-NE-CONVERT): zero and denormal -> signed zero, Inf kept, NaN -> upper half with the quiet
// bit set, normal numbers rounded to nearest even (overflow -> Inf).
template <class Tr = no_trace>
BF16EMU_CXHD std::uint16_t cvtneps2bf16(std::uint32_t x, Tr &&tr = Tr{}) noexcept {
  env e = x86_bf16_env();
  return convert<bfloat16>(f32{x}, e, tr).value.bits;
}

// VCVTNE2PS2BF16 with KL = VL/16 output words: word i < KL/2 comes from src2.fp32[i], word
// i >= KL/2 from src1.fp32[i - KL/2] (halves of the whole vector, not per 128-bit block).
struct ne2_source {
  bool from_src1;
  int lane;
};
BF16EMU_CXHD ne2_source vcvtne2ps2bf16_source(int word, int words_per_vector) noexcept {
  const int half = words_per_vector / 2;
  return word < half ? ne2_source{false, word} : ne2_source{true, word - half};
}

// AVX-NE-CONVERT loads: BF16 -> FP32 (VBCSTNEBF162PS, VCVTNEEBF162PS, VCVTNEOBF162PS) moves the
// bits up 16 places; every value, denormals and NaNs included, is kept exactly.
BF16EMU_CXHD std::uint32_t ne_bf16_to_fp32(std::uint16_t x) noexcept { return make_fp32(x).bits; }

// FP16 -> FP32 (VBCSTNESH2PS, VCVTNEEPH2PS, VCVTNEOPH2PS): exact, FP16 denormals become FP32
// normals; NaNs keep sign and payload (shifted up 13 places). Whether a signaling NaN is
// quieted is open (docs/cpu-bf16.md); this model keeps it as it is.
BF16EMU_CXHD std::uint32_t ne_fp16_to_fp32(std::uint16_t x) noexcept {
  const f16 h{x};
  if (h.is_nan()) return (std::uint32_t(x & 0x8000u) << 16) | 0x7F800000u | (std::uint32_t(x & 0x3FFu) << 13);
  env e{};
  return convert<binary32>(h, e).value.bits; // exact: FP32 holds every FP16 value
}

// TDPBF16PS, one FP32 element of tsrcdest: `pairs` dwords of A's row and B's column, each a BF16
// pair (a[2k], a[2k+1]), (b[2k], b[2k+1]); even element first within a pair.
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t tdpbf16ps(std::uint32_t acc, const std::uint16_t *a, const std::uint16_t *b,
                                     int pairs, Tr &&tr = Tr{}) noexcept {
  f32 t{acc};
  for (int k = 0; k < pairs; ++k) {
    t = x86_fma_daz_ftz(make_fp32(a[2 * k]), make_fp32(b[2 * k]), t, tr);
    t = x86_fma_daz_ftz(make_fp32(a[2 * k + 1]), make_fp32(b[2 * k + 1]), t, tr);
  }
  return t.bits;
}

} // namespace bf16emu::cpu
