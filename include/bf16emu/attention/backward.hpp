// bf16emu attention: the backward pass for one head (non-tiled; every key of a row at once).
// The simple reference; the tiled FlashAttention-2 backward is backward_fa2.hpp.
//
//   delta = rowsum(dO o O)            site delta (the term the paper follows)
//   P     = exp(S*scale - L)          recomputed from the forward's L
//   dV    = P^T dO,  dP = dO V^T,  dS = P o (dP - delta) * scale,  dQ = dS K,  dK = dS^T Q
//
// Per policy: exact = binary64; fp32 = FP32 sequential FMA dot products and FP32 elementwise;
// fa2 = FP32 elementwise, matmuls on the tensor-core model with operands rounded to BF16
// (P, dS and dO are BF16 there, as in FlashAttention-2), delta from BF16 O and dO in FP32;
// paper = BF16 tensors, each elementwise op in FP32 then BF16, each matmul an FP32 dot
// rounded to BF16 (the paper's attention.py, one KV block). All roundings except delta's are
// filed under site `backward`. paper:autocast: the authors' backward runs outside autocast
// (train.py calls backward() after leaving the autocast block and attention.py's backward has
// no custom_bwd), so on BF16 tensors: delta = D = (doc * oc).sum(-1) is BF16 products summed in
// FP32 and stored as BF16, as under paper:bf16; dQ, dK, dV as paper:bf16.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "bf16emu/attention/forward.hpp"

