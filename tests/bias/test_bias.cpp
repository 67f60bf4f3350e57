// Tests of the accumulation-bias tool (include/bf16emu/bias). Expected values come from the
// worked example of the paper (shared notes), hand derivation, the independent oracle's exact
// cpp_int arithmetic, or statistical tolerances in units of the standard error.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <bf16emu/bias.hpp>

#include "io/bias_state.hpp"
#include "oracle.hpp"

namespace b = bf16emu::bias;
using bf16emu::bf16;
using bf16emu::f32;
using bf16emu::round_mode;

namespace {

// The fixed-point accumulator's value as an oracle dyadic (two's complement limbs -> cpp_int).
template <class Fixed> oracle::dyadic to_dyadic(const Fixed &f) {
  using boost::multiprecision::cpp_int;
  cpp_int v = 0;
  for (int i = Fixed::limbs - 1; i >= 0; --i)
    v = (v << 64) | cpp_int(f.w[i]);
  oracle::dyadic d;
  if (f.negative()) {
    v = (cpp_int(1) << (64 * Fixed::limbs)) - v;
    d.neg = true;
  }
  d.mag = v;
  d.exp = Fixed::lsb_exp;
  return d;
}

b::config scenario(const char *name, round_mode m = round_mode::nearest_even) {
  b::config c;
  EXPECT_TRUE(b::apply_scenario(c, name));
  c.acc.mode = m;
  return c;
}

b::summary run(const b::config &c, std::uint64_t trials, std::uint64_t seed, unsigned threads = 2) {
  b::run_spec s;
  s.configs = {c};
  s.trials = trials;
  s.seed = seed;
  s.threads = threads;
  return b::summarize(b::run(s)[0]);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Exactness of the reference sum and the statistics accumulators.

TEST(BiasWide, ExactSumMatchesOracleCppInt) {
  b::counter_rng g{12345};
  for (int rep = 0; rep < 200; ++rep) {
    b::exact_sum s;
    oracle::dyadic ref;
    const int n = 1 + int(g.below(200));
    for (int i = 0; i < n; ++i) {
      // Random finite fp32 patterns of every exponent (subnormals included).
      std::uint32_t bits = std::uint32_t(g.next());
      if (((bits >> 23) & 0xff) == 0xff) bits &= 0xbfffffffu;
      ASSERT_TRUE(s.add(f32::from_bits(bits)));
      ref = ref + oracle::value_of({bits, oracle::fp32});
    }
    EXPECT_TRUE(to_dyadic(s) == ref) << "rep " << rep;
  }
}

TEST(BiasWide, SuperaccMatchesOracleForDoubles) {
  b::counter_rng g{777};
  b::superacc s;
  oracle::dyadic ref;
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t bits = g.next();
    if (((bits >> 52) & 0x7ff) == 0x7ff) bits &= ~(std::uint64_t{1} << 62);
    double d;
    std::memcpy(&d, &bits, 8);
    ASSERT_TRUE(s.add(d));
    ref = ref + oracle::dyadic_from_double(d);
  }
  EXPECT_TRUE(to_dyadic(s) == ref);
}

TEST(BiasWide, ToDoubleRoundsToNearestEvenWithSticky) {
  b::superacc s;
  s.add(1.0);
  s.add(std::ldexp(1.0, -53)); // exactly halfway between 1 and 1 + 2^-52: even is 1
  EXPECT_EQ(s.to_double(), 1.0);
  s.add(std::ldexp(1.0, -200)); // a sticky bit far below: now above halfway
  EXPECT_EQ(s.to_double(), 1.0 + std::ldexp(1.0, -52));
  b::superacc t;
  t.add(-3.0);
  t.add(std::ldexp(1.0, -1074));
  EXPECT_EQ(t.to_double(), -3.0);
  EXPECT_TRUE(t.negative());
  b::superacc z;
  z.add(2.5);
  z.add(-2.5);
  EXPECT_TRUE(z.is_zero());
}

TEST(BiasWide, TextRoundTrip) {
  b::superacc s;
  s.add(-1.5e300);
  s.add(3e-310);
  b::superacc t;
  ASSERT_TRUE(bf16emu::io::parse_superacc(bf16emu::io::superacc_text(s), t));
  EXPECT_TRUE(t == s);
  EXPECT_FALSE(bf16emu::io::parse_superacc("99:1", t));
  EXPECT_FALSE(bf16emu::io::parse_superacc("1:xyz", t));
}

// ---------------------------------------------------------------------------------------------
// One accumulation, by hand: the paper's worked example (shared notes): FP32 running sum
// -2.4071154594421387 (0xC01A0E2E) plus -2.296875 (BF16 0xC013, weight 1) is exactly
// -4.703990459442139 (0xC0968717); RNE to BF16 gives 0xC097 = -4.71875, error
// -0.014759540557861328125.

TEST(BiasAccumulate, PaperWorkedExample) {
  b::trial_input in;
  in.start = f32::from_bits(0xC01A0E2E);
  in.v = {bf16::from_bits(0xC013)};
  in.w = {bf16::from_bits(0x3F80)};
  in.x = {f32::from_bits(0xC0130000)};
  b::accumulation a; // fp32_seq, nearest_even, out bf16
  const b::trial_result r = b::accumulate(a, in, 1, 0);
  ASSERT_TRUE(r.finite);
  EXPECT_EQ(r.result_bits, 0xC097u);
  EXPECT_EQ(r.err, -0.014759540557861328125);
  EXPECT_EQ(r.exact, -4.703990459442138671875);
  EXPECT_EQ(r.err_ulp, -0.014759540557861328125 / 0.03125); // ulp of 0xC097 is 2^-5
  EXPECT_EQ(r.direction, 1);                                // away from zero
  // Without the residual the sum -4.703125 is an exact tie: RNE keeps 0xC096 (even).
  in.start = f32::from_bits(0xC01A0000);
  const b::trial_result t = b::accumulate(a, in, 1, 0);
  EXPECT_EQ(t.result_bits, 0xC096u);
  EXPECT_EQ(t.err, 0.015625);
  // FP32 output: the FP32 sum is exact here.
  a.out = b::out_format::fp32;
  in.start = f32::from_bits(0xC01A0E2E);
  const b::trial_result u = b::accumulate(a, in, 1, 0);
  EXPECT_EQ(u.result_bits, 0xC0968717u);
  EXPECT_EQ(u.err, 0.0);
  EXPECT_EQ(u.direction, 0);
}

TEST(BiasAccumulate, GeneratedAddendsAreExactProductsAndRespectKnobs) {
  b::knobs k;
  k.n = 500;
  k.neg = 1.0;
  k.ones = 1.0;
  k.spread = 0;
  k.residual = 0.5;
  b::trial_input in;
  b::generate(k, 9, 3, in);
  ASSERT_EQ(in.x.size(), 500u);
  EXPECT_NE(in.start.bits & 0xffffu, 0u);      // residual: low FP32 bits set
  EXPECT_LE(in.start.bits & 0xffffu, 0x8000u); // at most half a BF16 ulp
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    EXPECT_EQ(in.w[i].bits, 0x3F80); // every weight exactly 1
    EXPECT_EQ(in.x[i].bits, std::uint32_t(in.v[i].bits) << 16);
    EXPECT_TRUE(in.v[i].sign());
    EXPECT_EQ(in.v[i].biased_exp(), 127); // spread 0: [1, 2)
  }
  b::trial_input again;
  b::generate(k, 9, 3, again);
  EXPECT_EQ(again.start.bits, in.start.bits);
  EXPECT_EQ(again.x.back().bits, in.x.back().bits);
}

