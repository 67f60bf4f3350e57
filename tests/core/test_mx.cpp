// The OCP MX element formats fp6 e2m3, fp6 e3m2 and fp4 e2m1 (docs/formats.md): values, overflow
// and special results derived by hand from the OCP MX v1.0 tables and the policy in
// docs/formats.md; every binary32 -> MX conversion of a structured set against the oracle.
#include <gtest/gtest.h>

#include <bf16emu/core/scale.hpp>

#include "common.hpp"

namespace {

using namespace bf16emu;
using coretest::hex;

constexpr std::uint8_t V = flag::invalid, Z = flag::divbyzero, O = flag::overflow, U = flag::underflow,
                       X = flag::inexact;

constexpr round_mode kModes[] = {round_mode::nearest_even, round_mode::nearest_away, round_mode::toward_zero,
                                 round_mode::upward,       round_mode::downward,     round_mode::to_odd,
                                 round_mode::stochastic};

env mode_env(round_mode m) {
  env e;
  e.mode = m;
  return e;
}

e2m1 Q(std::uint32_t b) { return e2m1::from_bits(b); }

// The value tables of OCP MX v1.0 (FP4 E2M1: bias 1; FP6 E2M3: bias 1; FP6 E3M2: bias 3).
TEST(MXFormats, ValueTables) {
  // E2M1: 0 0.5 | 1 1.5 | 2 3 | 4 6 for codes 0..7; the sign bit is bit 3.
  const double e2m1_values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (std::uint32_t b = 0; b < 16; ++b) {
    const double want = (b & 8 ? -1 : 1) * e2m1_values[b & 7];
    EXPECT_EQ(to_double(Q(b)), want) << hex(b);
    EXPECT_FALSE(Q(b).is_nan()) << hex(b);
    EXPECT_FALSE(Q(b).is_inf()) << hex(b);
  }
  // Max finite: E2M3 S.11.111 = 2^(3-1) * 1.875 = 7.5; E3M2 S.111.11 = 2^(7-3) * 1.75 = 28.
  EXPECT_EQ(to_double(e2m3::from_bits(0x1F)), 7.5);
  EXPECT_EQ(to_double(e2m3::from_bits(0x3F)), -7.5);
  EXPECT_EQ(to_double(e3m2::from_bits(0x1F)), 28.0);
  EXPECT_EQ(to_double(e3m2::from_bits(0x3F)), -28.0);
  // Min subnormal: E2M3 2^0 * 1/8; E3M2 2^-2 * 1/4; E2M1 2^0 * 1/2.
  EXPECT_EQ(to_double(e2m3::from_bits(0x01)), 0.125);
  EXPECT_EQ(to_double(e3m2::from_bits(0x01)), 0.0625);
  // Min normal: E2M3 and E2M1 1.0, E3M2 0.25.
  EXPECT_EQ(to_double(e2m3::from_bits(0x08)), 1.0);
  EXPECT_EQ(to_double(e3m2::from_bits(0x04)), 0.25);
  for (std::uint32_t b = 0; b < 64; ++b) {
    EXPECT_FALSE(e2m3::from_bits(b).is_nan() || e2m3::from_bits(b).is_inf()) << hex(b);
    EXPECT_FALSE(e3m2::from_bits(b).is_nan() || e3m2::from_bits(b).is_inf()) << hex(b);
  }
  EXPECT_STREQ(format_name<float6_e2m3>(), "e2m3");
  EXPECT_STREQ(format_name<float6_e3m2>(), "e3m2");
  EXPECT_STREQ(format_name<float4_e2m1>(), "e2m1");
}

// Overflow: +-max finite with overflow and inexact in every mode, saturate or not.
TEST(MXFormats, OverflowSaturatesInEveryMode) {
  for (round_mode m : kModes) {
    for (bool sat : {false, true}) {
      env e = mode_env(m);
      e.saturate = sat;
      EXPECT_RES(convert<float4_e2m1>(from_float(1e6f), e), 0x7, O | X);
      EXPECT_RES(convert<float4_e2m1>(from_float(-1e6f), e), 0xF, O | X);
      EXPECT_RES(convert<float6_e2m3>(from_float(100.f), e), 0x1F, O | X);
      EXPECT_RES(convert<float6_e3m2>(from_float(-1000.f), e), 0x3F, O | X);
      // 6 + 6 = 12 in fp4.
      EXPECT_RES(add(Q(0x7), Q(0x7), e), 0x7, O | X);
    }
  }
}

// Just above the max finite: 6.5 is below the midpoint 7 of 6 and 8 (= 2^3, the next value with
// an unbounded exponent), 7 is the tie (8 has the even significand 1.0).
TEST(MXFormats, RoundingNearTheTop) {
  EXPECT_RES(convert<float4_e2m1>(from_float(6.5f), mode_env(round_mode::nearest_even)), 0x7, X);
  EXPECT_RES(convert<float4_e2m1>(from_float(6.5f), mode_env(round_mode::toward_zero)), 0x7, X);
  EXPECT_RES(convert<float4_e2m1>(from_float(6.5f), mode_env(round_mode::upward)), 0x7, O | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(-6.5f), mode_env(round_mode::upward)), 0xF, X);
  EXPECT_RES(convert<float4_e2m1>(from_float(-6.5f), mode_env(round_mode::downward)), 0xF, O | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(7.f), mode_env(round_mode::nearest_even)), 0x7, O | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(7.f), mode_env(round_mode::nearest_away)), 0x7, O | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(7.f), mode_env(round_mode::to_odd)), 0x7, X);
  // 3 * 3 = 9 > 7; toward zero 9 rounds to 8 = 2^3 (unbounded exponent), above 6 too.
  EXPECT_RES(mul(Q(0x5), Q(0x5), mode_env(round_mode::nearest_even)), 0x7, O | X);
  EXPECT_RES(mul(Q(0x5), Q(0x5), mode_env(round_mode::toward_zero)), 0x7, O | X);
}

