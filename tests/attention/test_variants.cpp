// Variants and policies that must agree: exact FA2 (any tiling, either KV order) equals exact
// standard attention to rounding noise; the stabilized variant under exact equals standard;
// a softmax computed directly in binary64 (written out here) equals the exact policy; heads
// give the same results on 1 or several threads; low-precision policies stay close.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bf16emu/attention.hpp"

namespace at = bf16emu::attention;

namespace {

double max_abs_diff(const std::vector<double> &a, const std::vector<double> &b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

at::forward_result run(const at::attention_inputs &in, const char *policy, at::variant v, bool causal,
                       int bm = 64, int bn = 64, at::kv_order kv = at::kv_order::reverse, double beta = 2) {
  at::forward_config c;
  EXPECT_TRUE(at::parse_policy(policy, c.pol));
  c.var = v, c.causal = causal, c.pol.block_m = bm, c.pol.block_n = bn, c.pol.kv = kv, c.pol.beta = beta;
  at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  at::null_observer none;
  return at::forward_head(c, h, none);
}

// Softmax attention written out directly in binary64 (independent of the library's loop).
std::vector<double> direct(const at::attention_inputs &in, bool causal) {
  const long n = in.n, d = in.d;
  std::vector<double> o(n * d, 0.0);
  for (long r = 0; r < n; ++r) {
    std::vector<double> s(n, -std::numeric_limits<double>::infinity());
    double m = -std::numeric_limits<double>::infinity();
    for (long j = 0; j < n; ++j) {
      if (causal && j > r) continue;
      double x = 0;
      for (long t = 0; t < d; ++t)
        x += in.q[r * d + t] * in.k[j * d + t];
      s[j] = x / std::sqrt(double(d));
      m = std::max(m, s[j]);
    }
    double l = 0;
    for (long j = 0; j < n; ++j)
      l += std::exp(s[j] - m);
    for (long j = 0; j < n; ++j)
      for (long t = 0; t < d; ++t)
        o[r * d + t] += std::exp(s[j] - m) / l * in.v[j * d + t];
  }
  return o;
}

} // namespace

TEST(Variants, ExactMatchesDirectSoftmax) {
  for (long d : {64L, 128L}) {
    const auto in = at::scenario_random(1, 1, 96, d, 7);
    for (bool causal : {false, true}) {
      const auto r = run(in, "exact", at::variant::standard, causal);
      EXPECT_LT(max_abs_diff(r.o, direct(in, causal)), 1e-13) << d << causal;
    }
  }
}

TEST(Variants, ExactFa2EqualsExactStandard) {
  const auto in = at::scenario_sink(1, 1, 160, 64, 11, at::sink_params{});
  for (bool causal : {false, true}) {
    const auto ref = run(in, "exact", at::variant::standard, causal);
    for (int bm : {16, 64, 160})
      for (int bn : {16, 48, 64})
        for (auto kv : {at::kv_order::forward, at::kv_order::reverse}) {
          const auto r = run(in, "exact", at::variant::fa2, causal, bm, bn, kv);
          EXPECT_LT(max_abs_diff(r.o, ref.o), 1e-13) << bm << " " << bn << " " << causal;
          EXPECT_LT(max_abs_diff(r.lse, ref.lse), 1e-12);
        }
  }
}

TEST(Variants, ExactStabilizedEqualsStandard) {
  // Algorithm 1 only changes the shift m; softmax is shift invariant.
  const auto in = at::scenario_sink(1, 1, 128, 128, 5, at::sink_params{});
  const auto ref = run(in, "exact", at::variant::standard, false);
  for (double beta : {2.0, 4.0, 7.0, 8.0}) {
    const auto r = run(in, "exact", at::variant::stabilized, false, 64, 64, at::kv_order::reverse, beta);
    EXPECT_LT(max_abs_diff(r.o, ref.o), 1e-12) << beta;
    EXPECT_LT(max_abs_diff(r.lse, ref.lse), 1e-11) << beta;
  }
}

TEST(Variants, LowPrecisionPoliciesStayClose) {
  // O has magnitude <= max |V| ~ 4; BF16 output is within a few BF16 ulps, FP32 far better.
  const auto in = at::scenario_random(1, 1, 128, 64, 3);
  const auto ref = run(in, "exact", at::variant::fa2, true);
  EXPECT_LT(max_abs_diff(run(in, "fp32", at::variant::fa2, true).o, ref.o), 1e-5);
  for (const char *p : {"paper", "fa2:sm80", "fa2:sm89", "fa2:sm90", "fa2:sm100", "fa2_twin"})
    EXPECT_LT(max_abs_diff(run(in, p, at::variant::fa2, true).o, ref.o), 0.06) << p;
}

TEST(Variants, OutputsAreInTheirFormats) {
  const auto in = at::scenario_random(1, 1, 64, 64, 9);
  for (const char *p : {"paper", "fa2:sm80", "fa2:sm90"})
    for (double x : run(in, p, at::variant::fa2, false).o)
      ASSERT_EQ(x, at::round_bf16(x)) << p;
  for (double x : run(in, "fp32", at::variant::fa2, false).o)
    ASSERT_EQ(x, double(float(x)));
}

TEST(Variants, HeadsAreIndependentOfThreads) {
  const auto in = at::scenario_sink(2, 3, 64, 64, 4, at::sink_params{});
  at::run_options o;
  at::parse_policy("fa2:sm90", o.cfg.pol);
  o.threads = 1;
  const auto a = at::run_attention(in, o);
  o.threads = 4;
  const auto b = at::run_attention(in, o);
  EXPECT_EQ(a.o, b.o);
  EXPECT_EQ(a.led.sites[int(at::site::pv)].all.count, b.led.sites[int(at::site::pv)].all.count);
  EXPECT_EQ(a.o_err.mean_signed, b.o_err.mean_signed);
  // each head equals its own single-head run
  at::attention_inputs one;
  one.n = in.n, one.d = in.d;
  const long hs = in.n * in.d, bh = 4;
  one.q.assign(in.q.begin() + bh * hs, in.q.begin() + (bh + 1) * hs);
  one.k.assign(in.k.begin() + bh * hs, in.k.begin() + (bh + 1) * hs);
  one.v.assign(in.v.begin() + bh * hs, in.v.begin() + (bh + 1) * hs);
  const auto r = run(one, "fa2:sm90", at::variant::fa2, false);
  EXPECT_EQ(std::vector<double>(a.o.begin() + bh * hs, a.o.begin() + (bh + 1) * hs), r.o);
}

TEST(Variants, LedgerDoesNotChangeResults) {
  const auto in = at::scenario_sink(1, 1, 96, 64, 2, at::sink_params{});
  at::forward_config c;
  at::parse_policy("paper", c.pol);
  at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  at::null_observer none;
  at::ledger led;
  EXPECT_EQ(at::forward_head(c, h, none).o, at::forward_head(c, h, led).o);
  at::parse_policy("fa2:sm80", c.pol);
  EXPECT_EQ(at::forward_head(c, h, none).o, at::forward_head(c, h, led).o);
}

TEST(Variants, ExactBackwardMatchesFiniteDifferences) {
  // dL/dQ with L = sum(dO o O): central differences of the exact forward.
  const auto in = at::scenario_random(1, 1, 8, 16, 21);
  at::forward_config c;
  at::parse_policy("exact", c.pol);
  c.var = at::variant::standard;
  at::null_observer none;
  at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  const auto f = at::forward_head(c, h, none);
  const auto g = at::backward_head(c, h, in.dout.data(), f, none);
  auto loss = [&](const std::vector<double> &q, const std::vector<double> &k, const std::vector<double> &v) {
    at::head_view hh{in.n, in.d, q.data(), k.data(), v.data()};
    const auto r = at::forward_head(c, hh, none);
    double s = 0;
    for (std::size_t i = 0; i < r.o.size(); ++i)
      s += r.o[i] * in.dout[i];
    return s;
  };
  const double eps = 1e-6;
  for (int idx : {0, 17, 77, 127}) {
    auto qp = in.q, qm = in.q, kp = in.k, km = in.k, vp = in.v, vm = in.v;
    qp[idx] += eps, qm[idx] -= eps, kp[idx] += eps, km[idx] -= eps, vp[idx] += eps, vm[idx] -= eps;
    EXPECT_NEAR(g.dq[idx], (loss(qp, in.k, in.v) - loss(qm, in.k, in.v)) / (2 * eps), 1e-6);
    EXPECT_NEAR(g.dk[idx], (loss(in.q, kp, in.v) - loss(in.q, km, in.v)) / (2 * eps), 1e-6);
    EXPECT_NEAR(g.dv[idx], (loss(in.q, in.k, vp) - loss(in.q, in.k, vm)) / (2 * eps), 1e-6);
  }
}

// run_attention spreads the (batch, head) items over parallel_for: the outputs, the exact
// baseline and every integer counter of the ledger are the same for 1, 2 and 3 threads (the
// items land in their own slots; the per-worker ledgers merge by adding counts), and the
// progress callback sees every item once, done counting 1..items.
TEST(Variants, RunIsIndependentOfThreadCount) {
  const auto in = at::scenario_sink(2, 3, 48, 32, 11, at::sink_params{});
  std::vector<at::run_report> reps;
  for (unsigned threads : {1u, 2u, 3u}) {
    at::run_options o;
    at::parse_policy("fa2:sm80", o.cfg.pol);
    o.cfg.pol.block_m = o.cfg.pol.block_n = 16;
    o.backward = true;
    o.threads = threads;
    std::vector<std::uint64_t> seen;
    o.progress = [&seen](std::uint64_t done, std::uint64_t total) {
      EXPECT_EQ(total, 6u);
      seen.push_back(done);
    };
    reps.push_back(at::run_attention(in, o));
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6})) << threads << " threads";
  }
  const auto &a = reps[0];
  ASSERT_EQ(a.o.size(), std::size_t(6 * 48 * 32));
  // Every integer counter of a ledger, in a fixed order.
  auto counters = [](const at::ledger &l) {
    std::vector<std::uint64_t> c = {l.p_entries, l.p_one_entries, l.rows_with_p_one, l.rows_tied};
    for (const auto &st : l.sites)
      for (const at::sign_counts *x : {&st.all, &st.p_one})
        c.insert(c.end(), {x->count, x->pos, x->neg, x->zero, x->ties, x->away, x->toward});
    return c;
  };
  for (std::size_t t = 1; t < reps.size(); ++t) {
    const auto &b = reps[t];
    const std::string why = std::to_string(t + 1) + " threads";
    for (auto v : {&at::run_report::o, &at::run_report::lse, &at::run_report::o_exact, &at::run_report::dq,
                   &at::run_report::dk, &at::run_report::dv})
      EXPECT_EQ(a.*v, b.*v) << why;
    EXPECT_EQ(counters(a.led), counters(b.led)) << why;
  }
  EXPECT_GT(a.led.sites[int(at::site::pv)].all.count, 0u); // the ledger saw the run
}

// Algorithm 1 requires beta > 1 (beta = 1 is the unstabilized kernel) and a finite tie
// tolerance >= 0; the library check names the option and the rule, and passes valid values.
TEST(Variants, StabilizedParamsAreChecked) {
  at::forward_config c;
  for (double b : {1.0, 0.999, 0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    c.pol.beta = b;
    const auto e = at::forward_config_error(c);
    ASSERT_TRUE(e) << b;
    EXPECT_EQ(e->arg, at::option::beta) << b;
    EXPECT_NE(e->reason.find("> 1"), std::string::npos) << e->reason;
  }
  for (double b : {std::nextafter(1.0, 2.0), 2.0, 7.0}) {
    c.pol.beta = b;
    EXPECT_FALSE(at::forward_config_error(c)) << b;
  }
  c.pol.beta = 2;
  for (double t : {-1e-3, std::nan(""), std::numeric_limits<double>::infinity()}) {
    c.pol.tie_tol = t;
    const auto e = at::forward_config_error(c);
    ASSERT_TRUE(e) << t;
    EXPECT_EQ(e->arg, at::option::tie_tol) << t;
  }
  c.pol.tie_tol = 0;
  EXPECT_FALSE(at::forward_config_error(c));
}
