// AMD CDNA MFMA models (include/bf16emu/tc/amd.hpp, docs/tensor-cores.md "AMD CDNA matrix cores").
//
// 1. Hand-derived probes: every expected value is worked out in the comment above it, from the
//    operation types stated in the docs (MMA-Sim arXiv 2511.10909, mmasim/simulator/amd.py);
//    together they tell CDNA1, CDNA2 and CDNA3 and the four operation types apart.
// 2. Random vectors against the independent cpp_int reference (tests/oracle/tc_reference_amd.hpp):
//    one representative instruction per distinct model (arch x types x operation x group x
//    flush), BF16EMU_AMD_VECTORS vectors each (default 10^5; the `long` tier runs 10^6), plus
//    every instruction of the table at 2*10^3.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <bf16emu/parallel.hpp>
#include <bf16emu/tc/amd.hpp>

#include "tc_reference_amd.hpp"

namespace {

using namespace bf16emu::tc;

const amd_preset &instr(amd_arch a, const char *name) {
  const amd_preset *p = find_amd_preset(a, name);
  if (!p) std::abort();
  return *p;
}

// D for a dot product given as short lists (the rest of the instruction's k is zero).
std::uint64_t run(const amd_preset &P, std::vector<std::uint64_t> a, std::vector<std::uint64_t> b,
                  std::uint64_t c) {
  a.resize(std::size_t(P.k), 0), b.resize(std::size_t(P.k), 0);
  return amd_dot(P, a.data(), b.data(), P.k, c);
}

constexpr amd_arch C1 = amd_arch::cdna1, C2 = amd_arch::cdna2, C3 = amd_arch::cdna3;

// ---------------------------------------------------------------------------------------------
// Names and the table.

TEST(AmdArch, NamesParse) {
  const std::pair<const char *, amd_arch> names[] = {{"cdna1", C1}, {"mi100", C1}, {"gfx908", C1},
                                                     {"cdna2", C2}, {"mi200", C2}, {"gfx90a", C2},
                                                     {"cdna3", C3}, {"mi300", C3}, {"gfx942", C3}};
  for (const auto &[n, want] : names) {
    amd_arch got = C1;
    EXPECT_TRUE(parse_amd_arch(n, got)) << n;
    EXPECT_EQ(got, want) << n;
  }
  amd_arch x = C2;
  EXPECT_FALSE(parse_amd_arch("cdna4", x));
  EXPECT_FALSE(parse_amd_arch("CDNA3", x));
  EXPECT_FALSE(parse_amd_arch("sm90", x));
  EXPECT_EQ(x, C2);
}

TEST(AmdArch, TableIsConsistent) {
  int per_arch[3] = {};
  for (const amd_preset &p : amd_presets) {
    ++per_arch[int(p.arch)];
    EXPECT_EQ(p.k % p.group, 0) << p.name;
    EXPECT_EQ(find_amd_preset(p.arch, p.name), &p) << p.name;
    EXPECT_EQ(find_amd_preset(p.arch, std::string_view(p.name).substr(7)), &p) << p.name; // no v_mfma_
    EXPECT_TRUE(p.group == 1 || p.group == 2 || p.group == 4 || p.group == 8 || p.group == 16) << p.name;
    EXPECT_EQ(p.flush, p.arch == C2 && p.op == amd_op::pairwise) << p.name;
  }
  // MMA-Sim isa/amd.py: 15 CDNA1 instructions; CDNA2 adds 7 to them; CDNA3 has 27.
  EXPECT_EQ(per_arch[0], 15);
  EXPECT_EQ(per_arch[1], 22);
  EXPECT_EQ(per_arch[2], 27); // f64 2, f32 5, xf32 2, f16 5, bf16 5, fp8/bf8 8
  EXPECT_EQ(find_amd_preset(C1, "v_mfma_f64_16x16x4f64"), nullptr); // MI100 has no f64 MFMA
  EXPECT_EQ(find_amd_preset(C3, "v_mfma_f32_32x32x8bf16_1k"), nullptr);
  EXPECT_EQ(find_amd_preset(C3, "v_mfma_f32_32x32x8_bf17"), nullptr);
  EXPECT_EQ(find_amd_preset(C3, "f32_32x32x8_bf16")->group, 8);   // min(8, k 8)
  EXPECT_EQ(find_amd_preset(C3, "f32_16x16x16_f16")->group, 8);   // min(8, k 16)
  EXPECT_EQ(find_amd_preset(C3, "f32_4x4x4_16b_bf16")->group, 4); // min(8, k 4)
  EXPECT_EQ(find_amd_preset(C1, "f32_32x32x4bf16")->group, 2);
  EXPECT_EQ(find_amd_preset(C2, "f32_32x32x4bf16_1k")->group, 4);
  EXPECT_EQ(find_amd_preset(C1, amd_type::bf16, amd_type::bf16)->name, std::string("v_mfma_f32_32x32x4bf16"));
  EXPECT_EQ(find_amd_preset(C2, amd_type::bf16, amd_type::bf16)->name,
            std::string("v_mfma_f32_32x32x8bf16_1k"));
  EXPECT_EQ(find_amd_preset(C3, amd_type::fp8, amd_type::bf8)->name,
            std::string("v_mfma_f32_32x32x16_fp8_bf8"));
  EXPECT_EQ(find_amd_preset(C1, amd_type::xf32, amd_type::xf32), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Probes (bit patterns: bf16 1.0 = 0x3f80, fp16 1.0 = 0x3c00, fp32 1.0 = 0x3f800000; FNUZ fp8
// and bf8 1.0 = 0x40 (biased exponent 8 << 3, 16 << 2)).

// Probe R (round-down of c): A = [1, 0...], B = [1, 0...], C = -2^-30 (0xb0800000).
//  CDNA1/CDNA2 (pairwise): group sum 1 + 0 = 1; acc = RNE(-2^-30 + 1) = 1 -> 0x3f800000.
//  CDNA3 bf16/fp16 (fused_rd): e = 0, ec = -30, E = 0; c rounded down to units 2^-24:
//    floor(-2^-30 / 2^-24) = floor(-2^-6) = -1 -> -2^-24; 1 - 2^-24 is exact in fp32 -> 0x3f7fffff.
//  CDNA3 xf32: the same fused_rd -> 0x3f7fffff.  f32 FMA chain: RNE(1 - 2^-30) = 1 -> 0x3f800000.
TEST(AmdProbes, RoundDownOfC) {
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x4bf16"), {0x3f80}, {0x3f80}, 0xb0800000), 0x3f800000u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x8bf16_1k"), {0x3f80}, {0x3f80}, 0xb0800000), 0x3f800000u);
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x8f16"), {0x3c00}, {0x3c00}, 0xb0800000), 0x3f800000u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_bf16"), {0x3f80}, {0x3f80}, 0xb0800000), 0x3f7fffffu);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_f16"), {0x3c00}, {0x3c00}, 0xb0800000), 0x3f7fffffu);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x4_xf32"), {0x3f800000}, {0x3f800000}, 0xb0800000), 0x3f7fffffu);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x2_f32"), {0x3f800000}, {0x3f800000}, 0xb0800000), 0x3f800000u);
}

