// Blackwell mixed-format and block-scaled kinds (include/bf16emu/tc/scaled.hpp) and the tcgen05
// kind::f16 preset with f16 accumulation: hand-derived probes (expected values worked out in
// the comments, from the model as docs/tensor-cores.md states it and MMA-Sim's arithmetic),
// and random vectors against the independent cpp_int reference tests/oracle/tc_reference_scaled.hpp.
// BF16EMU_TC_SCALED_VECTORS sets the random count per preset (default 10^5; the `long` tier
// runs 10^6).
#include <algorithm>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include <bf16emu/parallel.hpp>
#include <bf16emu/tc.hpp>

#include "common.hpp"
#include "tc_reference_scaled.hpp"

namespace {

using namespace tctest;

// ---------------------------------------------------------------------------------------------
// Dispatch from runtime format ids to the model's templates.

std::uint64_t model(const scaled_params &p, format_id fa, format_id fb, format_id out, const std::uint64_t *a,
                    const std::uint64_t *b, int K, const std::uint8_t *sa, const std::uint8_t *sb,
                    std::uint64_t c) {
  return visit_f8f6f4(fa, [&](auto ta) {
    return visit_f8f6f4(fb, [&](auto tb) -> std::uint64_t {
      using A = decltype(ta);
      using B = decltype(tb);
      std::vector<fp<A>> va(K);
      std::vector<fp<B>> vb(K);
      for (int i = 0; i < K; ++i)
        va[i] = fp<A>::from_bits(a[i]), vb[i] = fp<B>::from_bits(b[i]);
      if (out == format_id::fp16)
        return scaled_dot<A, B, binary16>(p, va.data(), vb.data(), K, sa, sb, f16::from_bits(c)).bits;
      return scaled_dot<A, B, binary32>(p, va.data(), vb.data(), K, sa, sb, f32::from_bits(c)).bits;
    });
  });
}

tcref::sfmt sref(format_id id) {
  switch (id) {
  case format_id::fp32: return tcref::s_fp32;
  case format_id::fp16: return tcref::s_fp16;
  case format_id::e4m3: return tcref::s_e4m3;
  case format_id::e5m2: return tcref::s_e5m2;
  case format_id::e3m2: return tcref::s_e3m2;
  case format_id::e2m3: return tcref::s_e2m3;
  default: return tcref::s_e2m1;
  }
}

tcref::sparams sref(const scaled_params &p) {
  const tcref::scale_fmt s = p.scale == scale_kind::ue8m0   ? tcref::scale_fmt::ue8m0
                             : p.scale == scale_kind::ue4m3 ? tcref::scale_fmt::ue4m3
                                                            : tcref::scale_fmt::none;
  return {p.k,
          p.group,
          p.vec,
          s,
          p.F,
          p.e_zero,
          p.out_frac,
          p.rounding == out_round::nearest_even,
          p.zeros == zero_exp::mmasim};
}

std::uint64_t reference(const scaled_params &p, format_id fa, format_id fb, format_id out,
                        const std::uint64_t *a, const std::uint64_t *b, int K, const std::uint8_t *sa,
                        const std::uint8_t *sb, std::uint64_t c) {
  return tcref::scaled_dot(sref(fa), sref(fb), sref(out), sref(p), a, b, K, sa, sb, c);
}

const scaled_preset &find(arch a, instr_kind i, const char *kind, scale_kind s, int vec, format_id out) {
  const scaled_preset *P = find_scaled_preset(a, i, kind, s, vec, out);
  if (!P) throw std::runtime_error(std::string("no scaled preset ") + kind);
  return *P;
}

// One block with only the listed leading k entries nonzero; the rest zero.
struct probe {
  std::vector<std::uint64_t> a, b;
  std::vector<std::uint8_t> sa, sb;
  std::uint64_t c;
};

std::uint64_t run_probe(const scaled_preset &P, format_id fa, format_id fb, const probe &pr) {
  const int k = P.params.k, ns = P.params.scales_per_block();
  std::vector<std::uint64_t> a(k, 0), b(k, 0);
  std::vector<std::uint8_t> sa(ns ? ns : 1, 0x7F), sb(ns ? ns : 1, 0x7F);
  if (P.params.scale == scale_kind::ue4m3) sa.assign(sa.size(), 0x38), sb.assign(sb.size(), 0x38);
  std::copy(pr.a.begin(), pr.a.end(), a.begin());
  std::copy(pr.b.begin(), pr.b.end(), b.begin());
  std::copy(pr.sa.begin(), pr.sa.end(), sa.begin());
  std::copy(pr.sb.begin(), pr.sb.end(), sb.begin());
  const std::uint64_t m = model(P.params, fa, fb, P.out, a.data(), b.data(), k, sa.data(), sb.data(), pr.c);
  const std::uint64_t r =
      reference(P.params, fa, fb, P.out, a.data(), b.data(), k, sa.data(), sb.data(), pr.c);
  EXPECT_EQ(hex(m), hex(r)) << "model vs reference on a probe";
  return m;
}

constexpr auto E4M3 = format_id::e4m3, E5M2 = format_id::e5m2, E3M2 = format_id::e3m2, E2M3 = format_id::e2m3,
               E2M1 = format_id::e2m1;

// ---------------------------------------------------------------------------------------------
// Hand-derived probes.

TEST(Scaled, F8f6f4Probes) {
  for (const arch ar : {arch::sm100, arch::sm120}) {
    const instr_kind in = ar == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
    const scaled_preset &P = find(ar, in, "f8f6f4", scale_kind::none, 0, format_id::fp32);
    const scaled_preset &H = find(ar, in, "f8f6f4", scale_kind::none, 0, format_id::fp16);
    // e4m3 1.0 (0x38) * e2m1 1.0 (0x2) + c, c = -2^-25 (0xb3000000): emax = 0, F = 25 keeps c
    // at the block lsb 2^-25; 1 - 2^-25 truncates to 23 bits: 0x3f7fffff. (A wide sum rounded
    // to nearest, the reading the project notes leave open, gives the tie 1 - 2^-25 -> 1.0,
    // 0x3f800000: this line settles F on hardware.)
    EXPECT_EQ(hex(run_probe(P, E4M3, E2M1, {{0x38}, {0x2}, {}, {}, 0xb3000000})), "0x3f7fffff");
    // c = -2^-26 (0xb2800000) lies below the lsb 2^-25 and truncates to 0: 1.0.
    EXPECT_EQ(hex(run_probe(P, E4M3, E2M1, {{0x38}, {0x2}, {}, {}, 0xb2800000})), "0x3f800000");
    // e2m1 6 (0x7) * 6 + (-0.5 = 0x9) * 0.5 (0x1) = 36 - 0.25 = 35.75 = 1.0001111b * 2^5:
    // 0x420f0000.
    EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x7, 0x9}, {0x7, 0x1}, {}, {}, 0})), "0x420f0000");
    // e3m2 max 28 (0x1f) * e2m3 max 7.5 (0x1f) = 210 = 1.1010010b * 2^7: 0x43520000.
    EXPECT_EQ(hex(run_probe(P, E3M2, E2M3, {{0x1f}, {0x1f}, {}, {}, 0})), "0x43520000");
    // e5m2 +Inf (0x7c) * e2m1 0: Inf * 0 is NaN, the all-ones 0x7fffffff.
    EXPECT_EQ(hex(run_probe(P, E5M2, E2M1, {{0x7c}, {0x0}, {}, {}, 0})), "0x7fffffff");
    // e5m2 -Inf (0xfc) * e4m3 2 (0x40) + 1: -Inf (0xff800000).
    EXPECT_EQ(hex(run_probe(P, E5M2, E4M3, {{0xfc}, {0x40}, {}, {}, 0x3f800000})), "0xff800000");
    // f16 accumulation: 1 * 1 + 2^-11 (0x1000) is the tie between 1 and 1 + 2^-10: RNE keeps 1.0
    // (0x3c00); + 1.5 * 2^-11 (0x1200) is past the tie: 1 + 2^-10 (0x3c01).
    EXPECT_EQ(hex(run_probe(H, E4M3, E2M1, {{0x38}, {0x2}, {}, {}, 0x1000})), "0x3c00");
    EXPECT_EQ(hex(run_probe(H, E4M3, E2M1, {{0x38}, {0x2}, {}, {}, 0x1200})), "0x3c01");
    // e4m3 max 448 (0x7e) * e5m2 max 57344 (0x7b) = 25690112 > 65504: f16 Inf 0x7c00.
    EXPECT_EQ(hex(run_probe(H, E4M3, E5M2, {{0x7e}, {0x7b}, {}, {}, 0})), "0x7c00");
  }
}

