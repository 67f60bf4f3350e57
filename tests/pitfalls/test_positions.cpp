// Position ids, RoPE and ALiBi in BF16/FP16 (include/bf16emu/pitfalls/positions.hpp).
// Every expected number is derived by hand in the comment above it.
#include <cmath>

#include <gtest/gtest.h>

#include "bf16emu/pitfalls/positions.hpp"

namespace pit = bf16emu::pitfalls;
using pit::id_dtype;

// BF16 has 8 significant bits: every integer up to 2^8 = 256 is exact; in [256, 512) the
// spacing is 2, in [512, 1024) 4, ... in [4096, 8192) 32.
TEST(Positions, Bf16ExactUpTo256) {
  const pit::id_stats s = pit::position_stats(id_dtype::bf16, 257); // ids 0..256
  EXPECT_EQ(s.exact, 257);
  EXPECT_EQ(s.distinct, 257);
  EXPECT_EQ(s.longest_run, 1);
  EXPECT_EQ(s.first_collision, -1);
  EXPECT_EQ(s.max_abs_error, 0.0);
}

// id 257 = 1.00000001b * 2^8 lies halfway between 256 (significand 1.0000000, even) and 258
// (1.0000001, odd): RNE gives 256, so 257 is the first id sharing a value (with 256).
TEST(Positions, Bf16FirstCollisionIs257) {
  const pit::id_stats s = pit::position_stats(id_dtype::bf16, 258);
  EXPECT_EQ(s.exact, 257);
  EXPECT_EQ(s.distinct, 257);
  EXPECT_EQ(s.longest_run, 2);
  EXPECT_EQ(s.longest_run_value, 256.0);
  EXPECT_EQ(s.first_collision, 257);
  EXPECT_EQ(s.max_abs_error, 1.0);
  EXPECT_EQ(pit::arange_value(id_dtype::bf16, 257), 256.0);
  EXPECT_EQ(pit::arange_value(id_dtype::bf16, 259), 260.0); // tie 258 (odd) / 260 (even)
}

// n = 8192: exact ids are 0..255 (256) and the 128 representable integers of each binade
// [256,512), [512,1024), [1024,2048), [2048,4096), [4096,8192): 256 + 5*128 = 896, i.e.
// 896/8192 = 10.9375 % ("about 10%"). Distinct values: those 896 plus 8192 (ids 8176..8191
// round up: 8176 is a tie between 8160 = 255*32 (odd) and 8192) = 897. Longest run: in
// [4096, 8192) a value v = 32k with k even takes the ids v-16 .. v+16 (both ties): 33 ids;
// the first such v above 4096 is 4160 (k = 130; v = 4096 itself gets only 4088..4112, 25
// ids, because the spacing below 4096 is 16), so the run starts at id 4144. Max |error| = 16.
TEST(Positions, Bf16At8192AboutTenPercent) {
  const pit::id_stats s = pit::position_stats(id_dtype::bf16, 8192);
  EXPECT_EQ(s.exact, 896);
  EXPECT_DOUBLE_EQ(s.exact_share(), 0.109375);
  EXPECT_EQ(s.distinct, 897);
  EXPECT_EQ(s.longest_run, 33);
  EXPECT_EQ(s.longest_run_value, 4160.0);
  EXPECT_EQ(s.longest_run_first, 4144);
  EXPECT_EQ(s.first_collision, 257);
  EXPECT_EQ(s.max_abs_error, 16.0);
  EXPECT_EQ(s.non_finite, 0);
}

// FP16: 11 significant bits, integers exact up to 2048; [2048, 4096) has spacing 2 (1024
// exact): 2048 + 1024 = 3072 of 4096. 2049 ties to 2048 (even). From 65520 = 65504 + 16
// (half an ulp above the largest finite, 65504) RNE overflows to +inf: ids 65520..65535.
TEST(Positions, Fp16) {
  const pit::id_stats s = pit::position_stats(id_dtype::f16, 4096);
  EXPECT_EQ(s.exact, 3072);
  EXPECT_EQ(s.first_collision, 2049);
  const pit::id_stats big = pit::position_stats(id_dtype::f16, 65536);
  EXPECT_EQ(big.non_finite, 16);
  EXPECT_TRUE(std::isinf(pit::arange_value(id_dtype::f16, 65520)));
  EXPECT_EQ(pit::arange_value(id_dtype::f16, 65519), 65504.0);
}

// The curve counts cumulatively: same numbers as above.
TEST(Positions, ShareCurve) {
  const auto c = pit::exact_share_curve(id_dtype::bf16, {256, 258, 8192});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].exact, 256);
  EXPECT_EQ(c[1].exact, 257);
  EXPECT_EQ(c[2].exact, 896);
}

// arange with a start and a fractional step: value = RN16(RN32(start + RN32(step*i))).
// start 0.5, step 0.25, i = 3: 0.5 + 0.75 = 1.25 (exact everywhere).
// start 300, step 1, i = 1: 301 -> BF16 tie between 300 (1.0010110b*2^8, even) and 302 (odd): 300.
TEST(Positions, ArangeStartStep) {
  EXPECT_EQ(pit::arange_value(id_dtype::bf16, 3, 0.5, 0.25), 1.25);
  EXPECT_EQ(pit::arange_value(id_dtype::bf16, 1, 300, 1), 300.0);
}

