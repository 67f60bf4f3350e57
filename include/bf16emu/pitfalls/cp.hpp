// bf16emu pitfalls: context-parallel attention, the merge of per-chunk (O_c, LSE_c).
//
// The sequence is cut into C chunks of n/C rows (one per rank in context parallelism / ring
// attention). Rank i holds Q_i and sees every KV chunk j the mask allows (all, or j <= i
// causal); each pair is an ordinary attention forward of the attention library on Q_i against
// K_j, V_j (the pair's own online softmax, its own rounding), giving O_ij (in the policy's output
// format) and LSE_ij (natural log, FP32). The partials are merged per row, chunk by chunk in a
// stated order:
//
//   global:  M = max_j L_j;  s = sum_j exp(L_j - M);  L = M + log(s);  O = sum_j exp(L_j - L) O_j
//   online:  (O, L) <- first chunk; for each next chunk c:
//            L' = max(L, L_c) + log1p(exp(min(L, L_c) - max(L, L_c)))
//            O  <- O exp(L - L') + O_c exp(L_c - L');  L <- L'
//            (TransformerEngine / ring-attention style running correction)
//
// Arithmetic: binary64 under the exact policy; otherwise every +, -, * is one FP32 rounding of
// the core and exp, log, log1p are the binary64 function rounded once to FP32; the merged O is
// rounded to the policy's output format (BF16 for fa2 and paper) at the end, L stays FP32.
//
// The backward runs per pair with the merged (global) O_i and L_i (blockwise.hpp) and sums the
// partial gradients over the chunks in the same order as the merge.
//
// Deliberate bugs, to show what the comparison catches:
//   skip_rescale: chunk `bug_chunk`'s O is added without its factor exp(L_c - L) (weight 1);
//   stale_lse:    chunk `bug_chunk`'s LSE is left out of the merged L (its O is still added,
//                 weighted against the stale L).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bf16emu/attention/run.hpp"
#include "bf16emu/pitfalls/blockwise.hpp"