TEST(Scaled, Mxf8f6f4Probes) {
  for (const arch ar : {arch::sm100, arch::sm120}) {
    const instr_kind in = ar == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
    const scaled_preset &P = find(ar, in, "mxf8f6f4", scale_kind::ue8m0, 32, format_id::fp32);
    // 1 * 1 with scales 2^3 (0x82) and 2^-1 (0x7e): 4.0 = 0x40800000.
    EXPECT_EQ(hex(run_probe(P, E4M3, E4M3, {{0x38}, {0x38}, {0x82}, {0x7e}, 0})), "0x40800000");
    // A NaN scale (0xff) makes the block NaN even with every A zero: 0x7fffffff.
    EXPECT_EQ(hex(run_probe(P, E4M3, E4M3, {{0x0}, {0x38}, {0xff}, {0x7f}, 0x3f800000})), "0x7fffffff");
    // Scales 2^20 each (0x93): the product is 2^40, emax 40, lsb 2^15; c = -2^14 (0xc6800000)
    // truncates to 0, so d = 2^40 = 0x53800000 (an exact sum would give 2^40 - 2^16 after RZ,
    // 0x537fffff).
    EXPECT_EQ(hex(run_probe(P, E4M3, E2M1, {{0x38}, {0x2}, {0x93}, {0x93}, 0xc6800000})), "0x53800000");
    // The smallest scales 2^-127 (0x00) each: 1 * 1 * 2^-254 is far below e_zero = -133 only
    // if a zero term exists; the other 31 products are zero, so emax = -133, lsb 2^-158, and the
    // product (2^-254) truncates to 0: +0.
    EXPECT_EQ(hex(run_probe(P, E4M3, E4M3, {{0x38}, {0x38}, {0x00}, {0x00}, 0})), "0x0");
    // F = 25 below a scaled product: 1 * 1, scales 1, c = -2^-25: 0x3f7fffff.
    EXPECT_EQ(hex(run_probe(P, E2M3, E3M2, {{0x08}, {0x0c}, {0x7f}, {0x7f}, 0xb3000000})), "0x3f7fffff");
  }
}

