// Device-side pieces shared by the probe kernels of probe_kernels.cu and scaled_probe.cu: the
// warp loop over groups of 8 lines, reading a line's elements, packing them into fragment
// registers, and the m16n8 accumulator element on the diagonal of a line.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels.hpp"

namespace bf16emu::gpu {

constexpr unsigned probe_blocks(std::size_t lines) { // 64 lines per block of 256 threads
  return unsigned(std::min<std::size_t>((lines + 63) / 64, 8192));
}

// The warp's share of a grid-stride loop over groups of 8 lines: fn(line, valid, g, t) with
// g = lane/4, t = lane%4 and line = the group's first line + g (valid: line < lines).
template <class Fn> __device__ __forceinline__ void for_each_group8(std::size_t lines, Fn fn) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::size_t nwarps = (std::size_t(gridDim.x) * blockDim.x) >> 5;
  for (std::size_t base = warp * 8; base < lines; base += nwarps * 8)
    fn(base + g, base + g < lines, g, t);
}

// Element k of line `line` (K per line); 0 for a line past the end.
__device__ __forceinline__ std::uint64_t e16(const std::uint64_t *p, std::size_t line, bool valid, int K,
                                             int k) {
  return valid ? p[line * std::size_t(K) + k] : 0u;
}
// 32 / bits consecutive elements of `bits` bits from k on, lowest k in the low bits.
__device__ __forceinline__ std::uint32_t pack16(const std::uint64_t *p, std::size_t line, bool valid, int K,
                                                int k, int bits) {
  std::uint32_t r = 0;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  for (int i = 0; i < 32 / bits; ++i)
    r |= std::uint32_t(e16(p, line, valid, K, k + i) & mask) << (i * bits);
  return r;
}

// The byte an element occupies in its register under kind::f8f6f4 / kind::mxf8f6f4 (PTX ISA
// 9.7.14.5.14, the mma description: fp6 values in bits 5:0 of the byte, fp4 values in bits
// 5:2, fp8 the whole byte).
template <mma_elem E> __device__ __forceinline__ std::uint32_t container8(std::uint64_t v) {
  if constexpr (E == mma_elem::e2m1)
    return std::uint32_t(v & 0xfu) << 2;
  else if constexpr (E == mma_elem::e3m2 || E == mma_elem::e2m3)
    return std::uint32_t(v & 0x3fu);
  else
    return std::uint32_t(v & 0xffu);
}
// Four consecutive elements from k on as 8-bit containers, lowest k in the low byte.
template <mma_elem E>
__device__ __forceinline__ std::uint32_t pack8(const std::uint64_t *p, std::size_t line, bool valid, int K,
                                               int k) {
  std::uint32_t r = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    r |= container8<E>(e16(p, line, valid, K, k + i)) << (8 * i);
  return r;
}

// An accumulator register's value from a line's C bits, and its bits for D: the register holds
// f32 bits (uint32), an f32 (float) or an f64 (double).
template <class A> __device__ __forceinline__ A acc_of_bits(std::uint64_t v) {
  if constexpr (std::is_same_v<A, double>)
    return __longlong_as_double((long long)v);
  else if constexpr (std::is_same_v<A, float>)
    return __uint_as_float(std::uint32_t(v));
  else
    return A(v);
}
template <class A> __device__ __forceinline__ std::uint64_t bits_of_acc(A x) {
  if constexpr (std::is_same_v<A, double>)
    return std::uint64_t(__double_as_longlong(x));
  else if constexpr (std::is_same_v<A, float>)
    return __float_as_uint(x);
  else
    return x;
}

