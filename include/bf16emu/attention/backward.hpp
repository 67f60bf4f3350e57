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
// filed under site `backward`.
#pragma once

#include <cmath>
#include <vector>

#include "bf16emu/attention/forward.hpp"

namespace bf16emu::attention {

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
  const f32_ops<Obs> o{&obs};
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
    if (tc) {
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

  backward_result r;
  r.out_frac_bits = exact ? 52 : paper ? 7 : 23;
  r.delta.assign(n, 0.0), r.dq.assign(n * d, 0.0), r.dk.assign(n * d, 0.0), r.dv.assign(n * d, 0.0);
  // delta
  for (long row = 0; row < n; ++row) {
    const double *orow = &fwd.o[row * d], *dorow = &dout[row * d];
    double s = 0;
    if (exact) {
      for (long i = 0; i < d; ++i)
        s += dorow[i] * orow[i];
    } else if (paper) {
      for (long i = 0; i < d; ++i)
        s = o.add(s, o.to16(o.mul(dorow[i], orow[i], site::delta), site::delta), site::delta);
      s = o.to16(s, site::delta);
    } else {
      for (long i = 0; i < d; ++i)
        s = pol.fma_contract ? o.fma(dorow[i], orow[i], s, site::delta)
                             : o.add(s, o.mul(dorow[i], orow[i], site::delta), site::delta);
    }
    r.delta[row] = s;
  }
  // P, dS
  std::vector<double> P(n * n, 0.0), dS(n * n, 0.0);
  const double c = exact ? scale * 1.4426950408889634 : double(float(scale * 1.4426950408889634));
  for (long row = 0; row < n; ++row) {
    const double L = fwd.lse[row];
    const double Lc = exact ? L * 1.4426950408889634 : o.mul(L, 1.4426950408889634, B);
    for (long j = 0; j < n; ++j) {
      if (cfg.causal && j > row) continue;
      const double s = dot(&q[row * d], 1, &k[j * d], 1, d);
      double p;
      if (exact)
        p = std::exp2(s * c - Lc);
      else if (paper) {
        const double ss = o.to16(o.mul(s, scale, B), B);
        p = o.to16(rn_f32(o, std::exp(o.to16(o.sub(ss, L, B), B)), B), B);
      } else
        p = exp2_f32(o, o.fma(s, c, -Lc, B), pol.exp == exp_impl::poly_exp2, B);
      P[row * n + j] = p;
      const double dp = dot(&dout[row * d], 1, &v[j * d], 1, d);
      dS[row * n + j] =
          paper ? mul(mul(p, scale), sub(dp, r.delta[row])) : mul(mul(p, sub(dp, r.delta[row])), scale);
    }
  }
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < d; ++i) {
      r.dv[j * d + i] = dot(&P[j], n, &dout[i], d, n); // sum_row P[row, j] dO[row, i]
      r.dk[j * d + i] = dot(&dS[j], n, &q[i], d, n);   // sum_row dS[row, j] Q[row, i]
    }
  for (long row = 0; row < n; ++row)
    for (long i = 0; i < d; ++i)
      r.dq[row * d + i] = dot(&dS[row * n], 1, &k[i], d, n);
  (void)add;
  return r;
}

} // namespace bf16emu::attention
