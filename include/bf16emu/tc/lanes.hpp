// bf16emu tensor-core model: the hook through which a compiled lane-parallel kernel serves
// many dot products at once.
//
// The header-only model computes one output element's chain of blocks at a time. A SIMD
// kernel that gives each lane one output element (src/tc_lanes, the library target
// bf16emu::tc_lanes, compiled with Google Highway) cannot live in this header-only core, so
// the core offers a hook instead: a function pointer that is null until a program installs the
// kernel (bf16emu::tc_lanes::install()). tc::dot_rows and tc::gemm without a tracer hand
// their products to it; it answers false for what it does not cover (formats, parameters),
// and the model then runs as before. A kernel must give, for every element, the bits of
// tc::dot: it sends any element it cannot prove exact to tc::dot itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/block.hpp"

namespace bf16emu::tc {

// rows x ncols chains of blocks over K products: for i < rows, j < ncols,
//   c[i*ldc + j] = tc::dot<in, binary32>(p, instr_k, a + i*lda, sa, b + j*bcol, sb, K, c[i*ldc + j])
// with a and b in format `in` (bit patterns: fp<In> arrays) and c holding FP32 bit patterns
// (in: the accumulators; out: the results).
struct lanes_call {
  block_params p;
  int instr_k = 0;
  format_id in = format_id::bf16;
  int rows = 0, ncols = 0, K = 0;
  const void *a = nullptr;
  std::ptrdiff_t lda = 0, sa = 1;
  const void *b = nullptr;
  std::ptrdiff_t sb = 1, bcol = 0;
  std::uint32_t *c = nullptr;
  std::ptrdiff_t ldc = 0;
};

// The kernel: true when it computed every element, false (nothing written) when it does not
// cover the call.
using lanes_kernel = bool (*)(const lanes_call &) noexcept;

// The installed kernel (null: none). Set once, before the threads that use the model start.
inline std::atomic<lanes_kernel> lanes_hook{nullptr};

// Hands rows x ncols FP32 chains (In inputs) to the installed kernel; false: none installed, a
// format it does not take, or it declined (the caller runs the model itself).
template <class In, class Out>
inline bool lanes_try(const block_params &p, int instr_k, int rows, const fp<In> *a, std::ptrdiff_t lda,
                      std::ptrdiff_t sa, const fp<In> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols,
                      int K, fp<Out> *c, std::ptrdiff_t ldc) noexcept {
  if constexpr (std::is_same_v<Out, binary32> && sizeof(fp<Out>) == sizeof(std::uint32_t) &&
                (std::is_same_v<In, bfloat16> || std::is_same_v<In, binary16> ||
                 std::is_same_v<In, tensorfloat32>)) {
    const lanes_kernel k = lanes_hook.load(std::memory_order_relaxed);
    if (!k) return false;
    lanes_call call;
    call.p = p, call.instr_k = instr_k;
    call.in = std::is_same_v<In, bfloat16>   ? format_id::bf16
              : std::is_same_v<In, binary16> ? format_id::fp16
                                             : format_id::tf32;
    call.rows = rows, call.ncols = ncols, call.K = K;
    call.a = a, call.lda = lda, call.sa = sa, call.b = b, call.sb = sb, call.bcol = bcol;
    call.c = reinterpret_cast<std::uint32_t *>(c), call.ldc = ldc;
    return k(call);
  } else {
    (void)p, (void)instr_k, (void)rows, (void)a, (void)lda, (void)sa, (void)b, (void)sb, (void)bcol;
    (void)ncols, (void)K, (void)c, (void)ldc;
    return false;
  }
}

} // namespace bf16emu::tc