// Probe D (fp8 drops a far c): CDNA3 fp8 (two-stage): A = [1], B = [1].
//  C = -2^-30: E = 0, ec = -30 < E - 25 = -25: c taken as 0 -> 1.0 = 0x3f800000 (bf16: 0x3f7fffff above).
//  C = -2^-20 (0xb5800000): ec = -20 >= -25: floor(-2^-20 / 2^-24) = -16 -> 1 - 2^-20 = 0x3f7ffff0.
TEST(AmdProbes, Fp8DropsFarC) {
  const amd_preset &P = instr(C3, "v_mfma_f32_32x32x16_fp8_fp8");
  EXPECT_EQ(run(P, {0x40}, {0x40}, 0xb0800000), 0x3f800000u);
  EXPECT_EQ(run(P, {0x40}, {0x40}, 0xb5800000), 0x3f7ffff0u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_16x16x32_bf8_fp8"), {0x40}, {0x40}, 0xb0800000), 0x3f800000u);
}

// Probe H (fp8 halves): bf8 x bf8, A = [1, -2^-17 (0x81: min subnormal, negative)],
// B = [1, 2^-17 (0x01)], C = 0. Products: p0 = 1 (exponent 0), p1 = -2^-34 with factor
// exponents -15 + -15 = -30 and significand 0.25 * 0.25 = 2^-4.
//  Two-stage: the odd half sums to -2^-4 at 2^-30; rounded down to 24 bits below E = 0:
//    floor(-2^-4 * 2^(24-30)) = floor(-2^-10) = -1 -> -2^-24; 1 - 2^-24 -> 0x3f7fffff.
//  With p1 moved to index 2 (same half as p0) it is truncated toward zero: trunc(-2^-10) = 0
//    -> 1.0 = 0x3f800000 (and a one-stage fused sum would give that for both orders).
TEST(AmdProbes, Fp8EvenOddHalves) {
  const amd_preset &P = instr(C3, "v_mfma_f32_32x32x16_bf8_bf8");
  EXPECT_EQ(run(P, {0x40, 0x81}, {0x40, 0x01}, 0), 0x3f7fffffu);
  EXPECT_EQ(run(P, {0x40, 0, 0x81}, {0x40, 0, 0x01}, 0), 0x3f800000u);
}

// Probe F (CDNA2 flush): bf16 A = [2^-64 (0x1f80)], B = [2^-64], C = 0: product 2^-128
// (fp32 subnormal 0x00200000).
//  CDNA1: p0 = 2^-128 exactly; + p1 (+0); acc 0 + 2^-128 -> 0x00200000.
//  CDNA2 (both bf16 instructions): p0 < 2^-126 is flushed to +0 -> 0x00000000.
//  CDNA3: e = -128, ec = -126 (zero c), E = -126: floor(2^24 * 2^(31 - 2 - 24)) units 2^-157
//    = 2^29 * 2^-157 = 2^-128 -> 0x00200000.
TEST(AmdProbes, Cdna2FlushesSubnormalProducts) {
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x4bf16"), {0x1f80}, {0x1f80}, 0), 0x00200000u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x4bf16"), {0x1f80}, {0x1f80}, 0), 0u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x8bf16_1k"), {0x1f80}, {0x1f80}, 0), 0u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_bf16"), {0x1f80}, {0x1f80}, 0), 0x00200000u);
}

