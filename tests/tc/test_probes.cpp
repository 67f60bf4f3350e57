// The probe suite: single-element MMAs (D[0][0], every k entry not named is zero) whose
// published outcome tells the generations apart. Expected values are the published
// findings, or are derived by hand from the published parameters (the derivation is in the
// comment); none is computed by the model.
//
// Sources (docs/tensor-cores.md has the full list):
//   [FHMP21] Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores",
//            PeerJ CS 7:e330 (2021).
//   [KM25]   Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv 2512.07004,
//            and arXiv 2510.15884; MATLAB models (A100TC.m: block 8, 1 extra alignment bit,
//            RZ, min exponent -132; H100TC.m: block 16, 2 extra bits, -133; tf32 blocks 4 and
//            8; fp8 block 32 with 13 bits).
//   [MMASIM] Xie et al., "MMA-Sim", arXiv 2511.10909 (fraction bits Volta 23,
//            Turing/Ampere/Ada 24, Hopper/Blackwell 25; Ampere/Ada split k into halves, first
//            half first; Ada fp8 and Hopper wgmma fp8: 13 bits, FP32 output cut to 13 bits;
//            NaN results 0x7fffffff / 0x7fff).
//   [DSV3]   DeepSeek-V3 technical report, arXiv 2412.19437 s3.3.2 (H800 FP8 accumulation
//            keeps about 14 bits).
#include <cstring>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common.hpp"

namespace {

using namespace tctest;
using entry = std::pair<int, std::uint64_t>; // (k index, bit pattern)

const preset &get(const char *name, instr_kind kind, format_id in, format_id out = format_id::fp32) {
  arch a{};
  if (!parse_arch(name, a)) throw std::runtime_error(std::string("unknown arch ") + name);
  const preset *p = find_preset(a, kind, in, out);
  if (!p) throw std::runtime_error(std::string("no preset ") + name);
  return *p;
}

// D[0][0] of one instruction of preset P: A row 0 and B column 0 hold the given entries.
std::uint64_t probe(const preset &P, std::initializer_list<entry> a, std::initializer_list<entry> b,
                    std::uint64_t c) {
  std::vector<std::uint64_t> va(P.k, 0), vb(P.k, 0);
  for (auto [k, v] : a)
    va.at(k) = v;
  for (auto [k, v] : b)
    vb.at(k) = v;
  return model_dot(P, va.data(), vb.data(), P.k, c);
}

// Every (arch, kind) with a bf16 -> fp32 preset, and its generation's F.
struct bf16_case {
  const char *arch;
  instr_kind kind;
  int F;
};
const bf16_case bf16_presets[] = {{"sm80", instr_kind::mma, 24},   {"sm86", instr_kind::mma, 24},
                                  {"sm89", instr_kind::mma, 24},   {"sm90", instr_kind::mma, 25},
                                  {"sm90", instr_kind::wgmma, 25}, {"sm100", instr_kind::tcgen05, 25}};

// bf16 bit patterns.
constexpr std::uint64_t one = 0x3f80, half = 0x3f00, neg_bit = 0x8000;
constexpr std::uint64_t bf16_pow2(int e) { return std::uint64_t(e + 127) << 7; }
// fp32 bit patterns.
constexpr std::uint64_t f32_pow2(int e) { return std::uint64_t(e + 127) << 23; }

// ---------------------------------------------------------------------------
// F probes.

// 1*1 + c, c = -(1 - 2^-24): V100 0x34000000 (c cut to 23 bits: 1 - 2^-23), A100/H100
// 0x33800000 (at least one extra bit) [FHMP21][KM25].
TEST(ProbeF, OneMinusUlpHalf) {
  for (const auto &pc : bf16_presets)
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, one}}, {{0, one}}, 0xbf7fffff), 0x33800000u)
        << pc.arch;
  // fp16 inputs.
  EXPECT_EQ(probe(get("sm70", instr_kind::mma, format_id::fp16), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x34000000u);
  EXPECT_EQ(probe(get("sm75", instr_kind::mma, format_id::fp16), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x33800000u);
  EXPECT_EQ(probe(get("sm80", instr_kind::mma, format_id::fp16), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x33800000u);
  EXPECT_EQ(probe(get("sm90", instr_kind::mma, format_id::fp16), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x33800000u);
}

// 1*1 + c, c = -2^-25: A100 0x3f800000 (F = 24: c cut to 0), H100 0x3f7fffff (F = 25: 1 - 2^-25,
// then truncated to FP32) [KM25][MMASIM].
TEST(ProbeF, MinusTwoToMinus25) {
  for (const auto &pc : bf16_presets)
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, one}}, {{0, one}}, 0xb3000000),
              pc.F == 24 ? 0x3f800000u : 0x3f7fffffu)
        << pc.arch << " " << to_string(pc.kind);
}

// c = 1, products 2^-24*1 + 2^-24*(1/2) + 2^-24*(1/2): A100 0x3f800000 (the 2^-25 terms are cut),
// H100 0x3f800001 (1 + 2^-24 + 2^-25 + 2^-25 = 1 + 2^-23) [KM25][MMASIM].
TEST(ProbeF, ThreeSmallProducts) {
  for (const auto &pc : bf16_presets)
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16),
                    {{0, bf16_pow2(-24)}, {1, bf16_pow2(-24)}, {2, bf16_pow2(-24)}},
                    {{0, one}, {1, half}, {2, half}}, 0x3f800000),
              pc.F == 24 ? 0x3f800000u : 0x3f800001u)
        << pc.arch;
}

// fp8 (Ada mma.sync, Hopper wgmma): F = 13 [MMASIM][KM25]; [DSV3] reports about 14 bits kept on H800.
// 1*1 + 2^-13 keeps the small product (1 + 2^-13 = 0x3f800400 in the 13-bit output);
// 1*1 + 2^-14 loses it (0x3f800000).
TEST(ProbeF, Fp8ThirteenBits) {
  const std::uint64_t e4_one = 0x38, e4_2m6 = 0x08, e4_2m7 = 0x04, e4_2m8 = 0x02; // 1, 2^-6, 2^-7, 2^-8
  for (auto [arch, kind] : {std::pair{"sm89", instr_kind::mma}, std::pair{"sm90", instr_kind::wgmma}}) {
    const preset &P = get(arch, kind, format_id::e4m3);
    EXPECT_EQ(probe(P, {{0, e4_one}, {1, e4_2m6}}, {{0, e4_one}, {1, e4_2m7}}, 0), 0x3f800400u) << arch;
    EXPECT_EQ(probe(P, {{0, e4_one}, {1, e4_2m6}}, {{0, e4_one}, {1, e4_2m8}}, 0), 0x3f800000u) << arch;
  }
  // sm90 and sm100 mma.sync (accum_kind::two_block_add, fitted to published H100/H200/B200
  // outputs): f16 blocks with F 25 and a full FP32 result, so 1 + 2^-14 stays (0x3f800200).
  for (const char *arch : {"sm90", "sm100"})
    EXPECT_EQ(probe(get(arch, instr_kind::mma, format_id::e4m3), {{0, e4_one}, {1, e4_2m6}},
                    {{0, e4_one}, {1, e4_2m8}}, 0),
              0x3f800200u)
        << arch;
}

