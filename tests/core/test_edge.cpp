// Tier a: edge cases and specials. Every expected bit pattern and flag set below is derived by
// hand from docs/semantics.md (derivations in the comments); nothing is computed by the core.
#include <gtest/gtest.h>

#include <cmath>

#include "common.hpp"

namespace {

using namespace bf16emu;
using coretest::hex;

constexpr std::uint8_t V = flag::invalid, Z = flag::divbyzero, O = flag::overflow, U = flag::underflow,
                       X = flag::inexact;

env mode_env(round_mode m) {
  env e;
  e.mode = m;
  return e;
}

constexpr round_mode kModes[] = {round_mode::nearest_even, round_mode::nearest_away, round_mode::toward_zero,
                                 round_mode::upward,       round_mode::downward,     round_mode::to_odd,
                                 round_mode::stochastic};

bf16 B(std::uint32_t b) { return bf16::from_bits(b); }
f32 F(std::uint32_t b) { return f32::from_bits(b); }
f16 H(std::uint32_t b) { return f16::from_bits(b); }
e4m3 E4(std::uint32_t b) { return e4m3::from_bits(b); }
e5m2 E5(std::uint32_t b) { return e5m2::from_bits(b); }

// ---------------------------------------------------------------------------------------------
TEST(Edge, SignedZeros) {
  for (round_mode m : kModes) {
    const env e = mode_env(m);
    const bool down = m == round_mode::downward;
    // Same-signed zeros keep their sign.
    EXPECT_RES(add(B(0x0000), B(0x0000), e), 0x0000, 0);
    EXPECT_RES(add(B(0x8000), B(0x8000), e), 0x8000, 0);
    // Opposite signs: +0, or -0 in downward.
    EXPECT_RES(add(B(0x0000), B(0x8000), e), down ? 0x8000 : 0x0000, 0);
    EXPECT_RES(add(B(0x8000), B(0x0000), e), down ? 0x8000 : 0x0000, 0);
    // +0 - +0 = +0 + -0 (effective opposite signs); -0 - +0 = -0 + -0 = -0.
    EXPECT_RES(sub(B(0x0000), B(0x0000), e), down ? 0x8000 : 0x0000, 0);
    EXPECT_RES(sub(B(0x8000), B(0x0000), e), 0x8000, 0);
    // x + (-x): 1.0 + -1.0 (bf16 0x3F80, 0xBF80), and fp32 pi - pi.
    EXPECT_RES(add(B(0x3F80), B(0xBF80), e), down ? 0x8000 : 0x0000, 0);
    EXPECT_RES(sub(F(0x40490FDB), F(0x40490FDB), e), down ? 0x80000000u : 0u, 0);
    // Subnormal x + (-x) too.
    EXPECT_RES(add(B(0x8001), B(0x0001), e), down ? 0x8000 : 0x0000, 0);
    // mul/div: XOR of signs.
    EXPECT_RES(mul(B(0x8000), B(0x40A0) /*5*/, e), 0x8000, 0);
    EXPECT_RES(mul(B(0x8000), B(0x8000), e), 0x0000, 0);
    EXPECT_RES(div(B(0x8000), B(0x4040) /*3*/, e), 0x8000, 0);
    EXPECT_RES(div(B(0x3F80), B(0xFF80) /*-inf*/, e), 0x8000, 0);
    // sqrt(-0) = -0.
    EXPECT_RES(sqrt(B(0x8000), e), 0x8000, 0);
    EXPECT_RES(sqrt(F(0x80000000), e), 0x80000000u, 0);
    // fma: (+0 * -1) + +0: product -0, addend +0 -> opposite signs -> +0 (downward -0).
    EXPECT_RES(fma(B(0x0000), B(0xBF80), B(0x0000), e), down ? 0x8000 : 0x0000, 0);
    // (-0 * 1) + -0 = -0 in every mode.
    EXPECT_RES(fma(B(0x8000), B(0x3F80), B(0x8000), e), 0x8000, 0);
    // 1*1 + -1: exact cancellation in fma.
    EXPECT_RES(fma(F(0x3F800000), F(0x3F800000), F(0xBF800000), e), down ? 0x80000000u : 0u, 0);
    // Zero conversion keeps its sign.
    EXPECT_RES(convert<bfloat16>(F(0x80000000), e), 0x8000, 0);
    EXPECT_RES(convert<float8_e4m3>(F(0x80000000), e), 0x80, 0);
  }
}

TEST(Edge, UnderflowToZeroKeepsSign) {
  // -2^-126 * 2^-10 = -2^-136, below half the smallest bf16 subnormal (2^-134): nearest -> -0,
  // downward -> -2^-133 (0x8001), upward -> -0; underflow and inexact always.
  EXPECT_RES(mul(B(0x8080), B(0x3A80), mode_env(round_mode::nearest_even)), 0x8000, U | X);
  EXPECT_RES(mul(B(0x8080), B(0x3A80), mode_env(round_mode::downward)), 0x8001, U | X);
  EXPECT_RES(mul(B(0x8080), B(0x3A80), mode_env(round_mode::upward)), 0x8000, U | X);
  EXPECT_RES(mul(B(0x0080), B(0x3A80), mode_env(round_mode::upward)), 0x0001, U | X);
  // to_odd: k = 0, f > 0 -> 1 quantum.
  EXPECT_RES(mul(B(0x8080), B(0x3A80), mode_env(round_mode::to_odd)), 0x8001, U | X);
}

// ---------------------------------------------------------------------------------------------
TEST(Edge, InvalidOperationsGiveDefaultNaN) {
  env ieee, cuda, pyt;
  cuda.nan = nan_policy::cuda;
  pyt.nan = nan_policy::pytorch;
  // inf - inf. bf16 default NaNs: ieee/pytorch 0x7FC0, cuda 0x7FFF.
  EXPECT_RES(add(B(0x7F80), B(0xFF80), ieee), 0x7FC0, V);
  EXPECT_RES(add(B(0x7F80), B(0xFF80), cuda), 0x7FFF, V);
  EXPECT_RES(add(B(0x7F80), B(0xFF80), pyt), 0x7FC0, V);
  EXPECT_RES(sub(B(0xFF80), B(0xFF80), ieee), 0x7FC0, V);
  EXPECT_RES(add(B(0x7F80), B(0x7F80), ieee), 0x7F80, 0); // same-signed: inf, exact
  EXPECT_RES(sub(B(0x7F80), B(0xFF80), ieee), 0x7F80, 0);
  // fp32 / fp16.
  EXPECT_RES(add(F(0x7F800000), F(0xFF800000), ieee), 0x7FC00000u, V);
  EXPECT_RES(add(F(0x7F800000), F(0xFF800000), cuda), 0x7FFFFFFFu, V);
  EXPECT_RES(add(H(0x7C00), H(0xFC00), ieee), 0x7E00, V);
  EXPECT_RES(add(H(0x7C00), H(0xFC00), cuda), 0x7FFF, V);
  EXPECT_RES(add(H(0x7C00), H(0xFC00), pyt), 0x7E00, V);
  // 0 * inf (mul and fma), 0/0, inf/inf, sqrt(x<0).
  EXPECT_RES(mul(B(0x0000), B(0xFF80), ieee), 0x7FC0, V);
  EXPECT_RES(mul(B(0xFF80), B(0x8000), cuda), 0x7FFF, V);
  EXPECT_RES(fma(B(0x0000), B(0x7F80), B(0x3F80), ieee), 0x7FC0, V);
  EXPECT_RES(fma(B(0x3F80), B(0x7F80), B(0xFF80), ieee), 0x7FC0, V); // inf - inf inside fma
  EXPECT_RES(fma(B(0x3F80), B(0x7F80), B(0x7F80), ieee), 0x7F80, 0);
  EXPECT_RES(div(B(0x0000), B(0x8000), ieee), 0x7FC0, V);
  EXPECT_RES(div(B(0x7F80), B(0xFF80), pyt), 0x7FC0, V);
  EXPECT_RES(sqrt(B(0xBF80), ieee), 0x7FC0, V);
  EXPECT_RES(sqrt(B(0xFF80), ieee), 0x7FC0, V);
  EXPECT_RES(sqrt(B(0x8001), ieee), 0x7FC0, V); // negative subnormal
  EXPECT_RES(sqrt(F(0xBF800000), cuda), 0x7FFFFFFFu, V);
  // e4m3: the default NaN is 0x7F under every policy.
  EXPECT_RES(mul(E4(0x00), E4(0x7F), ieee), 0x7F, 0); // 0x7F is a NaN operand, not inf
  EXPECT_RES(sqrt(E4(0xB8) /*-1*/, ieee), 0x7F, V);
  EXPECT_RES(sqrt(E4(0xB8), cuda), 0x7F, V);
  EXPECT_RES(sqrt(E5(0xBC) /*-1*/, ieee), 0x7E, V); // e5m2 +qNaN: 0.11111.10
  EXPECT_RES(sqrt(E5(0xBC), cuda), 0x7F, V);
  // Infinities otherwise exact: inf * -2 = -inf, inf / 0 = inf (no divbyzero), sqrt(inf) = inf.
  EXPECT_RES(mul(B(0x7F80), B(0xC000), ieee), 0xFF80, 0);
  EXPECT_RES(div(B(0x7F80), B(0x0000), ieee), 0x7F80, 0);
  EXPECT_RES(sqrt(B(0x7F80), ieee), 0x7F80, 0);
  // Division of a finite nonzero by zero: XOR-signed inf, divbyzero.
  EXPECT_RES(div(B(0x3F80), B(0x0000), ieee), 0x7F80, Z);
  EXPECT_RES(div(B(0x3F80), B(0x8000), ieee), 0xFF80, Z);
  EXPECT_RES(div(B(0x8001), B(0x8000), ieee), 0x7F80, Z);
  EXPECT_RES(div(F(0xC0000000), F(0x00000000), ieee), 0xFF800000u, Z);
}

TEST(Edge, NaNPropagationPolicies) {
  env ieee, cuda, pyt;
  cuda.nan = nan_policy::cuda;
  pyt.nan = nan_policy::pytorch;
  // ieee: first NaN operand, quieted, sign kept.
  EXPECT_RES(add(B(0x3F80), B(0xFFC3), ieee), 0xFFC3, 0);
  EXPECT_RES(add(B(0xFFC3), B(0x7FC5), ieee), 0xFFC3, 0);
  EXPECT_RES(add(B(0x7F81), B(0xFFC3), ieee), 0x7FC1, V); // sNaN a quieted: 0x7F81 | 0x0040
  EXPECT_RES(add(B(0xFFC3), B(0x7F81), ieee), 0xFFC3, V); // first NaN is a; invalid for the sNaN b
  EXPECT_RES(mul(B(0x7F80), B(0xFF85), ieee), 0xFFC5, V);
  // sub keeps the NaN operand's own sign (the operand is not negated).
  EXPECT_RES(sub(B(0x3F80), B(0xFFC3), ieee), 0xFFC3, 0);
  EXPECT_RES(sub(B(0x3F80), B(0x7FC3), ieee), 0x7FC3, 0);
  // fma: a, then b, then c.
  EXPECT_RES(fma(B(0x3F80), B(0xFFC7), B(0x7FC9), ieee), 0xFFC7, 0);
  EXPECT_RES(fma(B(0x3F80), B(0x3F80), B(0x7F89), ieee), 0x7FC9, V);
  // (0 x inf) + qNaN raises invalid and returns the NaN operand.
  EXPECT_RES(fma(B(0x0000), B(0x7F80), B(0x7FC5), ieee), 0x7FC5, V);
  EXPECT_RES(fma(B(0x7F80), B(0x8000), B(0xFFC5), cuda), 0x7FFF, V);
  // cuda: all ones; pytorch: +qNaN. Invalid only for sNaN.
  EXPECT_RES(add(B(0x3F80), B(0xFFC3), cuda), 0x7FFF, 0);
  EXPECT_RES(add(B(0x3F80), B(0xFFC3), pyt), 0x7FC0, 0);
  EXPECT_RES(add(B(0x3F80), B(0xFF81), pyt), 0x7FC0, V);
  EXPECT_RES(add(F(0x3F800000), F(0xFFC00001), cuda), 0x7FFFFFFFu, 0);
  EXPECT_RES(sqrt(H(0xFD01) /*sNaN*/, pyt), 0x7E00, V);
  // Mixed formats: fp32 = bf16 * bf16 + fp32; a bf16 NaN widens: payload shifted to the top.
  EXPECT_RES(fma_to<binary32>(B(0xFF85), B(0x3F80), F(0x3F800000), ieee), 0xFFC50000u, V);
  EXPECT_RES(fma_to<binary32>(B(0x3F80), B(0x3F80), F(0x7FC00123), ieee), 0x7FC00123u, 0);
}

TEST(Edge, NaNConversion) {
  env ieee, cuda, pyt;
  cuda.nan = nan_policy::cuda;
  pyt.nan = nan_policy::pytorch;
  // fp32 sNaN 0x7F800001 -> bf16: fraction 0x000001 >> 16 = 0, quiet bit set -> 0x7FC0, invalid.
  EXPECT_RES(convert<bfloat16>(F(0x7F800001), ieee), 0x7FC0, V);
  // fp32 qNaN 0xFFC12345 -> bf16: 0x412345 >> 16 = 0x41 -> 0xFFC1, no flag.
  EXPECT_RES(convert<bfloat16>(F(0xFFC12345), ieee), 0xFFC1, 0);
  EXPECT_RES(convert<bfloat16>(F(0xFFC12345), cuda), 0x7FFF, 0);
  EXPECT_RES(convert<bfloat16>(F(0xFFC12345), pyt), 0x7FC0, 0);
  // bf16 sNaN 0x7F81 -> fp32: 1 << 16 = 0x10000, | quiet 0x400000 -> 0x7FC10000, invalid.
  EXPECT_RES(convert<binary32>(B(0x7F81), ieee), 0x7FC10000u, V);
  // fp32 -> fp16: 0x7FA00000 (sNaN, fraction 0x200000) -> 0x200000 >> 13 = 0x100 | 0x200 -> 0x7F00.
  EXPECT_RES(convert<binary16>(F(0x7FA00000), ieee), 0x7F00, V);
  // fp32 -> e5m2: fraction 0x200000 >> 21 = 1 | quiet 2 -> 0x7F.
  EXPECT_RES(convert<float8_e5m2>(F(0x7FA00000), ieee), 0x7F, V);
  // -> e4m3: S.1111.111 with the sign under ieee, 0x7F otherwise.
  EXPECT_RES(convert<float8_e4m3>(F(0xFFC00000), ieee), 0xFF, 0);
  EXPECT_RES(convert<float8_e4m3>(F(0xFFC00000), cuda), 0x7F, 0);
  EXPECT_RES(convert<float8_e4m3>(F(0xFFC00000), pyt), 0x7F, 0);
  // e4m3 NaN (fraction 111, treated as quiet) -> fp32: 0b111 << 20 = 0x700000 | quiet -> 0x7FF00000.
  EXPECT_RES(convert<binary32>(E4(0x7F), ieee), 0x7FF00000u, 0);
  EXPECT_RES(convert<binary32>(E4(0xFF), ieee), 0xFFF00000u, 0);
  EXPECT_RES(convert<bfloat16>(E4(0xFF), cuda), 0x7FFF, 0);
  // fp64 source: 0x7FF0000000000001 (sNaN) -> fp32: fraction >> 29 = 0 | quiet -> 0x7FC00000.
  EXPECT_RES(convert<binary32>(f64::from_bits(0x7FF0000000000001ull), ieee), 0x7FC00000u, V);
  EXPECT_RES(convert<bfloat16>(f64::from_bits(0xFFF8000000000000ull), ieee), 0xFFC0, 0);
}

// ---------------------------------------------------------------------------------------------
TEST(Edge, OverflowTable) {
  // bf16 max = 0x7F7F. max * 2 (0x4000) overflows far beyond rounding range.
  struct row {
    round_mode m;
    std::uint32_t pos, neg;
  };
  const row rows[] = {
      {round_mode::nearest_even, 0x7F80, 0xFF80}, {round_mode::nearest_away, 0x7F80, 0xFF80},
      {round_mode::toward_zero, 0x7F7F, 0xFF7F},  {round_mode::upward, 0x7F80, 0xFF7F},
      {round_mode::downward, 0x7F7F, 0xFF80},     {round_mode::to_odd, 0x7F7F, 0xFF7F},
      {round_mode::stochastic, 0x7F80, 0xFF80},
  };
  for (const row &r : rows) {
    env e = mode_env(r.m);
    e.random = 0x12345678;
    EXPECT_RES(mul(B(0x7F7F), B(0x4000), e), r.pos, O | X);
    EXPECT_RES(mul(B(0x7F7F), B(0xC000), e), r.neg, O | X);
    e.saturate = true; // every overflow gives +-max
    EXPECT_RES(mul(B(0x7F7F), B(0x4000), e), 0x7F7F, O | X);
    EXPECT_RES(mul(B(0x7F7F), B(0xC000), e), 0xFF7F, O | X);
  }
  // fp32 0x7F7FFFFF -> bf16: k = 0xFF (max), f = 0xFFFF/0x10000 of a quantum. Rounding up
  // overflows; keeping k does not (inexact only).
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::nearest_even)), 0x7F80, O | X);
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::nearest_away)), 0x7F80, O | X);
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::toward_zero)), 0x7F7F, X);
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::upward)), 0x7F80, O | X);
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::downward)), 0x7F7F, X);
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), mode_env(round_mode::to_odd)), 0x7F7F, X); // k odd
  EXPECT_RES(convert<bfloat16>(F(0xFF7FFFFF), mode_env(round_mode::downward)), 0xFF80, O | X);
  EXPECT_RES(convert<bfloat16>(F(0xFF7FFFFF), mode_env(round_mode::upward)), 0xFF7F, X);
  // stochastic: floor(f*2^32) = 0xFFFF0000; + 0x12345678 >= 2^32 -> up -> overflow.
  env s = mode_env(round_mode::stochastic);
  s.random = 0x12345678;
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), s), 0x7F80, O | X);
  s.random = 0x0000FFFF; // 0xFFFF0000 + 0xFFFF < 2^32 -> down -> max, inexact only
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), s), 0x7F7F, X);
  s.random = 0x00010000; // 0xFFFF0000 + 0x10000 = 2^32 -> up -> overflow
  EXPECT_RES(convert<bfloat16>(F(0x7F7FFFFF), s), 0x7F80, O | X);
}

