// The ledger's accounting on cases small enough to follow every rounding by hand.
//
// The two-key case used below (n = 2, d = 16):
//   Q rows = K rows = e0 (1 at index 0), V row 0 = (1, 0, ..., 0), V row 1 = (2^-8, 0, ..., 0).
//   Every score is 1, so each row's maximum is repeated: P-bar = (1, 1) in both rows, l = 2,
//   and the exact output is O[r][0] = (1 + 2^-8)/2 = 0.5 + 2^-9, O[r][i > 0] = 0.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bf16emu/attention.hpp"
#include "cases.hpp"

namespace at = bf16emu::attention;
using bf16emu::f32;

namespace {

using attention_cases::two_keys;

at::run_report run(const at::attention_inputs &in, const char *policy, bool backward = false,
                   bool causal = false) {
  at::run_options o;
  EXPECT_TRUE(at::parse_policy(policy, o.cfg.pol));
  o.cfg.var = at::variant::fa2;
  o.cfg.causal = causal;
  o.backward = backward;
  o.threads = 1;
  return at::run_attention(in, o);
}

const at::site_stats &S(const at::run_report &r, at::site s) { return r.led.sites[int(s)]; }

} // namespace

TEST(Ledger, PaperWorkedExample) {
  // Notes (Qiu & Yao's example): FP32 running sum 0xC01A0E2E plus V = -2.296875 (0xC0130000).
  // The FP32 sum is exact: -4.703990459442139 (0xC0968717). To BF16: kept 1.0010110, guard 1,
  // sticky 1 -> up in magnitude -> 0xC097 = -4.71875, error -0.014759540557861328125.
  at::ledger led;
  at::site_tracer<at::ledger> pv{&led, at::site::pv, true}, to16{&led, at::site::pv_to_bf16, true};
  const auto s = bf16emu::add(f32::from_bits(0xC01A0E2Eu), f32::from_bits(0xC0130000u), bf16emu::env{}, pv);
  EXPECT_EQ(s.value.bits, 0xC0968717u);
  const auto b = bf16emu::convert<bf16emu::bfloat16>(s.value, bf16emu::env{}, to16);
  EXPECT_EQ(b.value.bits, 0xC097u);
  // Without the residual: -2.40625 + -2.296875 = -4.703125, an exact BF16 tie between
  // -4.6875 (0xC096, even) and -4.71875: nearest-even gives -4.6875, error +0.015625.
  const auto t = bf16emu::convert<bf16emu::bfloat16>(bf16emu::from_float(-4.703125f), bf16emu::env{}, to16);
  EXPECT_EQ(t.value.bits, 0xC096u);

  const auto &a = led.sites[int(at::site::pv)].all;
  EXPECT_EQ(a.count, 1u);
  EXPECT_EQ(a.zero, 1u);
  const auto &c = led.sites[int(at::site::pv_to_bf16)];
  EXPECT_EQ(c.all.count, 2u);
  EXPECT_EQ(c.all.neg, 1u);
  EXPECT_EQ(c.all.pos, 1u);
  EXPECT_EQ(c.all.ties, 1u);
  EXPECT_EQ(c.all.sum.value(), -0.014759540557861328125 + 0.015625);
  EXPECT_EQ(c.p_one.count, 2u);
}