// Every method and mode stays within the classic a-priori bound on random data (a failed bound
// means a wrong error or a wrong method).
TEST(BiasAccumulate, ErrorsWithinClassicBound) {
  for (int m = 0; m < b::method_count; ++m)
    for (int r = 0; r < bf16emu::round_mode_count; ++r) {
      b::accumulation a;
      a.m = static_cast<b::method>(m);
      a.mode = static_cast<round_mode>(r);
      a.out = b::out_format::fp32;
      if (a.m == b::method::tc) continue; // truncation inside the blocks: a different bound
      b::knobs k;
      k.n = 100;
      b::trial_input in;
      for (std::uint64_t t = 0; t < 50; ++t) {
        b::generate(k, 5, t, in);
        const b::trial_result res = b::accumulate(a, in, 5, t);
        EXPECT_LE(std::fabs(res.err), b::classic_bound(a, in))
            << b::to_string(a.m) << " " << r << " trial " << t;
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Acceptance: statistical behaviour with fixed seeds; tolerances in standard errors.

TEST(BiasAcceptance, PaperScenarioNegativeBeyondFiveSE) {
  const b::summary s = run(scenario("paper"), 20000, 1);
  EXPECT_LT(s.mean_ulp, 0);
  EXPECT_GT(std::fabs(s.mean_ulp), 5 * s.se_ulp) << "mean " << s.mean_ulp << " se " << s.se_ulp;
  EXPECT_LT(s.ci99_hi_ulp, 0);
  EXPECT_LT(s.mean_rel, 0);
  EXPECT_GT(s.mean_mag_ulp, 5 * s.se_mag_ulp); // i.e. away from zero
}

TEST(BiasAcceptance, PaperWithoutExactOnesNotSignificant) {
  b::config c = scenario("paper");
  c.k.ones = 0;
  const b::summary s = run(c, 20000, 1);
  EXPECT_LT(std::fabs(s.z), b::z99) << "mean " << s.mean_ulp << " se " << s.se_ulp;
}

TEST(BiasAcceptance, PaperWithSymmetricSignsNotSignificant) {
  b::config c = scenario("paper");
  c.k.neg = 0.5;
  const b::summary s = run(c, 20000, 1);
  EXPECT_LT(std::fabs(s.z), b::z99) << "mean " << s.mean_ulp << " se " << s.se_ulp;
}

TEST(BiasAcceptance, PaperWithoutResidualLosesMostOfTheBias) {
  // No sticky bit: ties stay ties and nearest-even splits them by parity. What is left is a
  // small structure effect of few-bit data (about a tenth of the paper's bias at seed 1).
  const b::summary with = run(scenario("paper"), 20000, 1);
  b::config c = scenario("paper");
  c.k.residual = 0;
  const b::summary without = run(c, 20000, 1);
  EXPECT_LT(std::fabs(without.mean_ulp), 0.25 * std::fabs(with.mean_ulp))
      << "with " << with.mean_ulp << " without " << without.mean_ulp;
}

TEST(BiasAcceptance, NearestEvenUnbiasedOnSymmetricData) {
  for (b::method m : {b::method::fp32_seq, b::method::bf16_seq, b::method::pairwise, b::method::kahan}) {
    b::config c = scenario("symmetric");
    c.acc.m = m;
    const b::summary s = run(c, 20000, 2);
    EXPECT_LT(std::fabs(s.z), b::z99) << b::to_string(m) << " mean " << s.mean_ulp << " se " << s.se_ulp;
    // The magnitude error too, where the accumulator is FP32. (With a BF16 accumulator the
    // computed random walk is damped far from zero, where small addends are swamped: its
    // magnitude error is negative; docs/bias.md.)
    if (m != b::method::bf16_seq) {
      EXPECT_LT(std::fabs(s.z_mag), b::z99) << b::to_string(m) << " away " << s.mean_mag_ulp;
    }
  }
}

TEST(BiasAcceptance, TowardZeroBiasedTowardZero) {
  b::config c = scenario("symmetric", round_mode::toward_zero);
  const b::summary s = run(c, 20000, 3);
  // The signed error is symmetric (signs are), the magnitude error is not: every rounding
  // truncates. The final BF16 truncation of a nearly uniform fraction loses 1/2 ulp on average.
  EXPECT_LT(s.mean_mag_ulp, -5 * s.se_mag_ulp);
  EXPECT_NEAR(s.mean_mag_ulp, -0.5, 0.05);
  // Away from zero only when partial sums of the other sign were truncated (rare).
  EXPECT_LT(s.share_away, 0.01);
  EXPECT_LT(std::fabs(s.z), b::z99);
  // With one sign only, the signed mean shows it too: positive for negative sums.
  c.k.neg = 1.0;
  const b::summary t = run(c, 20000, 3);
  EXPECT_GT(t.mean_ulp, 5 * t.se_ulp);
}

TEST(BiasAcceptance, StochasticUnbiasedInExpectation) {
  // Where nearest-even is biased (the paper scenario) and on symmetric data.
  for (const char *name : {"paper", "symmetric"}) {
    b::config c = scenario(name, round_mode::stochastic);
    const b::summary s = run(c, 20000, 4);
    EXPECT_LT(std::fabs(s.z), b::z99) << name << " mean " << s.mean_ulp << " se " << s.se_ulp;
    EXPECT_LT(std::fabs(s.z_mag), b::z99) << name << " away " << s.mean_mag_ulp;
  }
  // BF16 at every step (every rounding stochastic), mostly negative data.
  b::config c = scenario("symmetric", round_mode::stochastic);
  c.acc.m = b::method::bf16_seq;
  c.k.neg = 0.9;
  c.k.n = 16;
  const b::summary s = run(c, 20000, 4);
  EXPECT_LT(std::fabs(s.z), b::z99) << "bf16_seq mean " << s.mean_ulp << " se " << s.se_ulp;
  // Also in magnitude: the ulp unit is taken at the exact sum, not at the random result.
  EXPECT_LT(std::fabs(s.z_mag), b::z99) << "bf16_seq away " << s.mean_mag_ulp;
}

// ---------------------------------------------------------------------------------------------
// Determinism: threads, shards, serialization.

TEST(BiasDeterminism, SameBitsForAnyThreadCountAndSharding) {
  b::run_spec s;
  b::config c = scenario("paper");
  b::config d = scenario("symmetric", round_mode::stochastic);
  d.k.n = 16;
  s.configs = {c, d};
  s.trials = 3000;
  s.chunk = 250;
  s.seed = 42;
  s.threads = 1;
  const auto one = b::run(s);
  s.threads = 3;
  const auto three = b::run(s);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_TRUE(one[0] == three[0]);
  EXPECT_TRUE(one[1] == three[1]);
  std::vector<b::stats> merged(2);
  s.shards = 4;
  for (std::uint64_t k = 0; k < 4; ++k) {
    s.shard = k;
    s.threads = 1 + unsigned(k % 2);
    const auto part = b::run(s);
    for (int i = 0; i < 2; ++i)
      merged[i].merge(part[i]);
  }
  EXPECT_TRUE(merged[0] == one[0]);
  EXPECT_TRUE(merged[1] == one[1]);
  // Another seed gives other numbers.
  s.shards = 1;
  s.shard = 0;
  s.seed = 43;
  EXPECT_FALSE(b::run(s)[0] == one[0]);
}

TEST(BiasDeterminism, StatsSerializeRoundTrip) {
  b::run_spec s;
  s.configs = {scenario("paper")};
  s.trials = 500;
  const b::stats st = b::run(s)[0];
  b::stats back;
  ASSERT_EQ(bf16emu::io::parse_bias_stats(bf16emu::io::bias_stats_text(st), back), "");
  EXPECT_TRUE(back == st);
  EXPECT_NE(bf16emu::io::parse_bias_stats("trials=1", back), "");
}

// Progress goes through the callback: once per unit of the shard, done strictly increasing to
// the unit count (2 configurations x ceil(1000 / 300) = 4 chunks = 8 units; shard 1 of 3 runs
// units 1, 4, 7).
TEST(BiasDeterminism, ProgressCallbackCountsUnits) {
  b::run_spec s;
  s.configs = {scenario("paper"), scenario("symmetric")};
  s.trials = 1000;
  s.chunk = 300;
  for (unsigned threads : {1u, 3u}) {
    s.threads = threads;
    s.shard = 1;
    s.shards = 3;
    std::vector<std::uint64_t> seen;
    std::uint64_t last_total = 0;
    s.progress = [&](std::uint64_t done, std::uint64_t total) {
      seen.push_back(done);
      last_total = total;
    };
    b::run(s);
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2, 3})) << threads;
    EXPECT_EQ(last_total, 3u);
  }
}

