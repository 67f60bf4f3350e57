// bf16emu attention: the tiled FlashAttention-2 backward for one head.
//
// Loop structure: Algorithm 2 of Dao, "FlashAttention-2" (arXiv 2307.08691); rounding points,
// orders and defaults from the CUDA kernel, Dao-AILab/flash-attention, csrc/flash_attn/src/:
//
//   delta_r = rowsum(dO o O)                         delta      (flash_bwd_preprocess_kernel.h)
//   for each KV block j (Bc keys; order = dq_order):
//     dK_j = dV_j = 0                                FP32 accumulators, kept across query blocks
//     for each query block i (Br rows) that sees a key of block j (order = q_order; the kernel
//     walks m_block from the last block down, flash_bwd_kernel.h):
//       S    = Q_i K_j^T                             bwd_qk
//       P    = exp2(S*c - L*RN32(log2 e))            bwd_exp_arg, bwd_exp (softmax.h,
//                                                    scale_apply_exp2<Scale_max=false>)
//       dV_j += BF16(P)^T dO_i                       bwd_p_to_bf16, dv_acc
//       dP   = dO_i V_j^T                            dp
//       dS   = P o (dP - delta)                      ds (FP32 P, no softmax scale here)
//       dK_j += BF16(dS)^T Q_i                       ds_to_bf16, dk_acc
//       dQ_i += BF16(dS) K_j                         dq_acc (block product from 0), dq_add
//   dK = BF16(dK*scale), dV = BF16(dV), dQ = BF16(dQ*scale)      grad_scale, grad_to_bf16
//
// The softmax scale enters only at the end (flash_bwd_kernel.h multiplies acc_dk by
// scale_softmax_rp_dropout; flash_bwd_preprocess_kernel.h convert_dQ does the same to the
// summed dQ accumulator). dQ: the kernel used for every head dimension is the seqlen_k-parallel
// one (flash_bwd_launch_template.h, run_flash_bwd -> run_flash_bwd_seqk_parallel): each KV
// block computes its dQ_ij with a cleared accumulator and adds it into an FP32 buffer with
// atomicAdd, so the order of the additions across j is a choice here (dq_order; the kernel's
// deterministic mode adds split buffers in ascending order). The first addition into the
// zeroed buffer is exact and is modelled as a copy (no ledger event).
//
// delta (flash_bwd_preprocess_kernel.h, dot_do_o; kernel_traits.h): O and dO are BF16 in
// memory and converted to FP32; a row is read by kGmemThreadsPerRow = kBlockKSmem / 8 threads
// (kBlockKSmem = 64 when the kernel's head dimension is a multiple of 64, else 32), each loading
// 8 consecutive elements per kBlockKSmem-wide page, so thread t owns the columns c with
// (c / 8) mod lanes = t. Each thread forms its first product and adds the rest in increasing
// column order (dP_sum_cur = do*o; dP_sum_cur += do*o, which nvcc contracts to FFMA), then
// Allreduce (utils.h) combines the lanes with __shfl_xor offsets lanes/2, ..., 1:
// for 8 lanes delta = ((s0+s4)+(s2+s6)) + ((s1+s5)+(s3+s7)). The final multiplication by
// p_dropout is by 1 without dropout and is left out.
//
// Policies: exact = binary64 throughout (equals backward_head up to binary64 reassociation);
// fp32 = FP32 sequential FMA chains for the five products (dV_j, dK_j one chain across query
// blocks), P and dS not rounded, output FP32; fa2 = the tensor-core model of the policy's arch
// for the five products (k-chunks of 16 along the contracted dimension, each chunk's D the next
// one's C), P and dS rounded to BF16 (RNE) as the kernel's convert_type, output BF16; paper =
// the same loops with the paper policy's storage (every tensor BF16, each product an FP32 dot
// rounded to BF16, each update RN16(RN32(acc + part)), delta and P as backward_head computes
// them under paper). Masked entries (causal, or keys past n in a tail block) have P = dS = 0:
// the tensor-core blocks still contain them as zero products; the FMA chains skip them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/backward_authors.hpp"
#include "bf16emu/attention/forward.hpp"