namespace bf16emu::pitfalls {

enum class merge_form : std::uint8_t { global, online };
enum class merge_bug : std::uint8_t { none, skip_rescale, stale_lse };

inline const char *to_string(merge_form f) { return f == merge_form::global ? "global" : "online"; }
inline const char *to_string(merge_bug b) {
  return b == merge_bug::none ? "none" : b == merge_bug::skip_rescale ? "skip-rescale" : "stale-lse";
}

struct cp_options {
  at::forward_config cfg;
  long chunks = 2;
  merge_form form = merge_form::global;
  bool descending = false; // merge (and gradient sum) order over the chunks
  merge_bug bug = merge_bug::none;
  long bug_chunk = 1;
  bool backward = true;
  int threads = 1;
};

struct attention_result {
  std::vector<double> o, lse;
  grads g;
  int out_frac_bits = 52;
};

// Merges the per-chunk partials of one row. o_parts[c] points at d values, l_parts[c] is L_c;
// `order` lists the chunks in merge order. Writes d values to out and returns L.
inline double merge_row(const cp_options &opt, const std::vector<const double *> &o_parts,
                        const std::vector<double> &l_parts, const std::vector<long> &order, long d,
                        double *out) {
  const at::policy_kind kind = opt.cfg.pol.kind;
  const bool exact = kind == at::policy_kind::exact;
  at::null_observer none;
  const at::f32_ops<at::null_observer> o{&none};
  const at::site S = at::site::lse;
  auto add = [&](double a, double b) { return exact ? a + b : o.add(a, b, S); };
  auto sub = [&](double a, double b) { return exact ? a - b : o.sub(a, b, S); };
  auto mul = [&](double a, double b) { return exact ? a * b : o.mul(a, b, S); };
  auto fn = [&](double y) { return exact ? y : at::rn_f32(o, y, S); }; // binary64 function, rounded once
  auto bugged = [&](long c, merge_bug b) { return opt.bug == b && c == opt.bug_chunk; };
  std::vector<double> acc(d, 0.0);
  double L;
  if (opt.form == merge_form::global) {
    double M = -std::numeric_limits<double>::infinity();
    for (long c : order)
      M = std::max(M, l_parts[c]);
    double s = 0;
    for (long c : order)
      if (!bugged(c, merge_bug::stale_lse)) s = add(s, fn(std::exp(sub(l_parts[c], M))));
    L = add(M, fn(std::log(s)));
    for (long c : order) {
      const double f = bugged(c, merge_bug::skip_rescale) ? 1.0 : fn(std::exp(sub(l_parts[c], L)));
      for (long i = 0; i < d; ++i)
        acc[i] = exact ? acc[i] + f * o_parts[c][i] : o.fma(f, o_parts[c][i], acc[i], S);
    }
  } else {
    const long c0 = order.front();
    L = l_parts[c0];
    for (long i = 0; i < d; ++i)
      acc[i] = o_parts[c0][i];
    for (std::size_t k = 1; k < order.size(); ++k) {
      const long c = order[k];
      const double lc = l_parts[c];
      double Ln = L;
      if (!bugged(c, merge_bug::stale_lse)) {
        const double mx = std::max(L, lc), mn = std::min(L, lc);
        Ln = add(mx, fn(std::log1p(fn(std::exp(sub(mn, mx))))));
      }
      const double a = fn(std::exp(sub(L, Ln)));
      const double b = bugged(c, merge_bug::skip_rescale) ? 1.0 : fn(std::exp(sub(lc, Ln)));
      for (long i = 0; i < d; ++i)
        acc[i] = add(mul(acc[i], a), mul(o_parts[c][i], b));
      L = Ln;
    }
  }
  const bool to16 = kind == at::policy_kind::fa2 || kind == at::policy_kind::paper;
  for (long i = 0; i < d; ++i)
    out[i] = to16 ? o.to16(acc[i], at::site::o_to_bf16) : acc[i];
  return L;
}

// Context-parallel forward (and backward) of one head.
inline attention_result cp_attention(const cp_options &opt, const at::head_view &h, const double *dout) {
  const long C = opt.chunks, b = h.n / C, d = h.d, nb = C;
  const bool causal = opt.cfg.causal;
  // per-pair forwards
  std::vector<at::forward_result> part(C * C);
  std::vector<long> tasks;
  for (long i = 0; i < C; ++i)
    for (long j = 0; j < C; ++j)
      if (pair_allowed(causal, i, j)) tasks.push_back(i * C + j);
  parallel_for(tasks.size(), worker_threads(opt.threads), [&](std::uint64_t t, unsigned) {
    const long slot = tasks[t], i = slot / C, j = slot % C;
    at::null_observer none;
    part[slot] = at::forward_head(pair_config(opt.cfg, i, j), pair_view(h, b, i, j), none);
  });
  attention_result r;
  r.o.assign(h.n * d, 0.0), r.lse.assign(h.n, 0.0);
  r.out_frac_bits = part[tasks.front()].out_frac_bits;
  const schedule sch =
      make_schedule(opt.descending ? schedule_kind::descending : schedule_kind::ascending, nb, causal);
  std::vector<const double *> op(C);
  std::vector<double> lp(C);
  for (long i = 0; i < C; ++i)
    for (long row = 0; row < b; ++row) {
      for (long j : sch.dq[i])
        op[j] = &part[i * C + j].o[row * d], lp[j] = part[i * C + j].lse[row];
      r.lse[i * b + row] = merge_row(opt, op, lp, sch.dq[i], d, &r.o[(i * b + row) * d]);
    }
  if (opt.backward) {
    const pair_partials pp = pair_backward(opt.cfg, h, dout, r.o, r.lse, b, opt.threads);
    r.g = accumulate(pp, sch, opt.cfg.pol.kind);
  }
  return r;
}

// The same head in one pass (the attention library's forward and backward on the whole
// sequence): the reference the merge is compared with.
inline attention_result single_pass(const at::forward_config &cfg, const at::head_view &h, const double *dout,
                                    bool backward) {
  attention_result r;
  at::null_observer none;
  at::forward_result f = at::forward_head(cfg, h, none);
  r.out_frac_bits = f.out_frac_bits;
  if (backward) {
    at::backward_result bw = at::backward_head(cfg, h, dout, f, none);
    r.g.dq = std::move(bw.dq), r.g.dk = std::move(bw.dk), r.g.dv = std::move(bw.dv);
    r.g.frac_bits = at::r_frac_grad(cfg.pol.kind);
  }
  r.o = std::move(f.o), r.lse = std::move(f.lse);
  return r;
}

} // namespace bf16emu::pitfalls