TEST(Ledger, Fa2TwoKeysTieAtFinalRounding) {
  // fa2:sm80. S = 1 exactly (tensor-core blocks of 8: 2 blocks per dot, 2x2 dots = 8 events,
  // all exact). m*c = c exactly; the exp2 argument fma(1, c, -c) = 0; exp2(0) = 1: P = P-bar = 1
  // at all 4 entries. Lane sums: columns 0 and 1 both belong to lane 0: l0 = 1 + 1 = 2, exact.
  // P-bar V, column 0: 1*1 + 1*2^-8 = 1 + 2^-8, exact in FP32 (sum of the 2 blocks: exact).
  // inv = RN(1/2) = 0.5, o = (1 + 2^-8)*0.5 = 0.5 + 2^-9: exact in FP32. To BF16: the ulp at
  // 0.5 is 2^-8, so 2^-9 is half an ulp: a tie, nearest-even keeps 0.5 (even): error -2^-9.
  const auto r = run(two_keys(), "fa2:sm80");
  EXPECT_EQ(r.o[0], 0.5);
  EXPECT_EQ(r.o[16], 0.5);
  EXPECT_EQ(r.o_exact[0], 0.5 + std::ldexp(1.0, -9));

  EXPECT_EQ(S(r, at::site::qk).all.count, 8u);
  EXPECT_EQ(S(r, at::site::qk).all.zero, 8u);
  EXPECT_EQ(S(r, at::site::exp).all.count, 4u);
  EXPECT_EQ(S(r, at::site::exp).all.zero, 4u);
  EXPECT_EQ(S(r, at::site::exp).p_one.count, 4u);
  // row sums per row: lane 0 adds 0 + 1 and 1 + 1; the quad reduction adds l0 + l2 = 2 + 0,
  // l1 + l3 = 0 + 0 and 2 + 0. A sum of two zeros is an exact zero that the core returns without
  // rounding (docs/semantics.md: zeros), so 4 events per row, all exact.
  EXPECT_EQ(S(r, at::site::row_sum).all.count, 8u);
  EXPECT_EQ(S(r, at::site::row_sum).all.zero, 8u);
  EXPECT_EQ(S(r, at::site::p_to_bf16).all.count, 4u);
  EXPECT_EQ(S(r, at::site::p_to_bf16).all.zero, 4u);
  // P-bar V: 2 rows x 16 columns x (k = 2 padded to one m16n8k16: two blocks of 8) = 64 blocks,
  // all exact; the 32 first blocks hold the P-bar = 1 products.
  EXPECT_EQ(S(r, at::site::pv).all.count, 64u);
  EXPECT_EQ(S(r, at::site::pv).all.zero, 64u);
  EXPECT_EQ(S(r, at::site::pv).p_one.count, 32u);
  // the only inexact roundings: the two ties at O -> BF16
  const auto &o = S(r, at::site::o_to_bf16).all;
  EXPECT_EQ(o.ties, 2u);
  EXPECT_EQ(o.neg, 2u);
  EXPECT_EQ(o.pos, 0u);
  EXPECT_EQ(o.sum.value(), -std::ldexp(1.0, -8));
  EXPECT_EQ(S(r, at::site::normalize).all.pos + S(r, at::site::normalize).all.neg, 0u);
  // P-bar = 1: 4 of 4 entries; both (row, block) pairs hold two of them
  EXPECT_EQ(r.led.p_entries, 4u);
  EXPECT_EQ(r.led.p_one_entries, 4u);
  EXPECT_EQ(r.led.rows_with_p_one, 2u);
  EXPECT_EQ(r.led.rows_tied, 2u);
  // output error: two elements off by -2^-9 among 32; in ulps of the exact value (2^-8): -1/2,
  // which the histogram rounds away from zero into bin -1.
  EXPECT_EQ(r.o_err.n, 32u);
  EXPECT_EQ(r.o_err.mean_signed, -std::ldexp(1.0, -9) / 16);
  EXPECT_EQ(r.o_err.max_abs, std::ldexp(1.0, -9));
  EXPECT_EQ(r.o_err.negative, 2u);
  EXPECT_EQ(r.o_err.ulp_hist.at(-1), 2u);
  EXPECT_EQ(r.o_err.ulp_hist.at(0), 30u);
}