// The trace reports an overflow of a finite format as overflow_max (never overflow_inf).
struct last_event {
  static constexpr bool enabled = true;
  rounding_event ev{};
  void operator()(const rounding_event &e) noexcept { ev = e; }
};

TEST(MXFormats, TraceSaysOverflowMax) {
  for (round_mode m : kModes) {
    last_event tr;
    EXPECT_RES(convert<float4_e2m1>(from_float(100.f), mode_env(m), tr), 0x7, O | X);
    EXPECT_EQ(tr.ev.dec, decision::overflow_max) << to_string(m);
    EXPECT_EQ(tr.ev.result_bits, 0x7u);
  }
}

// Ties and the subnormal range of fp4.
TEST(MXFormats, TiesAndSubnormals) {
  const env rne = mode_env(round_mode::nearest_even), rna = mode_env(round_mode::nearest_away);
  // 5 between 4 (1.0 x 2^2) and 6 (1.1 x 2^2).
  EXPECT_RES(convert<float4_e2m1>(from_float(5.f), rne), 0x6, X);
  EXPECT_RES(convert<float4_e2m1>(from_float(5.f), rna), 0x7, X);
  // 2.5 between 2 (1.0 x 2) and 3 (1.1 x 2).
  EXPECT_RES(convert<float4_e2m1>(from_float(2.5f), rne), 0x4, X);
  EXPECT_RES(convert<float4_e2m1>(from_float(2.5f), rna), 0x5, X);
  // 0.25 between 0 and 0.5 (the quantum 2^-1 below 2^emin = 1): tiny and inexact.
  EXPECT_RES(convert<float4_e2m1>(from_float(0.25f), rne), 0x0, U | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(0.25f), rna), 0x1, U | X);
  EXPECT_RES(convert<float4_e2m1>(from_float(-0.25f), rne), 0x8, U | X);
  // 0.75 between 0.5 (k = 1, odd) and 1.0 (k = 2): RNE -> 1.0; with an unbounded exponent 0.75 is
  // exact (1.1 x 2^-1) and below 2^emin, so tiny after rounding too: underflow.
  EXPECT_RES(convert<float4_e2m1>(from_float(0.75f), rne), 0x2, U | X);
  // fma(3, 3, -4) = 5: one rounding, the tie to 4.
  EXPECT_RES(fma(Q(0x5), Q(0x5), Q(0xE), rne), 0x6, X);
  // 4 * 1.5 = 6 exactly.
  EXPECT_RES(mul(Q(0x6), Q(0x3), rne), 0x7, 0);
  // 3 - 3 = +0; downward -0.
  EXPECT_RES(sub(Q(0x5), Q(0x5), rne), 0x0, 0);
  EXPECT_RES(sub(Q(0x5), Q(0x5), mode_env(round_mode::downward)), 0x8, 0);
}

