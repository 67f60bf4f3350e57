// bf16emu tensor-core model: one block fused dot-product-add (FDPA), and chains of blocks.
//
// block_fdpa takes the fast path (tc/block_fast.hpp) where the formats, parameters and tracer
// allow and the block is finite, else the reference (tc/block_reference.hpp, which states the
// model); both give the same bits. chain_fdpa and chain_fdpa_cols run the blocks of a dot
// product in k order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bf16emu/tc/block_fast.hpp"
#include "bf16emu/tc/block_reference.hpp"

namespace bf16emu::tc {

// One block: d = sum_{i<n} a[i*sa]*b[i*sb] + c, with L - n zero products padding the block.
// `block_index` and `k0` only label the trace record. A and B may have different formats
// (InB, deduced from b: the fp8 e4m3 x e5m2 mixes); a product's significand then has
// In::frac_bits + InB::frac_bits fraction bits. Mixed blocks take the reference.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> block_fdpa(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c, Tracer &tracer, int block_index = 0,
                                int k0 = 0) noexcept {
  static_assert(In::precision + InB::precision + 2 <= 62, "input significands too wide for the 64-bit model");
  if (n > p.L) n = p.L;
  if constexpr (std::is_same_v<In, InB> && detail::fast_formats<In, Out> &&
                (!Tracer::enabled || detail::is_summary_tracer<Tracer>::value)) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      block_summary s;
      if (detail::fast_one<In, Out, Tracer::enabled>(p, a, sa, b, sb, n, c, s)) {
        if constexpr (Tracer::enabled) {
          s.block = block_index, s.k0 = k0, s.n_products = p.L, s.n_real = n;
          tracer(s);
        }
        return fp<Out>::from_bits(s.d_bits);
      }
    }
  }
  return block_fdpa_reference<In, Out>(p, a, sa, b, sb, n, c, tracer, block_index, k0);
}

// Same, without a trace.
template <class In, class Out, class InB = In>
BF16EMU_CXHD fp<Out> block_fdpa(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c) noexcept {
  no_block_trace t;
  return block_fdpa<In, Out>(p, a, sa, b, sb, n, c, t);
}

// A chain of blocks over K products a[k*sa]*b[k*sb], padded to a multiple of instr_k with zero
// products, each block's result the next block's c (the k order of tc::dot, mma.hpp). On the
// fast path the host status is saved once for the whole chain. B may have its own format
// (InB, as in block_fdpa); mixed chains take the general path.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> chain_fdpa(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                                const fp<InB> *b, std::ptrdiff_t sb, int K, fp<Out> c,
                                Tracer &tracer) noexcept {
  if (K <= 0) return c;
  if (instr_k < p.L) instr_k = p.L;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  if constexpr (detail::fast_chain_types<In, Out, Tracer, InB>) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      return detail::fast_chain<In, Out>(p, padded, a, sa, b, sb, K, c, tracer);
    }
  }
  int block = 0;
  for (int k0 = 0; k0 < padded; k0 += p.L, ++block) {
    const int n = detail::chain_n(p, K, k0);
    const std::ptrdiff_t off = n > 0 ? k0 : 0; // never form pointers past the data
    c = block_fdpa<In, Out>(p, a + off * sa, sa, b + off * sb, sb, n, c, tracer, block, k0);
  }
  return c;
}

// ncols chains sharing A: c[j] = chain_fdpa(p, instr_k, a, sa, b + j*bcol, sb, K, c[j]) for
// j < ncols (c: in the accumulators, out the results), the tracer seeing the blocks of column
// 0, then column 1, ...: bit for bit ncols calls of chain_fdpa in order. On the fast path the
// columns advance together block by block (detail::fast_cols_loop), which lets the CPU overlap
// the chains.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD void chain_fdpa_cols(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                                  const fp<InB> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K,
                                  fp<Out> *c, Tracer &tracer) noexcept {
  if (K <= 0 || ncols <= 0) return;
  if constexpr (detail::fast_chain_types<In, Out, Tracer, InB>) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      const int ik = instr_k < p.L ? p.L : instr_k;
      detail::fast_cols<In, Out>(p, (K + ik - 1) / ik * ik, a, sa, b, sb, bcol, ncols, K, c, tracer);
      return;
    }
  }
  for (int j = 0; j < ncols; ++j)
    c[j] = chain_fdpa<In, Out>(p, instr_k, a, sa, b + j * bcol, sb, K, c[j], tracer);
}

} // namespace bf16emu::tc
