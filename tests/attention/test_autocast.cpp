// paper:autocast: the authors' attention.py under torch.amp.autocast(bfloat16) (docs/attention.md,
// "paper:autocast"). Expected values are worked out by hand below (the FP32 and BF16 roundings of
// a few numbers were checked with Python's struct module: float32 = struct.pack('<f', x), BF16 =
// round-to-nearest-even of the upper 16 bits), never by the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bf16emu/attention.hpp"
#include "cases.hpp"

namespace at = bf16emu::attention;

namespace {

at::run_options options(const char *policy, at::variant var = at::variant::fa2, bool causal = false) {
  at::run_options o;
  EXPECT_TRUE(at::parse_policy(policy, o.cfg.pol));
  o.cfg.var = var;
  o.cfg.causal = causal;
  o.threads = 1;
  return o;
}

// n x 16 inputs with every row of Q equal to qa*e0 and every row of K equal to kb*e0: every
// score is RN16(RN16(qa*kb) * 1/4).
at::attention_inputs e0_inputs(long n, double qa, double kb) {
  at::attention_inputs in;
  in.n = n, in.d = 16;
  in.q.assign(n * 16, 0.0), in.k.assign(n * 16, 0.0), in.v.assign(n * 16, 0.0), in.dout.assign(n * 16, 0.0);
  for (long r = 0; r < n; ++r)
    in.q[r * 16] = qa, in.k[r * 16] = kb;
  return in;
}

} // namespace

TEST(PaperAutocast, Names) {
  at::kernel_policy p;
  ASSERT_TRUE(at::parse_policy("paper:autocast", p));
  EXPECT_EQ(p.kind, at::policy_kind::paper);
  EXPECT_EQ(p.paper_arith, at::paper_dtypes::autocast);
  EXPECT_EQ(p.block_m, 512); // model.py: FlashAttentionFunction.apply(q, k, v, None, True, 512, 512)
  EXPECT_EQ(p.block_n, 512);
  EXPECT_EQ(p.kv, at::kv_order::forward); // k.split(512), in order
  EXPECT_EQ(at::policy_name(p), "paper:autocast");
  at::kernel_policy a, b;
  ASSERT_TRUE(at::parse_policy("paper", a));
  ASSERT_TRUE(at::parse_policy("paper:bf16", b));
  EXPECT_EQ(at::policy_name(a), "paper"); // the alias keeps its name in the ledgers
  EXPECT_EQ(at::policy_name(b), "paper:bf16");
  EXPECT_EQ(a.paper_arith, at::paper_dtypes::bf16);
  EXPECT_EQ(b.paper_arith, at::paper_dtypes::bf16);
  EXPECT_EQ(b.block_n, 64);
  EXPECT_EQ(b.kv, at::kv_order::reverse);
  EXPECT_FALSE(at::parse_policy("paper:fp16", p));
  EXPECT_FALSE(at::parse_policy("paper:", p));
  // paper and paper:bf16 are one arithmetic
  const auto in = at::scenario_sink(1, 1, 64, 16, 2, at::sink_params{});
  const auto ra = at::run_attention(in, options("paper")), rb = at::run_attention(in, options("paper:bf16"));
  EXPECT_EQ(ra.o, rb.o);
  EXPECT_EQ(ra.lse, rb.lse);
}

TEST(PaperAutocast, CarriedRowSumIsBf16) {
  // n = 257 keys, every score 1/4 (Q = K = e0, d = 16), V[0] = e0, every other V row 0: one
  // 512-key tile, every P = exp(RN16(1/4 - 1/4)) = 1, P-bar = 1. The tile's FP32 row sum is 257
  // (exact); row_sums.copy_ stores it in BF16: 257 = 2^8 (1 + 2^-8) is halfway between 256 and
  // 258 -> nearest even 256. P-bar V = 1 (FP32, then BF16: 1); O = RN16(RN32(1/256)) = 2^-8 in
  // every row. With the row sum kept in FP32 (--site-precision row_sum=fp32), l = 257 and O =
  // RN16(RN32(1/257)) = 255 * 2^-16 (1/257 = 0.00389105..., between 255*2^-16 = 0.00389099 and
  // 2^-8 = 0.00390625, nearer the former). The exact O is 1/257.
  auto in = e0_inputs(257, 1.0, 1.0);
  in.v[0] = 1.0;
  auto o = options("paper:autocast");
  const auto r = at::run_attention(in, o);
  o.cfg.pol.site_precision[int(at::site::row_sum)] = at::site_prec::fp32;
  const auto f = at::run_attention(in, o);
  for (long row = 0; row < 257; ++row) {
    EXPECT_EQ(r.o[row * 16], std::ldexp(1.0, -8)) << row;
    EXPECT_EQ(f.o[row * 16], 255 * std::ldexp(1.0, -16)) << row;
    EXPECT_NEAR(r.o_exact[row * 16], 1.0 / 257, 1e-15);
    // lse = RN32(log l) + m (FP32): log 256 + 1/4 vs log 257 + 1/4
    EXPECT_EQ(r.lse[row], double(float(double(float(std::log(256.0))) + 0.25))) << row;
    EXPECT_EQ(f.lse[row], double(float(double(float(std::log(257.0))) + 0.25))) << row;
  }
}

