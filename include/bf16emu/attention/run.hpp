// bf16emu attention: runs a policy over batch x heads (heads and row blocks in parallel), against the
// exact policy, and gathers the ledger, the output errors and the element trace. Pure
// numerics: the JSON and text reports are in src/io/attention.hpp; progress goes through a
// callback.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/backward_fa2.hpp"
#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/scenario.hpp"
#include "bf16emu/parallel.hpp"

namespace bf16emu::attention {

struct run_report;

struct run_options {
  forward_config cfg;
  bool backward = false;
  backward_config bwd; // reference (default) or tiled, with its block sizes and orders
  bool with_ledger = true;
  bool with_reference = true; // also run the exact policy and compare
  unsigned threads = 0;       // 0: hardware concurrency
  progress_fn progress;       // called after each finished (batch, head) item; may be empty
  // Called after every finished item of every phase (forward row blocks, backward heads, the
  // tiled backward's set-up and tiles), one call at a time within a phase; may be empty. It may
  // throw to stop the run (parallel_for rethrows it): the Python module's Ctrl-C check.
  progress_fn tick;
  long trace_batch = 0, trace_head = 0;
  // A run split over processes (src/mpi): this one runs shard `part` of `parts` of the (batch,
  // head) items (shard_size); the others keep zero slices and empty ledgers until exchange,
  // called before the per-item ledgers are merged in item order, fills them in.
  std::uint64_t part = 0, parts = 1;
  std::function<void(std::vector<ledger> &items, run_report &rep)> exchange;
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
// One head's inputs in the fa2 form (the policy's and the exact run's), prepared by the first
// of its row-block items to start and released by the last to finish.
struct head_work {
  std::once_flag once;
  std::atomic<long> left{0};
  fwd_detail::fa2_prepared lp, ex;
};

// The configuration a head runs under: the element trace only on the traced head.
inline forward_config head_config(const attention_inputs &in, const run_options &opt, long bh) {
  forward_config cfg = opt.cfg;
  if (!(opt.cfg.trace_row >= 0 && bh == opt.trace_batch * in.heads + opt.trace_head)) cfg.trace_row = -1;
  return cfg;
}
inline forward_config exact_config(const forward_config &cfg) {
  forward_config e = cfg;
  e.pol.kind = policy_kind::exact;
  e.trace_row = -1;
  return e;
}
} // namespace run_detail

// Fraction bits of delta's (and the reference backward's) format: binary64 (exact), BF16 (both
// paper policies), FP32 (the others).
inline int r_frac_grad(policy_kind k) {
  return k == policy_kind::exact ? 52 : k == policy_kind::paper ? 7 : 23;
}

namespace run_detail {

// One run of run_attention, step by step: the report's vectors (begin), the forward items
// (forward), the reference or tiled backward (backward_reference, backward_tiled), then the
// ledgers, the trace's end points and the error summaries (finish).
//
// The forward runs as (head, row block) items on one parallel_for (the paper policy, whose
// form is not split, as one item per head), the backward as one item per head after it. Each
// item writes its own rows of the report's vectors. Ledgers: the ledger's compensated sums are
// not associative, so the grouping of the events must not depend on which thread ran which
// item. Row block 0 files into the head's ledger, after the input roundings (the head's
// preparation, whichever item runs it, finishes before any row block of the head starts); row
// blocks 1.. file into their own ledgers, merged into the head's in block order when the
// head's last row block finishes; the backward then files into the head's ledger; the heads'
// ledgers merge into the report in head order. With one row block per head the events are
// grouped as when a head was one item.
class runner {
public:
  runner(const attention_inputs &in, const run_options &opt)
      : in(in), opt(opt), hs(in.head_size()), split(opt.cfg.pol.kind != policy_kind::paper),
        nrb(split ? fa2_row_blocks(opt.cfg, in.n) : 1), led(opt.with_ledger) {}

  run_report run() {
    begin();
    const auto t0 = std::chrono::steady_clock::now();
    forward();
    if (opt.backward && opt.bwd.kind == backward_kind::tiled)
      backward_tiled();
    else if (opt.backward)
      backward_reference();
    finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return std::move(rep);
  }

private:
  const attention_inputs &in;
  const run_options &opt;
  const long hs;
  const bool split; // the fa2 form, split into row blocks
  const long nrb;   // row blocks per head
  const bool led;
  run_report rep;
  long items = 0;
  std::uint64_t heads = 0, mine = 0; // heads in all, and this process's share
  std::vector<ledger> head_leds;
  std::vector<std::unique_ptr<ledger>> block_leds;
  std::vector<double> lse_exact;
  std::unique_ptr<head_work[]> work;
  std::mutex progress_mu;
  std::uint64_t heads_done = 0;