TEST(Ledger, PaperTwoKeysTieAtPvToBf16) {
  // paper policy. S = RN16(1) * RN32(1/4) = 0.25 (exact); x = RN16(0.25 - 0.25) = 0; exp(0) = 1.
  // Row sum 1 + 1 = 2. P-bar V in FP32: fma(1, 1, 0) = 1, fma(1, 2^-8, 1) = 1 + 2^-8 (exact).
  // Rounded to BF16: the ulp at 1 is 2^-7, 2^-8 is half of it: a tie, nearest-even keeps 1:
  // error -2^-8 in each row, a P-bar = 1 event. O = 1/2 = 0.5 (exact), vs exact 0.5 + 2^-9.
  const auto r = run(two_keys(), "paper");
  EXPECT_EQ(r.o[0], 0.5);
  const auto &pv = S(r, at::site::pv_to_bf16);
  EXPECT_EQ(pv.all.ties, 2u);
  EXPECT_EQ(pv.all.neg, 2u);
  EXPECT_EQ(pv.all.pos, 0u);
  EXPECT_EQ(pv.all.sum.value(), -std::ldexp(1.0, -7));
  EXPECT_EQ(pv.p_one.ties, 2u);
  EXPECT_EQ(pv.p_one.sum.value(), -std::ldexp(1.0, -7));
  // qk: 2x2 dots of 16 FP32 FMAs (all exact) + 4 roundings to BF16
  EXPECT_EQ(S(r, at::site::qk).all.count, 68u);
  EXPECT_EQ(S(r, at::site::qk).all.zero, 68u);
  for (auto s :
       {at::site::scale, at::site::row_sum, at::site::o_update, at::site::normalize, at::site::o_to_bf16})
    EXPECT_EQ(S(r, s).all.pos + S(r, s).all.neg, 0u) << at::to_string(s);
  EXPECT_EQ(r.led.p_one_entries, 4u);
  EXPECT_EQ(r.o_err.mean_signed, -std::ldexp(1.0, -9) / 16);
}

TEST(Ledger, Fp32CausalCountsAndDelta) {
  // fp32, causal: row 0 sees key 0, row 1 keys 0 and 1: 3 dots of 16 FMAs = 48 qk events,
  // each exact (sums of 1*1 and 0*0 terms). Backward: delta = sum_i dO*O per row as 16 FMAs:
  // row 0: O = V row 0 = e0 -> delta 1; row 1: O[0] = 0.5 + 2^-9 (FP32, exact) -> delta =
  // 0.5 + 2^-9; all 32 delta FMAs exact, and delta_lp - delta_hp = 0.
  const auto r = run(two_keys(), "fp32", true, true);
  EXPECT_EQ(S(r, at::site::qk).all.count, 48u);
  EXPECT_EQ(S(r, at::site::qk).all.zero, 48u);
  EXPECT_EQ(S(r, at::site::delta).all.count, 32u);
  EXPECT_EQ(S(r, at::site::delta).all.zero, 32u);
  EXPECT_EQ(r.delta[0], 1.0);
  EXPECT_EQ(r.delta[1], 0.5 + std::ldexp(1.0, -9));
  EXPECT_EQ(r.delta_err.max_abs, 0.0);
}

TEST(Ledger, Fa2DeltaCarriesTheTieError) {
  // fa2:sm80 with backward: O = 0.5 (BF16, from the tie above) in both rows, dO = e0:
  // delta_lp = 0.5, delta_hp = 0.5 + 2^-9 in both rows: delta error exactly -2^-9, 2 negatives.
  const auto r = run(two_keys(), "fa2:sm80", true);
  EXPECT_EQ(r.delta[0], 0.5);
  EXPECT_EQ(r.delta_err.mean_signed, -std::ldexp(1.0, -9));
  EXPECT_EQ(r.delta_err.negative, 2u);
  EXPECT_EQ(S(r, at::site::delta).all.count, 32u);
  EXPECT_EQ(S(r, at::site::delta).all.zero, 32u);
}

TEST(Ledger, ElementTraceFollowsTheAccumulation) {
  // paper policy, O[1][0] in the two-key case: two keys in one block. After key 0 the FP32
  // running sum is 1 (exact reference 1); after key 1 it is 1 + 2^-8 (reference 1 + 2^-8);
  // the block's BF16 rounding then gives 1: cumulative error -2^-8 at the boundary point.
  at::run_options o;
  at::parse_policy("paper", o.cfg.pol);
  o.cfg.trace_row = 1, o.cfg.trace_col = 0;
  const auto r = at::run_attention(two_keys(), o);
  ASSERT_EQ(r.trace.size(), 3u);
  EXPECT_EQ(r.trace[0].t, 0);
  EXPECT_EQ(r.trace[0].pbar, 1.0);
  EXPECT_EQ(r.trace[0].running, 1.0);
  EXPECT_EQ(r.trace[0].cum_error, 0.0);
  EXPECT_EQ(r.trace[1].running, 1.0 + std::ldexp(1.0, -8));
  EXPECT_EQ(r.trace[1].cum_error, 0.0);
  EXPECT_TRUE(r.trace[2].boundary);
  EXPECT_EQ(r.trace[2].running, 1.0);
  EXPECT_EQ(r.trace[2].cum_error, -std::ldexp(1.0, -8));
  EXPECT_EQ(r.trace_final_lp - r.trace_final_exact, -std::ldexp(1.0, -9));
}

