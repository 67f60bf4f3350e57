// The paper authors' backward (include/bf16emu/attention/backward_authors.hpp): invariants that
// hold whatever its rounding details are. Its bits are checked against an independent PyTorch
// reading in tests/python/test_paper_autocast_twin.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "bf16emu/attention.hpp"

namespace at = bf16emu::attention;

namespace {

at::forward_config config(const char *policy, bool causal, int tile) {
  at::forward_config c;
  EXPECT_TRUE(at::parse_policy(policy, c.pol));
  c.var = at::variant::fa2;
  c.causal = causal;
  c.pol.block_m = c.pol.block_n = tile;
  return c;
}

at::backward_config kind(at::backward_kind k) {
  at::backward_config b;
  b.kind = k;
  return b;
}

at::head_view view(const at::attention_inputs &in) {
  return {in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
}

// Inputs with BF16 values (so that the input rounding of the paper policies changes nothing).
at::attention_inputs bf16_inputs(at::attention_inputs in) {
  for (auto *a : {&in.q, &in.k, &in.v, &in.dout})
    for (double &x : *a)
      x = at::of(at::as_bf16(x));
  return in;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

double max_abs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

double rel_fro(const std::vector<double> &got, const std::vector<double> &want) {
  double e = 0, w = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    e += (got[i] - want[i]) * (got[i] - want[i]), w += want[i] * want[i];
  return std::sqrt(e / w);
}

} // namespace

// With the backward and delta sites promoted to exact (binary64), the authors' loop order
// (query tiles outer, key tiles inner, each chunk added into the running dQ, dK, dV) is exact
// math: it equals the exact policy's reference backward on the same O and L to binary64
// reassociation (1e-12 of the largest entry), causal or not, with tiles that do not divide n.
// d = 16: the softmax scale 1/4 is the same in FP32 and binary64.
TEST(BackwardAuthors, Binary64EqualsReference) {
  for (int tile : {8, 13, 64})
    for (bool causal : {false, true}) {
      const auto in = bf16_inputs(at::scenario_sink(1, 1, 40, 16, 3, at::sink_params{}));
      at::forward_config c = config("paper:autocast", causal, tile);
      c.pol.site_precision[int(at::site::backward)] = at::site_prec::exact;
      c.pol.site_precision[int(at::site::delta)] = at::site_prec::exact;
      at::forward_config ce = c;
      ce.pol.kind = at::policy_kind::exact;
      at::null_observer none;
      const auto f = at::forward_head(config("paper:autocast", causal, tile), view(in), none);
      const auto a = at::backward_any(c, kind(at::backward_kind::authors), view(in), in.dout.data(), f, none);
      const auto r = at::backward_head(ce, view(in), in.dout.data(), f, none);
      for (auto [g, w] : {std::pair{&a.dq, &r.dq}, std::pair{&a.dk, &r.dk}, std::pair{&a.dv, &r.dv},
                          std::pair{&a.delta, &r.delta}}) {
        const double m = max_abs(*w);
        ASSERT_GT(m, 0);
        for (std::size_t i = 0; i < g->size(); ++i)
          ASSERT_LE(std::fabs((*g)[i] - (*w)[i]), 1e-12 * m)
              << "tile " << tile << " causal " << causal << " i " << i;
      }
    }
}

// Under paper:bf16 the authors' code runs as written (every tensor BF16) and one tile holds every
// key: then it is the paper policy's reference backward (backward.hpp, written apart from it),
// bit for bit; both readings are the same arithmetic there (no mixed einsum).
TEST(BackwardAuthors, PaperBf16OneTileEqualsReferenceBitwise) {
  for (bool causal : {false, true}) {
    const auto in = at::scenario_sink(1, 2, 48, 32, 5, at::sink_params{});
    for (long h = 0; h < 2; ++h) {
      const long hs = in.n * in.d;
      const at::head_view hv{in.n, in.d, &in.q[h * hs], &in.k[h * hs], &in.v[h * hs]};
      const auto c = config("paper:bf16", causal, 64);
      at::null_observer none;
      const auto f = at::forward_head(c, hv, none);
      const auto r = at::backward_head(c, hv, &in.dout[h * hs], f, none);
      const auto a = at::backward_any(c, kind(at::backward_kind::authors), hv, &in.dout[h * hs], f, none);
      const auto p =
          at::backward_any(c, kind(at::backward_kind::authors_promote), hv, &in.dout[h * hs], f, none);
      for (const auto *x : {&a, &p}) {
        EXPECT_TRUE(same_bits(x->dq, r.dq)) << "causal " << causal;
        EXPECT_TRUE(same_bits(x->dk, r.dk)) << "causal " << causal;
        EXPECT_TRUE(same_bits(x->dv, r.dv)) << "causal " << causal;
        EXPECT_TRUE(same_bits(x->delta, r.delta)) << "causal " << causal;
      }
    }
  }
}

// The causal mask: no row before the last sees the last key, so changing that key's K and V
// leaves dQ of every earlier row bitwise unchanged (their O and L too); the last key's dK, dV
// change. Without the mask dQ of row 0 does change (so the check can tell).
TEST(BackwardAuthors, CausalMaskRespected) {
  for (auto k : {at::backward_kind::authors, at::backward_kind::authors_promote})
    for (bool causal : {true, false}) {
      const auto in = at::scenario_sink(1, 1, 48, 16, 9, at::sink_params{});
      auto in2 = in;
      const long n = in.n, d = in.d;
      for (long c = 0; c < d; ++c)
        in2.k[(n - 1) * d + c] += 0.75, in2.v[(n - 1) * d + c] -= 1.5;
      const auto cfg = config("paper:autocast", causal, 16);
      at::null_observer none;
      const auto f1 = at::forward_head(cfg, view(in), none), f2 = at::forward_head(cfg, view(in2), none);
      const auto a = at::backward_any(cfg, kind(k), view(in), in.dout.data(), f1, none);
      const auto b = at::backward_any(cfg, kind(k), view(in2), in2.dout.data(), f2, none);
      const std::vector<double> qa(a.dq.begin(), a.dq.end() - d), qb(b.dq.begin(), b.dq.end() - d);
      EXPECT_EQ(same_bits(qa, qb), causal) << at::to_string(k);
      long changed = 0;
      for (long c = 0; c < d; ++c)
        changed +=
            a.dk[(n - 1) * d + c] != b.dk[(n - 1) * d + c] || a.dv[(n - 1) * d + c] != b.dv[(n - 1) * d + c];
      EXPECT_GT(changed, 0);
    }
}

// The authors' own tiles (512) with two of them (n = 600, causal: rows 0..511 visit a fully
// masked key tile): finite gradients in BF16, as close to the binary64 gradients of the same
// inputs as the reference backward of the same policy (relative Frobenius error at most twice
// its, plus 1e-3, and under 10 %: here the reference's is 4.5 % for dQ, whose dS cancels), and
// the two readings differ.
TEST(BackwardAuthors, AuthorsTilesFiniteAndNearExact) {
  const auto in = bf16_inputs(at::scenario_sink(1, 1, 600, 64, 4, at::sink_params{}));
  at::forward_config c;
  ASSERT_TRUE(at::parse_policy("paper:autocast", c.pol));
  c.causal = true;
  ASSERT_EQ(c.pol.block_m, 512);
  at::forward_config ce = c;
  ce.pol.kind = at::policy_kind::exact;
  at::null_observer none;
  const auto f = at::forward_head(c, view(in), none), fe = at::forward_head(ce, view(in), none);
  const auto ex = at::backward_head(ce, view(in), in.dout.data(), fe, none);
  const auto ref = at::backward_head(c, view(in), in.dout.data(), f, none);
  const auto a = at::backward_any(c, kind(at::backward_kind::authors), view(in), in.dout.data(), f, none);
  const auto p =
      at::backward_any(c, kind(at::backward_kind::authors_promote), view(in), in.dout.data(), f, none);
  EXPECT_EQ(a.out_frac_bits, 7);
  for (const auto *x : {&a, &p}) {
    for (auto [g, rg, w] : {std::tuple{&x->dq, &ref.dq, &ex.dq}, std::tuple{&x->dk, &ref.dk, &ex.dk},
                            std::tuple{&x->dv, &ref.dv, &ex.dv}}) {
      for (double y : *g) {
        ASSERT_TRUE(std::isfinite(y));
        ASSERT_EQ(y, at::of(at::as_bf16(y))); // BF16 buffers
      }
      EXPECT_LT(rel_fro(*g, *w), 0.1);
      EXPECT_LT(rel_fro(*g, *w), 2 * rel_fro(*rg, *w) + 1e-3);
    }
  }
  EXPECT_FALSE(same_bits(a.dq, p.dq));
}

// A ledger changes no bit, and the roundings are filed only under input, delta and backward.
TEST(BackwardAuthors, LedgerSitesAndBits) {
  const auto in = at::scenario_sink(1, 1, 40, 16, 2, at::sink_params{});
  const auto c = config("paper:autocast", true, 16);
  at::null_observer none;
  const auto f = at::forward_head(c, view(in), none);
  at::ledger led;
  const auto a = at::backward_any(c, kind(at::backward_kind::authors), view(in), in.dout.data(), f, none);
  const auto b = at::backward_any(c, kind(at::backward_kind::authors), view(in), in.dout.data(), f, led);
  EXPECT_TRUE(same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) && same_bits(a.dv, b.dv) &&
              same_bits(a.delta, b.delta));
  for (int s = 0; s < at::site_count; ++s) {
    const auto site = at::site(s);
    const std::uint64_t count = led.sites[s].all.count;
    if (site == at::site::input || site == at::site::delta || site == at::site::backward)
      EXPECT_GT(count, 0u) << at::to_string(site);
    else
      EXPECT_EQ(count, 0u) << at::to_string(site);
  }
}

// The rule, one place for every front end: the authors' backward only under the paper policies.
TEST(BackwardAuthors, OnlyUnderPaperPolicies) {
  for (const char *pol : {"paper", "paper:bf16", "paper:autocast", "exact", "fp32", "fa2:sm80", "fa2_twin"}) {
    at::kernel_policy p;
    ASSERT_TRUE(at::parse_policy(pol, p));
    const bool paper = p.kind == at::policy_kind::paper;
    for (auto k : {at::backward_kind::authors, at::backward_kind::authors_promote})
      EXPECT_EQ(at::backward_policy_error(k, p) == nullptr, paper) << pol;
    for (auto k : {at::backward_kind::reference, at::backward_kind::tiled})
      EXPECT_EQ(at::backward_policy_error(k, p), nullptr) << pol;
  }
}
