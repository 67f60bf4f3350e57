// bf16emu tensor-core model: dot products, whole instructions and GEMM as a kernel issues them.
//
// k order: K is cut into chunks of the instruction's k (the last chunk zero-padded, as a kernel
// pads a partial tile); chunks run in increasing k, each chunk's D feeding the next chunk's C;
// inside a chunk the hardware's blocks of L products run in increasing k, each block's result
// being the next block's c. Since k is a multiple of L this is one chain of blocks of L over
// the padded K. K = 0 issues no instruction: D = C.
//
// Mixed formats: B may have its own format (InB, deduced from the B pointer: fp8 e4m3 x e5m2),
// and C its own (InC, deduced from the C pointer: the m8n8k4 f16/f32 mixes). C enters as the D
// format (c_as_out), as MMA-Sim does (mmasim/simulator/nv_ptx.py converts C to the D type
// before the fused sum): exactly for f16 -> f32; f32 -> f16 rounds to nearest even (an open
// choice, docs/tensor-cores.md). f64 (accum_kind::fma_chain): fma_chain_dot. fp8 mma.sync on
// sm90/sm100 (accum_kind::two_block_add): two_block_add_dot.
#pragma once

#include <cstddef>
#include <type_traits>

#include "bf16emu/core/arith.hpp"
#include "bf16emu/tc/block.hpp"
#include "bf16emu/tc/lanes.hpp"
#include "bf16emu/tc/presets.hpp"

namespace bf16emu::tc {

// C in its own format as the D format the accumulation runs in (the identity when they agree).
template <class Out, class InC> BF16EMU_CXHD fp<Out> c_as_out(fp<InC> c) noexcept {
  if constexpr (std::is_same_v<Out, InC>)
    return c;
  else
    return convert<Out>(c).value; // round to nearest even; exact when Out is the wider format
}

// Chain of blocks over K products a[k*sa]*b[k*sb], padded to a multiple of instr_k.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> dot(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                         const fp<InB> *b, std::ptrdiff_t sb, int K, fp<Out> c, Tracer &tracer) noexcept {
  return chain_fdpa<In, Out>(p, instr_k, a, sa, b, sb, K, c, tracer); // block.hpp
}

template <class In, class Out, class InB = In>
BF16EMU_CXHD fp<Out> dot(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                         const fp<InB> *b, std::ptrdiff_t sb, int K, fp<Out> c) noexcept {
  no_block_trace t;
  return dot<In, Out>(p, instr_k, a, sa, b, sb, K, c, t);
}

// ncols dot products sharing a: c[j] = dot(p, instr_k, a, sa, b + j*bcol, sb, K, c[j]) for
// j < ncols (c: in the accumulators, out the results), the tracer seeing the blocks of column 0,
// then column 1, ...: the bits of ncols calls of dot, faster (the columns' chains of blocks
// advance together, chain_fdpa_cols in block.hpp).
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD void dot_cols(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                           const fp<InB> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K,
                           fp<Out> *c, Tracer &tracer) noexcept {
  chain_fdpa_cols<In, Out>(p, instr_k, a, sa, b, sb, bcol, ncols, K, c, tracer);
}

template <class In, class Out, class InB = In>
BF16EMU_CXHD void dot_cols(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                           const fp<InB> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K,
                           fp<Out> *c) noexcept {
  no_block_trace t;
  dot_cols<In, Out>(p, instr_k, a, sa, b, sb, bcol, ncols, K, c, t);
}

// rows x ncols dot products: c[i*ldc + j] = dot(p, instr_k, a + i*lda, sa, b + j*bcol, sb, K,
// c[i*ldc + j]) for i < rows, j < ncols: the bits of rows calls of dot_cols. An installed
// lane-parallel kernel (lanes.hpp: one output element per SIMD lane) takes them where it covers
// the formats and parameters; otherwise (or in device code) row by row.
template <class In, class Out, class InB = In>
BF16EMU_HD inline void dot_rows(const block_params &p, int instr_k, int rows, const fp<In> *a,
                                std::ptrdiff_t lda, std::ptrdiff_t sa, const fp<InB> *b, std::ptrdiff_t sb,
                                std::ptrdiff_t bcol, int ncols, int K, fp<Out> *c,
                                std::ptrdiff_t ldc) noexcept {
#if !defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<In, InB>)
    if (rows > 0 && ncols > 0 && K > 0 &&
        lanes_try<In, Out>(p, instr_k, rows, a, lda, sa, b, sb, bcol, ncols, K, c, ldc))
      return;
#endif
  for (int i = 0; i < rows; ++i)
    dot_cols<In, Out>(p, instr_k, a + i * lda, sa, b, sb, bcol, ncols, K, c + i * ldc);
}

