// bf16emu attention: the forward pass (standard, FlashAttention-2, stabilized) under the
// exact / fp32 / paper / fa2 policies, for one head. See docs/attention.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bf16emu/attention/arith.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/attention/tc_adapter.hpp"

namespace bf16emu::attention {

enum class variant : std::uint8_t {
  standard,   // materialised S and P: one tile of all rows and all keys
  fa2,        // tiled Br x Bc, online softmax
  stabilized, // fa2 with the stabilized max (Algorithm 1, beta)
};

inline const char *to_string(variant v) {
  return v == variant::standard ? "standard" : v == variant::fa2 ? "fa2" : "stabilized";
}

// One head's inputs: row-major n x d, values held exactly in binary64.
struct head_view {
  long n = 0, d = 0;
  const double *q = nullptr, *k = nullptr, *v = nullptr;
};

struct forward_config {
  kernel_policy pol;
  variant var = variant::fa2;
  bool causal = false;
  long trace_row = -1, trace_col = -1; // element trace O[T, i]; -1: off
};

struct forward_result {
  std::vector<double> o;   // n x d, in the policy's output format (BF16, FP32 or binary64)
  std::vector<double> lse; // n (natural log)
  std::vector<trace_point> trace;
  int out_frac_bits = 52; // 7 (BF16), 23 (FP32), 52 (binary64)
};

// Softmax scale as the policy holds it: RN32(1/sqrt(d)) for the rounded policies.
inline double softmax_scale(const kernel_policy &p, long d) {
  const double s = p.softmax_scale > 0 ? p.softmax_scale : 1.0 / std::sqrt(double(d));
  return p.kind == policy_kind::exact ? s : double(float(s));
}

// The tie tolerance of the stabilized max in the units of the fa2 form's scores. tie_tol is in
// the units of the scores as the softmax sees them, s = S * scale (Algorithm 1 of the paper; the
// paper policy scales S before its test). The fa2 form keeps S unscaled and folds the scale into
// the exp2 argument, so its test S >= r_m - tie_tol / scale (binary64) is s >= s_max - tie_tol.
inline double unscaled_tie_tol(const kernel_policy &p, long d) { return p.tie_tol / softmax_scale(p, d); }

// Four binary64 dot products a[u] . b[u] of length len (unit strides) at once, for the exact
// policy and the exact baselines: each sum adds its products in index order, as the one-chain
// loop does (so the same bits), but four chains are in flight to hide the addition latency.
inline void exact_dot4(const double *const (&a)[4], const double *const (&b)[4], long len, double (&out)[4]) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (long t = 0; t < len; ++t) {
    s0 += a[0][t] * b[0][t];
    s1 += a[1][t] * b[1][t];
    s2 += a[2][t] * b[2][t];
    s3 += a[3][t] * b[3][t];
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
}

namespace fwd_detail {

constexpr double ninf = -std::numeric_limits<double>::infinity();
constexpr double log2e = 1.4426950408889634073599246810018921;

struct tiles {
  long br, bc;
};
inline tiles tile_sizes(const forward_config &c, long n) {
  if (c.var == variant::standard) return {n, n};
  return {std::max<long>(1, c.pol.block_m), std::max<long>(1, c.pol.block_n)};
}

inline bool masked(bool causal, long r, long j) { return causal && j > r; }

// The number of leading scores of a tile row S[0, w) that are not -inf, when every later one is
// -inf (as the masked keys are, a suffix); -1 when a -inf comes before a finite score. The host
// path's P-bar V takes those keys as one chain per column.
inline long finite_prefix(const std::vector<double> &S, long w) {
  long kp = 0;
  while (kp < w && S[kp] != ninf)
    ++kp;
  for (long j = kp; j < w; ++j)
    if (S[j] != ninf) return -1;
  return kp;
}

// Keeps the binary64 reference accumulator of the traced element (same running max).
struct trace_state {
  bool on = false;
  long row = -1, col = -1;
  double exact = 0;   // sum exp2((s_ex - m) c_ex) v
  double exact_l = 0; // sum exp2((s_ex - m) c_ex)
  double m_ref = ninf;
  long step = 0;
  std::vector<trace_point> *out = nullptr;

