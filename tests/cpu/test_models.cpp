// Hand-derived cases for the CPU BF16 models (docs/cpu-bf16.md). Every expected value below is
// worked out by hand from the manuals' pseudo-code (the derivation is in the comment), never
// computed by the model. BF16 encodings used: 1 = 0x3F80, -1 = 0xBF80, 1+2^-7 = 0x3F81,
// 2^-24 = 0x3380, 2^-30 = 0x3080, 2^-63 = 0x2000, 2^-64 = 0x1F80, 2^-70 = 0x1C80,
// -2^-75 = 0x9A00, 2^-76 = 0x1980, max finite 0x7F7F (1.9921875 * 2^127), Inf 0x7F80.
#include <cstdint>

#include <gtest/gtest.h>

#include "bf16emu/cpu.hpp"

using namespace bf16emu::cpu;

namespace {

// ---------------------------------------------------------------------------------------------
// VDPBF16PS: srcdest += a_hi*b_hi (FMA), then srcdest += a_lo*b_lo (FMA); DAZ, FTZ, RNE.

TEST(Vdpbf16ps, OddPairFirst) {
  // acc 1, hi product -1, lo product 2^-24: odd first: 1 - 1 = 0, then 0 + 2^-24 = 2^-24.
  // (Even first would give 1 + 2^-24 = 1 (tie to even), then 1 - 1 = +0.)
  EXPECT_EQ(vdpbf16ps(0x3F800000u, 0x3380, 0xBF80, 0x3F80, 0x3F80), 0x33800000u);
}

TEST(Vdpbf16ps, ProductNotRoundedSeparately) {
  // acc 2^-126, hi product 2^-70 * 2^-70 = 2^-140: one FMA gives 2^-126 (1 + 2^-14) exactly,
  // fraction bit 9 -> 0x00800200. A separately rounded (and flushed) product would leave 2^-126.
  EXPECT_EQ(vdpbf16ps(0x00800000u, 0, 0x1C80, 0, 0x1C80), 0x00800200u);
}

TEST(Vdpbf16ps, DenormalInputsAreZero) {
  // 0x0001 (2^-133) * max: DAZ reads 0x0001 as +0, so the sum is +0 + +0 = +0.
  EXPECT_EQ(vdpbf16ps(0, 0x0001, 0, 0x7F7F, 0), 0x00000000u);
  // An FP32 denormal accumulator reads as -0; the products are -0: -0 + -0 = -0, twice.
  EXPECT_EQ(vdpbf16ps(0x80000001u, 0x8000, 0x8000, 0x3F80, 0x3F80), 0x80000000u);
}

TEST(Vdpbf16ps, DenormalOutputsFlush) {
  // 2^-63 * 2^-64 = 2^-127: a denormal FP32 result, flushed to +0.
  EXPECT_EQ(vdpbf16ps(0, 0, 0x2000, 0, 0x1F80), 0x00000000u);
  // 2^-126 - 2^-151: 24-bit rounding with unbounded exponent is a tie that rounds up to 2^-126,
  // so it is not tiny after rounding (x86 detects tininess after rounding): 2^-126 stays.
  EXPECT_EQ(vdpbf16ps(0x00800000u, 0, 0x9A00, 0, 0x1980), 0x00800000u);
  // 2^-126 - 2^-150 = 2^-127 (2 - 2^-23): exact at 24 bits, below 2^-126, so tiny after rounding
  // and flushed to +0 (rounded to the denormal grid it would have become 2^-126: open point).
  EXPECT_EQ(vdpbf16ps(0x00800000u, 0, 0x9A00, 0, 0x1A00), 0x00000000u);
}

TEST(Vdpbf16ps, NaNs) {
  // Inf * 0: invalid, the QNaN indefinite 0xFFC00000, which then propagates as the accumulator.
  EXPECT_EQ(vdpbf16ps(0, 0, 0x7F80, 0, 0x0000), 0xFFC00000u);
  // Inf * denormal: the denormal is read as zero, so also invalid.
  EXPECT_EQ(vdpbf16ps(0, 0x7F80, 0, 0x0001, 0), 0xFFC00000u);
  // NaN priority (SDM table): src1 low first. sNaN 0x7FA1 -> 0x7FA10000, quieted 0x7FE10000.
  EXPECT_EQ(vdpbf16ps(0x7FC00123u, 0x7FA1, 0xFFC5, 0x3F80, 0x3F80), 0x7FE10000u);
  // Only the accumulator is a NaN (signaling): it is quieted, payload kept.
  EXPECT_EQ(vdpbf16ps(0x7F800001u, 0x3F80, 0x3F80, 0x3F80, 0x3F80), 0x7FC00001u);
}

// ---------------------------------------------------------------------------------------------
// convert_fp32_to_bfloat16 (VCVTNEPS2BF16, VCVTNE2PS2BF16, AVX-NE-CONVERT VEX form).

TEST(Cvtneps2bf16, Rounding) {
  EXPECT_EQ(cvtneps2bf16(0x3F808000u), 0x3F80); // tie, LSB 0: bias 0x7FFF, no carry
  EXPECT_EQ(cvtneps2bf16(0x3F818000u), 0x3F82); // tie, LSB 1: bias 0x8000 carries
  EXPECT_EQ(cvtneps2bf16(0x3F808001u), 0x3F81); // above the tie
  EXPECT_EQ(cvtneps2bf16(0x7F7FFFFFu), 0x7F80); // carry into the exponent: Inf
  EXPECT_EQ(cvtneps2bf16(0x00800000u), 0x0080); // smallest normal kept
}

TEST(Cvtneps2bf16, SpecialsAndDenormals) {
  EXPECT_EQ(cvtneps2bf16(0x007FFFFFu), 0x0000); // denormal -> signed zero
  EXPECT_EQ(cvtneps2bf16(0x807FFFFFu), 0x8000);
  EXPECT_EQ(cvtneps2bf16(0xFF800000u), 0xFF80); // Inf: upper half
  EXPECT_EQ(cvtneps2bf16(0x7F800001u), 0x7FC0); // NaN: upper half 0x7F80, dest[6] set
  EXPECT_EQ(cvtneps2bf16(0xFF812345u), 0xFFC1);
}

TEST(Vcvtne2ps2bf16, WordSources) {
  // 128-bit form, KL = 8 words: words 0..3 from src2, 4..7 from src1.
  EXPECT_FALSE(vcvtne2ps2bf16_source(3, 8).from_src1);
  EXPECT_EQ(vcvtne2ps2bf16_source(3, 8).lane, 3);
  EXPECT_TRUE(vcvtne2ps2bf16_source(4, 8).from_src1);
  EXPECT_EQ(vcvtne2ps2bf16_source(4, 8).lane, 0);
  EXPECT_EQ(vcvtne2ps2bf16_source(31, 32).lane, 15);
}

TEST(AvxNeConvert, Loads) {
  EXPECT_EQ(ne_bf16_to_fp32(0x0001), 0x00010000u); // a denormal stays a denormal
  EXPECT_EQ(ne_bf16_to_fp32(0xFF81), 0xFF810000u);
  EXPECT_EQ(ne_fp16_to_fp32(0x0001), 0x33800000u); // 2^-24
  EXPECT_EQ(ne_fp16_to_fp32(0x3C00), 0x3F800000u);
  EXPECT_EQ(ne_fp16_to_fp32(0xFC00), 0xFF800000u);
  EXPECT_EQ(ne_fp16_to_fp32(0x7C01), 0x7F802000u); // payload moves up 13 places
}

// ---------------------------------------------------------------------------------------------
// TDPBF16PS: per pair, even element FMA first, then odd; DAZ, FTZ, RNE.

TEST(Tdpbf16ps, EvenElementFirst) {
  // acc 1, even product 2^-24, odd product -1: 1 + 2^-24 = 1 (tie to even), then 1 - 1 = +0.
  const std::uint16_t a[2] = {0x3380, 0xBF80}, b[2] = {0x3F80, 0x3F80};
  EXPECT_EQ(tdpbf16ps(0x3F800000u, a, b, 1), 0x00000000u);
}

TEST(Tdpbf16ps, PairsAccumulate) {
  const std::uint16_t a[4] = {0x3F80, 0, 0x3F80, 0}, b[4] = {0x3F80, 0, 0x3F80, 0};
  EXPECT_EQ(tdpbf16ps(0, a, b, 2), 0x40000000u); // 1 + 1
  const std::uint16_t d[2] = {0x2000, 0}, e[2] = {0x1F80, 0};
  EXPECT_EQ(tdpbf16ps(0, d, e, 1), 0x00000000u); // 2^-127 flushed
}

// ---------------------------------------------------------------------------------------------
// Arm BFDOT (BFDotAdd).

arm_fpcr ebf1() {
  arm_fpcr f;
  f.ebf = true;
  return f;
}

TEST(ArmBfdot, RoundToOddEbf0) {
  // BFAdd(1, 2^-30): round to odd gives 1 + 2^-23; adding +0 keeps it.
  EXPECT_EQ(bfdot(0, 0x3F80, 0x3080, 0x3F80, 0x3F80), 0x3F800001u);
}

TEST(ArmBfdot, UnfusedEbf0FusedEbf1) {
  // addend -1, products 1 and 2^-30. EBF=0: (1 + 2^-30) -> 1 + 2^-23 (odd), then -1: 2^-23.
  EXPECT_EQ(bfdot(0xBF800000u, 0x3F80, 0x3080, 0x3F80, 0x3F80), 0x34000000u);
  // EBF=1: FPDot rounds 1 + 2^-30 once (RNE) to 1, then -1 + 1 = +0.
  EXPECT_EQ(bfdot(0xBF800000u, 0x3F80, 0x3080, 0x3F80, 0x3F80, ebf1()), 0x00000000u);
}

TEST(ArmBfdot, Flushing) {
  // 2^-63 * 2^-64 = 2^-127: EBF=0 flushes (BFRound: exponent < -126) -> +0.
  EXPECT_EQ(bfdot(0, 0x2000, 0, 0x1F80, 0), 0x00000000u);
  // EBF=1, FZ=0: the denormal 2^-127 is kept.
  EXPECT_EQ(bfdot(0, 0x2000, 0, 0x1F80, 0, ebf1()), 0x00400000u);
  // Denormal input 0x0001 (2^-133) * 0x7F7F: EBF=0 reads it as zero: 1 + 0 = 1.
  EXPECT_EQ(bfdot(0x3F800000u, 0x0001, 0, 0x7F7F, 0), 0x3F800000u);
  // EBF=1: product 2^-6 * 1.1111111b exactly, plus 1: fraction bits 10..17 set.
  EXPECT_EQ(bfdot(0x3F800000u, 0x0001, 0, 0x7F7F, 0, ebf1()), 0x3F83FC00u);
  // EBF=1 with FZ=1: flushed again.
  arm_fpcr fz = ebf1();
  fz.fz = true;
  EXPECT_EQ(bfdot(0x3F800000u, 0x0001, 0, 0x7F7F, 0, fz), 0x3F800000u);
}

TEST(ArmBfdot, OverflowIsInfinity) {
  // max * max: BFRound overflows to +Inf (round to odd alone would saturate).
  EXPECT_EQ(bfdot(0, 0x7F7F, 0, 0x7F7F, 0), 0x7F800000u);
  // FP32 max + 0x7F7F0000: >= 2^128 -> +Inf.
  EXPECT_EQ(bfdot(0x7F7FFFFFu, 0x7F7F, 0, 0x3F80, 0), 0x7F800000u);
}

TEST(ArmBfdot, NaNsAndZeros) {
  EXPECT_EQ(bfdot(0, 0x7FA1, 0, 0x3F80, 0), 0x7FC00000u);                     // any NaN: default NaN
  EXPECT_EQ(bfdot(0xFFC00123u, 0, 0, 0, 0), 0x7FC00000u);                     // also from the addend
  EXPECT_EQ(bfdot(0, 0x7F80, 0, 0, 0), 0x7FC00000u);                          // Inf * 0
  EXPECT_EQ(bfdot(0xBF800000u, 0x3F80, 0, 0x3F80, 0), 0x00000000u);           // -1 + 1 = +0
  EXPECT_EQ(bfdot(0x80000000u, 0x8000, 0x8000, 0x3F80, 0x3F80), 0x80000000u); // -0 + -0 + -0
  EXPECT_EQ(bfdot(0xFFC00123u, 0, 0, 0, 0, ebf1()), 0x7FC00000u);             // DN forced under EBF=1
}

TEST(ArmBfmmla, TwoDotStepsInOrder) {
  // addend -1; step k=0: -1 + (1*1 + 0) = +0; step k=1: +0 + 2^-30 = 2^-30.
  const std::uint16_t a[4] = {0x3F80, 0, 0x3080, 0}, b[4] = {0x3F80, 0, 0x3F80, 0};
  EXPECT_EQ(bfmmla(0xBF800000u, a, b), 0x30800000u);
  // addend -1, pair 0 = (1, 2^-30): EBF=0 step 0 gives 2^-23 (see above); pair 1 zero: 2^-23.
  const std::uint16_t c[4] = {0x3F80, 0x3080, 0, 0}, d[4] = {0x3F80, 0x3F80, 0, 0};
  EXPECT_EQ(bfmmla(0xBF800000u, c, d), 0x34000000u);
  EXPECT_EQ(bfmmla(0xBF800000u, c, d, ebf1()), 0x00000000u);
}

TEST(ArmBfmlal, FusedIeee) {
  // -1 + (1+2^-7)^2 = 2^-6 + 2^-14 exactly: 0x3C808000.
  EXPECT_EQ(bfmlal(0xBF800000u, 0x3F81, 0x3F81), 0x3C808000u);
  // Denormals kept (FZ = 0): 2^-133 * 1 = 0x00010000.
  EXPECT_EQ(bfmlal(0, 0x0001, 0x3F80), 0x00010000u);
  // qNaN addend and Inf * 0: default NaN. A signaling NaN beats a quiet one. Else the addend.
  EXPECT_EQ(bfmlal(0x7FC00001u, 0x7F80, 0), 0x7FC00000u);
  EXPECT_EQ(bfmlal(0x7FC00001u, 0x7F81, 0x3F80), 0x7FC10000u);
  EXPECT_EQ(bfmlal(0x7FC00001u, 0x3F80, 0x3F80), 0x7FC00001u);
}

TEST(ArmBfcvt, FpcrControlled) {
  EXPECT_EQ(bfcvt(0x3F808000u), 0x3F80);
  EXPECT_EQ(bfcvt(0x3F818000u), 0x3F82);
  EXPECT_EQ(bfcvt(0x00018000u), 0x0002); // denormal 1.5 ulp: tie to even
  EXPECT_EQ(bfcvt(0x00008000u), 0x0000); // half the smallest denormal: tie to even (zero)
  EXPECT_EQ(bfcvt(0x7F800001u), 0x7FC0); // NaN quieted, payload truncated
  EXPECT_EQ(bfcvt(0xFF812345u), 0xFFC1);
  EXPECT_EQ(bfcvt(0x7F7FFFFFu), 0x7F80);
  arm_fpcr f;
  f.fz = true;
  EXPECT_EQ(bfcvt(0x00018000u, f), 0x0000);
  f = arm_fpcr{};
  f.dn = true;
  EXPECT_EQ(bfcvt(0xFF812345u, f), 0x7FC0);
  f = arm_fpcr{};
  f.rmode = bf16emu::round_mode::toward_zero;
  EXPECT_EQ(bfcvt(0x3F81FFFFu, f), 0x3F81);
  EXPECT_EQ(bfcvt(0x7F7FFFFFu, f), 0x7F7F);
}

TEST(Models, ListAndLane) {
  ASSERT_NE(find_model("avx512bf16"), nullptr);
  EXPECT_EQ(find_model("avx512bf1"), nullptr);
  EXPECT_EQ(find_model("avx512bf16x"), nullptr);
  EXPECT_TRUE(accepts_k(*find_model("amx-bf16"), 6));
  EXPECT_FALSE(accepts_k(*find_model("amx-bf16"), 3));
  EXPECT_FALSE(accepts_k(*find_model("avx512bf16"), 4));
  // Line order a[0] a[1] b[0] b[1] c: a[0] is the low (even) element.
  const std::uint16_t a[2] = {0x3380, 0xBF80}, b[2] = {0x3F80, 0x3F80};
  EXPECT_EQ(run_lane(model_id::avx512bf16, a, b, 2, 0x3F800000u), 0x33800000u);
  step_log log;
  EXPECT_EQ(run_lane(model_id::amx_bf16, a, b, 2, 0x3F800000u, log), 0x00000000u);
  // Two FMAs, but only 1 + 2^-24 reaches the rounding step: the exact cancellation 1 - 1 returns
  // a zero without rounding.
  EXPECT_EQ(log.count, 1);
}

} // namespace