TEST(Scaled, Mxf4Probes) {
  for (const arch ar : {arch::sm100, arch::sm120}) {
    const instr_kind in = ar == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
    for (const int vec : {32, 16}) {
      const char *kind = vec == 32 ? "mxf4" : "mxf4nvf4";
      const scaled_preset &P = find(ar, in, kind, scale_kind::ue8m0, vec, format_id::fp32);
      // 6 * 6 (0x7), unit scales: 36 = 1.001b * 2^5 = 0x42100000.
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x7}, {0x7}, {}, {}, 0})), "0x42100000");
      // F = 35: 1 * 1 (0x2) + c; the group exponent is 0, lsb 2^-35. c = -2^-35 (0xae000000)
      // is kept: 1 - 2^-35 truncates to 0x3f7fffff; c = -2^-36 (0xad800000) is cut: 1.0.
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, {}, 0xae000000})), "0x3f7fffff");
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, {}, 0xad800000})), "0x3f800000");
      // Alignment by scale exponents: products 0..15 hold 1 * 1 at scale 1; the second scale
      // block's A scale is 2^60 (0xbb) and its products are all zero. Its exponent 60 is emax
      // (the sum's zero value does not enter), lsb 2^25, and 1 truncates to 0: d = +0.
      std::vector<std::uint8_t> sa(64 / vec, 0x7f);
      sa[1] = 0xbb;
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, sa, {}, 0})), "0x0");
      // A NaN scale in the last scale block: NaN.
      std::vector<std::uint8_t> sn(64 / vec, 0x7f);
      sn.back() = 0xff;
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, sn, 0})), "0x7fffffff");
      // Inf c with finite products: Inf (0x7f800000).
      EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, {}, 0x7f800000})), "0x7f800000");
    }
    const scaled_preset &N = find(ar, in, "mxf4nvf4", scale_kind::ue4m3, 16, format_id::fp32);
    // ue4m3 scales: 0xb8 reads as 1.0 (the sign bit is ignored), 0x40 = 2^1: 1 * 1 * 2 = 2.0.
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x2}, {0x2}, {0xb8}, {0x40}, 0})), "0x40000000");
    // A subnormal ue4m3 scale 0x01 = 2^-9: 6 * 6 * 2^-9 = 1.001b * 2^-4 = 0x3d900000.
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x7}, {0x7}, {0x01}, {0x38}, 0})), "0x3d900000");
    // ue4m3 scale 1.5 (0x3c) * 1.25 (0x3a): 6 * 6 * 1.875 = 67.5 = 1.0000111b * 2^6 = 0x42870000.
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x7}, {0x7}, {0x3c}, {0x3a}, 0})), "0x42870000");
    // ue4m3 NaN: 0x7f and 0xff (sign ignored) both make the block NaN.
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x2}, {0x2}, {0xff}, {}, 0})), "0x7fffffff");
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x2}, {0x2}, {}, {0x38, 0x7f}, 0})), "0x7fffffff");
    // A zero ue4m3 scale zeroes its group: 1 * 1 * 0 + c(1.0) = 1.0. The group's exponent is
    // emin(e4m3) - 0 + 0 = -6 < 0, so c is not cut.
    EXPECT_EQ(hex(run_probe(N, E2M1, E2M1, {{0x2}, {0x2}, {0x00}, {}, 0x3f800000})), "0x3f800000");
  }
}