TEST(Edge, OverflowBoundaryHalfUlpAboveMax) {
  // max (1.1111111 * 2^127) + 2^119 (0x7B00, half an ulp): exact tie with k = max (odd).
  const auto a = B(0x7F7F), b = B(0x7B00);
  EXPECT_RES(add(a, b, mode_env(round_mode::nearest_even)), 0x7F80, O | X); // odd -> up -> 2^128
  EXPECT_RES(add(a, b, mode_env(round_mode::nearest_away)), 0x7F80, O | X);
  EXPECT_RES(add(a, b, mode_env(round_mode::toward_zero)), 0x7F7F, X); // no overflow: k = max
  EXPECT_RES(add(a, b, mode_env(round_mode::upward)), 0x7F80, O | X);
  EXPECT_RES(add(a, b, mode_env(round_mode::downward)), 0x7F7F, X);
  EXPECT_RES(add(a, b, mode_env(round_mode::to_odd)), 0x7F7F, X); // k odd: stays
  env s = mode_env(round_mode::stochastic);
  s.random = 0x7FFFFFFF; // 2^31 + 2^31 - 1 < 2^32 -> down
  EXPECT_RES(add(a, b, s), 0x7F7F, X);
  s.random = 0x80000000; // 2^31 + 2^31 = 2^32 -> up -> overflow
  EXPECT_RES(add(a, b, s), 0x7F80, O | X);
  // Negative side, downward/upward swap.
  EXPECT_RES(add(B(0xFF7F), B(0xFB00), mode_env(round_mode::downward)), 0xFF80, O | X);
  EXPECT_RES(add(B(0xFF7F), B(0xFB00), mode_env(round_mode::upward)), 0xFF7F, X);
}

