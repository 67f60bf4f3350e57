// bf16emu attention: what both forward kernels share (the variants, a head's inputs, the
// configuration and result, the softmax scale, binary64 dot products, tiles and the element
// trace). The kernels: forward_fa2.hpp (exact / fp32 / fa2) and forward_paper.hpp (the paper's
// attention.py); forward.hpp picks one per policy. See docs/attention.md.
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

} // namespace bf16emu::attention