  // A run split over processes (run_options::part/parts): this process runs the heads
  // part + j*parts, j < mine; the others' slots stay zero until opt.exchange.
  std::uint64_t head_of(std::uint64_t j) const { return opt.part + j * opt.parts; }
  head_view view(long bh) const {
    return head_view{in.n, in.d, &in.q[bh * hs], &in.k[bh * hs], &in.v[bh * hs]};
  }
  void head_finished() {
    if (!opt.progress) return;
    std::lock_guard<std::mutex> lock(progress_mu);
    opt.progress(++heads_done, mine);
  }
  template <class Fn> void with_observer(ledger *l, Fn &&fn) {
    if (l) {
      fn(*l);
    } else {
      null_observer none;
      fn(none);
    }
  }

  void begin() {
    rep.opt = opt;
    rep.batch = in.batch, rep.heads = in.heads, rep.n = in.n, rep.d = in.d;
    items = static_cast<long>(checked_elements({in.batch, in.heads}));
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
    heads = static_cast<std::uint64_t>(items);
    mine = shard_size(heads, opt.part, opt.parts);
    head_leds.resize(led ? heads : 0);
    block_leds.resize(led && nrb > 1 ? heads * static_cast<std::uint64_t>(nrb) : 0);
    lse_exact.assign(opt.backward && opt.with_reference ? rows : 0, 0.0);
    if (split) work.reset(new head_work[heads]);
    for (std::uint64_t bh = 0; split && bh < heads; ++bh)
      work[bh].left = nrb;
  }

  // The paper's form: one item per head.
  template <class Obs>
  void forward_whole_head(long bh, const forward_config &cfg, const forward_config &ecfg, Obs &obs) {
    forward_result lp = forward_head(cfg, view(bh), obs);
    std::copy(lp.o.begin(), lp.o.end(), rep.o.begin() + bh * hs);
    std::copy(lp.lse.begin(), lp.lse.end(), rep.lse.begin() + bh * in.n);
    if (bh == 0) rep.out_frac_bits = lp.out_frac_bits;
    if (cfg.trace_row >= 0) rep.trace = std::move(lp.trace);
    if (opt.with_reference) {
      null_observer none;
      forward_result ex = forward_head(ecfg, view(bh), none);
      std::copy(ex.o.begin(), ex.o.end(), rep.o_exact.begin() + bh * hs);
      if (!lse_exact.empty()) std::copy(ex.lse.begin(), ex.lse.end(), lse_exact.begin() + bh * in.n);
    }
  }

  // The fa2 form: row block r of head bh (the head prepared by whichever block starts first).
  template <class Obs>
  void forward_row_block(long bh, long r, const forward_config &cfg, const forward_config &ecfg, Obs &obs) {
    head_work &w = work[bh];
    std::call_once(w.once, [&] {
      with_observer(led ? &head_leds[bh] : nullptr,
                    [&](auto &o) { w.lp = fwd_detail::prepare_fa2(cfg, view(bh), o); });
      if (opt.with_reference) {
        null_observer none;
        w.ex = fwd_detail::prepare_fa2(ecfg, view(bh), none);
      }
    });
    const bool traced = cfg.trace_row >= 0;
    fa2_row_block(cfg, w.lp, r,
                  fwd_detail::fa2_output{&rep.o[bh * hs], &rep.lse[bh * in.n], traced ? &rep.trace : nullptr},
                  obs);
    if (opt.with_reference) {
      null_observer none;
      double *lse = lse_exact.empty() ? nullptr : &lse_exact[bh * in.n];
      std::vector<double> scratch;
      if (!lse) scratch.assign(in.n, 0.0), lse = scratch.data();
      fa2_row_block(ecfg, w.ex, r, fwd_detail::fa2_output{&rep.o_exact[bh * hs], lse, nullptr}, none);
    }
    if (bh == 0 && r == 0) rep.out_frac_bits = w.lp.out_frac_bits;
    if (--w.left == 0) { // the head's last row block: merge the blocks' ledgers in order
      w.lp = {}, w.ex = {};
      for (long b = 1; led && b < nrb; ++b) {
        auto &l = block_leds[static_cast<std::uint64_t>(bh * nrb + b)];
        head_leds[bh].merge(*l);
        l.reset();
      }
    }
  }

