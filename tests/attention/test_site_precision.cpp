// The per-site precision override (kernel_policy::site_precision, --site-precision).
//
// The two-key case (n = 2, d = 16, as in test_ledger.cpp): Q rows = K rows = e0, V row 0 =
// (1, 0, ...), V row 1 = (2^-8, 0, ...). Every score is 1 (scaled: 1/4), both keys are the
// row's maximum, P-bar = (1, 1), l = 2, and the exact O[r][0] = (1 + 2^-8)/2 = 0.5 + 2^-9.
// Under `paper` (one 64-key block) the roundings of O[r][0], worked out by hand:
//   pv         = 1 + 2^-8 (FP32, exact)
//   pv_to_bf16 : 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> nearest even 1
//   o_update   : 0 + pv (FP32), then BF16: the same tie when pv is still 1 + 2^-8 -> 1
//   normalize  : O / 2 (FP32, exact)
//   o_to_bf16  : 0.5 + 2^-9 is again a BF16 tie -> 0.5
// So O[r][0] = 0.5 under paper, and it becomes 0.5 + 2^-9 only when all three BF16 roundings
// are promoted (to fp32, where 1 + 2^-8 and 0.5 + 2^-9 are representable, or to exact).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bf16emu/attention.hpp"
#include "cases.hpp"

namespace at = bf16emu::attention;

namespace {

using attention_cases::two_keys;

at::run_report run(const at::attention_inputs &in, const char *policy,
                   std::initializer_list<std::pair<at::site, at::site_prec>> sp, bool backward = false,
                   at::variant var = at::variant::fa2) {
  at::run_options o;
  EXPECT_TRUE(at::parse_policy(policy, o.cfg.pol));
  for (const auto &[s, p] : sp)
    o.cfg.pol.site_precision[int(s)] = p;
  o.cfg.var = var;
  o.backward = backward;
  o.threads = 1;
  return at::run_attention(in, o);
}

std::uint64_t events(const at::run_report &r) {
  std::uint64_t n = 0;
  for (const auto &s : r.led.sites)
    n += s.all.count;
  return n;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] && std::signbit(a[i]) == std::signbit(b[i]))) return false;
  return true;
}

const double exact_o = 0.5 + std::ldexp(1.0, -9);

} // namespace

TEST(SitePrecision, DefaultIsPolicyEverywhere) {
  at::kernel_policy p;
  EXPECT_FALSE(at::has_site_override(p));
  for (const at::site_prec s : p.site_precision)
    EXPECT_EQ(s, at::site_prec::policy);
  p.site_precision[int(at::site::pv)] = at::site_prec::exact;
  EXPECT_TRUE(at::has_site_override(p));
}

TEST(SitePrecision, PaperTwoKeysEachBf16RoundingByHand) {
  const auto in = two_keys();
  using S = at::site;
  const auto fp32 = at::site_prec::fp32, ex = at::site_prec::exact;
  EXPECT_EQ(run(in, "paper", {}).o[0], 0.5);
  EXPECT_EQ(run(in, "paper", {{S::pv_to_bf16, fp32}}).o[0], 0.5);                      // o_update ties
  EXPECT_EQ(run(in, "paper", {{S::pv_to_bf16, fp32}, {S::o_update, fp32}}).o[0], 0.5); // o_to_bf16 ties
  EXPECT_EQ(run(in, "paper", {{S::pv_to_bf16, fp32}, {S::o_update, fp32}, {S::o_to_bf16, fp32}}).o[0],
            exact_o);
  EXPECT_EQ(run(in, "paper", {{S::pv_to_bf16, ex}, {S::o_update, ex}, {S::o_to_bf16, ex}}).o[0], exact_o);
  EXPECT_EQ(run(in, "paper", {{S::o_update, fp32}, {S::o_to_bf16, fp32}}).o[0], 0.5); // pv_to_bf16 ties
  // The ledger (exact zeros, the columns i > 0, are no events; docs/attention.md): paper has
  // the two O[r][0] ties at pv_to_bf16; fp32 turns them into FP32 roundings (exact: 1 + 2^-8 is
  // an FP32 number); exact files nothing there.
  const auto p = run(in, "paper", {});
  EXPECT_EQ(p.led.sites[int(S::pv_to_bf16)].all.count, 2u);
  EXPECT_EQ(p.led.sites[int(S::pv_to_bf16)].all.ties, 2u);
  const auto f = run(in, "paper", {{S::pv_to_bf16, fp32}});
  EXPECT_EQ(f.led.sites[int(S::pv_to_bf16)].all.count, 2u);
  EXPECT_EQ(f.led.sites[int(S::pv_to_bf16)].all.zero, 2u);
  const auto e = run(in, "paper", {{S::pv_to_bf16, ex}});
  EXPECT_EQ(e.led.sites[int(S::pv_to_bf16)].all.count, 0u);
}

