// The tiled FlashAttention-2 backward (include/bf16emu/attention/backward_fa2.hpp) against the
// non-tiled reference (backward_head), hand derivations and counts of its roundings.
// Expected values come from hand derivations in the comments or from bounds derived from the unit
// roundoff; none is taken from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bf16emu/attention.hpp"

namespace at = bf16emu::attention;

namespace {

struct run_result {
  at::forward_result f;
  at::backward_result ref, tiled;
};

at::forward_config config(const char *policy, bool causal = false) {
  at::forward_config c;
  EXPECT_TRUE(at::parse_policy(policy, c.pol));
  c.var = at::variant::fa2;
  c.causal = causal;
  return c;
}

at::backward_config tiled(int br, int bc) {
  at::backward_config b;
  b.kind = at::backward_kind::tiled;
  b.block_m = br, b.block_n = bc;
  return b;
}

at::head_view view(const at::attention_inputs &in) {
  return {in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
}

run_result run_both(const at::attention_inputs &in, const at::forward_config &c,
                    const at::backward_config &b) {
  at::null_observer none;
  run_result r;
  r.f = at::forward_head(c, view(in), none);
  r.ref = at::backward_head(c, view(in), in.dout.data(), r.f, none);
  r.tiled = at::backward_fa2_head(c, b, view(in), in.dout.data(), r.f, none);
  return r;
}

double max_abs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

long differing(const std::vector<double> &a, const std::vector<double> &b) {
  long k = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    k += a[i] != b[i];
  return k;
}

const std::uint64_t &site_count(const at::ledger &l, at::site s) { return l.sites[int(s)].all.count; }

} // namespace

// (a) Under the exact policy the tiling is exact math: tiled and reference gradients agree to
// binary64 reassociation (relative 1e-12 of the largest entry), including n not divisible by
// the block sizes, blocks larger than n, odd block sizes and the causal mask.
TEST(BackwardTiled, ExactEqualsReference) {
  struct shape {
    long n, d;
    int br, bc;
  };
  for (const shape s : {shape{16, 16, 16, 16}, shape{37, 16, 8, 16}, shape{50, 32, 16, 8},
                        shape{33, 64, 128, 128}, shape{40, 16, 7, 5}, shape{23, 8, 1, 3}})
    for (bool causal : {false, true})
      for (auto dq : {at::block_order::ascending, at::block_order::descending}) {
        const auto in = at::scenario_random(1, 1, s.n, s.d, 7 + s.n);
        auto b = tiled(s.br, s.bc);
        b.dq_order = dq;
        const auto r = run_both(in, config("exact", causal), b);
        for (auto [t, f] : {std::pair{&r.tiled.dq, &r.ref.dq}, std::pair{&r.tiled.dk, &r.ref.dk},
                            std::pair{&r.tiled.dv, &r.ref.dv}, std::pair{&r.tiled.delta, &r.ref.delta}}) {
          const double m = max_abs(*f);
          ASSERT_GT(m, 0);
          for (std::size_t i = 0; i < t->size(); ++i)
            ASSERT_LE(std::fabs((*t)[i] - (*f)[i]), 1e-12 * m)
                << "n " << s.n << " d " << s.d << " Br " << s.br << " Bc " << s.bc << " causal " << causal;
        }
        EXPECT_EQ(r.tiled.out_frac_bits, 52);
      }
}

// (d) n = 2, d = 2, scale 1, by hand. Q rows (1, 0); K rows (0, 1), (0, 2): S = 0 everywhere.
// V rows (1, 2), (3, -2); dO rows (1, 0), (0, 1).
// Forward: P = 1 for both keys, l = 2, O = (V0 + V1)/2 = (2, 0) in both rows, L = ln 2.
// Backward: P = exp(0 - ln 2) = 1/2. delta_0 = dO_0.O_0 = 2, delta_1 = 0.
// dP_rj = dO_r.V_j: dP_00 = 1, dP_01 = 3, dP_10 = 2, dP_11 = -2.
// dS = P (dP - delta): dS_00 = -1/2, dS_01 = 1/2, dS_10 = 1, dS_11 = -1 (rows sum to 0).
// dQ_r = sum_j dS_rj K_j: dQ_0 = (0, -1/2 + 1) = (0, 1/2), dQ_1 = (0, 1 - 2) = (0, -1).
// dK_j = sum_r dS_rj Q_r: dK_0 = (-1/2 + 1, 0) = (1/2, 0), dK_1 = (1/2 - 1, 0) = (-1/2, 0).
// dV_j = sum_r P_rj dO_r = (1/2, 1/2) for both keys.
// Every value is exact in BF16 and FP32. Under fp32 and fa2 the stored L is RN32(ln 2) and
// L*RN32(log2 e) = 0.99999998939... rounds to 1 in FP32, so P = exp2(0*c - 1) = 1/2 exactly
// (exp2_poly(-1): r = 0, p = c0 = 1, scaled by 2^-1): the gradients are exact there too.
// Under exact, L*log2 e is 1 to binary64 rounding: agreement to 1e-14.
TEST(BackwardTiled, TwoByTwoByHand) {
  at::attention_inputs in;
  in.n = 2, in.d = 2;
  in.q = {1, 0, 1, 0};
  in.k = {0, 1, 0, 2};
  in.v = {1, 2, 3, -2};
  in.dout = {1, 0, 0, 1};
  const std::vector<double> dq = {0, 0.5, 0, -1}, dk = {0.5, 0, -0.5, 0}, dv = {0.5, 0.5, 0.5, 0.5},
                            delta = {2, 0};
  for (const char *pol : {"exact", "fp32", "fa2:sm80", "fa2:sm90", "paper"})
    for (int blk : {1, 2, 16}) {
      auto c = config(pol);
      c.pol.softmax_scale = 1.0;
      for (auto dl : {at::delta_order::fa2_lanes, at::delta_order::sequential}) {
        auto b = tiled(blk, blk);
        b.delta = dl;
        const auto r = run_both(in, c, b);
        const double tol = std::string(pol) == "exact" ? 1e-14 : 0.0;
        for (int i = 0; i < 4; ++i) {
          EXPECT_NEAR(r.tiled.dq[i], dq[i], tol) << pol << " Br=Bc=" << blk << " dq " << i;
          EXPECT_NEAR(r.tiled.dk[i], dk[i], tol) << pol << " Br=Bc=" << blk << " dk " << i;
          EXPECT_NEAR(r.tiled.dv[i], dv[i], tol) << pol << " Br=Bc=" << blk << " dv " << i;
          EXPECT_NEAR(r.ref.dq[i], dq[i], tol) << pol << " reference dq " << i;
        }
        EXPECT_NEAR(r.tiled.delta[0], delta[0], tol);
        EXPECT_NEAR(r.tiled.delta[1], delta[1], tol);
      }
    }
}

// delta's order, by hand (flash_bwd_preprocess_kernel.h, dot_do_o): d = 64, O = 1 in every
// column, dO = 2^24 in column 0, 1 in columns 1 and 8, -2^24 in column 32, 0 elsewhere.
// Exact: 2^24 + 1 + 1 - 2^24 = 2.
// Sequential FP32: 2^24 + 1 is a tie between 2^24 and 2^24 + 2 -> 2^24 (even); + 1 again -> 2^24;
// - 2^24 -> 0.
// FA2: 8 lanes, lane t owns columns with (c / 8) mod 8 = t: lane 0 = {0, 1} -> 2^24 (same tie),
// lane 1 = {8} -> 1, lane 4 = {32} -> -2^24, the rest 0. Butterfly offset 4: s0 = 2^24 - 2^24 = 0,
// s1 = 1; offset 2: s0 = 0, s1 = 1; offset 1: s0 = 0 + 1 = 1.
TEST(BackwardTiled, DeltaLanesByHand) {
  std::vector<double> o(64, 1.0), dout(64, 0.0);
  dout[0] = 0x1p24, dout[1] = 1, dout[8] = 1, dout[32] = -0x1p24;
  at::null_observer none;
  const at::f32_ops<at::null_observer> ops{&none};
  using at::bwd_detail::delta_row;
  EXPECT_EQ(
      delta_row(ops, false, /*paper*/ false, true, at::delta_order::sequential, dout.data(), o.data(), 64),
      0.0);
  EXPECT_EQ(
      delta_row(ops, false, /*paper*/ false, true, at::delta_order::fa2_lanes, dout.data(), o.data(), 64),
      1.0);
  EXPECT_EQ(
      delta_row(ops, false, /*paper*/ false, false, at::delta_order::fa2_lanes, dout.data(), o.data(), 64),
      1.0);
  EXPECT_EQ(
      delta_row(ops, true, /*paper*/ false, true, at::delta_order::fa2_lanes, dout.data(), o.data(), 64),
      2.0);
  // kernel_traits.h: kBlockKSmem = 64 when the kernel head dim is a multiple of 64, else 32;
  // threads per row = kBlockKSmem / 8.
  EXPECT_EQ(at::delta_lanes(16), 4);
  EXPECT_EQ(at::delta_lanes(32), 4);
  EXPECT_EQ(at::delta_lanes(64), 8);
  EXPECT_EQ(at::delta_lanes(96), 4);
  EXPECT_EQ(at::delta_lanes(128), 8);
}

namespace {

// (b) The bound. Both backwards compute S, P = exp2(S*c - L*log2e) and dP = dO V^T by the same
// operations from the same forward (O, L), so they share P and dP; they differ in delta's order,
// where the softmax scale is applied, the order and grouping of the sums over rows/keys and (fa2)
// which values are rounded to BF16 and the output format. Against g^ = the gradient formed
// exactly from the shared P and dP, each path has, to first order in u = 2^-24:
//   delta: any order of d products: |err| <= gamma_d * sum_c |dO O|          (gamma_k = k u / (1 - k u))
//   dS = P (dP - delta): two more roundings: |err| <= gamma_{d+2} * D,   D = P (|dP| + sum_c |dO O|)
//   a BF16 operand (fa2: P or dS before its product; the reference rounds dS*scale): u16 = 2^-8
//   relative per term
//   the sum over n terms: FMA chains, FP32 adds of block partials, or tensor-core blocks that
//   truncate to 24/25 bits (<= 2^-23 relative per block on the block's terms): <= (n + 16) 2^-22
//   relative to the sum of |terms| (generous: every term passes through < n + 16 blocks or steps)
//   the scale (exact for d = 64 or a power of 4, else one rounding) and the output rounding
//   (BF16: 2^-8, FP32: 2^-24) relative to the result.
// With A = the sum of |terms| (dV_jc: sum_r P |dO_rc|; dK_jc: scale sum_r D |Q_rc|; dQ_rc: scale
// sum_j D |K_jc|) this gives |g_path - g^| <= (u_op + gamma_{d+4} + (n + 16) 2^-22) A + u_out |g|,
// and |g_tiled - g_ref| <= the sum of both paths' bounds. A is evaluated in binary64 from the
// inputs with P = exp(S*scale - L) (the policy's P differs from it by far less than the 5 %
// margin used).
struct bound_check {
  long violations = 0, differ = 0, n = 0;
  double worst = 0; // largest |diff| / bound
};

bound_check check_bound(const at::attention_inputs &in, const at::forward_config &c, const run_result &r,
                        const at::backward_result &other) {
  const long n = in.n, d = in.d;
  const double scale = at::softmax_scale(c.pol, d);
  const bool tc = c.pol.kind == at::policy_kind::fa2;
  const double u = 0x1p-24, u16 = 0x1p-8;
  const double gamma = (d + 4) * u / (1 - (d + 4) * u), acc = (n + 16) * 0x1p-22;
  const double u_op = tc ? u16 : 0.0;
  const double e_rel = 2 * (u_op + gamma + acc) * 1.05; // both paths
  const double u_out = (r.tiled.out_frac_bits == 7 ? u16 : u) + (other.out_frac_bits == 7 ? u16 : u);
  std::vector<double> P(n * n, 0.0), D(n * n, 0.0);
  for (long i = 0; i < n; ++i) {
    double absd = 0;
    for (long x = 0; x < d; ++x)
      absd += std::fabs(in.dout[i * d + x] * r.f.o[i * d + x]);
    for (long j = 0; j < n; ++j) {
      if (c.causal && j > i) continue;
      double s = 0, dp = 0;
      for (long x = 0; x < d; ++x)
        s += in.q[i * d + x] * in.k[j * d + x], dp += in.dout[i * d + x] * in.v[j * d + x];
      P[i * n + j] = std::exp(s * scale - r.f.lse[i]);
      D[i * n + j] = P[i * n + j] * (std::fabs(dp) + absd);
    }
  }
  bound_check b;
  auto one = [&](double got, double want, double a) {
    const double bound = e_rel * a + u_out * std::max(std::fabs(got), std::fabs(want)) * 1.01;
    const double diff = std::fabs(got - want);
    ++b.n;
    b.differ += got != want;
    b.violations += diff > bound;
    if (bound > 0) b.worst = std::max(b.worst, diff / bound);
  };
  for (long j = 0; j < n; ++j)
    for (long x = 0; x < d; ++x) {
      double av = 0, ak = 0;
      for (long i = 0; i < n; ++i)
        av += P[i * n + j] * std::fabs(in.dout[i * d + x]), ak += D[i * n + j] * std::fabs(in.q[i * d + x]);
      one(r.tiled.dv[j * d + x], other.dv[j * d + x], av);
      one(r.tiled.dk[j * d + x], other.dk[j * d + x], scale * ak);
    }
  for (long i = 0; i < n; ++i)
    for (long x = 0; x < d; ++x) {
      double aq = 0;
      for (long j = 0; j < n; ++j)
        aq += D[i * n + j] * std::fabs(in.k[j * d + x]);
      one(r.tiled.dq[i * d + x], other.dq[i * d + x], scale * aq);
    }
  return b;
}

} // namespace

// (b) Under fp32 and fa2 the tiled backward rounds differently from the reference (some bits
// differ) and stays within the bound above.
TEST(BackwardTiled, RoundedPoliciesWithinUnitRoundoffBound) {
  struct shape {
    long n, d;
    int br, bc;
    bool causal;
  };
  for (const char *pol : {"fp32", "fa2:sm80", "fa2:sm90"})
    for (const shape s :
         {shape{48, 32, 16, 16, false}, shape{37, 64, 32, 16, false}, shape{40, 16, 16, 32, true}}) {
      const auto in = at::scenario_sink(1, 1, s.n, s.d, 3, at::sink_params{});
      const auto c = config(pol, s.causal);
      const auto r = run_both(in, c, tiled(s.br, s.bc));
      const bound_check b = check_bound(in, c, r, r.ref);
      EXPECT_EQ(b.violations, 0) << pol << " n " << s.n << " worst diff/bound " << b.worst;
      std::printf("%s n %ld: %ld of %ld entries differ, worst |diff|/bound %.3g\n", pol, s.n, b.differ, b.n,
                  b.worst);
      EXPECT_GT(b.differ, 0) << pol << " n " << s.n;
      EXPECT_EQ(r.tiled.out_frac_bits, std::string(pol) == "fp32" ? 23 : 7);
    }
}

// (f) The order of the dQ additions over KV blocks (FlashAttention-2's atomicAdd) is a
// parameter: with 3 or more KV blocks the two orders give different FP32 dQ bits in some entries
// (fp32 policy), both within the bound against the reference; dK and dV do not depend on it
// (bit-equal). Under fa2 the FP32 sums that differ by an ulp are then rounded to BF16, which
// mostly hides the order: only the bound is required there.
TEST(BackwardTiled, DqOrderChangesBitsWithinBound) {
  const auto in = at::scenario_random(1, 1, 64, 32, 11);
  for (const char *pol : {"fp32", "fa2:sm80"}) {
    const auto c = config(pol);
    auto asc = tiled(16, 16), desc = tiled(16, 16);
    desc.dq_order = at::block_order::descending;
    const auto r = run_both(in, c, asc);
    at::null_observer none;
    run_result r2 = r;
    r2.tiled = at::backward_fa2_head(c, desc, view(in), in.dout.data(), r.f, none);
    if (std::string(pol) == "fp32") {
      EXPECT_GT(differing(r.tiled.dq, r2.tiled.dq), 0);
    }
    EXPECT_TRUE(same_bits(r.tiled.dk, r2.tiled.dk)) << pol;
    EXPECT_TRUE(same_bits(r.tiled.dv, r2.tiled.dv)) << pol;
    EXPECT_EQ(check_bound(in, c, r, r.ref).violations, 0) << pol;
    EXPECT_EQ(check_bound(in, c, r2, r.ref).violations, 0) << pol;
  }
}

// (e) Determinism: the same bits on repeated runs, with and without the ledger, and with any
// number of worker threads (heads run in parallel; each head is sequential).
TEST(BackwardTiled, Deterministic) {
  const auto in = at::scenario_sink(1, 3, 40, 32, 5, at::sink_params{});
  at::run_options o;
  o.cfg = config("fa2:sm80", true);
  o.backward = true;
  o.bwd = tiled(16, 16);
  const auto a = at::run_attention(in, o);
  for (int threads : {1, 2, 3}) {
    o.threads = threads;
    for (bool ledger : {true, false}) {
      o.with_ledger = ledger;
      const auto b = at::run_attention(in, o);
      EXPECT_TRUE(same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) && same_bits(a.dv, b.dv) &&
                  same_bits(a.delta, b.delta))
          << threads << " threads, ledger " << ledger;
      if (ledger) {
        for (int s = 0; s < at::site_count; ++s)
          EXPECT_EQ(a.led.sites[s].all.count, b.led.sites[s].all.count) << at::to_string(at::site(s));
      }
    }
  }
  EXPECT_EQ(a.grad_frac_bits, 7);
}

