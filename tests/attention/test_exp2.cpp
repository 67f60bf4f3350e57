// exp2_poly: special values, exact powers of two, accuracy against binary64 libm exp2, and
// bit equality of the soft-float (CPU twin) and native FP32 instantiations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "bf16emu/attention.hpp"

namespace at = bf16emu::attention;
using bf16emu::f32;

namespace {
std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float soft(float x) {
  at::soft_f32_backend b;
  return bf16emu::to_float(at::exp2_poly(b, bf16emu::from_float(x)));
}
} // namespace

TEST(Exp2Poly, IntegersAreExactPowersOfTwo) {
  // r = 0: the polynomial is c0 = 1 exactly, the scaling is exact for normal results, and
  // 2^-149 is the smallest subnormal.
  for (int n = -149; n <= 127; ++n)
    EXPECT_EQ(soft(float(n)), std::ldexp(1.0f, n)) << n;
}

TEST(Exp2Poly, Specials) {
  EXPECT_EQ(bits(soft(0.0f)), 0x3f800000u);
  EXPECT_EQ(bits(soft(-0.0f)), 0x3f800000u);
  EXPECT_EQ(bits(soft(128.0f)), 0x7f800000u); // 2^128 overflows
  EXPECT_EQ(bits(soft(INFINITY)), 0x7f800000u);
  EXPECT_EQ(bits(soft(-INFINITY)), 0u);
  EXPECT_EQ(bits(soft(-150.0f)), 0u); // 2^-150 is half the smallest subnormal: tie to even (0)
  EXPECT_EQ(bits(soft(-151.0f)), 0u);
  EXPECT_TRUE(std::isnan(soft(NAN)));
  // just below 128: finite, close to 2^128
  EXPECT_TRUE(std::isfinite(soft(127.99f)));
}

TEST(Exp2Poly, AccurateToAFewUlp) {
  // against binary64 exp2 (libm), normal results: the contract says a few ulp; allow 2.
  double worst = 0;
  for (float x = -125.9f; x < 127.9f; x += 0.0137f) {
    const double e = std::exp2(double(x));
    const double ulp = std::ldexp(1.0, std::ilogb(e) - 23);
    worst = std::max(worst, std::fabs(double(soft(x)) - e) / ulp);
  }
  EXPECT_LT(worst, 2.0);
  // the small arguments that decide P-bar = 1: exp2(x) for -2^-9 < x < 0 is within 1 ulp
  for (int k = 1; k < 400; ++k) {
    const float x = -std::ldexp(float(k), -18);
    const double e = std::exp2(double(x));
    EXPECT_LE(std::fabs(double(soft(x)) - e), std::ldexp(1.0, -24)) << x;
  }
}

TEST(Exp2Poly, SoftFloatTwinEqualsNativeFp32) {
  // The CPU twin (core soft-float) and the native IEEE instantiation must agree bit for bit:
  // the property the CUDA kernel relies on. (Native host FP32 here is SSE, no contraction:
  // the template calls __builtin_fmaf for fma explicitly.)
  at::native_f32_backend nb;
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float x;
    const std::uint32_t u =
        (state & 0x807fffffu) | ((120u + (state >> 23) % 16u) << 23); // |x| in [2^-7, 2^8)
    std::memcpy(&x, &u, 4);
    if (x > 127 || x < -149) continue;
    const float n = at::exp2_poly(nb, x);
    ASSERT_EQ(bits(n), bits(soft(x))) << x;
  }
}

TEST(Exp2Poly, Exp2ArgFusedVsUnfused) {
  // s*c - mc with s = 3, c = 1 + 2^-23, mc = 3: fused gives 3*2^-23 exactly; unfused rounds
  // s*c = 3 + 3*2^-23 to the FP32 grid at 3 (ulp 2^-22): 3 + 2^-22*round(1.5)=3+2^-21 (tie to even
  // of 3*2^-23 / 2^-22 = 1.5 -> 2), so the difference is 2^-21.
  at::soft_f32_backend b;
  const f32 s = bf16emu::from_float(3.0f), c = f32::from_bits(0x3f800001u), mc = bf16emu::from_float(3.0f);
  EXPECT_EQ(bf16emu::to_float(at::exp2_arg(b, s, c, mc, true)), std::ldexp(3.0f, -23));
  EXPECT_EQ(bf16emu::to_float(at::exp2_arg(b, s, c, mc, false)), std::ldexp(1.0f, -21));
}