// No Inf, no NaN: infinite results are +-max with overflow + inexact; NaN results +max with invalid,
// under every NaN policy and mode.
TEST(MXFormats, SpecialResults) {
  const float inf = __builtin_inff(), nan = __builtin_nanf("");
  for (round_mode m : kModes) {
    for (nan_policy p : {nan_policy::ieee, nan_policy::cuda, nan_policy::pytorch}) {
      env e = mode_env(m);
      e.nan = p;
      EXPECT_RES(convert<float4_e2m1>(from_float(inf), e), 0x7, O | X);
      EXPECT_RES(convert<float4_e2m1>(from_float(-inf), e), 0xF, O | X);
      EXPECT_RES(convert<float6_e3m2>(from_float(-inf), e), 0x3F, O | X);
      EXPECT_RES(convert<float4_e2m1>(from_float(nan), e), 0x7, V);
      EXPECT_RES(convert<float4_e2m1>(from_float(-nan), e), 0x7, V);
      EXPECT_RES(convert<float6_e2m3>(f32::from_bits(0x7F800001), e), 0x1F, V); // sNaN
      EXPECT_RES(div(Q(0x2), Q(0x0), e), 0x7, Z | O | X);
      EXPECT_RES(div(Q(0x2), Q(0x8), e), 0xF, Z | O | X);
      EXPECT_RES(div(Q(0x0), Q(0x0), e), 0x7, V);
      EXPECT_RES(sqrt(Q(0xA), e), 0x7, V);
      EXPECT_RES(add_to<float4_e2m1>(from_float(inf), from_float(-inf), e), 0x7, V);
    }
  }
  // Back to binary32: every encoding is a finite number, converted exactly.
  EXPECT_RES(convert<binary32>(Q(0x7), env{}), 0x40C00000u, 0);
  EXPECT_RES(convert<binary32>(e3m2::from_bits(0x3F), env{}), 0xC1E00000u, 0);
}

// binary32 -> each MX format in every mode, against the oracle: every bf16 pattern widened to
// binary32 (all exponents, 8-bit significands: guard, round and sticky all exercised) and 2^14
// random binary32 patterns.
template <class F> void from_binary32(coretest::tally &t) {
  using namespace coretest;
  const long long structured = 1ll << 16, randoms = 1ll << 14, n = structured + randoms;
  parallel_for(n * round_mode_count, [&](long long i) {
    const long long k = i % n;
    const std::uint32_t bits = k < structured
                                   ? std::uint32_t(k) << 16
                                   : std::uint32_t(hash32(std::uint64_t(k) * 0x9E3779B97F4A7C15ull));
    env e = mode_env(round_mode(i / n));
    e.random = hash32(std::uint64_t(i) ^ 0xABCDEFull);
    check_result(
        t, convert<F>(f32::from_bits(bits), e), oracle::convert({bits, oracle::fp32}, ofmt<F>(), oenv(e)),
        [&] { return "convert fp32->" + oracle::name(ofmt<F>()) + " x=" + hex(bits) + " " + env_string(e); });
  });
}

TEST(MXFormats, FromBinary32EveryMode) {
  coretest::tally t;
  from_binary32<float6_e2m3>(t);
  from_binary32<float6_e3m2>(t);
  from_binary32<float4_e2m1>(t);
  EXPECT_EQ(t.cases.load(), 3 * ((1ll << 16) + (1ll << 14)) * round_mode_count);
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("binary32 -> e2m3, e3m2, e2m1: %lld checks, %lld mismatches\n", t.cases.load(), t.bad.load());
}

