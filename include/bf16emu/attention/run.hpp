// bf16emu attention: runs a policy over batch x heads (heads in parallel), against the
// exact policy, and gathers the ledger, the output errors and the element trace. Pure
// numerics: the JSON and text reports are in src/io/attention.hpp; progress goes through a
// callback.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/backward_fa2.hpp"
#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/scenario.hpp"
#include "bf16emu/parallel.hpp"

namespace bf16emu::attention {

struct run_options {
  forward_config cfg;
  bool backward = false;
  backward_config bwd; // reference (default) or tiled, with its block sizes and orders
  bool with_ledger = true;
  bool with_reference = true; // also run the exact policy and compare
  unsigned threads = 0;       // 0: hardware concurrency
  progress_fn progress;       // called after each finished (batch, head) item; may be empty
  long trace_batch = 0, trace_head = 0;
};

struct run_report {
  run_options opt;
  long batch = 0, heads = 0, n = 0, d = 0;
  ledger led;
  error_summary o_err, delta_err, dq_err, dk_err, dv_err;
  std::vector<double> o, lse, o_exact;
  std::vector<double> delta, delta_exact, dq, dk, dv, dq_exact, dk_exact, dv_exact;
  std::vector<trace_point> trace;
  double trace_final_lp = 0, trace_final_exact = 0;
  int out_frac_bits = 52;
  int grad_frac_bits = 52; // format of the gradients (backward_result::out_frac_bits)
  double seconds = 0;
};

namespace run_detail {
// What one (batch, head) item leaves besides the slices of the report's vectors it owns.
struct item_result {
  int out_frac_bits = 52, grad_frac_bits = 52;
};

// Runs item bh and writes its results into the slices of rep that belong to bh (disjoint
// from every other item's, so no lock is needed); the traced item also fills rep.trace.
template <class Obs>
item_result one_head(const attention_inputs &in, const run_options &opt, long bh, Obs &obs, run_report &rep) {
  const long hs = in.head_size();
  head_view h{in.n, in.d, &in.q[bh * hs], &in.k[bh * hs], &in.v[bh * hs]};
  forward_config cfg = opt.cfg;
  const bool traced = opt.cfg.trace_row >= 0 && bh == opt.trace_batch * in.heads + opt.trace_head;
  if (!traced) cfg.trace_row = -1;
  forward_result lp = forward_head(cfg, h, obs);
  forward_result ex;
  forward_config ecfg = cfg;
  ecfg.pol.kind = policy_kind::exact;
  if (opt.with_reference) {
    null_observer none;
    ex = forward_head(ecfg, h, none);
  }
  backward_result blp, bex;
  if (opt.backward) {
    blp = backward_any(cfg, opt.bwd, h, &in.dout[bh * hs], lp, obs);
    if (opt.with_reference) { // the exact baseline is the reference backward either way
      null_observer none;
      bex = backward_head(ecfg, h, &in.dout[bh * hs], ex, none);
    }
  }
  item_result res;
  std::copy(lp.o.begin(), lp.o.end(), rep.o.begin() + bh * hs);
  std::copy(lp.lse.begin(), lp.lse.end(), rep.lse.begin() + bh * in.n);
  res.out_frac_bits = lp.out_frac_bits;
  if (opt.with_reference) std::copy(ex.o.begin(), ex.o.end(), rep.o_exact.begin() + bh * hs);
  if (traced) {
    rep.trace = std::move(lp.trace);
    const long idx = opt.cfg.trace_row * in.d + opt.cfg.trace_col;
    rep.trace_final_lp = lp.o[idx];
    if (opt.with_reference) rep.trace_final_exact = ex.o[idx];
  }
  if (opt.backward) {
    res.grad_frac_bits = blp.out_frac_bits;
    std::copy(blp.delta.begin(), blp.delta.end(), rep.delta.begin() + bh * in.n);
    std::copy(blp.dq.begin(), blp.dq.end(), rep.dq.begin() + bh * hs);
    std::copy(blp.dk.begin(), blp.dk.end(), rep.dk.begin() + bh * hs);
    std::copy(blp.dv.begin(), blp.dv.end(), rep.dv.begin() + bh * hs);
    if (opt.with_reference) {
      std::copy(bex.delta.begin(), bex.delta.end(), rep.delta_exact.begin() + bh * in.n);
      std::copy(bex.dq.begin(), bex.dq.end(), rep.dq_exact.begin() + bh * hs);
      std::copy(bex.dk.begin(), bex.dk.end(), rep.dk_exact.begin() + bh * hs);
      std::copy(bex.dv.begin(), bex.dv.end(), rep.dv_exact.begin() + bh * hs);
    }
  }
  return res;
}
} // namespace run_detail

inline int r_frac_grad(policy_kind k) {
  return k == policy_kind::exact ? 52 : k == policy_kind::paper ? 7 : 23;
}

// Runs opt.cfg over every (batch, head) of `in`. With a ledger (opt.with_ledger) every
// rounding is filed; without, the observer is null_observer and the hooks compile away.
inline run_report run_attention(const attention_inputs &in, const run_options &opt) {
  run_report rep;
  rep.opt = opt;
  rep.batch = in.batch, rep.heads = in.heads, rep.n = in.n, rep.d = in.d;
  const long items = static_cast<long>(checked_elements({in.batch, in.heads}));
  const std::size_t all = checked_elements({in.batch, in.heads, in.n, in.d}),
                    rows = checked_elements({in.batch, in.heads, in.n});
  rep.o.assign(all, 0.0), rep.lse.assign(rows, 0.0);
  if (opt.with_reference) rep.o_exact.assign(all, 0.0);
  if (opt.backward) {
    rep.delta.assign(rows, 0.0), rep.dq.assign(all, 0.0), rep.dk.assign(all, 0.0), rep.dv.assign(all, 0.0);
    if (opt.with_reference) {
      rep.delta_exact.assign(rows, 0.0);
      rep.dq_exact.assign(all, 0.0), rep.dk_exact.assign(all, 0.0), rep.dv_exact.assign(all, 0.0);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  // One result slot and one ledger per item, merged in item order afterwards: the ledger's
  // compensated sums are not associative, so merging per worker would make their last bits
  // depend on which thread ran which head.
  const auto count = static_cast<std::uint64_t>(items);
  std::vector<ledger> leds(opt.with_ledger ? count : 0);
  std::vector<run_detail::item_result> slots(static_cast<std::size_t>(items));
  parallel_for(
      count, opt.threads,
      [&](std::uint64_t i, unsigned) {
        const long bh = static_cast<long>(i);
        if (opt.with_ledger) {
          slots[i] = run_detail::one_head(in, opt, bh, leds[i], rep);
        } else {
          null_observer none;
          slots[i] = run_detail::one_head(in, opt, bh, none, rep);
        }
      },
      opt.progress);
  for (auto &l : leds)
    rep.led.merge(l);
  if (!slots.empty())
    rep.out_frac_bits = slots[0].out_frac_bits, rep.grad_frac_bits = slots[0].grad_frac_bits;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.with_reference) {
    const auto row = static_cast<std::size_t>(rep.d), head = static_cast<std::size_t>(rep.n * rep.d);
    rep.o_err = summarize_error(rep.o, rep.o_exact, rep.out_frac_bits, row, head);
    if (opt.backward) {
      // delta is FP32 (fa2, fp32), BF16 (paper) or binary64 (exact); the gradients are in the
      // backward's output format (the tiled backward under fa2 writes BF16)
      rep.delta_err = summarize_error(rep.delta, rep.delta_exact, delta_frac_bits(opt.cfg.pol), 1,
                                      static_cast<std::size_t>(rep.n));
      const int g = rep.grad_frac_bits;
      rep.dq_err = summarize_error(rep.dq, rep.dq_exact, g, row, head);
      rep.dk_err = summarize_error(rep.dk, rep.dk_exact, g, row, head);
      rep.dv_err = summarize_error(rep.dv, rep.dv_exact, g, row, head);
    }
  }
  return rep;
}

} // namespace bf16emu::attention