// Probe C (CDNA2 flushes C): fp16, A = B = 0, C = 2^-149 (0x00000001).
//  CDNA1: acc = 2^-149 + (+0) = 2^-149 -> 0x00000001.  CDNA2: C reads as +0 -> 0.
//  CDNA3: ec = -126 (subnormal), E = -126: c = 1 unit of 2^-149 -> floor(1 * 2^(1 + 0)) = 2 units
//    of 2^-150 -> 2^-149 -> 0x00000001.
// And C = -0: CDNA1 -0 + (+0) = +0; CDNA2 +0 + +0 = +0; f32 chain fma(0, 0, -0) = +0.
TEST(AmdProbes, Cdna2FlushesC) {
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x8f16"), {}, {}, 1), 1u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x8f16"), {}, {}, 1), 0u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_f16"), {}, {}, 1), 1u);
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x8f16"), {}, {}, 0x80000000), 0u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x8f16"), {}, {}, 0x80000000), 0u);
}

// Probe G (group sizes): A = [1, 0, 1, 0], B = [1, 1, 1, 1], C = 2^24 (0x4b800000).
//  Groups of 2 (CDNA1/2 bf16): g = 1 + 0 = 1; acc = RNE(2^24 + 1) = 2^24 (tie, even); again
//    -> 2^24 = 0x4b800000.
//  Groups of 4 (fp16, bf16_1k): (1 + 0) + (1 + 0) = 2; acc = 2^24 + 2 exact -> 0x4b800001.
//  CDNA3 (fused, group 8): s = 2 at e = 0, E = 24; floor(2 * 2^7) = 256 units 2^-7 = 2 -> 0x4b800001.
TEST(AmdProbes, GroupSizes) {
  const std::vector<std::uint64_t> a16{0x3f80, 0, 0x3f80, 0}, b16(4, 0x3f80), ah{0x3c00, 0, 0x3c00, 0},
      bh(4, 0x3c00);
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x4bf16"), a16, b16, 0x4b800000), 0x4b800000u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x4bf16"), a16, b16, 0x4b800000), 0x4b800000u);
  EXPECT_EQ(run(instr(C2, "v_mfma_f32_32x32x4bf16_1k"), a16, b16, 0x4b800000), 0x4b800001u);
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x4f16"), ah, bh, 0x4b800000), 0x4b800001u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_bf16"), a16, b16, 0x4b800000), 0x4b800001u);
  // The f32 FMA chain adds one product at a time: like groups of 1 -> 0x4b800000.
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_16x16x4_f32"), {0x3f800000, 0, 0x3f800000, 0},
                {0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000}, 0x4b800000),
            0x4b800000u);
}

