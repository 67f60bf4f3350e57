// Tier b: every encoding of every 4-, 6-, 8- and 16-bit format (bf16, fp16, e4m3, e5m2, and the OCP
// MX e2m3, e3m2, e2m1) through the unary operations -- sqrt (same format and into fp32), neg, abs,
// conversion to every format (fp64, fp32, bf16, fp16, tf32, e4m3, e5m2; the MX formats also to
// e2m3, e3m2, e2m1) and back -- in all 7 rounding modes, against the exact oracle. Also under
// tininess-before, flush-outputs, inputs-as-zero, flush-both, cuda and pytorch NaN policies and
// saturation. Stochastic rounding gets a random word hashed from the case.
#include <gtest/gtest.h>

#include "common.hpp"

namespace {

using namespace coretest;

std::vector<env> variants() {
  std::vector<env> v;
  for (int m = 0; m < round_mode_count; ++m) {
    env base;
    base.mode = round_mode(m);
    v.push_back(base);
    env b = base;
    b.tiny = tininess::before_rounding;
    v.push_back(b);
    env f = base;
    f.subnormal = subnormals::flush_outputs;
    v.push_back(f);
    env fb = f;
    fb.tiny = tininess::before_rounding;
    v.push_back(fb);
    env d = base;
    d.subnormal = subnormals::inputs_as_zero;
    v.push_back(d);
    env both = base;
    both.subnormal = subnormals::flush_both;
    v.push_back(both);
    env c = base;
    c.nan = nan_policy::cuda;
    v.push_back(c);
    env p = base;
    p.nan = nan_policy::pytorch;
    p.saturate = true;
    v.push_back(p);
    env s = base;
    s.saturate = true;
    v.push_back(s);
  }
  return v;
}

template <class Src, class Dst> void convert_there_and_back(std::uint64_t bits, env e, tally &t) {
  e.random = hash32(bits * 1315423911u + Dst::exp_bits * 131 + Dst::frac_bits + int(e.mode) * 7919);
  const auto x = fp<Src>::from_bits(bits);
  const auto r = convert<Dst>(x, e);
  const auto o = oracle::convert({bits, ofmt<Src>()}, ofmt<Dst>(), oenv(e));
  check_result(t, r, o, [&] {
    return "convert " + oracle::name(ofmt<Src>()) + "->" + oracle::name(ofmt<Dst>()) + " x=" + hex(bits) +
           " " + env_string(e);
  });
  // And back into the source format, from the value the oracle produced.
  const auto rb = convert<Src>(fp<Dst>::from_bits(o.bits), e);
  const auto ob = oracle::convert({o.bits, ofmt<Dst>()}, ofmt<Src>(), oenv(e));
  check_result(t, rb, ob, [&] {
    return "convert back " + oracle::name(ofmt<Dst>()) + "->" + oracle::name(ofmt<Src>()) +
           " x=" + hex(o.bits) + " " + env_string(e);
  });
}

template <class... Dst> struct targets { static constexpr long long count = sizeof...(Dst); };
using classic_targets =
    targets<binary64, binary32, bfloat16, binary16, tensorfloat32, float8_e4m3, float8_e5m2>;
using all_targets = targets<binary64, binary32, bfloat16, binary16, tensorfloat32, float8_e4m3, float8_e5m2,
                            float6_e2m3, float6_e3m2, float4_e2m1>;

template <class Src, class... Dst>
void all_unary(std::uint64_t bits, const env &e0, tally &t, targets<Dst...>) {
  env e = e0;
  e.random = hash32(bits ^ (std::uint64_t(e.mode) << 40));
  const auto x = fp<Src>::from_bits(bits);
  // sqrt into the same format and into fp32.
  check_result(t, sqrt(x, e), oracle::sqrt({bits, ofmt<Src>()}, ofmt<Src>(), oenv(e)),
               [&] { return "sqrt " + oracle::name(ofmt<Src>()) + " x=" + hex(bits) + " " + env_string(e); });
  check_result(t, sqrt_to<binary32>(x, e), oracle::sqrt({bits, ofmt<Src>()}, oracle::fp32, oenv(e)), [&] {
    return "sqrt_to fp32 " + oracle::name(ofmt<Src>()) + " x=" + hex(bits) + " " + env_string(e);
  });
  // neg and abs: the sign bit only, NaNs untouched.
  t.cases += 2;
  if (neg(x).bits != (bits ^ Src::sign_mask)) t.fail("neg " + hex(bits));
  if (abs(x).bits != (bits & ~Src::sign_mask)) t.fail("abs " + hex(bits));
  (convert_there_and_back<Src, Dst>(bits, e, t), ...);
}

template <class Src, class Targets = classic_targets> void run_all_encodings() {
  const std::vector<env> envs = variants();
  const long long n = 1ll << Src::width;
  tally t;
  parallel_for(n * static_cast<long long>(envs.size()), [&](long long i) {
    all_unary<Src>(static_cast<std::uint64_t>(i % n), envs[static_cast<std::size_t>(i / n)], t, Targets{});
  });
  // 2 sqrt + neg + abs + each target there and back: 18 checks per encoding and environment
  // for the 7 classic targets, 24 for all 10.
  EXPECT_EQ(t.cases.load(), n * static_cast<long long>(envs.size()) * (4 + 2 * Targets::count));
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("%s: %lld encodings x %zu environments, %lld checks, %lld mismatches\n",
              oracle::name(ofmt<Src>()).c_str(), n, envs.size(), t.cases.load(), t.bad.load());
}

TEST(EveryEncoding, Bfloat16) { run_all_encodings<bfloat16>(); }
TEST(EveryEncoding, Binary16) { run_all_encodings<binary16>(); }
TEST(EveryEncoding, E4M3) { run_all_encodings<float8_e4m3>(); }
TEST(EveryEncoding, E5M2) { run_all_encodings<float8_e5m2>(); }
TEST(EveryEncoding, E2M3) { run_all_encodings<float6_e2m3, all_targets>(); }
TEST(EveryEncoding, E3M2) { run_all_encodings<float6_e3m2, all_targets>(); }
TEST(EveryEncoding, E2M1) { run_all_encodings<float4_e2m1, all_targets>(); }

// The binary operations on one pair (and the addends cs for fma) in environment e.
template <class F, std::size_t N>
void pair_ops(std::uint64_t a, std::uint64_t b, const std::uint64_t (&cs)[N], std::size_t nc, const env &e,
              tally &t) {
  const auto x = fp<F>::from_bits(a), y = fp<F>::from_bits(b);
  const oracle::operand oa{a, ofmt<F>()}, ob{b, ofmt<F>()};
  const auto oe = oenv(e);
  auto what = [&](const char *op) {
    return std::string(op) + " " + oracle::name(ofmt<F>()) + " a=" + hex(a) + " b=" + hex(b) + " " +
           env_string(e);
  };
  check_result(t, add(x, y, e), oracle::add(oa, ob, ofmt<F>(), oe), [&] { return what("add"); });
  check_result(t, sub(x, y, e), oracle::sub(oa, ob, ofmt<F>(), oe), [&] { return what("sub"); });
  check_result(t, mul(x, y, e), oracle::mul(oa, ob, ofmt<F>(), oe), [&] { return what("mul"); });
  check_result(t, div(x, y, e), oracle::div(oa, ob, ofmt<F>(), oe), [&] { return what("div"); });
  // Widening products into fp32 and bf16.
  check_result(t, mul_to<binary32>(x, y, e), oracle::mul(oa, ob, oracle::fp32, oe),
               [&] { return what("mul_to fp32"); });
  for (std::size_t k = 0; k < nc; ++k) {
    const std::uint64_t c = cs[k];
    check_result(t, fma(x, y, fp<F>::from_bits(c), e), oracle::fma(oa, ob, {c, ofmt<F>()}, ofmt<F>(), oe),
                 [&] { return what("fma") + " c=" + hex(c); });
  }
}

// The 8-bit formats are small enough for every pair through every binary operation, every
// mode, both tininess settings; fma with a few addends per pair.
template <class F> void run_all_pairs() {
  tally t;
  const long long n = 1ll << F::width;
  parallel_for(n * n * round_mode_count * 2, [&](long long i) {
    const std::uint64_t a = std::uint64_t(i % n), b = std::uint64_t((i / n) % n);
    env e;
    e.mode = round_mode((i / (n * n)) % round_mode_count);
    e.tiny = (i / (n * n * round_mode_count)) ? tininess::before_rounding : tininess::after_rounding;
    e.random = hash32(std::uint64_t(i) * 0x9E3779B97F4A7C15ull);
    const std::uint64_t cs[1] = {std::uint64_t(hash32(std::uint64_t(i)) % n)};
    pair_ops<F>(a, b, cs, 1, e, t);
  });
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("%s: all pairs, 6 ops, 7 modes, 2 tininess: %lld checks, %lld mismatches\n",
              oracle::name(ofmt<F>()).c_str(), t.cases.load(), t.bad.load());
}

// The 4- and 6-bit formats: every pair in all 63 environments of variants(); fma with every
// addend for 4-bit formats and 4 hashed addends for 6-bit ones.
template <class F> void run_all_pairs_all_envs() {
  tally t;
  const std::vector<env> envs = variants();
  const long long n = 1ll << F::width;
  const std::size_t nc = F::width <= 4 ? std::size_t(n) : 4;
  const long long cases = n * n * static_cast<long long>(envs.size());
  parallel_for(cases, [&](long long i) {
    const std::uint64_t a = std::uint64_t(i % n), b = std::uint64_t((i / n) % n);
    env e = envs[static_cast<std::size_t>(i / (n * n))];
    e.random = hash32(std::uint64_t(i) * 0x9E3779B97F4A7C15ull);
    std::uint64_t cs[16] = {};
    for (std::size_t k = 0; k < nc; ++k)
      cs[k] = F::width <= 4 ? k : std::uint64_t(hash32(std::uint64_t(i) * 16 + k) % n);
    pair_ops<F>(a, b, cs, nc, e, t);
  });
  EXPECT_EQ(t.cases.load(), cases * static_cast<long long>(5 + nc));
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("%s: all pairs, 6 ops, %zu environments: %lld checks, %lld mismatches\n",
              oracle::name(ofmt<F>()).c_str(), envs.size(), t.cases.load(), t.bad.load());
}

TEST(EveryPair, E4M3) { run_all_pairs<float8_e4m3>(); }
TEST(EveryPair, E5M2) { run_all_pairs<float8_e5m2>(); }
TEST(EveryPair, E2M3) { run_all_pairs_all_envs<float6_e2m3>(); }
TEST(EveryPair, E3M2) { run_all_pairs_all_envs<float6_e3m2>(); }
TEST(EveryPair, E2M1) { run_all_pairs_all_envs<float4_e2m1>(); }

} // namespace
