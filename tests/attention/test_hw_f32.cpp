// The host-FP32 path of f32_ops (attention/arith.hpp, hw_f32) against the core's soft-float
// path, bit for bit: every operation the attention policies use, on random FP32 operands of
// every class and on operands built to give ties, subnormal results and overflow. The core is
// the reference here (it is proved against MPFR and TestFloat in the core tiers); the probe of
// the floating-point environment must refuse every mode in which the host's bits would differ.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define BF16EMU_TEST_MXCSR 1
#endif

#include "bf16emu/attention.hpp"
#if defined(BF16EMU_HAVE_TC_LANES)
#include "tc_lanes/tc_lanes.hpp"
#endif

namespace at = bf16emu::attention;
using at::site;

namespace {
std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
double f32_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return double(f);
}

// FP32 operands that reach every class: any bit pattern; normal numbers with short
// significands (exact products and sums whose rounding is a tie); subnormals and numbers near
// the overflow threshold.
struct operands {
  std::mt19937_64 rng{20261128};
  double next() {
    const std::uint32_t r = std::uint32_t(rng());
    const std::uint32_t sign = r & 0x80000000u;
    switch (rng() % 6) {
    case 0: return f32_of(r); // any pattern (NaN, Inf, subnormal, normal)
    case 1: {                 // short significand: products and sums often tie
      const std::uint32_t e = 100u + std::uint32_t(rng() % 56);
      const std::uint32_t m = std::uint32_t(rng()) & 0x7ff000u;
      return f32_of(sign | e << 23 | m);
    }
    case 2: return f32_of(sign | (std::uint32_t(rng()) & 0x007fffffu));                 // subnormal
    case 3: return f32_of(sign | (0x7c000000u + (std::uint32_t(rng()) & 0x037fffffu))); // huge
    case 4: return f32_of(sign | (0x3c000000u + (std::uint32_t(rng()) & 0x07ffffffu))); // near 1
    default: return f32_of(sign | (std::uint32_t(rng() % 40) << 23) | (std::uint32_t(rng()) & 0x7fffffu));
    }
  }
};

struct pair_of_ops {
  at::null_observer none;
  at::f32_ops<at::null_observer> hw{&none};
  at::f32_ops<at::null_observer> soft{&none, nullptr, false};
};

constexpr int cases = 400000;
} // namespace

TEST(HwF32, ProbeAcceptsTheDefaultEnvironment) {
  // Every CI machine runs in the default environment; without this the comparisons below
  // would compare the core with itself.
  ASSERT_TRUE(at::hw_f32::env_is_ieee_rne());
  pair_of_ops p;
  ASSERT_TRUE(p.hw.hw);
  ASSERT_FALSE(p.soft.hw);
  at::f32_ops<at::ledger> with_ledger{nullptr};
  EXPECT_FALSE(with_ledger.hw); // a ledger needs the core's events
}

TEST(HwF32, ProbeRefusesOtherRoundingModes) {
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    const bool ok = at::hw_f32::env_is_ieee_rne();
    std::fesetround(FE_TONEAREST);
    EXPECT_FALSE(ok) << mode;
  }
  EXPECT_TRUE(at::hw_f32::env_is_ieee_rne());
}

#if defined(BF16EMU_TEST_MXCSR)
TEST(HwF32, ProbeRefusesFlushToZeroAndDenormalsAreZero) {
  const unsigned saved = _mm_getcsr();
  for (unsigned bit : {0x8000u /* FTZ */, 0x0040u /* DAZ */}) {
    _mm_setcsr(saved | bit);
    const bool ok = at::hw_f32::env_is_ieee_rne();
    _mm_setcsr(saved);
    EXPECT_FALSE(ok) << std::hex << bit;
  }
  EXPECT_TRUE(at::hw_f32::env_is_ieee_rne());
}
#endif