// Probe X (xf32 truncation): A = [0x3f801fff (1 + 8191 * 2^-23)], B = [1.0], C = 0.
//  xf32: the low 13 bits are cleared: 1 * 1 = 1 -> 0x3f800000.  f32 FMA: exact -> 0x3f801fff.
TEST(AmdProbes, Xf32Truncates) {
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_16x16x8_xf32"), {0x3f801fff}, {0x3f800000}, 0), 0x3f800000u);
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_16x16x4_f32"), {0x3f801fff}, {0x3f800000}, 0), 0x3f801fffu);
}

// Probe M (one rounding per FMA): f32 A = B = [1 + 2^-12 (0x3f800800)], C = -1: the exact
// product 1 + 2^-11 + 2^-24 plus -1 is 2^-11 (1 + 2^-13): 0x3a000400 (a product rounded first to
// fp32 would tie to 1 + 2^-11 and give 0x3a000000).
// f64 A = B = [1 + 2^-27 (0x3ff0000002000000)], C = -1: 2^-26 + 2^-54 = 2^-26 (1 + 2^-28):
// exponent 997 (0x3e5), fraction 2^24 -> 0x3e50000001000000 (a product rounded first would tie to
// 1 + 2^-26 and give 2^-26 = 0x3e50000000000000).
TEST(AmdProbes, FmaChainRoundsOnce) {
  for (const amd_arch a : all_amd_archs)
    EXPECT_EQ(run(*find_amd_preset(a, amd_type::f32, amd_type::f32), {0x3f800800}, {0x3f800800}, 0xbf800000),
              0x3a000400u);
  for (const amd_arch a : {C2, C3})
    EXPECT_EQ(run(*find_amd_preset(a, amd_type::f64, amd_type::f64), {0x3ff0000002000000},
                  {0x3ff0000002000000}, 0xbff0000000000000),
              0x3e50000001000000u);
}

// Probe Z (zero-term exponent, open on hardware; docs): CDNA3 bf16, A = [0, 1], B = [2^127 (0x7f00),
// 2^-30 (0x3080)], C = 0. The zero factor has exponent -126, so the zero product's exponent is
// -126 + 127 = 1 = e; p1 = 2^-30 truncates to units 2^-23: trunc(2^-7) = 0 -> +0.
// (Were zero products left out of the maximum, the result would be 2^-30 = 0x30800000.)
// CDNA1 pairwise: 0 + 2^-30 = 2^-30 -> 0x30800000.
TEST(AmdProbes, ZeroTermExponent) {
  EXPECT_EQ(run(instr(C3, "v_mfma_f32_32x32x8_bf16"), {0, 0x3f80}, {0x7f00, 0x3080}, 0), 0u);
  EXPECT_EQ(run(instr(C1, "v_mfma_f32_32x32x4bf16"), {0, 0x3f80}, {0x7f00, 0x3080}, 0), 0x30800000u);
}

