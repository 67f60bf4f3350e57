// Context-parallel merge of per-chunk (O, LSE) (include/bf16emu/pitfalls/cp.hpp) and the
// comparison units (compare.hpp). Expected numbers are derived by hand in the comments.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "bf16emu/pitfalls/compare.hpp"
#include "bf16emu/pitfalls/cp.hpp"

namespace pit = bf16emu::pitfalls;
namespace at = bf16emu::attention;

// 1 + 2^-7 against 1: ||x-y||/||y|| = 2^-7 = one BF16 epsilon; adjacent BF16 values: 1 ulp.
// -1 against 1 in BF16: encodings 0xBF80 and 0x3F80, 2 * 0x3F80 = 32512 values apart.
// +0 against -0: different bits, 0 ulp.
TEST(Compare, EpsilonAndUlps) {
  const pit::diff_stats a = pit::compare({1.0 + 0x1p-7}, {1.0}, 7);
  EXPECT_DOUBLE_EQ(a.rel_eps(), 1.0);
  EXPECT_EQ(a.differing, 1u);
  EXPECT_EQ(a.max_ulp, 1u);
  EXPECT_EQ(pit::ulp_distance(-1.0, 1.0, 7), 32512u);
  EXPECT_EQ(pit::ulp_distance(1.0 + 0x1p-23, 1.0, 23), 1u);
  const pit::diff_stats z = pit::compare({0.0}, {-0.0}, 23);
  EXPECT_EQ(z.differing, 1u);
  EXPECT_EQ(z.max_ulp, 0u);
  // 3 elements, one off by 2^-7 * 2 out of norm sqrt(4+4+4) = sqrt(12):
  // rel = (2^-6) / sqrt(12) -> rel_eps = 2 / sqrt(12)
  const pit::diff_stats b = pit::compare({2.0 + 0x1p-6, 2.0, -2.0}, {2.0, 2.0, -2.0}, 7);
  EXPECT_NEAR(b.rel_eps(), 2.0 / std::sqrt(12.0), 1e-15);
  EXPECT_EQ(b.max_ulp, 1u);         // 2 + 2^-6 is the BF16 neighbour of 2 (ulp of [2,4) is 2^-6)
  EXPECT_EQ(b.max_abs_ulps(), 1.0); // error 2^-6 in ulps of max|y| = 2: 2^-6 / 2^-6
  // Near zero: FP32 2^-100 has biased exponent 27, encoding 27 << 23 = 226492416; -2^-100 is as
  // many values below zero: 452984832 ulps apart, while the error 2^-99 is 2^-99 / 2^-23 = 2^-76
  // ulps of the largest element (1.0, ulp 2^-23).
  const pit::diff_stats c = pit::compare({1.0, -0x1p-100}, {1.0, 0x1p-100}, 23);
  EXPECT_EQ(c.max_ulp, 452984832u);
  EXPECT_EQ(c.max_abs_ulps(), 0x1p-76);
}

namespace {
// Two tokens, d = 1, Q = 0: every score is 0, the softmax is uniform. V = (1, 3).
// Each chunk (one token) alone: O_c = V_c, L_c = 0 (ln 1). Merged: L = ln 2, O = 0.5*1 + 0.5*3 = 2.
struct tiny {
  std::vector<double> q{0, 0}, k{0, 0}, v{1, 3}, dout{1, 1};
  at::head_view view() const { return {2, 1, q.data(), k.data(), v.data()}; }
};
pit::cp_options fp32_opts(pit::merge_form form, pit::merge_bug bug = pit::merge_bug::none,
                          bool causal = false) {
  pit::cp_options o;
  o.cfg.pol.kind = at::policy_kind::fp32;
  o.cfg.causal = causal;
  o.chunks = 2, o.form = form, o.bug = bug, o.bug_chunk = 1;
  return o;
}
} // namespace

// FP32: the weights exp(0 - RN32(ln 2)) = exp(-0.693147182...) = 0.4999999990... round to 0.5
// (FP32 spacing below 0.5 is 2^-25 = 3e-8), so O = 0.5*1 + 0.5*3 = 2 exactly, both forms.
// L = RN32(ln 2) = 0.693147182464599609375 (global: 0 + RN32(ln(1 + 1)); online: 0 +
// RN32(log1p(exp(0)))).
TEST(ContextParallel, TinyHandCase) {
  const tiny t;
  for (auto form : {pit::merge_form::global, pit::merge_form::online}) {
    const pit::attention_result r = pit::cp_attention(fp32_opts(form), t.view(), t.dout.data());
    EXPECT_EQ(r.o[0], 2.0);
    EXPECT_EQ(r.o[1], 2.0);
    EXPECT_EQ(r.lse[0], 0.693147182464599609375);
    // dV_j = sum_rows P dO = 2 * 0.5 (P recomputed from L, within a few FP32 ulps of 0.5);
    // dQ = dS K = 0 and dK = dS^T Q = 0 since K = Q = 0.
    EXPECT_NEAR(r.g.dv[0], 1.0, 1e-6);
    EXPECT_NEAR(r.g.dv[1], 1.0, 1e-6);
    EXPECT_EQ(r.g.dq[0], 0.0);
    EXPECT_EQ(r.g.dk[1], 0.0);
  }
}

