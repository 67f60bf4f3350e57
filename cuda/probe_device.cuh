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

} // namespace bf16emu::gpu