// The f64 DMMA accumulation (accum_kind::fma_chain): d = c, then d = fma(a_k, b_k, d) for k in
// increasing order over K padded with zero products to a multiple of instr_k, each fma one IEEE
// rounding to nearest even; a NaN result is the all-ones NaN (open). K = 0: c. A zero product
// padding the tile still runs: (-0) + (+0*+0) gives +0, as IEEE says. The core's arithmetic
// covers formats of up to 24 significant bits, so binary64 uses the compiler's correctly rounded
// fma (the host's, or the device's), the host status saved and restored around the chain;
// narrower formats use the core's fma_to.
template <class In, class Out, class InB = In>
BF16EMU_HD inline fp<Out> fma_chain_dot(int instr_k, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                        std::ptrdiff_t sb, int K, fp<Out> c) noexcept {
  if (K <= 0) return c;
  if (instr_k < 1) instr_k = 1;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  if constexpr (std::is_same_v<In, binary64> && std::is_same_v<InB, binary64> &&
                std::is_same_v<Out, binary64>) {
    detail::fast_status st;
    double d = bf16emu::detail::bit_cast<double>(c.bits);
    for (int k = 0; k < K; ++k) {
      const double x = bf16emu::detail::bit_cast<double>(a[k * sa].bits);
      const double y = bf16emu::detail::bit_cast<double>(b[k * sb].bits);
#ifdef __CUDA_ARCH__
      d = ::fma(x, y, d);
#else
      d = __builtin_fma(x, y, d);
#endif
    }
    for (int k = K; k < padded; ++k)
      d = d + 0.0; // fma(+0, +0, d): only a -0 changes (to +0)
    c = fp<Out>::from_bits(bf16emu::detail::fp_fence(bf16emu::detail::bit_cast<std::uint64_t>(d)));
  } else {
    static_assert(In::precision <= 24 && InB::precision <= 24 && Out::precision <= 24,
                  "fma_chain_dot: binary64 throughout, or formats the core's fma covers");
    for (int k = 0; k < padded; ++k) {
      const fp<In> x = k < K ? a[k * sa] : fp<In>::from_bits(0);
      const fp<InB> y = k < K ? b[k * sb] : fp<InB>::from_bits(0);
      c = fma_to<Out>(x, y, c).value;
    }
  }
  if (c.is_nan()) c = fp<Out>::from_bits(detail::nan_bits<Out>());
  return c;
}

// fp8 mma.sync on sm90 and sm100 (accum_kind::two_block_add, presets.hpp): per instruction of
// instr_k products (K padded with zero products to a multiple of instr_k), the products whose
// index within the instruction has (index mod 4) < 2 form the first block, with c = +0; those
// with (index mod 4) >= 2 the second block, its c the first block's result; both in increasing
// k, with block parameters p. The instruction's C (the previous instruction's D, or c) is then
// added by one IEEE addition in the D format, rounded to nearest even; a NaN result is the
// all-ones NaN. The tracer sees the two blocks of each instruction. instr_k is at most 64.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_HD inline fp<Out> two_block_add_dot(const block_params &p, int instr_k, const fp<In> *a,
                                            std::ptrdiff_t sa, const fp<InB> *b, std::ptrdiff_t sb, int K,
                                            fp<Out> c, Tracer &tracer) noexcept {
  if (K <= 0) return c;
  if (instr_k < 4) instr_k = 4;
  if (instr_k > 64) instr_k = 64;
  const int half = instr_k / 2;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  int block_index = 0;
  for (int k0 = 0; k0 < padded; k0 += instr_k) {
    fp<Out> t = fp<Out>::from_bits(0);
    for (int g = 0; g < 2; ++g) { // g 0: index mod 4 in {0, 1}; g 1: in {2, 3}
      fp<In> ga[32];
      fp<InB> gb[32];
      int n = 0;
      for (int i = 0; i < instr_k; ++i) {
        if (((i >> 1) & 1) != g) continue;
        const int k = k0 + i;
        ga[n] = k < K ? a[k * sa] : fp<In>::from_bits(0);
        gb[n] = k < K ? b[k * sb] : fp<InB>::from_bits(0);
        ++n;
      }
      for (int j = 0; j<half; j += p.L> 0 ? p.L : half) // blocks of L over the group (L = half: one)
        t = block_fdpa<In, Out>(p, ga + j, 1, gb + j, 1, half - j < p.L ? half - j : p.L, t, tracer,
                                block_index++, k0);
    }
    c = add(t, c).value;
    if (c.is_nan()) c = fp<Out>::from_bits(detail::nan_bits<Out>());
  }
  return c;
}

// One output element as preset P computes it: its accumulation (fused blocks, an fma chain, or
// two blocks and an add), K products chained in increasing k, C in its own format (InC). The
// tracer sees the blocks only (an fma chain has none).
template <class In, class Out, class Tracer, class InB = In, class InC = Out>
BF16EMU_HD inline fp<Out> preset_dot(const preset &P, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                     std::ptrdiff_t sb, int K, fp<InC> c, Tracer &tracer) noexcept {
  if constexpr (In::precision + InB::precision + 2 > 62) { // f64: only the fma chain
    return fma_chain_dot<In, Out>(P.k, a, sa, b, sb, K, c_as_out<Out>(c));
  } else {
    if (P.accum == accum_kind::fma_chain)
      return fma_chain_dot<In, Out>(P.k, a, sa, b, sb, K, c_as_out<Out>(c));
    if (P.accum == accum_kind::two_block_add)
      return two_block_add_dot<In, Out>(P.block, P.k, a, sa, b, sb, K, c_as_out<Out>(c), tracer);
    return dot<In, Out>(P.block, P.k, a, sa, b, sb, K, c_as_out<Out>(c), tracer);
  }
}