// sm120 mma.sync kind::mxf4nvf4 with UE4M3 factors on 32-element blocks (issue 33; MMA-Sim
// nv_mma.py m16n8k64.block32 ue4m3): two factors per k64 block, each over two runs of 16.
TEST(Scaled, Nvf4Ue4m3Block32Probes) {
  const scaled_preset &P =
      find(arch::sm120, instr_kind::mma, "mxf4nvf4", scale_kind::ue4m3, 32, format_id::fp32);
  EXPECT_EQ(P.params.vec, 32);
  EXPECT_EQ(P.params.scales_per_block(), 2);
  // The default vec for ue4m3 stays 16 (the older row is found first).
  EXPECT_EQ(find(arch::sm120, instr_kind::mma, "mxf4nvf4", scale_kind::ue4m3, 0, format_id::fp32).params.vec,
            16);
  // Which factor scales which k: 1 * 1 (0x2) at k 0, 16 and 32, A factors 2 (0x40) and 4 (0x48),
  // B factors 1 (0x38): k 0 and 16 share factor 0, k 32 takes factor 1: 2 + 2 + 4 = 8 = 0x41000000
  // (16-element blocks would give 2 + 4 + 1 = 7).
  std::vector<std::uint64_t> a(64, 0), b(64, 0);
  a[0] = a[16] = a[32] = b[0] = b[16] = b[32] = 0x2;
  EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {a, b, {0x40, 0x48}, {0x38, 0x38}, 0})), "0x41000000");
  // 6 * 6 with factors 1.5 (0x3c) and 1.25 (0x3a): 67.5 = 0x42870000; the sign bit of a factor
  // is ignored (0xbc = 1.5).
  EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x7}, {0x7}, {0xbc}, {0x3a}, 0})), "0x42870000");
  // F = 35: 1 * 1 + c, c = -2^-35 kept (0x3f7fffff), -2^-36 cut (1.0).
  EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, {}, 0xae000000})), "0x3f7fffff");
  EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {}, {}, 0xad800000})), "0x3f800000");
  // A NaN factor (0x7f) in the second half: NaN.
  EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{0x2}, {0x2}, {0x38, 0x7f}, {}, 0})), "0x7fffffff");
}