// UE8M0, derived by hand: value 2^(bits - 127), rounding to a power of two (candidates 2^n and
// 2^(n+1) for 2^n <= x < 2^(n+1); the midpoint is 1.5 * 2^n and 2^n has the odd significand 1).
TEST(MXScale, Ue8m0Values) {
  EXPECT_EQ(to_binary32(ue8m0::from_bits(127)).bits, 0x3F800000u); // 1
  EXPECT_EQ(to_binary32(ue8m0::from_bits(0)).bits, 0x00400000u);   // 2^-127
  EXPECT_EQ(to_binary32(ue8m0::from_bits(254)).bits, 0x7F000000u); // 2^127
  EXPECT_TRUE(ue8m0::from_bits(255).is_nan());
  EXPECT_FALSE(ue8m0::from_bits(0).is_nan());
  EXPECT_EQ(ue8m0::from_bits(3).exponent(), -124);
  const env rne = mode_env(round_mode::nearest_even);
  auto bits = [](ue8m0_result r) { return int(r.value.bits); };
  EXPECT_EQ(bits(to_ue8m0(from_float(1.f), rne)), 127);
  EXPECT_EQ(to_ue8m0(from_float(1.f), rne).flags, 0);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.25f), rne)), 127);
  EXPECT_EQ(to_ue8m0(from_float(1.25f), rne).flags, X);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.5f), rne)), 128); // tie: 1 is odd (1), 2 = 10b even
  EXPECT_EQ(bits(to_ue8m0(from_float(1.5f), mode_env(round_mode::nearest_away))), 128);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.5f), mode_env(round_mode::toward_zero))), 127);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.5f), mode_env(round_mode::to_odd))), 127);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.0001f), mode_env(round_mode::upward))), 128);
  EXPECT_EQ(bits(to_ue8m0(from_float(1.9f), mode_env(round_mode::downward))), 127);
  EXPECT_EQ(bits(to_ue8m0(from_float(3.f), rne)), 129);    // 3 = 1.5 * 2: tie to 4
  EXPECT_EQ(bits(to_ue8m0(from_float(0.375f), rne)), 126); // 1.5 * 2^-2: tie to 2^-1
  // Overflow: 1.75 * 2^127 rounds to 2^128: NaN (nearest) or 2^127 (toward zero, saturate).
  const f32 big = f32::from_bits(0x7F600000u);
  EXPECT_EQ(bits(to_ue8m0(big, rne)), 255);
  EXPECT_EQ(to_ue8m0(big, rne).flags, O | X);
  EXPECT_EQ(bits(to_ue8m0(big, mode_env(round_mode::toward_zero))), 254);
  EXPECT_EQ(to_ue8m0(big, mode_env(round_mode::toward_zero)).flags, X);
  env sat = rne;
  sat.saturate = true;
  EXPECT_EQ(bits(to_ue8m0(big, sat)), 254);
  EXPECT_EQ(to_ue8m0(big, sat).flags, O | X);
  // No zero, no sign, no infinity.
  EXPECT_EQ(bits(to_ue8m0(from_float(0.f), rne)), 0);
  EXPECT_EQ(to_ue8m0(from_float(-0.f), rne).flags, U | X);
  EXPECT_EQ(bits(to_ue8m0(f32::from_bits(0x00000001u), rne)), 0); // 2^-149
  EXPECT_EQ(to_ue8m0(f32::from_bits(0x00000001u), rne).flags, U | X);
  EXPECT_EQ(bits(to_ue8m0(f32::from_bits(0x00400000u), rne)), 0); // 2^-127 exactly
  EXPECT_EQ(to_ue8m0(f32::from_bits(0x00400000u), rne).flags, 0);
  EXPECT_EQ(bits(to_ue8m0(from_float(-2.f), rne)), 255);
  EXPECT_EQ(to_ue8m0(from_float(-2.f), rne).flags, V);
  EXPECT_EQ(bits(to_ue8m0(from_float(__builtin_inff()), rne)), 255);
  EXPECT_EQ(to_ue8m0(from_float(__builtin_inff()), rne).flags, V);
  EXPECT_EQ(bits(to_ue8m0(from_float(__builtin_inff()), sat)), 254);
  EXPECT_EQ(to_ue8m0(from_float(__builtin_inff()), sat).flags, 0);
  EXPECT_EQ(bits(to_ue8m0(from_float(__builtin_nanf("")), rne)), 255);
  EXPECT_EQ(to_ue8m0(f32::from_bits(0x7F800001u), rne).flags, V);
  // NVFP4's UE4M3: the sign bit is ignored.
  EXPECT_EQ(to_double(ue4m3_value(0xB8)), 1.0);
  EXPECT_EQ(to_double(ue4m3_value(0x7E)), 448.0);
}

// Above 2^-126 a power-of-two result is exactly what a binary format with 8 exponent bits and no
// fraction bits gives (bits = biased exponent; overflow to its Inf pattern 0xFF or max 0xFE): the
// oracle's E8M0 descriptor checks every mode on all bf16-widened positive normal patterns and
// 2^14 random ones.
TEST(MXScale, Ue8m0AgainstOracle) {
  coretest::tally t;
  const oracle::format e8m0{8, 0};
  const long long structured = 1ll << 15, randoms = 1ll << 14, n = structured + randoms;
  coretest::parallel_for(n * round_mode_count * 2, [&](long long i) {
    const long long k = i % n;
    std::uint32_t bits = k < structured ? std::uint32_t(k) << 16 : coretest::hash32(std::uint64_t(k) * 977);
    bits &= 0x7FFFFFFFu;
    if ((bits >> 23) == 0 || (bits >> 23) == 0xFF) return; // zero, subnormal, Inf, NaN: by hand above
    env e = mode_env(round_mode((i / n) % round_mode_count));
    e.saturate = i / (n * round_mode_count) != 0;
    e.random = coretest::hash32(std::uint64_t(i));
    const ue8m0_result r = to_ue8m0(f32::from_bits(bits), e);
    const oracle::result o = oracle::convert({bits, oracle::fp32}, e8m0, coretest::oenv(e));
    ++t.cases;
    if (r.value.bits != o.bits || r.flags != o.flags)
      t.fail("ue8m0 x=" + hex(bits) + " " + coretest::env_string(e) + ": core " + hex(r.value.bits) +
             " flags " + oracle::flags_string(r.flags) + ", oracle " + hex(o.bits) + " flags " +
             oracle::flags_string(o.flags));
  });
  EXPECT_GT(t.cases.load(), 600000);
  EXPECT_EQ(t.bad.load(), 0) << t.report();
}

