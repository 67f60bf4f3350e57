// bf16emu attention: the one place where attention calls the tensor-core model.
//
// tc_dot(model, a, b, c, k): D = sum_k a[k]*b[k] + c on the chosen generation, as the MMA
// chain of tc::dot (instructions of k products in increasing k, blocks of L inside, each
// block's FP32 result the next block's c, a partial instruction padded with zero products).
// With a ledger, each block is filed under one site with error = d - exact block value
// (binary64, from the model's block summary: trunc_err - sum of the alignment losses, the
// model's fast path computing both).
#pragma once

#include <cstddef>
#include <vector>

#include "bf16emu/attention/arith.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"
#include "bf16emu/tc.hpp"

namespace bf16emu::attention {

struct tc_model {
  tc::block_params block;
  int inst_k = 16; // products per mma instruction (bf16 m16n8k16)
  bool valid = false;
};

// The tensor-core model's preset for BF16 inputs and FP32 accumulation on `a`
// (include/bf16emu/tc/presets.hpp). sm70 and sm75 have no BF16 tensor cores: valid = false.
inline tc_model tc_for(tc::arch a) {
  tc_model m;
  const tc::preset *p = tc::bf16_preset(a);
  if (p) m.block = p->block, m.inst_k = p->k, m.valid = true;
  return m;
}

// Called after each block with (index one past the block's last real product, D so far).
struct no_block_step {
  static constexpr bool enabled = false;
  void operator()(int, f32) const {}
};

// Wraps a callable (int k_end, f32 d) as an enabled block step.
template <class Fn> struct block_step {
  static constexpr bool enabled = true;
  Fn fn;
  void operator()(int k_end, f32 d) { fn(k_end, d); }
};

// The summary tracer that files each block of a tc_dot under `s` (and hands it to an enabled
// step); track_p1 tags a block as a P-bar = 1 event when one of its a[i] is 1.
template <class Obs, class Step>
auto ledger_tracer(Obs &obs, const bf16 *a, std::ptrdiff_t sa, site s, bool track_p1, Step &step) {
  return tc::make_block_summary_tracer([&obs, a, sa, s, track_p1, &step](const tc::block_summary &t) {
    (void)obs, (void)a, (void)sa, (void)s, (void)track_p1, (void)step; // used or not per Obs and Step
    if constexpr (Obs::enabled) {
      if (!t.special) {
        bool p1 = false;
        if (track_p1)
          for (int i = 0; i < t.n_real; ++i)
            p1 |= a[(t.k0 + i) * sa].bits == 0x3f80;
        const double err = t.trunc_err - t.lost;
        const double d = double(to_float(f32::from_bits(t.d_bits)));
        obs.record(s, err, false, p1, (t.d_bits >> 31) != 0, std::fabs(d - err));
      }
    }
    if constexpr (Step::enabled)
      if (t.n_real > 0) step(t.k0 + t.n_real, f32::from_bits(t.d_bits));
  });
}

// D = sum a[k*sa]*b[k*sb] + c on the model (tc::dot). With an enabled observer each block
// is filed under `s`; track_p1 tags a block as a P-bar = 1 event when one of its a[i] is 1.
template <class Obs, class Step = no_block_step>
f32 tc_dot(const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b, std::ptrdiff_t sb, int k,
           f32 c, Obs &obs, site s, bool track_p1, Step step = Step{}) {
  if constexpr (Obs::enabled || Step::enabled) {
    auto tr = ledger_tracer(obs, a, sa, s, track_p1, step);
    return tc::dot<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, k, c, tr);
  } else {
    return tc::dot<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, k, c);
  }
}

// tc_dot for ncols columns sharing a: c[j] = tc_dot(m, a, sa, b + j*bcol, sb, k, c[j], ...) for
// j < ncols, the blocks filed in the same order (column 0's, then column 1's, ...); the model
// advances the columns together (tc::dot_cols), which is faster.
template <class Obs>
void tc_dot_cols(const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b, std::ptrdiff_t sb,
                 std::ptrdiff_t bcol, int ncols, int k, f32 *c, Obs &obs, site s, bool track_p1) {
  if constexpr (Obs::enabled) {
    no_block_step step;
    auto tr = ledger_tracer(obs, a, sa, s, track_p1, step);
    tc::dot_cols<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, bcol, ncols, k, c, tr);
  } else {
    tc::dot_cols<bfloat16, binary32>(m.block, m.inst_k, a, sa, b, sb, bcol, ncols, k, c);
  }
}