TEST(Edge, E4M3) {
  env e;
  // 448 = 1.110 * 2^8 = 0x7E is the max; 0x78 = 1.000 * 2^8 = 256 is a normal number.
  EXPECT_RES(convert<float8_e4m3>(F(0x43E00000) /*448*/, e), 0x7E, 0);
  EXPECT_RES(convert<binary32>(E4(0x78), e), 0x43800000u, 0);
  EXPECT_RES(convert<binary32>(E4(0x7E), e), 0x43E00000u, 0);
  EXPECT_RES(convert<binary32>(E4(0xFE), e), 0xC3E00000u, 0);
  // 480 = 15 quanta of 32: the NaN pattern -> overflow. Nearest: NaN of the sign, O|X.
  EXPECT_RES(convert<float8_e4m3>(F(0x43F00000) /*480*/, e), 0x7F, O | X);
  EXPECT_RES(convert<float8_e4m3>(F(0xC3F00000) /*-480*/, e), 0xFF, O | X);
  // Toward zero: k = 15 > 14 still overflows (the table), giving max.
  EXPECT_RES(convert<float8_e4m3>(F(0x43F00000), mode_env(round_mode::toward_zero)), 0x7E, O | X);
  EXPECT_RES(convert<float8_e4m3>(F(0xC3F00000), mode_env(round_mode::toward_zero)), 0xFE, O | X);
  // 464 = 14.5 quanta: tie, k = 14 even -> 448 inexact; ties-away -> 480 -> overflow.
  EXPECT_RES(convert<float8_e4m3>(F(0x43E80000), e), 0x7E, X);
  EXPECT_RES(convert<float8_e4m3>(F(0x43E80000), mode_env(round_mode::nearest_away)), 0x7F, O | X);
  // 449: toward zero 448 (inexact, no overflow); upward -> 480 -> overflow -> NaN.
  EXPECT_RES(convert<float8_e4m3>(F(0x43E08000), mode_env(round_mode::toward_zero)), 0x7E, X);
  EXPECT_RES(convert<float8_e4m3>(F(0x43E08000), mode_env(round_mode::upward)), 0x7F, O | X);
  EXPECT_RES(convert<float8_e4m3>(F(0x43E08000), mode_env(round_mode::downward)), 0x7E, X);
  // to_odd at 449: k = 14 even, f > 0 -> 15 = NaN pattern -> overflow -> max (to_odd row).
  EXPECT_RES(convert<float8_e4m3>(F(0x43E08000), mode_env(round_mode::to_odd)), 0x7E, O | X);
  // Saturate: overflow gives max.
  env sat;
  sat.saturate = true;
  EXPECT_RES(convert<float8_e4m3>(F(0x43F00000), sat), 0x7E, O | X);
  EXPECT_RES(convert<float8_e4m3>(F(0x47000000) /*32768*/, sat), 0x7E, O | X);
  // Inf has no encoding: NaN of its sign with invalid; saturating: +-448 with no flag.
  EXPECT_RES(convert<float8_e4m3>(F(0x7F800000), e), 0x7F, V);
  EXPECT_RES(convert<float8_e4m3>(F(0xFF800000), e), 0xFF, V);
  EXPECT_RES(convert<float8_e4m3>(F(0xFF800000), sat), 0xFE, 0);
  // Arithmetic within e4m3: 448 + 32 = 480 -> overflow -> NaN; 256 * 2 = 512 -> NaN.
  EXPECT_RES(add(E4(0x7E), E4(0x60) /*32 = 1.000*2^5*/, e), 0x7F, O | X);
  EXPECT_RES(mul(E4(0x78), E4(0x40) /*2*/, e), 0x7F, O | X);
  EXPECT_RES(mul(E4(0x78), E4(0x40), mode_env(round_mode::toward_zero)), 0x7E, O | X);
  // 0x7F is a NaN operand: propagates (ieee keeps the sign).
  EXPECT_RES(add(E4(0xFF), E4(0x38), e), 0xFF, 0);
  // Smallest subnormal 2^-9 (0x01); 2^-10 is a tie at k = 0 (even) -> 0, inexact, underflow.
  EXPECT_RES(convert<float8_e4m3>(F(0x3B000000) /*2^-9*/, e), 0x01, 0);
  EXPECT_RES(convert<float8_e4m3>(F(0x3A800000) /*2^-10*/, e), 0x00, U | X);
  EXPECT_RES(convert<float8_e4m3>(F(0x3AC00000) /*1.5*2^-10*/, e), 0x01, U | X);
  // Division by zero: no Inf -> NaN of the result's sign, invalid (and divbyzero).
  EXPECT_RES(div(E4(0x38), E4(0x80), e), 0xFF, V | Z);
}

