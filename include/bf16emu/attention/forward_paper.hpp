// bf16emu attention: the paper's forward (the arithmetic of the authors' attention.py, paper:bf16
// and paper:autocast), for one head. See docs/attention.md.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bf16emu/attention/forward_common.hpp"

namespace bf16emu::attention {

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

} // namespace bf16emu::attention