// The exponent of a zero UE4M3 factor (scaled_params::zeros): -6 by default (the e4m3 emin),
// -126 under zero_exp::mmasim (MMA-Sim, extract_significand_exponent of a zero). Runs of zero
// products: factor 0 (A) x 2^8 (B, 0x78) on the first runs, 2^-9 x 2^-9 (0x01, exponent -6 each)
// on the rest; c = 2^-30 + 2^-40 (0x30802000). e_zero: emax = -6 + 8 = 2, lsb 2^-33, c loses
// 2^-40: 0x30800000. mmasim: the zero factor's runs have -126 + 8, emax = -12 (the other runs),
// lsb 2^-47, c is kept: 0x30802000. The line that settles it on a GPU (docs/tensor-cores.md).
TEST(Scaled, ZeroScaleFactorExponent) {
  for (const arch ar : {arch::sm100, arch::sm120})
    for (const int vec : {16, 32}) {
      const instr_kind in = ar == arch::sm100 ? instr_kind::tcgen05 : instr_kind::mma;
      const scaled_preset *Q =
          find_scaled_preset(ar, in, "mxf4nvf4", scale_kind::ue4m3, vec, format_id::fp32);
      if (!Q) continue; // tcgen05 has no 32-element UE4M3 blocks
      const int ns = 64 / vec;
      std::vector<std::uint8_t> sa(ns, 0x01), sb(ns, 0x01);
      sa[0] = 0x00, sb[0] = 0x78;
      for (const zero_exp z : {zero_exp::e_zero, zero_exp::mmasim}) {
        scaled_preset P = *Q;
        P.params.zeros = z;
        EXPECT_EQ(hex(run_probe(P, E2M1, E2M1, {{}, {}, sa, sb, 0x30802000})),
                  z == zero_exp::e_zero ? "0x30800000" : "0x30802000")
            << Q->ptx << " " << to_string(z);
      }
    }
}

// tcgen05.mma kind::f16 with f16 accumulation (presets.hpp, block model: one block of 16,
// F = 25, RNE to 10 fraction bits).
TEST(Scaled, Tcgen05F16AccumulationProbes) {
  const preset *P = find_preset(arch::sm100, instr_kind::tcgen05, format_id::fp16, format_id::fp16);
  ASSERT_NE(P, nullptr);
  EXPECT_EQ(P->k, 16);
  EXPECT_EQ(P->block.L, 16);
  std::uint64_t a[16] = {0x3c00}, b[16] = {0x3c00};
  // 1 + 2^-11 (0x1000): the tie rounds to even, 1.0; 1 + 1.5 * 2^-11 (0x1200): 1 + 2^-10.
  EXPECT_EQ(hex(model_dot(*P, a, b, 16, 0x1000)), "0x3c00");
  EXPECT_EQ(hex(model_dot(*P, a, b, 16, 0x1200)), "0x3c01");
  // 1 - 2^-24 (c = 0x8001) is exact at F = 25 and rounds to nearest in f16: 1.0.
  EXPECT_EQ(hex(model_dot(*P, a, b, 16, 0x8001)), "0x3c00");
  // 256 * 256 = 65536 > 65504 rounds past the largest f16: +Inf 0x7c00.
  a[0] = b[0] = 0x5c00;
  EXPECT_EQ(hex(model_dot(*P, a, b, 16, 0)), "0x7c00");
  // Products at index 0 and 15 share one block: 2^-12 (0x0c00 * 0x3c00... = 2^-12) + 1 (at k 15)
  // + 2^-12 = 1 + 2^-11 exactly, a tie in f16: 1.0. (Two chained blocks would give the same here;
  // the block size shows in the reference comparison below.)
  a[0] = 0x0c00, b[0] = 0x3c00, a[15] = 0x3c00, b[15] = 0x3c00;
  EXPECT_EQ(hex(model_dot(*P, a, b, 16, 0x0c00)), "0x3c00");
  EXPECT_EQ(hex(ref_dot(*P, a, b, 16, 0x0c00)), "0x3c00");
}

// With unit scales and one format, the scaled model is the block model (block.hpp) with the
// same parameters: cross-check e4m3 and e5m2 (both models on the same random vectors).
TEST(Scaled, UnscaledMatchesBlockModel) {
  gen g(7);
  const scaled_params sp =
      find(arch::sm100, instr_kind::tcgen05, "f8f6f4", scale_kind::none, 0, format_id::fp32).params;
  const block_params bp{32, sp.F, sp.e_zero, sp.out_frac, sp.rounding};
  long bad = 0;
  for (int it = 0; it < 20000; ++it) {
    const format_id f = it % 2 ? E4M3 : E5M2;
    std::uint64_t a[32], b[32];
    for (int i = 0; i < 32; ++i)
      a[i] = g.bits(8), b[i] = g.bits(8);
    const std::uint64_t c = g.coin(4) ? 0 : g.bits(32);
    const std::uint64_t m = model(sp, f, f, format_id::fp32, a, b, 32, nullptr, nullptr, c);
    const std::uint64_t r = model_dot(f, format_id::fp32, bp, 32, a, b, 32, c);
    bad += m != r;
  }
  EXPECT_EQ(bad, 0);
}