  template <class Obs> void forward_item(std::uint64_t i, Obs &obs) {
    const long bh = static_cast<long>(i / static_cast<std::uint64_t>(nrb)),
               r = static_cast<long>(i % static_cast<std::uint64_t>(nrb));
    const forward_config cfg = head_config(in, opt, bh), ecfg = exact_config(cfg);
    if (split)
      forward_row_block(bh, r, cfg, ecfg, obs);
    else
      forward_whole_head(bh, cfg, ecfg, obs);
    if (!opt.backward && (!split || r == nrb - 1)) head_finished();
  }

  void forward() {
    const auto nrb_u = static_cast<std::uint64_t>(nrb);
    parallel_for(
        mine * nrb_u, opt.threads,
        [&](std::uint64_t j, unsigned) {
          const std::uint64_t i = head_of(j / nrb_u) * nrb_u + j % nrb_u; // the global item
          if (led && i % nrb_u == 0) {
            forward_item(i, head_leds[i / nrb_u]);
          } else if (led) {
            block_leds[i] = std::make_unique<ledger>();
            forward_item(i, *block_leds[i]);
          } else {
            null_observer none;
            forward_item(i, none);
          }
        },
        opt.tick);
  }

  // Head bh's forward result, as the backward reads it.
  forward_result lp_forward(long bh) const {
    forward_result lp;
    lp.o.assign(rep.o.begin() + bh * hs, rep.o.begin() + (bh + 1) * hs);
    lp.lse.assign(rep.lse.begin() + bh * in.n, rep.lse.begin() + (bh + 1) * in.n);
    lp.out_frac_bits = rep.out_frac_bits;
    return lp;
  }
  void store_backward(long bh, const backward_result &blp) {
    if (bh == 0) rep.grad_frac_bits = blp.out_frac_bits;
    std::copy(blp.delta.begin(), blp.delta.end(), rep.delta.begin() + bh * in.n);
    std::copy(blp.dq.begin(), blp.dq.end(), rep.dq.begin() + bh * hs);
    std::copy(blp.dk.begin(), blp.dk.end(), rep.dk.begin() + bh * hs);
    std::copy(blp.dv.begin(), blp.dv.end(), rep.dv.begin() + bh * hs);
  }
  // The exact baseline's backward of head bh: the reference backward either way.
  void exact_backward(long bh) {
    const forward_config ecfg = exact_config(head_config(in, opt, bh));
    forward_result ex;
    ex.o.assign(rep.o_exact.begin() + bh * hs, rep.o_exact.begin() + (bh + 1) * hs);
    ex.lse.assign(lse_exact.begin() + bh * in.n, lse_exact.begin() + (bh + 1) * in.n);
    ex.out_frac_bits = 52;
    null_observer none;
    const backward_result bex = backward_head(ecfg, view(bh), &in.dout[bh * hs], ex, none);
    std::copy(bex.delta.begin(), bex.delta.end(), rep.delta_exact.begin() + bh * in.n);
    std::copy(bex.dq.begin(), bex.dq.end(), rep.dq_exact.begin() + bh * hs);
    std::copy(bex.dk.begin(), bex.dk.end(), rep.dk_exact.begin() + bh * hs);
    std::copy(bex.dv.begin(), bex.dv.end(), rep.dv_exact.begin() + bh * hs);
  }

  // The reference (and the authors') backward: one item per head.
  void backward_reference() {
    parallel_for(
        mine, opt.threads,
        [&](std::uint64_t i, unsigned) {
          const long bh = static_cast<long>(head_of(i));
          const forward_config cfg = head_config(in, opt, bh);
          const forward_result lp = lp_forward(bh);
          with_observer(led ? &head_leds[bh] : nullptr, [&](auto &obs) {
            store_backward(bh, backward_any(cfg, opt.bwd, view(bh), &in.dout[bh * hs], lp, obs));
          });
          if (opt.with_reference) exact_backward(bh);
          head_finished();
        },
        opt.tick);
  }

  // The tiled backward over waves of as many heads as there are workers (so that the heads'
  // prepared inputs in memory stay as many as when a head was one item).
  void backward_tiled() {
    const std::uint64_t wave = resolve_threads(opt.threads, mine);
    for (std::uint64_t h0 = 0; h0 < mine; h0 += wave) // h0: index into this process's heads
      tiled_wave(h0, std::min(wave, mine - h0));
  }