TEST(Ledger, SummaryStatisticsByHand) {
  // errors (+1, -1, -3, -1) around want = 8 (ulp in BF16: 2^-4 ... scaled below):
  // mean -1, sample sd sqrt(((2)^2 + 0 + (-2)^2 + 0)/3) = sqrt(8/3), stderr = sqrt(8/3)/2.
  const std::vector<double> want = {8, 8, 8, 8}, got = {9, 7, 5, 7};
  const auto e = at::summarize_error(got, want, 7);
  EXPECT_EQ(e.mean_signed, -1.0);
  EXPECT_DOUBLE_EQ(e.stderr_signed, std::sqrt(8.0 / 3.0) / 2.0);
  EXPECT_EQ(e.mean_abs, 1.5);
  EXPECT_EQ(e.max_abs, 3.0);
  EXPECT_DOUBLE_EQ(e.rel_fro, std::sqrt(12.0 / 256.0));
  // ulp of 8 in BF16 = 2^(3-7) = 1/16: errors of 16, 16, 48, 16 ulps, clamped to +-8
  EXPECT_EQ(e.ulp_hist.at(8), 1u);
  EXPECT_EQ(e.ulp_hist.at(-8), 3u);
}

TEST(Ledger, Fa2RescaleRowMaxNormalizeByHand) {
  // fa2:sm80, forward KV order, Bc = 16, n = 32, d = 16, softmax scale = RN32(ln 2), so that
  // c = RN32(scale * log2 e) = 1 exactly (RN32(ln 2) * log2 e = 1 + 2.7e-9, within half an ulp of 1).
  // Q rows = e0; keys 0..15 = e0 (S = 1), keys 16..31 = 3*e0 (S = 3); V column 0 = 1, rest 0.
  // Every row: block 0: m = 1, m*c = 1 (row_max, exact), P = exp2(fma(1, 1, -1)) = exp2(0) = 1,
  //   lane sums l_q = 4 (columns (j mod 8)/2 = q), O_acc[0] = 16.
  // block 1: m = 3, m*c = 3 (row_max, exact); rescale: RN(1 - 3) = -2, RN(-2 * 1) = -2,
  //   alpha = exp2(-2) = 0.25 (exact), O_acc[0] = 16 * 0.25 = 4, l_q = 4 * 0.25 = 1 (all exact;
  //   zero accumulators give exact zeros, which are not events): 1 + 1 + 1 + 1 + 4 = 8 events.
  //   P = 1 again: l_q = 5, O_acc[0] = 20; l = (5 + 5) + (5 + 5) = 20.
  // normalize: inv = RN32(1/20) = 13421773 * 2^-28 = 0.0500000007450580596923828125
  //   (error +7.450580596923828125e-10); o = RN32(20 * inv) = RN32(1.000000014901161193847656...)
  //   = 1 (error -1.490116119384765625e-8). O = 1 in BF16, exact.
  at::attention_inputs in;
  in.n = 32, in.d = 16;
  in.q.assign(32 * 16, 0.0), in.k.assign(32 * 16, 0.0), in.v.assign(32 * 16, 0.0);
  for (int r = 0; r < 32; ++r)
    in.q[r * 16] = 1.0, in.k[r * 16] = r < 16 ? 1.0 : 3.0, in.v[r * 16] = 1.0;
  at::run_options o;
  at::parse_policy("fa2:sm80", o.cfg.pol);
  o.cfg.pol.block_m = 32, o.cfg.pol.block_n = 16, o.cfg.pol.kv = at::kv_order::forward;
  o.cfg.pol.softmax_scale = 0.693147180559945309417;
  o.threads = 1;
  const auto r = at::run_attention(in, o);
  for (int row = 0; row < 32; ++row)
    ASSERT_EQ(r.o[row * 16], 1.0);
  EXPECT_LT(r.o_err.max_abs, 1e-15);
  const auto &rm = S(r, at::site::row_max).all;
  EXPECT_EQ(rm.count, 64u);
  EXPECT_EQ(rm.zero, 64u);
  const auto &rs = S(r, at::site::rescale).all;
  EXPECT_EQ(rs.count, 32u * 8u);
  EXPECT_EQ(rs.zero, 32u * 8u);
  const auto &nz = S(r, at::site::normalize).all;
  EXPECT_EQ(nz.count, 64u);
  EXPECT_EQ(nz.pos, 32u);
  EXPECT_EQ(nz.neg, 32u);
  EXPECT_EQ(nz.sum.value(), 32 * (7.450580596923828125e-10 - 1.490116119384765625e-8));
  EXPECT_EQ(S(r, at::site::o_to_bf16).all.pos + S(r, at::site::o_to_bf16).all.neg, 0u);
  EXPECT_EQ(r.led.p_one_entries, 32u * 32u);
}