  // New block with running max m_new (unscaled score units, exp2 weight c_ex).
  void rebase(bool rescale, double m_new, double c_ex) {
    const double ma = m_new == ninf ? 0.0 : m_new;
    if (rescale && m_ref != ninf) {
      const double f = std::exp2((m_ref - ma) * c_ex);
      exact *= f, exact_l *= f;
    }
    m_ref = ma;
  }
  void add_exact(const double *q, const double *k, double v, long d, double c_ex) {
    double s = 0;
    for (long t = 0; t < d; ++t)
      s += q[t] * k[t];
    const double w = std::exp2((s - m_ref) * c_ex);
    exact += w * v, exact_l += w;
  }
  // paper policy: the FP32 partial sums of a block wait for the block's rescaled state.
  struct pending_point {
    long t;
    double pbar, partial, exact;
  };
  std::vector<pending_point> pending;
  void flush(double state) {
    const double keep = exact;
    for (const auto &p : pending) {
      exact = p.exact;
      emit(p.t, p.pbar, state + p.partial, false);
    }
    exact = keep;
    pending.clear();
  }
  void emit_boundary(double value) {
    if (out->empty()) return;
    trace_point p = out->back();
    p.step = step++, p.boundary = true, p.running = value, p.cum_error = value - p.exact;
    p.norm_error = p.exact_l > 0 ? p.cum_error / p.exact_l : 0.0;
    out->push_back(p);
  }
  void emit(long t, double pbar, double running, bool boundary) {
    trace_point p;
    p.step = step++, p.t = t, p.pbar = pbar, p.boundary = boundary;
    p.running = running, p.exact = exact, p.cum_error = running - exact;
    p.exact_l = exact_l, p.norm_error = exact_l > 0 ? p.cum_error / exact_l : 0.0;
    out->push_back(p);
  }
};

} // namespace fwd_detail

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

// ---------------------------------------------------------------------------
// paper: the arithmetic of the paper's attention.py (Qiu & Yao; ucker/why-low-precision-training-
// fails, attention.py FlashAttentionFunction.forward), under one of two dtype regimes:
//
// paper:bf16 (`paper`): every tensor BF16; each elementwise operation is computed in FP32 and
// rounded to BF16; each matmul is an FP32 dot product (sequential FMA here) rounded to BF16; the
// scores are scaled after the matmul; masked keys are skipped.
//
// paper:autocast: the same file under torch.amp.autocast(bfloat16) as the authors trained
// (train.py): exp, log and sum are on autocast's FP32 list (FP32 results); P is cast to BF16 only
// inside the P-bar V einsum; the running row sum and O are BF16 tensors (row_sums.copy_ and the
// in-place O ops round their FP32 results to BF16); masked scores are max_neg = -0x1.fep127 (not
// -inf), every key tile is visited (model.py: 512 x 512 tiles, forward order), the running max
// starts at max_neg, and each tile's row sum is clamped to RN32(1e-10). A fully masked tile row
// is 512 ties at max_neg: under the stabilized variant its r_m becomes 0. Site by site:
// docs/attention.md, "paper:autocast".

template <class Obs>
void forward_paper(const forward_config &cfg, const head_view &h, forward_result &res, Obs &obs) {
  using namespace fwd_detail;
  const kernel_policy &pol = cfg.pol;
  const bool ac = pol.paper_arith == paper_dtypes::autocast;
  const long n = h.n, d = h.d;
  const f32_ops<Obs> o{&obs, site_override(pol)};
  std::vector<double> q(h.q, h.q + n * d), k(h.k, h.k + n * d), v(h.v, h.v + n * d);
  for (auto *a : {&q, &k, &v})
    for (double &x : *a)
      x = o.to16(x, site::input);
  const double scale = softmax_scale(pol, d);
  const double c_ex = softmax_scale(kernel_policy{policy_kind::exact}, d) * log2e;
  const double tol32 = double(float(pol.tie_tol));
  // autocast: the masked score, the running max's start (-finfo(bf16).max) and the clamp
  const double max_neg = -std::ldexp(255.0, 120), eps32 = double(float(1e-10));
  res.o.assign(n * d, 0.0);
  res.lse.assign(n, 0.0);
  res.out_frac_bits = 7;
  const tiles ts = tile_sizes(cfg, n);
  // BF16 result of an FP32 operation: two roundings (FP32, then BF16), both under one site.
  auto b16 = [&](double x32, site s, bool p1 = false) { return o.to16(x32, s, p1); };
  auto exp16 = [&](double x, site s) { // torch.exp on BF16: expf, then BF16
    const double y32 = rn_f32(o, std::exp(x), s);
    return o.to16(y32, s, y32 == 1.0 || std::exp(x) == 1.0);
  };
  // exp of a BF16 tensor: BF16 (paper:bf16) or FP32 (autocast's FP32 list)
  auto exp_t = [&](double x, site s) { return ac ? rn_f32(o, std::exp(x), s) : exp16(x, s); };

  std::vector<double> S, P, Pb, pv(d);
  std::vector<char> live;
  // The host path: the dot products as FP32 FMA chains across columns (hw_f32::fma_cols) on FP32
  // copies of the operands: Q, K transposed (d x n), V; the row's P-bar and sums.
  const bool fast_qk = o.fast_chains(site::qk), fast_pv = o.fast_chains(site::pv);
  std::vector<float> qf, kTf, vf, pbf, cf;
  if (fast_qk) qf.assign(q.begin(), q.end()), pack_cols(k.data(), d, 1, n, d, kTf);
  if (fast_pv) vf.assign(v.begin(), v.end());
  for (long i0 = 0; i0 < n; i0 += ts.br) {
    const long i1 = std::min(n, i0 + ts.br);
    const long rows = i1 - i0;
    // paper:bf16 skips the key tiles past the diagonal; autocast visits every one
    const long kv_end = cfg.causal && !ac ? std::min(n, i1) : n;
    const long nblk = (kv_end + ts.bc - 1) / ts.bc;
    std::vector<double> m(rows, ac ? max_neg : ninf), l(rows, 0.0), O(rows * d, 0.0);
    std::vector<char> had_one(rows, 0);
    trace_state tr;
    if (cfg.trace_row >= i0 && cfg.trace_row < i1) {
      tr.on = true, tr.row = cfg.trace_row, tr.col = cfg.trace_col, tr.out = &res.trace;
    }
    for (long bi = 0; bi < nblk; ++bi) {
      const long b = pol.kv == kv_order::reverse ? nblk - 1 - bi : bi;
      const long j0 = b * ts.bc, j1 = std::min(kv_end, j0 + ts.bc), w = j1 - j0;
      S.assign(w, ninf), P.assign(w, 0.0), Pb.assign(w, 0.0), live.assign(w, 0);
      for (long r = 0; r < rows; ++r) {
        const long row = i0 + r;
        double mb = ninf;
        if (fast_qk) { // the row's unmasked keys, a prefix of the tile
          const long nl = cfg.causal ? std::clamp(row - j0 + 1, 0L, w) : w;
          cf.assign(nl, 0.0f);
          hw_f32::fma_cols(&qf[row * d], 1, &kTf[j0], n, d, nl, cf.data());
        }
        for (long j = 0; j < w; ++j) {
          live[j] = !masked(cfg.causal, row, j0 + j);
          if (!live[j]) { // paper:bf16 skips the entry (S = -inf); autocast fills max_neg
            S[j] = ac ? max_neg : ninf;
            mb = std::max(mb, S[j]);
            continue;
          }
          double s = 0;
          if (fast_qk)
            s = cf[j];
          else
            for (long t = 0; t < d; ++t)
              s = o.fma(q[row * d + t], k[(j0 + j) * d + t], s, site::qk);
          s = b16(s, site::qk);
          S[j] = b16(o.mul(s, scale, site::scale), site::scale);
          mb = std::max(mb, S[j]);
        }
        if ((cfg.var == variant::stabilized || pol.stabilized) && mb != ninf) {
          // close_to_max = S >= (m - tol), the threshold a BF16 tensor op
          const double thr = b16(o.sub(mb, tol32, site::row_max), site::row_max);
          long rs = 0;
          for (long j = 0; j < w; ++j)
            rs += S[j] >= thr;
          if (rs > 1 && mb > 0)
            mb = b16(o.mul(pol.beta, mb, site::row_max), site::row_max);
          else if (rs > 1 && mb < 0)
            mb = 0;
        }
        const double m_old = m[r], m_new = std::max(m_old, mb);
        // P = exp(S - m): autocast computes every entry (a masked one is exp(max_neg - m) = 0,
        // or 1 while m is still max_neg); P-bar is P in BF16 as the P-bar V einsum sees it.
        std::uint64_t ones = 0, entries = 0;
        for (long j = 0; j < w; ++j) {
          if (S[j] == ninf) continue;
          ++entries;
          const double x = b16(o.sub(S[j], m_new, site::exp_arg), site::exp_arg);
          P[j] = exp_t(x, site::exp);
          Pb[j] = ac ? o.to16(P[j], site::p_to_bf16, P[j] == 1.0) : P[j];
          ones += Pb[j] == 1.0;
        }
        obs.count_p(entries, ones);
        if (ones >= 2) had_one[r] = 1; // a repeated maximum
        const bool row_p1 = ones > 0;
        // block row sum: FP32 sum, then BF16 (paper:bf16) or clamped to 1e-10 (autocast)
        double bs = 0;
        for (long j = 0; j < w; ++j)
          if (S[j] != ninf) bs = o.add(bs, P[j], site::row_sum, Pb[j] == 1.0);
        bs = ac ? std::max(bs, eps32) : b16(bs, site::row_sum, row_p1);
        const bool traced = tr.on && row == tr.row;
        // P-bar V: FP32 dot products rounded to BF16. The host path (not the traced row) takes
        // the keys of S != -inf as one chain per column (finite_prefix; autocast keeps the masked
        // keys, so all of them).
        const long kp = fast_pv && !traced ? finite_prefix(S, w) : -1;
        const bool pv_fast = kp >= 0;
        if (pv_fast) {
          pbf.assign(Pb.begin(), Pb.begin() + kp), cf.assign(d, 0.0f);
          hw_f32::fma_cols(pbf.data(), 1, &vf[j0 * d], d, kp, d, cf.data());
          for (long i = 0; i < d; ++i)
            pv[i] = b16(cf[i], site::pv_to_bf16, row_p1);
        }
        for (long i = 0; i < d && !pv_fast; ++i) {
          const bool ti = traced && i == tr.col;
          double a = 0;
          if (ti) tr.rebase(bi > 0, m_new / scale, c_ex);
          for (long j = 0; j < w; ++j) {
            if (S[j] == ninf) continue;
            a = o.fma(Pb[j], v[(j0 + j) * d + i], a, site::pv, Pb[j] == 1.0);
            if (ti && live[j]) {
              tr.add_exact(&q[row * d], &k[(j0 + j) * d], v[(j0 + j) * d + i], d, c_ex);
              tr.pending.push_back({j0 + j, Pb[j], a, tr.exact});
            }
          }
          pv[i] = b16(a, site::pv_to_bf16, row_p1);
        }
        // rescale and update (paper:bf16 skips the first tile's rescale: alpha = 0 there in the
        // repository, which gives the same values; autocast runs it)
        if (bi == 0 && !ac) {
          l[r] = bs;
          for (long i = 0; i < d; ++i)
            O[r * d + i] = o.to16(o.add(0.0, pv[i], site::o_update), site::o_update);
        } else {
          const double x = b16(o.sub(m_old, m_new, site::rescale), site::rescale);
          const double al = ac ? rn_f32(o, std::exp(x), site::rescale)
                               : o.to16(rn_f32(o, std::exp(x), site::rescale), site::rescale);
          // l = alpha*l + bs: BF16 alpha*l under paper:bf16; autocast rounds the FP32 sum to
          // BF16 once (row_sums.copy_)
          const double al_l =
              ac ? o.mul(al, l[r], site::rescale) : b16(o.mul(al, l[r], site::rescale), site::rescale);
          l[r] = b16(o.add(al_l, bs, site::row_sum), site::row_sum);
          for (long i = 0; i < d; ++i) {
            const double oi = b16(o.mul(O[r * d + i], al, site::rescale), site::rescale);
            if (traced && i == tr.col) tr.flush(oi);
            O[r * d + i] = b16(o.add(oi, pv[i], site::o_update), site::o_update, row_p1);
          }
        }
        if (traced && bi == 0 && !ac) tr.flush(0.0);
        if (traced) tr.emit_boundary(O[r * d + tr.col]);
        m[r] = m_new;
      }
    }
    for (long r = 0; r < rows; ++r) {
      const long row = i0 + r;
      for (long i = 0; i < d; ++i) {
        const double y32 = o.div(O[r * d + i], l[r], site::normalize, had_one[r]);
        res.o[row * d + i] = o.to16(y32, site::o_to_bf16, had_one[r]);
      }
      // lse = log(l) + m: BF16 (paper:bf16); FP32 under autocast (log on the FP32 list)
      const double lg = o.to32(std::log(l[r]), site::lse);
      res.lse[row] =
          ac ? o.add(lg, m[r], site::lse) : b16(o.add(b16(lg, site::lse), m[r], site::lse), site::lse);
    }
  }
}

// One head, any policy.
template <class Obs> forward_result forward_head(const forward_config &cfg, const head_view &h, Obs &obs) {
  forward_result r;
  if (cfg.pol.kind == policy_kind::paper)
    forward_paper(cfg, h, r, obs);
  else
    forward_fa2_form(cfg, h, r, obs);
  return r;
}

} // namespace bf16emu::attention
