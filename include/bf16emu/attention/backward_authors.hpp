// bf16emu attention: the backward of the paper authors' attention.py, for one head, site by site.
//
// Source: ucker/why-low-precision-training-fails, attention.py, FlashAttentionFunction.backward
// (lines 120-183; model.py line 75 calls it with causal=True and 512 x 512 tiles). The loops:
//
//   for each query tile i (q_bucket_size rows; lines 145-146):
//     for each key tile j in forward order (k_bucket_size keys; lines 156-157):
//       S  = einsum(Q_i, K_j) * scale             159  (masked -> -inf, 161-163)
//       P  = exp(S - lse)                         165  (lse from the forward, line 113)
//       dV_chunk = einsum(P, dO_i)                170  contracted over the tile's query rows
//       dP = einsum(dO_i, V_j)                    171
//       D  = (dO_i * O_i).sum(-1)                 173  (delta; the same every key tile)
//       dS = P * scale * (dP - D)                 174
//       dQ_chunk = einsum(dS, K_j)                176  contracted over the tile's keys
//       dK_chunk = einsum(dS, Q_i)                177  contracted over the tile's query rows
//       dQ_i += dQ_chunk; dK_j += dK_chunk; dV_j += dV_chunk   179-181 (in place, BF16 buffers)
//
// The dtypes depend on the forward's policy and on whether autocast is active in the backward:
//
//   paper:bf16 (no autocast anywhere): every tensor BF16, lse too; each elementwise op an FP32
//     result rounded to BF16, each einsum an FP32 dot rounded to BF16, D = RN16(FP32 sum of
//     RN16(dO*O)). The code runs as written.
//   paper:autocast: the forward ran under autocast, so lse is FP32 (log is on autocast's FP32
//     list) and P = exp(BF16 S - FP32 lse) is FP32. Eagerly (train.py calls backward() after
//     leaving the autocast block; the Function has no custom_bwd) einsum(P, dO) mixes FP32 and
//     BF16 and raises, and so do the two einsums of the FP32 dS: the code cannot run as written.
//     INFERENCE (docs/attention.md, "The authors' backward"): the authors trained with
//     compile=True (train.py line 102, torch 2.6 in their README); torch.compile traces the
//     backward graph when the forward runs, under the forward's autocast context (AOTAutograd's
//     behaviour then, made the configurable default `backward_pass_autocast="same_as_forward"`
//     in pytorch/pytorch#156356 and changed to "off" only in pytorch/pytorch#177287). So
//     `backward_kind::authors` runs the backward under autocast(bfloat16): the einsums cast
//     their operands to BF16 (P and dS rounded to BF16 there) and return BF16; exp and sum are
//     FP32 (so D is FP32: a sum of BF16 products); the elementwise ops follow type promotion
//     (S - lse, P*scale, dP - D and dS FP32). The other reading, `authors_promote`, keeps eager
//     semantics (no autocast) and lets the mixed einsums promote: the BF16 operand widened, an
//     FP32 product chain, an FP32 result; D is then BF16 and dP - D is a BF16 op.
//
// As in the forward model (forward_paper), every op is one eager PyTorch op: each einsum an
// FP32 FMA chain in increasing index order from 0 (the products of two BF16 numbers are exact),
// rounded once to its result dtype; inductor's fusion of elementwise chains is not modelled.
// The in-place adds round RN16(RN32(acc + chunk)). Masked entries (S = -inf, P = 0) are left
// out of the chains: a zero product changes no bit of a chain that starts at +0; their roundings
// are not filed. Every rounding is filed under site `backward`, D's under `delta`.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/forward.hpp"

