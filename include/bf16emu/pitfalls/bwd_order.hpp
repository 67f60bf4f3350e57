// bf16emu pitfalls: deterministic backward. The same backward under several accumulation
// orders (blockwise.hpp), each run several times and with several thread counts:
// every fixed order must give the same bits each time; two different orders give different
// bits, and this counts how many and how far apart (ULPs, normwise in BF16 epsilon).
//
// Orders in the style of DASH (Qiang et al., "DASH: Deterministic Attention Scheduling for
// High-throughput Reproducible LLM Training", arXiv 2601.21824, ICLR 2026): its two schedules,
// Descending Q-Tile Iteration and Shift Scheduling, change which query tile each KV tile
// visits when, and with it the order of the dQ (and dK, dV) sums; see schedule_kind.
#pragma once

#include <vector>

#include "bf16emu/attention/run.hpp"
#include "bf16emu/pitfalls/blockwise.hpp"
#include "bf16emu/pitfalls/compare.hpp"

namespace bf16emu::pitfalls {

struct order_spec {
  schedule_kind kind = schedule_kind::ascending;
  std::uint64_t seed = 0; // random
  std::string name() const {
    return kind == schedule_kind::random ? "random:" + std::to_string(seed) : std::string(to_string(kind));
  }
};

struct bwd_order_options {
  at::forward_config cfg;
  long block = 64;
  bool out_bf16 = false; // round the summed gradients to BF16 (a kernel writing BF16 dQ/dK/dV)
  std::vector<order_spec> orders;
  std::vector<int> threads = {1, 2};
  int repeats = 2;
  bool with_exact = true; // also the binary64 single-pass backward, for the error of each order
};

struct order_result {
  order_spec spec;
  grads g;                                 // from the first run
  std::vector<std::uint64_t> fingerprints; // one per (threads, repeat) run: dQ, dK, dV together
  std::vector<int> run_threads;            // thread count of each run
  bool reproducible() const {
    for (auto f : fingerprints)
      if (f != fingerprints.front()) return false;
    return true;
  }
  diff_stats err_dq, err_dk, err_dv; // against the binary64 backward (with_exact)
};

struct order_pair_diff {
  std::size_t a = 0, b = 0; // indices into orders
  diff_stats dq, dk, dv;
};

struct bwd_order_report {
  bwd_order_options opt;
  long n = 0, d = 0;
  std::vector<order_result> orders;
  std::vector<order_pair_diff> pairs;
};

inline std::uint64_t fingerprint(const grads &g) {
  return fingerprint(g.dv, fingerprint(g.dk, fingerprint(g.dq)));
}

inline bwd_order_report run_bwd_orders(const bwd_order_options &opt, const at::head_view &h,
                                       const double *dout) {
  bwd_order_report rep;
  rep.opt = opt, rep.n = h.n, rep.d = h.d;
  at::null_observer none;
  const at::forward_result fwd = at::forward_head(opt.cfg, h, none);
  for (const auto &s : opt.orders)
    rep.orders.push_back({s, {}, {}, {}, {}, {}, {}});
  const long nb = h.n / opt.block;
  bool first = true;
  for (int t : opt.threads)
    for (int r = 0; r < opt.repeats; ++r) {
      const pair_partials p = pair_backward(opt.cfg, h, dout, fwd.o, fwd.lse, opt.block, t);
      for (auto &o : rep.orders) {
        const schedule s = make_schedule(o.spec.kind, nb, opt.cfg.causal, o.spec.seed, p.completion);
        grads g = accumulate(p, s, opt.cfg.pol.kind, opt.out_bf16);
        o.fingerprints.push_back(fingerprint(g));
        o.run_threads.push_back(t);
        if (first) o.g = std::move(g);
      }
      first = false;
    }
  if (opt.with_exact) {
    at::forward_config ecfg = opt.cfg;
    ecfg.pol.kind = at::policy_kind::exact;
    const at::forward_result ef = at::forward_head(ecfg, h, none);
    const at::backward_result eb = at::backward_head(ecfg, h, dout, ef, none);
    for (auto &o : rep.orders) {
      o.err_dq = compare(o.g.dq, eb.dq, 52);
      o.err_dk = compare(o.g.dk, eb.dk, 52);
      o.err_dv = compare(o.g.dv, eb.dv, 52);
    }
  }
  for (std::size_t a = 0; a < rep.orders.size(); ++a)
    for (std::size_t b = a + 1; b < rep.orders.size(); ++b) {
      const grads &x = rep.orders[a].g, &y = rep.orders[b].g;
      rep.pairs.push_back({a, b, compare(x.dq, y.dq, x.frac_bits), compare(x.dk, y.dk, x.frac_bits),
                           compare(x.dv, y.dv, x.frac_bits)});
    }
  return rep;
}

} // namespace bf16emu::pitfalls