namespace bf16emu::attention {

enum class backward_kind : std::uint8_t {
  reference,       // backward_head: every key of a row at once (the simple reference)
  tiled,           // backward_fa2_head: FlashAttention-2's tiles and rounding points
  authors,         // backward_authors_head: the paper authors' attention.py backward (paper policies);
                   // under paper:autocast run under autocast, as torch.compile traced it (an inference)
  authors_promote, // the same under eager semantics (no autocast), the mixed einsums in FP32
};
enum class block_order : std::uint8_t { ascending, descending };

struct backward_config {
  backward_kind kind = backward_kind::reference;
  // Br x Bc: Flash_bwd_kernel_traits<64, 128, 128, ...> is the hdim-64 backward on GPUs with
  // >= 144 KB of shared memory per block, A100 and H100 (flash_bwd_launch_template.h,
  // run_mha_bwd_hdim64); with less, 64 x 128.
  int block_m = 128;
  int block_n = 128;
  delta_order delta = delta_order::fa2_lanes;
  block_order q_order = block_order::descending; // inner loop over query blocks (the kernel's)
  block_order dq_order = block_order::ascending; // order of the dQ_i += dQ_ij additions over j
};

inline const char *to_string(backward_kind k) {
  switch (k) {
  case backward_kind::tiled: return "tiled";
  case backward_kind::authors: return "authors";
  case backward_kind::authors_promote: return "authors:promote";
  default: return "reference";
  }
}
inline bool is_authors(backward_kind k) {
  return k == backward_kind::authors || k == backward_kind::authors_promote;
}

// The rule between a backward and the policy: nullptr when `k` may run under `p`, else the
// rule (the front ends prefix their own name of the option). The one check, for every front end.
inline const char *backward_policy_error(backward_kind k, const kernel_policy &p) {
  if (is_authors(k) && p.kind != policy_kind::paper)
    return "'authors' and 'authors:promote' model the paper authors' attention.py backward and need policy "
           "paper:autocast or paper:bf16 (alias paper)";
  return nullptr;
}
inline const char *to_string(delta_order o) { return o == delta_order::fa2_lanes ? "fa2" : "sequential"; }
inline const char *to_string(block_order o) {
  return o == block_order::descending ? "descending" : "ascending";
}

namespace bwd_detail {

// One tile of the backward: KV block [j0, j0 + w) against query block [i0, i0 + rows).
struct bwd_tile {
  long j0 = 0, w = 0, i0 = 0, rows = 0;
};

// One head's inputs as the tiled backward reads them (shared, read-only, by every work item of
// the head): the inputs in the policy's format, their BF16 copies, the scales and delta.
struct bwd_prepared {
  long n = 0, d = 0;
  std::vector<double> q, k, v, dout; // inputs in the policy's format
  std::vector<bf16> qb, kb, vb, dob;
  // FP32 copies for the host path's FMA chains (fp32 and paper policies without a ledger): Q, K,
  // dO row-major; K and V transposed, d x n
  std::vector<float> qf, kf, dof, kTf, vTf;
  double scale = 0, c = 0;
  std::vector<double> delta;
  int out_frac_bits = 23;
};

template <class Obs> struct fa2_backward {
  const forward_config &cfg;
  const kernel_policy &pol;
  const backward_config &bc;
  const forward_result &fwd;
  Obs &obs;
  const bool exact, tc, paper, poly;
  const long n, d, br, bcn;
  const f32_ops<Obs> o;
  const tc_model model;
  const bwd_prepared &in;
  const std::vector<double> &q, &k, &v, &dout;
  const std::vector<bf16> &qb, &kb, &vb, &dob;
  const double scale, c;
  backward_result &r;              // dq, dk, dv of the head (each item writes its own rows)
  std::vector<char> dq_started;    // dQ row has had its first (exact) addition
  std::vector<double> dv, dk;      // FP32 accumulators of the KV block, across query blocks
  std::vector<double> P, dS, part; // the tile's P, dS and dQ_ij
  std::vector<char> live;          // the tile's unmasked entries
  std::vector<bf16> Pbf, dSbf;
  // tc: a row's S and dP against the tile's keys; the tile's operands packed as unit-stride
  // columns for tc_dot_cols_at (pack_cols): dO_i, Q_i, P, dS, K_j transposed
  std::vector<double> srow, dprow;
  std::vector<bf16> doT, qT, PT, dST, kT;
  // the host path (hw_f32::fma_cols, fp32 and paper): the chains' FP32 accumulators and the tile's
  // P and dS as floats (made with P and dS wherever the head has FP32 copies, floats())
  std::vector<float> cf, Pf, dSf;
  bool floats() const { return !exact && !tc && !in.qf.empty(); }
  bool fast(site s) const { return floats() && o.fast_chains(s); }
  // cf[0, m) = the FP32 chains of a (stride sa, length len) against m columns of b (row stride
  // sb), from c0 (or 0).
  void chains(const float *a, long sa, const float *b, long sb, long len, long m,
              const double *c0 = nullptr) {
    if (c0)
      cf.assign(c0, c0 + m);
    else
      cf.assign(m, 0.0f);
    hw_f32::fma_cols(a, sa, b, sb, len, m, cf.data());
  }

  fa2_backward(const forward_config &cfg_, const backward_config &bc_, const bwd_prepared &in_,
               const forward_result &fwd_, backward_result &r_, Obs &obs_)
      : cfg(cfg_), pol(cfg_.pol), bc(bc_), fwd(fwd_), obs(obs_), exact(pol.kind == policy_kind::exact),
        tc(pol.kind == policy_kind::fa2), paper(pol.kind == policy_kind::paper),
        poly(pol.exp == exp_impl::poly_exp2), n(in_.n), d(in_.d), br(std::max(1, bc_.block_m)),
        bcn(std::max(1, bc_.block_n)), o{&obs_}, model(tc_for(pol.arch)), in(in_), q(in_.q), k(in_.k),
        v(in_.v), dout(in_.dout), qb(in_.qb), kb(in_.kb), vb(in_.vb), dob(in_.dob), scale(in_.scale),
        c(in_.c), r(r_) {
    dq_started.assign(n, 0);
  }

  // Dot product of rows a, b (length d) in the policy's arithmetic (not tc: row_dots_tc).
  double dot_d(const double *a, const double *b, site s) {
    if (exact) {
      double t = 0;
      for (long x = 0; x < d; ++x)
        t += a[x] * b[x];
      return t;
    }
    double t = 0;
    for (long x = 0; x < d; ++x)
      t = o.fma(a[x], b[x], t, s);
    return paper ? o.to16(t, s) : t;
  }

  // 1 and 3 under tc: S = Q_i K_j^T and dP = dO_i V_j^T of the tile's rows against its keys
  // (srow, dprow: rows x w; K and V rows are unit-stride columns). Without a ledger every row at
  // once against every key of the tile (a causal row's masked entries too, unused); with one, each
  // row against the keys it sees, each site's blocks filed in (row, key) order.
  void tile_dots_tc(const bwd_tile &t) {
    const int w = int(t.w);
    srow.assign(t.rows * t.w, 0.0), dprow.assign(t.rows * t.w, 0.0);
    const long i0 = t.i0, j0 = t.j0;
    if constexpr (!Obs::enabled) {
      tc_dot_rows_at(o, model, int(t.rows), &qb[i0 * d], d, 1, &kb[j0 * d], 1, d, w, int(d), srow.data(), w,
                     site::bwd_qk, false);
      tc_dot_rows_at(o, model, int(t.rows), &dob[i0 * d], d, 1, &vb[j0 * d], 1, d, w, int(d), dprow.data(), w,
                     site::dp, false);
      return;
    }
    for (long rr = 0; rr < t.rows; ++rr) {
      const long row = i0 + rr, m = cfg.causal ? std::clamp(row - j0 + 1, 0L, t.w) : t.w;
      tc_dot_cols_at(o, model, &qb[row * d], 1, &kb[j0 * d], 1, d, int(m), int(d), &srow[rr * w],
                     site::bwd_qk, false);
      tc_dot_cols_at(o, model, &dob[row * d], 1, &vb[j0 * d], 1, d, int(m), int(d), &dprow[rr * w], site::dp,
                     false);
    }
  }

  // 2. Recompute P = exp2(S c - L log2 e) for one entry from s = S; Lc: the row's L*log2(e),
  // formed once per (row, KV block) as scale_apply_exp2 does (lc_done).
  double recompute_p(double s, double L, double &Lc, bool &lc_done) {
    if (exact) return std::exp2(s * c - L * fwd_detail::log2e);
    if (paper) {
      const double ss = o.to16(o.mul(s, scale, site::bwd_exp_arg), site::bwd_exp_arg);
      const double x = o.to16(o.sub(ss, L, site::bwd_exp_arg), site::bwd_exp_arg);
      const double y32 = rn_f32(o, std::exp(x), site::bwd_exp);
      return o.to16(y32, site::bwd_exp, y32 == 1.0);
    }
    if (!lc_done) Lc = o.mul(L, fwd_detail::log2e, site::bwd_exp_arg), lc_done = true;
    return exp2_f32(o, o.fma(s, c, -Lc, site::bwd_exp_arg), poly, site::bwd_exp);
  }

  // 4. dS = P o (dP - delta) for one entry.
  double ds_entry(double p, double dp, long row) {
    if (exact) return p * (dp - in.delta[row]);
    if (paper)
      return o.to16(o.mul(p, o.to16(o.sub(dp, in.delta[row], site::ds), site::ds), site::ds), site::ds);
    return o.mul(p, o.sub(dp, in.delta[row], site::ds), site::ds);
  }

  // 1-4 for the whole tile: P, dP, dS (BF16 copies of P and dS under tc); masked entries stay 0.
  void p_and_ds_tile(const bwd_tile &t) {
    P.assign(t.rows * t.w, 0.0), dS.assign(t.rows * t.w, 0.0), live.assign(t.rows * t.w, 0);
    if (tc) Pbf.assign(t.rows * t.w, bf16{}), dSbf.assign(t.rows * t.w, bf16{});
    if (tc) tile_dots_tc(t);
    const bool fast_s = fast(site::bwd_qk), fast_dp = fast(site::dp);
    if (fast_s || fast_dp) srow.assign(t.rows * t.w, 0.0), dprow.assign(t.rows * t.w, 0.0);
    for (long rr = 0; rr < t.rows; ++rr) {
      const long row = t.i0 + rr;
      const double L = fwd.lse[row];
      double Lc = 0;
      bool lc_done = false;
      // the keys the row sees: all, or (causal) those <= row, a prefix of the tile
      const long m = cfg.causal ? std::clamp(row - t.j0 + 1, 0L, t.w) : t.w;
      // the host path: the row's S and dP as dot_d gives them, every key at once
      if (fast_s) {
        chains(&in.qf[row * d], 1, &in.kTf[t.j0], n, d, m);
        for (long jj = 0; jj < m; ++jj)
          srow[rr * t.w + jj] = paper ? o.to16(cf[jj], site::bwd_qk) : cf[jj];
      }
      if (fast_dp) {
        chains(&in.dof[row * d], 1, &in.vTf[t.j0], n, d, m);
        for (long jj = 0; jj < m; ++jj)
          dprow[rr * t.w + jj] = paper ? o.to16(cf[jj], site::dp) : cf[jj];
      }
      for (long jj = 0; jj < m; ++jj) {
        const long key = t.j0 + jj;
        const long e = rr * t.w + jj;
        live[e] = 1;
        const double p = recompute_p(tc || fast_s ? srow[e] : dot_d(&q[row * d], &k[key * d], site::bwd_qk),
                                     L, Lc, lc_done);
        P[e] = p;
        if (tc) Pbf[e] = as_bf16(o.to16(p, site::bwd_p_to_bf16));
        const double dp = tc || fast_dp ? dprow[e] : dot_d(&dout[row * d], &v[key * d], site::dp);
        const double ds = ds_entry(p, dp, row);
        dS[e] = ds;
        if (tc) dSbf[e] = as_bf16(o.to16(ds, site::ds_to_bf16));
      }
    }
    if (floats()) Pf.assign(P.begin(), P.end()), dSf.assign(dS.begin(), dS.end());
  }

  // 5-6 under tc: for each key jj, dV_j[jj, :] += P[:, jj]^T dO_i and dK_j[jj, :] += dS[:, jj]^T
  // Q_i, the d chains of a key advanced together on the packed columns; each site's blocks are
  // filed in (key, column) order, as the chains element by element.
  void dv_dk_update_tc(const bwd_tile &t) {
    const int w = int(t.w), rows = int(t.rows), dd = int(d);
    pack_cols(&dob[t.i0 * d], d, 1, rows, dd, doT);
    pack_cols(&qb[t.i0 * d], d, 1, rows, dd, qT);
    pack_cols(Pbf.data(), w, 1, rows, w, PT);
    pack_cols(dSbf.data(), w, 1, rows, w, dST);
    tc_dot_rows_at(o, model, w, PT.data(), rows, 1, doT.data(), 1, rows, dd, rows, dv.data(), d, site::dv_acc,
                   true);
    tc_dot_rows_at(o, model, w, dST.data(), rows, 1, qT.data(), 1, rows, dd, rows, dk.data(), d, site::dk_acc,
                   false);
  }

  // 5-6. dV_j += P^T dO_i and dK_j += dS^T Q_i, element by element (dV first).
  void dv_dk_update(const bwd_tile &t) {
    if (tc) {
      dv_dk_update_tc(t);
      return;
    }
    const long w = t.w, i0 = t.i0, rows = t.rows;
    const bool fast_v = fast(site::dv_acc), fast_k = fast(site::dk_acc);
    for (long jj = 0; jj < w; ++jj) {
      // The host path: the key's d chains at once over its live rows, when they are a suffix of
      // the query block (always: a causal row sees the keys up to itself).
      long r0 = 0;
      while (r0 < rows && !live[r0 * w + jj])
        ++r0;
      bool suffix = true;
      for (long rr = r0; rr < rows; ++rr)
        suffix &= live[rr * w + jj] != 0;
      const bool cols_v = fast_v && suffix, cols_k = fast_k && suffix;
      const long e0 = std::min(r0, rows - 1) * w + jj,
                 b0 = (i0 + std::min(r0, rows - 1)) * d; // (no live row: length 0)
      // acc (d values) += the chains of g's column jj over the live rows against their rows of x
      auto update = [&](const std::vector<float> &g, const std::vector<float> &x, double *acc, site st) {
        chains(&g[e0], w, &x[b0], d, rows - r0, d, paper ? nullptr : acc);
        for (long c = 0; c < d; ++c)
          acc[c] = paper ? o.to16(o.add(acc[c], o.to16(cf[c], st), st), st) : cf[c];
      };
      if (cols_v) update(Pf, in.dof, &dv[jj * d], site::dv_acc);
      if (cols_k) update(dSf, in.qf, &dk[jj * d], site::dk_acc);
      if (cols_v && cols_k) continue;
      for (long x = 0; x < d; ++x) {
        double &av = dv[jj * d + x], &ak = dk[jj * d + x];
        if (exact) {
          for (long rr = 0; rr < rows; ++rr)
            if (live[rr * w + jj]) {
              av += P[rr * w + jj] * dout[(i0 + rr) * d + x];
              ak += dS[rr * w + jj] * q[(i0 + rr) * d + x];
            }
        } else {
          // fp32: one FMA chain across all query blocks; paper: the block's FP32 dot in BF16,
          // then a BF16 update
          double pv = paper ? 0.0 : av, pk = paper ? 0.0 : ak;
          for (long rr = 0; rr < rows; ++rr) {
            const long e = rr * w + jj;
            if (!live[e]) continue;
            if (!cols_v) pv = o.fma(P[e], dout[(i0 + rr) * d + x], pv, site::dv_acc, P[e] == 1.0);
            if (!cols_k) pk = o.fma(dS[e], q[(i0 + rr) * d + x], pk, site::dk_acc);
          }
          if (paper) {
            if (!cols_v) av = o.to16(o.add(av, o.to16(pv, site::dv_acc), site::dv_acc), site::dv_acc);
            if (!cols_k) ak = o.to16(o.add(ak, o.to16(pk, site::dk_acc), site::dk_acc), site::dk_acc);
          } else {
            if (!cols_v) av = pv;
            if (!cols_k) ak = pk;
          }
        }
      }
    }
  }

  // 7. dQ_ij = dS K_j (a cleared accumulator per KV block); tc: the d chains of a row advanced
  // together on K_j's packed columns, the blocks filed in (row, column) order.
  void dq_block(const bwd_tile &t) {
    const long w = t.w, j0 = t.j0;
    part.assign(t.rows * d, 0.0);
    if (tc) {
      pack_cols(&kb[j0 * d], d, 1, int(w), int(d), kT);
      tc_dot_rows_at(o, model, int(t.rows), dSbf.data(), w, 1, kT.data(), 1, w, int(d), int(w), part.data(),
                     d, site::dq_acc, false);
      return;
    }
    const bool fast_q = fast(site::dq_acc);
    for (long rr = 0; rr < t.rows; ++rr) {
      // The host path: the row's d chains at once over its live keys, a prefix of the tile
      long m = 0;
      while (m < w && live[rr * w + m])
        ++m;
      bool prefix = fast_q;
      for (long jj = m; prefix && jj < w; ++jj)
        prefix = !live[rr * w + jj];
      if (prefix) {
        chains(&dSf[rr * w], 1, &in.kf[j0 * d], d, m, d);
        for (long x = 0; x < d; ++x)
          part[rr * d + x] = paper ? o.to16(cf[x], site::dq_acc) : cf[x];
        continue;
      }
      for (long x = 0; x < d; ++x) {
        double s = 0;
        for (long jj = 0; jj < w; ++jj) {
          const long e = rr * w + jj;
          if (!live[e]) continue;
          s = exact ? s + dS[e] * k[(j0 + jj) * d + x] : o.fma(dS[e], k[(j0 + jj) * d + x], s, site::dq_acc);
        }
        if (paper) s = o.to16(s, site::dq_acc);
        part[rr * d + x] = s;
      }
    }
  }

  // 8. dQ_i += dQ_ij (the atomicAdd into the FP32 dQ buffer; the first addition is a copy).
  void dq_add(const bwd_tile &t) {
    for (long rr = 0; rr < t.rows; ++rr) {
      const long row = t.i0 + rr;
      for (long x = 0; x < d; ++x) {
        double &a = r.dq[row * d + x];
        const double s = part[rr * d + x];
        if (!dq_started[row])
          a = s;
        else if (exact)
          a += s;
        else
          a = paper ? o.to16(o.add(a, s, site::dq_add), site::dq_add) : o.add(a, s, site::dq_add);
      }
      dq_started[row] = 1;
    }
  }

  // One KV block: clear dK_j, dV_j; every query block that sees it (q_order); write dK_j, dV_j.
  // Without with_dq, dQ is left to q_pass (the split backward's pass A).
  void kv_block(long jblk, bool with_dq = true) {
    const long j0 = jblk * bcn, w = std::min(n, j0 + bcn) - j0;
    const long nq = (n + br - 1) / br;
    dv.assign(w * d, 0.0), dk.assign(w * d, 0.0);
    const long i_min = cfg.causal ? j0 / br : 0; // first query block with a row that sees key j0
    for (long ib = 0; ib < nq - i_min; ++ib) {
      const long iblk = bc.q_order == block_order::descending ? nq - 1 - ib : i_min + ib;
      const bwd_tile t{j0, w, iblk * br, std::min(n, iblk * br + br) - iblk * br};
      p_and_ds_tile(t);
      dv_dk_update(t);
      if (!with_dq) continue;
      dq_block(t);
      dq_add(t);
    }
    write_dk_dv(j0, w);
  }

  // The KV blocks in processing order (dq_order): the i-th is kv_order(i).
  long kv_count() const { return (n + bcn - 1) / bcn; }
  long kv_order(long i) const { return bc.dq_order == block_order::ascending ? i : kv_count() - 1 - i; }

  // Pass B of the split backward: the dQ rows of query block iblk, dQ_i = the dQ_ij of the KV
  // blocks that it sees, added in dq_order, then written. `quiet` (the same computation with
  // a null observer) recomputes the tiles, whose roundings pass A (kv_block) has filed.
  template <class Quiet> void q_pass(long iblk, Quiet &quiet) {
    const long i0 = iblk * br, rows = std::min(n, i0 + br) - i0;
    for (long jb = 0; jb < kv_count(); ++jb) {
      const long j0 = kv_order(jb) * bcn, w = std::min(n, j0 + bcn) - j0;
      if (cfg.causal && iblk < j0 / br) continue; // no row of the block sees key j0
      const bwd_tile t{j0, w, i0, rows};
      quiet.p_and_ds_tile(t);
      dS.swap(quiet.dS), dSbf.swap(quiet.dSbf), dSf.swap(quiet.dSf), live.swap(quiet.live);
      dq_block(t);
      dq_add(t);
    }
    write_dq(i0 * d, (i0 + rows) * d);
  }

  // 9. dK_j, dV_j: scale, output format.
  void write_dk_dv(long j0, long w) {
    for (long e = 0; e < w * d; ++e) {
      double gk = exact ? dk[e] * scale : o.mul(dk[e], scale, site::grad_scale);
      double gv = dv[e];
      if (paper) gk = o.to16(gk, site::grad_scale);
      if (tc) gk = o.to16(gk, site::grad_to_bf16), gv = o.to16(gv, site::grad_to_bf16);
      r.dk[j0 * d + e] = gk, r.dv[j0 * d + e] = gv;
    }
  }

  // 10. dQ (elements [e0, e1); all by default): scale, output format (convert_dQ).
  void write_dq(long e0 = 0, long e1 = -1) {
    for (long e = e0; e < (e1 < 0 ? n * d : e1); ++e) {
      double &a = r.dq[e];
      double g = exact ? a * scale : o.mul(a, scale, site::grad_scale);
      if (paper) g = o.to16(g, site::grad_scale);
      if (tc) g = o.to16(g, site::grad_to_bf16);
      a = g;
    }
  }
};

// Inputs in the policy's format (their roundings filed under site::input), the scales and
// 0. delta = rowsum(dO o O) (the preprocessing kernel), for one head.
template <class Obs>
bwd_prepared prepare_bwd(const forward_config &cfg, const backward_config &bc, const head_view &h,
                         const double *dout_in, const forward_result &fwd, Obs &obs) {
  const kernel_policy &pol = cfg.pol;
  const bool exact = pol.kind == policy_kind::exact, tc = pol.kind == policy_kind::fa2,
             paper = pol.kind == policy_kind::paper;
  const f32_ops<Obs> o{&obs};
  const long n = h.n, d = h.d;
  bwd_prepared p;
  p.n = n, p.d = d;
  const bool bf16_in = tc || paper;
  auto in = [&](double x) { return exact ? x : bf16_in ? o.to16(x, site::input) : o.to32(x, site::input); };
  p.q.resize(n * d), p.k.resize(n * d), p.v.resize(n * d), p.dout.resize(n * d);
  for (long e = 0; e < n * d; ++e)
    p.q[e] = in(h.q[e]), p.k[e] = in(h.k[e]), p.v[e] = in(h.v[e]), p.dout[e] = in(dout_in[e]);
  if (tc) {
    p.qb.resize(n * d), p.kb.resize(n * d), p.vb.resize(n * d), p.dob.resize(n * d);
    for (long e = 0; e < n * d; ++e)
      p.qb[e] = as_bf16(p.q[e]), p.kb[e] = as_bf16(p.k[e]), p.vb[e] = as_bf16(p.v[e]),
      p.dob[e] = as_bf16(p.dout[e]);
  }
  if (!Obs::enabled && !exact && !tc) {
    p.qf.assign(p.q.begin(), p.q.end()), p.kf.assign(p.k.begin(), p.k.end());
    p.dof.assign(p.dout.begin(), p.dout.end());
    pack_cols(p.k.data(), d, 1, n, d, p.kTf), pack_cols(p.v.data(), d, 1, n, d, p.vTf);
  }
  p.scale = softmax_scale(pol, d);
  p.c = exact ? p.scale * fwd_detail::log2e : double(float(p.scale * fwd_detail::log2e));
  p.out_frac_bits = exact ? 52 : (tc || paper) ? 7 : 23;
  p.delta.assign(n, 0.0);
  for (long row = 0; row < n; ++row)
    p.delta[row] =
        delta_row(o, exact, paper, pol.fma_contract, bc.delta, &p.dout[row * d], &fwd.o[row * d], d);
  return p;
}

// The result of a head sized, delta copied, before its work items write their rows.
inline void bwd_begin(const bwd_prepared &in, backward_result &r) {
  r.out_frac_bits = in.out_frac_bits;
  r.delta = in.delta;
  r.dq.assign(in.n * in.d, 0.0), r.dk.assign(in.n * in.d, 0.0), r.dv.assign(in.n * in.d, 0.0);
}

} // namespace bwd_detail

template <class Obs>
backward_result backward_fa2_head(const forward_config &cfg, const backward_config &bc, const head_view &h,
                                  const double *dout_in, const forward_result &fwd, Obs &obs) {
  const bwd_detail::bwd_prepared in = bwd_detail::prepare_bwd(cfg, bc, h, dout_in, fwd, obs);
  backward_result r;
  bwd_detail::bwd_begin(in, r);
  bwd_detail::fa2_backward<Obs> b(cfg, bc, in, fwd, r, obs);
  for (long jb = 0; jb < b.kv_count(); ++jb)
    b.kv_block(b.kv_order(jb));
  b.write_dq();
  return r;
}

// The tiled backward split into work items, for running one head on several threads
// (run.hpp): prepare the head (bwd_detail::prepare_bwd: input roundings and delta) and size
// its result (bwd_begin); then pass A, one item per KV block i in [0, bwd_kv_items) (dK_j, dV_j,
// and every tile's roundings); then pass B, one item per query block in [0, bwd_q_items) (dQ:
// the tiles recomputed without filing them again, the dQ_ij and their additions in dq_order,
// dQ written). Items of one pass write disjoint rows. Bits of dQ, dK, dV equal
// backward_fa2_head's; the ledger has the same events, grouped by item.
inline long bwd_kv_items(const backward_config &bc, long n) {
  const long b = std::max(1, bc.block_n);
  return (n + b - 1) / b;
}
inline long bwd_q_items(const backward_config &bc, long n) {
  const long b = std::max(1, bc.block_m);
  return (n + b - 1) / b;
}

template <class Obs>
void bwd_kv_item(const forward_config &cfg, const backward_config &bc, const bwd_detail::bwd_prepared &in,
                 const forward_result &fwd, backward_result &r, long i, Obs &obs) {
  bwd_detail::fa2_backward<Obs> b(cfg, bc, in, fwd, r, obs);
  b.kv_block(b.kv_order(i), false);
}

template <class Obs>
void bwd_q_item(const forward_config &cfg, const backward_config &bc, const bwd_detail::bwd_prepared &in,
                const forward_result &fwd, backward_result &r, long i, Obs &obs) {
  bwd_detail::fa2_backward<Obs> b(cfg, bc, in, fwd, r, obs);
  null_observer none;
  bwd_detail::fa2_backward<null_observer> quiet(cfg, bc, in, fwd, r, none);
  b.q_pass(i, quiet);
}

// The backward chosen by `bc.kind`.
template <class Obs>
backward_result backward_any(const forward_config &cfg, const backward_config &bc, const head_view &h,
                             const double *dout, const forward_result &fwd, Obs &obs) {
  if (bc.kind == backward_kind::tiled) return backward_fa2_head(cfg, bc, h, dout, fwd, obs);
  if (is_authors(bc.kind))
    return backward_authors_head(cfg, h, dout, fwd, obs, bc.kind == backward_kind::authors_promote);
  return backward_head(cfg, h, dout, fwd, obs);
}

} // namespace bf16emu::attention