// The MX block quantizer, by hand.
TEST(MXScale, QuantizeBlock) {
  float in[32] = {};
  in[0] = 1.f, in[1] = 3.f, in[2] = -5.f, in[3] = 0.1f;
  f32 v[32];
  for (int i = 0; i < 32; ++i)
    v[i] = from_float(in[i]);
  e2m1 p[32];
  std::uint8_t fl = 0;
  // max 5: floor(log2 5) = 2 = emax(e2m1), X = 2^0; -5 ties to -4; 0.1 < 0.25 rounds to 0.
  ue8m0 x = quantize_mx_block(v, 32, p, env{}, fl);
  EXPECT_EQ(x.bits, 127);
  EXPECT_EQ(p[0].bits, 0x2);
  EXPECT_EQ(p[1].bits, 0x5);
  EXPECT_EQ(p[2].bits, 0xE);
  EXPECT_EQ(p[3].bits, 0x0);
  EXPECT_EQ(p[31].bits, 0x0);
  EXPECT_EQ(fl, U | X);
  // max 100: floor(log2 100) = 6, X = 2^4: 100/16 = 6.25 -> 6; 20/16 = 1.25 ties to 1.
  v[0] = from_float(100.f), v[1] = from_float(20.f), v[2] = from_float(-2.f), v[3] = from_float(0.f);
  x = quantize_mx_block(v, 4, p, env{}, fl);
  EXPECT_EQ(x.bits, 131);
  EXPECT_EQ(p[0].bits, 0x7);
  EXPECT_EQ(p[1].bits, 0x2);
  EXPECT_EQ(p[2].bits, 0x8); // -2/16 = -0.125 is below the midpoint 0.25: -0
  EXPECT_EQ(fl, U | X);
  // max 7.5: X = 2^0 and 7.5 rounds to 8, clamped to 6 (overflow); e2m3 holds 7.5 exactly.
  v[0] = from_float(7.5f);
  x = quantize_mx_block(v, 1, p, env{}, fl);
  EXPECT_EQ(x.bits, 127);
  EXPECT_EQ(p[0].bits, 0x7);
  EXPECT_EQ(fl, O | X);
  e2m3 p6[1];
  x = quantize_mx_block(v, 1, p6, env{}, fl);
  EXPECT_EQ(x.bits, 127);
  EXPECT_EQ(p6[0].bits, 0x1F);
  EXPECT_EQ(fl, 0);
  // e4m3 elements (emax 8), max 448 * 4: X = 2^(10 - 8) = 4, elements saturate, no NaN.
  v[0] = from_float(1792.f), v[1] = from_float(1800.f);
  e4m3 p8[2];
  x = quantize_mx_block(v, 2, p8, env{}, fl);
  EXPECT_EQ(x.bits, 129);
  EXPECT_EQ(p8[0].bits, 0x7E);
  EXPECT_EQ(p8[1].bits, 0x7E); // 450 rounds to 448 (the next would be 480)
  EXPECT_EQ(fl, X);
  // All zeros: max counts as 2^-126, e = -128 clamps to -127: X = 2^-127.
  for (auto &z : v)
    z = from_float(0.f);
  x = quantize_mx_block(v, 32, p, env{}, fl);
  EXPECT_EQ(x.bits, 0);
  EXPECT_EQ(fl, 0);
  // A NaN or Inf makes the scale NaN; a scale above 2^127 too (fp64 input 2^200).
  v[5] = from_float(__builtin_inff());
  EXPECT_TRUE(quantize_mx_block(v, 32, p, env{}, fl).is_nan());
  const f64 huge[1] = {from_double(0x1p200)};
  EXPECT_TRUE(quantize_mx_block(huge, 1, p, env{}, fl).is_nan());
  const f64 tiny[1] = {from_double(0x1p-140)}; // e = -142 clamps to -127: 2^-13 rounds to 0
  x = quantize_mx_block(tiny, 1, p, env{}, fl);
  EXPECT_EQ(x.bits, 0);
  EXPECT_EQ(p[0].bits, 0x0);
  EXPECT_EQ(fl, U | X);
}

} // namespace
