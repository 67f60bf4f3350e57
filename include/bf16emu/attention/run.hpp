// bf16emu attention: runs a policy over batch x heads (heads in parallel), against the
// exact policy, and gathers the ledger, the output errors and the element trace; JSON report.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/backward_fa2.hpp"
#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/scenario.hpp"

namespace bf16emu::attention {

struct run_options {
  forward_config cfg;
  bool backward = false;
  backward_config bwd; // reference (default) or tiled, with its block sizes and orders
  bool with_ledger = true;
  bool with_reference = true; // also run the exact policy and compare
  int threads = 0;            // 0: hardware concurrency
  bool progress = false;      // one line per finished head on stderr
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
template <class Obs>
void one_head(const attention_inputs &in, const run_options &opt, long bh, Obs &obs, run_report &rep,
              std::mutex &mu) {
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
  std::lock_guard<std::mutex> lock(mu);
  std::copy(lp.o.begin(), lp.o.end(), rep.o.begin() + bh * hs);
  std::copy(lp.lse.begin(), lp.lse.end(), rep.lse.begin() + bh * in.n);
  rep.out_frac_bits = lp.out_frac_bits;
  if (opt.with_reference) std::copy(ex.o.begin(), ex.o.end(), rep.o_exact.begin() + bh * hs);
  if (traced) {
    rep.trace = std::move(lp.trace);
    const long idx = opt.cfg.trace_row * in.d + opt.cfg.trace_col;
    rep.trace_final_lp = lp.o[idx];
    if (opt.with_reference) rep.trace_final_exact = ex.o[idx];
  }
  if (opt.backward) {
    rep.grad_frac_bits = blp.out_frac_bits;
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
  const long items = in.batch * in.heads, hs = in.head_size();
  rep.o.assign(items * hs, 0.0), rep.lse.assign(items * in.n, 0.0);
  if (opt.with_reference) rep.o_exact.assign(items * hs, 0.0);
  if (opt.backward) {
    rep.delta.assign(items * in.n, 0.0), rep.dq.assign(items * hs, 0.0), rep.dk.assign(items * hs, 0.0),
        rep.dv.assign(items * hs, 0.0);
    if (opt.with_reference) {
      rep.delta_exact.assign(items * in.n, 0.0);
      rep.dq_exact.assign(items * hs, 0.0), rep.dk_exact.assign(items * hs, 0.0),
          rep.dv_exact.assign(items * hs, 0.0);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  int nt = opt.threads > 0 ? opt.threads : int(std::thread::hardware_concurrency());
  if (nt < 1) nt = 1;
  if (nt > items) nt = int(items);
  std::atomic<long> next{0}, done{0};
  std::mutex mu;
  std::vector<ledger> leds(nt);
  auto worker = [&](int tid) {
    for (;;) {
      const long bh = next.fetch_add(1);
      if (bh >= items) return;
      if (opt.with_ledger)
        run_detail::one_head(in, opt, bh, leds[tid], rep, mu);
      else {
        null_observer none;
        run_detail::one_head(in, opt, bh, none, rep, mu);
      }
      const long k = done.fetch_add(1) + 1;
      if (opt.progress) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "attention: %ld/%ld heads done (%.1f s)\n", k, items, s);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < nt; ++t)
    pool.emplace_back(worker, t);
  worker(0);
  for (auto &t : pool)
    t.join();
  for (auto &l : leds)
    rep.led.merge(l);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opt.with_reference) {
    const auto row = static_cast<std::size_t>(rep.d), head = static_cast<std::size_t>(rep.n * rep.d);
    rep.o_err = summarize_error(rep.o, rep.o_exact, rep.out_frac_bits, row, head);
    if (opt.backward) {
      // delta is FP32 (fa2, fp32), BF16 (paper) or binary64 (exact); the gradients are in the
      // backward's output format (the tiled backward under fa2 writes BF16)
      rep.delta_err = summarize_error(rep.delta, rep.delta_exact, r_frac_grad(opt.cfg.pol.kind), 1,
                                      static_cast<std::size_t>(rep.n));
      const int g = rep.grad_frac_bits;
      rep.dq_err = summarize_error(rep.dq, rep.dq_exact, g, row, head);
      rep.dk_err = summarize_error(rep.dk, rep.dk_exact, g, row, head);
      rep.dv_err = summarize_error(rep.dv, rep.dv_exact, g, row, head);
    }
  }
  return rep;
}

// ---------------------------------------------------------------------------
// JSON

namespace json_detail {
inline std::string num(double x) {
  if (std::isnan(x)) return "null";
  if (std::isinf(x)) return x > 0 ? "1e999" : "-1e999";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}
inline std::string u64(std::uint64_t x) { return std::to_string(x); }
inline std::string counts(const sign_counts &c) {
  return "{\"count\":" + u64(c.count) + ",\"positive\":" + u64(c.pos) + ",\"negative\":" + u64(c.neg) +
         ",\"zero\":" + u64(c.zero) + ",\"ties\":" + u64(c.ties) + ",\"away_from_zero\":" + u64(c.away) +
         ",\"toward_zero\":" + u64(c.toward) + ",\"sum\":" + num(c.sum.value()) +
         ",\"mean\":" + num(c.mean()) + ",\"sum_abs\":" + num(c.sum_abs.value()) +
         ",\"sum_rel\":" + num(c.sum_rel.value()) + "}";
}
inline std::string summary(const error_summary &e) {
  std::string h = "{";
  bool first = true;
  for (const auto &[k, v] : e.ulp_hist) {
    h += std::string(first ? "" : ",") + "\"" + std::to_string(k) + "\":" + u64(v);
    first = false;
  }
  h += "}";
  return "{\"n\":" + u64(e.n) + ",\"nonfinite\":" + u64(e.nonfinite) +
         ",\"first_nonfinite\":" + std::to_string(e.first_nonfinite) +
         ",\"mean_signed\":" + num(e.mean_signed) + ",\"stderr_signed\":" + num(e.stderr_signed) +
         ",\"z\":" + num(e.z()) + ",\"stderr_rows\":" + num(e.stderr_rows) +
         ",\"z_rows\":" + num(e.z_rows()) + ",\"stderr_heads\":" + num(e.stderr_heads) +
         ",\"z_heads\":" + num(e.z_heads()) + ",\"mean_abs\":" + num(e.mean_abs) +
         ",\"max_abs\":" + num(e.max_abs) + ",\"rel_fro\":" + num(e.rel_fro) +
         ",\"positive\":" + u64(e.positive) + ",\"negative\":" + u64(e.negative) +
         ",\"zero\":" + u64(e.zero) + ",\"ulp_hist\":" + h + "}";
}
} // namespace json_detail

inline std::string to_json(const run_report &r, const std::string &extra = "") {
  using namespace json_detail;
  const forward_config &c = r.opt.cfg;
  std::string s = "{";
  s += "\"policy\":\"" + policy_name(c.pol) + "\",\"variant\":\"" + to_string(c.var) + "\"";
  s += ",\"batch\":" + std::to_string(r.batch) + ",\"heads\":" + std::to_string(r.heads) +
       ",\"n\":" + std::to_string(r.n) + ",\"d\":" + std::to_string(r.d);
  s += std::string(",\"causal\":") + (c.causal ? "true" : "false");
  s += ",\"block_m\":" + std::to_string(c.pol.block_m) + ",\"block_n\":" + std::to_string(c.pol.block_n);
  s += std::string(",\"kv_order\":\"") + (c.pol.kv == kv_order::reverse ? "reverse" : "forward") + "\"";
  s += std::string(",\"exp\":\"") + (c.pol.exp == exp_impl::poly_exp2 ? "poly_exp2" : "rn_f32") + "\"";
  s += std::string(",\"row_sum\":\"") +
       (c.pol.sum_order == reduce_order::quad_shuffle ? "quad" : "sequential") + "\"";
  s += std::string(",\"fma\":") + (c.pol.fma_contract ? "true" : "false");
  if (c.var == variant::stabilized) s += ",\"beta\":" + num(c.pol.beta);
  s += extra;
  s += ",\"seconds\":" + num(r.seconds);
  if (r.opt.with_reference) s += ",\"output_error\":" + summary(r.o_err);
  if (r.opt.with_ledger) {
    s += ",\"sites\":{";
    bool first = true;
    for (int i = 0; i < site_count; ++i) {
      const site_stats &st = r.led.sites[i];
      if (st.all.count == 0) continue;
      s += std::string(first ? "" : ",") + "\"" + to_string(site(i)) + "\":" + counts(st.all);
      s.back() = ',';
      s += "\"p_equals_one\":" + counts(st.p_one) + "}";
      first = false;
    }
    s += "}";
    s += ",\"p_equals_one\":{\"entries\":" + u64(r.led.p_entries) + ",\"ones\":" + u64(r.led.p_one_entries) +
         ",\"row_blocks_with_one\":" + u64(r.led.rows_with_p_one) +
         ",\"row_blocks_tied\":" + u64(r.led.rows_tied);
    s += ",\"sites\":{";
    first = true;
    for (int i = 0; i < site_count; ++i) {
      const site_stats &st = r.led.sites[i];
      if (st.p_one.count == 0) continue;
      s += std::string(first ? "" : ",") + "\"" + to_string(site(i)) + "\":" + counts(st.p_one);
      first = false;
    }
    s += "}}";
  }
  if (r.opt.backward) {
    const backward_config &b = r.opt.bwd;
    s += std::string(",\"backward\":{\"kind\":\"") + to_string(b.kind) + "\"";
    if (b.kind == backward_kind::tiled)
      s += ",\"block_m\":" + std::to_string(b.block_m) + ",\"block_n\":" + std::to_string(b.block_n) +
           ",\"delta\":\"" + to_string(b.delta) + "\",\"q_order\":\"" + to_string(b.q_order) +
           "\",\"dq_order\":\"" + to_string(b.dq_order) + "\"";
    s += "}";
  }
  if (r.opt.backward && r.opt.with_reference) {
    s += ",\"delta_error\":" + summary(r.delta_err);
    s += ",\"grad_error\":{\"dq\":" + summary(r.dq_err) + ",\"dk\":" + summary(r.dk_err) +
         ",\"dv\":" + summary(r.dv_err) + "}";
  }
  if (!r.trace.empty())
    s += ",\"trace\":{\"points\":" + std::to_string(r.trace.size()) +
         ",\"final_lp\":" + num(r.trace_final_lp) + ",\"final_exact\":" + num(r.trace_final_exact) +
         ",\"final_error\":" + num(r.trace_final_lp - r.trace_final_exact) + "}";
  s += "}";
  return s;
}

} // namespace bf16emu::attention