TEST(Ledger, SummaryRowClusteredStderrByHand) {
  // The same errors (+1, -1, -3, -1) as above, in two rows of two: mean -1, deviations
  // (+2, 0 | -2, 0), row sums of deviations +2 and -2; G = 2 rows:
  // stderr_rows = sqrt(G/(G-1) * (2^2 + (-2)^2)) / n = sqrt(2 * 8) / 4 = 1.
  const std::vector<double> want = {8, 8, 8, 8}, got = {9, 7, 5, 7};
  const auto e = at::summarize_error(got, want, 7, 2);
  EXPECT_EQ(e.mean_signed, -1.0);
  EXPECT_DOUBLE_EQ(e.stderr_rows, 1.0);
  EXPECT_DOUBLE_EQ(e.z_rows(), -1.0);
  // Rows (+1, -1 | -3, -1) regrouped as (+1, -3 | -1, -1): deviations (+2, -2 | 0, 0), row sums 0
  // and 0, so the clustered error is 0 while the independent one is unchanged.
  const auto f = at::summarize_error({9, 5, 7, 7}, want, 7, 2);
  EXPECT_EQ(f.stderr_rows, 0.0);
  EXPECT_DOUBLE_EQ(f.stderr_signed, std::sqrt(8.0 / 3.0) / 2.0);
}

TEST(Ledger, SummaryLeavesOutNonFinite) {
  // A NaN output (and an Inf one) where the exact value is finite is counted, not averaged:
  // the statistics are those of the two finite pairs, errors +1 and -1.
  const double nan = std::nan("");
  const std::vector<double> want = {8, 8, 8, 8}, got = {9, nan, 7, INFINITY};
  const auto e = at::summarize_error(got, want, 7, 2);
  EXPECT_EQ(e.nonfinite, 2u);
  EXPECT_EQ(e.first_nonfinite, 1);
  EXPECT_EQ(e.n, 2u);
  EXPECT_EQ(e.mean_signed, 0.0);
  EXPECT_EQ(e.max_abs, 1.0);
  EXPECT_FALSE(std::isnan(e.stderr_signed));
}

// Algorithm 1 of the paper with a large beta can underflow a whole row. Two keys with the
// same scaled score r_m: Q = K rows = 8 e0, d = 16, scale 1/4: S = 64/4 = 16 for both keys,
// so r_s = 2 and m = beta * 16. P-bar = exp(16 - 16 beta) for both keys. The smallest BF16
// subnormal is 2^-133, so anything below 2^-134 (= e^-92.88) rounds to 0 under RNE:
//   beta = 2: exp(-16) = 1.1e-7, fine;  beta = 8: exp(-112) = 2.3e-49 -> 0, so l = 0 and
//   O = 0/0 = NaN in the paper policy (the exact policy keeps e^-112 in binary64).
at::run_report stabilized_two_keys(const char *policy, double beta) {
  at::attention_inputs in;
  in.n = 2, in.d = 16;
  in.q.assign(32, 0.0), in.k.assign(32, 0.0), in.v.assign(32, 0.0), in.dout.assign(32, 0.0);
  in.q[0] = in.q[16] = in.k[0] = in.k[16] = 8.0;
  in.v[0] = 1.0, in.v[16] = -0.5;
  at::run_options o;
  EXPECT_TRUE(at::parse_policy(policy, o.cfg.pol));
  o.cfg.var = at::variant::stabilized;
  o.cfg.pol.beta = beta;
  o.threads = 1;
  return at::run_attention(in, o);
}