// The m16n8 accumulator of lane (g, t) and the diagonal element (g, g) of a line (PTX ISA, the
// m16n8 C/D fragments): .f32 / .f64 c0 = (g, 2t), c1 = (g, 2t+1); .f16 (H, 32-bit registers)
// reg0 = (g, 2t) in the low half, (g, 2t+1) in the high half. C in, D out; other lanes and
// lines past the end do nothing.
template <bool H, class A, int N, class C>
__device__ __forceinline__ void diag_c(A (&acc)[N], const C *c, std::size_t line, bool valid, int g, int t) {
  if (!valid || g / 2 != t) return;
  if constexpr (H)
    acc[0] = A(std::uint32_t(c[line] & 0xffffu) << (16 * (g % 2)));
  else
    acc[g % 2] = acc_of_bits<A>(c[line]);
}
template <bool H, class A, int N, class D>
__device__ __forceinline__ void diag_d(const A (&acc)[N], D *d, std::size_t line, bool valid, int g, int t) {
  if (!valid || g / 2 != t) return;
  if constexpr (H)
    d[line] = D((acc[0] >> (16 * (g % 2))) & 0xffffu);
  else
    d[line] = D(bits_of_acc(acc[g % 2]));
}

// ------------------------------------------------------------------------------------------------
// tcgen05 (sm_100a) pieces shared by the kind::f16 / tf32 / f8f6f4 probe (probe_kernels.cu) and the
// block-scaled one (scaled_probe.cu). PTX ISA 9.7.16 ("TensorCore 5th Generation Family
// Instructions"); one CTA of 128 threads (4 warps), cta_group::1. Outside sm_100a code the bodies
// are empty: no kernel of another arch calls them.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM103_ALL))
#define BF16EMU_TC5 1
#endif

// Shared-memory matrix descriptor of an operand stored K-major without swizzle in the canonical
// layout (core matrices of 8 rows x 16 bytes; LBO = 128 bytes between the two core matrices along
// k, SBO = 256 between 8-row groups): start address >> 4 in bits 0..13, LBO >> 4 in 16..29,
// SBO >> 4 in 32..45, base offset 0, swizzle mode 0 (none) in bits 62..63. tcgen05 adds the
// version bits 46..48 = 0b001 (9.7.16.4.1).
[[maybe_unused]] __device__ __forceinline__ std::uint64_t smem_desc(const void *p) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  constexpr std::uint64_t lbo = 128, sbo = 256;
  return std::uint64_t((addr & 0x3ffffu) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}
[[maybe_unused]] __device__ __forceinline__ std::uint64_t tc5_smem_desc(const void *p) {
  return smem_desc(p) | (std::uint64_t{1} << 46);
}
// Byte offset of the 16-byte core-matrix row `half` (0, 1) of operand row `row` in that layout.
constexpr int kmajor_offset(int row, int half) { return (row >> 3) * 256 + half * 128 + (row & 7) * 16; }

// bar.sync between tcgen05 operations of different threads (9.7.16.6.4): fence, barrier, fence.
[[maybe_unused]] __device__ __forceinline__ void tc5_sync() {
#ifdef BF16EMU_TC5
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
#endif
}

// The CTA's tensor-core state: `cols` columns of tensor memory (tcgen05.alloc by warp 0, 9.7.16.7.1;
// its address written to *slot) and the mbarrier that tcgen05.commit arrives on. Returns the
// tensor-memory base address, after every thread has seen it.
[[maybe_unused]] __device__ __forceinline__ std::uint32_t tc5_begin(std::uint32_t *slot, std::uint64_t *mbar,
                                                                    std::uint32_t cols) {
#ifdef BF16EMU_TC5
  if ((threadIdx.x >> 5) == 0) {
    const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(slot));
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(s), "r"(cols)
                 : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
  }
  if (threadIdx.x == 0) {
    const auto bar = static_cast<std::uint32_t>(__cvta_generic_to_shared(mbar));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  tc5_sync();
  return *slot;
#else
  (void)slot, (void)mbar, (void)cols;
  return 0;
#endif
}

// One tcgen05.mma.cta_group::1 of kind KIND (a string literal) with enable-input-d = 1: D in tensor
// memory at DT accumulates A x B (shared-memory descriptors AD, BD; instruction descriptor ID).
#define BF16EMU_TC5_MMA(KIND, DT, AD, BD, ID)                                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\ntcgen05.mma.cta_group::1.kind::" KIND                \
               " [%0], %1, %2, %3, p;\n}\n" ::"r"(DT),                                                       \
               "l"(AD), "l"(BD), "r"(ID)                                                                     \
               : "memory")