// ---------------------------------------------------------------------------------------------
TEST(Edge, TininessBeforeVersusAfter) {
  env after, before;
  before.tiny = tininess::before_rounding;
  // x = 2^-126 * (1 - 2^-9) (fp32 subnormal 0x007FC000) -> bf16. Subnormal quantum 2^-133:
  // x = 127.75 quanta -> nearest: 128 = 0x0080 (2^-126). Unbounded exponent: quantum 2^-134,
  // x = 255.5 quanta, tie, 255 odd -> 256 = 2^-126: not tiny after rounding; tiny before.
  EXPECT_RES(convert<bfloat16>(F(0x007FC000), after), 0x0080, X);
  EXPECT_RES(convert<bfloat16>(F(0x007FC000), before), 0x0080, U | X);
  // x = 2^-126 * (1 - 2^-8) (0x007F8000): unbounded: exactly 255 quanta of 2^-134 < 2^-126 ->
  // tiny after too; subnormal quantum: 127.5, tie, 127 odd -> 128 -> result 0x0080 with U|X.
  EXPECT_RES(convert<bfloat16>(F(0x007F8000), after), 0x0080, U | X);
  EXPECT_RES(convert<bfloat16>(F(0x007F8000), before), 0x0080, U | X);
  // Toward zero on the first value: result 0x007F; tiny either way.
  env tz = mode_env(round_mode::toward_zero);
  EXPECT_RES(convert<bfloat16>(F(0x007FC000), tz), 0x007F, U | X);
  // Exact subnormal results raise nothing (tiny but exact).
  EXPECT_RES(mul(B(0x0080), B(0x3F00) /*0.5*/, after), 0x0040, 0);
  EXPECT_RES(mul(B(0x0080), B(0x3F00), before), 0x0040, 0);
  // With flush_outputs the tininess setting decides what is flushed.
  after.subnormal = subnormals::flush_outputs;
  before.subnormal = subnormals::flush_outputs;
  EXPECT_RES(convert<bfloat16>(F(0x007FC000), after), 0x0080, X);
  EXPECT_RES(convert<bfloat16>(F(0x007FC000), before), 0x0000, U | X);
  EXPECT_RES(convert<bfloat16>(F(0x807FC000), before), 0x8000, U | X);
  // fp32 arithmetic: 2^-126 * (1 - 2^-24) via mul: 0x00800000 * 0x3F7FFFFF (1 - 2^-24)...
  // exact = 2^-126 - 2^-150: subnormal quantum 2^-149: 2^23 - 0.5 quanta -> tie, k = 2^23 - 1
  // odd -> 2^23 = 2^-126. Unbounded: quantum 2^-150: 2^24 - 1 quanta exactly -> tiny after.
  EXPECT_RES(mul(F(0x00800000), F(0x3F7FFFFF), env{}), 0x00800000u, U | X);
  EXPECT_RES(mul(F(0x00800000), F(0x3F7FFFFF), mode_env(round_mode::upward)), 0x00800000u, U | X);
  // fp32 2^-126 * (1 - 2^-23) (0x3F7FFFFE) + upward: exact 2^-126 - 2^-149 = 2^23 - 1 quanta:
  // exact subnormal 0x007FFFFF, no flags.
  EXPECT_RES(mul(F(0x00800000), F(0x3F7FFFFE), mode_env(round_mode::upward)), 0x007FFFFFu, 0);
}