// Probe O (product overflow): CDNA3 bf16 A = [2^127, 2^127], B = [2, -1.5]: products 2^128 and
// -1.5 * 2^127; the first is >= 2^128 -> +Inf (0x7f800000) although the exact sum 2^126 is finite.
// With B = [2, -2] both signs overflow -> NaN (0x7fc00000).
TEST(AmdProbes, ProductOverflow) {
  const amd_preset &P = instr(C3, "v_mfma_f32_32x32x8_bf16");
  EXPECT_EQ(run(P, {0x7f00, 0x7f00}, {0x4000, 0xbfc0}, 0), 0x7f800000u);
  EXPECT_EQ(run(P, {0x7f00, 0x7f00}, {0x4000, 0xc000}, 0), 0x7fc00000u);
  // FNUZ: 0x80 is NaN; 0x7f is the largest e4m3fnuz value 240 = 1.875 * 2^7 (no Inf):
  // 240 * 240 = 57600 = 0x47610000.
  const amd_preset &Q = instr(C3, "v_mfma_f32_32x32x16_fp8_fp8");
  EXPECT_EQ(run(Q, {0x80}, {0x40}, 0), 0x7fc00000u);
  EXPECT_EQ(run(Q, {0x7f}, {0x7f}, 0), 0x47610000u);
}

// K handling: K = 0 returns C; K past k chains instructions (f32 k 2: three products, padded).
TEST(AmdProbes, ChainsAndPads) {
  const amd_preset &P = instr(C1, "v_mfma_f32_32x32x2f32");
  const std::uint64_t a[3] = {0x3f800000, 0x40000000, 0x40400000},
                      b[3] = {0x3f800000, 0x3f800000, 0x3f800000};
  EXPECT_EQ(amd_dot(P, a, b, 0, 0x12345678), 0x12345678u);
  EXPECT_EQ(amd_dot(P, a, b, 3, 0), 0x40c00000u); // 1 + 2 + 3 = 6
}

// ---------------------------------------------------------------------------------------------
// Random vectors against the reference.

amdref::layout ref_layout(amd_type t) {
  switch (t) {
  case amd_type::f64: return amdref::L64;
  case amd_type::f16: return amdref::L16;
  case amd_type::bf16: return amdref::Lbf16;
  case amd_type::fp8: return amdref::Lfp8;
  case amd_type::bf8: return amdref::Lbf8;
  default: return amdref::L32;
  }
}

amdref::instr ref_instr(const amd_preset &P) {
  const amdref::op o = P.op == amd_op::fma_chain  ? amdref::op::fma_chain
                       : P.op == amd_op::pairwise ? amdref::op::pairwise
                       : P.op == amd_op::fused_rd ? amdref::op::fused_rd
                                                  : amdref::op::fused_rd_two_stage;
  return {ref_layout(P.a), ref_layout(P.b), ref_layout(P.out), P.a == amd_type::xf32, P.k, P.group, o,
          P.flush};
}

struct rgen {
  std::mt19937_64 r;
  std::uint64_t bits(int n) { return n >= 64 ? r() : r() & ((std::uint64_t{1} << n) - 1); }
  int uni(int lo, int hi) { return lo + int(r() % std::uint64_t(hi - lo + 1)); }
  bool coin(int one_in) { return r() % std::uint64_t(one_in) == 0; }
  // A value of layout L: normal with unbiased exponent near `center`, or (rarely) anything.
  std::uint64_t value(const amdref::layout &L, int center, int spread) {
    const int width = 1 + L.ebits + L.mbits;
    const int pick = uni(0, 99);
    if (pick < 10) return bits(width);                            // any pattern
    if (pick < 14) return bits(1) << (width - 1) | bits(L.mbits); // subnormal or zero
    if (pick < 17) return 0;
    const int emaxf = (1 << L.ebits) - (L.fnuz ? 1 : 2);
    int be = center + L.bias() + uni(-spread, spread);
    be = std::clamp(be, 1, emaxf);
    return bits(1) << (width - 1) | std::uint64_t(be) << L.mbits | bits(L.mbits);
  }
};