// (c) Ledger counts by hand. Every operation below has a nonzero result for these random
// inputs, so each is one event (exact results included; only exact zeros are not events).
//
// fp32, n = 5, d = 64, Br = 2, Bc = 4 (KV blocks {0..3}, {4}; query blocks {0,1}, {2,3}, {4}),
// not causal, FMA contraction, delta in FA2's order:
//   delta:       per row 8 lanes x 8 columns = 64 products (1 mul + 7 FMA per lane) + 7 butterfly
//                adds = 71; x 5 rows = 355
//   bwd_qk, dp:  one FMA per (row, key, column): 5*5*64 = 1600 each
//   bwd_exp_arg: L*log2e once per (row, KV block) = 5*2 = 10, plus one FMA per (row, key) = 25: 35
//   bwd_exp:     25;  ds: a subtraction and a product per (row, key): 50
//   dv_acc, dk_acc: one FMA per (key, column, row) = 1600 each; dq_acc: per (row, column, key) 1600
//   dq_add:      per (row, column): 2 KV blocks - 1 = 1 add (the first is a copy): 5*64 = 320
//   grad_scale:  dK and dQ: 2*5*64 = 640;  no BF16 roundings under fp32.
TEST(BackwardTiled, LedgerCountsFp32ByHand) {
  const auto in = at::scenario_random(1, 1, 5, 64, 13);
  const auto c = config("fp32");
  at::null_observer none;
  const auto f = at::forward_head(c, view(in), none);
  at::ledger led;
  at::backward_fa2_head(c, tiled(2, 4), view(in), in.dout.data(), f, led);
  EXPECT_EQ(site_count(led, at::site::delta), 355u);
  EXPECT_EQ(site_count(led, at::site::bwd_qk), 1600u);
  EXPECT_EQ(site_count(led, at::site::dp), 1600u);
  EXPECT_EQ(site_count(led, at::site::bwd_exp_arg), 35u);
  EXPECT_EQ(site_count(led, at::site::bwd_exp), 25u);
  EXPECT_EQ(site_count(led, at::site::ds), 50u);
  EXPECT_EQ(site_count(led, at::site::dv_acc), 1600u);
  EXPECT_EQ(site_count(led, at::site::dk_acc), 1600u);
  EXPECT_EQ(site_count(led, at::site::dq_acc), 1600u);
  EXPECT_EQ(site_count(led, at::site::dq_add), 320u);
  EXPECT_EQ(site_count(led, at::site::grad_scale), 640u);
  for (auto s : {at::site::bwd_p_to_bf16, at::site::ds_to_bf16, at::site::grad_to_bf16, at::site::backward})
    EXPECT_EQ(site_count(led, s), 0u) << at::to_string(s);
}