TEST(SitePrecision, Fa2TwoKeysOutputRounding) {
  // fa2:sm80: P-bar V on the tensor-core model = 1 + 2^-8 (exact in FP32), times RN32(1/2):
  // 0.5 + 2^-9 in FP32, a BF16 tie at o_to_bf16 -> 0.5; promoted, the FP32 value stays.
  const auto in = two_keys();
  EXPECT_EQ(run(in, "fa2:sm80", {}).o[0], 0.5);
  EXPECT_EQ(run(in, "fa2:sm80", {{at::site::o_to_bf16, at::site_prec::fp32}}).o[0], exact_o);
  EXPECT_EQ(run(in, "fa2:sm80", {{at::site::o_to_bf16, at::site_prec::exact}}).o[0], exact_o);
}

TEST(SitePrecision, UnusedSitesChangeNothing) {
  // paper never rounds P to BF16 before a tensor core (p_to_bf16) nor runs the tiled backward
  // (ds_to_bf16); fa2 never has a paper pv_to_bf16 or o_update. Outputs and ledgers unchanged.
  const auto in = at::scenario_sink(1, 1, 64, 16, 3, at::sink_params{});
  const auto fp32 = at::site_prec::fp32, ex = at::site_prec::exact;
  for (const char *pol : {"paper", "fa2:sm90", "fp32"}) {
    const bool paper = std::string(pol) == "paper";
    const auto unused1 = paper ? at::site::p_to_bf16 : at::site::pv_to_bf16;
    const auto unused2 = paper ? at::site::ds_to_bf16 : at::site::o_update;
    const auto base = run(in, pol, {}, true);
    for (const auto prec : {fp32, ex}) {
      const auto r = run(in, pol, {{unused1, prec}, {unused2, prec}}, true);
      EXPECT_TRUE(same_bits(r.o, base.o)) << pol;
      EXPECT_TRUE(same_bits(r.delta, base.delta)) << pol;
      EXPECT_TRUE(same_bits(r.dq, base.dq)) << pol;
      for (int s = 0; s < at::site_count; ++s) {
        EXPECT_EQ(r.led.sites[s].all.count, base.led.sites[s].all.count) << pol << " " << s;
        EXPECT_EQ(r.led.sites[s].all.sum.value(), base.led.sites[s].all.sum.value()) << pol << " " << s;
      }
    }
  }
}

TEST(SitePrecision, PromotingAUsedSiteChangesO) {
  // The sink scenario's BF16 row sums and P-bar V products round (thousands of inexact events),
  // so promoting either site changes some output.
  const auto in = at::scenario_sink(1, 2, 96, 16, 3, at::sink_params{});
  const auto base = run(in, "paper", {});
  ASSERT_GT(base.led.sites[int(at::site::pv_to_bf16)].all.pos +
                base.led.sites[int(at::site::pv_to_bf16)].all.neg,
            0u);
  for (const auto s : {at::site::pv_to_bf16, at::site::row_sum, at::site::exp})
    for (const auto prec : {at::site_prec::fp32, at::site_prec::exact})
      EXPECT_FALSE(same_bits(run(in, "paper", {{s, prec}}).o, base.o)) << at::to_string(s);
}

TEST(SitePrecision, EverySiteExactIsBinary64) {
  // Every site exact leaves no rounding but binary64: no ledger event, and O agrees with the
  // exact policy to binary64 accuracy (not bit for bit: paper evaluates exp(S*scale - m) and
  // fa2 exp2(S*c - m*c), different binary64 expressions of the same real number).
  const auto in = at::scenario_sink(1, 1, 96, 16, 5, at::sink_params{});
  const auto ex = run(in, "exact", {});
  for (const char *pol : {"paper", "fa2:sm80", "fp32"}) {
    at::run_options o;
    EXPECT_TRUE(at::parse_policy(pol, o.cfg.pol));
    for (auto &p : o.cfg.pol.site_precision)
      p = at::site_prec::exact;
    o.threads = 1;
    const auto r = at::run_attention(in, o);
    EXPECT_EQ(events(r), 0u) << pol;
    double worst = 0;
    for (std::size_t i = 0; i < r.o.size(); ++i)
      worst = std::max(worst, std::fabs(r.o[i] - ex.o[i]) / std::max(1e-300, std::fabs(ex.o[i])));
    EXPECT_LT(worst, 1e-12) << pol;
    EXPECT_GT(events(run(in, pol, {})), 0u) << pol; // and without the override there are roundings
  }
}