TEST(Edge, FlushAndDaz) {
  env daz;
  daz.subnormal = subnormals::inputs_as_zero;
  env ftz;
  ftz.subnormal = subnormals::flush_outputs;
  env both;
  both.subnormal = subnormals::flush_both;
  // Subnormal operands read as zero (no flag): 2^-133 + 2^-133 -> +0 + +0 = +0.
  EXPECT_RES(add(B(0x0001), B(0x0001), env{}), 0x0002, 0);
  EXPECT_RES(add(B(0x0001), B(0x0001), daz), 0x0000, 0);
  EXPECT_RES(mul(B(0x8001), B(0x3F80), daz), 0x8000, 0);
  EXPECT_RES(add(B(0x8001), B(0x3F80), daz), 0x3F80, 0); // -0 + 1 = 1 exactly
  EXPECT_RES(div(B(0x3F80), B(0x0001), daz), 0x7F80, Z); // 1 / (+0)
  EXPECT_RES(div(B(0x0001), B(0x0001), daz), 0x7FC0, V); // 0 / 0
  EXPECT_RES(sqrt(B(0x8001), daz), 0x8000, 0);           // sqrt(-0) = -0, not invalid
  EXPECT_RES(mul(B(0x7F80), B(0x0001), daz), 0x7FC0, V); // inf * 0
  EXPECT_RES(convert<binary32>(B(0x0001), daz), 0x00000000u, 0);
  // Normal operands are unaffected; a subnormal result is still produced.
  EXPECT_RES(mul(B(0x0080), B(0x3F00), daz), 0x0040, 0);
  // flush_outputs: exact tiny result 2^-127 -> +0 with U|X; sign kept.
  EXPECT_RES(mul(B(0x0080), B(0x3F00), ftz), 0x0000, U | X);
  EXPECT_RES(mul(B(0x8080), B(0x3F00), ftz), 0x8000, U | X);
  EXPECT_RES(mul(B(0x0080), B(0x3F00), both), 0x0000, U | X);
  // ... but subnormal inputs are still read under flush_outputs: 2^-133 * 2^7 = 2^-126 (normal).
  EXPECT_RES(mul(B(0x0001), B(0x4300) /*128*/, ftz), 0x0080, 0);
  EXPECT_RES(mul(B(0x0001), B(0x4300), both), 0x0000, 0);
  // fp32 subnormal -> bf16: 2^-149 rounds to 0 (nearest) or 2^-133 (upward), U|X; DAZ: +0 exact.
  EXPECT_RES(convert<bfloat16>(F(0x00000001), env{}), 0x0000, U | X);
  EXPECT_RES(convert<bfloat16>(F(0x00000001), mode_env(round_mode::upward)), 0x0001, U | X);
  EXPECT_RES(convert<bfloat16>(F(0x00000001), daz), 0x0000, 0);
}

