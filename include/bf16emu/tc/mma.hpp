// bf16emu tensor-core model: dot products, whole instructions and GEMM as a kernel issues them.
//
// k order: K is cut into chunks of the instruction's k (the last chunk zero-padded, as a kernel
// pads a partial tile); chunks run in increasing k, each chunk's D feeding the next chunk's C;
// inside a chunk the hardware's blocks of L products run in increasing k, each block's result
// being the next block's c. Since k is a multiple of L this is one chain of blocks of L over
// the padded K. K = 0 issues no instruction: D = C.
#pragma once

#include <cstddef>

#include "bf16emu/tc/block.hpp"
#include "bf16emu/tc/presets.hpp"

namespace bf16emu::tc {

// Chain of blocks over K products a[k*sa]*b[k*sb], padded to a multiple of instr_k.
template <class In, class Out, class Tracer>
BF16EMU_CXHD fp<Out> dot(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                         const fp<In> *b, std::ptrdiff_t sb, int K, fp<Out> c, Tracer &tracer) noexcept {
  return chain_fdpa<In, Out>(p, instr_k, a, sa, b, sb, K, c, tracer); // block.hpp
}

template <class In, class Out>
BF16EMU_CXHD fp<Out> dot(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                         const fp<In> *b, std::ptrdiff_t sb, int K, fp<Out> c) noexcept {
  no_block_trace t;
  return dot<In, Out>(p, instr_k, a, sa, b, sb, K, c, t);
}

// GEMM reference: D[i][j] = dot(row i of A, column j of B, K, C[i][j]) for an M x N x K problem,
// row-major A (M x K, lda), B (K x N, ldb), C and D (M x N, ldc, ldd; D may be C).
// The tracer sees the blocks of D[0][0], D[0][1], ... in row-major order.
template <class In, class Out, class Tracer>
BF16EMU_CXHD void gemm(const block_params &p, int instr_k, int M, int N, int K, const fp<In> *A,
                       std::ptrdiff_t lda, const fp<In> *B, std::ptrdiff_t ldb, const fp<Out> *C,
                       std::ptrdiff_t ldc, fp<Out> *D, std::ptrdiff_t ldd, Tracer &tracer) noexcept {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      D[i * ldd + j] = dot<In, Out>(p, instr_k, A + i * lda, 1, B + j, ldb, K, C[i * ldc + j], tracer);
}

template <class In, class Out>
BF16EMU_CXHD void gemm(const block_params &p, int instr_k, int M, int N, int K, const fp<In> *A,
                       std::ptrdiff_t lda, const fp<In> *B, std::ptrdiff_t ldb, const fp<Out> *C,
                       std::ptrdiff_t ldc, fp<Out> *D, std::ptrdiff_t ldd) noexcept {
  no_block_trace t;
  gemm<In, Out>(p, instr_k, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, t);
}

// The same with a preset (its block parameters and its instruction k).
template <class In, class Out, class Tracer>
BF16EMU_CXHD void gemm(const preset &P, int M, int N, int K, const fp<In> *A, std::ptrdiff_t lda,
                       const fp<In> *B, std::ptrdiff_t ldb, const fp<Out> *C, std::ptrdiff_t ldc, fp<Out> *D,
                       std::ptrdiff_t ldd, Tracer &tracer) noexcept {
  gemm<In, Out>(P.block, P.k, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, tracer);
}

template <class In, class Out>
BF16EMU_CXHD void gemm(const preset &P, int M, int N, int K, const fp<In> *A, std::ptrdiff_t lda,
                       const fp<In> *B, std::ptrdiff_t ldb, const fp<Out> *C, std::ptrdiff_t ldc, fp<Out> *D,
                       std::ptrdiff_t ldd) noexcept {
  no_block_trace t;
  gemm<In, Out>(P.block, P.k, M, N, K, A, lda, B, ldb, C, ldc, D, ldd, t);
}

// One instruction: D = A*B + C on the preset's m x n x k tile, dense row-major operands
// (A m x k, B k x n, C and D m x n), blocks in hardware order.
template <class In, class Out, class Tracer>
BF16EMU_CXHD void mma(const preset &P, const fp<In> *A, const fp<In> *B, const fp<Out> *C, fp<Out> *D,
                      Tracer &tracer) noexcept {
  gemm<In, Out>(P.block, P.k, P.m, P.n, P.k, A, P.k, B, P.n, C, P.n, D, P.n, tracer);
}

template <class In, class Out>
BF16EMU_CXHD void mma(const preset &P, const fp<In> *A, const fp<In> *B, const fp<Out> *C,
                      fp<Out> *D) noexcept {
  no_block_trace t;
  mma<In, Out>(P, A, B, C, D, t);
}

} // namespace bf16emu::tc