namespace bf16emu::attention {

// Order of the delta row sum (the reference backward uses `sequential`).
enum class delta_order : std::uint8_t {
  sequential, // one running sum over the columns in increasing order
  fa2_lanes,  // per-thread sums, then the xor butterfly (flash_bwd_preprocess_kernel.h)
};

// Threads per row in dot_do_o for head dimension d: the kernel's head dimension is d rounded
// up to a multiple of 32 (the instantiated 32, 64, ..., 256); 8 lanes when that is a multiple
// of 64, else 4.
inline int delta_lanes(long d) {
  const long hd = (d + 31) / 32 * 32;
  return hd % 64 == 0 ? 8 : 4;
}

namespace bwd_detail {

// delta = rowsum(dO o O) for one row. exact: binary64. paper: BF16 products summed in FP32
// (always sequential), the sum rounded to BF16 (both paper policies). Otherwise FP32 in the given order:
// sequential (one running sum, FMA-contracted if fma) or FlashAttention-2's lanes.
template <class Obs>
double delta_row(const f32_ops<Obs> &o, bool exact, bool paper, bool fma, delta_order ord,
                 const double *dorow, const double *orow, long d) {
  auto mul = [&](double a, double b) { return exact ? a * b : o.mul(a, b, site::delta); };
  auto add = [&](double a, double b) { return exact ? a + b : o.add(a, b, site::delta); };
  auto madd = [&](double a, double b, double s) {
    return exact ? s + a * b : fma ? o.fma(a, b, s, site::delta) : add(s, mul(a, b));
  };
  if (paper) {
    double s = 0;
    for (long c = 0; c < d; ++c)
      s = add(s, o.to16(mul(dorow[c], orow[c]), site::delta));
    return o.to16(s, site::delta);
  }
  if (ord == delta_order::sequential) {
    double s = 0;
    for (long c = 0; c < d; ++c)
      s = madd(dorow[c], orow[c], s);
    return s;
  }
  const int lanes = delta_lanes(d);
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  bool started[8] = {false, false, false, false, false, false, false, false};
  for (long c = 0; c < d; ++c) {
    const int t = int((c / 8) % lanes);
    s[t] = started[t] ? madd(dorow[c], orow[c], s[t]) : mul(dorow[c], orow[c]);
    started[t] = true;
  }
  for (int off = lanes / 2; off >= 1; off /= 2)
    for (int t = 0; t < off; ++t)
      s[t] = add(s[t], s[t + off]);
  return s[0];
}

} // namespace bwd_detail

struct backward_result {
  std::vector<double> delta, dq, dk, dv;
  int out_frac_bits = 23; // format of dq, dk, dv: 52 (exact), 23 (FP32), 7 (BF16)
};

template <class Obs>
backward_result backward_head(const forward_config &cfg, const head_view &h, const double *dout_in,
                              const forward_result &fwd, Obs &obs) {
  const kernel_policy &pol = cfg.pol;
  const policy_kind kind = pol.kind;
  const bool exact = kind == policy_kind::exact, tc = kind == policy_kind::fa2,
             paper = kind == policy_kind::paper;
  const long n = h.n, d = h.d;
  const f32_ops<Obs> o{&obs, site_override(pol)};
  const tc_model model = tc_for(pol.arch);
  const site B = site::backward;
  const bool bf16_in = tc || paper;
  auto in = [&](double x) { return exact ? x : bf16_in ? o.to16(x, site::input) : o.to32(x, site::input); };
  std::vector<double> q(n * d), k(n * d), v(n * d), dout(n * d);
  for (long i = 0; i < n * d; ++i)
    q[i] = in(h.q[i]), k[i] = in(h.k[i]), v[i] = in(h.v[i]), dout[i] = in(dout_in[i]);
  const double scale = softmax_scale(pol, d);
  // elementwise result: FP32 value, then BF16 under the paper policy
  auto ew = [&](double x32, site s = site::backward) { return paper ? o.to16(x32, s) : x32; };
  auto add = [&](double a, double b, site s = site::backward) {
    return exact ? a + b : ew(o.add(a, b, s), s);
  };
  auto sub = [&](double a, double b, site s = site::backward) {
    return exact ? a - b : ew(o.sub(a, b, s), s);
  };
  auto mul = [&](double a, double b, site s = site::backward) {
    return exact ? a * b : ew(o.mul(a, b, s), s);
  };
  // dot product sum_t a[t*sa] b[t*sb] of length len, in the policy's matmul arithmetic
  std::vector<bf16> ab, bb;
  auto dot = [&](const double *a, long sa, const double *b, long sb, long len) {
    if (exact) {
      double s = 0;
      for (long t = 0; t < len; ++t)
        s += a[t * sa] * b[t * sb];
      return s;
    }
    if (tc && o.at_prec(B) == site_prec::policy) { // else FP32 operands: FP32 FMA chains below
      ab.resize(len), bb.resize(len);
      for (long t = 0; t < len; ++t)
        ab[t] = as_bf16(o.to16(a[t * sa], B)), bb[t] = as_bf16(o.to16(b[t * sb], B));
      return of(tc_dot(model, ab.data(), 1, bb.data(), 1, int(len), f32{}, obs, B, false));
    }
    double s = 0;
    for (long t = 0; t < len; ++t)
      s = o.fma(a[t * sa], b[t * sb], s, B);
    return paper ? o.to16(s, B) : s;
  };

  // The host path: the FP32 chains of `dot` as hw_f32::fma_cols across columns, on FP32 copies
  // of the operands (Q, K, dO row-major; K and V transposed, d x n), the sums then as `dot`'s.
  const bool fast = !exact && !(tc && o.at_prec(B) == site_prec::policy) && o.fast_chains(B);
  std::vector<float> qf, kf, dof, kTf, vTf, af, cf;
  if (fast) {
    qf.assign(q.begin(), q.end()), kf.assign(k.begin(), k.end()), dof.assign(dout.begin(), dout.end());
    pack_cols(k.data(), d, 1, n, d, kTf), pack_cols(v.data(), d, 1, n, d, vTf);
  }
  // cf[0, m) = the chains of a (length len, unit stride) against m columns of b (row stride sb),
  // each then as `dot` returns it (BF16 under the paper policy) into out[0, m).
  auto dots_fast = [&](const float *a, const float *b, long sb, long len, long m, double *out) {
    cf.assign(m, 0.0f);
    hw_f32::fma_cols(a, 1, b, sb, len, m, cf.data());
    for (long x = 0; x < m; ++x)
      out[x] = paper ? o.to16(cf[x], B) : cf[x];
  };

  backward_result r;
  r.out_frac_bits = exact ? 52 : paper ? 7 : 23;
  r.delta.assign(n, 0.0), r.dq.assign(n * d, 0.0), r.dk.assign(n * d, 0.0), r.dv.assign(n * d, 0.0);
  // delta
  for (long row = 0; row < n; ++row)
    r.delta[row] = bwd_detail::delta_row(o, exact, paper, pol.fma_contract, delta_order::sequential,
                                         &dout[row * d], &fwd.o[row * d], d);
  // P, dS
  std::vector<double> P(n * n, 0.0), dS(n * n, 0.0);
  const double c = exact ? scale * 1.4426950408889634 : double(float(scale * 1.4426950408889634));
  std::vector<double> s_ex, dp_ex; // exact (or fast): the row's scores and dO V^T
  for (long row = 0; row < n; ++row) {
    const double L = fwd.lse[row];
    const double Lc = exact ? L * 1.4426950408889634 : o.mul(L, 1.4426950408889634, B);
    const long keys = cfg.causal ? row + 1 : n;
    if (exact) {
      s_ex.resize(keys), dp_ex.resize(keys);
      const double *qr = &q[row * d], *dr = &dout[row * d];
      long j = 0;
      for (double out[4]; j + 2 <= keys; j += 2) {
        exact_dot4({qr, qr, dr, dr}, {&k[j * d], &k[(j + 1) * d], &v[j * d], &v[(j + 1) * d]}, d, out);
        s_ex[j] = out[0], s_ex[j + 1] = out[1], dp_ex[j] = out[2], dp_ex[j + 1] = out[3];
      }
      for (; j < keys; ++j)
        s_ex[j] = dot(qr, 1, &k[j * d], 1, d), dp_ex[j] = dot(dr, 1, &v[j * d], 1, d);
    } else if (fast) {
      s_ex.resize(keys), dp_ex.resize(keys);
      dots_fast(&qf[row * d], kTf.data(), n, d, keys, s_ex.data());
      dots_fast(&dof[row * d], vTf.data(), n, d, keys, dp_ex.data());
    }
    const bool pre = exact || fast;
    for (long j = 0; j < keys; ++j) {
      const double s = pre ? s_ex[j] : dot(&q[row * d], 1, &k[j * d], 1, d);
      double p;
      if (exact)
        p = std::exp2(s * c - Lc);
      else if (paper) {
        const double ss = o.to16(o.mul(s, scale, B), B);
        p = o.to16(rn_f32(o, std::exp(o.to16(o.sub(ss, L, B), B)), B), B);
      } else
        p = exp2_f32(o, o.fma(s, c, -Lc, B), pol.exp == exp_impl::poly_exp2, B);
      P[row * n + j] = p;
      const double dp = pre ? dp_ex[j] : dot(&dout[row * d], 1, &v[j * d], 1, d);
      dS[row * n + j] =
          paper ? mul(mul(p, scale), sub(dp, r.delta[row])) : mul(mul(p, sub(dp, r.delta[row])), scale);
    }
  }
  // The columns of dO, Q, K (once) and of P, dS (per key) packed with unit strides (pack_cols:
  // the same operands in the same order, so the same bits and ledger, without strided reads).
  std::vector<double> doT, qT, kT, pj, dsj;
  pack_cols(dout.data(), d, 1, n, d, doT);
  pack_cols(q.data(), d, 1, n, d, qT);
  pack_cols(k.data(), d, 1, n, d, kT);
  for (long j = 0; j < n; ++j) {
    if (fast) { // sum_row P[row, j] dO[row, :] and sum_row dS[row, j] Q[row, :]
      pack_cols(&P[j], n, 1, n, 1, af);
      dots_fast(af.data(), dof.data(), d, n, d, &r.dv[j * d]);
      pack_cols(&dS[j], n, 1, n, 1, af);
      dots_fast(af.data(), qf.data(), d, n, d, &r.dk[j * d]);
      continue;
    }
    pack_cols(&P[j], n, 1, n, 1, pj);
    pack_cols(&dS[j], n, 1, n, 1, dsj);
    long i = 0;
    for (double out[4]; exact && i + 2 <= d; i += 2) {
      const double *p = pj.data(), *g = dsj.data();
      exact_dot4({p, p, g, g}, {&doT[i * n], &doT[(i + 1) * n], &qT[i * n], &qT[(i + 1) * n]}, n, out);
      r.dv[j * d + i] = out[0], r.dv[j * d + i + 1] = out[1], r.dk[j * d + i] = out[2],
                   r.dk[j * d + i + 1] = out[3];
    }
    for (; i < d; ++i) {
      r.dv[j * d + i] = dot(pj.data(), 1, &doT[i * n], 1, n); // sum_row P[row, j] dO[row, i]
      r.dk[j * d + i] = dot(dsj.data(), 1, &qT[i * n], 1, n); // sum_row dS[row, j] Q[row, i]
    }
  }
  for (long row = 0; row < n; ++row) {
    const double *g = &dS[row * n];
    if (fast) { // sum_j dS[row, j] K[j, :]
      af.assign(g, g + n);
      dots_fast(af.data(), kf.data(), d, n, d, &r.dq[row * d]);
      continue;
    }
    long i = 0;
    for (double out[4]; exact && i + 4 <= d; i += 4) {
      exact_dot4({g, g, g, g}, {&kT[i * n], &kT[(i + 1) * n], &kT[(i + 2) * n], &kT[(i + 3) * n]}, n, out);
      std::copy(out, out + 4, &r.dq[row * d + i]);
    }
    for (; i < d; ++i)
      r.dq[row * d + i] = dot(g, 1, &kT[i * n], 1, n);
  }
  (void)add;
  return r;
}

} // namespace bf16emu::attention
