// The two oracles against each other (no core involved), and against MPFR-free hand values.
// fast_oracle (binary64 + TwoSum + round-to-odd, integer conversion) and the cpp_int oracle are
// written independently; they must agree bit for bit on a large sample.
#include <gtest/gtest.h>

#include "common.hpp"
#include "fast_oracle.hpp"

namespace {

using namespace coretest;

oracle::environment plain(int m, bool before, std::uint32_t rnd) {
  oracle::environment e;
  e.mode = static_cast<oracle::rounding>(m);
  e.tiny = before ? oracle::tininess::before_rounding : oracle::tininess::after_rounding;
  e.random = rnd;
  return e;
}

// bf16 operands biased toward interesting encodings: specials, subnormals, extremes, near-equal.
std::uint32_t pick_bf16(rng &r, std::uint32_t other) {
  switch (r.below(8)) {
  case 0: {
    static const std::uint32_t sp[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80,
                                       0xFF80, 0x7FC0, 0x7F81, 0xFFA0, 0x3F80, 0xBF80, 0x00FF, 0x0100};
    return sp[r.below(int(sizeof sp / sizeof sp[0]))];
  }
  case 1: return r.u32() & 0x80FF;                                            // subnormal or tiny normal
  case 2: return ((other ^ 0x8000) + std::uint32_t(r.below(5)) - 2) & 0xFFFF; // cancellation
  case 3: return (r.coin() ? 0x7F00u : 0xFF00u) | (r.u32() & 0xFF);           // near overflow
  default: return r.u32() & 0xFFFF;
  }
}

TEST(Oracles, FastAgreesWithExactOnBf16AddSubMul) {
  rng r(1);
  long n = 0;
  for (int i = 0; i < 60000; ++i) {
    const std::uint32_t a = pick_bf16(r, 0x3F80);
    const std::uint32_t b = pick_bf16(r, a);
    const int m = i % 7;
    const bool before = (i / 7) % 3 == 0;
    const std::uint32_t rnd = (i % 11 == 0) ? 0xFFFFFFFFu : r.u32();
    const auto e = plain(m, before, rnd);
    for (int op = 0; op < 3; ++op) {
      fast_oracle::res f;
      oracle::result x;
      if (op == 0) {
        f = fast_oracle::bf16_addsub(a, b, false, m, before, rnd);
        x = oracle::add({a, oracle::bf16}, {b, oracle::bf16}, oracle::bf16, e);
      } else if (op == 1) {
        f = fast_oracle::bf16_addsub(a, b, true, m, before, rnd);
        x = oracle::sub({a, oracle::bf16}, {b, oracle::bf16}, oracle::bf16, e);
      } else {
        f = fast_oracle::bf16_mul(a, b, m, before, rnd);
        x = oracle::mul({a, oracle::bf16}, {b, oracle::bf16}, oracle::bf16, e);
      }
      ++n;
      ASSERT_EQ(f.bits, x.bits) << "op " << op << " a=" << hex(a) << " b=" << hex(b) << " mode " << m
                                << " before " << before << " rnd " << hex(rnd);
      ASSERT_EQ(f.flags, x.flags) << "op " << op << " a=" << hex(a) << " b=" << hex(b) << " mode " << m;
    }
  }
  EXPECT_EQ(n, 180000);
}

TEST(Oracles, FastAgreesWithExactOnFp32Conversions) {
  rng r(2);
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t a = r.u32();
    if (i % 4 == 1) a &= 0x807FFFFF;                   // fp32 subnormals
    if (i % 4 == 2) a = (a & 0x83FFFFFF) | 0x38000000; // around fp16/bf16 underflow
    if (i % 4 == 3) a = (a & 0x80FFFFFF) | (i % 8 == 3 ? 0x47000000 : 0x7F000000); // overflow zone
    if (i % 16 == 5) a = (a & 0xFFFF8000) | 0x8000 | (i % 32 == 5 ? 0 : 0x1000);   // ties/halfway-ish
    const int m = i % 7;
    const bool before = (i / 7) % 2 == 0;
    const std::uint32_t rnd = r.u32();
    const auto e = plain(m, before, rnd);
    for (int t = 0; t < 2; ++t) {
      const auto f = fast_oracle::f32_convert(a, t ? fast_oracle::FP16 : fast_oracle::BF16, m, before, rnd);
      const auto x = oracle::convert({a, oracle::fp32}, t ? oracle::fp16 : oracle::bf16, e);
      ASSERT_EQ(f.bits, x.bits) << "x=" << hex(a) << " to " << (t ? "fp16" : "bf16") << " mode " << m;
      ASSERT_EQ(f.flags, x.flags) << "x=" << hex(a) << " to " << (t ? "fp16" : "bf16") << " mode " << m;
    }
  }
}

