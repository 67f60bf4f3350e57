// bf16emu attention: the FlashAttention-2 form of the forward (the exact, fp32 and fa2
// policies), for one head, whole or by row blocks. See docs/attention.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bf16emu/attention/forward_common.hpp"

namespace bf16emu::attention {

// ---------------------------------------------------------------------------
// exact / fp32 / fa2: the FlashAttention-2 form (unscaled scores, exp2 with c = scale*log2 e).
// The steps read like FlashAttention-2's Algorithm 1: for each block of Br query rows, for each
// block of Bc keys (in kv order), for each row: score tile, row max, rescale, exp, row sum,
// P to BF16, O += P-bar V; then, per row, normalize and write O and L.

namespace fwd_detail {

// The state of one block of query rows [i0, i0 + rows) across the KV blocks.
struct row_block {
  long i0 = 0, rows = 0, kv_end = 0;
  std::vector<double> m, l, acc; // running max, lane sums (4 per row), unnormalized O
  std::vector<char> had_one;     // the row had P-bar = 1 at least twice in a block
  trace_state tr;
};

// One head's inputs as the fa2 form reads them (shared, read-only, by every row block of the
// head): the inputs in the policy's format, their BF16 copies for the tensor-core model (V
// transposed, so that every P-bar V dot product reads both operands with unit stride) and
// the scales.
struct fa2_prepared {
  long n = 0, d = 0;
  std::vector<double> q, k, v;   // inputs in the policy's format
  std::vector<bf16> qb, kb, vbt; // BF16 copies (fa2): Q, K row-major n x d; V transposed d x n
  // FP32 copies for the host path's FMA chains (policies whose products are FP32 FMA chains,
  // without a ledger): Q and V row-major, K transposed d x n
  std::vector<float> qf, kTf, vf;
  double scale = 0, c = 0, c_ex = 0, tie_tol = 0; // tie_tol in units of the unscaled S
  int out_frac_bits = 52;
};

// Inputs in the policy's format (their roundings filed under site::input); the scales.
template <class Obs> fa2_prepared prepare_fa2(const forward_config &cfg, const head_view &h, Obs &obs) {
  const kernel_policy &pol = cfg.pol;
  const bool exact = pol.kind == policy_kind::exact, tc = pol.kind == policy_kind::fa2;
  const f32_ops<Obs> o{&obs, site_override(pol)};
  // The tensor cores take BF16 operands: with the input site promoted they are not built.
  const bool tc_qk = tc && o.at_prec(site::input) == site_prec::policy;
  fa2_prepared in;
  const long n = h.n, d = h.d;
  in.n = n, in.d = d;
  in.q.assign(h.q, h.q + n * d), in.k.assign(h.k, h.k + n * d), in.v.assign(h.v, h.v + n * d);
  if (!exact) {
    for (auto *a : {&in.q, &in.k, &in.v})
      for (double &x : *a)
        x = tc ? o.to16(x, site::input) : o.to32(x, site::input);
  }
  if (tc_qk) {
    in.qb.resize(in.q.size()), in.kb.resize(in.k.size()), in.vbt.resize(in.v.size());
    for (std::size_t i = 0; i < in.q.size(); ++i)
      in.qb[i] = as_bf16(in.q[i]), in.kb[i] = as_bf16(in.k[i]);
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < d; ++i)
        in.vbt[i * n + j] = as_bf16(in.v[j * d + i]);
  }
  if (!Obs::enabled && !exact && !tc_qk) {
    in.qf.assign(in.q.begin(), in.q.end()), in.vf.assign(in.v.begin(), in.v.end());
    pack_cols(in.k.data(), d, 1, n, d, in.kTf);
  }
  in.scale = softmax_scale(pol, d);
  // c = scale*log2(e) in FP32 (binary64 under exact, or with the exp_arg site promoted to exact)
  in.c = exact || o.exact_at(site::exp_arg) ? in.scale * log2e : double(float(in.scale * log2e));
  in.c_ex = softmax_scale(kernel_policy{policy_kind::exact}, d) * log2e;
  in.tie_tol = unscaled_tie_tol(pol, d);
  in.out_frac_bits = exact ? 52 : tc ? 7 : 23;
  return in;
}

// Where a row block writes its rows: O (n x d) and L (n) of the head, and the element trace.
struct fa2_output {
  double *o = nullptr, *lse = nullptr;
  std::vector<trace_point> *trace = nullptr;
};

// The row-block computation; one per row block (or per worker), its own observer and scratch.
template <class Obs> struct fa2_forward {
  const forward_config &cfg;
  const kernel_policy &pol;
  const fa2_prepared &in;
  fa2_output out;
  Obs &obs;
  const bool exact, tc, poly, quad;
  const long n, d;
  const f32_ops<Obs> o; // with the policy's site precision override
  // The tensor cores take BF16 operands: with the input site (or, for P-bar V, p_to_bf16)
  // promoted, the operands are FP32 or binary64 and the dot products are FP32 FMA chains.
  const bool tc_qk, tc_pv;
  // FP32 FMA chains on the host (hw_f32::fma_cols), where the policy's products are FP32 chains
  const bool fast_qk, fast_pv;
  const tc_model model;
  const std::vector<double> &q, &k, &v;
  const std::vector<bf16> &qb, &kb, &vbt;
  const double scale, c, c_ex, tie_tol;
  std::vector<double> S, P, Pb; // one row of the current tile: scores, P, P-bar
  std::vector<bf16> Pbf;
  std::vector<float> cf, pf;  // fast_qk, fast_pv: a row's FP32 chains and P-bar
  std::vector<double> S_rows; // without a ledger: every row's scores of the tile (kv_block)
  std::vector<bf16> Pbf_rows; // ... and every row's P-bar, for one P-bar V over the rows

  fa2_forward(const forward_config &cfg_, const fa2_prepared &in_, fa2_output out_, Obs &obs_)
      : cfg(cfg_), pol(cfg_.pol), in(in_), out(out_), obs(obs_), exact(pol.kind == policy_kind::exact),
        tc(pol.kind == policy_kind::fa2), poly(pol.exp == exp_impl::poly_exp2),
        quad(pol.sum_order == reduce_order::quad_shuffle), n(in_.n), d(in_.d), o{&obs_, site_override(pol)},
        tc_qk(tc && o.at_prec(site::input) == site_prec::policy),
        tc_pv(tc_qk && o.at_prec(site::p_to_bf16) == site_prec::policy),
        fast_qk(!exact && !tc_qk && !in_.kTf.empty() && o.fast_chains(site::qk)),
        fast_pv(!exact && !tc_pv && !in_.vf.empty() && o.fast_chains(site::pv)), model(tc_for(pol.arch)),
        q(in_.q), k(in_.k), v(in_.v), qb(in_.qb), kb(in_.kb), vbt(in_.vbt), scale(in_.scale), c(in_.c),
        c_ex(in_.c_ex), tie_tol(in_.tie_tol) {}

  row_block begin_row_block(long i0, long br) {
    row_block rb;
    const long i1 = std::min(n, i0 + br);
    rb.i0 = i0, rb.rows = i1 - i0;
    rb.kv_end = cfg.causal ? std::min(n, i1) : n;
    rb.m.assign(rb.rows, ninf), rb.l.assign(rb.rows * 4, 0.0), rb.acc.assign(rb.rows * d, 0.0);
    rb.had_one.assign(rb.rows, 0);
    if (cfg.trace_row >= i0 && cfg.trace_row < i1) {
      rb.tr.on = true, rb.tr.row = cfg.trace_row, rb.tr.col = cfg.trace_col, rb.tr.out = out.trace;
    }
    return rb;
  }

  // Binary64 dot product of rows (for the exact policy).
  double dot64(const double *a, const double *b) const {
    double s = 0;
    for (long i = 0; i < d; ++i)
      s += a[i] * b[i];
    return s;
  }
  // 1-2. S = Q K^T for one row over keys [j0, j0 + w), masked entries -inf; returns the row max.
  // pre: the row's scores of the tile already computed (tensor-core model, kv_block), or null.
  double score_tile(long row, long j0, long w, const double *pre = nullptr) {
    const double *qr = &q[row * d];
    double mb = ninf;
    // the unmasked keys (a prefix of the tile) together
    long live = 0;
    while (live < w && !masked(cfg.causal, row, j0 + live) && j0 + live < n)
      ++live;
    if (exact || tc_qk) {
      std::fill(S.begin(), S.begin() + live, 0.0);
      if (exact) {
        long j = 0;
        for (; j + 4 <= live; j += 4) {
          const double *kr = &k[(j0 + j) * d];
          double out[4];
          exact_dot4({qr, qr, qr, qr}, {kr, kr + d, kr + 2 * d, kr + 3 * d}, d, out);
          std::copy(out, out + 4, &S[j]);
        }
        for (; j < live; ++j)
          S[j] = dot64(qr, &k[(j0 + j) * d]);
      } else if (pre) {
        std::copy(pre, pre + live, S.begin());
      } else {
        tc_dot_cols_at(o, model, &qb[row * d], 1, &kb[j0 * d], 1, d, int(live), int(d), S.data(), site::qk,
                       false);
      }
    } else if (fast_qk) {
      cf.assign(live, 0.0f);
      hw_f32::fma_cols(&in.qf[row * d], 1, &in.kTf[j0], n, d, live, cf.data());
    }
    for (long j = 0; j < w; ++j) {
      if (masked(cfg.causal, row, j0 + j) || j0 + j >= n) {
        S[j] = ninf;
        continue;
      }
      if (exact || tc_qk)
        ; // above
      else if (fast_qk)
        S[j] = cf[j];
      else {
        double s = 0;
        for (long t = 0; t < d; ++t)
          s = o.fma(qr[t], k[(j0 + j) * d + t], s, site::qk);
        S[j] = s;
      }
      mb = std::max(mb, S[j]);
    }
    return mb;
  }

  // 3. Row max of the tile; the stabilized variant (Algorithm 1) scales a repeated maximum.
  double row_max(double mb, long w) {
    if (!(cfg.var == variant::stabilized || pol.stabilized) || mb == ninf) return mb;
    long rs = 0;
    for (long j = 0; j < w; ++j)
      rs += S[j] >= mb - tie_tol;
    if (rs > 1 && mb > 0) return exact ? pol.beta * mb : o.mul(pol.beta, mb, site::row_max);
    if (rs > 1 && mb < 0) return 0;
    return mb;
  }

  // 4. Rescale the row's O and lane sums by alpha = exp2((m_old - m_new) c).
  void rescale(row_block &rb, long r, double m_old, double m_new) {
    const double mc = m_new == ninf ? 0.0 : m_new;
    double alpha;
    if (exact)
      alpha = std::exp2((m_old - mc) * c);
    else {
      const double x = o.mul(o.sub(m_old, mc, site::rescale), c, site::rescale);
      alpha = exp2_f32(o, x, poly, site::rescale);
    }
    for (long i = 0; i < d; ++i)
      rb.acc[r * d + i] = exact ? rb.acc[r * d + i] * alpha : o.mul(rb.acc[r * d + i], alpha, site::rescale);
    for (int qd = 0; qd < 4; ++qd)
      rb.l[r * 4 + qd] = exact ? rb.l[r * 4 + qd] * alpha : o.mul(rb.l[r * 4 + qd], alpha, site::rescale);
  }

  // 5. P = exp2(S c - m c); returns the number of unmasked entries.
  std::uint64_t exp_tile(double m_new, long w) {
    const double mc = m_new == ninf ? 0.0 : exact ? m_new * c : o.mul(m_new, c, site::row_max);
    std::uint64_t live = 0;
    for (long j = 0; j < w; ++j) {
      if (S[j] == ninf) {
        P[j] = 0;
        continue;
      }
      ++live;
      if (exact)
        P[j] = std::exp2(S[j] * c - mc);
      else {
        const double x = pol.fma_contract ? o.fma(S[j], c, -mc, site::exp_arg)
                                          : o.sub(o.mul(S[j], c, site::exp_arg), mc, site::exp_arg);
        P[j] = exp2_f32(o, x, poly, site::exp);
      }
    }
    return live;
  }

  // 6. Row sum (lane sums for quad_shuffle; lane 0 only for sequential).
  void row_sum(row_block &rb, long r, long w) {
    for (long j = 0; j < w; ++j) {
      if (S[j] == ninf) continue;
      const int lane = quad ? int((j % 8) / 2) : 0;
      double &ls = rb.l[r * 4 + lane];
      ls = exact ? ls + P[j] : o.add(ls, P[j], site::row_sum, P[j] == 1.0);
    }
  }

  // 7. P -> BF16 (P-bar); returns how many entries are exactly 1.
  std::uint64_t p_to_bf16(long w) {
    std::uint64_t ones = 0;
    for (long j = 0; j < w; ++j) {
      Pb[j] = (tc && S[j] != ninf) ? o.to16(P[j], site::p_to_bf16) : P[j];
      if (Pb[j] == 1.0) ++ones;
      if (tc_pv) Pbf[j] = as_bf16(Pb[j]);
    }
    return ones;
  }

  // 8. O += P-bar V for one row (and the traced element, step by step).
  void pv_update(row_block &rb, long r, long j0, long w, bool traced) {
    const long row = rb.i0 + r;
    trace_state &tr = rb.tr;
    // With the tensor-core model: the columns of O together (tc_dot_cols_at), the traced one on
    // its own with block steps, in column order (the ledger's order).
    const long tcol = tc_pv && traced && tr.col >= 0 && tr.col < d ? tr.col : d;
    if (exact && !traced) {
      // The binary64 baseline: every O column still adds its products in key order, but the
      // keys run outermost so that V is read along its rows (the column-by-column loop below
      // reads V with stride d: about a third of a forward run's time at N 1024, d 128).
      double *acc = &rb.acc[r * d];
      for (long j = 0; j < w; ++j) {
        if (S[j] == ninf) continue;
        const double p = Pb[j], *vr = &v[(j0 + j) * d];
        for (long i = 0; i < d; ++i)
          acc[i] = acc[i] + p * vr[i];
      }
      return;
    }
    if (fast_pv && !traced) {
      // FP32 chains on the host over the keys with S != -inf (finite_prefix), continuing each
      // column's accumulator
      if (const long kp = finite_prefix(S, w); kp >= 0) {
        double *acc = &rb.acc[r * d];
        pf.assign(Pb.begin(), Pb.begin() + kp), cf.assign(acc, acc + d);
        hw_f32::fma_cols(pf.data(), 1, &in.vf[j0 * d], d, kp, d, cf.data());
        std::copy(cf.begin(), cf.end(), acc);
        return;
      }
    }
    if (tc_pv)
      tc_dot_cols_at(o, model, Pbf.data(), 1, &vbt[j0], 1, n, int(tcol), int(w), &rb.acc[r * d], site::pv,
                     true);
    for (long i = tc_pv ? tcol : 0; i < d; ++i) {
      double &a = rb.acc[r * d + i];
      const bool ti = traced && i == tr.col;
      if (tc_pv) {
        if (ti) {
          double base = a, partial = 0;
          long next = 0;
          auto step = [&](int kend, f32 val) {
            for (; next < kend && next < w; ++next) {
              const long t = j0 + next;
              if (S[next] != ninf) tr.add_exact(&q[row * d], &k[t * d], v[t * d + i], d, c_ex);
              partial += Pb[next] * v[t * d + i];
              const bool last = next + 1 == kend || next + 1 == w;
              tr.emit(t, Pb[next], last ? of(val) : base + partial, last);
            }
            base = of(val), partial = 0;
          };
          a = tc_dot_at(o, model, Pbf.data(), 1, &vbt[i * n + j0], 1, int(w), a, site::pv, true,
                        block_step<decltype(step)>{step});
        }
        if (i + 1 < d)
          tc_dot_cols_at(o, model, Pbf.data(), 1, &vbt[(i + 1) * n + j0], 1, n, int(d - i - 1), int(w),
                         &rb.acc[r * d + i + 1], site::pv, true);
        break;
      } else {
        for (long j = 0; j < w; ++j) {
          if (S[j] == ninf) continue;
          a = exact ? a + Pb[j] * v[(j0 + j) * d + i]
                    : o.fma(Pb[j], v[(j0 + j) * d + i], a, site::pv, Pb[j] == 1.0);
          if (ti) {
            tr.add_exact(&q[row * d], &k[(j0 + j) * d], v[(j0 + j) * d + i], d, c_ex);
            tr.emit(j0 + j, Pb[j], a, true);
          }
        }
      }
    }
  }

  // One KV block (block index b, bi-th in processing order) for every row of the row block.
  void kv_block(row_block &rb, long bi, long b, long bc) {
    const long j0 = b * bc, j1 = std::min(rb.kv_end, j0 + bc), w = j1 - j0;
    S.assign(w, 0.0), P.assign(w, 0.0), Pb.assign(w, 0.0), Pbf.assign(w, bf16{});
    // Without a ledger the tensor-core products of all the block's rows run at once
    // (tc_dot_rows_at: the model's lane-parallel kernel where one is installed): S before the
    // rows (a causal row's masked entries too, unused), P-bar V after them (a row's O waits only
    // on its own rescale). The traced row keeps its own P-bar V, in the loop.
    const bool rows_qk = !Obs::enabled && tc_qk, rows_pv = !Obs::enabled && tc_pv;
    if (rows_qk) {
      S_rows.assign(rb.rows * w, 0.0);
      tc_dot_rows_at(o, model, int(rb.rows), &qb[rb.i0 * d], d, 1, &kb[j0 * d], 1, d, int(w), int(d),
                     S_rows.data(), w, site::qk, false);
    }
    if (rows_pv) Pbf_rows.assign(rb.rows * w, bf16{});
    long traced_r = -1;
    for (long r = 0; r < rb.rows; ++r) {
      const double mb = row_max(score_tile(rb.i0 + r, j0, w, rows_qk ? &S_rows[r * w] : nullptr), w);
      const double m_old = rb.m[r];
      const double m_new = std::max(m_old, mb);
      if (bi > 0) rescale(rb, r, m_old, m_new); // not on the first block
      rb.m[r] = m_new;
      const std::uint64_t live = exp_tile(m_new, w);
      row_sum(rb, r, w);
      const std::uint64_t ones = p_to_bf16(w);
      obs.count_p(live, ones);
      if (ones >= 2) rb.had_one[r] = 1; // a repeated maximum
      const bool traced = rb.tr.on && rb.i0 + r == rb.tr.row;
      if (traced) rb.tr.rebase(bi > 0, m_new, c_ex);
      if (rows_pv && !traced)
        std::copy(Pbf.begin(), Pbf.end(), Pbf_rows.begin() + r * w);
      else
        pv_update(rb, r, j0, w, traced);
      if (traced) traced_r = r;
    }
    if (rows_pv) { // the rows before the traced one (all when none is) and after it
      const long cut = traced_r < 0 ? rb.rows : traced_r;
      pv_rows(rb, 0, cut, j0, w);
      pv_rows(rb, cut + 1, rb.rows, j0, w);
    }
  }

  // 8 for rows [r0, r1) of the row block at once, from their P-bar in Pbf_rows (kv_block).
  void pv_rows(row_block &rb, long r0, long r1, long j0, long w) {
    if (r1 <= r0) return;
    tc_dot_rows_at(o, model, int(r1 - r0), &Pbf_rows[r0 * w], w, 1, &vbt[j0], 1, n, int(d), int(w),
                   &rb.acc[r0 * d], d, site::pv, true);
  }

  // 9-12. Final lane reduction, normalisation, output rounding and L for every row; write.
  void normalize_and_write(const row_block &rb) {
    for (long r = 0; r < rb.rows; ++r) {
      const long row = rb.i0 + r;
      const double *l = &rb.l[r * 4];
      double lt;
      if (exact)
        lt = l[0] + l[1] + l[2] + l[3];
      else if (quad)
        lt = o.add(o.add(l[0], l[2], site::row_sum), o.add(l[1], l[3], site::row_sum), site::row_sum);
      else
        lt = l[0];
      const bool bad = lt == 0 || std::isnan(lt);
      const double inv = exact                                         ? 1.0 / lt
                         : bad                                         ? 1.0
                         : pol.normalize == normalize_mode::reciprocal ? o.div(1.0, lt, site::normalize)
                                                                       : 0.0;
      for (long i = 0; i < d; ++i) {
        const double a = rb.acc[r * d + i];
        double y;
        if (exact)
          y = a / lt;
        else if (bad || pol.normalize == normalize_mode::reciprocal)
          y = o.mul(a, inv, site::normalize, rb.had_one[r]);
        else
          y = o.div(a, lt, site::normalize, rb.had_one[r]);
        if (tc) y = o.to16(y, site::o_to_bf16, rb.had_one[r]);
        out.o[row * d + i] = y;
      }
      const double lse = bad ? std::numeric_limits<double>::infinity() : rb.m[r] * scale + std::log(lt);
      out.lse[row] = exact || o.exact_at(site::lse) ? lse : double(float(lse));
    }
  }

  // Rows [i0, i0 + br): every KV block in the policy's order, then normalise and write.
  void run_row_block(long i0, long br, long bc) {
    row_block rb = begin_row_block(i0, br);
    const long nblk = (rb.kv_end + bc - 1) / bc;
    for (long bi = 0; bi < nblk; ++bi)
      kv_block(rb, bi, cfg.pol.kv == kv_order::reverse ? nblk - 1 - bi : bi, bc);
    normalize_and_write(rb);
  }
};

} // namespace fwd_detail