// The same case causal (row r sees keys 0..r: 15 (row, key) pairs). Query block {4} is the only
// one that meets KV block {4}; every row of a visited pair sees a key of that block.
//   delta 355 (unchanged); bwd_qk, dp, dv_acc, dk_acc, dq_acc: 15*64 = 960 each
//   bwd_exp_arg: (row, KV block) pairs: 5 (block 0) + 1 (row 4, block 1) = 6, plus 15: 21
//   bwd_exp 15; ds 30; dq_add: only row 4 receives two KV blocks: 64; grad_scale 640.
TEST(BackwardTiled, LedgerCountsFp32CausalByHand) {
  const auto in = at::scenario_random(1, 1, 5, 64, 13);
  const auto c = config("fp32", true);
  at::null_observer none;
  const auto f = at::forward_head(c, view(in), none);
  at::ledger led;
  at::backward_fa2_head(c, tiled(2, 4), view(in), in.dout.data(), f, led);
  EXPECT_EQ(site_count(led, at::site::delta), 355u);
  for (auto s : {at::site::bwd_qk, at::site::dp, at::site::dv_acc, at::site::dk_acc, at::site::dq_acc})
    EXPECT_EQ(site_count(led, s), 960u) << at::to_string(s);
  EXPECT_EQ(site_count(led, at::site::bwd_exp_arg), 21u);
  EXPECT_EQ(site_count(led, at::site::bwd_exp), 15u);
  EXPECT_EQ(site_count(led, at::site::ds), 30u);
  EXPECT_EQ(site_count(led, at::site::dq_add), 64u);
  EXPECT_EQ(site_count(led, at::site::grad_scale), 640u);
}