// Causal: token 0 sees only chunk 0 (O = 1, L = 0); token 1 sees both (O = 2).
TEST(ContextParallel, TinyCausal) {
  const tiny t;
  const pit::attention_result r = pit::cp_attention(
      fp32_opts(pit::merge_form::global, pit::merge_bug::none, true), t.view(), t.dout.data());
  EXPECT_EQ(r.o[0], 1.0);
  EXPECT_EQ(r.lse[0], 0.0);
  EXPECT_EQ(r.o[1], 2.0);
}

// The deliberate bugs on chunk 1. skip_rescale: O = 0.5*1 + 1*3 = 3.5. stale_lse (global):
// L = 0 + ln(exp(0)) = 0 without chunk 1, O = e^0*1 + e^0*3 = 4; (online): L stays 0, the old
// part keeps weight exp(0 - 0) = 1 and chunk 1 gets exp(0 - 0) = 1: also 4.
TEST(ContextParallel, TinyWrongMerges) {
  const tiny t;
  for (auto form : {pit::merge_form::global, pit::merge_form::online}) {
    const auto skip =
        pit::cp_attention(fp32_opts(form, pit::merge_bug::skip_rescale), t.view(), t.dout.data());
    EXPECT_EQ(skip.o[0], 3.5);
    const auto stale = pit::cp_attention(fp32_opts(form, pit::merge_bug::stale_lse), t.view(), t.dout.data());
    EXPECT_EQ(stale.o[0], 4.0);
    EXPECT_EQ(stale.lse[0], 0.0);
  }
}

// Under the exact policy the merge is exact math: CP equals the single pass up to binary64
// rounding (relative 1e-13), forward and backward, both forms, both orders, causal or not.
TEST(ContextParallel, ExactPolicyMatchesSinglePass) {
  const at::attention_inputs in = at::scenario_random(1, 1, 64, 16, 7);
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  for (bool causal : {false, true})
    for (auto form : {pit::merge_form::global, pit::merge_form::online})
      for (bool desc : {false, true}) {
        pit::cp_options o;
        o.cfg.pol.kind = at::policy_kind::exact;
        o.cfg.causal = causal;
        o.chunks = 4, o.form = form, o.descending = desc, o.threads = 2;
        const auto cp = pit::cp_attention(o, h, in.dout.data());
        const auto one = pit::single_pass(o.cfg, h, in.dout.data(), true);
        EXPECT_LT(pit::compare(cp.o, one.o, 52).rel_norm, 1e-13);
        EXPECT_LT(pit::compare(cp.lse, one.lse, 52).rel_norm, 1e-13);
        EXPECT_LT(pit::compare(cp.g.dq, one.g.dq, 52).rel_norm, 1e-13);
        EXPECT_LT(pit::compare(cp.g.dk, one.g.dk, 52).rel_norm, 1e-13);
        EXPECT_LT(pit::compare(cp.g.dv, one.g.dv, 52).rel_norm, 1e-13);
      }
}

// FA2 arithmetic (sm80 tensor-core model, BF16 O): a correct merge stays within a few BF16
// epsilon of the single pass; a merge that forgets one chunk's rescale is off by tens of
// epsilon (the order of the ~150 eps failures reported for Megatron context parallelism).
TEST(ContextParallel, Fa2CorrectVersusWrongMerge) {
  const at::attention_inputs in = at::scenario_random(1, 1, 128, 32, 3);
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  pit::cp_options o;
  o.cfg.pol = at::fa2_twin();
  o.chunks = 4, o.threads = 2;
  const auto one = pit::single_pass(o.cfg, h, in.dout.data(), true);
  const auto good = pit::cp_attention(o, h, in.dout.data());
  EXPECT_LT(pit::compare(good.o, one.o, 7).rel_eps(), 3.0);
  EXPECT_LT(pit::compare(good.g.dq, one.g.dq, 23).rel_eps(), 3.0);
  EXPECT_LT(pit::compare(good.g.dk, one.g.dk, 23).rel_eps(), 3.0);
  EXPECT_LT(pit::compare(good.g.dv, one.g.dv, 23).rel_eps(), 3.0);
  o.bug = pit::merge_bug::skip_rescale, o.bug_chunk = 2;
  const auto bad = pit::cp_attention(o, h, in.dout.data());
  EXPECT_GT(pit::compare(bad.o, one.o, 7).rel_eps(), 20.0);
  EXPECT_GT(pit::compare(bad.g.dq, one.g.dq, 23).rel_eps(), 20.0);
}
