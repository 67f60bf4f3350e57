// bf16emu tensor-core model: parameter presets per NVIDIA generation and instruction.
//
// Every number comes from the sources cited in `source` (full references in
// docs/tensor-cores.md). Where the sources leave a parameter open, the preset is absent:
// B200 fp8 (tcgen05 kind::f8f6f4) and mma.sync on sm100 have no preset.
#pragma once

#include <cstdint>
#include <string_view>

#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/arch.hpp"
#include "bf16emu/tc/block.hpp"

namespace bf16emu::tc {

enum class instr_kind : std::uint8_t {
  mma,     // mma.sync (warp-level; sm70 ... sm90)
  wgmma,   // wgmma.mma_async (warpgroup; sm90a)
  tcgen05, // tcgen05.mma (sm100a)
};

BF16EMU_CXHD const char *to_string(instr_kind k) noexcept {
  switch (k) {
  case instr_kind::mma: return "mma";
  case instr_kind::wgmma: return "wgmma";
  default: return "tcgen05";
  }
}

// "mma" (or "mma.sync"), "wgmma", "tcgen05" -> k; false (k unchanged) for any other name.
BF16EMU_CXHD bool parse_instr(std::string_view name, instr_kind &k) noexcept {
  for (int i = 0; i <= int(instr_kind::tcgen05); ++i)
    if (detail::name_is(name, to_string(instr_kind(i)))) return k = instr_kind(i), true;
  if (detail::name_is(name, "mma.sync")) return k = instr_kind::mma, true;
  return false;
}

struct preset {
  tc::arch arch;   // arch::sm80
  const char *gpu; // "A100"
  instr_kind kind;
  format_id in;    // A and B
  format_id out;   // C and D
  const char *ptx; // the instruction this models
  int m, n, k;     // its shape; k is a multiple of block.L
  block_params block;
  // Whether e_zero can change any result for this input/output pair: only when a nonzero
  // term can have an exponent below e_zero, i.e. products of 8-bit-exponent inputs (bf16,
  // tf32). For fp16 and fp8 inputs every nonzero product has exponent >= 2*emin >= -28 and
  // c >= its format's emin, so e_zero never wins the max search (tests/tc checks this).
  bool e_zero_matters;
  const char *source;
};

namespace detail {
inline constexpr block_params volta{4, 23, -131, 23, out_round::truncate};
inline constexpr block_params volta_h{4, 23, -131, 10, out_round::nearest_even};
inline constexpr block_params turing{8, 24, -132, 23, out_round::truncate};
inline constexpr block_params turing_h{8, 24, -132, 10, out_round::nearest_even};
inline constexpr block_params ampere{8, 24, -132, 23, out_round::truncate};
inline constexpr block_params ampere_h{8, 24, -132, 10, out_round::nearest_even};
inline constexpr block_params ampere_tf32{4, 24, -132, 23, out_round::truncate};
inline constexpr block_params ada_fp8{16, 13, -132, 13, out_round::truncate};
inline constexpr block_params ada_fp8_h{16, 13, -132, 10, out_round::nearest_even};
inline constexpr block_params hopper{16, 25, -133, 23, out_round::truncate};
inline constexpr block_params hopper_h{16, 25, -133, 10, out_round::nearest_even};
inline constexpr block_params hopper_tf32{8, 25, -133, 23, out_round::truncate};
inline constexpr block_params hopper_fp8{32, 13, -133, 13, out_round::truncate};
inline constexpr block_params hopper_fp8_h{32, 13, -133, 10, out_round::nearest_even};

inline constexpr const char *src_volta =
    "Fasi, Higham, Mikaitis, Pranesh, PeerJ CS 7:e330 (2021); Khattak & Mikaitis arXiv 2512.07004 "
    "(MATLAB-tensor-core models/V100TC.m); MMA-Sim arXiv 2511.10909 (Volta: 23 fraction bits)";
inline constexpr const char *src_turing =
    "MMA-Sim arXiv 2511.10909 (Turing: 24 fraction bits, k8 one block); e_zero not published (no effect "
    "for fp16)";
inline constexpr const char *src_ampere =
    "Khattak & Mikaitis arXiv 2512.07004 (models/A100TC.m: block 8, tf32 block 4, RZ, min exp -132); "
    "MMA-Sim arXiv 2511.10909 (Ampere: 24 bits, k16 split into halves); Fasi et al. 2021";
inline constexpr const char *src_ga10x =
    "Khattak & Mikaitis arXiv 2512.07004 (models/A2TC.m, GA107); MMA-Sim arXiv 2511.10909 (Ampere)";
inline constexpr const char *src_ada =
    "Khattak & Mikaitis arXiv 2512.07004 (models/AdaTC.m, L40STC.m); MMA-Sim arXiv 2511.10909 (Ada: 24 "
    "bits, k split into halves)";
inline constexpr const char *src_ada_fp8 =
    "MMA-Sim arXiv 2511.10909 (Ada fp8: 13 bits, output e8m13, k32 split into halves); Khattak & "
    "Mikaitis models/L40STC.m (block 16, 13-bit output); e_zero not published (no effect for fp8)";
inline constexpr const char *src_hopper =
    "Khattak & Mikaitis arXiv 2512.07004 (models/H100TC.m, H200TC.m: block 16, tf32 block 8, RZ, min exp "
    "-133); MMA-Sim arXiv 2511.10909 (Hopper: 25 bits, one block per instruction)";
inline constexpr const char *src_hopper_fp8 =
    "Khattak & Mikaitis models/H100TC.m (fp8 block 32, 13-bit output); MMA-Sim arXiv 2511.10909 (wgmma "
    "fp8: 13 bits, e8m13); DeepSeek-V3 arXiv 2412.19437 s3.3.2 (about 14 bits); e_zero no effect for fp8";
inline constexpr const char *src_blackwell =
    "Khattak & Mikaitis arXiv 2512.07004 (models/B200TC.m: block 16, tf32 block 8, -133); MMA-Sim arXiv "
    "2511.10909 (Blackwell: 25 bits)";

#define BF16EMU_TC_P(sm, gpu, kind, in, out, ptx, m, n, k, blk, ezm, src)                                    \
  preset { arch::sm, gpu, instr_kind::kind, format_id::in, format_id::out, ptx, m, n, k, blk, ezm, src }
} // namespace detail

// clang-format off
inline constexpr preset presets[] = {
  BF16EMU_TC_P(sm70, "V100", mma, fp16, fp32, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", 8, 8, 4, detail::volta, false, detail::src_volta),
  BF16EMU_TC_P(sm70, "V100", mma, fp16, fp16, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16", 8, 8, 4, detail::volta_h, false, detail::src_volta),
  BF16EMU_TC_P(sm75, "T4 / RTX 20", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::turing, false, detail::src_turing),
  BF16EMU_TC_P(sm75, "T4 / RTX 20", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::turing_h, false, detail::src_turing),
  BF16EMU_TC_P(sm80, "A100", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::ampere, true, detail::src_ampere),
  BF16EMU_TC_P(sm80, "A100", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::ampere, false, detail::src_ampere),
  BF16EMU_TC_P(sm80, "A100", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::ampere_h, false, detail::src_ampere),
  BF16EMU_TC_P(sm80, "A100", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::ampere_tf32, true, detail::src_ampere),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::ampere, true, detail::src_ga10x),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::ampere, false, detail::src_ga10x),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::ampere_h, false, detail::src_ga10x),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::ampere_tf32, true, detail::src_ga10x),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::ampere, true, detail::src_ada),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::ampere, false, detail::src_ada),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::ampere_h, false, detail::src_ada),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::ampere_tf32, true, detail::src_ada),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, e4m3, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 16, 8, 32, detail::ada_fp8, false, detail::src_ada_fp8),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, e4m3, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", 16, 8, 32, detail::ada_fp8_h, false, detail::src_ada_fp8),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, e5m2, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 16, 8, 32, detail::ada_fp8, false, detail::src_ada_fp8),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, e5m2, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", 16, 8, 32, detail::ada_fp8_h, false, detail::src_ada_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::hopper, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::hopper, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::hopper_h, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::hopper_tf32, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, e4m3, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 16, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, e4m3, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", 16, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, e5m2, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 16, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, e5m2, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", 16, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, bf16, fp32, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", 64, 8, 16, detail::hopper, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, fp16, fp32, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", 64, 8, 16, detail::hopper, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, fp16, fp16, "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", 64, 8, 16, detail::hopper_h, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, tf32, fp32, "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", 64, 8, 8, detail::hopper_tf32, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e4m3, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", 64, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e4m3, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e4m3", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e5m2, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2", 64, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e5m2, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e5m2", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm100, "B200", tcgen05, bf16, fp32, "tcgen05.mma.cta_group::1.kind::f16 (bf16 in, f32 acc), k16", 128, 16, 16, detail::hopper, true, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, fp16, fp32, "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f32 acc), k16", 128, 16, 16, detail::hopper, false, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, tf32, fp32, "tcgen05.mma.cta_group::1.kind::tf32, k8", 128, 16, 8, detail::hopper_tf32, true, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, fp16, fp16, "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f16 acc), k16", 128, 16, 16, detail::hopper_h, false, "MMA-Sim arXiv 2511.10909 (isa/nv_ptx/nv_tcgen05mma.py: kind::f16 takes f16 D with f16 A and B; simulator/nv_ptx.py: 25 bits, k16 one block, f16 output RNE); Khattak & Mikaitis models/B200TC.m (-133)"),
};
// clang-format on
#undef BF16EMU_TC_P

inline constexpr int preset_count = int(sizeof(presets) / sizeof(presets[0]));

// The default instruction family of an architecture: tcgen05 on sm100, mma.sync elsewhere.
BF16EMU_CXHD instr_kind default_kind(arch a) noexcept {
  return a == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
}

// The preset for (arch, instruction, input format, output format); nullptr if none.
BF16EMU_CXHD const preset *find_preset(arch a, instr_kind kind, format_id in, format_id out) noexcept {
  for (const preset &p : presets)
    if (p.arch == a && p.kind == kind && p.in == in && p.out == out) return &p;
  return nullptr;
}

// The BF16 -> FP32 preset of the arch's default instruction, the model attention and the bias
// experiments use; nullptr for sm70 and sm75 (no BF16 tensor cores).
BF16EMU_CXHD const preset *bf16_preset(arch a) noexcept {
  return find_preset(a, default_kind(a), format_id::bf16, format_id::fp32);
}

} // namespace bf16emu::tc