// One random vector: the scale of A, B and C varies (around 1, near the fp32 subnormal range for
// the products, near overflow), and some vectors cancel (pairs a, -a; c near -a0*b0).
void make_vector(rgen &g, const amd_preset &P, std::vector<std::uint64_t> &a, std::vector<std::uint64_t> &b,
                 std::uint64_t &c, int &K) {
  const amdref::layout la = ref_layout(P.a), lb = ref_layout(P.b), lc = ref_layout(P.out);
  K = g.coin(4) ? g.uni(1, 2 * P.k) : P.k;
  a.assign(std::size_t(K), 0), b.assign(std::size_t(K), 0);
  const int maxe = (1 << (la.ebits - 1)) - 1;
  const int cls = g.uni(0, 5);
  int ca = 0, cb = 0, spread = std::min(maxe, 8);
  if (cls == 1) ca = cb = -maxe / 2; // products near 2^-maxe (fp32 subnormals for bf16)
  if (cls == 2) ca = cb = maxe - 2;  // near overflow
  if (cls == 3) ca = g.uni(-maxe, maxe), cb = g.uni(-maxe, maxe), spread = maxe;
  for (int i = 0; i < K; ++i)
    a[std::size_t(i)] = g.value(la, ca, spread), b[std::size_t(i)] = g.value(lb, cb, spread);
  if (cls == 4 && K >= 2) // a cancelling pair, low bits perturbed
    for (int i = 0; i + 1 < K; i += 2) {
      a[std::size_t(i + 1)] = a[std::size_t(i)] ^ (std::uint64_t{1} << (la.ebits + la.mbits)) ^ g.bits(2);
      b[std::size_t(i + 1)] = b[std::size_t(i)];
    }
  if (P.a == amd_type::xf32 && g.coin(2)) // low 13 bits set: they must be ignored
    for (int i = 0; i < K; ++i)
      a[std::size_t(i)] |= g.bits(13), b[std::size_t(i)] |= g.bits(13);
  const int cbase = cls == 1 ? -maxe : cls == 2 ? 2 * maxe - 4 : 0;
  c = g.value(lc, std::clamp(cbase + g.uni(-30, 30), -((1 << (lc.ebits - 1)) - 2), (1 << (lc.ebits - 1)) - 1),
              2);
  if (cls == 5) { // c near -a0*b0 (rounded by the reference's own rounding; only an input here)
    const amdref::num p = amdref::exact_mul(amdref::decode(la, a[0]), amdref::decode(lb, b[0]));
    if (p.c == amdref::cls::fin) {
      amdref::num q = p;
      q.neg = !q.neg;
      c = amdref::round_rne(lc, q, false) ^ g.bits(2);
    }
  }
}

long vectors(long fallback) {
  if (const char *s = std::getenv("BF16EMU_AMD_VECTORS")) return std::max(1L, std::atol(s));
  return fallback;
}

// Model vs reference on n vectors (chunks of 1000, each seeded by its index): the mismatches.
long compare(const amd_preset &P, long n, std::uint64_t seed, std::string &first) {
  const amdref::instr R = ref_instr(P);
  const long chunks = (n + 999) / 1000;
  std::vector<long> bad(std::size_t(chunks), 0);
  std::vector<std::string> what(static_cast<std::size_t>(chunks));
  bf16emu::parallel_for(std::uint64_t(chunks), 0, [&](std::uint64_t ch, unsigned) {
    rgen g{std::mt19937_64(seed * 1000003u + ch)};
    std::vector<std::uint64_t> a, b;
    std::uint64_t c = 0;
    int K = 0;
    const long end = std::min(n, long(ch + 1) * 1000);
    for (long i = long(ch) * 1000; i < end; ++i) {
      make_vector(g, P, a, b, c, K);
      const std::uint64_t dm = amd_dot(P, a.data(), b.data(), K, c);
      const std::uint64_t dr = amdref::dot(R, a.data(), b.data(), K, c);
      if (dm != dr && bad[ch]++ == 0) {
        std::string s = "K=" + std::to_string(K) + " a:";
        char buf[40];
        for (int j = 0; j < K; ++j)
          std::snprintf(buf, sizeof buf, " %llx", (unsigned long long)a[std::size_t(j)]), s += buf;
        s += " b:";
        for (int j = 0; j < K; ++j)
          std::snprintf(buf, sizeof buf, " %llx", (unsigned long long)b[std::size_t(j)]), s += buf;
        std::snprintf(buf, sizeof buf, " c: %llx", (unsigned long long)c), s += buf;
        std::snprintf(buf, sizeof buf, " model %llx", (unsigned long long)dm), s += buf;
        std::snprintf(buf, sizeof buf, " ref %llx", (unsigned long long)dr), s += buf;
        what[ch] = s;
      }
    }
  });
  long total = 0;
  for (long ch = 0; ch < chunks; ++ch) {
    total += bad[std::size_t(ch)];
    if (first.empty()) first = what[std::size_t(ch)];
  }
  return total;
}