// fa2:sm80 (tensor-core blocks of 8 products, instructions of k = 16, a short k zero-padded to
// 16: ceil(k/16)*2 blocks per dot, each block one event), n = 20, d = 64, Br = Bc = 16 (KV and
// query blocks {0..15}, {16..19}), not causal:
//   bwd_qk, dp:  400 dots of k = 64: 8 blocks each = 3200
//   dv_acc, dk_acc: per (key, column, query block) a dot of k = 16 or 4: 2 blocks: 20*64*2*2 = 5120
//   dq_acc:      per (row, column, KV block) k = 16 or 4: 2 blocks: 5120
//   bwd_exp_arg: 20*2 + 400 = 440; bwd_exp, bwd_p_to_bf16, ds_to_bf16: 400; ds: 800
//   dq_add: 20*64*(2-1) = 1280; grad_scale: 2*20*64 = 2560; grad_to_bf16: 3*20*64 = 3840
//   delta: 71 per row (as above) = 1420
TEST(BackwardTiled, LedgerCountsFa2ByHand) {
  const auto in = at::scenario_random(1, 1, 20, 64, 17);
  const auto c = config("fa2:sm80");
  at::null_observer none;
  const auto f = at::forward_head(c, view(in), none);
  at::ledger led;
  at::backward_fa2_head(c, tiled(16, 16), view(in), in.dout.data(), f, led);
  EXPECT_EQ(site_count(led, at::site::bwd_qk), 3200u);
  EXPECT_EQ(site_count(led, at::site::dp), 3200u);
  EXPECT_EQ(site_count(led, at::site::dv_acc), 5120u);
  EXPECT_EQ(site_count(led, at::site::dk_acc), 5120u);
  EXPECT_EQ(site_count(led, at::site::dq_acc), 5120u);
  EXPECT_EQ(site_count(led, at::site::bwd_exp_arg), 440u);
  EXPECT_EQ(site_count(led, at::site::bwd_exp), 400u);
  EXPECT_EQ(site_count(led, at::site::bwd_p_to_bf16), 400u);
  EXPECT_EQ(site_count(led, at::site::ds_to_bf16), 400u);
  EXPECT_EQ(site_count(led, at::site::ds), 800u);
  EXPECT_EQ(site_count(led, at::site::dq_add), 1280u);
  EXPECT_EQ(site_count(led, at::site::grad_scale), 2560u);
  EXPECT_EQ(site_count(led, at::site::grad_to_bf16), 3840u);
  EXPECT_EQ(site_count(led, at::site::delta), 1420u);
}

