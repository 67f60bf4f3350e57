// bf16emu tensor-core model: parameter presets per NVIDIA generation and instruction.
//
// Every number comes from the sources cited in `source` (full references in
// docs/tensor-cores.md). Where the sources leave a parameter open and it can change a result,
// the preset is absent or its source says "open:" and names the choice made (docs/tensor-cores.md
// names the probe that settles it). The fp8 mma.sync rows of sm90 and sm100 are fitted to
// published real-GPU outputs (accum_kind::two_block_add; tests/gpu_data/published).
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

// How an instruction accumulates.
enum class accum_kind : std::uint8_t {
  fused,     // blocks of L products fused with c (block.hpp): most presets
  fma_chain, // one IEEE fma (round to nearest even) per product in k order: f64 DMMA
  // fp8 mma.sync m16n8k32 on sm90 and sm100, whose tensor cores have no warp-level fp8 MMA
  // (MMA-Sim lists none): per instruction, the 16 products whose k mod 4 is 0 or 1 are one block
  // with c = +0, the 16 whose k mod 4 is 2 or 3 a second block with the first block's result as
  // its c (each block with `block`: L 16, F 25, the D format's rounding), and then C is added by
  // one IEEE addition in the D format, rounded to nearest even (mma.hpp, two_block_add_dot).
  // Fitted bit for bit to published H100, H200 and B200 outputs (docs/tensor-cores.md).
  two_block_add,
};