// ---------------------------------------------------------------------------
// Block-size probes: c = 1 + 2^-23, a0*b0 = 1, a small 2^-23 product at index L-1 (same block:
// 2 + 2^-22, exact: 0x40000001) or at index L (next block: the first block gives 2 + 2^-23,
// truncated to 2; the second cuts 2^-23 below F bits of 2^1: 0x40000000) [KM25][MMASIM].
TEST(ProbeBlockSize, SmallProductSlides) {
  struct bcase {
    const char *arch;
    instr_kind kind;
    format_id in;
    std::uint64_t one, small_a, small_b; // small_a * small_b = 2^-23
    int L;                               // published block size
  };
  const std::uint64_t tf_one = 0x3f800000 >> 13, tf_small = f32_pow2(-23) >> 13;
  const bcase cases[] = {
      {"sm70", instr_kind::mma, format_id::fp16, 0x3c00, 0x0c00 /*2^-12*/, 0x1000 /*2^-11*/, 4},
      {"sm75", instr_kind::mma, format_id::fp16, 0x3c00, 0x0c00, 0x1000, 8},
      {"sm80", instr_kind::mma, format_id::bf16, one, bf16_pow2(-23), one, 8},
      {"sm80", instr_kind::mma, format_id::fp16, 0x3c00, 0x0c00, 0x1000, 8},
      {"sm80", instr_kind::mma, format_id::tf32, tf_one, tf_small, tf_one, 4},
      {"sm86", instr_kind::mma, format_id::bf16, one, bf16_pow2(-23), one, 8},
      {"sm89", instr_kind::mma, format_id::bf16, one, bf16_pow2(-23), one, 8},
      {"sm89", instr_kind::mma, format_id::tf32, tf_one, tf_small, tf_one, 4},
      {"sm90", instr_kind::mma, format_id::bf16, one, bf16_pow2(-23), one, 16},
      {"sm90", instr_kind::mma, format_id::fp16, 0x3c00, 0x0c00, 0x1000, 16},
      {"sm90", instr_kind::mma, format_id::tf32, tf_one, tf_small, tf_one, 8},
      {"sm90", instr_kind::wgmma, format_id::bf16, one, bf16_pow2(-23), one, 16},
      {"sm90", instr_kind::wgmma, format_id::tf32, tf_one, tf_small, tf_one, 8},
      {"sm100", instr_kind::tcgen05, format_id::bf16, one, bf16_pow2(-23), one, 16},
      {"sm100", instr_kind::tcgen05, format_id::tf32, tf_one, tf_small, tf_one, 8},
  };
  const std::uint64_t c = 0x3f800001; // 1 + 2^-23
  for (const bcase &bc : cases) {
    const preset &P = get(bc.arch, bc.kind, bc.in);
    ASSERT_EQ(P.block.L, bc.L) << bc.arch;
    EXPECT_EQ(probe(P, {{0, bc.one}, {bc.L - 1, bc.small_a}}, {{0, bc.one}, {bc.L - 1, bc.small_b}}, c),
              0x40000001u)
        << bc.arch << " " << format_name_of(bc.in);
    if (bc.L < P.k) // a second block exists inside the instruction
      EXPECT_EQ(probe(P, {{0, bc.one}, {bc.L, bc.small_a}}, {{0, bc.one}, {bc.L, bc.small_b}}, c),
                0x40000000u)
          << bc.arch << " " << format_name_of(bc.in);
    else // one block per instruction: the small product still counts
      EXPECT_EQ(probe(P, {{0, bc.one}, {P.k - 1, bc.small_a}}, {{0, bc.one}, {P.k - 1, bc.small_b}}, c),
                0x40000001u);
  }
}

// fp8 blocks: Ada 16 (k32 split into halves) [MMASIM][KM25 L40STC.m], Hopper 32 [KM25 H100TC.m]
// (wgmma; the sm90 mma.sync rows are accum_kind::two_block_add, ProbeFp8MmaSync below, and give
// the same D on these two lines: 1 + 2^-13 in the first block or the second, then + c).
// c = 1 + 2^-13, a0*b0 = 1, 2^-13 = 2^-6 * 2^-7 at index j: same block 2 + 2^-12 = 0x40000400;
// next block: the first gives 2 + 2^-13, cut to 2 (13-bit output), the second cuts 2^-13: 0x40000000.
TEST(ProbeBlockSize, Fp8) {
  const std::uint64_t c = 0x3f800400; // 1 + 2^-13
  const preset &ada = get("sm89", instr_kind::mma, format_id::e4m3);
  EXPECT_EQ(probe(ada, {{0, 0x38}, {15, 0x08}}, {{0, 0x38}, {15, 0x04}}, c), 0x40000400u);
  EXPECT_EQ(probe(ada, {{0, 0x38}, {16, 0x08}}, {{0, 0x38}, {16, 0x04}}, c), 0x40000000u);
  for (instr_kind kind : {instr_kind::mma, instr_kind::wgmma}) {
    const preset &hop = get("sm90", kind, format_id::e4m3);
    EXPECT_EQ(probe(hop, {{0, 0x38}, {16, 0x08}}, {{0, 0x38}, {16, 0x04}}, c), 0x40000400u);
    EXPECT_EQ(probe(hop, {{0, 0x38}, {31, 0x08}}, {{0, 0x38}, {31, 0x04}}, c), 0x40000400u);
  }
}

// fp8 mma.sync on sm90 and sm100 (accum_kind::two_block_add, fitted to the published H100, H200
// and B200 outputs, tests/gpu_data/published). Hand derivations, e4m3 1 = 0x38, 2^-6 = 0x08,
// 2^-5 = 0x10 (so 2^-6 * 2^-5 = 2^-11, half an fp16 ulp of 1):
// - f16 D, 1*1 at k = 0, 2^-11 at k = 1 and at k = 2, C = 0: the first block (k mod 4 in {0,1})
//   gives 1 + 2^-11, a tie rounded to even 1.0; the second adds 2^-11: tie again, 1.0 = 0x3c00.
//   One fused sum, or the k = 2 block first, would give 1 + 2^-10 = 0x3c01.
// - the same with the small products at k = 1 and k = 4 (both k mod 4 < 2, one block), or at
//   k = 2 and k = 3 (both in the second block, whose c is exactly 1): 1 + 2^-10 = 0x3c01.
// - f16 D, C = 1.0 (0x3c00), 2^-11 at k = 0 and at k = 2: the blocks give 2^-11, then 2^-10
//   exactly, and C is added last: 1 + 2^-10 = 0x3c01. C as the first block's c would lose both
//   halves to ties: 0x3c00.
// - f32 D, 1*1 at k = 0, C = 2^24 + 2 (0x4b800001): the blocks give 1, then one IEEE addition
//   rounds 2^24 + 3, a tie, to even 2^24 + 4 = 0x4b800002. A fused block with truncation gives
//   2^24 + 2 = 0x4b800001 (F 25) or 2^24 = 0x4b800000 (the wgmma row: F 13, 13-bit output).
TEST(ProbeFp8MmaSync, TwoBlocksThenAdd) {
  for (const char *arch : {"sm90", "sm100"})
    for (format_id in : {format_id::e4m3}) {
      const preset &H = get(arch, instr_kind::mma, in, format_id::fp16);
      const preset &S = get(arch, instr_kind::mma, in, format_id::fp32);
      EXPECT_EQ(H.accum, accum_kind::two_block_add) << arch;
      EXPECT_EQ(S.accum, accum_kind::two_block_add) << arch;
      EXPECT_EQ(probe(H, {{0, 0x38}, {1, 0x08}, {2, 0x08}}, {{0, 0x38}, {1, 0x10}, {2, 0x10}}, 0), 0x3c00u)
          << arch;
      EXPECT_EQ(probe(H, {{0, 0x38}, {1, 0x08}, {4, 0x08}}, {{0, 0x38}, {1, 0x10}, {4, 0x10}}, 0), 0x3c01u)
          << arch;
      EXPECT_EQ(probe(H, {{0, 0x38}, {2, 0x08}, {3, 0x08}}, {{0, 0x38}, {2, 0x10}, {3, 0x10}}, 0), 0x3c01u)
          << arch;
      EXPECT_EQ(probe(H, {{0, 0x08}, {2, 0x08}}, {{0, 0x10}, {2, 0x10}}, 0x3c00), 0x3c01u) << arch;
      EXPECT_EQ(probe(S, {{0, 0x38}}, {{0, 0x38}}, 0x4b800001), 0x4b800002u) << arch;
    }
  EXPECT_EQ(probe(get("sm90", instr_kind::wgmma, format_id::e4m3), {{0, 0x38}}, {{0, 0x38}}, 0x4b800001),
            0x4b800000u);
  // e5m2 (1 = 0x3c, 2^-6 = 0x24, 2^-5 = 0x28): the first line again.
  EXPECT_EQ(probe(get("sm100", instr_kind::mma, format_id::e5m2, format_id::fp16),
                  {{0, 0x3c}, {1, 0x24}, {2, 0x24}}, {{0, 0x3c}, {1, 0x28}, {2, 0x28}}, 0),
            0x3c00u);
}

// ---------------------------------------------------------------------------
// Order probes: +U at k = 0, 1 at k = 1, -U at k = L (U = 2^24, c = 0).
// Blocks in increasing k: the first block sums U + 1 = 2^24 + 1 exactly and truncates it to
// FP32 2^24, the second gives U - U = +0. The reverse order would give -U, then -U + U + 1 = 1.
// One block (Hopper k16): U + 1 - U = 1 exactly. [MMASIM: Ampere/Ada k-halves, first half first]
TEST(ProbeOrder, PlusMinusPairAcrossBlocks) {
  const std::uint64_t U = bf16_pow2(24);
  for (const char *arch : {"sm80", "sm86", "sm89"})
    EXPECT_EQ(probe(get(arch, instr_kind::mma, format_id::bf16), {{0, U}, {1, one}, {8, U | neg_bit}},
                    {{0, one}, {1, one}, {8, one}}, 0),
              0x00000000u)
        << arch;
  EXPECT_EQ(probe(get("sm90", instr_kind::mma, format_id::bf16), {{0, U}, {1, one}, {8, U | neg_bit}},
                  {{0, one}, {1, one}, {8, one}}, 0),
            0x3f800000u);
  // Instructions chain in increasing k too (GEMM reference, K = 32 on Hopper: two instructions).
  const preset &H = get("sm90", instr_kind::mma, format_id::bf16);
  std::vector<std::uint64_t> a(32, 0), b(32, one);
  a[0] = U, a[1] = one, a[16] = U | neg_bit;
  EXPECT_EQ(model_dot(H, a.data(), b.data(), 32, 0), 0x00000000u);
  a[16] = 0, a[17] = U | neg_bit, a[0] = 0, a[18] = U, a[1] = 0, a[19] = one; // all in the second
  EXPECT_EQ(model_dot(H, a.data(), b.data(), 32, 0), 0x3f800000u);
}