// ---------------------------------------------------------------------------------------------
TEST(Edge, StochasticExtremes) {
  env s = mode_env(round_mode::stochastic);
  // r = 0: never rounds up (floor(f*2^32) < 2^32): truncation.
  s.random = 0;
  EXPECT_RES(convert<bfloat16>(F(0x3F800001), s), 0x3F80, X);
  EXPECT_RES(convert<bfloat16>(F(0x3FFFFFFF), s), 0x3FFF, X);
  EXPECT_RES(convert<bfloat16>(F(0xBFFFFFFF), s), 0xBFFF, X);
  EXPECT_RES(convert<bfloat16>(F(0x3F810000), s), 0x3F81, 0); // exact
  // r = 0xFFFFFFFF: up iff floor(f*2^32) >= 1, i.e. f >= 2^-32.
  s.random = 0xFFFFFFFF;
  EXPECT_RES(convert<bfloat16>(F(0x3F800001), s), 0x3F81, X); // f = 2^-16
  EXPECT_RES(convert<bfloat16>(F(0xBF800001), s), 0xBF81, X);
  EXPECT_RES(convert<bfloat16>(F(0x3F810000), s), 0x3F81, 0); // exact stays exact
  // fp32 1 + 2^-60: f = 2^-37 of a quantum (2^-23): floor(f*2^32) = 0 -> stays 1.0 even with
  // r = 0xFFFFFFFF. 1 + 2^-55: f = 2^-32 -> floor = 1 -> 1 + 0xFFFFFFFF = 2^32 -> up.
  EXPECT_RES(add(F(0x3F800000), F(0x21800000) /*2^-60*/, s), 0x3F800000u, X);
  EXPECT_RES(add(F(0x3F800000), F(0x24000000) /*2^-55*/, s), 0x3F800001u, X);
  EXPECT_RES(add(F(0x3F800000), F(0x24000000), mode_env(round_mode::toward_zero)), 0x3F800000u, X);
  // Tie f = 1/2: floor = 2^31; r = 2^31 - 1 -> down, r = 2^31 -> up.
  s.random = 0x7FFFFFFF;
  EXPECT_RES(convert<bfloat16>(F(0x3F808000), s), 0x3F80, X);
  s.random = 0x80000000;
  EXPECT_RES(convert<bfloat16>(F(0x3F808000), s), 0x3F81, X);
  // Same random, same result.
  s.random = 0x9E3779B9;
  const auto r1 = convert<bfloat16>(F(0x3F8ABCDE), s), r2 = convert<bfloat16>(F(0x3F8ABCDE), s);
  EXPECT_EQ(r1.value.bits, r2.value.bits);
  // f = 0xBCDE/0x10000: floor(f*2^32) = 0xBCDE0000; + 0x9E3779B9 >= 2^32 -> up: 0x3F8B.
  EXPECT_EQ(r1.value.bits, 0x3F8B);
}