// The ledger is an observer: it does not change a bit of the tiled backward.
TEST(BackwardTiled, LedgerDoesNotChangeResults) {
  const auto in = at::scenario_sink(1, 1, 48, 32, 2, at::sink_params{});
  for (const char *pol : {"fp32", "fa2:sm90", "paper"}) {
    const auto c = config(pol, true);
    at::null_observer none;
    at::ledger led;
    const auto f = at::forward_head(c, view(in), none);
    const auto a = at::backward_fa2_head(c, tiled(16, 32), view(in), in.dout.data(), f, none);
    const auto b = at::backward_fa2_head(c, tiled(16, 32), view(in), in.dout.data(), f, led);
    EXPECT_TRUE(same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) && same_bits(a.dv, b.dv)) << pol;
  }
}

// The tiled backward's fa2 products run as packed columns: pack_cols lays ncols strided chains
// out as unit-stride columns and tc_dot_cols_at advances them together. Against the strided
// chains one at a time (tc_dot, the single-chain path): the packed operands equal the source
// entries they name, and the results and the ledger (every count and compensated sum, the
// P-bar = 1 subset included) are the same bits. B is a k x ncols row-major matrix (chain j down
// column j, stride ncols); k = 37 leaves a partial instruction; ncols = 11 = two groups of 4, one
// of 2 and a single; a (strided too) has ones (P-bar = 1 blocks) and the accumulators start nonzero.
TEST(BackwardTiled, PackedColumnsEqualStridedChains) {
  const int k = 37, nc = 11;
  std::vector<bf16emu::bf16> a(std::size_t(k) * 3), b(std::size_t(k) * nc); // a: column 1 of a k x 3 matrix
  std::uint32_t s = 12345;
  auto next = [&s] { return s = s * 1664525u + 1013904223u; };
  auto val = [&next] { return at::as_bf16(std::ldexp(double(int(next() >> 24) - 128), -6)); };
  for (int i = 0; i < 3 * k; ++i)
    a[i] = i % 27 == 13 ? at::as_bf16(1.0) : val();
  for (auto &x : b)
    x = val();
  std::vector<bf16emu::bf16> packed, ap;
  at::pack_cols(b.data(), nc, 1, k, nc, packed);
  at::pack_cols(a.data() + 1, 3, 1, k, 1, ap);
  ASSERT_EQ(ap.size(), std::size_t(k));
  for (int i = 0; i < k; ++i)
    ASSERT_EQ(ap[i].bits, a[3 * i + 1].bits) << i;
  ASSERT_EQ(packed.size(), std::size_t(k) * nc);
  for (int j = 0; j < nc; ++j)
    for (int i = 0; i < k; ++i)
      ASSERT_EQ(packed[j * k + i].bits, b[i * nc + j].bits) << i << " " << j;
  for (const char *arch : {"sm80", "sm90"}) {
    at::kernel_policy pol;
    ASSERT_TRUE(at::parse_policy((std::string("fa2:") + arch).c_str(), pol));
    const at::tc_model m = at::tc_for(pol.arch);
    ASSERT_TRUE(m.valid);
    for (bool p1 : {true, false}) {
      at::ledger one, cols;
      std::vector<double> c1(nc), c2(nc);
      for (int j = 0; j < nc; ++j)
        c1[j] = c2[j] = std::ldexp(double(j) - 5.0, -3);
      for (int j = 0; j < nc; ++j)
        c1[j] = at::of(at::tc_dot(m, a.data() + 1, 3, b.data() + j, nc, k, at::as_f32(c1[j]), one,
                                  at::site::dv_acc, p1));
      const at::f32_ops<at::ledger> o{&cols};
      at::tc_dot_cols_at(o, m, ap.data(), 1, packed.data(), 1, k, nc, k, c2.data(), at::site::dv_acc, p1);
      EXPECT_TRUE(same_bits(c1, c2)) << arch;
      const auto &x = one.sites[int(at::site::dv_acc)], &y = cols.sites[int(at::site::dv_acc)];
      EXPECT_GT(x.all.count, 0u);
      EXPECT_EQ(x.p_one.count > 0, p1) << arch;
      for (const auto &[u, v] : {std::pair{&x.all, &y.all}, std::pair{&x.p_one, &y.p_one}}) {
        EXPECT_EQ(u->count, v->count) << arch;
        EXPECT_EQ(u->pos, v->pos) << arch;
        EXPECT_EQ(u->neg, v->neg) << arch;
        EXPECT_EQ(u->zero, v->zero) << arch;
        EXPECT_EQ(u->ties, v->ties) << arch;
        EXPECT_EQ(u->away, v->away) << arch;
        EXPECT_EQ(u->toward, v->toward) << arch;
        for (auto f : {&at::sign_counts::sum, &at::sign_counts::sum_abs, &at::sign_counts::sum_rel})
          EXPECT_TRUE(same_bits({(u->*f).s, (u->*f).c}, {(v->*f).s, (v->*f).c})) << arch;
      }
    }
  }
}