// ---------------------------------------------------------------------------
// Final truncation: c = 1 + 2^-23 + 2^-22 plus three 1*1 products = 4 + 3*2^-23: truncation gives
// 0x40800000, nearest would give 0x40800001 [FHMP21 (round toward zero)][KM25][MMASIM].
TEST(ProbeOutput, FinalTruncation) {
  for (const auto &pc : bf16_presets)
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, one}, {1, one}, {2, one}},
                    {{0, one}, {1, one}, {2, one}}, 0x3f800003),
              0x40800000u)
        << pc.arch;
  EXPECT_EQ(probe(get("sm70", instr_kind::mma, format_id::fp16), {{0, 0x3c00}, {1, 0x3c00}, {2, 0x3c00}},
                  {{0, 0x3c00}, {1, 0x3c00}, {2, 0x3c00}}, 0x3f800003),
            0x40800000u);
}

// FP16 output rounds to nearest even [KM25 (frmode 'rne' for fp16 output)][MMASIM]:
// 1 + 1.5*2^-11 -> 0x3c01 (truncation would give 0x3c00); ties 1 + 2^-11 -> 0x3c00 (even),
// 1 + 2^-10 + 2^-11 -> 0x3c02.
TEST(ProbeOutput, Fp16OutputNearestEven) {
  for (auto [arch, kind] : {std::pair{"sm70", instr_kind::mma}, std::pair{"sm75", instr_kind::mma},
                            std::pair{"sm80", instr_kind::mma}, std::pair{"sm86", instr_kind::mma},
                            std::pair{"sm89", instr_kind::mma}, std::pair{"sm90", instr_kind::mma},
                            std::pair{"sm90", instr_kind::wgmma}}) {
    const preset &P = get(arch, kind, format_id::fp16, format_id::fp16);
    EXPECT_EQ(probe(P, {{0, 0x3c00}}, {{0, 0x3c00}}, 0x1200), 0x3c01u) << arch;
    EXPECT_EQ(probe(P, {{0, 0x3c00}}, {{0, 0x3c00}}, 0x1000), 0x3c00u) << arch;
    EXPECT_EQ(probe(P, {{0, 0x3c00}}, {{0, 0x3c00}}, 0x1600), 0x3c02u) << arch;
  }
}

// fp8 (Ada mma.sync, Hopper wgmma) with FP32 output: the result keeps 13 fraction bits [MMASIM (f32_e8m13)]
// [KM25 (neab -10)]: 1 + 1 + 2^-13 = 2 + 2^-13 -> 2 (0x40000000), not 0x40000400.
TEST(ProbeOutput, Fp8OutputThirteenBits) {
  for (auto [arch, kind] : {std::pair{"sm89", instr_kind::mma}, std::pair{"sm90", instr_kind::wgmma}}) {
    EXPECT_EQ(probe(get(arch, kind, format_id::e4m3), {{0, 0x38}, {1, 0x38}, {2, 0x08}},
                    {{0, 0x38}, {1, 0x38}, {2, 0x04}}, 0),
              0x40000000u)
        << arch;
    // e5m2: 2^-13 is a normal e5m2 number (0x08).
    EXPECT_EQ(probe(get(arch, kind, format_id::e5m2), {{0, 0x3c}, {1, 0x3c}, {2, 0x08}},
                    {{0, 0x3c}, {1, 0x3c}, {2, 0x3c}}, 0),
              0x40000000u)
        << arch;
  }
  // sm90 and sm100 mma.sync keep all 23 bits: 2 + 2^-13 = 0x40000200 (two_block_add).
  for (const char *arch : {"sm90", "sm100"}) {
    EXPECT_EQ(probe(get(arch, instr_kind::mma, format_id::e4m3), {{0, 0x38}, {1, 0x38}, {2, 0x08}},
                    {{0, 0x38}, {1, 0x38}, {2, 0x04}}, 0),
              0x40000200u)
        << arch;
    EXPECT_EQ(probe(get(arch, instr_kind::mma, format_id::e5m2), {{0, 0x3c}, {1, 0x3c}, {2, 0x08}},
                    {{0, 0x3c}, {1, 0x3c}, {2, 0x3c}}, 0),
              0x40000200u)
        << arch;
  }
}

// ---------------------------------------------------------------------------
// No overflow inside a block: 2^100*2^100 - 2^100*2^100 + 1 = +0 (the products are not rounded
// to FP32; c is cut at alignment to 2^200) [notes: Khattak & Mikaitis / MMA-Sim].
TEST(ProbeRange, NoOverflowInsideBlock) {
  const std::uint64_t big = bf16_pow2(100);
  for (const auto &pc : bf16_presets)
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, big}, {1, big | neg_bit}},
                    {{0, big}, {1, big}}, 0x3f800000),
              0x00000000u)
        << pc.arch;
}

// 2^127*1 + 2^127 = 2^128: past FP32 range -> +Inf (0x7f800000).
TEST(ProbeRange, OverflowToInf) {
  for (const auto &pc : bf16_presets) {
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, bf16_pow2(127)}}, {{0, one}}, f32_pow2(127)),
              0x7f800000u);
    EXPECT_EQ(probe(get(pc.arch, pc.kind, format_id::bf16), {{0, bf16_pow2(127) | neg_bit}}, {{0, one}},
                    f32_pow2(127) | 0x80000000u),
              0xff800000u);
  }
}

// ---------------------------------------------------------------------------
// Zero-term exponent [KM25: minimum alignment exponent -132 (A100), -133 (H100)]:
// c = +0 (a zero term), products 2^-149 and -2^t. The zero term puts emax at e_zero, so the
// block lsb is 2^(e_zero - F) = 2^-156 (A100) or 2^-158 (H100):
//   t one below that lsb: -2^t is cut, the sum is 2^-149 -> 0x00000001;
//   t at that lsb: 2^-149 - 2^t truncates to +0.
// (If zero terms did not take part, emax would be -149 and both would give +0.)
TEST(ProbeZeroTerm, ExponentOfZeroTerms) {
  for (const auto &pc : bf16_presets) {
    const preset &P = get(pc.arch, pc.kind, format_id::bf16);
    const int lsb = pc.F == 24 ? -156 : -158;
    const std::uint64_t a0 = bf16_pow2(-75), b0 = bf16_pow2(-74), a1 = bf16_pow2(-80) | neg_bit;
    EXPECT_EQ(probe(P, {{0, a0}, {1, a1}}, {{0, b0}, {1, bf16_pow2(lsb - 1 + 80)}}, 0), 0x00000001u)
        << pc.arch;
    EXPECT_EQ(probe(P, {{0, a0}, {1, a1}}, {{0, b0}, {1, bf16_pow2(lsb + 80)}}, 0), 0x00000000u) << pc.arch;
    // A nonzero c (exponent >= -126) outranks e_zero: emax = -126, the lsb is 2^-150 (F = 24) or
    // 2^-151 (F = 25); -2^t is cut all the same and c + 2^-149 = 4*2^-149.
    EXPECT_EQ(probe(P, {{0, a0}, {1, a1}}, {{0, b0}, {1, bf16_pow2(lsb - 1 + 80)}}, 0x00000003), 0x00000004u);
  }
}

// The zero-term exponent as an option (block_params::zeros; `bf16emu mma --zero-exp mmasim`):
// MMA-Sim gives a zero operand the exponent -126, so 0 * y has exponent -126 + ey, and a zero c
// -126 [MMASIM arithmetic.py, extract_significand_exponent]. Each line is the GPU probe that
// settles the choice (docs/tensor-cores.md, "The zero-term exponent"); sm90 bf16, one block of 16
// (F = 25), D derived by hand under both rules.
preset with_zeros(const preset &P, zero_exp z) {
  preset Q = P;
  Q.block.zeros = z;
  return Q;
}