TEST(Edge, ToOdd) {
  const env o = mode_env(round_mode::to_odd);
  // 1 + 2^-8: tie, k = 0x80 even -> 0x81. 1 + 3*2^-8: k = 0x81 odd -> stays 0x81.
  EXPECT_RES(convert<bfloat16>(F(0x3F808000), o), 0x3F81, X);
  EXPECT_RES(convert<bfloat16>(F(0x3F818000), o), 0x3F81, X);
  EXPECT_RES(convert<bfloat16>(F(0x3F810000), o), 0x3F81, 0); // exact: unchanged
  EXPECT_RES(convert<bfloat16>(F(0x3F800001), o), 0x3F81, X);
  EXPECT_RES(convert<bfloat16>(F(0x3F80FFFF), o), 0x3F81, X);
  EXPECT_RES(convert<bfloat16>(F(0xBF800001), o), 0xBF81, X); // sign-magnitude
  EXPECT_RES(convert<bfloat16>(F(0x3F820001), o), 0x3F83, X);
  // Double rounding through odd: fp32 -> bf16 (odd) -> e4m3 (nearest) equals direct rounding
  // when the intermediate keeps >= 2 extra bits: 1.0625 + tiny: direct e4m3 nearest of
  // 1 + 2^-4 + 2^-20 is 1.125 (above the tie); through odd: bf16 1.0000111 -> e4m3 1.001.
  const auto mid = convert<bfloat16>(F(0x3F880008), o);
  EXPECT_EQ(mid.value.bits, 0x3F89);
  EXPECT_RES(convert<float8_e4m3>(mid.value, env{}), 0x39, X);
}

// ---------------------------------------------------------------------------------------------
TEST(Edge, PaperCase) {
  // fp32 -2.4031... (0xC01A0E2E) + -2.296875 (0xC0130000) = 0xC0968717 exactly:
  // 1.00110100000111000101110 * 2^1 + 1.00100110000000000000000 * 2^1
  // = 10.01011010000111000101110 * 2^1 = 1.00101101000011100010111 * 2^2 (no bit lost).
  const env e;
  last_event t1;
  const auto s = add(F(0xC01A0E2E), F(0xC0130000), e, t1);
  EXPECT_EQ(s.value.bits, 0xC0968717u);
  EXPECT_EQ(s.flags, 0);
  EXPECT_EQ(t1.count, 1);
  EXPECT_EQ(t1.event.dec, decision::exact);
  EXPECT_EQ(t1.event.err_hi + t1.event.err_lo, 0.0);
  // -> bf16 nearest: kept 1.0010110, guard 1, round 0, sticky 1 -> up -> 0xC097 = -4.71875.
  last_event t;
  const auto r = convert<bfloat16>(s.value, e, t);
  EXPECT_EQ(r.value.bits, 0xC097);
  EXPECT_EQ(r.flags, X);
  EXPECT_EQ(t.count, 1);
  EXPECT_TRUE(t.event.sign);
  EXPECT_EQ(t.event.kept, 0x96u); // 1.0010110
  EXPECT_EQ(t.event.exponent, 2);
  EXPECT_EQ(t.event.lsb_exp, 2 - 7);
  EXPECT_TRUE(t.event.guard);
  EXPECT_FALSE(t.event.round);
  EXPECT_TRUE(t.event.sticky);
  EXPECT_EQ(t.event.dec, decision::up);
  EXPECT_EQ(t.event.op, op_kind::convert);
  EXPECT_TRUE(t.event.err_exact);
  // error = -4.71875 - (-4.703990459442138671875) = -0.014759540557861328125 (= -30953 * 2^-21);
  // both terms are binary64 and the sum is exact, so the double sum is exact too.
  {
    oracle::dyadic want;
    want.neg = true;
    want.mag = 30953;
    want.exp = -21;
    EXPECT_TRUE(oracle::dyadic_from_double(t.event.err_hi) + oracle::dyadic_from_double(t.event.err_lo) ==
                want)
        << t.event.err_hi << " + " << t.event.err_lo;
    EXPECT_TRUE(oracle::dyadic_from_double(-0.014759540557861328125) == want);
  }
  // Tie variant: bf16 -2.40625 (0xC01A) + -2.296875 (0xC013) = -4.703125
  // = -1.0010110|1 * 2^2: guard 1, nothing below: tie, k even -> -4.6875 (0xC096).
  last_event tt;
  const auto w = add(B(0xC01A), B(0xC013), e, tt);
  EXPECT_EQ(w.value.bits, 0xC096);
  EXPECT_EQ(w.flags, X);
  EXPECT_TRUE(tt.event.guard);
  EXPECT_FALSE(tt.event.round);
  EXPECT_FALSE(tt.event.sticky);
  EXPECT_EQ(tt.event.dec, decision::tie_down);
  EXPECT_EQ(tt.event.err_hi + tt.event.err_lo, 0.015625); // -4.6875 + 4.703125
  // Ties away: -4.71875 (0xC097), tie_up.
  last_event ta;
  const auto wa = add(B(0xC01A), B(0xC013), mode_env(round_mode::nearest_away), ta);
  EXPECT_EQ(wa.value.bits, 0xC097);
  EXPECT_EQ(ta.event.dec, decision::tie_up);
}