TEST(PaperAutocast, FullyMaskedTileMakesTheMaxZeroUnderStabilized) {
  // Causal, n = 600, d = 16, Q rows = -2 e0, K rows = 2 e0: every unmasked score is
  // RN16(RN16(-4) * 1/4) = -1. V[0] = 7 e0. Row 0 in the first 512-row tile sees key 0 only.
  // Key tile 0 (keys 0..511): S = (-1, max_neg x 511); r_m = -1; stabilized: the threshold
  // RN16(-1 - RN32(1e-3)) = -1 admits one entry, no tie, m = -1. P = (1, exp(RN16(max_neg + 1)) =
  // 0, ...), l_blk = 1; alpha = exp(RN16(max_neg - (-1))) = exp(max_neg) = 0, so l = RN16(0 + 1)
  // = 1 and O = P-bar V = 7.
  // Key tile 1 (keys 512..599): fully masked, 88 entries equal to max_neg: the threshold
  // RN16(RN32(max_neg - 1e-3)) = max_neg admits all 88 (r_s = 88 > 1) and r_m < 0, so r_m = 0
  // and m = max(0, -1) = 0. P = exp(max_neg) = 0, l_blk = 0 clamped to RN32(1e-10).
  // alpha = RN32(exp(-1)) = 0x1.78b564p-2; l = RN16(RN32(alpha*1 + 1e-10)) = RN16(alpha) =
  // 0x1.78p-2 = 0.3671875; O = RN16(RN32(7 alpha)) = 0x1.4ap+1 = 2.578125 (+ 0); final
  // O = RN16(RN32(2.578125 / 0.3671875 = 7.0212...)) = 7.03125; lse = RN32(RN32(log 0.3671875) +
  // 0) = -0x1.007b62p+0. Without stabilization tile 1 leaves m = -1, alpha = 1, l = RN16(1 +
  // 1e-10) = 1: O = 7, lse = -1.
  auto in = e0_inputs(600, -2.0, 2.0);
  in.v[0] = 7.0;
  for (const auto var : {at::variant::stabilized, at::variant::fa2}) {
    auto o = options("paper:autocast", var, true);
    o.with_ledger = false, o.with_reference = false;
    const auto r = at::run_attention(in, o);
    const bool stab = var == at::variant::stabilized;
    EXPECT_EQ(r.o[0], stab ? 7.03125 : 7.0);
    EXPECT_EQ(r.lse[0], stab ? -0x1.007b62p+0 : -1.0);
    for (int i = 1; i < 16; ++i)
      EXPECT_EQ(r.o[i], 0.0);
  }
  // paper:bf16 skips the key tiles past the diagonal (and its tiles are 64 keys): row 0 sees
  // key 0 alone, O = 7 either way.
  auto o = options("paper:bf16", at::variant::stabilized, true);
  o.with_ledger = false, o.with_reference = false;
  EXPECT_EQ(at::run_attention(in, o).o[0], 7.0);
}

TEST(PaperAutocast, DeltaIsStoredInBf16) {
  // Two keys, V rows = (1, 2^-8, 0, ...), dO rows = (1, 1, 0, ...). P-bar = (1, 1): P-bar V =
  // (2, 2^-7), l = 2, O = (1, 2^-8) under both paper policies. delta = RN16(1*1) + RN16(1*2^-8)
  // = 1 + 2^-8 in FP32, stored in BF16 under both paper policies (the authors' backward runs
  // outside autocast, on BF16 tensors): a tie, to even -> 1. The exact delta is 1 + 2^-8.
  auto in = attention_cases::two_keys();
  for (int r = 0; r < 2; ++r) {
    in.v[r * 16] = 1.0, in.v[r * 16 + 1] = std::ldexp(1.0, -8);
    in.dout[r * 16] = in.dout[r * 16 + 1] = 1.0;
  }
  for (const char *pol : {"paper:autocast", "paper:bf16"}) {
    auto o = options(pol);
    o.backward = true;
    const auto r = at::run_attention(in, o);
    for (int row = 0; row < 2; ++row) {
      EXPECT_EQ(r.o[row * 16], 1.0) << pol;
      EXPECT_EQ(r.o[row * 16 + 1], std::ldexp(1.0, -8)) << pol;
      EXPECT_EQ(r.delta[row], 1.0) << pol;
      EXPECT_EQ(r.delta_exact[row], 1.0 + std::ldexp(1.0, -8));
    }
  }
}