TEST(Scaled, PresetTable) {
  for (const scaled_preset &P : scaled_presets) {
    EXPECT_TRUE(P.params.valid()) << P.ptx;
    EXPECT_NE(P.source, nullptr);
  }
  EXPECT_FALSE((scaled_params{64, 16, 0, scale_kind::none}).valid());  // grouped needs scales
  EXPECT_FALSE((scaled_params{64, 16, 8, scale_kind::ue8m0}).valid()); // vec < group
}

// ---------------------------------------------------------------------------------------------
// Random vectors against the reference.

long vectors() {
  if (const char *s = std::getenv("BF16EMU_TC_SCALED_VECTORS")) return std::max(1L, std::atol(s));
  return 100000;
}

std::uint8_t random_scale(gen &g, scale_kind s, int cls) {
  if (s == scale_kind::ue4m3) return std::uint8_t(cls == 0 ? 0x30 + g.uniform(0, 31) : g.bits(8));
  if (cls == 0) return std::uint8_t(127 + g.uniform(-6, 6));
  if (g.coin(40)) return 0xFF;
  return std::uint8_t(g.uniform(0, 254));
}

class ScaledVsReference : public ::testing::TestWithParam<int> {};

// `total` random vectors of preset P with parameters p (P's, or with other zero-term exponents)
// against the reference; prints and checks the mismatch count.
void random_vs_reference(const scaled_preset &P, const scaled_params &p, long total, std::uint64_t seed) {
  const unsigned threads = resolve_threads(0, std::uint64_t(total));
  std::vector<long> bad(threads, 0);
  std::vector<std::string> first(threads);
  parallel_for(std::uint64_t(total), 0, [&](std::uint64_t idx, unsigned w) {
    gen g(seed + idx);
    const format_id fa = P.any_f8f6f4 ? f8f6f4_formats[g.uniform(0, 4)] : E2M1;
    const format_id fb = P.any_f8f6f4 ? f8f6f4_formats[g.uniform(0, 4)] : E2M1;
    const tcref::sfmt ra = sref(fa), rb = sref(fb);
    const int cls = int(idx % 4);
    const bool scaled = p.scale != scale_kind::none;
    // Unscaled kinds: any K (zero padding); scaled ones: whole blocks (the scales cover them).
    const int K = scaled ? p.k * (g.coin(4) ? 2 : 1) : (g.coin(3) ? g.uniform(1, 2 * p.k) : p.k);
    std::vector<std::uint64_t> a(K), b(K);
    for (int i = 0; i < K; ++i) {
      a[i] = g.coin(cls == 2 ? 2 : 6) ? 0 : g.bits(1 + ra.ebits + ra.mbits);
      b[i] = g.coin(cls == 2 ? 2 : 6) ? 0 : g.bits(1 + rb.ebits + rb.mbits);
    }
    const int ns = scaled ? K / p.vec : 1;
    std::vector<std::uint8_t> sa(ns, 0x7F), sb(ns, 0x7F);
    if (scaled)
      for (int s = 0; s < ns; ++s)
        sa[s] = random_scale(g, p.scale, cls), sb[s] = random_scale(g, p.scale, cls);
    // c near the products (class 0, 2), anywhere (1), or zero (3).
    const tcref::fmt out = sref(P.out).plain();
    int near = 0;
    if (scaled)
      near = tcref::sdecode_scale(sref(p).scale, sa[0]).exp + tcref::sdecode_scale(sref(p).scale, sb[0]).exp;
    std::uint64_t c = 0;
    if (cls == 1)
      c = g.bits(out.width());
    else if (cls != 3)
      c = g.normal(out, std::clamp(near - 30, out.emin(), out.emin() + 2 * out.bias() - 1),
                   std::clamp(near + 12, out.emin(), out.emin() + 2 * out.bias() - 1));
    const std::uint64_t m = model(p, fa, fb, P.out, a.data(), b.data(), K, sa.data(), sb.data(), c);
    const std::uint64_t r = reference(p, fa, fb, P.out, a.data(), b.data(), K, sa.data(), sb.data(), c);
    if (m != r) {
      if (bad[w]++ == 0)
        first[w] = std::string("vector ") + std::to_string(idx) + " " + format_name_of(fa) + "x" +
                   format_name_of(fb) + " K=" + std::to_string(K) + " model " + hex(m) + " ref " + hex(r);
    }
  });
  long nbad = 0;
  std::string msg;
  for (unsigned w = 0; w < threads; ++w)
    nbad += bad[w], msg += first[w].empty() ? "" : first[w] + "; ";
  EXPECT_EQ(nbad, 0) << P.ptx << " (" << to_string(p.zeros) << "): " << msg;
  std::printf("[ scaled ] %s%s: %ld vectors, %ld mismatches\n", P.ptx,
              p.zeros == zero_exp::mmasim ? " (--zero-exp mmasim)" : "", total, nbad);
}