TEST(Ledger, StabilizedLargeBetaUnderflowsTheRow) {
  const auto ok = stabilized_two_keys("paper", 2.0);
  EXPECT_EQ(ok.o_err.nonfinite, 0u);
  EXPECT_EQ(ok.o[0], 0.25); // (1 - 0.5) / 2, both weights equal
  const auto under = stabilized_two_keys("paper", 8.0);
  EXPECT_EQ(under.o_err.nonfinite, 32u); // every element of both rows: 0/0
  EXPECT_TRUE(std::isnan(under.o[0]));
  EXPECT_EQ(under.o_err.first_nonfinite, 0);
  EXPECT_EQ(under.o_exact[0], 0.25); // the exact policy does not underflow
  const auto exact = stabilized_two_keys("exact", 8.0);
  EXPECT_EQ(exact.o[0], 0.25);
}

// The tie tolerance of the stabilized max is in the units of the scores the softmax sees,
// s = S / sqrt(d), under every policy. d = 16 (scale 1/4 exactly); both query rows are
// 8 e0 + 2^-9 e1; key 0 = 8 e0, key 1 = 8 e0 - gap * 2^9 e1, so the unscaled scores are 64 and
// 64 - gap, the scaled ones 16 and 16 - gap / 4 (all exact in BF16 and FP32).
//   gap = 2^-9 = 0.00195: scaled gap 0.00049 < tie_tol 1e-3, a tie: r_s = 2, m = 2 * 16 (scaled),
//     every P-bar = exp(16 - 32) or less, so no P-bar is 1.
//   gap = 2^-4 = 0.0625: scaled gap 0.0156 > 1e-3, no tie: m = r_m, key 0 has P-bar = 1 in
//     each of the two rows; key 1 has exp(-0.0156) = 0.9845, below 1 even in BF16 (0.984375).
// (Comparing the unscaled scores, as the fa2 form once did, finds no tie at gap 2^-9: 2 ones.)
// The paper policy is not here: it rounds the scaled scores to BF16 (spacing 1/8 at 16), which
// merges both gaps into exact ties; its test already runs on the scaled scores.
std::uint64_t p_ones_near_tie(const char *policy, double gap) {
  at::attention_inputs in;
  in.n = 2, in.d = 16;
  in.q.assign(32, 0.0), in.k.assign(32, 0.0), in.v.assign(32, 0.0), in.dout.assign(32, 0.0);
  in.q[0] = in.q[16] = 8.0, in.q[1] = in.q[17] = 0x1p-9;
  in.k[0] = in.k[16] = 8.0, in.k[17] = -gap * 0x1p9;
  in.v[0] = 1.0, in.v[16] = -0.5;
  at::run_options o;
  EXPECT_TRUE(at::parse_policy(policy, o.cfg.pol));
  o.cfg.var = at::variant::stabilized;
  o.threads = 1;
  const at::run_report r = at::run_attention(in, o);
  EXPECT_EQ(r.led.p_entries, 4u) << policy;
  return r.led.p_one_entries;
}

TEST(Ledger, StabilizedTieToleranceIsInScaledScoreUnits) {
  for (const char *policy : {"exact", "fp32", "fa2:sm80", "fa2:sm90"}) {
    EXPECT_EQ(p_ones_near_tie(policy, 0x1p-9), 0u) << policy; // scaled gap < tie_tol: a tie
    EXPECT_EQ(p_ones_near_tie(policy, 0x1p-4), 2u) << policy; // scaled gap > tie_tol: no tie
  }
}
