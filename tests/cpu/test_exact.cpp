// The x86 and Arm dot-product models against exact arithmetic: each manual step is evaluated by
// the independent cpp_int oracle (tests/oracle, no bf16emu code), with the manuals' special rules
// (x86 indefinite NaN, Arm overflow-to-Inf and default NaN) written here from the pseudo-code.
// >= 10^5 random lanes per model, from four generators: normal values, random bit patterns
// (denormals, Inf, NaN), near-cancelling sums and large exponent spreads.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "bf16emu/cpu.hpp"
#include "oracle.hpp"

namespace {

using u16 = std::uint16_t;
using u32 = std::uint32_t;

constexpr int lanes = 100000;

bool nan32(u32 x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0; }

struct lane {
  u16 a[8], b[8];
  u32 c;
};

// ---- generators -----------------------------------------------------------------------------
struct gen {
  std::mt19937_64 rng;
  explicit gen(std::uint64_t seed) : rng(seed) {}
  u32 bits(int n) { return u32(rng() & ((std::uint64_t{1} << n) - 1)); }
  u16 bf_exp(int lo, int hi) { // random sign and fraction, biased exponent in [lo, hi]
    const u32 e = u32(lo + int(rng() % u32(hi - lo + 1)));
    return u16((bits(1) << 15) | (e << 7) | bits(7));
  }
  u32 f32_exp(int lo, int hi) {
    const u32 e = u32(lo + int(rng() % u32(hi - lo + 1)));
    return (bits(1) << 31) | (e << 23) | bits(23);
  }
  u16 bf_any() {
    static constexpr u16 special[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80,
                                      0x7FC0, 0x7F81, 0xFFA5, 0x7F7F, 0x0080};
    return (rng() & 7) == 0 ? special[rng() % (sizeof(special) / sizeof(special[0]))] : u16(bits(16));
  }
  u32 f32_any() {
    static constexpr u32 special[] = {0,           0x80000000u, 1,           0x807FFFFFu, 0x7F800000u,
                                      0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x7F7FFFFFu};
    return (rng() & 7) == 0 ? special[rng() % (sizeof(special) / sizeof(special[0]))] : bits(32);
  }
  static float to_f(u32 x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static u32 from_f(float f) {
    u32 x;
    std::memcpy(&x, &f, 4);
    return x;
  }
  static double bfv(u16 x) { return double(to_f(u32(x) << 16)); }

  lane make(int kind, int k) {
    lane l{};
    switch (kind) {
    case 0: // normal values of moderate range
      for (int i = 0; i < k; ++i) {
        l.a[i] = bf_exp(110, 144);
        l.b[i] = bf_exp(110, 144);
      }
      l.c = f32_exp(100, 154);
      break;
    case 1: // random bit patterns with denormals, Inf, NaN
      for (int i = 0; i < k; ++i) {
        l.a[i] = bf_any();
        l.b[i] = bf_any();
      }
      l.c = f32_any();
      break;
    case 2: { // near cancellation: products and accumulator nearly cancel
      double s = 0;
      for (int i = 0; i < k; ++i) {
        l.a[i] = bf_exp(120, 134);
        l.b[i] = bf_exp(120, 134);
        if (i % 2 == 1) { // negate the previous product, perturbed in the last bits
          l.a[i] = u16((l.a[i - 1] ^ 0x8000) + u16(int(rng() % 5) - 2));
          l.b[i] = l.b[i - 1];
        }
        s += bfv(l.a[i]) * bfv(l.b[i]);
      }
      const u32 base = from_f(float(-s));
      l.c = (rng() & 1) ? base + u32(int(rng() % 9) - 4) : base;
      if (s == 0) l.c = f32_exp(60, 130);
      break;
    }
    default: // large exponent spreads, including the denormal and overflow edges
      for (int i = 0; i < k; ++i) {
        l.a[i] = bf_exp(1, 254);
        l.b[i] = bf_exp(1, 254);
      }
      l.c = f32_exp(1, 254);
      break;
    }
    return l;
  }
};

// ---- the manuals' steps, on the oracle --------------------------------------------------------
const oracle::format wide{11, 23}; // holds a BF16 x BF16 product exactly

oracle::environment x86_env() {
  oracle::environment e;
  e.mode = oracle::rounding::nearest_even;
  e.tiny = oracle::tininess::after_rounding;
  e.nan = oracle::nan_policy::ieee;
  e.flush_outputs = true;
  e.inputs_as_zero = true;
  return e;
}

// SDM: FP32 FMA, DAZ=FTZ=1, RNE; invalid without NaN operands gives the QNaN indefinite.
u32 x86_fma(u16 a, u16 b, u32 c) {
  const u32 fa = u32(a) << 16, fb = u32(b) << 16;
  const oracle::result r =
      oracle::fma({fa, oracle::fp32}, {fb, oracle::fp32}, {c, oracle::fp32}, oracle::fp32, x86_env());
  if (nan32(u32(r.bits)) && !nan32(fa) && !nan32(fb) && !nan32(c)) return 0xFFC00000u;
  return u32(r.bits);
}

u32 ref_vdpbf16ps(const lane &l) { return x86_fma(l.a[0], l.b[0], x86_fma(l.a[1], l.b[1], l.c)); }

u32 ref_tdpbf16ps(const lane &l, int pairs) {
  u32 t = l.c;
  for (int k = 0; k < pairs; ++k) {
    t = x86_fma(l.a[2 * k], l.b[2 * k], t);
    t = x86_fma(l.a[2 * k + 1], l.b[2 * k + 1], t);
  }
  return t;
}

// Arm BFRound: round to odd, flush if the unrounded exponent < -126, overflow -> signed Inf,
// and BFMul / BFAdd: any NaN operand or invalid operation gives the default NaN.
oracle::environment bf_env() {
  oracle::environment e;
  e.mode = oracle::rounding::to_odd;
  e.tiny = oracle::tininess::before_rounding;
  e.nan = oracle::nan_policy::pytorch;
  e.flush_outputs = true;
  e.inputs_as_zero = true;
  return e;
}
u32 bf_fix(const oracle::result &r) {
  if (r.flags & oracle::flags::overflow) return u32(r.bits & 0x80000000u) | 0x7F800000u;
  return u32(r.bits);
}
u32 ref_bfdot0(u32 c, u16 a0, u16 a1, u16 b0, u16 b1) {
  const u32 p0 = bf_fix(oracle::mul({a0, oracle::bf16}, {b0, oracle::bf16}, oracle::fp32, bf_env()));
  const u32 p1 = bf_fix(oracle::mul({a1, oracle::bf16}, {b1, oracle::bf16}, oracle::fp32, bf_env()));
  const u32 s = bf_fix(oracle::add({p0, oracle::fp32}, {p1, oracle::fp32}, oracle::fp32, bf_env()));
  return bf_fix(oracle::add({c, oracle::fp32}, {s, oracle::fp32}, oracle::fp32, bf_env()));
}

// FEAT_EBF16: FPDot (a0*b0 + a1*b1 rounded once, FPCR: RNE, FZ=0, DN forced), then FPAdd.
u32 ref_bfdot1(u32 c, u16 a0, u16 a1, u16 b0, u16 b1) {
  oracle::environment e;
  e.tiny = oracle::tininess::before_rounding;
  e.nan = oracle::nan_policy::pytorch;
  const oracle::result p1 = oracle::mul({a1, oracle::bf16}, {b1, oracle::bf16}, wide, e);
  EXPECT_FALSE(p1.flags & oracle::flags::inexact);
  const oracle::result prod =
      oracle::fma({a0, oracle::bf16}, {b0, oracle::bf16}, {p1.bits, wide}, oracle::fp32, e);
  return u32(oracle::add({c, oracle::fp32}, {prod.bits, oracle::fp32}, oracle::fp32, e).bits);
}

template <class Model, class Ref> void check(int k, std::uint64_t seed, Model model, Ref ref) {
  gen g(seed);
  int mismatches = 0;
  for (int i = 0; i < lanes; ++i) {
    const lane l = g.make(i % 4, k);
    const u32 got = model(l), want = ref(l);
    if (got != want && ++mismatches <= 5)
      ADD_FAILURE() << "lane " << i << " kind " << i % 4 << ": c=0x" << std::hex << l.c << " a0=0x" << l.a[0]
                    << " a1=0x" << l.a[1] << " b0=0x" << l.b[0] << " b1=0x" << l.b[1] << " model 0x" << got
                    << " exact 0x" << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CpuExact, Vdpbf16ps) {
  check(
      2, 1, [](const lane &l) { return bf16emu::cpu::vdpbf16ps(l.c, l.a[0], l.a[1], l.b[0], l.b[1]); },
      ref_vdpbf16ps);
}

TEST(CpuExact, Tdpbf16ps) {
  check(
      8, 2, [](const lane &l) { return bf16emu::cpu::tdpbf16ps(l.c, l.a, l.b, 4); },
      [](const lane &l) { return ref_tdpbf16ps(l, 4); });
}

TEST(CpuExact, ArmBfdotEbf0) {
  check(
      2, 3, [](const lane &l) { return bf16emu::cpu::bfdot(l.c, l.a[0], l.a[1], l.b[0], l.b[1]); },
      [](const lane &l) { return ref_bfdot0(l.c, l.a[0], l.a[1], l.b[0], l.b[1]); });
}

TEST(CpuExact, ArmBfdotEbf1) {
  bf16emu::cpu::arm_fpcr f;
  f.ebf = true;
  check(
      2, 4, [f](const lane &l) { return bf16emu::cpu::bfdot(l.c, l.a[0], l.a[1], l.b[0], l.b[1], f); },
      [](const lane &l) { return ref_bfdot1(l.c, l.a[0], l.a[1], l.b[0], l.b[1]); });
}

TEST(CpuExact, ArmBfmmlaEbf0) {
  check(
      4, 5, [](const lane &l) { return bf16emu::cpu::bfmmla(l.c, l.a, l.b); },
      [](const lane &l) {
        return ref_bfdot0(ref_bfdot0(l.c, l.a[0], l.a[1], l.b[0], l.b[1]), l.a[2], l.a[3], l.b[2], l.b[3]);
      });
}

// convert_fp32_to_bfloat16 exactly as the SDM writes it (integer rounding bias), against the
// model on a stride through all 2^32 patterns plus every pattern near the rounding boundaries.
u16 sdm_convert(u32 x) {
  const u32 exp = (x >> 23) & 0xFF, frac = x & 0x7FFFFF;
  if (exp == 0) return u16((x >> 16) & 0x8000);
  if (exp == 0xFF && frac == 0) return u16(x >> 16);
  if (exp == 0xFF) return u16((x >> 16) | 0x40);
  const u32 bias = 0x7FFF + ((x >> 16) & 1);
  return u16((x + bias) >> 16);
}

TEST(CpuExact, Cvtneps2bf16AgainstSdmFormula) {
  int mismatches = 0;
  auto one = [&](u32 x) {
    if (bf16emu::cpu::cvtneps2bf16(x) != sdm_convert(x) && ++mismatches <= 5)
      ADD_FAILURE() << "0x" << std::hex << x << ": model 0x" << bf16emu::cpu::cvtneps2bf16(x) << " SDM 0x"
                    << sdm_convert(x);
  };
  for (std::uint64_t x = 0; x < (std::uint64_t{1} << 32); x += 4099)
    one(u32(x));
  for (u32 hi = 0; hi < 0x10000; hi += 7)
    for (u32 lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      one((hi << 16) | lo);
  EXPECT_EQ(mismatches, 0);
}

} // namespace