  // One wave in three steps: per head, the inputs and delta (filed in the head's ledger); then
  // the exact baselines and pass A (one item per head and KV block); then pass B (one item per
  // head and query block). The items' ledgers merge into their head's in item order.
  void tiled_wave(std::uint64_t h0, std::uint64_t wh) {
    const long nkv = bwd_kv_items(opt.bwd, in.n), nq = bwd_q_items(opt.bwd, in.n);
    std::vector<forward_result> lps(wh);
    std::vector<bwd_detail::bwd_prepared> preps(wh);
    std::vector<backward_result> res(wh);
    auto cfg_of = [&](std::uint64_t w) { return head_config(in, opt, static_cast<long>(head_of(h0 + w))); };
    parallel_for(
        wh, opt.threads,
        [&](std::uint64_t i, unsigned) {
          const long bh = static_cast<long>(head_of(h0 + i));
          lps[i] = lp_forward(bh);
          with_observer(led ? &head_leds[bh] : nullptr, [&](auto &obs) {
            preps[i] = bwd_detail::prepare_bwd(cfg_of(i), opt.bwd, view(bh), &in.dout[bh * hs], lps[i], obs);
          });
          bwd_detail::bwd_begin(preps[i], res[i]);
        },
        opt.tick);
    const std::uint64_t n_ex = opt.with_reference ? wh : 0, n_a = wh * std::uint64_t(nkv),
                        n_b = wh * std::uint64_t(nq);
    std::vector<ledger> item_leds(led ? n_a + n_b : 0);
    parallel_for(
        n_ex + n_a, opt.threads,
        [&](std::uint64_t i, unsigned) {
          if (i < n_ex) return exact_backward(static_cast<long>(head_of(h0 + i)));
          const std::uint64_t a = i - n_ex, w = a / std::uint64_t(nkv);
          const long j = static_cast<long>(a % std::uint64_t(nkv));
          with_observer(led ? &item_leds[a] : nullptr, [&](auto &obs) {
            bwd_kv_item(cfg_of(w), opt.bwd, preps[w], lps[w], res[w], j, obs);
          });
        },
        opt.tick);
    parallel_for(
        n_b, opt.threads,
        [&](std::uint64_t b, unsigned) {
          const std::uint64_t w = b / std::uint64_t(nq);
          const long q = static_cast<long>(b % std::uint64_t(nq));
          with_observer(led ? &item_leds[n_a + b] : nullptr,
                        [&](auto &obs) { bwd_q_item(cfg_of(w), opt.bwd, preps[w], lps[w], res[w], q, obs); });
        },
        opt.tick);
    for (std::uint64_t w = 0; w < wh; ++w) {
      const long bh = static_cast<long>(head_of(h0 + w));
      for (long j = 0; led && j < nkv; ++j)
        head_leds[bh].merge(item_leds[w * std::uint64_t(nkv) + std::uint64_t(j)]);
      for (long q = 0; led && q < nq; ++q)
        head_leds[bh].merge(item_leds[n_a + w * std::uint64_t(nq) + std::uint64_t(q)]);
      store_backward(bh, res[w]);
      head_finished();
    }
  }

  // The other processes' items (a split run), the trace's end points, the ledger, the errors.
  void finish(double seconds) {
    if (opt.exchange) opt.exchange(head_leds, rep);
    if (opt.cfg.trace_row >= 0) {
      const long bh = opt.trace_batch * in.heads + opt.trace_head;
      const long idx = bh * hs + opt.cfg.trace_row * in.d + opt.cfg.trace_col;
      if (bh >= 0 && bh < items) {
        rep.trace_final_lp = rep.o[idx];
        if (opt.with_reference) rep.trace_final_exact = rep.o_exact[idx];
      }
    }
    for (auto &l : head_leds)
      rep.led.merge(l);
    rep.seconds = seconds;
    if (!opt.with_reference) return;
    const auto row = static_cast<std::size_t>(rep.d), head = static_cast<std::size_t>(rep.n * rep.d);
    rep.o_err = summarize_error(rep.o, rep.o_exact, rep.out_frac_bits, row, head);
    if (!opt.backward) return;
    // delta is FP32 (fa2, fp32), BF16 (paper) or binary64 (exact); the gradients are in the
    // backward's output format (the tiled backward under fa2 writes BF16)
    rep.delta_err = summarize_error(rep.delta, rep.delta_exact, r_frac_grad(opt.cfg.pol.kind), 1,
                                    static_cast<std::size_t>(rep.n));
    const int g = rep.grad_frac_bits;
    rep.dq_err = summarize_error(rep.dq, rep.dq_exact, g, row, head);
    rep.dk_err = summarize_error(rep.dk, rep.dk_exact, g, row, head);
    rep.dv_err = summarize_error(rep.dv, rep.dv_exact, g, row, head);
  }
};

} // namespace run_detail

// Runs opt.cfg over every (batch, head) of `in`. With a ledger (opt.with_ledger) every
// rounding is filed; without, the observer is null_observer and the hooks compile away.
inline run_report run_attention(const attention_inputs &in, const run_options &opt) {
  return run_detail::runner(in, opt).run();
}

} // namespace bf16emu::attention