// Huge chunks and trials do not wrap the unit arithmetic: trials 2^40 - 1 in chunks of 2^40 is
// one unit per configuration (shard 1 of 2 of two configurations: unit 1 only).
TEST(BiasDeterminism, UnitCountsDoNotWrap) {
  b::run_spec s;
  s.configs = {scenario("paper"), scenario("paper")};
  s.chunk = std::uint64_t{1} << 40;
  s.trials = s.chunk - 1;
  EXPECT_EQ(b::chunks_per_config(s), 1u);
  s.shards = 2;
  s.shard = 1;
  EXPECT_EQ(b::shard_unit_count(s), 1u);
  s.chunk = UINT64_MAX;
  s.trials = 10;
  EXPECT_EQ(b::chunks_per_config(s), 1u);
}

TEST(BiasDeterminism, StatsParseIsStrict) {
  b::run_spec s;
  s.configs = {scenario("paper")};
  s.trials = 50;
  const std::string line = bf16emu::io::bias_stats_text(b::run(s)[0]);
  b::stats back;
  ASSERT_EQ(bf16emu::io::parse_bias_stats(line, back), "");
  auto with = [&](const std::string &from, const std::string &to) {
    std::string t = line;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_EQ(bf16emu::io::parse_bias_stats(with("trials=50", "trials=-1"), back), "bad trials");
  EXPECT_EQ(bf16emu::io::parse_bias_stats(with("trials=50", "trials=+50"), back), "bad trials");
  EXPECT_EQ(bf16emu::io::parse_bias_stats(with("trials=50", "trials=99999999999999999999"), back),
            "bad trials");
  EXPECT_EQ(bf16emu::io::parse_bias_stats(with("trials=50", "trials=50 trials=50"), back),
            "duplicate trials");
  EXPECT_EQ(bf16emu::io::parse_bias_stats(with("worst_ulp=", "worst_ulp=x"), back).substr(0, 13),
            "bad worst_ulp");
}

// ---------------------------------------------------------------------------------------------
// Bias maps: knob ranges checked as doubles (never a cast of an out-of-range value), the grid.

TEST(BiasGrid, KnobRangesAreCheckedBeforeTheCast) {
  b::config c;
  const std::uint32_t n0 = c.k.n;
  EXPECT_FALSE(b::set_knob(c, "n", 1e300));
  EXPECT_FALSE(b::set_knob(c, "n", -1));
  EXPECT_FALSE(b::set_knob(c, "n", std::nan("")));
  EXPECT_FALSE(b::set_knob(c, "tc_L", 33));
  EXPECT_FALSE(b::set_knob(c, "tc_F", -1e300));
  EXPECT_FALSE(b::set_knob(c, "bogus", 1));
  EXPECT_EQ(c.k.n, n0);
  EXPECT_TRUE(b::set_knob(c, "n", 16777216));
  EXPECT_EQ(c.k.n, 16777216u);
  EXPECT_TRUE(b::set_knob(c, "tc_L", 8.9)); // truncated toward zero
  EXPECT_EQ(c.acc.tc.L, 8);
  EXPECT_THROW(b::make_axis("n", 1, 1e300, 3), std::invalid_argument);
  EXPECT_THROW(b::make_axis("neg", std::nan(""), 1, 3), std::invalid_argument);
  EXPECT_THROW(b::make_axis("neg", 0, 1, 0), std::invalid_argument);
  EXPECT_THROW(b::make_axis("neg", 0, 1, 1001), std::invalid_argument);
  EXPECT_THROW(b::make_axis("bogus", 0, 1, 2), std::invalid_argument);
  EXPECT_EQ(b::make_axis("ones", 0, 1, 5).values, (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(b::make_axis("ones", 0.5, 1, 1).values, (std::vector<double>{0.5}));
  c.k.neg = 1.5;
  ASSERT_NE(b::bad_knob(c), nullptr);
  EXPECT_STREQ(b::bad_knob(c)->name, "neg");
}

// Methods x rounding modes x y x x, x fastest.
TEST(BiasGrid, ExpandsInOrder) {
  const b::config base = scenario("paper");
  const std::vector<b::method> ms{b::method::fp32_seq, b::method::kahan};
  const std::vector<round_mode> rs{round_mode::nearest_even};
  EXPECT_EQ(b::expand_grid(base, ms, rs).size(), 2u);
  const b::axis x = b::make_axis("ones", 0, 1, 3), y = b::make_axis("n", 2, 4, 2);
  EXPECT_EQ(b::grid_size(2, 1, x, y), 12u);
  EXPECT_EQ(b::grid_size(2, 1, x, {}), 6u);
  const auto g = b::expand_grid(base, ms, rs, x, y);
  ASSERT_EQ(g.size(), 12u);
  EXPECT_EQ(g[0].acc.m, b::method::fp32_seq);
  EXPECT_EQ(g[6].acc.m, b::method::kahan);
  EXPECT_EQ(g[1].k.ones, 0.5);
  EXPECT_EQ(g[1].k.n, 2u);
  EXPECT_EQ(g[3].k.ones, 0.0);
  EXPECT_EQ(g[3].k.n, 4u);
  b::axis big{"neg", std::vector<double>(1000, 0.5)};
  EXPECT_EQ(b::grid_size(std::size_t{1} << 40, std::size_t{1} << 40, big, big), UINT64_MAX);
}

// ---------------------------------------------------------------------------------------------
// Adversarial search: reproducible, never above the a-priori bound, better than its start.

TEST(BiasSearch, ReproducibleAndBounded) {
  b::search_spec s;
  s.acc.out = b::out_format::fp32;
  s.k.n = 16;
  s.iters = 400;
  s.restarts = 2;
  s.seed = 7;
  s.threads = 2;
  const b::search_result a = b::search(s);
  s.threads = 1;
  const b::search_result c = b::search(s);
  EXPECT_EQ(a.ratio, c.ratio);
  EXPECT_EQ(a.best.start.bits, c.best.start.bits);
  ASSERT_EQ(a.best.v.size(), 16u);
  for (std::size_t i = 0; i < a.best.v.size(); ++i)
    EXPECT_EQ(a.best.v[i].bits, c.best.v[i].bits);
  EXPECT_GE(a.ratio, a.start_ratio);
  EXPECT_GT(a.ratio, 0);
  EXPECT_LE(a.ratio, 1.0);
  // The reported error is the error of the reported sequence.
  const b::trial_result r = b::accumulate(s.acc, a.best, s.seed, 0);
  EXPECT_EQ(r.err, a.outcome.err);
}