TEST(HwF32, ArithmeticMatchesTheCoreBitForBit) {
  pair_of_ops p;
  ASSERT_TRUE(p.hw.hw);
  operands g;
  long mismatches = 0, nan_results = 0;
  auto check = [&](const char *op, double h, double s, double a, double b, double c) {
    if (std::isnan(s)) ++nan_results;
    if (bits(h) != bits(s) && ++mismatches <= 10)
      ADD_FAILURE() << op << "(" << a << ", " << b << ", " << c << "): host " << h << ", core " << s;
  };
  for (int i = 0; i < cases; ++i) {
    const double a = g.next(), b = g.next(), c = g.next();
    check("add", p.hw.add(a, b, site::row_sum), p.soft.add(a, b, site::row_sum), a, b, 0);
    check("sub", p.hw.sub(a, b, site::rescale), p.soft.sub(a, b, site::rescale), a, b, 0);
    check("mul", p.hw.mul(a, b, site::rescale), p.soft.mul(a, b, site::rescale), a, b, 0);
    check("div", p.hw.div(a, b, site::normalize), p.soft.div(a, b, site::normalize), a, b, 0);
    check("fma", p.hw.fma(a, b, c, site::pv), p.soft.fma(a, b, c, site::pv), a, b, c);
    if (std::isfinite(a) && std::isfinite(b) && a != 0 && b != 0) {
      // sums formed to tie (half an ulp of a) or to fall just beside a tie (b's significand
      // moved to start at a's half-ulp bit)
      const double half = std::copysign(std::ldexp(1.0, std::ilogb(a) - 24), b);
      const double near = std::ldexp(b, std::ilogb(a) - std::ilogb(b) - 24);
      for (double d : {half, near})
        check("add-tie", p.hw.add(a, d, site::row_sum), p.soft.add(a, d, site::row_sum), a, d, 0);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of about " << 7L * cases << " operations";
  EXPECT_GT(nan_results, 1000); // the NaN path (the core's rule) was taken
}

TEST(HwF32, RoundingsMatchTheCoreBitForBit) {
  pair_of_ops p;
  operands g;
  std::mt19937_64 rng(7);
  long mismatches = 0;
  auto check = [&](const char *op, double h, double s, double x) {
    if (bits(h) != bits(s) && ++mismatches <= 10)
      ADD_FAILURE() << op << "(" << x << "): host " << h << ", core " << s;
  };
  for (int i = 0; i < cases; ++i) {
    const double x32 = g.next(); // an FP32 value
    double x64;                  // any binary64 value, often near FP32 ties
    const std::uint64_t r = rng();
    std::memcpy(&x64, &r, 8);
    if (i % 2) x64 = x32 + std::ldexp(x32, -25 - int(rng() % 8)) * (rng() % 2 ? 1 : -1);
    for (double x : {x32, x64}) {
      check("to32", p.hw.to32(x, site::lse), p.soft.to32(x, site::lse), x);
      check("to16", p.hw.to16(x, site::p_to_bf16), p.soft.to16(x, site::p_to_bf16), x);
    }
    const double xb = p.soft.to16(x32, site::p_to_bf16);
    if (!std::isnan(xb)) {
      EXPECT_EQ(at::of(at::as_bf16(xb)), xb);
    }
    const bf16emu::bf16 ref = bf16emu::convert<bf16emu::bfloat16>(bf16emu::from_double(x64)).value;
    if (!ref.is_nan()) {
      EXPECT_EQ(at::as_bf16(x64).bits, ref.bits) << x64;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << 4L * cases << " roundings";
}

TEST(HwF32, Exp2MatchesTheCoreBitForBit) {
  pair_of_ops p;
  operands g;
  std::mt19937_64 rng(11);
  long mismatches = 0;
  for (int i = 0; i < cases; ++i) {
    // the exponent arguments attention forms (mostly in [-150, 0]) and any FP32 value
    const double x = i % 4 ? double(float(-std::ldexp(double(rng() % (1u << 24)), -16))) : g.next();
    for (bool poly : {true, false}) {
      const double h = at::exp2_f32(p.hw, x, poly, site::exp), s = at::exp2_f32(p.soft, x, poly, site::exp);
      if (bits(h) != bits(s) && ++mismatches <= 10)
        ADD_FAILURE() << "exp2 " << (poly ? "poly" : "rn") << "(" << x << "): host " << h << ", core " << s;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << 2L * cases << " exp2";
}

// FP32 FMA chains across columns (hw_f32::fma_cols): every column against the core's chain of
// fma on the same operands, for the scalar loop and, where linked, the SIMD kernel
// (src/tc_lanes/fma_cols.cpp), over lengths and column counts that reach every tail of the
// kernel's 4-vector, 1-vector and scalar loops, on operands of every class.
namespace {
using chains_fn = void (*)(const float *, std::ptrdiff_t, const float *, std::ptrdiff_t, long, long, float *);

long chain_mismatches(chains_fn kernel, long &columns, long &nan_columns, long &default_nans) {
  at::hw_f32::fma_cols_hook.store(kernel);
  operands g;
  std::mt19937_64 rng(5);
  long bad = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const long k = long(rng() % 41), ncols = 1 + long(rng() % 90), sa = 1 + long(rng() % 3),
               sb = ncols + long(rng() % 5);
    // operands: data-like numbers (most trials) or every class (the rest), with Inf and zeros
    // often enough that products Inf x 0 and sums Inf - Inf (invalid: the default NaN) occur
    const bool any_class = trial % 4 == 0;
    auto next = [&] {
      static const float inf = std::numeric_limits<float>::infinity(), edge[] = {inf, -inf, 0.0f, -0.0f};
      if (any_class && rng() % 16 == 0) return edge[rng() % 4];
      return any_class ? float(g.next())
                       : float(std::ldexp(double(int(rng() % 4001) - 2000), -int(rng() % 30)));
    };
    std::vector<float> a(std::size_t(k * sa + 1)), b(std::size_t(k * sb + ncols)),
        c(static_cast<std::size_t>(ncols));
    for (float &x : a)
      x = next();
    for (float &x : b)
      x = next();
    for (float &x : c)
      x = next();
    std::vector<float> out = c;
    at::hw_f32::fma_cols(a.data(), sa, b.data(), sb, k, ncols, out.data());
    for (long j = 0; j < ncols; ++j) {
      bf16emu::f32 x = bf16emu::from_float(c[j]);
      for (long t = 0; t < k; ++t)
        x = bf16emu::fma(bf16emu::from_float(a[t * sa]), bf16emu::from_float(b[t * sb + j]), x).value;
      ++columns;
      if (x.is_nan()) ++nan_columns, default_nans += (x.bits & 0x7fffffffu) == 0x7fc00000u;
      std::uint32_t got;
      std::memcpy(&got, &out[j], 4);
      if (got != x.bits && ++bad <= 10)
        ADD_FAILURE() << "k " << k << " ncols " << ncols << " column " << j << ": got 0x" << std::hex << got
                      << ", core 0x" << x.bits;
    }
  }
  at::hw_f32::fma_cols_hook.store(nullptr);
  return bad;
}
} // namespace

TEST(HwF32, FmaChainsMatchTheCoreBitForBit) {
  long columns = 0, nan_columns = 0, default_nans = 0;
  EXPECT_EQ(chain_mismatches(nullptr, columns, nan_columns, default_nans), 0)
      << "scalar loop, of " << columns << " columns";
  // the NaN path (recomputed by the core) was taken, for invalid operations too (whose default
  // NaN differs between the core and x86)
  EXPECT_GT(nan_columns, 1000);
  EXPECT_GT(default_nans, 300);
  std::printf("scalar loop: %ld columns, %ld of them NaN (%ld the default NaN)\n", columns, nan_columns,
              default_nans);
#if defined(BF16EMU_HAVE_TC_LANES)
  columns = nan_columns = default_nans = 0;
  EXPECT_EQ(chain_mismatches(&bf16emu::tc_lanes::fma_cols, columns, nan_columns, default_nans), 0)
      << "SIMD kernel (" << bf16emu::tc_lanes::target_name() << "), of " << columns << " columns";
  std::printf("SIMD kernel (%s): %ld columns, %ld of them NaN\n", bf16emu::tc_lanes::target_name(), columns,
              nan_columns);
#endif
}

// Whole heads of the policies whose products are FP32 FMA chains (fp32, paper:bf16,
// paper:autocast): forward, reference backward and tiled backward with the host path (its
// chains as the scalar loop and as the SIMD kernel) against the core's soft-float, every output
// bit for bit. The second input has rows of Q scaled by 2^100 (scores beyond FP32's range), the
// third an Inf and a -Inf in one column of V, so Inf and NaN run through the chains (Inf x 0,
// Inf - Inf: the default NaN) and the softmax.
TEST(HwF32, FmaChainsGiveTheCoreBitsOnWholeHeads) {
  struct outputs {
    std::vector<double> o, lse, delta, dq, dk, dv, tdq, tdk, tdv;
  };
  auto run = [](const at::attention_inputs &in, const at::forward_config &c) {
    at::null_observer none;
    const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
    at::backward_config b;
    b.kind = at::backward_kind::tiled, b.block_m = 16, b.block_n = 48;
    const at::forward_result f = at::forward_head(c, h, none);
    const at::backward_result r = at::backward_head(c, h, in.dout.data(), f, none);
    const at::backward_result t = at::backward_fa2_head(c, b, h, in.dout.data(), f, none);
    return outputs{f.o, f.lse, r.delta, r.dq, r.dk, r.dv, t.dq, t.dk, t.dv};
  };
  std::vector<chains_fn> kernels{nullptr};
#if defined(BF16EMU_HAVE_TC_LANES)
  kernels.push_back(&bf16emu::tc_lanes::fma_cols);
#endif
  at::attention_inputs plain = at::scenario_random(1, 1, 70, 40, 3), hot = plain;
  for (long row = 5; row < hot.n; row += 9)
    for (long x = 0; x < hot.d; ++x)
      hot.q[row * hot.d + x] = std::ldexp(hot.q[row * hot.d + x], 100);
  at::attention_inputs inf = plain;
  inf.v[(inf.n - 9) * inf.d + 5] = HUGE_VAL, inf.v[(inf.n - 4) * inf.d + 5] = -HUGE_VAL;
  long values = 0, nans = 0, default_nans = 0;
  for (const char *policy : {"fp32", "paper:bf16", "paper:autocast"})
    for (bool causal : {false, true})
      for (const at::attention_inputs *in : {&plain, &hot, &inf}) {
        at::forward_config c;
        ASSERT_TRUE(at::parse_policy(policy, c.pol));
        c.var = at::variant::fa2, c.causal = causal;
        if (c.pol.paper_arith != at::paper_dtypes::autocast) c.pol.block_m = 16, c.pol.block_n = 48;
        at::hw_f32::enabled.store(false);
        const outputs soft = run(*in, c);
        at::hw_f32::enabled.store(true);
        for (chains_fn kernel : kernels) {
          at::hw_f32::fma_cols_hook.store(kernel);
          const outputs host = run(*in, c);
          at::hw_f32::fma_cols_hook.store(nullptr);
          const std::vector<double> outputs::*all[] = {&outputs::o,   &outputs::lse, &outputs::delta,
                                                       &outputs::dq,  &outputs::dk,  &outputs::dv,
                                                       &outputs::tdq, &outputs::tdk, &outputs::tdv};
          static const char *const names[] = {"O",  "L",        "delta",    "dQ",      "dK",
                                              "dV", "tiled dQ", "tiled dK", "tiled dV"};
          for (int mi = 0; mi < 9; ++mi) {
            const auto m = all[mi];
            ASSERT_EQ((host.*m).size(), (soft.*m).size());
            long bad = 0;
            for (std::size_t i = 0; i < (soft.*m).size(); ++i) {
              ++values, nans += std::isnan((soft.*m)[i]);
              default_nans += std::isnan((soft.*m)[i]) && (bits((soft.*m)[i]) << 1) == 0xfff0000000000000u;
              if (bits((host.*m)[i]) != bits((soft.*m)[i]) && ++bad <= 3)
                ADD_FAILURE() << policy << (causal ? " causal" : "")
                              << (in == &hot   ? " hot"
                                  : in == &inf ? " inf"
                                               : "")
                              << (kernel ? " SIMD" : " loop") << " " << names[mi] << " [" << i << "]: host "
                              << (host.*m)[i] << ", core " << (soft.*m)[i];
            }
          }
        }
      }
  EXPECT_GT(nans, 100); // the hot input put NaN through the chains
  EXPECT_GT(default_nans, 100);
  std::printf("%ld output values compared, %ld of them NaN (%ld the default NaN)\n", values, nans,
              default_nans);
}