BF16EMU_CXHD const char *to_string(accum_kind a) noexcept {
  switch (a) {
  case accum_kind::fused: return "fused";
  case accum_kind::fma_chain: return "fma_chain";
  default: return "two_block_add";
  }
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
  format_id b;      // B's format (== in except for the fp8 e4m3 x e5m2 mixes)
  format_id c;      // C's format (== out except for the m8n8k4 C/D mixes); C is converted to
                    // the D format before the first block (c_as_out, mma.hpp)
  accum_kind accum; // fused blocks, or an fma chain (f64)
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
inline constexpr block_params turing_k4{4, 24, -132, 23, out_round::truncate};
inline constexpr block_params turing_k4_h{4, 24, -132, 10, out_round::nearest_even};
inline constexpr block_params hopper_k8_h{8, 25, -133, 10, out_round::nearest_even};
inline constexpr block_params hopper_k4{4, 25, -133, 23, out_round::truncate};
inline constexpr block_params blackwell_fp8{32, 25, -133, 23, out_round::truncate};
inline constexpr block_params blackwell_fp8_h{32, 25, -133, 10, out_round::nearest_even};
// f64 (accum_kind::fma_chain): the block parameters are unused but for L (one instruction's
// k) and the output rounding; F and e_zero are placeholders.
inline constexpr block_params dmma{4, 48, -1074, 52, out_round::nearest_even};
inline constexpr block_params dmma_k8{8, 48, -1074, 52, out_round::nearest_even};
inline constexpr block_params dmma_k16{16, 48, -1074, 52, out_round::nearest_even};

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
    "Khattak & Mikaitis models/H100TC.m (fp8 block 32, 13-bit output; their published H100/H200 f32 "
    "outputs of a wgmma run with zero C: 0 mismatches on 4 x 5,000 vectors); MMA-Sim arXiv 2511.10909 "
    "(wgmma fp8: 13 bits, e8m13); DeepSeek-V3 arXiv 2412.19437 s3.3.2 (about 14 bits); e_zero no effect "
    "for fp8";
inline constexpr const char *src_fp8_mma_sm90 =
    "fitted to published H100/H200 outputs (Khattak & Mikaitis, north-numerical-computing/"
    "MATLAB-tensor-core, BSD-2-Clause: model_validation, mma.sync m16n8k32; f16 D from the current "
    "files, f32 D with C from the files of commit 109e412), 0 mismatches on 20,000 + 20,000 vectors; "
    "MMA-Sim nv_mma.py lists no fp8 mma.sync on Hopper. accum two_block_add: blocks of the k mod 4 "
    "in {0,1} and {2,3} products (Hopper L 16, F 25), then C by one IEEE add (nearest even)";
inline constexpr const char *src_fp8_mma_sm100 =
    "fitted to published B200 outputs (Khattak & Mikaitis, north-numerical-computing/"
    "MATLAB-tensor-core, BSD-2-Clause: model_validation/B200, mma.sync m16n8k32 on a B200), 0 "
    "mismatches on 4 x 5,000 vectors; MMA-Sim nv_mma.py lists no fp8 mma.sync on Blackwell. accum "
    "two_block_add: blocks of the k mod 4 in {0,1} and {2,3} products (L 16, F 25), then C by one "
    "IEEE add (nearest even)";
inline constexpr const char *src_blackwell =
    "Khattak & Mikaitis arXiv 2512.07004 (models/B200TC.m: block 16, tf32 block 8, -133); MMA-Sim arXiv "
    "2511.10909 (Blackwell: 25 bits)";

inline constexpr const char *src_volta_mix =
    "PTX ISA 9.7.14.5 (m8n8k4 .dtype/.ctype each f16 or f32); MMA-Sim arXiv 2511.10909, "
    "mmasim/simulator/nv_ptx.py (Volta 23 bits; C converted to the D type before the fused sum)";
inline constexpr const char *src_volta_open =
    "PTX ISA 9.7.14.5 (m8n8k4 .f16.f16.f16.f32 allowed); not in MMA-Sim. open: C (f32) is rounded to "
    "f16 (nearest even) before the fused sum, as MMA-Sim converts C for the other mixes";
inline constexpr const char *src_turing_k4 =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (Turing runs the Volta m8n8k4 shapes) and "
    "simulator/nv_ptx.py (Turing 24 bits, k4 one block); e_zero no effect for fp16";
inline constexpr const char *src_turing_k4_open =
    "PTX ISA 9.7.14.5 (m8n8k4 .f16.f16.f16.f32); not in MMA-Sim; Turing 24 bits. open: C (f32) rounded "
    "to f16 (nearest even) before the fused sum";
inline constexpr const char *src_k8 =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (m16n8k8 f16 on Turing and later) and "
    "simulator/nv_ptx.py (k8 f16 is not split: one block of 8; Ampere/Ada 24 bits, Hopper 25)";
inline constexpr const char *src_mix_fp8_ada =
    "PTX ISA 9.7.14.5 (m16n8k32 .atype/.btype e4m3 or e5m2, sm_89); MMA-Sim arXiv 2511.10909, "
    "mmasim/isa/nv_ptx/nv_mma.py (the four fp8 mixes on Ada) and simulator/nv_ptx.py (13 bits, e8m13 "
    "output, k split into halves)";
inline constexpr const char *src_mix_fp8_hopper =
    "PTX ISA 9.7.14.5 / 9.7.15 (fp8 mixes on mma m16n8k32 and wgmma); parameters of the same-format "
    "Hopper fp8 rows (Khattak & Mikaitis models/H100TC.m; MMA-Sim simulator/nv_ptx.py wgmma fp8 13 bits)";
inline constexpr const char *src_sm100_mma =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (Blackwell mma.sync: the Ampere and Turing "
    "shapes, no fp8) and simulator/nv_ptx.py (25 bits, no split). open: e_zero -133 taken from "
    "tcgen05 (models/B200TC.m); it matters for bf16/tf32 only";
inline constexpr const char *src_sm100_mma_h =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py and simulator/nv_ptx.py (Blackwell mma.sync: "
    "25 bits, no split); e_zero no effect for fp16";
inline constexpr const char *src_sm120 =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (RTX Blackwell: Ampere/Turing shapes and Ada "
    "fp8, kind::f8f6f4) and simulator/nv_ptx.py (25 bits, no split, plain f32 output). open: e_zero "
    "-133 assumed (as B200); it matters for bf16/tf32 only";
inline constexpr const char *src_sm120_fp8 =
    "PTX ISA 9.7.14.5 (m16n8k32 .kind::f8f6f4, sm_120a); MMA-Sim arXiv 2511.10909, "
    "mmasim/isa/nv_ptx/nv_mma.py (RTX Blackwell fp8 mixes) and simulator/nv_ptx.py (25 bits, one block "
    "of 32, f32 output to 23 bits: no e8m13 cut off Ada)";
inline constexpr const char *src_sm120_fp4 =
    "PTX ISA 9.7.14.5 (m16n8k32 .kind::f8f6f4: .atype/.btype each e4m3, e5m2, e3m2, e2m3, e2m1, sm_120a); "
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (RTX Blackwell e2m1 mixes) and "
    "simulator/nv_ptx.py (25 bits, one block of 32, f32 output to 23 bits)";
inline constexpr const char *src_sm120_fp6 =
    "PTX ISA 9.7.14.5 (m16n8k32 .kind::f8f6f4 with e3m2/e2m3 operands, sm_120a); arithmetic of the "
    "MMA-Sim RTX Blackwell f8f6f4 rows (simulator/nv_ptx.py: 25 bits, one block of 32). open: MMA-Sim "
    "leaves e3m2 and e2m3 as a TODO (nv_mma.py); the same fused block is assumed";
inline constexpr const char *src_small_k =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (m16n8k4 tf32 and m16n8k8 bf16 on Ampere and "
    "every later arch) and simulator/nv_ptx.py (only k8 tf32 / k16 bf16 are split on Ampere/Ada: these "
    "shapes are one block of k; Ampere/Ada 24 bits, Hopper/Blackwell 25)";
inline constexpr const char *src_small_k_open =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (m16n8k4 tf32, m16n8k8 bf16 on Blackwell "
    "and RTX Blackwell) and simulator/nv_ptx.py (25 bits, one block of k). open: e_zero -133 taken "
    "from tcgen05 (models/B200TC.m); it matters for bf16/tf32 only";
inline constexpr const char *src_fp8_k16 =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_mma.py (m16n8k16 fp8, the four mixes, on Ada and RTX "
    "Blackwell) and simulator/nv_ptx.py (k16 fp8 not split: one block of 16; Ada 13 bits and e8m13 "
    "output, RTX Blackwell 25 bits and f32 output)";
inline constexpr const char *src_dmma_sm90 =
    "PTX ISA 9.7.14.5 (mma.sync m16n8k4, m16n8k8, m16n8k16 .f64, sm_90); MMA-Sim arXiv 2511.10909, "
    "mmasim/isa/nv_ptx/nv_mma.py (Hopper f64 shapes) and simulator/nv_ptx.py (f64: one IEEE fma per k "
    "in increasing k). open: the NaN payload (all ones here)";
inline constexpr const char *src_dmma =
    "PTX ISA 9.7.14.5 (mma.sync m8n8k4 .f64, sm_80); MMA-Sim arXiv 2511.10909, simulator/nv_ptx.py "
    "(f64: one IEEE fma per k in increasing k). open: the NaN payload (all ones here)";
inline constexpr const char *src_dmma_later =
    "PTX ISA 9.7.14.5 (mma.sync m8n8k4 .f64, sm_80 and later); MMA-Sim arXiv 2511.10909, "
    "mmasim/isa/nv_ptx/nv_mma.py (m8n8k4 f64 among the Ampere shapes that Ampere, Ada, Blackwell and RTX "
    "Blackwell run) and simulator/nv_ptx.py (f64: one IEEE fma per k in increasing k). open: the NaN "
    "payload (all ones here)";
inline constexpr const char *src_tcgen05_f16_mix =
    "MMA-Sim arXiv 2511.10909, mmasim/isa/nv_ptx/nv_tcgen05mma.py (kind::f16 k16 with f32 D: A and B each "
    "f16 or bf16; f16 D only for f16 x f16) and simulator/nv_ptx.py (25 bits, the k16 one block, f32 RZ); "
    "Khattak & Mikaitis models/B200TC.m (-133); PTX ISA tcgen05 instruction descriptor (separate A and B "
    "type fields). open: not run on a device";

#define BF16EMU_TC_P(sm, gpu, kind, in, out, ptx, m, n, k, blk, ezm, src)                                    \
  preset {                                                                                                   \
    arch::sm, gpu, instr_kind::kind, format_id::in, format_id::out, ptx, m, n, k, blk, ezm, src,             \
        format_id::in, format_id::out, accum_kind::fused                                                     \
  }
// The two sm120 kind::f8f6f4 rows (f32 and f16 D) of an A x B mix with an fp6 or fp4 operand.
#define BF16EMU_TC_F8F6F4(in, inb, src)                                                                      \
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, in, inb, fp32, fp32,                                         \
                "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32." #in "." #inb ".f32", 16, 8, 32,        \
                detail::blackwell_fp8, false, src, fused),                                                   \
      BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, in, inb, fp16, fp16,                                     \
                    "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16." #in "." #inb ".f16", 16, 8, 32,    \
                    detail::blackwell_fp8_h, false, src, fused)
// m16n8k4 tf32 and m16n8k8 bf16 on an arch (blocks b4 and b8: one block of k).
#define BF16EMU_TC_SMALL_K(sm, gpu, b4, b8, src)                                                             \
  BF16EMU_TC_P(sm, gpu, mma, tf32, fp32, "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", 16, 8, 4, b4, \
               true, src),                                                                                   \
      BF16EMU_TC_P(sm, gpu, mma, bf16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", 16, 8, 8, \
                   b8, true, src)
// m16n8k16 fp8 A x B with f32 (block blk) and f16 (blk_h) D.
#define BF16EMU_TC_FP8_K16(sm, gpu, in, inb, blk, blk_h)                                                     \
  BF16EMU_TC_PX(sm, gpu, mma, in, inb, fp32, fp32,                                                           \
                "mma.sync.aligned.m16n8k16.row.col.f32." #in "." #inb ".f32", 16, 8, 16, blk, false,         \
                detail::src_fp8_k16, fused),                                                                 \
      BF16EMU_TC_PX(sm, gpu, mma, in, inb, fp16, fp16,                                                       \
                    "mma.sync.aligned.m16n8k16.row.col.f16." #in "." #inb ".f16", 16, 8, 16, blk_h, false,   \
                    detail::src_fp8_k16, fused)
// A preset whose B format (inb) or C format (cf) differs, or that accumulates otherwise (acc).
#define BF16EMU_TC_PX(sm, gpu, kind, in, inb, cf, out, ptx, m, n, k, blk, ezm, src, acc)                     \
  preset {                                                                                                   \
    arch::sm, gpu, instr_kind::kind, format_id::in, format_id::out, ptx, m, n, k, blk, ezm, src,             \
        format_id::inb, format_id::cf, accum_kind::acc                                                       \
  }
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
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e4m3, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 16, 8, 32, detail::hopper, false, detail::src_fp8_mma_sm90, two_block_add),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e4m3, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", 16, 8, 32, detail::hopper_h, false, detail::src_fp8_mma_sm90, two_block_add),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e5m2, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 16, 8, 32, detail::hopper, false, detail::src_fp8_mma_sm90, two_block_add),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e5m2, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", 16, 8, 32, detail::hopper_h, false, detail::src_fp8_mma_sm90, two_block_add),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, bf16, fp32, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", 64, 8, 16, detail::hopper, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, fp16, fp32, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", 64, 8, 16, detail::hopper, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, fp16, fp16, "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", 64, 8, 16, detail::hopper_h, false, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, tf32, fp32, "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", 64, 8, 8, detail::hopper_tf32, true, detail::src_hopper),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e4m3, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", 64, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e4m3, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e4m3", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e5m2, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2", 64, 8, 32, detail::hopper_fp8, false, detail::src_hopper_fp8),
  BF16EMU_TC_P(sm90, "H100 / H200", wgmma, e5m2, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e5m2", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_hopper_fp8),
  BF16EMU_TC_PX(sm70, "V100", mma, fp16, fp16, fp16, fp32, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", 8, 8, 4, detail::volta, false, detail::src_volta_mix, fused),
  BF16EMU_TC_PX(sm70, "V100", mma, fp16, fp16, fp32, fp16, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32", 8, 8, 4, detail::volta_h, false, detail::src_volta_open, fused),
  BF16EMU_TC_PX(sm75, "T4 / RTX 20", mma, fp16, fp16, fp32, fp32, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", 8, 8, 4, detail::turing_k4, false, detail::src_turing_k4, fused),
  BF16EMU_TC_PX(sm75, "T4 / RTX 20", mma, fp16, fp16, fp16, fp32, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", 8, 8, 4, detail::turing_k4, false, detail::src_turing_k4, fused),
  BF16EMU_TC_PX(sm75, "T4 / RTX 20", mma, fp16, fp16, fp16, fp16, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16", 8, 8, 4, detail::turing_k4_h, false, detail::src_turing_k4, fused),
  BF16EMU_TC_PX(sm75, "T4 / RTX 20", mma, fp16, fp16, fp32, fp16, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32", 8, 8, 4, detail::turing_k4_h, false, detail::src_turing_k4_open, fused),
  BF16EMU_TC_P(sm80, "A100", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::ampere, false, detail::src_k8),
  BF16EMU_TC_P(sm80, "A100", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::ampere_h, false, detail::src_k8),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::ampere, false, detail::src_k8),
  BF16EMU_TC_P(sm86, "A2 / RTX 30", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::ampere_h, false, detail::src_k8),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::ampere, false, detail::src_k8),
  BF16EMU_TC_P(sm89, "L40S / RTX 40", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::ampere_h, false, detail::src_k8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::hopper_tf32, false, detail::src_k8),
  BF16EMU_TC_P(sm90, "H100 / H200", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::hopper_k8_h, false, detail::src_k8),
  BF16EMU_TC_PX(sm89, "L40S / RTX 40", mma, e4m3, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", 16, 8, 32, detail::ada_fp8, false, detail::src_mix_fp8_ada, fused),
  BF16EMU_TC_PX(sm89, "L40S / RTX 40", mma, e5m2, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32", 16, 8, 32, detail::ada_fp8, false, detail::src_mix_fp8_ada, fused),
  BF16EMU_TC_PX(sm89, "L40S / RTX 40", mma, e4m3, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16", 16, 8, 32, detail::ada_fp8_h, false, detail::src_mix_fp8_ada, fused),
  BF16EMU_TC_PX(sm89, "L40S / RTX 40", mma, e5m2, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16", 16, 8, 32, detail::ada_fp8_h, false, detail::src_mix_fp8_ada, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e4m3, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", 16, 8, 32, detail::hopper_fp8, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e5m2, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32", 16, 8, 32, detail::hopper_fp8, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e4m3, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16", 16, 8, 32, detail::hopper_fp8_h, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, e5m2, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16", 16, 8, 32, detail::hopper_fp8_h, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", wgmma, e4m3, e5m2, fp32, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", 64, 8, 32, detail::hopper_fp8, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", wgmma, e5m2, e4m3, fp32, fp32, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3", 64, 8, 32, detail::hopper_fp8, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", wgmma, e4m3, e5m2, fp16, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm90, "H100 / H200", wgmma, e5m2, e4m3, fp16, fp16, "wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e4m3", 64, 8, 32, detail::hopper_fp8_h, false, detail::src_mix_fp8_hopper, fused),
  BF16EMU_TC_PX(sm80, "A100", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma, fma_chain),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma, fma_chain),
  BF16EMU_TC_P(sm100, "B200", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::hopper, true, detail::src_sm100_mma),
  BF16EMU_TC_P(sm100, "B200", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::hopper, false, detail::src_sm100_mma_h),
  BF16EMU_TC_P(sm100, "B200", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::hopper_h, false, detail::src_sm100_mma_h),
  BF16EMU_TC_P(sm100, "B200", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::hopper_tf32, true, detail::src_sm100_mma),
  BF16EMU_TC_P(sm100, "B200", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::hopper_tf32, false, detail::src_sm100_mma_h),
  BF16EMU_TC_P(sm100, "B200", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::hopper_k8_h, false, detail::src_sm100_mma_h),
  BF16EMU_TC_PX(sm100, "B200", mma, e4m3, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 16, 8, 32, detail::hopper, false, detail::src_fp8_mma_sm100, two_block_add),
  BF16EMU_TC_PX(sm100, "B200", mma, e4m3, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", 16, 8, 32, detail::hopper_h, false, detail::src_fp8_mma_sm100, two_block_add),
  BF16EMU_TC_PX(sm100, "B200", mma, e5m2, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 16, 8, 32, detail::hopper, false, detail::src_fp8_mma_sm100, two_block_add),
  BF16EMU_TC_PX(sm100, "B200", mma, e5m2, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", 16, 8, 32, detail::hopper_h, false, detail::src_fp8_mma_sm100, two_block_add),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, bf16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16, 8, 16, detail::hopper, true, detail::src_sm120),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, fp16, fp32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, 8, 16, detail::hopper, false, detail::src_sm120),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, fp16, fp16, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 16, 8, 16, detail::hopper_h, false, detail::src_sm120),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, tf32, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 8, 8, detail::hopper_tf32, true, detail::src_sm120),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, fp16, fp32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 16, 8, 8, detail::hopper_tf32, false, detail::src_sm120),
  BF16EMU_TC_P(sm120, "RTX 50 / RTX PRO", mma, fp16, fp16, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 16, 8, 8, detail::hopper_k8_h, false, detail::src_sm120),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e4m3, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32", 16, 8, 32, detail::blackwell_fp8, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e4m3, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e4m3.f16", 16, 8, 32, detail::blackwell_fp8_h, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e4m3, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e5m2.f32", 16, 8, 32, detail::blackwell_fp8, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e4m3, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e5m2.f16", 16, 8, 32, detail::blackwell_fp8_h, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e5m2, e4m3, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e4m3.f32", 16, 8, 32, detail::blackwell_fp8, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e5m2, e4m3, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e4m3.f16", 16, 8, 32, detail::blackwell_fp8_h, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e5m2, e5m2, fp32, fp32, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e5m2.f32", 16, 8, 32, detail::blackwell_fp8, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, e5m2, e5m2, fp16, fp16, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e5m2.f16", 16, 8, 32, detail::blackwell_fp8_h, false, detail::src_sm120_fp8, fused),
  BF16EMU_TC_F8F6F4(e4m3, e2m1, detail::src_sm120_fp4),
  BF16EMU_TC_F8F6F4(e5m2, e2m1, detail::src_sm120_fp4),
  BF16EMU_TC_F8F6F4(e2m1, e4m3, detail::src_sm120_fp4),
  BF16EMU_TC_F8F6F4(e2m1, e5m2, detail::src_sm120_fp4),
  BF16EMU_TC_F8F6F4(e2m1, e2m1, detail::src_sm120_fp4),
  BF16EMU_TC_F8F6F4(e4m3, e3m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e4m3, e2m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e5m2, e3m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e5m2, e2m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e3m2, e4m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e3m2, e5m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e3m2, e3m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e3m2, e2m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e3m2, e2m1, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m3, e4m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m3, e5m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m3, e3m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m3, e2m3, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m3, e2m1, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m1, e3m2, detail::src_sm120_fp6),
  BF16EMU_TC_F8F6F4(e2m1, e2m3, detail::src_sm120_fp6),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64", 16, 8, 4, detail::dmma, false, detail::src_dmma_sm90, fma_chain),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", 16, 8, 8, detail::dmma_k8, false, detail::src_dmma_sm90, fma_chain),
  BF16EMU_TC_PX(sm90, "H100 / H200", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", 16, 8, 16, detail::dmma_k16, false, detail::src_dmma_sm90, fma_chain),
  BF16EMU_TC_SMALL_K(sm80, "A100", detail::ampere_tf32, detail::ampere, detail::src_small_k),
  BF16EMU_TC_SMALL_K(sm86, "A2 / RTX 30", detail::ampere_tf32, detail::ampere, detail::src_small_k),
  BF16EMU_TC_SMALL_K(sm89, "L40S / RTX 40", detail::ampere_tf32, detail::ampere, detail::src_small_k),
  BF16EMU_TC_SMALL_K(sm90, "H100 / H200", detail::hopper_k4, detail::hopper_tf32, detail::src_small_k),
  BF16EMU_TC_SMALL_K(sm100, "B200", detail::hopper_k4, detail::hopper_tf32, detail::src_small_k_open),
  BF16EMU_TC_SMALL_K(sm120, "RTX 50 / RTX PRO", detail::hopper_k4, detail::hopper_tf32, detail::src_small_k_open),
  BF16EMU_TC_FP8_K16(sm89, "L40S / RTX 40", e4m3, e4m3, detail::ada_fp8, detail::ada_fp8_h),
  BF16EMU_TC_FP8_K16(sm89, "L40S / RTX 40", e4m3, e5m2, detail::ada_fp8, detail::ada_fp8_h),
  BF16EMU_TC_FP8_K16(sm89, "L40S / RTX 40", e5m2, e4m3, detail::ada_fp8, detail::ada_fp8_h),
  BF16EMU_TC_FP8_K16(sm89, "L40S / RTX 40", e5m2, e5m2, detail::ada_fp8, detail::ada_fp8_h),
  BF16EMU_TC_FP8_K16(sm120, "RTX 50 / RTX PRO", e4m3, e4m3, detail::hopper, detail::hopper_h),
  BF16EMU_TC_FP8_K16(sm120, "RTX 50 / RTX PRO", e4m3, e5m2, detail::hopper, detail::hopper_h),
  BF16EMU_TC_FP8_K16(sm120, "RTX 50 / RTX PRO", e5m2, e4m3, detail::hopper, detail::hopper_h),
  BF16EMU_TC_FP8_K16(sm120, "RTX 50 / RTX PRO", e5m2, e5m2, detail::hopper, detail::hopper_h),
  BF16EMU_TC_P(sm100, "B200", tcgen05, bf16, fp32, "tcgen05.mma.cta_group::1.kind::f16 (bf16 in, f32 acc), k16", 128, 16, 16, detail::hopper, true, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, fp16, fp32, "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f32 acc), k16", 128, 16, 16, detail::hopper, false, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, tf32, fp32, "tcgen05.mma.cta_group::1.kind::tf32, k8", 128, 16, 8, detail::hopper_tf32, true, detail::src_blackwell),
  BF16EMU_TC_P(sm100, "B200", tcgen05, fp16, fp16, "tcgen05.mma.cta_group::1.kind::f16 (f16 in, f16 acc), k16", 128, 16, 16, detail::hopper_h, false, "MMA-Sim arXiv 2511.10909 (isa/nv_ptx/nv_tcgen05mma.py: kind::f16 takes f16 D with f16 A and B; simulator/nv_ptx.py: 25 bits, k16 one block, f16 output RNE); Khattak & Mikaitis models/B200TC.m (-133)"),
  BF16EMU_TC_PX(sm86, "A2 / RTX 30", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma_later, fma_chain),
  BF16EMU_TC_PX(sm89, "L40S / RTX 40", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma_later, fma_chain),
  BF16EMU_TC_PX(sm100, "B200", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma_later, fma_chain),
  BF16EMU_TC_PX(sm120, "RTX 50 / RTX PRO", mma, fp64, fp64, fp64, fp64, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 8, 8, 4, detail::dmma, false, detail::src_dmma_later, fma_chain),
  BF16EMU_TC_PX(sm100, "B200", tcgen05, fp16, bf16, fp32, fp32, "tcgen05.mma.cta_group::1.kind::f16 (f16 x bf16 in, f32 acc), k16", 128, 16, 16, detail::hopper, true, detail::src_tcgen05_f16_mix, fused),
  BF16EMU_TC_PX(sm100, "B200", tcgen05, bf16, fp16, fp32, fp32, "tcgen05.mma.cta_group::1.kind::f16 (bf16 x f16 in, f32 acc), k16", 128, 16, 16, detail::hopper, true, detail::src_tcgen05_f16_mix, fused),
};
// clang-format on
#undef BF16EMU_TC_P
#undef BF16EMU_TC_PX
#undef BF16EMU_TC_F8F6F4
#undef BF16EMU_TC_SMALL_K
#undef BF16EMU_TC_FP8_K16

inline constexpr int preset_count = int(sizeof(presets) / sizeof(presets[0]));

// The default instruction family of an architecture: tcgen05 on sm100, mma.sync elsewhere.
BF16EMU_CXHD instr_kind default_kind(arch a) noexcept {
  return a == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
}

// The preset for (arch, instruction, A format, B format, C format, D format) and instruction k
// (0: the first listed, the widest k); nullptr if none.
BF16EMU_CXHD const preset *find_preset(arch a, instr_kind kind, format_id in, format_id b, format_id c,
                                       format_id out, int k = 0) noexcept {
  for (const preset &p : presets)
    if (p.arch == a && p.kind == kind && p.in == in && p.b == b && p.c == c && p.out == out &&
        (k == 0 || p.k == k))
      return &p;
  return nullptr;
}

// The preset for (arch, instruction, input format of A and B, format of C and D); nullptr if none.
BF16EMU_CXHD const preset *find_preset(arch a, instr_kind kind, format_id in, format_id out) noexcept {
  return find_preset(a, kind, in, in, out, out);
}

// The BF16 -> FP32 preset of the arch's default instruction, the model attention and the bias
// experiments use; nullptr for sm70 and sm75 (no BF16 tensor cores).
BF16EMU_CXHD const preset *bf16_preset(arch a) noexcept {
  return find_preset(a, default_kind(a), format_id::bf16, format_id::fp32);
}

} // namespace bf16emu::tc