// The fa2 form split into work items, for running row blocks of one head on several threads
// (run.hpp): prepare the head once (prepare_fa2, filing the input roundings), size the result
// (fa2_begin), then run each row block r in [0, fa2_row_blocks) with its own observer; the
// blocks write disjoint rows. Run in block order with one observer, this is forward_fa2_form.
inline long fa2_row_blocks(const forward_config &cfg, long n) {
  const long br = fwd_detail::tile_sizes(cfg, n).br;
  return (n + br - 1) / br;
}

inline void fa2_begin(const fwd_detail::fa2_prepared &in, forward_result &res) {
  res.o.assign(in.n * in.d, 0.0);
  res.lse.assign(in.n, 0.0);
  res.out_frac_bits = in.out_frac_bits;
}

template <class Obs>
void fa2_row_block(const forward_config &cfg, const fwd_detail::fa2_prepared &in, long r,
                   const fwd_detail::fa2_output &out, Obs &obs) {
  const fwd_detail::tiles ts = fwd_detail::tile_sizes(cfg, in.n);
  fwd_detail::fa2_forward<Obs> f(cfg, in, out, obs);
  f.run_row_block(r * ts.br, ts.br, ts.bc);
}

template <class Obs>
void forward_fa2_form(const forward_config &cfg, const head_view &h, forward_result &res, Obs &obs) {
  const fwd_detail::fa2_prepared in = fwd_detail::prepare_fa2(cfg, h, obs);
  fa2_begin(in, res);
  const long nrb = fa2_row_blocks(cfg, h.n);
  for (long r = 0; r < nrb; ++r)
    fa2_row_block(cfg, in, r, fwd_detail::fa2_output{res.o.data(), res.lse.data(), &res.trace}, obs);
}

} // namespace bf16emu::attention
