// Backward accumulation orders (include/bf16emu/pitfalls/blockwise.hpp, bwd_order.hpp).
// Expected numbers are derived by hand in the comments.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "bf16emu/pitfalls/bwd_order.hpp"

namespace pit = bf16emu::pitfalls;
namespace at = bf16emu::attention;
using pit::schedule_kind;

// Schedules for 3 blocks, full mask. dash_shift: KV block j visits query block (j + t) mod 3
// at step t, so dQ_1 receives j = 1, 0, 2 (steps 0, 1, 2) and dK_1 sums i = 1, 2, 0.
TEST(Schedule, FullMask) {
  const auto sh = pit::make_schedule(schedule_kind::dash_shift, 3, false);
  EXPECT_EQ(sh.dq[1], (std::vector<long>{1, 0, 2}));
  EXPECT_EQ(sh.kv[1], (std::vector<long>{1, 2, 0}));
  const auto asc = pit::make_schedule(schedule_kind::ascending, 3, false);
  EXPECT_EQ(asc.dq[2], (std::vector<long>{0, 1, 2}));
  const auto desc = pit::make_schedule(schedule_kind::descending, 3, false);
  EXPECT_EQ(desc.kv[0], (std::vector<long>{2, 1, 0}));
  const auto dq = pit::make_schedule(schedule_kind::dash_descending_q, 3, false);
  EXPECT_EQ(dq.kv[0], (std::vector<long>{2, 1, 0})); // query tiles walked from the last
  EXPECT_EQ(dq.dq[0], (std::vector<long>{0, 1, 2})); // dQ keeps the KV-tile order
}

// Causal (pairs j <= i): dash_shift dQ_2 gets j = 2, 1, 0; dK_1 gets i = 1, 2 (0 is masked).
TEST(Schedule, CausalMask) {
  const auto sh = pit::make_schedule(schedule_kind::dash_shift, 3, true);
  EXPECT_EQ(sh.dq[2], (std::vector<long>{2, 1, 0}));
  EXPECT_EQ(sh.kv[1], (std::vector<long>{1, 2}));
  EXPECT_EQ(sh.dq[0], (std::vector<long>{0}));
  const auto r1 = pit::make_schedule(schedule_kind::random, 3, true, 5);
  const auto r2 = pit::make_schedule(schedule_kind::random, 3, true, 5);
  EXPECT_EQ(r1.dq, r2.dq); // a seed fixes the order
  EXPECT_EQ(r1.dq[2].size(), 3u);
}

namespace {
// Three 1x1 blocks; only dQ_0's partials matter: dQ_00 = 1, dQ_01 = 2^-24, dQ_02 = 2^-24.
pit::pair_partials hand_partials() {
  pit::pair_partials p;
  p.nb = 3, p.b = 1, p.d = 1;
  p.dq.assign(9, {0.0}), p.dk.assign(9, {0.0}), p.dv.assign(9, {0.0});
  p.dq[0] = {1.0}, p.dq[1] = {0x1p-24}, p.dq[2] = {0x1p-24};
  return p;
}
} // namespace

// FP32 sums into a zeroed accumulator:
//   ascending  j = 0,1,2: (0 + 1) + 2^-24 = 1 + 2^-24 is a tie (half the 2^-23 spacing above 1)
//              -> RNE keeps 1 (even); + 2^-24 again -> 1.
//   descending j = 2,1,0: 2^-24 + 2^-24 = 2^-23 (exact), + 1 = 1 + 2^-23 (exact).
//   dash_shift j = 0,2,1 (dQ_0): like ascending -> 1.
// One FP32 ulp apart; binary64 gives 1 + 2^-23 for every order; rounded to BF16 both are 1.
TEST(Accumulate, OrderChangesTheBits) {
  const pit::pair_partials p = hand_partials();
  auto dq0 = [&](schedule_kind k, at::policy_kind pol, bool bf16 = false) {
    return pit::accumulate(p, pit::make_schedule(k, 3, false), pol, bf16).dq[0];
  };
  EXPECT_EQ(dq0(schedule_kind::ascending, at::policy_kind::fa2), 1.0);
  EXPECT_EQ(dq0(schedule_kind::descending, at::policy_kind::fa2), 1.0 + 0x1p-23);
  EXPECT_EQ(dq0(schedule_kind::dash_shift, at::policy_kind::fa2), 1.0);
  EXPECT_EQ(dq0(schedule_kind::ascending, at::policy_kind::exact), 1.0 + 0x1p-23);
  EXPECT_EQ(dq0(schedule_kind::descending, at::policy_kind::exact), 1.0 + 0x1p-23);
  EXPECT_EQ(dq0(schedule_kind::ascending, at::policy_kind::fa2, true), 1.0);
  EXPECT_EQ(dq0(schedule_kind::descending, at::policy_kind::fa2, true), 1.0);
  const auto a =
      pit::accumulate(p, pit::make_schedule(schedule_kind::ascending, 3, false), at::policy_kind::fa2);
  const auto d =
      pit::accumulate(p, pit::make_schedule(schedule_kind::descending, 3, false), at::policy_kind::fa2);
  const pit::diff_stats s = pit::compare(a.dq, d.dq, 23);
  EXPECT_EQ(s.differing, 1u);
  EXPECT_EQ(s.max_ulp, 1u);
}