// After thread 0 has issued this step's tcgen05.mma: thread 0 commits (tcgen05.commit
// .mbarrier::arrive::one, 9.7.16.11.1), every thread waits for the barrier's phase
// (mbarrier.try_wait.parity), which flips for the next step.
[[maybe_unused]] __device__ __forceinline__ void tc5_commit_wait(std::uint64_t *mbar, std::uint32_t &phase) {
#ifdef BF16EMU_TC5
  const auto bar = static_cast<std::uint32_t>(__cvta_generic_to_shared(mbar));
  if (threadIdx.x == 0)
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(bar)
                 : "memory");
  std::uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(phase)
                 : "memory");
  phase ^= 1u;
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
#else
  (void)mbar, (void)phase;
#endif
}

#define BF16EMU_T32                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "    \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define BF16EMU_REGS32(c, x)                                                                                 \
  c(x[0]), c(x[1]), c(x[2]), c(x[3]), c(x[4]), c(x[5]), c(x[6]), c(x[7]), c(x[8]), c(x[9]), c(x[10]),        \
      c(x[11]), c(x[12]), c(x[13]), c(x[14]), c(x[15]), c(x[16]), c(x[17]), c(x[18]), c(x[19]), c(x[20]),    \
      c(x[21]), c(x[22]), c(x[23]), c(x[24]), c(x[25]), c(x[26]), c(x[27]), c(x[28]), c(x[29]), c(x[30]),    \
      c(x[31])
#define BF16EMU_OUT(x) "=r"(x)
#define BF16EMU_IN(x) "r"(x)

// The accumulator element of this thread's line on the diagonal of D (M = 128, cta_group::1:
// row i in lane i, column j in column j, 9.7.16.10.10 layout D): warp w reaches lanes
// 32w..32w+31 only (9.7.16.2.1), so each warp moves the 32 columns 32w.. of its 32 rows with
// .32x32b.x32 and each thread keeps register `lane`. tc5_put_diag: C in (tcgen05.st + wait::st);
// tc5_get_diag: D out (tcgen05.ld + wait::ld).
[[maybe_unused]] __device__ __forceinline__ void tc5_put_diag(std::uint32_t tmem, std::uint32_t v) {
#ifdef BF16EMU_TC5
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const std::uint32_t mine = tmem + (std::uint32_t(32 * w) << 16) + std::uint32_t(32 * w);
  std::uint32_t r[32];
#pragma unroll
  for (int i = 0; i < 32; ++i)
    r[i] = i == lane ? v : 0u;
  asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%32], " BF16EMU_T32
               ";\n" ::BF16EMU_REGS32(BF16EMU_IN, r),
               "r"(mine)
               : "memory");
  asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
#else
  (void)tmem, (void)v;
#endif
}
[[maybe_unused]] __device__ __forceinline__ std::uint32_t tc5_get_diag(std::uint32_t tmem) {
#ifdef BF16EMU_TC5
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const std::uint32_t mine = tmem + (std::uint32_t(32 * w) << 16) + std::uint32_t(32 * w);
  std::uint32_t r[32];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 " BF16EMU_T32 ", [%32];\n"
               : BF16EMU_REGS32(BF16EMU_OUT, r)
               : "r"(mine)
               : "memory");
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
  std::uint32_t v = 0;
#pragma unroll
  for (int i = 0; i < 32; ++i)
    if (i == lane) v = r[i];
  return v;
#else
  (void)tmem;
  return 0;
#endif
}
#undef BF16EMU_T32
#undef BF16EMU_REGS32
#undef BF16EMU_OUT
#undef BF16EMU_IN

// Every warp has read D (tc5_sync), then warp 0 frees the tensor memory (tcgen05.dealloc).
[[maybe_unused]] __device__ __forceinline__ void tc5_end(std::uint32_t tmem, std::uint32_t cols) {
#ifdef BF16EMU_TC5
  if ((threadIdx.x >> 5) == 0)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(tmem), "r"(cols) : "memory");
#else
  (void)tmem, (void)cols;
#endif
}

} // namespace bf16emu::gpu