// One representative instruction per distinct model: arch x A/B types x operation x group x flush.
std::vector<const amd_preset *> distinct_models() {
  std::vector<const amd_preset *> r;
  for (const amd_preset &p : amd_presets) {
    bool seen = false;
    for (const amd_preset *q : r)
      seen |= q->arch == p.arch && q->a == p.a && q->b == p.b && q->op == p.op && q->group == p.group &&
              q->flush == p.flush;
    if (!seen) r.push_back(&p);
  }
  return r;
}

std::string test_name(const amd_preset &p) {
  std::string s = std::string(to_string(p.arch)) + "_" + (p.name + 7);
  return s;
}

class AmdVsReference : public ::testing::TestWithParam<int> {};

TEST_P(AmdVsReference, RandomVectorsAgreeBitForBit) {
  const amd_preset &P = *distinct_models()[std::size_t(GetParam())];
  const long n = vectors(100000);
  std::string first;
  const long bad = compare(P, n, 0xa3d0u + std::uint64_t(GetParam()), first);
  EXPECT_EQ(bad, 0) << test_name(P) << ": " << bad << " of " << n << " differ; first: " << first;
  RecordProperty("vectors", std::to_string(n));
  std::printf("[ amd ] %s (%s, group %d%s): %ld vectors, %ld mismatches\n", P.name, to_string(P.op), P.group,
              P.flush ? ", flush" : "", n, bad);
}

INSTANTIATE_TEST_SUITE_P(DistinctModels, AmdVsReference, ::testing::Range(0, int(distinct_models().size())),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return test_name(*distinct_models()[std::size_t(info.param)]);
                         });

// Every instruction of the table, fewer vectors (its k, group and types as listed).
TEST(AmdVsReferenceAll, EveryInstruction) {
  for (int i = 0; i < amd_preset_count; ++i) {
    std::string first;
    EXPECT_EQ(compare(amd_presets[i], 2000, 0x5eedu + std::uint64_t(i), first), 0)
        << test_name(amd_presets[i]) << ": " << first;
  }
}

// The comparison can fail: a reference with a deliberately wrong parameter disagrees.
TEST(AmdVsReferenceAll, ReferenceDetectsWrongParameters) {
  auto differ = [](const amd_preset &P, auto mutate) {
    amdref::instr R = ref_instr(P);
    mutate(R);
    rgen g{std::mt19937_64(7)};
    std::vector<std::uint64_t> a, b;
    std::uint64_t c = 0;
    int K = 0, d = 0;
    for (int i = 0; i < 20000; ++i) {
      make_vector(g, P, a, b, c, K);
      d += amd_dot(P, a.data(), b.data(), K, c) != amdref::dot(R, a.data(), b.data(), K, c);
    }
    return d;
  };
  EXPECT_GT(differ(instr(C3, "v_mfma_f32_32x32x8_bf16"), [](amdref::instr &R) { R.group = 4; }), 0);
  EXPECT_GT(
      differ(instr(C3, "v_mfma_f32_32x32x16_fp8_fp8"), [](amdref::instr &R) { R.o = amdref::op::fused_rd; }),
      0);
  EXPECT_GT(differ(instr(C2, "v_mfma_f32_32x32x8bf16_1k"), [](amdref::instr &R) { R.flush = false; }), 0);
  EXPECT_GT(differ(instr(C1, "v_mfma_f32_32x32x4bf16"), [](amdref::instr &R) { R.group = 4; }), 0);
  EXPECT_GT(differ(instr(C3, "v_mfma_f32_32x32x4_xf32"), [](amdref::instr &R) { R.xf32 = false; }), 0);
}

} // namespace