TEST(ProbeZeroExp, ZeroProductExponent) {
  // 0 * 0x7f00 (2^127) at k0, 0x35ff * 0x35ff at k1 (1.1111111b * 2^-20 squared = 65025 * 2^-54,
  // product exponent -40), C = 0. e_zero: emax = max(-40, -133) = -40, the product is exact:
  // 1.111111000000001b * 2^-39 = 0x2c7e0100. mmasim: the zero product's exponent is
  // -126 + 127 = 1, the lsb 2^-24, and the product (below 2^-38) is cut: +0.
  const preset &H = get("sm90", instr_kind::mma, format_id::bf16);
  for (const zero_exp z : {zero_exp::e_zero, zero_exp::mmasim})
    EXPECT_EQ(probe(with_zeros(H, z), {{0, 0x0000}, {1, 0x35ff}}, {{0, 0x7f00}, {1, 0x35ff}}, 0),
              z == zero_exp::e_zero ? 0x2c7e0100u : 0x00000000u)
        << to_string(z);
  // Without a zero factor both rules agree (every slot filled: 16 * 1 * 1 = 16).
  std::vector<std::uint64_t> ones(16, 0x3f80);
  EXPECT_EQ(model_dot(with_zeros(H, zero_exp::mmasim), ones.data(), ones.data(), 16, 0), 0x41800000u);
}

TEST(ProbeZeroExp, ZeroCExponent) {
  // A = B = 16 x 0x1c82 ((1 + 2^-6) * 2^-70): each product is 2^-140 + 2^-145 + 2^-152 at
  // exponent -140; C = 0. e_zero: emax = max(-140, -133) = -133, lsb 2^-158, the products are
  // exact: 16 * p = 2^-136 + 2^-141 + 2^-148 = 0x2102 * 2^-149 (an FP32 subnormal). mmasim: C's
  // exponent -126 is emax, lsb 2^-151, each product loses 2^-152: 2^-136 + 2^-141 = 0x00002100.
  const preset &H = get("sm90", instr_kind::mma, format_id::bf16);
  std::vector<std::uint64_t> v(16, 0x1c82);
  EXPECT_EQ(model_dot(with_zeros(H, zero_exp::e_zero), v.data(), v.data(), 16, 0), 0x00002102u);
  EXPECT_EQ(model_dot(with_zeros(H, zero_exp::mmasim), v.data(), v.data(), 16, 0), 0x00002100u);
  // A nonzero C of the same exponent does the same under both rules: 2^-126 + 16 p, lsb 2^-151.
  EXPECT_EQ(model_dot(with_zeros(H, zero_exp::e_zero), v.data(), v.data(), 16, 0x00800000), 0x00802100u);
  EXPECT_EQ(model_dot(with_zeros(H, zero_exp::mmasim), v.data(), v.data(), 16, 0x00800000), 0x00802100u);
}

TEST(ProbeZeroExp, NamesAndDefault) {
  zero_exp z = zero_exp::mmasim;
  EXPECT_TRUE(parse_zero_exp("default", z));
  EXPECT_EQ(z, zero_exp::e_zero);
  EXPECT_TRUE(parse_zero_exp("mmasim", z));
  EXPECT_EQ(z, zero_exp::mmasim);
  EXPECT_TRUE(parse_zero_exp("e_zero", z));
  EXPECT_FALSE(parse_zero_exp("mmasim2", z));
  EXPECT_FALSE(parse_zero_exp("", z));
  EXPECT_EQ(z, zero_exp::e_zero);
  for (const preset &P : presets)
    EXPECT_EQ(P.block.zeros, zero_exp::e_zero) << describe(P); // the default is unchanged
}

// tcgen05.mma kind::f16 with f16 x bf16 and bf16 x f16 operands, f32 D (issue 33; MMA-Sim
// nv_tcgen05mma.py accepts either type on either side): the Hopper block (16, F = 25, -133).
TEST(ProbeTcgen05Mixed, F16TimesBf16) {
  for (const bool f16_first : {true, false}) {
    const format_id fa = f16_first ? format_id::fp16 : format_id::bf16;
    const format_id fb = f16_first ? format_id::bf16 : format_id::fp16;
    const preset *P = find_preset(arch::sm100, instr_kind::tcgen05, fa, fb, format_id::fp32, format_id::fp32);
    ASSERT_NE(P, nullptr);
    EXPECT_EQ(P->k, 16);
    EXPECT_TRUE(P->e_zero_matters);
    const std::string what = describe(*P);
    // Each probe names (f16 value, bf16 value) per k; A and B take them in the preset's order.
    auto run = [&](std::initializer_list<std::tuple<int, std::uint64_t, std::uint64_t>> e, std::uint64_t c,
                   zero_exp z = zero_exp::e_zero) {
      std::vector<std::uint64_t> a(16, 0), b(16, 0);
      for (auto [k, h, bf] : e)
        (f16_first ? a : b).at(k) = h, (f16_first ? b : a).at(k) = bf;
      return model_dot(with_zeros(*P, z), a.data(), b.data(), 16, c);
    };
    // F = 25: 1 (f16 0x3c00) * 1 (bf16 0x3f80) + c, c = -2^-25 (kept at the lsb 2^-25): 1 - 2^-25
    // truncates to 0x3f7fffff; c = -2^-26 is cut: 1.0.
    EXPECT_EQ(run({{0, 0x3c00, 0x3f80}}, 0xb3000000), 0x3f7fffffu) << what;
    EXPECT_EQ(run({{0, 0x3c00, 0x3f80}}, 0xb2800000), 0x3f800000u) << what;
    // The bf16 range: f16 2^-24 (subnormal 0x0001) * bf16 2^-100 (0x0d80) = 2^-124 = 0x01800000,
    // out of reach of any f16 x f16 product.
    EXPECT_EQ(run({{3, 0x0001, 0x0d80}}, 0), 0x01800000u) << what;
    // e_zero matters: f16 0 * bf16 2^100 (0x7180) and f16 2^-14 (0x0400) * bf16 2^-100 = 2^-114.
    // e_zero: emax = max(-114, -133), the product is exact: 2^-114 = 0x06800000. mmasim: the zero
    // product's exponent is -126 + 100 = -26, lsb 2^-51, and 2^-114 is cut: +0.
    EXPECT_EQ(run({{0, 0x0000, 0x7180}, {1, 0x0400, 0x0d80}}, 0), 0x06800000u) << what;
    EXPECT_EQ(run({{0, 0x0000, 0x7180}, {1, 0x0400, 0x0d80}}, 0, zero_exp::mmasim), 0x00000000u) << what;
    // Specials: f16 Inf (0x7c00) * bf16 0 is NaN (0x7fffffff); bf16 -Inf (0xff80) * f16 2: -Inf.
    EXPECT_EQ(run({{5, 0x7c00, 0x0000}}, 0), 0x7fffffffu) << what;
    EXPECT_EQ(run({{5, 0x4000, 0xff80}}, 0x3f800000), 0xff800000u) << what;
    EXPECT_EQ(ref_dot(*P, std::vector<std::uint64_t>(16, f16_first ? 0x3c00 : 0x3f80).data(),
                      std::vector<std::uint64_t>(16, f16_first ? 0x3f80 : 0x3c00).data(), 16, 0),
              0x41800000u)
        << what;
  }
  // No f16 D for the mixes (MMA-Sim: f16 D takes f16 x f16 only).
  EXPECT_EQ(find_preset(arch::sm100, instr_kind::tcgen05, format_id::fp16, format_id::bf16, format_id::fp16,
                        format_id::fp16),
            nullptr);
}

// ---------------------------------------------------------------------------
// Subnormals: inputs decode with the format's emin; products and results are not flushed
// [KM25 (subnormal products on, subnormal outputs on)][FHMP21].
TEST(ProbeSubnormal, SubnormalInputsAndResults) {
  for (const auto &pc : bf16_presets) {
    const preset &P = get(pc.arch, pc.kind, format_id::bf16);
    // bf16 0x0001 = 2^-133; times 1 = 2^-133 = FP32 subnormal 0x00010000.
    EXPECT_EQ(probe(P, {{0, 0x0001}}, {{0, one}}, 0), 0x00010000u);
    // A subnormal c passes a block of zero products unchanged.
    EXPECT_EQ(probe(P, {}, {}, 0x00000003), 0x00000003u);
    EXPECT_EQ(probe(P, {}, {}, 0x80000003), 0x80000003u);
    // Subnormal + subnormal.
    EXPECT_EQ(probe(P, {{0, 0x0001}}, {{0, one}}, 0x00000005), 0x00010005u);
  }
  // fp16: subnormal 2^-24 (0x0001) * 2^-1 = 2^-25, an FP32 normal.
  EXPECT_EQ(probe(get("sm80", instr_kind::mma, format_id::fp16), {{0, 0x0001}}, {{0, 0x3800}}, 0),
            f32_pow2(-25));
  // fp16 output: 2^-24 * 1/2 = 2^-25 is a tie between 0 and the smallest subnormal: even -> +0;
  // 3*2^-24 * 1/2 = 1.5*2^-24 -> 2*2^-24 (0x0002).
  EXPECT_EQ(
      probe(get("sm80", instr_kind::mma, format_id::fp16, format_id::fp16), {{0, 0x0001}}, {{0, 0x3800}}, 0),
      0x0000u);
  EXPECT_EQ(
      probe(get("sm80", instr_kind::mma, format_id::fp16, format_id::fp16), {{0, 0x0003}}, {{0, 0x3800}}, 0),
      0x0002u);
}