TEST(Edge, MixedFormats) {
  const env e;
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14, exact in fp32: 0x3F800000 + 2^17 + 2^9 = 0x3F820200.
  EXPECT_RES(fma_to<binary32>(B(0x3F81), B(0x3F81), F(0x00000000), e), 0x3F820200u, 0);
  // ... minus 1: 2^-6 * (1 + 2^-8) = 0x3C808000 exactly.
  EXPECT_RES(fma_to<binary32>(B(0x3F81), B(0x3F81), F(0xBF800000), e), 0x3C808000u, 0);
  // Into bf16: 1 + 2^-6 + 2^-14 -> 1.0000010 (guard 0) -> 0x3F82, inexact.
  EXPECT_RES(fma_to<bfloat16>(B(0x3F81), B(0x3F81), F(0x00000000), e), 0x3F82, X);
  // mul_to fp32 of bf16 max squared: 2^256-ish -> overflow in fp32.
  EXPECT_RES(mul_to<binary32>(B(0x7F7F), B(0x7F7F), e), 0x7F800000u, O | X);
  // add_to fp16 of two bf16: 65504 + 16 -> 65520 = fp16 tie above max -> overflow (max odd).
  // 65504 is not a bf16; use 65280 (0x477F) + 256 (0x4380) = 65536 -> overflow in fp16.
  EXPECT_RES(add_to<binary16>(B(0x477F), B(0x4380), e), 0x7C00, O | X);
  EXPECT_RES(add_to<binary16>(B(0x477F), B(0x4380), mode_env(round_mode::toward_zero)), 0x7BFF, O | X);
  // div_to / sqrt_to: 1/3 in fp32 from bf16 operands: 0x3EAAAAAB (nearest).
  EXPECT_RES(div_to<binary32>(B(0x3F80), B(0x4040), e), 0x3EAAAAABu, X);
  EXPECT_RES(sqrt_to<binary32>(B(0x4000), e), 0x3FB504F3u, X);
  // tf32 of 1 + 2^-11 (tie, even) -> 1.0.
  EXPECT_RES(convert<tensorfloat32>(F(0x3F800000 | (1u << 12)), e), 0x3F800000u >> 13, X);
}

TEST(Edge, NegAbsCompare) {
  EXPECT_EQ(neg(B(0x7FC3)).bits, 0xFFC3); // NaN untouched but for the sign
  EXPECT_EQ(neg(B(0x7F81)).bits, 0xFF81); // sNaN stays signaling
  EXPECT_EQ(abs(B(0xFF81)).bits, 0x7F81);
  EXPECT_EQ(abs(B(0x8000)).bits, 0x0000);
  EXPECT_EQ(neg(E4(0x7F)).bits, 0xFF);
  EXPECT_EQ(abs(F(0x80000001)).bits, 0x00000001u);
  const env e;
  EXPECT_EQ(compare(B(0x0000), B(0x8000), e).ord, ordering::equal);
  EXPECT_EQ(compare(B(0x0000), B(0x8000), e).flags, 0);
  EXPECT_EQ(compare(B(0xBF80), B(0x3F80), e).ord, ordering::less);
  EXPECT_EQ(compare(B(0xBF80), B(0xC000), e).ord, ordering::greater);
  EXPECT_EQ(compare(B(0x7FC0), B(0x3F80), e).ord, ordering::unordered);
  EXPECT_EQ(compare(B(0x7FC0), B(0x3F80), e).flags, 0);
  EXPECT_EQ(compare(B(0x3F80), B(0x7F81), e).flags, V);
  EXPECT_EQ(compare_signaling(B(0x7FC0), B(0x3F80), e).flags, V);
  EXPECT_EQ(compare_signaling(B(0x3F80), B(0x4000), e).flags, 0);
  EXPECT_EQ(compare(E4(0x7E), E4(0x7F), e).ord, ordering::unordered); // 0x7F is NaN
  EXPECT_EQ(compare(E4(0x7E), E4(0x78), e).ord, ordering::greater);
}

} // namespace