// The block decomposition itself is exact math: under the exact policy the blockwise backward
// equals the library's single-pass backward up to binary64 rounding.
TEST(Blockwise, ExactPolicyMatchesSinglePass) {
  const at::attention_inputs in = at::scenario_random(1, 1, 64, 16, 11);
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  for (bool causal : {false, true}) {
    at::forward_config cfg;
    cfg.pol.kind = at::policy_kind::exact;
    cfg.causal = causal;
    at::null_observer none;
    const at::forward_result f = at::forward_head(cfg, h, none);
    const at::backward_result one = at::backward_head(cfg, h, in.dout.data(), f, none);
    const pit::pair_partials p = pit::pair_backward(cfg, h, in.dout.data(), f.o, f.lse, 16, 2);
    const pit::grads g =
        pit::accumulate(p, pit::make_schedule(schedule_kind::dash_shift, 4, causal), at::policy_kind::exact);
    EXPECT_LT(pit::compare(g.dq, one.dq, 52).rel_norm, 1e-13);
    EXPECT_LT(pit::compare(g.dk, one.dk, 52).rel_norm, 1e-13);
    EXPECT_LT(pit::compare(g.dv, one.dv, 52).rel_norm, 1e-13);
  }
}

// The pair partials do not depend on the thread count (each pair writes its own slots), and
// the completion order lists every allowed pair exactly once (a permutation of the tasks).
TEST(Blockwise, PartialsSameBitsForAnyThreadCount) {
  const at::attention_inputs in = at::scenario_random(1, 1, 64, 8, 3);
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  for (bool causal : {false, true}) {
    at::forward_config cfg;
    cfg.pol = at::fa2_twin();
    cfg.causal = causal;
    at::null_observer none;
    const at::forward_result f = at::forward_head(cfg, h, none);
    const pit::pair_partials one = pit::pair_backward(cfg, h, in.dout.data(), f.o, f.lse, 16, 1);
    // 4 blocks: 16 pairs, 10 below or on the diagonal when causal; one thread finishes them in order.
    std::vector<long> expect;
    for (long i = 0; i < 4; ++i)
      for (long j = 0; j < 4; ++j)
        if (!causal || j <= i) expect.push_back(i * 4 + j);
    EXPECT_EQ(one.completion, expect);
    for (int threads : {2, 3, 8, 0}) {
      const pit::pair_partials p = pit::pair_backward(cfg, h, in.dout.data(), f.o, f.lse, 16, threads);
      EXPECT_EQ(p.dq, one.dq) << threads;
      EXPECT_EQ(p.dk, one.dk) << threads;
      EXPECT_EQ(p.dv, one.dv) << threads;
      std::vector<long> sorted = p.completion;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, expect) << threads;
    }
  }
}

// Every fixed order gives the same bits over 2 runs x {1, 2, 4} threads; ascending and
// descending give different bits (FP32 sums of 4 partials in two orders).
TEST(BwdOrder, FixedOrdersAreReproducible) {
  const at::attention_inputs in = at::scenario_random(1, 1, 64, 16, 5);
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  pit::bwd_order_options o;
  o.cfg.pol = at::fa2_twin();
  o.block = 16;
  o.threads = {1, 2, 4};
  o.repeats = 2;
  o.orders = {{schedule_kind::ascending},
              {schedule_kind::descending},
              {schedule_kind::dash_descending_q},
              {schedule_kind::dash_shift},
              {schedule_kind::random, 9}};
  const pit::bwd_order_report r = pit::run_bwd_orders(o, h, in.dout.data());
  ASSERT_EQ(r.orders.size(), 5u);
  for (const auto &x : r.orders) {
    EXPECT_EQ(x.fingerprints.size(), 6u);
    EXPECT_TRUE(x.reproducible()) << x.spec.name();
  }
  // pairs: (0,1) = ascending vs descending
  ASSERT_FALSE(r.pairs.empty());
  EXPECT_EQ(r.pairs[0].a, 0u);
  EXPECT_EQ(r.pairs[0].b, 1u);
  EXPECT_GT(r.pairs[0].dq.differing, 0u);
  EXPECT_GT(r.pairs[0].dk.differing, 0u);
  // ... yet all are equally accurate: within a few BF16 epsilon of binary64, close to each other
  for (const auto &x : r.orders)
    EXPECT_LT(x.err_dq.rel_eps(), 3.0);
  // dash_descending_q changes dK/dV only: its dQ equals ascending's bit for bit
  EXPECT_EQ(pit::compare(r.orders[0].g.dq, r.orders[2].g.dq, 23).differing, 0u);
}