// Hand-derived values for the exact oracle itself.
TEST(Oracles, ExactOracleHandValues) {
  oracle::environment e;
  // The paper case: fp32 0xC01A0E2E + 0xC0130000 = 0xC0968717 exactly.
  auto s = oracle::add({0xC01A0E2E, oracle::fp32}, {0xC0130000, oracle::fp32}, oracle::fp32, e);
  EXPECT_EQ(s.bits, 0xC0968717u);
  EXPECT_EQ(s.flags, 0);
  // ... to bf16: 1.0010110|1|0|000011100010111 -> up: 0xC097, guard 1, round 0, sticky 1.
  auto c = oracle::convert({0xC0968717, oracle::fp32}, oracle::bf16, e);
  EXPECT_EQ(c.bits, 0xC097u);
  EXPECT_TRUE(c.guard);
  EXPECT_FALSE(c.round);
  EXPECT_TRUE(c.sticky);
  EXPECT_EQ(c.dec, oracle::decision::up);
  EXPECT_EQ(c.flags, oracle::flags::inexact);
  // Error: -4.71875 - (-4.703990459442139...) = -0.014759540557861328125 = -30953 * 2^-21.
  auto err = oracle::exact_error(oracle::op::convert, {0xC0968717, oracle::fp32}, {0, oracle::fp32},
                                 {0, oracle::fp32}, oracle::bf16, c.bits, e);
  ASSERT_TRUE(err.has_value());
  oracle::dyadic want;
  want.neg = true;
  want.mag = 30953;
  want.exp = -21;
  EXPECT_TRUE(*err == want) << oracle::to_string(*err);
  EXPECT_TRUE(oracle::dyadic_from_double(-0.014759540557861328125) == want);
  // 1/3 in fp32 nearest: 0x3EAAAAAB; toward zero 0x3EAAAAAA.
  EXPECT_EQ(oracle::div({0x3F800000, oracle::fp32}, {0x40400000, oracle::fp32}, oracle::fp32, e).bits,
            0x3EAAAAABu);
  oracle::environment z;
  z.mode = oracle::rounding::toward_zero;
  EXPECT_EQ(oracle::div({0x3F800000, oracle::fp32}, {0x40400000, oracle::fp32}, oracle::fp32, z).bits,
            0x3EAAAAAAu);
  // sqrt(2) fp32 = 0x3FB504F3 (nearest), 1.41421353816986083984375.
  EXPECT_EQ(oracle::sqrt({0x40000000, oracle::fp32}, oracle::fp32, e).bits, 0x3FB504F3u);
  // e4m3: 448 = 0x7E is max (quantum 32 there: 448 = 14*32); 472 = 14.75*32 rounds to 15*32 = 480
  // -> overflow -> NaN 0x7F; 464 = 14.5*32 is a tie and stays at the even 448.
  EXPECT_EQ(oracle::convert({0x43EC0000 /*472*/, oracle::fp32}, oracle::e4m3, e).bits, 0x7Fu);
  EXPECT_EQ(oracle::convert({0x43E80000 /*464*/, oracle::fp32}, oracle::e4m3, e).bits, 0x7Eu);
  EXPECT_EQ(oracle::convert({0x43E00000 /*448*/, oracle::fp32}, oracle::e4m3, e).bits, 0x7Eu);
}

} // namespace