// head_dim 2: one frequency, inv_freq = base^0 = 1 (exact). theta = p. With BF16 ids the
// worst phase error below 258 is at p = 257 (held as 256): exactly 1 rad. With FP32 ids theta
// is exact (p < 2^24), so the phase error is 0 and cos/sin are only rounded once to FP32:
// error <= half an ulp of values in [0.5, 1) = 2^-25 (plus the binary64 reference's ~1e-16).
TEST(Rope, PhaseErrorOfBf16Ids) {
  const pit::rope_report r = pit::rope_errors(id_dtype::bf16, 258, 2, 10000.0);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].inv_freq, 1.0);
  EXPECT_EQ(r.rows[0].phase_lowp, 1.0);
  EXPECT_EQ(r.rows[0].worst_pos_lowp, 257);
  EXPECT_EQ(r.rows[0].phase_f32, 0.0);
  EXPECT_LE(r.rows[0].cos_f32, 0x1p-25 + 1e-15);
  EXPECT_LE(r.rows[0].sin_f32, 0x1p-25 + 1e-15);
  // cos(256) vs cos(257) differ by far more than rounding
  EXPECT_GT(r.rows[0].cos_lowp, 0.1);
  // at 8192 positions the worst id error is 16 (see Bf16At8192AboutTenPercent): 16 rad
  const pit::rope_report r2 = pit::rope_errors(id_dtype::bf16, 8192, 2, 10000.0);
  EXPECT_EQ(r2.rows[0].phase_lowp, 16.0);
}

// head_dim 4, base 10000: inv_freq[1] = 10000^(-2/4) = 0.01. Held in BF16 (inv_freq_bf16):
// 0.01 = 1.0100011110101110...b * 2^-7 -> 7 fraction bits 1.0100100b (the dropped part
// 0.11101... > half rounds up: 1.0100011|1101 -> 1.0100100) = 1.28125 * 2^-7 = 0.010009765625.
TEST(Rope, InvFreqHeldInBf16) {
  const pit::rope_report r = pit::rope_errors(id_dtype::bf16, 16, 4, 10000.0, true);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rows[1].inv_freq, 0.01);
  EXPECT_EQ(r.rows[1].inv_freq_used, 0.010009765625);
}

// Press et al. slopes: H = 8 -> 2^-1 .. 2^-8; H = 12 -> the 8 of H = 8, then every other slope
// of H = 16 (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5).
TEST(Alibi, Slopes) {
  const auto s8 = pit::alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  EXPECT_EQ(s8[0], 0.5);
  EXPECT_EQ(s8[7], 0x1p-8);
  const auto s12 = pit::alibi_slopes(12);
  ASSERT_EQ(s12.size(), 12u);
  EXPECT_DOUBLE_EQ(s12[8], std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(s12[11], std::exp2(-3.5));
}

// Head 0 of 8 (slope 1/2, exact in BF16), n = 258: distances 0..255 and 256 are exact and
// 0.5*dist is exact (<= 8 significant bits); distance 257 is held as 256: bias -128 instead
// of -128.5, error 0.5. Distances 256 and 257 collide (first: 257); 257 distinct values.
// Causal entries: n(n+1)/2 = 258*259/2 = 33411; distance 256 has 2 entries, 257 has 1:
// colliding share 3/33411; RMS = sqrt(0.5^2 * 1 / 33411).
TEST(Alibi, Bf16BiasCollisions) {
  const pit::alibi_report r = pit::alibi_errors(id_dtype::bf16, 258, 8);
  const pit::alibi_head &h = r.rows[0];
  EXPECT_EQ(h.slope_used, 0.5);
  EXPECT_EQ(h.max_abs_error, 0.5);
  EXPECT_EQ(h.distinct, 257);
  EXPECT_EQ(h.colliding_distances, 2);
  EXPECT_EQ(h.first_collision, 257);
  EXPECT_DOUBLE_EQ(h.colliding_entries, 3.0 / 33411.0);
  EXPECT_DOUBLE_EQ(h.rms_error, std::sqrt(0.25 / 33411.0));
}

// Slope 2^-0.5 = 0.70710678... = 1.0110101000001...b * 2^-1: 7 fraction bits 1.0110101, the
// dropped part 0.000001... < half: 1.4140625 / 2 = 0.70703125.
TEST(Alibi, NonPowerOfTwoSlopeInBf16) {
  const pit::alibi_report r = pit::alibi_errors(id_dtype::bf16, 4, 12);
  EXPECT_EQ(r.rows[8].slope_used, 0.70703125);
  // distances 1, 2: 0.70703125 and 1.4140625 (exact products). Distance 3: 3 * 181/256 = 543/256,
  // 543 = 1000011111b has 10 significant bits -> 8 bits: 10000111|11 rounds up to 544:
  // bias -2.125 against -3/sqrt(2) = -2.1213203...: the largest error, 2.125 - 3/sqrt(2).
  EXPECT_NEAR(r.rows[8].max_abs_error, 2.125 - 3 * std::exp2(-0.5), 1e-15);
}