TEST_P(ScaledVsReference, Random) {
  random_vs_reference(scaled_presets[GetParam()], scaled_presets[GetParam()].params, vectors(),
                      0x5ca1ed00 + std::uint64_t(GetParam()) * 1000003);
}

// zero_exp::mmasim against the reference's own mmasim_zeros rule: 10^4 vectors per preset.
TEST_P(ScaledVsReference, RandomMmasimZeros) {
  scaled_params p = scaled_presets[GetParam()].params;
  p.zeros = zero_exp::mmasim;
  random_vs_reference(scaled_presets[GetParam()], p, 10000, 0x2e70ed00 + std::uint64_t(GetParam()) * 1000003);
}

// The comparison can fail: the reference with F - 1 disagrees with the model (F) on a vector
// whose result depends on the bit at 2^-F. fp32 out: 1 * 1 + c, c = -2^-F (F keeps c: 0x3f7fffff;
// F - 1 cuts it: 1.0). fp16 out (F = 25): e5m2 1 * e4m3 1 + e5m2 2^-16 * e4m3 2^-9 + c = 2^-11,
// i.e. 1 + 2^-11 + 2^-25, just above the f16 tie (0x3c01); F - 1 cuts 2^-25 and ties to 1.0.
TEST(Scaled, ReferenceCatchesWrongF) {
  for (const scaled_preset &P : scaled_presets) {
    const scaled_params &p = P.params;
    const int k = p.k, ns = p.scales_per_block();
    const bool h = P.out == format_id::fp16;
    std::vector<std::uint64_t> a(k, 0), b(k, 0);
    std::vector<std::uint8_t> s(ns ? ns : 1, p.scale == scale_kind::ue4m3 ? 0x38 : 0x7F);
    format_id fa = P.any_f8f6f4 ? E4M3 : E2M1, fb = fa;
    a[0] = b[0] = P.any_f8f6f4 ? 0x38 : 0x2; // 1.0
    std::uint64_t c = 0x80000000u | (std::uint64_t(127 - p.F) << 23);
    if (h) {
      fa = E5M2, a[0] = 0x3c, a[1] = 0x01, b[1] = 0x01, c = 0x1000;
      EXPECT_EQ(p.F, 25);
    }
    scaled_params wrong = p;
    wrong.F = p.F - 1;
    const std::uint64_t m = model(p, fa, fb, P.out, a.data(), b.data(), k, s.data(), s.data(), c);
    const std::uint64_t r = reference(p, fa, fb, P.out, a.data(), b.data(), k, s.data(), s.data(), c);
    const std::uint64_t w = reference(wrong, fa, fb, P.out, a.data(), b.data(), k, s.data(), s.data(), c);
    EXPECT_EQ(hex(m), h ? "0x3c01" : "0x3f7fffff") << P.ptx;
    EXPECT_EQ(hex(r), hex(m)) << P.ptx;
    EXPECT_EQ(hex(w), h ? "0x3c00" : "0x3f800000") << P.ptx;
  }
}

INSTANTIATE_TEST_SUITE_P(AllScaledPresets, ScaledVsReference, ::testing::Range(0, scaled_preset_count),
                         [](const ::testing::TestParamInfo<int> &info) {
                           const scaled_preset &P = scaled_presets[info.param];
                           std::string s = std::string(to_string(P.arch)) + "_" + P.kind + "_" +
                                           to_string(P.params.scale) + "_v" + std::to_string(P.params.vec) +
                                           "_" + format_name_of(P.out);
                           return s;
                         });

} // namespace