template <class In, class Out, class InB = In, class InC = Out>
BF16EMU_HD inline fp<Out> preset_dot(const preset &P, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                     std::ptrdiff_t sb, int K, fp<InC> c) noexcept {
  no_block_trace t;
  return preset_dot<In, Out>(P, a, sa, b, sb, K, c, t);
}

// GEMM reference: D[i][j] = dot(row i of A, column j of B, K, C[i][j]) for an M x N x K problem,
// row-major A (M x K, lda), B (K x N, ldb), C and D (M x N, ldc, ldd; D may be C, with ldd = ldc),
// a row of D at a time (dot_cols).
// The tracer sees the blocks of D[0][0], D[0][1], ... in row-major order.
template <class In, class Out, class Tracer, class InB = In, class InC = Out>
BF16EMU_CXHD void gemm(const block_params &p, int instr_k, int M, int N, int K, const fp<In> *A,
                       std::ptrdiff_t lda, const fp<InB> *B, std::ptrdiff_t ldb, const fp<InC> *C,
                       std::ptrdiff_t ldc, fp<Out> *D, std::ptrdiff_t ldd, Tracer &tracer) noexcept {
  if constexpr (!Tracer::enabled) {
    if (!__builtin_is_constant_evaluated()) { // all rows at once (dot_rows: the lane kernel)
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
          D[i * ldd + j] = c_as_out<Out>(C[i * ldc + j]); // (D may be C)
      dot_rows<In, Out>(p, instr_k, M, A, lda, 1, B, ldb, 1, N, K, D, ldd);
      return;
    }
  }
  for (int i = 0; i < M; ++i) { // one row of D at a time: its columns' chains together
    for (int j = 0; j < N; ++j)
      D[i * ldd + j] = c_as_out<Out>(C[i * ldc + j]); // (D may be C)
    dot_cols<In, Out>(p, instr_k, A + i * lda, 1, B, ldb, 1, N, K, D + i * ldd, tracer);
  }
}

template <class In, class Out, class InB = In, class InC = Out>
BF16EMU_CXHD void gemm(const block_params &p, int instr_k, int M, int N, int K, const fp<In> *A,
                       std::ptrdiff_t lda, const fp<InB> *B, std::ptrdiff_t ldb, const fp<InC> *C,
                       std::ptrdiff_t ldc, fp<Out> *D, std::ptrdiff_t ldd) noexcept {
  no_block_trace t;
  gemm<In, Out>(p, instr_k, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, t);
}

// The same with a preset (its accumulation, block parameters and instruction k).
template <class In, class Out, class Tracer, class InB = In, class InC = Out>
BF16EMU_CXHD void gemm(const preset &P, int M, int N, int K, const fp<In> *A, std::ptrdiff_t lda,
                       const fp<InB> *B, std::ptrdiff_t ldb, const fp<InC> *C, std::ptrdiff_t ldc, fp<Out> *D,
                       std::ptrdiff_t ldd, Tracer &tracer) noexcept {
  if constexpr (In::precision + InB::precision + 2 <= 62) {
    if (P.accum == accum_kind::fused)
      return gemm<In, Out>(P.block, P.k, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, tracer);
  }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      D[i * ldd + j] = preset_dot<In, Out>(P, A + i * lda, 1, B + j, ldb, K, C[i * ldc + j], tracer);
}

template <class In, class Out, class InB = In, class InC = Out>
BF16EMU_CXHD void gemm(const preset &P, int M, int N, int K, const fp<In> *A, std::ptrdiff_t lda,
                       const fp<InB> *B, std::ptrdiff_t ldb, const fp<InC> *C, std::ptrdiff_t ldc, fp<Out> *D,
                       std::ptrdiff_t ldd) noexcept {
  no_block_trace t;
  gemm<In, Out>(P, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, t);
}

// One instruction: D = A*B + C on the preset's m x n x k tile, dense row-major operands
// (A m x k, B k x n, C and D m x n), blocks in hardware order.
template <class In, class Out, class Tracer, class InB = In, class InC = Out>
BF16EMU_CXHD void mma(const preset &P, const fp<In> *A, const fp<InB> *B, const fp<InC> *C, fp<Out> *D,
                      Tracer &tracer) noexcept {
  gemm<In, Out>(P, P.m, P.n, P.k, A, P.k, B, P.n, C, P.n, D, P.n, tracer);
}

template <class In, class Out, class InB = In, class InC = Out>
BF16EMU_CXHD void mma(const preset &P, const fp<In> *A, const fp<InB> *B, const fp<InC> *C,
                      fp<Out> *D) noexcept {
  no_block_trace t;
  mma<In, Out>(P, A, B, C, D, t);
}

} // namespace bf16emu::tc