// ---------------------------------------------------------------------------
// Specials: NaN input, Inf*0 and +Inf + -Inf give NaN; MMA-Sim emits the all-ones NaN
// 0x7fffffff (0x7fff for FP16 output) [MMASIM]; Inf propagates with its sign. (The NaN
// payload and the sign of zero are predictions until seen on a device: docs/tensor-cores.md.)
TEST(ProbeSpecial, NaNAndInf) {
  for (const auto &pc : bf16_presets) {
    const preset &P = get(pc.arch, pc.kind, format_id::bf16);
    EXPECT_EQ(probe(P, {{0, 0x7fc0}}, {{0, one}}, 0), 0x7fffffffu);
    EXPECT_EQ(probe(P, {{3, 0xffc1}}, {{0, one}}, 0x3f800000), 0x7fffffffu);           // NaN times 0
    EXPECT_EQ(probe(P, {{0, 0x7f80}}, {{0, 0}}, 0), 0x7fffffffu);                      // Inf * 0
    EXPECT_EQ(probe(P, {{0, 0x7f80}}, {{0, one}}, 0xff800000), 0x7fffffffu);           // +Inf + -Inf
    EXPECT_EQ(probe(P, {{0, 0x7f80}}, {{0, one | neg_bit}}, 0xff800000), 0xff800000u); // -Inf + -Inf
    EXPECT_EQ(probe(P, {{0, 0x7f80}}, {{0, one}}, 0x3f800000), 0x7f800000u);           // Inf + 1
    EXPECT_EQ(probe(P, {}, {}, 0x7f800001), 0x7fffffffu);                              // NaN c
    EXPECT_EQ(probe(P, {{0, one}}, {{0, one}}, 0xff800000), 0xff800000u);              // -Inf c
  }
  // e4m3 has no Inf: its NaN is S.1111.111.
  EXPECT_EQ(probe(get("sm90", instr_kind::wgmma, format_id::e4m3), {{0, 0x7f}}, {{0, 0x38}}, 0), 0x7fffffffu);
  EXPECT_EQ(
      probe(get("sm90", instr_kind::wgmma, format_id::e4m3, format_id::fp16), {{0, 0xff}}, {{0, 0x38}}, 0),
      0x7fffu);
  // e4m3 0x7e = 448 is finite: 448*448 = 200704 exactly.
  EXPECT_EQ(probe(get("sm90", instr_kind::wgmma, format_id::e4m3), {{0, 0x7e}}, {{0, 0x7e}}, 0), 0x48440000u);
  // fp16 output overflow: 2^15 * 4 = 2^17 -> +Inf 0x7c00.
  EXPECT_EQ(
      probe(get("sm80", instr_kind::mma, format_id::fp16, format_id::fp16), {{0, 0x7800}}, {{0, 0x4400}}, 0),
      0x7c00u);
}

// Exact cancellation gives +0, also from negative zeros [notes: "An exact zero sum gives +0"].
TEST(ProbeSpecial, ZeroSumIsPositiveZero) {
  for (const auto &pc : bf16_presets) {
    const preset &P = get(pc.arch, pc.kind, format_id::bf16);
    EXPECT_EQ(probe(P, {{0, one}}, {{0, one}}, 0xbf800000), 0x00000000u);
    EXPECT_EQ(probe(P, {{0, neg_bit}}, {{0, one}}, 0x80000000), 0x00000000u);
  }
}

} // namespace