// Packs ncols strided chains of length k into dst as unit-stride columns: dst[j*k + i] =
// src[i*sk + j*scol] for i < k, j < ncols (data movement only: the operands' bits unchanged),
// so that e.g. tc_dot_cols(m, a, 1, dst.data(), 1, k, ncols, k, ...) equals the strided chains'
// tc_dot(m, a, 1, src + j*scol, sk, k, ...) and runs on the model's unit-stride column kernel.
// dst is resized (its capacity reused). dst may hold another type (FP32 values held in doubles
// packed as floats: the same values).
template <class S, class T>
void pack_cols(const S *src, std::ptrdiff_t sk, std::ptrdiff_t scol, long k, long ncols,
               std::vector<T> &dst) {
  dst.resize(std::size_t(k) * std::size_t(ncols));
  for (long j = 0; j < ncols; ++j)
    for (long i = 0; i < k; ++i)
      dst[std::size_t(j) * std::size_t(k) + std::size_t(i)] = T(src[i * sk + j * scol]);
}

// tc_dot under the site precision override of `o` (policy.hpp): at a site promoted to exact,
// the binary64 sum c + a[0]*b[0] + ... in increasing k (as the exact policy), nothing filed
// and no block steps; otherwise tc_dot (a promotion to fp32 leaves the model's blocks as they
// are: they round to FP32 already). The operands are BF16 either way: a caller whose operands
// a promoted site left in FP32 or binary64 uses FP32 (f32_ops::fma) dot products instead.
template <class Obs, class Step = no_block_step>
double tc_dot_at(const f32_ops<Obs> &o, const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b,
                 std::ptrdiff_t sb, int k, double c, site s, bool track_p1, Step step = Step{}) {
  if (o.exact_at(s)) {
    for (int i = 0; i < k; ++i)
      c += of(a[i * sa]) * of(b[i * sb]);
    return c;
  }
  return of(tc_dot(m, a, sa, b, sb, k, as_f32(c), *o.obs, s, track_p1, step));
}

// tc_dot_at for ncols columns sharing a: c[j] = tc_dot_at(o, m, a, sa, b + j*bcol, sb, k, c[j],
// s, track_p1) for j < ncols (no block steps), the same bits and ledger (tc_dot_cols).
template <class Obs>
void tc_dot_cols_at(const f32_ops<Obs> &o, const tc_model &m, const bf16 *a, std::ptrdiff_t sa, const bf16 *b,
                    std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int k, double *c, site s,
                    bool track_p1) {
  if (o.exact_at(s)) {
    for (int j = 0; j < ncols; ++j)
      c[j] = tc_dot_at(o, m, a, sa, b + j * bcol, sb, k, c[j], s, track_p1);
    return;
  }
  constexpr int chunk = 64;
  f32 cf[chunk];
  for (int j0 = 0; j0 < ncols; j0 += chunk) {
    const int nc = ncols - j0 < chunk ? ncols - j0 : chunk;
    for (int j = 0; j < nc; ++j)
      cf[j] = as_f32(c[j0 + j]);
    tc_dot_cols(m, a, sa, b + j0 * bcol, sb, bcol, nc, k, cf, *o.obs, s, track_p1);
    for (int j = 0; j < nc; ++j)
      c[j0 + j] = of(cf[j]);
  }
}

// tc_dot_cols_at for rows x ncols products sharing b: row i's a at a + i*lda, its accumulators
// at c + i*ldc. Without a ledger, outside a site promoted to exact, the model takes them all at
// once (tc::dot_rows: the lane-parallel kernel where one is installed, tc/lanes.hpp); otherwise
// row by row, as rows calls of tc_dot_cols_at (each site's blocks filed in row order). The same
// bits either way.
template <class Obs>
void tc_dot_rows_at(const f32_ops<Obs> &o, const tc_model &m, int rows, const bf16 *a, std::ptrdiff_t lda,
                    std::ptrdiff_t sa, const bf16 *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols,
                    int k, double *c, std::ptrdiff_t ldc, site s, bool track_p1) {
  if constexpr (!Obs::enabled) {
    if (!o.exact_at(s) && rows > 0 && ncols > 0) {
      std::vector<f32> cf(std::size_t(rows) * std::size_t(ncols));
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < ncols; ++j)
          cf[std::size_t(i) * ncols + j] = as_f32(c[i * ldc + j]);
      tc::dot_rows<bfloat16, binary32>(m.block, m.inst_k, rows, a, lda, sa, b, sb, bcol, ncols, k, cf.data(),
                                       ncols);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < ncols; ++j)
          c[i * ldc + j] = of(cf[std::size_t(i) * ncols + j]);
      return;
    }
  }
  for (int i = 0; i < rows; ++i)
    tc_dot_cols_at(o, m, a + i * lda, sa, b, sb, bcol, ncols, k, c + i * ldc, s, track_p1);
}

} // namespace bf16emu::attention
