// bf16emu tensor-core model: AMD CDNA matrix cores (MFMA), CDNA1 (MI100, gfx908), CDNA2
// (MI200, gfx90a) and CDNA3 (MI300, gfx942).
//
// Every instruction is one of four operation types; the facts (which type, group sizes,
// flushing, fraction widths, rounding directions) are those of MMA-Sim (Xie et al., arXiv
// 2511.10909, mmasim/simulator/amd.py and simulator/arithmetic.py), which fitted them to
// MI100/MI250X/MI300X measurements, and the instruction list with shapes is its
// mmasim/isa/amd.py (the CDNA1/2/3 ISA reference guides name the same V_MFMA opcodes).
// docs/tensor-cores.md ("AMD CDNA matrix cores") states every step and what is open.
//
//   fma_chain  (f64, f32 on every generation): d = fma(a_k, b_k, d) in increasing k, one IEEE
//              binary32/binary64 FMA per product, round-to-nearest-even, subnormals kept.
//   pairwise   (fp16, bf16 on CDNA1 and CDNA2): groups of G products (fp16 4, bf16 2, the
//              CDNA2 bf16_1k instructions 4); each product is rounded to binary32 (an FMA with
//              +0), the group is summed as a balanced tree of binary32 adds ((p0+p1)+(p2+p3)),
//              and the group sum is added to the accumulator; all in round-to-nearest-even.
//              CDNA2 flushes: subnormal or zero inputs (A, B, C) read as +0; every product, tree
//              sum and accumulator value below 2^-126 in magnitude becomes a zero of its sign.
//   fused_rd   (CDNA3 fp16, bf16: G = min(8, k); CDNA3 xf32: G = 4, operands first truncated to
//              tf32 by clearing their low 13 bits): per group, with every factor's exponent
//              taken as its unbiased exponent (the format's emin for subnormals, -126 for
//              zeros), each product truncated toward zero to 24 fraction bits below the
//              group's largest product exponent e, summed exactly; then with E = max(e, ec)
//              the product sum is rounded down (toward -inf) to 31 fraction bits below E and c
//              rounded down to 24 fraction bits below E; their exact sum is rounded to binary32
//              to nearest-even and becomes the next group's c. A product of magnitude >= 2^128
//              gives +-Inf (NaN if both signs occur).
//   fused_rd_two_stage (CDNA3 fp8/bf8, G = 16): as fused_rd, but the even-indexed and the
//              odd-indexed products of the group are first summed separately (truncated to 24
//              bits below each half's largest exponent), both sums rounded down to 24 bits below
//              the larger of the two, added; c is dropped (taken as 0) when ec < E - 25.
//
// CDNA3 fp8 is the FNUZ encoding (MMA-Sim isa/common.py: float8_e4m3fnuz, float8_e5m2fnuz):
// "fp8" e4m3 with bias 8, "bf8" e5m2 with bias 16, no Inf, the only NaN 0x80, no -0.
//
// NaN results are returned as the default quiet NaN (0x7fc00000, binary64 0x7ff8000000000000):
// the NaN payload is not modelled. Host+device, allocation- and exception-free. The IEEE steps
// use the core's arithmetic (fma_to/add with round-to-nearest-even, round_pack); binary64 FMA,
// beyond the core's 24-bit significands, uses the host's fma (correctly rounded, the host in
// its default round-to-nearest mode).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "bf16emu/core/arith.hpp"
#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/arch.hpp"