namespace bf16emu::attention {

// One head of the authors' backward (cfg.pol.kind must be paper). promote: the eager reading of
// paper:autocast (mixed einsums in FP32) instead of autocast's; no effect under paper:bf16.
template <class Obs>
backward_result backward_authors_head(const forward_config &cfg, const head_view &h, const double *dout_in,
                                      const forward_result &fwd, Obs &obs, bool promote = false) {
  const kernel_policy &pol = cfg.pol;
  const bool fwd_ac = pol.paper_arith == paper_dtypes::autocast;
  const bool ac = fwd_ac && !promote; // autocast active in the backward
  const bool p32 = fwd_ac;            // P and dS are FP32 (lse FP32); else BF16
  const long n = h.n, d = h.d;
  const f32_ops<Obs> o{&obs, site_override(pol)};
  const site B = site::backward, Dl = site::delta;
  std::vector<double> q(n * d), k(n * d), v(n * d), dout(n * d);
  for (long e = 0; e < n * d; ++e)
    q[e] = o.to16(h.q[e], site::input), k[e] = o.to16(h.k[e], site::input),
    v[e] = o.to16(h.v[e], site::input), dout[e] = o.to16(dout_in[e], site::input);
  const double scale = softmax_scale(pol, d);
  const fwd_detail::tiles ts = fwd_detail::tile_sizes(cfg, n); // the forward's q and k buckets

  backward_result r;
  r.out_frac_bits = 7; // dq, dk, dv: BF16 buffers (zeros_like of BF16 q, k, v)
  r.delta.assign(n, 0.0), r.dq.assign(n * d, 0.0), r.dk.assign(n * d, 0.0), r.dv.assign(n * d, 0.0);
  // D = (dO * O).sum(-1): the product a BF16 tensor op; the sum FP32 (autocast's FP32 list) or
  // a BF16 tensor's sum (FP32 accumulation, one rounding to BF16).
  for (long row = 0; row < n; ++row) {
    double s = 0;
    for (long c = 0; c < d; ++c)
      s = o.add(s, o.to16(o.mul(dout[row * d + c], fwd.o[row * d + c], Dl), Dl), Dl);
    r.delta[row] = ac ? s : o.to16(s, Dl);
  }
  // an einsum's operand: cast to BF16 under autocast (exact for a BF16 value)
  auto opnd = [&](double x, bool p1 = false) { return ac ? o.to16(x, B, p1) : x; };
  // an einsum's result from its FP32 chain: BF16, except a promoted einsum of an FP32 operand
  auto mm_out = [&](double acc, bool fp32_operand) { return !ac && fp32_operand ? acc : o.to16(acc, B); };
  // an elementwise op's FP32 result stored in a BF16 tensor, or kept FP32
  auto ew = [&](double x32, bool is32) { return is32 ? x32 : o.to16(x32, B); };
  auto acc16 = [&](double &a, double chunk) { a = o.to16(o.add(a, chunk, B), B); }; // add_ on BF16

  // out[x] = sum_t a[t*sa] b[t*sb + x] for x < m: FP32 FMA chains from +0, t increasing. On the
  // host path (no ledger, the host rounds like the core) hw_f32::fma_cols on FP32 copies of the
  // operands, the same bits; else f32_ops::fma. ones: file a[t] == 1 as P-bar = 1 events.
  const bool fast = o.fast_chains(B);
  std::vector<float> cf;
  auto chain = [&](const auto *a, long sa, const auto *b, long sb, long len, long m, double *out, bool ones) {
    if constexpr (std::is_same_v<std::decay_t<decltype(*a)>, float>) {
      cf.assign(m, 0.0f);
      hw_f32::fma_cols(a, sa, b, sb, len, m, cf.data());
      std::copy(cf.begin(), cf.end(), out);
    } else {
      for (long x = 0; x < m; ++x) {
        double s = 0;
        for (long t = 0; t < len; ++t)
          s = o.fma(a[t * sa], b[t * sb + x], s, B, ones && a[t * sa] == 1.0);
        out[x] = s;
      }
    }
  };
  // K and V transposed (d x n), and FP32 copies of everything for the host path
  std::vector<double> kT, vT;
  pack_cols(k.data(), d, 1, n, d, kT), pack_cols(v.data(), d, 1, n, d, vT);
  std::vector<float> qf, kf, dof, kTf, vTf, Pf, dSf;
  if (fast) {
    qf.assign(q.begin(), q.end()), kf.assign(k.begin(), k.end()), dof.assign(dout.begin(), dout.end());
    kTf.assign(kT.begin(), kT.end()), vTf.assign(vT.begin(), vT.end());
  }

  std::vector<double> P, dS, srow, dprow, chunk(d);
  std::vector<long> live; // per tile row: the number of keys it sees (a prefix of the tile)
  for (long i0 = 0; i0 < n; i0 += ts.br) {
    const long rows = std::min(n, i0 + ts.br) - i0;
    for (long j0 = 0; j0 < n; j0 += ts.bc) {
      const long w = std::min(n, j0 + ts.bc) - j0;
      P.assign(rows * w, 0.0), dS.assign(rows * w, 0.0), live.assign(rows, 0);
      srow.resize(w), dprow.resize(w);
      // 159-174 for the tile's live entries
      for (long rr = 0; rr < rows; ++rr) {
        const long row = i0 + rr, m = cfg.causal ? std::clamp(row - j0 + 1, 0L, w) : w;
        live[rr] = m;
        if (fast) {
          chain(&qf[row * d], 1, &kTf[j0], n, d, m, srow.data(), false);
          chain(&dof[row * d], 1, &vTf[j0], n, d, m, dprow.data(), false);
        } else {
          chain(&q[row * d], 1, &kT[j0], n, d, m, srow.data(), false);
          chain(&dout[row * d], 1, &vT[j0], n, d, m, dprow.data(), false);
        }
        const double L = fwd.lse[row];
        for (long jj = 0; jj < m; ++jj) {
          const double s = o.to16(o.mul(o.to16(srow[jj], B), scale, B), B); // 159: BF16 einsum, * scale
          const double dp = o.to16(dprow[jj], B);                           // 171: BF16 einsum
          const double x = ew(o.sub(s, L, B), p32);                         // 165: S - lse
          const double y32 = rn_f32(o, std::exp(x), B);
          const double p = p32 ? y32 : o.to16(y32, B, y32 == 1.0); // 165: exp
          const double a = ew(o.mul(p, scale, B), p32);            // 174: P * scale
          const double b = ew(o.sub(dp, r.delta[row], B), ac);     // 174: dP - D
          P[rr * w + jj] = opnd(p, p == 1.0);
          dS[rr * w + jj] = opnd(ew(o.mul(a, b, B), p32)); // 174: (P*scale)*(dP-D)
        }
      }
      if (fast) Pf.assign(P.begin(), P.end()), dSf.assign(dS.begin(), dS.end());
      // 176, 179: dQ_i += einsum(dS, K_j), contracted over the row's live keys
      for (long rr = 0; rr < rows; ++rr) {
        if (fast)
          chain(&dSf[rr * w], 1, &kf[j0 * d], d, live[rr], d, chunk.data(), false);
        else
          chain(&dS[rr * w], 1, &k[j0 * d], d, live[rr], d, chunk.data(), false);
        for (long c = 0; c < d; ++c)
          acc16(r.dq[(i0 + rr) * d + c], mm_out(chunk[c], p32));
      }
      // 177, 170, 180-181: dK_j += einsum(dS, Q_i), dV_j += einsum(P, dO_i), contracted over the
      // tile's rows in increasing order: a key's live rows are a suffix [r0, rows) of the tile
      for (long jj = 0; jj < w; ++jj) {
        long r0 = 0;
        while (r0 < rows && live[r0] <= jj)
          ++r0;
        const long len = rows - r0, e0 = std::min(r0, rows - 1) * w + jj,
                   b0 = (i0 + std::min(r0, rows - 1)) * d;
        for (const bool is_k : {true, false}) {
          if (fast)
            chain(is_k ? &dSf[e0] : &Pf[e0], w, is_k ? &qf[b0] : &dof[b0], d, len, d, chunk.data(), false);
          else
            chain(is_k ? &dS[e0] : &P[e0], w, is_k ? &q[b0] : &dout[b0], d, len, d, chunk.data(), !is_k);
          double *acc = is_k ? &r.dk[(j0 + jj) * d] : &r.dv[(j0 + jj) * d];
          for (long c = 0; c < d; ++c)
            acc16(acc[c], mm_out(chunk[c], p32));
        }
      }
    }
  }
  return r;
}

} // namespace bf16emu::attention