// ---------------------------------------------------------------------------
// Every preset, generic probes (values that exist in every input format).
namespace {

std::uint64_t one_of(format_id f) {
  switch (f) {
  case format_id::bf16: return 0x3f80;
  case format_id::fp16: return 0x3c00;
  case format_id::tf32: return 0x1fc00;
  case format_id::e4m3: return 0x38;
  case format_id::e3m2: return 0x0c; // OCP MX: bias 3, 1.0 = exponent field 3
  case format_id::e2m3: return 0x08; // bias 1
  case format_id::e2m1: return 0x2;  // bias 1
  default: return 0x3c;              // e5m2
  }
}
// fp6 and fp4 (OCP MX) have no NaN and no Inf: every pattern is a number.
bool has_nan(format_id f) { return f != format_id::e3m2 && f != format_id::e2m3 && f != format_id::e2m1; }
std::uint64_t nan_of(format_id f) {
  switch (f) {
  case format_id::bf16: return 0x7fc0;
  case format_id::fp16: return 0x7e00;
  case format_id::tf32: return 0x3fe00;
  case format_id::e4m3: return 0x7f;
  default: return 0x7e; // e5m2
  }
}

TEST(ProbeAllPresets, GenericProbes) {
  for (const preset &P : presets) {
    // The C/D mixes and f64 have their own probes (issue 16, above); B's 1.0 is in B's format.
    if (P.c != P.out || P.accum != accum_kind::fused) continue;
    const std::uint64_t one_in = one_of(P.in), one_b = one_of(P.b);
    const bool f32 = P.out == format_id::fp32;
    // F probe 1*1 + c, c = -(1 - 2^-24) (FP32 c): c is cut to F fraction bits below 2^0, so
    // D = 2^-min(F, 24) [FHMP21][KM25][MMASIM]: V100 2^-23, A100 and H100 2^-24, fp8 2^-13.
    // FP16 c = -(1 - 2^-11) fits every F >= 11: D = 2^-11 (0x1000).
    if (f32) {
      const int e = -std::min(P.block.F, 24);
      EXPECT_EQ(probe(P, {{0, one_in}}, {{0, one_b}}, 0xbf7fffff), f32_pow2(e)) << describe(P);
    } else {
      EXPECT_EQ(probe(P, {{0, one_in}}, {{0, one_b}}, 0xbbff), 0x1000u) << describe(P);
    }
    // 1*1 + 1 = 2 in every preset.
    EXPECT_EQ(probe(P, {{0, one_in}}, {{0, one_b}}, f32 ? 0x3f800000 : 0x3c00), f32 ? 0x40000000u : 0x4000u)
        << describe(P);
    // Exact cancellation: +0.
    EXPECT_EQ(probe(P, {{P.k - 1, one_in}}, {{P.k - 1, one_b}}, f32 ? 0xbf800000 : 0xbc00), 0u)
        << describe(P);
    // NaN input at the last k (in A, or in B when only B's format has one; a NaN C when neither
    // has: fp6/fp4): the all-ones NaN [MMASIM].
    const std::uint64_t nan_d = f32 ? 0x7fffffffu : 0x7fffu;
    if (has_nan(P.in))
      EXPECT_EQ(probe(P, {{P.k - 1, nan_of(P.in)}}, {{P.k - 1, one_b}}, 0), nan_d) << describe(P);
    else if (has_nan(P.b))
      EXPECT_EQ(probe(P, {{P.k - 1, one_in}}, {{P.k - 1, nan_of(P.b)}}, 0), nan_d) << describe(P);
    else
      EXPECT_EQ(probe(P, {{P.k - 1, one_in}}, {{P.k - 1, one_b}}, f32 ? 0x7fc00000 : 0x7e00), nan_d)
          << describe(P);
    // An Inf accumulator passes through finite products.
    EXPECT_EQ(probe(P, {{0, one_in}}, {{0, one_b}}, f32 ? 0x7f800000 : 0x7c00), f32 ? 0x7f800000u : 0x7c00u)
        << describe(P);
  }
}

// ---------------------------------------------------------------------------
// Issue 16: mixed operand formats, the m8n8k4 C/D mixes, m16n8k8 fp16, mma.sync on sm100 and
// sm120, f64 DMMA. Parameters from MMA-Sim arXiv 2511.10909 (mmasim/isa/nv_ptx/nv_mma.py: which
// shapes each arch runs; mmasim/simulator/nv_ptx.py: fraction bits, split-k, output rounding, C
// converted to the D type, f64 as an fma chain) and the PTX ISA (shapes and types); every
// expected value is derived by hand in the comment.

const preset &get6(const char *name, instr_kind kind, format_id a, format_id b, format_id c, format_id d,
                   int k = 0) {
  arch ar{};
  if (!parse_arch(name, ar)) throw std::runtime_error(std::string("unknown arch ") + name);
  const preset *p = find_preset(ar, kind, a, b, c, d, k);
  if (!p) throw std::runtime_error(std::string("no preset ") + name);
  return *p;
}

constexpr format_id E4 = format_id::e4m3, E5 = format_id::e5m2, H = format_id::fp16, S = format_id::fp32,
                    D64 = format_id::fp64, BF = format_id::bf16;

// e4m3 x e5m2: B is decoded as e5m2 (0x3c = 1.0; as e4m3 it would be 1.5), A as e4m3 (0x38 = 1.0).
// 448 (e4m3 0x7e, 1.75*2^8) * 57344 (e5m2 0x7b, 1.75*2^15) = 3.0625*2^23 = 0x4bc40000 (exact in 13
// bits). Smallest subnormals 2^-9 (e4m3 0x01) * 2^-16 (e5m2 0x01) = 2^-25 = 0x33000000; to FP16 that
// is half the smallest subnormal, a tie to even: 0. 2^-8 (e4m3 0x02) * 2^-16 = 2^-24 = FP16 0x0001.
// F probe 1*1 + c, c = -(1 - 2^-24): 13 bits (Ada, Hopper) cut c to -(1 - 2^-13): 2^-13 = 0x39000000.
TEST(ProbeMixedFp8, E4m3TimesE5m2) {
  struct mix {
    const char *arch;
    instr_kind kind;
  };
  for (const mix m :
       {mix{"sm89", instr_kind::mma}, mix{"sm90", instr_kind::mma}, mix{"sm90", instr_kind::wgmma}}) {
    const preset &P = get6(m.arch, m.kind, E4, E5, S, S), &Q = get6(m.arch, m.kind, E5, E4, S, S);
    EXPECT_EQ(probe(P, {{0, 0x38}}, {{0, 0x3c}}, 0), 0x3f800000u) << m.arch;
    EXPECT_EQ(probe(Q, {{0, 0x3c}}, {{0, 0x38}}, 0), 0x3f800000u) << m.arch;
    EXPECT_EQ(probe(P, {{P.k - 1, 0x7e}}, {{P.k - 1, 0x7b}}, 0), 0x4bc40000u) << m.arch;
    EXPECT_EQ(probe(Q, {{3, 0x7b}}, {{3, 0x7e}}, 0), 0x4bc40000u) << m.arch;
    EXPECT_EQ(probe(P, {{1, 0x01}}, {{1, 0x01}}, 0), 0x33000000u) << m.arch;
    EXPECT_EQ(probe(P, {{0, 0x38}}, {{0, 0x3c}}, 0xbf7fffff), 0x39000000u) << m.arch;
    // A NaN in B (e5m2 0x7e) and an Inf in B (e5m2 0x7c) times a nonzero e4m3.
    EXPECT_EQ(probe(P, {{2, 0x38}}, {{2, 0x7e}}, 0), 0x7fffffffu) << m.arch;
    EXPECT_EQ(probe(P, {{2, 0xb8}}, {{2, 0x7c}}, 0), 0xff800000u) << m.arch;
    const preset &Ph = get6(m.arch, m.kind, E4, E5, H, H);
    EXPECT_EQ(probe(Ph, {{1, 0x01}}, {{1, 0x01}}, 0), 0x0000u) << m.arch;
    EXPECT_EQ(probe(Ph, {{1, 0x02}}, {{1, 0x01}}, 0), 0x0001u) << m.arch;
    EXPECT_EQ(probe(Ph, {{0, 0x38}}, {{0, 0x3c}}, 0xbbff), 0x1000u) << m.arch; // 1 - (1 - 2^-11)
  }
}

// m8n8k4 with C in FP16 and D in FP32 (MMA-Sim: C converted to the D type, exact): zero products
// and C = 0x3555 (1.0101010101b * 2^-2) give that value in FP32, 0x3eaaa000. C = -(1 - 2^-11)
// (0xbbff) plus 1*1 gives 2^-11 (0x3a000000) with F 23 (Volta) and 24 (Turing). On Turing an FP32 C
// -(1 - 2^-24) plus 1*1 gives 2^-24 (0x33800000: 24 bits), on Volta 2^-23 (0x34000000).
TEST(ProbeM8n8k4, CAndDFormats) {
  for (const char *a : {"sm70", "sm75"}) {
    const preset &P = get6(a, instr_kind::mma, H, H, H, S);
    EXPECT_EQ(probe(P, {}, {}, 0x3555), 0x3eaaa000u) << a;
    EXPECT_EQ(probe(P, {{3, 0x3c00}}, {{3, 0x3c00}}, 0xbbff), 0x3a000000u) << a;
    EXPECT_EQ(probe(P, {}, {}, 0x0001), 0x33800000u) << a; // FP16 subnormal 2^-24 -> FP32 normal
  }
  EXPECT_EQ(probe(get6("sm75", instr_kind::mma, H, H, S, S, 4), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x33800000u);
  EXPECT_EQ(probe(get6("sm70", instr_kind::mma, H, H, S, S), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbf7fffff),
            0x34000000u);
  EXPECT_EQ(probe(get6("sm75", instr_kind::mma, H, H, H, H, 4), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbbff),
            0x1000u);
}

// m8n8k4 .f16.f16.f16.f32 (C FP32, D FP16), the open choice: C = 1 + 2^-11 (0x3f801000) is rounded to
// FP16 first (a tie: to even, 1.0), then 2^-10 * 2^-10 = 2^-20 is added: 1 + 2^-20 rounds to 1.0,
// 0x3c00. Had C entered the fused sum at full precision, 1 + 2^-11 + 2^-20 would round to 0x3c01: a
// GPU run of this line settles the choice. C = 65520 (0x477ff000) rounds to FP16 Inf (0x7c00).
TEST(ProbeM8n8k4, Fp32CIntoFp16DOpen) {
  for (const char *a : {"sm70", "sm75"}) {
    const preset &P = get6(a, instr_kind::mma, H, H, S, H);
    EXPECT_EQ(probe(P, {{1, 0x1400}}, {{1, 0x1400}}, 0x3f801000), 0x3c00u) << a;
    EXPECT_EQ(probe(P, {}, {}, 0x477ff000), 0x7c00u) << a;
  }
}

// m16n8k8 fp16 is one block of 8 (not split, MMA-Sim): 1*1 at k0, 2^-12 * 2^-13 = 2^-25 at k7
// (0x0c00, 0x0800), C = -1: with 24 bits (Ampere, Ada) 2^-25 falls below the block lsb 2^-24: +0;
// with 25 bits (Hopper, Blackwell, RTX Blackwell) it stays: 2^-25 = 0x33000000. Split into two
// blocks of 4 it would survive on Ampere too. FP16 output: 1*1 + C -(1 - 2^-11) = 2^-11 = 0x1000.
TEST(ProbeM16n8k8, Fp16OneBlockOfEight) {
  const std::pair<const char *, std::uint64_t> cases[] = {
      {"sm75", 0},          {"sm80", 0},           {"sm86", 0},          {"sm89", 0},
      {"sm90", 0x33000000}, {"sm100", 0x33000000}, {"sm120", 0x33000000}};
  for (const auto &[a, want] : cases) {
    const preset &P = get6(a, instr_kind::mma, H, H, S, S, 8);
    ASSERT_EQ(P.k, 8) << a;
    EXPECT_EQ(probe(P, {{0, 0x3c00}, {7, 0x0c00}}, {{0, 0x3c00}, {7, 0x0800}}, 0xbf800000), want) << a;
    EXPECT_EQ(probe(get6(a, instr_kind::mma, H, H, H, H, 8), {{0, 0x3c00}}, {{0, 0x3c00}}, 0xbbff), 0x1000u)
        << a;
  }
}

// mma.sync on sm100 and sm120 (MMA-Sim: 25 bits, k16 not split): 1*1 at k0 and 2^-13 * 2^-13 =
// 2^-26 (bf16 0x3900) at k15, C = -1: one block of 16 with lsb 2^-25 drops 2^-26: +0 (two blocks
// of 8 would keep it: 0x32800000). 2^-12 * 2^-13 = 2^-25 (0x3980, 0x3900) at k1 stays: 0x33000000.
TEST(ProbeBlackwellMmaSync, OneBlockOf16With25Bits) {
  for (const char *a : {"sm100", "sm120"}) {
    const preset &P = get6(a, instr_kind::mma, BF, BF, S, S);
    EXPECT_EQ(probe(P, {{0, one}, {15, 0x3900}}, {{0, one}, {15, 0x3900}}, 0xbf800000), 0u) << a;
    EXPECT_EQ(probe(P, {{0, one}, {1, 0x3980}}, {{0, one}, {1, 0x3900}}, 0xbf800000), 0x33000000u) << a;
    const preset &Q = get6(a, instr_kind::mma, H, H, S, S);
    EXPECT_EQ(Q.k, 16) << a;
    EXPECT_EQ(probe(Q, {{0, 0x3c00}, {1, 0x0c00}}, {{0, 0x3c00}, {1, 0x0800}}, 0xbf800000), 0x33000000u) << a;
  }
}

// sm120 fp8 (kind::f8f6f4): 25 bits and a plain FP32 output (MMA-Sim applies the 13-bit cut to
// Ada only): 1*1 + C -(1 - 2^-24) = 2^-24 (0x33800000; Ada gives 2^-13); 1*1 + 2^-20 (0x35800000)
// = 1 + 2^-20 = 0x3f800008 (Ada's 13-bit output: 0x3f800000). Mixed: e4m3 1.0 x e5m2 1.0.
TEST(ProbeRtxBlackwell, Fp8TwentyFiveBits) {
  for (const auto &[fa, fb, oa, ob] : {std::tuple{E4, E4, 0x38, 0x38}, std::tuple{E4, E5, 0x38, 0x3c},
                                       std::tuple{E5, E4, 0x3c, 0x38}, std::tuple{E5, E5, 0x3c, 0x3c}}) {
    const preset &P = get6("sm120", instr_kind::mma, fa, fb, S, S);
    EXPECT_EQ(probe(P, {{0, std::uint64_t(oa)}}, {{0, std::uint64_t(ob)}}, 0xbf7fffff), 0x33800000u);
    EXPECT_EQ(probe(P, {{31, std::uint64_t(oa)}}, {{31, std::uint64_t(ob)}}, 0x35800000), 0x3f800008u);
    const preset &Ph = get6("sm120", instr_kind::mma, fa, fb, H, H);
    EXPECT_EQ(probe(Ph, {{0, std::uint64_t(oa)}}, {{0, std::uint64_t(ob)}}, 0xbbff), 0x1000u);
  }
  EXPECT_EQ(probe(get6("sm89", instr_kind::mma, E4, E4, S, S), {{0, 0x38}}, {{0, 0x38}}, 0x35800000),
            0x3f800000u);
}

// sm120 mma.sync kind::f8f6f4 with fp6 and fp4 operands (PTX ISA 9.7.14.5: .atype and .btype each
// e4m3, e5m2, e3m2, e2m3 or e2m1; MMA-Sim nv_mma.py lists the e2m1 mixes, fp6 is its TODO: open).
// Values by the OCP MX spec (the sign is the top bit of the 4/6/8-bit pattern):
//   e2m1 (bias 1): 0x2 = 1, 0x7 = 1.5*2^2 = 6, 0x1 = 0.5 (subnormal)
//   e2m3 (bias 1): 0x08 = 1, 0x1f = 1.875*2^2 = 7.5, 0x01 = 2^-3
//   e3m2 (bias 3): 0x0c = 1, 0x1f = 1.75*2^4 = 28, 0x01 = 2^-4
//   e4m3: 0x38 = 1, 0x7e = 448, 0x01 = 2^-9;  e5m2: 0x3c = 1, 0x7b = 57344, 0x01 = 2^-16
// Every mix with an fp6/fp4 operand, f32 D: F probe 1*1 - (1 - 2^-24) = 2^-24 (0x33800000: 25 bits,
// as the fp8 rows); 1*1 at k31 + 2^-20 = 0x3f800008 (no 13-bit cut); max*max at k0 and at k31, 32
// of them (all products share one exponent, at most 8 significant bits: exact), the smallest
// subnormals' product, and -max*max + max*max + 0 = +0. The expected values of the products are
// the exact host double products (at most 8 + 8 significant bits) as floats. f16 D: 1*1 - (1 -
// 2^-11) = 2^-11 (0x1000). Hand values: e2m1 6*6 = 36 (0x42100000), 32*36 = 1152 (0x44900000),
// 0.5*0.5 = 0x3e800000; e3m2 x e2m3 28*7.5 = 210 (0x43520000, the docs' fp6 line); e2m3 7.5^2 =
// 56.25 (0x42610000); e3m2 28^2 = 784 (0x44440000), 2^-4*2^-4 = 2^-8 (0x3b800000).
struct mx_fmt {
  format_id id;
  std::uint64_t one, max, sub;
  double max_v, sub_v;
};
constexpr mx_fmt mx_formats[] = {{format_id::e4m3, 0x38, 0x7e, 0x01, 448.0, 0x1p-9},
                                 {format_id::e5m2, 0x3c, 0x7b, 0x01, 57344.0, 0x1p-16},
                                 {format_id::e3m2, 0x0c, 0x1f, 0x01, 28.0, 0x1p-4},
                                 {format_id::e2m3, 0x08, 0x1f, 0x01, 7.5, 0x1p-3},
                                 {format_id::e2m1, 0x2, 0x7, 0x1, 6.0, 0.5}};

std::uint64_t f32_bits_of(double x) { // x exact in binary32
  const float f = float(x);
  EXPECT_EQ(double(f), x);
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(ProbeRtxBlackwell, Fp6Fp4Operands) {
  int mixes = 0;
  for (const mx_fmt &fa : mx_formats)
    for (const mx_fmt &fb : mx_formats) {
      if (has_nan(fa.id) && has_nan(fb.id)) continue; // fp8 x fp8: Fp8TwentyFiveBits
      const preset &P = get6("sm120", instr_kind::mma, fa.id, fb.id, S, S);
      const std::string name = describe(P);
      ++mixes;
      EXPECT_EQ(probe(P, {{0, fa.one}}, {{0, fb.one}}, 0xbf7fffff), 0x33800000u) << name;
      EXPECT_EQ(probe(P, {{31, fa.one}}, {{31, fb.one}}, 0x35800000), 0x3f800008u) << name;
      const std::uint64_t mm = f32_bits_of(fa.max_v * fb.max_v);
      EXPECT_EQ(probe(P, {{0, fa.max}}, {{0, fb.max}}, 0), mm) << name;
      EXPECT_EQ(probe(P, {{31, fa.max}}, {{31, fb.max}}, 0), mm) << name;
      std::vector<std::uint64_t> va(32, fa.max), vb(32, fb.max);
      EXPECT_EQ(model_dot(P, va.data(), vb.data(), 32, 0), f32_bits_of(32 * fa.max_v * fb.max_v)) << name;
      EXPECT_EQ(probe(P, {{5, fa.sub}}, {{5, fb.sub}}, 0), f32_bits_of(fa.sub_v * fb.sub_v)) << name;
      const std::uint64_t neg_a = fa.max | (std::uint64_t{1} << (ref_fmt(fa.id).width() - 1));
      EXPECT_EQ(probe(P, {{0, neg_a}, {1, fa.max}}, {{0, fb.max}, {1, fb.max}}, 0), 0u) << name;
      const preset &Ph = get6("sm120", instr_kind::mma, fa.id, fb.id, H, H);
      EXPECT_EQ(probe(Ph, {{0, fa.one}}, {{0, fb.one}}, 0xbbff), 0x1000u) << describe(Ph);
    }
  EXPECT_EQ(mixes, 21);
  constexpr format_id E2M1 = format_id::e2m1, E3M2 = format_id::e3m2, E2M3 = format_id::e2m3;
  const preset &F4 = get6("sm120", instr_kind::mma, E2M1, E2M1, S, S);
  EXPECT_EQ(probe(F4, {{0, 0x7}}, {{0, 0x7}}, 0), 0x42100000u);
  std::vector<std::uint64_t> six(32, 0x7);
  EXPECT_EQ(model_dot(F4, six.data(), six.data(), 32, 0), 0x44900000u);
  EXPECT_EQ(probe(F4, {{0, 0x1}}, {{0, 0x1}}, 0), 0x3e800000u);
  EXPECT_EQ(probe(get6("sm120", instr_kind::mma, E3M2, E2M3, S, S), {{0, 0x1f}}, {{0, 0x1f}}, 0),
            0x43520000u);
  EXPECT_EQ(probe(get6("sm120", instr_kind::mma, E2M3, E2M3, S, S), {{0, 0x1f}}, {{0, 0x1f}}, 0),
            0x42610000u);
  const preset &F6 = get6("sm120", instr_kind::mma, E3M2, E3M2, S, S);
  EXPECT_EQ(probe(F6, {{0, 0x1f}}, {{0, 0x1f}}, 0), 0x44440000u);
  EXPECT_EQ(probe(F6, {{0, 0x01}}, {{0, 0x01}}, 0), 0x3b800000u);
  // B is read in B's format: e4m3 1.0 x e2m1 0x2 (1.0; as e4m3 0x02 would be 2^-8).
  EXPECT_EQ(probe(get6("sm120", instr_kind::mma, E4, E2M1, S, S), {{0, 0x38}}, {{0, 0x2}}, 0), 0x3f800000u);
}

// m16n8k4 tf32 and m16n8k8 bf16 (sm80 and every later arch) and m16n8k16 fp8 (sm89, sm120):
// MMA-Sim (simulator/nv_ptx.py) splits only k8 tf32, k16 bf16/fp16 and k32 fp8 on Ampere/Ada, so
// these shapes are one block of k. Line: 1*1 at k0, c = -1, and a tiny product p at the last k. One
// block cuts p (it lies below 2^(0-F)) and gives +0; two half blocks would give p exactly. p = 2^-26
// for bf16 (0x3900 = 2^-13, squared) and tf32 (0x1c800 = 2^-13), below 2^-24 and 2^-25. sm89 fp8
// (F 13): 2^-6 x 2^-8 = 2^-14 (e4m3 0x08 = 2^-6, 0x02 = 2^-8; e5m2 0x24 = 2^-6, 0x1c = 2^-8): +0;
// fp16 D (c -1 = 0xbc00): +0. sm120 fp8 (F 25): e5m2 0x01 = 2^-16, squared 2^-32: +0. Without c
// the product alone is exact: 2^-26 = 0x32800000, 2^-14 = 0x38800000 (fp16 0x0400), 2^-32 =
// 0x2f800000.
TEST(ProbeSmallK, OneBlockOfK) {
  constexpr format_id TF = format_id::tf32;
  for (const char *a : {"sm80", "sm86", "sm89", "sm90", "sm100", "sm120"}) {
    const preset &T = get6(a, instr_kind::mma, TF, TF, S, S, 4),
                 &B = get6(a, instr_kind::mma, BF, BF, S, S, 8);
    EXPECT_EQ(T.k, 4) << a;
    EXPECT_EQ(B.k, 8) << a;
    EXPECT_EQ(probe(T, {{0, 0x1fc00}, {3, 0x1c800}}, {{0, 0x1fc00}, {3, 0x1c800}}, 0xbf800000), 0u) << a;
    EXPECT_EQ(probe(T, {{3, 0x1c800}}, {{3, 0x1c800}}, 0), 0x32800000u) << a;
    EXPECT_EQ(probe(B, {{0, 0x3f80}, {7, 0x3900}}, {{0, 0x3f80}, {7, 0x3900}}, 0xbf800000), 0u) << a;
    EXPECT_EQ(probe(B, {{7, 0x3900}}, {{7, 0x3900}}, 0), 0x32800000u) << a;
  }
  struct fp8_case {
    format_id a, b;
    std::uint64_t one_a, one_b, pa, pb;
  };
  for (const fp8_case &m :
       {fp8_case{E4, E4, 0x38, 0x38, 0x08, 0x02}, fp8_case{E4, E5, 0x38, 0x3c, 0x08, 0x1c},
        fp8_case{E5, E4, 0x3c, 0x38, 0x24, 0x02}, fp8_case{E5, E5, 0x3c, 0x3c, 0x24, 0x1c}}) {
    const preset &P = get6("sm89", instr_kind::mma, m.a, m.b, S, S, 16),
                 &Ph = get6("sm89", instr_kind::mma, m.a, m.b, H, H, 16);
    const std::string n = describe(P);
    EXPECT_EQ(probe(P, {{0, m.one_a}, {15, m.pa}}, {{0, m.one_b}, {15, m.pb}}, 0xbf800000), 0u) << n;
    EXPECT_EQ(probe(P, {{15, m.pa}}, {{15, m.pb}}, 0), 0x38800000u) << n;
    EXPECT_EQ(probe(Ph, {{0, m.one_a}, {15, m.pa}}, {{0, m.one_b}, {15, m.pb}}, 0xbc00), 0u) << n;
    EXPECT_EQ(probe(Ph, {{15, m.pa}}, {{15, m.pb}}, 0), 0x0400u) << n;
    EXPECT_NE(&get6("sm120", instr_kind::mma, m.a, m.b, S, S, 16), nullptr);
  }
  const preset &R = get6("sm120", instr_kind::mma, E5, E5, S, S, 16);
  EXPECT_EQ(probe(R, {{0, 0x3c}, {15, 0x01}}, {{0, 0x3c}, {15, 0x01}}, 0xbf800000), 0u);
  EXPECT_EQ(probe(R, {{15, 0x01}}, {{15, 0x01}}, 0), 0x2f800000u);
}

// f64 DMMA, an IEEE fma chain in k order (MMA-Sim simulator/nv_ptx.py), where a fused dot would
// differ:
//  - 1*1, then + 2^-53 twice: each fma ties and rounds to even, D = 1.0 (a fused exact sum
//    1 + 2^-52 would give 0x3ff0000000000001);
//  - the same terms in the other k order: 2^-53 + 2^-53 = 2^-52, then + 1 = 0x3ff0000000000001;
//  - (1 + 2^-52)(1 - 2^-53) - 1 = 2^-53 - 2^-105 exactly (0x3c9ffffffffffffe): one rounding per
//    fma (a rounded product would give 1 - 1 = 0);
//  - (-0)*(+0) + ... + (-0) = -0 over the whole k (IEEE signs of zero; a fused block gives +0);
//  - 2^-537 * 2^-537 = 2^-1074, the smallest subnormal (0x1).
//  The sm90 shapes m16n8k4, m16n8k8 and m16n8k16 (PTX ISA: .f64 on sm_90; MMA-Sim nv_mma.py lists
//  them for Hopper) run the same chain over their k: the probes above, and on k8/k16 the pair of
//  2^-53 at the last two k after 1 at k0 (D = 1), the reverse order (0x3ff0000000000001).
//  m8n8k4 .f64 on sm86, sm89, sm100 and sm120 (issue 33; MMA-Sim nv_mma.py lists it among the
//  Ampere shapes of Ampere, Ada, Blackwell and RTX Blackwell) runs the same probes.
std::vector<const preset *> dmma_presets() {
  std::vector<const preset *> r;
  for (const preset &P : presets)
    if (P.in == D64) r.push_back(&P);
  return r;
}

TEST(ProbeDmma, FmaChainInKOrder) {
  constexpr std::uint64_t d1 = 0x3ff0000000000000, d53 = 0x3ca0000000000000, neg0 = 0x8000000000000000;
  const std::vector<const preset *> all = dmma_presets();
  // sm80 m8n8k4; sm90 m8n8k4, m16n8k4, m16n8k8, m16n8k16; sm86, sm89, sm100, sm120 m8n8k4
  ASSERT_EQ(all.size(), 9u);
  int sm90_shapes = 0, later_m8n8k4 = 0;
  for (const preset *Pp : all) {
    const preset &P = *Pp;
    const std::string a = describe(P) + " " + P.ptx;
    sm90_shapes += P.arch == arch::sm90;
    later_m8n8k4 +=
        (P.arch == arch::sm86 || P.arch == arch::sm89 || P.arch == arch::sm100 || P.arch == arch::sm120) &&
        P.k == 4 && P.m == 8;
    EXPECT_EQ(P.accum, accum_kind::fma_chain);
    EXPECT_EQ(probe(P, {{0, d1}, {1, d53}, {2, d53}}, {{0, d1}, {1, d1}, {2, d1}}, 0), d1) << a;
    EXPECT_EQ(probe(P, {{0, d53}, {1, d53}, {3, d1}}, {{0, d1}, {1, d1}, {3, d1}}, 0), 0x3ff0000000000001u)
        << a;
    EXPECT_EQ(probe(P, {{2, 0x3ff0000000000001}}, {{2, 0x3fefffffffffffff}}, 0xbff0000000000000),
              0x3c9ffffffffffffeu)
        << a;
    std::vector<std::uint64_t> nz(P.k, neg0), pz(P.k, 0);
    EXPECT_EQ(model_dot(P, nz.data(), pz.data(), P.k, neg0), neg0) << a;
    // Four (-0)*(+0) then (+0)*(+0) at k4 (k8, k16): -0 + +0 = +0.
    EXPECT_EQ(probe(P, {{0, neg0}, {1, neg0}, {2, neg0}, {3, neg0}}, {}, neg0), P.k > 4 ? 0u : neg0) << a;
    EXPECT_EQ(probe(P, {{0, 0x1e60000000000000}}, {{0, 0x1e60000000000000}}, 0), 1u) << a;
    EXPECT_EQ(probe(P, {{0, 0x7ff0000000000000}}, {}, 0), 0x7fffffffffffffffu) << a; // Inf * 0
    if (P.k < 8) continue;
    const int l = P.k - 1;
    EXPECT_EQ(probe(P, {{0, d1}, {l - 1, d53}, {l, d53}}, {{0, d1}, {l - 1, d1}, {l, d1}}, 0), d1) << a;
    EXPECT_EQ(probe(P, {{0, d53}, {1, d53}, {l, d1}}, {{0, d1}, {1, d1}, {l, d1}}, 0), 0x3ff0000000000001u)
        << a;
  }
  EXPECT_EQ(sm90_shapes, 4);
  EXPECT_EQ(later_m8n8k4, 4);
  EXPECT_EQ(find_preset(arch::sm90, instr_kind::mma, D64, D64, D64, D64, 16)->m, 16);
  EXPECT_EQ(find_preset(arch::sm90, instr_kind::mma, D64, D64, D64, D64, 8)->k, 8);
}

} // namespace