namespace bf16emu::tc {

enum class amd_arch : std::uint8_t { cdna1, cdna2, cdna3 };

inline constexpr amd_arch all_amd_archs[] = {amd_arch::cdna1, amd_arch::cdna2, amd_arch::cdna3};

BF16EMU_CXHD const char *to_string(amd_arch a) noexcept {
  return a == amd_arch::cdna1 ? "cdna1" : a == amd_arch::cdna2 ? "cdna2" : "cdna3";
}
// The part the sources measured ("mi100") and its LLVM target ("gfx908").
BF16EMU_CXHD const char *amd_part(amd_arch a) noexcept {
  return a == amd_arch::cdna1 ? "mi100" : a == amd_arch::cdna2 ? "mi200" : "mi300";
}
BF16EMU_CXHD const char *amd_target(amd_arch a) noexcept {
  return a == amd_arch::cdna1 ? "gfx908" : a == amd_arch::cdna2 ? "gfx90a" : "gfx942";
}
BF16EMU_CXHD const char *amd_gpu(amd_arch a) noexcept {
  return a == amd_arch::cdna1   ? "MI100"
         : a == amd_arch::cdna2 ? "MI200 (MI210, MI250, MI250X)"
                                : "MI300 (MI300A, MI300X, MI325X)";
}

// "cdna1" / "mi100" / "gfx908", "cdna2" / "mi200" / "gfx90a", "cdna3" / "mi300" / "gfx942" -> out;
// false (out unchanged) for any other name. Case-sensitive.
BF16EMU_CXHD bool parse_amd_arch(std::string_view name, amd_arch &out) noexcept {
  for (const amd_arch a : all_amd_archs)
    if (detail::name_is(name, to_string(a)) || detail::name_is(name, amd_part(a)) ||
        detail::name_is(name, amd_target(a)))
      return out = a, true;
  return false;
}

// Operand types. xf32 is an fp32 register read as tf32 (low 13 bits cleared); fp8 and bf8 are
// the FNUZ e4m3 (bias 8) and e5m2 (bias 16) encodings.
enum class amd_type : std::uint8_t { f64, f32, xf32, f16, bf16, fp8, bf8 };

BF16EMU_CXHD const char *to_string(amd_type t) noexcept {
  switch (t) {
  case amd_type::f64: return "fp64";
  case amd_type::f32: return "fp32";
  case amd_type::xf32: return "xf32";
  case amd_type::f16: return "fp16";
  case amd_type::bf16: return "bf16";
  case amd_type::fp8: return "fp8";
  default: return "bf8";
  }
}

BF16EMU_CXHD int amd_width(amd_type t) noexcept {
  return t == amd_type::f64                          ? 64
         : t == amd_type::f32 || t == amd_type::xf32 ? 32
         : t == amd_type::f16 || t == amd_type::bf16 ? 16
                                                     : 8;
}

enum class amd_op : std::uint8_t { fma_chain, pairwise, fused_rd, fused_rd_two_stage };

BF16EMU_CXHD const char *to_string(amd_op o) noexcept {
  switch (o) {
  case amd_op::fma_chain: return "fma";
  case amd_op::pairwise: return "pairwise";
  case amd_op::fused_rd: return "fused_rd";
  default: return "fused_rd_2stage";
  }
}

// One MFMA instruction: C and D have type `out` (fp32, or fp64 for the f64 instructions).
struct amd_preset {
  amd_arch arch;
  const char *name; // "v_mfma_f32_32x32x8_bf16"
  amd_type a, b, out;
  int m, n, k;
  amd_op op;
  int group;  // products per group (1 for fma_chain)
  bool flush; // CDNA2 fp16/bf16 subnormal flushing (see the top of this file)
  const char *source;
};

namespace detail {
inline constexpr const char *src_amd_fma = "MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py (f64/f32: "
                                           "chain of IEEE FMAs) and isa/amd.py (shapes); "
                                           "AMD CDNA1/CDNA2/CDNA3 ISA reference guides (V_MFMA opcodes)";
inline constexpr const char *src_amd_pair1 =
    "MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py, arithmetic.py pairwise_dot (CDNA1: products and "
    "pairwise sums in binary32 RNE; groups fp16 4, bf16 2); AMD Instinct MI100 (CDNA1) ISA guide";
inline constexpr const char *src_amd_pair2 =
    "MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py, arithmetic.py pairwise_dot, flush_denormal (CDNA2: "
    "as CDNA1 with subnormals flushed; bf16_1k groups of 4); AMD Instinct MI200 (CDNA2) ISA guide";
inline constexpr const char *src_amd_fused =
    "MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py, arithmetic.py amd_fused_dot_rd_add (CDNA3: group "
    "min(8,k), xf32 4; 24-bit truncated alignment, round-down to 31/24 bits, RNE to fp32); AMD Instinct "
    "MI300 (CDNA3) ISA guide";
inline constexpr const char *src_amd_fp8 =
    "MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py, arithmetic.py amd_fused_dot_rd_add is_fp8 (CDNA3 "
    "fp8/bf8 FNUZ: group 16, even/odd halves, c dropped below E-25); AMD Instinct MI300 (CDNA3) ISA guide";

#define BF16EMU_AMD_P(ar, nm, ta, tb, to, m, n, k, op, g, fl, src)                                           \
  amd_preset {                                                                                               \
    amd_arch::ar, "v_mfma_" nm, amd_type::ta, amd_type::tb, amd_type::to, m, n, k, amd_op::op, g, fl, src    \
  }
} // namespace detail

// Every instruction MMA-Sim's isa/amd.py lists, CDNA2 including the CDNA1 ones it keeps. For each
// (arch, A type, B type) the first row is the default (--instr not given).
// clang-format off
inline constexpr amd_preset amd_presets[] = {
  // CDNA1 (MI100)
  BF16EMU_AMD_P(cdna1, "f32_32x32x2f32", f32, f32, f32, 32, 32, 2, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna1, "f32_32x32x1f32", f32, f32, f32, 32, 32, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna1, "f32_16x16x4f32", f32, f32, f32, 16, 16, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna1, "f32_16x16x1f32", f32, f32, f32, 16, 16, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna1, "f32_4x4x1f32", f32, f32, f32, 4, 4, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna1, "f32_32x32x8f16", f16, f16, f32, 32, 32, 8, pairwise, 4, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_32x32x4f16", f16, f16, f32, 32, 32, 4, pairwise, 4, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_16x16x16f16", f16, f16, f32, 16, 16, 16, pairwise, 4, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_16x16x4f16", f16, f16, f32, 16, 16, 4, pairwise, 4, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_4x4x4f16", f16, f16, f32, 4, 4, 4, pairwise, 4, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_32x32x4bf16", bf16, bf16, f32, 32, 32, 4, pairwise, 2, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_32x32x2bf16", bf16, bf16, f32, 32, 32, 2, pairwise, 2, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_16x16x8bf16", bf16, bf16, f32, 16, 16, 8, pairwise, 2, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_16x16x2bf16", bf16, bf16, f32, 16, 16, 2, pairwise, 2, false, detail::src_amd_pair1),
  BF16EMU_AMD_P(cdna1, "f32_4x4x2bf16", bf16, bf16, f32, 4, 4, 2, pairwise, 2, false, detail::src_amd_pair1),
  // CDNA2 (MI200)
  BF16EMU_AMD_P(cdna2, "f64_16x16x4f64", f64, f64, f64, 16, 16, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f64_4x4x4f64", f64, f64, f64, 4, 4, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_32x32x2f32", f32, f32, f32, 32, 32, 2, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_32x32x1f32", f32, f32, f32, 32, 32, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_16x16x4f32", f32, f32, f32, 16, 16, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_16x16x1f32", f32, f32, f32, 16, 16, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_4x4x1f32", f32, f32, f32, 4, 4, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna2, "f32_32x32x8f16", f16, f16, f32, 32, 32, 8, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_32x32x4f16", f16, f16, f32, 32, 32, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x16f16", f16, f16, f32, 16, 16, 16, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x4f16", f16, f16, f32, 16, 16, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_4x4x4f16", f16, f16, f32, 4, 4, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_32x32x8bf16_1k", bf16, bf16, f32, 32, 32, 8, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_32x32x4bf16_1k", bf16, bf16, f32, 32, 32, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x16bf16_1k", bf16, bf16, f32, 16, 16, 16, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x4bf16_1k", bf16, bf16, f32, 16, 16, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_4x4x4bf16_1k", bf16, bf16, f32, 4, 4, 4, pairwise, 4, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_32x32x4bf16", bf16, bf16, f32, 32, 32, 4, pairwise, 2, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_32x32x2bf16", bf16, bf16, f32, 32, 32, 2, pairwise, 2, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x8bf16", bf16, bf16, f32, 16, 16, 8, pairwise, 2, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_16x16x2bf16", bf16, bf16, f32, 16, 16, 2, pairwise, 2, true, detail::src_amd_pair2),
  BF16EMU_AMD_P(cdna2, "f32_4x4x2bf16", bf16, bf16, f32, 4, 4, 2, pairwise, 2, true, detail::src_amd_pair2),
  // CDNA3 (MI300)
  BF16EMU_AMD_P(cdna3, "f64_16x16x4_f64", f64, f64, f64, 16, 16, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f64_4x4x4_4b_f64", f64, f64, f64, 4, 4, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_32x32x2_f32", f32, f32, f32, 32, 32, 2, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_16x16x4_f32", f32, f32, f32, 16, 16, 4, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_32x32x1_2b_f32", f32, f32, f32, 32, 32, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_16x16x1_4b_f32", f32, f32, f32, 16, 16, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_4x4x1_16b_f32", f32, f32, f32, 4, 4, 1, fma_chain, 1, false, detail::src_amd_fma),
  BF16EMU_AMD_P(cdna3, "f32_32x32x4_xf32", xf32, xf32, f32, 32, 32, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_16x16x8_xf32", xf32, xf32, f32, 16, 16, 8, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_32x32x8_f16", f16, f16, f32, 32, 32, 8, fused_rd, 8, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_16x16x16_f16", f16, f16, f32, 16, 16, 16, fused_rd, 8, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_32x32x4_2b_f16", f16, f16, f32, 32, 32, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_16x16x4_4b_f16", f16, f16, f32, 16, 16, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_4x4x4_16b_f16", f16, f16, f32, 4, 4, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_32x32x8_bf16", bf16, bf16, f32, 32, 32, 8, fused_rd, 8, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_16x16x16_bf16", bf16, bf16, f32, 16, 16, 16, fused_rd, 8, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_32x32x4_2b_bf16", bf16, bf16, f32, 32, 32, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_16x16x4_4b_bf16", bf16, bf16, f32, 16, 16, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_4x4x4_16b_bf16", bf16, bf16, f32, 4, 4, 4, fused_rd, 4, false, detail::src_amd_fused),
  BF16EMU_AMD_P(cdna3, "f32_32x32x16_fp8_fp8", fp8, fp8, f32, 32, 32, 16, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_32x32x16_fp8_bf8", fp8, bf8, f32, 32, 32, 16, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_32x32x16_bf8_fp8", bf8, fp8, f32, 32, 32, 16, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_32x32x16_bf8_bf8", bf8, bf8, f32, 32, 32, 16, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_16x16x32_fp8_fp8", fp8, fp8, f32, 16, 16, 32, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_16x16x32_fp8_bf8", fp8, bf8, f32, 16, 16, 32, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_16x16x32_bf8_fp8", bf8, fp8, f32, 16, 16, 32, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
  BF16EMU_AMD_P(cdna3, "f32_16x16x32_bf8_bf8", bf8, bf8, f32, 16, 16, 32, fused_rd_two_stage, 16, false, detail::src_amd_fp8),
};
// clang-format on
#undef BF16EMU_AMD_P

inline constexpr int amd_preset_count = int(sizeof(amd_presets) / sizeof(amd_presets[0]));

// The instruction named `name` ("v_mfma_f32_32x32x8_bf16", or without the "v_mfma_" prefix) on
// `a`; nullptr if the arch has none of that name.
BF16EMU_CXHD const amd_preset *find_amd_preset(amd_arch a, std::string_view name) noexcept {
  constexpr std::string_view prefix = "v_mfma_";
  for (const amd_preset &p : amd_presets) {
    if (p.arch != a) continue;
    if (detail::name_is(name, p.name) ||
        (name.substr(0, prefix.size()) != prefix && detail::name_is(name, p.name + prefix.size())))
      return &p;
  }
  return nullptr;
}

// The default instruction of `a` for A and B of types ta, tb; nullptr if none.
BF16EMU_CXHD const amd_preset *find_amd_preset(amd_arch a, amd_type ta, amd_type tb) noexcept {
  for (const amd_preset &p : amd_presets)
    if (p.arch == a && p.a == ta && p.b == tb) return &p;
  return nullptr;
}

namespace detail {

inline constexpr std::uint64_t amd_nan32 = 0x7fc00000u;
inline constexpr std::uint64_t amd_nan64 = 0x7ff8000000000000u;

// A finite operand as MMA-Sim's fused path reads it: value = (-1)^neg * sig * 2^(exp - frac),
// exp the unbiased exponent (emin for subnormals, -126 for zeros).
struct amd_term {
  std::uint64_t sig;
  int exp, frac;
  bool neg, nan, inf;
};

template <class Fmt> BF16EMU_CXHD amd_term amd_decode_ieee(std::uint64_t bits) noexcept {
  const fp<Fmt> x = fp<Fmt>::from_bits(bits);
  amd_term t{x.frac(), Fmt::emin, Fmt::frac_bits, x.sign(), x.is_nan(), x.is_inf()};
  if (x.biased_exp() != 0) t.sig |= std::uint64_t{1} << Fmt::frac_bits, t.exp = x.biased_exp() - Fmt::bias;
  if (t.sig == 0) t.exp = -126;
  return t;
}

// FNUZ fp8: ebits exponent bits with bias 2^(ebits-1), mbits fraction bits; 0x80 is the NaN.
BF16EMU_CXHD amd_term amd_decode_fnuz(std::uint64_t bits, int ebits, int mbits) noexcept {
  const int bias = 1 << (ebits - 1);
  const int be = int((bits >> mbits) & ((1u << ebits) - 1));
  amd_term t{bits & ((1u << mbits) - 1), 1 - bias, mbits, (bits & 0x80) != 0, bits == 0x80, false};
  if (be != 0) t.sig |= std::uint64_t{1} << mbits, t.exp = be - bias;
  if (t.sig == 0) t.exp = -126;
  return t;
}

BF16EMU_CXHD amd_term amd_decode(amd_type ty, std::uint64_t bits) noexcept {
  switch (ty) {
  case amd_type::f16: return amd_decode_ieee<binary16>(bits);
  case amd_type::bf16: return amd_decode_ieee<bfloat16>(bits);
  case amd_type::fp8: return amd_decode_fnuz(bits & 0xff, 4, 3);
  case amd_type::bf8: return amd_decode_fnuz(bits & 0xff, 5, 2);
  case amd_type::xf32: return amd_decode_ieee<binary32>(bits & 0xffffe000u);
  default: return amd_decode_ieee<binary32>(bits);
  }
}

// Arithmetic shift with floor semantics for any count >= 0 (C++20: >> of a negative is floor).
BF16EMU_CXHD std::int64_t amd_floor_shift(std::int64_t v, int right) noexcept {
  return right <= 0 ? v * (std::int64_t{1} << -right) : right >= 63 ? (v < 0 ? -1 : 0) : v >> right;
}

// One product truncated toward zero to units of 2^(emax - 24), signed.
BF16EMU_CXHD std::int64_t amd_aligned(const amd_term &x, const amd_term &y, int emax) noexcept {
  const std::uint64_t p = x.sig * y.sig;
  const int sh = 24 - x.frac - y.frac - (emax - (x.exp + y.exp)); // left shift of p
  const std::uint64_t v = p == 0 ? 0 : sh >= 0 ? p << sh : -sh >= 64 ? 0 : p >> -sh;
  return x.neg != y.neg ? -std::int64_t(v) : std::int64_t(v);
}

// Sum of the products i = first, first+step, ... < n, each truncated to 24 fraction bits below
// their largest exponent (returned in emax).
BF16EMU_CXHD std::int64_t amd_fused_sum(const amd_term *x, const amd_term *y, int first, int step, int n,
                                        int &emax) noexcept {
  emax = -(1 << 30);
  for (int i = first; i < n; i += step)
    emax = x[i].exp + y[i].exp > emax ? x[i].exp + y[i].exp : emax;
  std::int64_t s = 0;
  for (int i = first; i < n; i += step)
    s += amd_aligned(x[i], y[i], emax);
  return s;
}

// One fused group (n <= 16 products) with accumulator c (binary32 bits): the next accumulator.
BF16EMU_CXHD std::uint64_t amd_fused_group(const amd_preset &P, const std::uint64_t *a,
                                           const std::uint64_t *b, int n, std::uint64_t c) noexcept {
  amd_term x[16], y[16];
  const amd_term tc = amd_decode(amd_type::f32, c);
  bool nan = tc.nan, pinf = tc.inf && !tc.neg, ninf = tc.inf && tc.neg;
  for (int i = 0; i < n; ++i) {
    x[i] = amd_decode(P.a, a[i]), y[i] = amd_decode(P.b, b[i]);
    if (x[i].nan || y[i].nan)
      nan = true;
    else if (x[i].inf || y[i].inf) {
      if ((!x[i].inf && x[i].sig == 0) || (!y[i].inf && y[i].sig == 0))
        nan = true;
      else
        (x[i].neg != y[i].neg ? ninf : pinf) = true;
    }
  }
  if (nan || (pinf && ninf)) return amd_nan32;
  if (pinf || ninf) return (ninf ? binary32::sign_mask : 0) | binary32::inf_bits;
  for (int i = 0; i < n; ++i) { // a finite product of magnitude >= 2^128
    const std::uint64_t p = x[i].sig * y[i].sig;
    if (p != 0 && bf16emu::detail::msb(p) + x[i].exp + y[i].exp - x[i].frac - y[i].frac >= 128)
      (x[i].neg != y[i].neg ? ninf : pinf) = true;
  }
  if (pinf && ninf) return amd_nan32;
  if (pinf || ninf) return (ninf ? binary32::sign_mask : 0) | binary32::inf_bits;

  const std::int64_t sc = tc.neg ? -std::int64_t(tc.sig) : std::int64_t(tc.sig); // units 2^(ec - 23)
  int e = 0, E = 0;
  std::int64_t s = 0; // units 2^(e - 24)
  bool drop_c = false;
  if (P.op == amd_op::fused_rd_two_stage) {
    int e0 = 0, e1 = 0;
    const std::int64_t s0 = amd_fused_sum(x, y, 0, 2, n, e0), s1 = amd_fused_sum(x, y, 1, 2, n, e1);
    e = e0 > e1 ? e0 : e1;
    s = amd_floor_shift(s0, e - e0) + amd_floor_shift(s1, e - e1);
    E = e > tc.exp ? e : tc.exp;
    drop_c = tc.exp < E - 25;
  } else {
    s = amd_fused_sum(x, y, 0, 1, n, e);
    E = e > tc.exp ? e : tc.exp;
  }
  // Product sum rounded down to units 2^(E - 31), c to units 2^(E - 24).
  const std::int64_t sum =
      amd_floor_shift(s, E - e - 7) + (drop_c ? 0 : amd_floor_shift(sc, E - tc.exp - 1) * 128);
  if (sum == 0) return 0;
  const bf16emu::detail::unrounded u{sum < 0, E - 31, sum < 0 ? std::uint64_t(-sum) : std::uint64_t(sum)};
  no_trace tr;
  return bf16emu::detail::round_pack<binary32>(u, env{}, tr, op_kind::convert).value.bits;
}

// MMA-Sim's flush of a binary32 value below 2^-126: a zero of its sign.
BF16EMU_CXHD f32 amd_flush(f32 x) noexcept {
  return x.biased_exp() == 0 ? f32::from_bits(x.bits & binary32::sign_mask) : x;
}

// A CDNA2 input: subnormals and zeros read as +0.
template <class Fmt> BF16EMU_CXHD fp<Fmt> amd_flush_in(fp<Fmt> x, bool flush) noexcept {
  return flush && x.biased_exp() == 0 ? fp<Fmt>::from_bits(0) : x;
}

// One pairwise group (n = 2 or 4 products, a power of two) added to the accumulator c.
template <class In>
BF16EMU_CXHD f32 amd_pair_group(const amd_preset &P, const std::uint64_t *a, const std::uint64_t *b, int n,
                                f32 c) noexcept {
  const env rne = with_mode(round_mode::nearest_even);
  f32 t[16];
  for (int i = 0; i < n; ++i) {
    const fp<In> x = amd_flush_in(fp<In>::from_bits(a[i]), P.flush),
                 y = amd_flush_in(fp<In>::from_bits(b[i]), P.flush);
    t[i] = fma_to<binary32>(x, y, f32::from_bits(0), rne).value;
    if (P.flush) t[i] = amd_flush(t[i]);
  }
  for (int w = n; w > 1; w /= 2) // balanced tree: (t0 + t1) + (t2 + t3)
    for (int i = 0; i < w / 2; ++i) {
      t[i] = add(t[2 * i], t[2 * i + 1], rne).value;
      if (P.flush) t[i] = amd_flush(t[i]);
    }
  const f32 d = add(c, t[0], rne).value;
  return P.flush ? amd_flush(d) : d;
}

} // namespace detail

// D = sum_k a[k]*b[k] + c for one output element: a, b bit patterns of P.a and P.b (xf32 and f32
// as 32-bit registers, fp8/bf8 as bytes), c and the result bit patterns of P.out. K is padded
// with zero products to a multiple of P.k (instructions chained in increasing k, each one's D the
// next one's C); K <= 0 gives c unchanged.
BF16EMU_HD inline std::uint64_t amd_dot(const amd_preset &P, const std::uint64_t *a, const std::uint64_t *b,
                                        int K, std::uint64_t c) noexcept {
  if (K <= 0) return c;
  const int padded = (K + P.k - 1) / P.k * P.k;
  const env rne = with_mode(round_mode::nearest_even);
  if (P.op == amd_op::fma_chain && P.out == amd_type::f64) {
    double d = bf16emu::detail::bit_cast<double>(c);
    for (int i = 0; i < K; ++i)
      d = std::fma(bf16emu::detail::bit_cast<double>(a[i]), bf16emu::detail::bit_cast<double>(b[i]), d);
    if (padded > K) d = std::fma(0.0, 0.0, d); // the padding zeros: -0 + +0 = +0
    return d != d ? detail::amd_nan64 : bf16emu::detail::bit_cast<std::uint64_t>(d);
  }
  if (P.op == amd_op::fma_chain) {
    f32 d = f32::from_bits(c);
    for (int i = 0; i < padded; ++i)
      d = fma(f32::from_bits(i < K ? a[i] : 0), f32::from_bits(i < K ? b[i] : 0), d, rne).value;
    return d.is_nan() ? detail::amd_nan32 : d.bits;
  }
  f32 d = f32::from_bits(c);
  if (P.op == amd_op::pairwise) d = detail::amd_flush_in(d, P.flush);
  for (int k0 = 0; k0 < padded; k0 += P.group) {
    std::uint64_t ga[16] = {}, gb[16] = {};
    for (int i = 0; i < P.group && k0 + i < K; ++i)
      ga[i] = a[k0 + i], gb[i] = b[k0 + i];
    if (P.op == amd_op::pairwise)
      d = P.a == amd_type::f16 ? detail::amd_pair_group<binary16>(P, ga, gb, P.group, d)
                               : detail::amd_pair_group<bfloat16>(P, ga, gb, P.group, d);
    else
      d = f32::from_bits(detail::amd_fused_group(P, ga, gb, P.group, d.bits));
  }
  return d.is_nan() ? detail::amd_nan32 : d.bits;
}

} // namespace bf16emu::tc
