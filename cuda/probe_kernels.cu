// bf16emu CUDA twin: tensor-core probe kernels.
//
// One input line (see docs/tensor-cores.md) is one dot product D = sum_k A[k]*B[k] + C. Lines are
// laid on the diagonal of an instruction's output tile: line j of a group uses row j of A,
// column j of B and accumulator element C[j][j]; all other rows/columns of A and B are zero and
// all other outputs are discarded. K larger than the instruction's k is issued as consecutive
// instructions in increasing k, the whole D fragment feeding the next instruction's C.
//
//   mma.sync.m16n8k16 (bf16, fp16; f32 or f16 accumulator), m16n8k8 (tf32), m16n8k32 (e4m3, e5m2,
//   sm_89+): 8 lines per warp-level instruction (rows 0..7 of the 16, columns 0..7).
//   wgmma.mma_async.m64n64k16 (bf16, fp16), m64n64k8 (tf32), m64n64k32 (e4m3, e5m2), sm_90a only:
//   64 lines per warpgroup-level instruction. A and B both come from shared memory, K-major,
//   no swizzle (PTX ISA "Shared Memory Matrix Layout", canonical ((8,m),(T,2k)):((1T,SBO),(1,LBO))):
//   one row of one instruction is 32 bytes = two 16-byte core-matrix columns; byte (r, kb) of an
//   operand lies at (r/8)*SBO + (kb/16)*LBO + (r%8)*16 + kb%16 with LBO = 128, SBO = 256.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels.hpp"
#include "probe_device.cuh"

namespace bf16emu::gpu {
namespace {

constexpr int kin(in_type t) {
  return t == in_type::tf32 ? 8 : (t == in_type::e4m3 || t == in_type::e5m2) ? 32 : 16;
}
constexpr int elem_bytes(in_type t) {
  return t == in_type::tf32 ? 4 : (t == in_type::e4m3 || t == in_type::e5m2) ? 1 : 2;
}

// Register image of an input element: 16-bit formats as is, tf32 as the FP32 register bits
// (19-bit pattern << 13), fp8 as the byte.
template <in_type T> __device__ __forceinline__ std::uint32_t reg_bits(std::uint32_t v) {
  if constexpr (T == in_type::tf32)
    return v << 13;
  else if constexpr (T == in_type::e4m3 || T == in_type::e5m2)
    return v & 0xffu;
  else
    return v & 0xffffu;
}

// Element k of line `line` (zero outside the valid lines and for k past K).
template <in_type T>
__device__ __forceinline__ std::uint32_t elem(const std::uint32_t *p, std::size_t line, bool valid, int K,
                                              int k) {
  return valid ? reg_bits<T>(p[line * std::size_t(K) + k]) : 0u;
}

// Packs the elements [k, k + 32/bits) of a line into one 32-bit register, lowest k in the low bits.
template <in_type T>
__device__ __forceinline__ std::uint32_t pack(const std::uint32_t *p, std::size_t line, bool valid, int K,
                                              int k) {
  if constexpr (elem_bytes(T) == 4) {
    return elem<T>(p, line, valid, K, k);
  } else if constexpr (elem_bytes(T) == 2) {
    return elem<T>(p, line, valid, K, k) | (elem<T>(p, line, valid, K, k + 1) << 16);
  } else {
    return elem<T>(p, line, valid, K, k) | (elem<T>(p, line, valid, K, k + 1) << 8) |
           (elem<T>(p, line, valid, K, k + 2) << 16) | (elem<T>(p, line, valid, K, k + 3) << 24);
  }
}

// ------------------------------------------------------------------------------------------------
// mma.sync

template <in_type T>
__device__ __forceinline__ void mma_sync_f32(float (&acc)[4], const std::uint32_t (&ra)[4],
                                             const std::uint32_t (&rb)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (T == in_type::bf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else if constexpr (T == in_type::fp16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else if constexpr (T == in_type::tf32) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else {
#if __CUDA_ARCH__ >= 890
    if constexpr (T == in_type::e4m3) {
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                   "{%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                   : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    } else {
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                   "{%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                   : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    }
#else
    // fp8 mma.sync needs sm_89; the host never launches this variant below that.
    acc[0] = acc[1] = acc[2] = acc[3] = __uint_as_float(0xffffffffu);
#endif
  }
#endif
}

template <in_type T, out_type O>
__device__ __forceinline__ void mma_sync_issue(std::uint32_t (&acc)[4], const std::uint32_t (&ra)[4],
                                               const std::uint32_t (&rb)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (O == out_type::fp16 && T == in_type::fp16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
                 "{%0,%1};\n"
                 : "+r"(acc[0]), "+r"(acc[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else if constexpr (O == out_type::fp16) { // fp8 with an f16 accumulator (m16n8k32, sm_89+)
    static_assert(T == in_type::e4m3 || T == in_type::e5m2, "f16 accumulator: fp16 or fp8 inputs");
#if __CUDA_ARCH__ >= 890
    if constexpr (T == in_type::e4m3)
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
                   "{%0,%1};\n"
                   : "+r"(acc[0]), "+r"(acc[1])
                   : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    else
      asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
                   "{%0,%1};\n"
                   : "+r"(acc[0]), "+r"(acc[1])
                   : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
#else
    acc[0] = acc[1] = 0xffffffffu; // fp8 mma.sync needs sm_89; the host never launches this below that
#endif
  } else {
    float f[4] = {__uint_as_float(acc[0]), __uint_as_float(acc[1]), __uint_as_float(acc[2]),
                  __uint_as_float(acc[3])};
    mma_sync_f32<T>(f, ra, rb);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      acc[i] = __float_as_uint(f[i]);
  }
#endif
}

// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"), with
// g = lane/4 and t = lane%4:
//   16-bit A: reg0 = row g, cols 2t,2t+1; reg1 = row g+8; reg2 = row g, cols 2t+8,2t+9; reg3 = row g+8.
//   16-bit B: reg0 = rows 2t,2t+1 of col g; reg1 = rows 2t+8,2t+9.
//   tf32 A:   reg0 = (g, t); reg1 = (g+8, t); reg2 = (g, t+4); reg3 = (g+8, t+4).  B: (t, g), (t+4, g).
//   fp8 A:    reg0 = row g, cols 4t..4t+3; reg1 = row g+8; reg2 = row g, cols 4t+16..; reg3 = row g+8.
//   fp8 B:    reg0 = rows 4t..4t+3 of col g; reg1 = rows 4t+16..4t+19.
//   f32 C/D:  c0,c1 = row g, cols 2t,2t+1; c2,c3 = row g+8.   f16 C/D: reg0 = row g, reg1 = row g+8.
// Only rows 0..7 carry lines, so reg1 and reg3 of A stay zero.
template <in_type T, out_type O>
__global__ void __launch_bounds__(256)
    mma_sync_probe(const std::uint32_t *__restrict__ a, const std::uint32_t *__restrict__ b,
                   const std::uint32_t *__restrict__ c, std::uint32_t *__restrict__ d, int K,
                   std::size_t lines) {
  constexpr int k = kin(T);
  for_each_group8(lines, [&](std::size_t line, bool valid, int g, int t) { // row g of A, column g of B
    std::uint32_t acc[4] = {0, 0, 0, 0};
    diag_c<O == out_type::fp16>(acc, c, line, valid, g, t);
    for (int k0 = 0; k0 < K; k0 += k) {
      std::uint32_t ra[4] = {0, 0, 0, 0}, rb[2];
      if constexpr (elem_bytes(T) == 2) {
        ra[0] = pack<T>(a, line, valid, K, k0 + 2 * t);
        ra[2] = pack<T>(a, line, valid, K, k0 + 2 * t + 8);
        rb[0] = pack<T>(b, line, valid, K, k0 + 2 * t);
        rb[1] = pack<T>(b, line, valid, K, k0 + 2 * t + 8);
      } else if constexpr (elem_bytes(T) == 4) {
        ra[0] = pack<T>(a, line, valid, K, k0 + t);
        ra[2] = pack<T>(a, line, valid, K, k0 + t + 4);
        rb[0] = pack<T>(b, line, valid, K, k0 + t);
        rb[1] = pack<T>(b, line, valid, K, k0 + t + 4);
      } else {
        ra[0] = pack<T>(a, line, valid, K, k0 + 4 * t);
        ra[2] = pack<T>(a, line, valid, K, k0 + 4 * t + 16);
        rb[0] = pack<T>(b, line, valid, K, k0 + 4 * t);
        rb[1] = pack<T>(b, line, valid, K, k0 + 4 * t + 16);
      }
      mma_sync_issue<T, O>(acc, ra, rb);
    }
    diag_d<O == out_type::fp16>(acc, d, line, valid, g, t);
  });
}

// ------------------------------------------------------------------------------------------------
// wgmma (sm_90a)

#define BF16EMU_R32                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "    \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define BF16EMU_R16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define BF16EMU_ACC16(x)                                                                                     \
  "+r"(x[0]), "+r"(x[1]), "+r"(x[2]), "+r"(x[3]), "+r"(x[4]), "+r"(x[5]), "+r"(x[6]), "+r"(x[7]),            \
      "+r"(x[8]), "+r"(x[9]), "+r"(x[10]), "+r"(x[11]), "+r"(x[12]), "+r"(x[13]), "+r"(x[14]), "+r"(x[15])
#define BF16EMU_ACC16F(x)                                                                                    \
  "+f"(x[0]), "+f"(x[1]), "+f"(x[2]), "+f"(x[3]), "+f"(x[4]), "+f"(x[5]), "+f"(x[6]), "+f"(x[7]),            \
      "+f"(x[8]), "+f"(x[9]), "+f"(x[10]), "+f"(x[11]), "+f"(x[12]), "+f"(x[13]), "+f"(x[14]), "+f"(x[15])
#define BF16EMU_ACC32(x)                                                                                     \
  BF16EMU_ACC16F(x), "+f"(x[16]), "+f"(x[17]), "+f"(x[18]), "+f"(x[19]), "+f"(x[20]), "+f"(x[21]),           \
      "+f"(x[22]), "+f"(x[23]), "+f"(x[24]), "+f"(x[25]), "+f"(x[26]), "+f"(x[27]), "+f"(x[28]),             \
      "+f"(x[29]), "+f"(x[30]), "+f"(x[31])

// scale-d = 1 (accumulate into the registers), scale-a = scale-b = 1, no transpose (K-major).
// TB: B's format (== T, or the other fp8 format for the e4m3 x e5m2 mixes).
template <in_type T, in_type TB, out_type O>
__device__ __forceinline__ void wgmma_issue(std::uint32_t (&acc)[32], std::uint64_t da, std::uint64_t db) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const std::uint32_t one = 1;
  float f[32];
#pragma unroll
  for (int i = 0; i < 32; ++i)
    f[i] = __uint_as_float(acc[i]);
  if constexpr (T != TB) { // fp8 mixes (PTX ISA 9.7.15.5.2, wgmma.mma_async .e4m3/.e5m2 atype/btype)
    static_assert((T == in_type::e4m3 && TB == in_type::e5m2) || (T == in_type::e5m2 && TB == in_type::e4m3),
                  "mixed operands: e4m3 x e5m2 or e5m2 x e4m3");
    if constexpr (O == out_type::fp16 && T == in_type::e4m3)
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e5m2 " BF16EMU_R16
                   ", %16, %17, p, 1, 1;\n}\n"
                   : BF16EMU_ACC16(acc)
                   : "l"(da), "l"(db), "r"(one)
                   : "memory");
    else if constexpr (O == out_type::fp16)
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e4m3 " BF16EMU_R16
                   ", %16, %17, p, 1, 1;\n}\n"
                   : BF16EMU_ACC16(acc)
                   : "l"(da), "l"(db), "r"(one)
                   : "memory");
    else if constexpr (T == in_type::e4m3)
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 " BF16EMU_R32
                   ", %32, %33, p, 1, 1;\n}\n"
                   : BF16EMU_ACC32(f)
                   : "l"(da), "l"(db), "r"(one)
                   : "memory");
    else
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3 " BF16EMU_R32
                   ", %32, %33, p, 1, 1;\n}\n"
                   : BF16EMU_ACC32(f)
                   : "l"(da), "l"(db), "r"(one)
                   : "memory");
  } else if constexpr (O == out_type::fp16 && T == in_type::fp16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 " BF16EMU_R16
                 ", %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : BF16EMU_ACC16(acc)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (O == out_type::fp16 && T == in_type::e4m3) { // fp8: no transpose operands
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3 " BF16EMU_R16
                 ", %16, %17, p, 1, 1;\n}\n"
                 : BF16EMU_ACC16(acc)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (O == out_type::fp16) {
    static_assert(T == in_type::e5m2, "f16 accumulator: fp16 or fp8 inputs");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e5m2 " BF16EMU_R16
                 ", %16, %17, p, 1, 1;\n}\n"
                 : BF16EMU_ACC16(acc)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (T == in_type::bf16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " BF16EMU_R32
                 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : BF16EMU_ACC32(f)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (T == in_type::fp16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " BF16EMU_R32
                 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : BF16EMU_ACC32(f)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (T == in_type::tf32) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " BF16EMU_R32
                 ", %32, %33, p, 1, 1;\n}\n"
                 : BF16EMU_ACC32(f)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else if constexpr (T == in_type::e4m3) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " BF16EMU_R32
                 ", %32, %33, p, 1, 1;\n}\n"
                 : BF16EMU_ACC32(f)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 " BF16EMU_R32
                 ", %32, %33, p, 1, 1;\n}\n"
                 : BF16EMU_ACC32(f)
                 : "l"(da), "l"(db), "r"(one)
                 : "memory");
  }
  if constexpr (O != out_type::fp16) {
#pragma unroll
    for (int i = 0; i < 32; ++i)
      acc[i] = __float_as_uint(f[i]);
  }
#endif
}

// Writes the 16 bytes of core-matrix column `half` of operand row `row` for k in [k0, k0 + k).
template <in_type T>
__device__ __forceinline__ void fill_row(unsigned char *s, const std::uint32_t *p, std::size_t line,
                                         bool valid, int K, int k0, int row, int half) {
  constexpr int per16 = 16 / elem_bytes(T); // elements per 16 bytes
  const int kfirst = k0 + half * per16;
  uint4 v;
  std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = pack<T>(p, line, valid, K, kfirst + i * (4 / elem_bytes(T)));
  v.x = w[0], v.y = w[1], v.z = w[2], v.w = w[3];
  *reinterpret_cast<uint4 *>(s + kmajor_offset(row, half)) = v;
}

// D fragment of m64nN (f32): value i of thread (warp w, lane l): row 16w + l/4 + 8*((i/2)%2),
// column 8*(i/4) + 2*(l%4) + i%2. The f16 accumulator uses the same map on half index i, two
// halves per register (i%2 = 0 in the low half).
template <in_type T, in_type TB, out_type O>
__global__ void __launch_bounds__(128)
    wgmma_probe(const std::uint32_t *__restrict__ a, const std::uint32_t *__restrict__ b,
                const std::uint32_t *__restrict__ c, std::uint32_t *__restrict__ d, int K,
                std::size_t lines) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ alignas(128) unsigned char sa[64 * 32];
  __shared__ alignas(128) unsigned char sb[64 * 32];
  const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
  constexpr int k = kin(T);
  constexpr int nvals = 32; // values per thread: 32 floats, or 32 halves in 16 registers
  for (std::size_t base = std::size_t(blockIdx.x) * 64; base < lines; base += std::size_t(gridDim.x) * 64) {
    std::uint32_t acc[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
      acc[i] = 0;
#pragma unroll
    for (int i = 0; i < nvals; ++i) {
      const int row = 16 * w + (lane >> 2) + 8 * ((i >> 1) & 1);
      const int col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
      if (row == col && base + row < lines) {
        if constexpr (O == out_type::fp16)
          acc[i >> 1] |= (c[base + row] & 0xffffu) << (16 * (i & 1));
        else
          acc[i] = c[base + row];
      }
    }
    const int frow = tid >> 1, fhalf = tid & 1;
    const std::size_t fline = base + frow;
    const bool fvalid = fline < lines;
    for (int k0 = 0; k0 < K; k0 += k) {
      __syncthreads(); // the previous instruction has read shared memory
      fill_row<T>(sa, a, fline, fvalid, K, k0, frow, fhalf);
      fill_row<TB>(sb, b, fline, fvalid, K, k0, frow, fhalf);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncthreads();
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
      wgmma_issue<T, TB, O>(acc, smem_desc(sa), smem_desc(sb));
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
      for (int i = 0; i < 32; ++i)
        asm volatile("" : "+r"(acc[i])::"memory");
    }
#pragma unroll
    for (int i = 0; i < nvals; ++i) {
      const int row = 16 * w + (lane >> 2) + 8 * ((i >> 1) & 1);
      const int col = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
      if (row == col && base + row < lines) {
        if constexpr (O == out_type::fp16)
          d[base + row] = (acc[i >> 1] >> (16 * (i & 1))) & 0xffffu;
        else
          d[base + row] = acc[i];
      }
    }
  }
#endif
}

// ------------------------------------------------------------------------------------------------
// tcgen05 (sm_100a): tcgen05.mma.cta_group::1 kind::f16 (bf16, fp16 -> f32; fp16 -> f16),
// kind::tf32 and kind::f8f6f4 (e4m3, e5m2 in any A x B pair -> f32, f16; 1-byte elements in the
// same layout), M = 128, N = 128: 128 lines per issue on the diagonal of D (line t: row t of A,
// row t of B^T (column t of B), D[t][t]). Never run on a device: see docs/gpu-validation.md.
//
// Sequence (PTX ISA 9.7.16, "TensorCore 5th Generation Family Instructions"):
//   tcgen05.alloc (9.7.16.7.1; one warp, 128 columns, address written to shared memory),
//   tcgen05.relinquish_alloc_permit; C placed on the diagonal with tcgen05.st .32x32b.x32
//   (9.7.16.8.4; warp w reaches lanes 32w..32w+31 only, 9.7.16.2.1), tcgen05.wait::st;
//   per k-step: A and B stored K-major without swizzle in the canonical layout of 9.7.16.3
//   (core matrices of 8 rows x 16 bytes, LBO = 128 between the two core matrices along k,
//   SBO = 256 between 8-row groups: the wgmma layout above), fence.proxy.async.shared::cta,
//   tcgen05.fence::before_thread_sync + bar.sync + tcgen05.fence::after_thread_sync
//   (9.7.16.6.4), one thread issues tcgen05.mma with enable-input-d = 1 (9.7.16.10.9) and
//   tcgen05.commit .mbarrier::arrive::one (9.7.16.11.1); every thread waits on the mbarrier
//   phase (mbarrier.try_wait.parity), then tcgen05.fence::after_thread_sync;
//   D read back with tcgen05.ld .32x32b.x32 + tcgen05.wait::ld (9.7.16.8.3); tcgen05.dealloc.
// Descriptors: shared memory 9.7.16.4.1 (start, LBO, SBO >> 4; bits 46-48 = 0b001; base offset
// 0; relative LBO mode; no swizzle), instruction 9.7.16.4.2 Table 42 (dtype bits 4-5: F16 0,
// F32 1; atype 7-9, btype 10-12: F16 0, BF16 1, TF32 2; K-major; N >> 3 at 17-22; M >> 4 at
// 24-28). Data-path layout of D for M = 128, cta_group::1 (9.7.16.10.10, layout D): row i in
// lane i, column j in column j. Unverified assumptions: an f16 D occupies one 32-bit column per
// element in its low half (tcgen05.st/ld of C and D); the fill layout above is what the
// no-swizzle K-major descriptor describes for tcgen05 as for wgmma.

constexpr int kTc5M = 128, kTc5N = 128; // the instruction's M and N; N TMEM columns allocated

// The type code of Table 42: kind::f16 F16 0, BF16 1; kind::tf32 TF32 2; kind::f8f6f4 E4M3 0, E5M2 1.
constexpr std::uint32_t tc5_type(in_type t) {
  return t == in_type::bf16 ? 1u : t == in_type::tf32 ? 2u : t == in_type::e5m2 ? 1u : 0u;
}
template <in_type T, in_type TB, out_type O> constexpr std::uint32_t tc5_idesc() {
  constexpr std::uint32_t dtype = O == out_type::fp16 ? 0u : 1u;
  return (dtype << 4) | (tc5_type(T) << 7) | (tc5_type(TB) << 10) | (std::uint32_t(kTc5N >> 3) << 17) |
         (std::uint32_t(kTc5M >> 4) << 24);
}
static_assert(tc5_idesc<in_type::bf16, in_type::bf16, out_type::fp32>() == 0x08200490u,
              "kind::f16 bf16 -> f32, M128 N128");
static_assert(tc5_idesc<in_type::e4m3, in_type::e5m2, out_type::fp16>() == 0x08200400u,
              "kind::f8f6f4 e4m3 x e5m2 -> f16, M128 N128");

template <in_type T, in_type TB, out_type O>
__global__ void __launch_bounds__(128)
    tcgen05_probe(const std::uint32_t *__restrict__ a, const std::uint32_t *__restrict__ b,
                  const std::uint32_t *__restrict__ c, std::uint32_t *__restrict__ d, int K,
                  std::size_t lines) {
#ifdef BF16EMU_TC5
  __shared__ alignas(1024) unsigned char sa[kTc5M * 32];
  __shared__ alignas(1024) unsigned char sb[kTc5N * 32];
  __shared__ alignas(8) std::uint64_t mbar;
  __shared__ std::uint32_t tmem_slot;
  const int tid = threadIdx.x;
  constexpr int k = kin(T);
  const std::uint32_t tmem = tc5_begin(&tmem_slot, &mbar, kTc5N);
  const std::uint64_t adesc = tc5_smem_desc(sa), bdesc = tc5_smem_desc(sb);
  constexpr std::uint32_t idesc = tc5_idesc<T, TB, O>();
  std::uint32_t phase = 0;
  for (std::size_t base = std::size_t(blockIdx.x) * kTc5N; base < lines;
       base += std::size_t(gridDim.x) * kTc5N) {
    const std::size_t line = base + std::size_t(tid);
    const bool valid = line < lines;
    tc5_put_diag(tmem, valid ? (O == out_type::fp16 ? c[line] & 0xffffu : c[line]) : 0u);
    for (int k0 = 0; k0 < K; k0 += k) {
      fill_row<T>(sa, a, line, valid, K, k0, tid, 0), fill_row<T>(sa, a, line, valid, K, k0, tid, 1);
      fill_row<TB>(sb, b, line, valid, K, k0, tid, 0), fill_row<TB>(sb, b, line, valid, K, k0, tid, 1);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      tc5_sync();
      if (tid == 0) {
        if constexpr (T == in_type::e4m3 || T == in_type::e5m2)
          BF16EMU_TC5_MMA("f8f6f4", tmem, adesc, bdesc, idesc);
        else if constexpr (T == in_type::tf32)
          BF16EMU_TC5_MMA("tf32", tmem, adesc, bdesc, idesc);
        else
          BF16EMU_TC5_MMA("f16", tmem, adesc, bdesc, idesc);
      }
      tc5_commit_wait(&mbar, phase);
    }
    const std::uint32_t v = tc5_get_diag(tmem);
    if (valid) d[line] = O == out_type::fp16 ? v & 0xffffu : v;
    tc5_sync(); // every warp has read D before the next group writes C
  }
  tc5_end(tmem, kTc5N);
#else
  (void)a, (void)b, (void)c, (void)d, (void)K, (void)lines;
#endif
}

template <in_type T, out_type O>
int launch(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
           std::uint32_t *d) {
  // Lines per block: 8 warps x 8 (mma.sync), or one warpgroup x 64 (wgmma).
  const unsigned blocks = probe_blocks(job.lines);
  if (job.op == instr::wgmma)
    wgmma_probe<T, T, O><<<blocks, 128>>>(a, b, c, d, job.k, job.lines);
  else
    mma_sync_probe<T, O><<<blocks, 256>>>(a, b, c, d, job.k, job.lines);
  return int(cudaGetLastError());
}

// wgmma with an fp8 mix: A in T, B in TB.
template <in_type T, in_type TB, out_type O>
int launch_mixed(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
                 std::uint32_t *d) {
  wgmma_probe<T, TB, O><<<probe_blocks(job.lines), 128>>>(a, b, c, d, job.k, job.lines);
  return int(cudaGetLastError());
}

template <in_type T, in_type TB, out_type O>
int launch_tc5(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
               std::uint32_t *d) {
  const unsigned blocks = unsigned(std::min<std::size_t>((job.lines + kTc5N - 1) / kTc5N, 1024));
  tcgen05_probe<T, TB, O><<<blocks, 128>>>(a, b, c, d, job.k, job.lines);
  return int(cudaGetLastError());
}

// tcgen05: kind::f16 (bf16, fp16 -> f32; fp16 -> f16), kind::tf32, kind::f8f6f4 (e4m3, e5m2 in
// the four A x B pairs -> f32, f16).
template <in_type T, in_type TB>
int dispatch_tc5_out(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b,
                     const std::uint32_t *c, std::uint32_t *d) {
  return job.out == out_type::fp16 ? launch_tc5<T, TB, out_type::fp16>(job, a, b, c, d)
                                   : launch_tc5<T, TB, out_type::fp32>(job, a, b, c, d);
}
int dispatch_tc5(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
                 std::uint32_t *d) {
  const bool b5 = job.type_b == in_type::e5m2;
  switch (job.type) {
  case in_type::bf16: return launch_tc5<in_type::bf16, in_type::bf16, out_type::fp32>(job, a, b, c, d);
  case in_type::tf32: return launch_tc5<in_type::tf32, in_type::tf32, out_type::fp32>(job, a, b, c, d);
  case in_type::fp16: return dispatch_tc5_out<in_type::fp16, in_type::fp16>(job, a, b, c, d);
  case in_type::e4m3:
    return b5 ? dispatch_tc5_out<in_type::e4m3, in_type::e5m2>(job, a, b, c, d)
              : dispatch_tc5_out<in_type::e4m3, in_type::e4m3>(job, a, b, c, d);
  default:
    return b5 ? dispatch_tc5_out<in_type::e5m2, in_type::e5m2>(job, a, b, c, d)
              : dispatch_tc5_out<in_type::e5m2, in_type::e4m3>(job, a, b, c, d);
  }
}

int dispatch(const probe_job &job, const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
             std::uint32_t *d) {
  if (job.op == instr::tcgen05) return dispatch_tc5(job, a, b, c, d);
  if (job.type != job.type_b) {
    const bool h = job.out == out_type::fp16;
    if (job.type == in_type::e4m3)
      return h ? launch_mixed<in_type::e4m3, in_type::e5m2, out_type::fp16>(job, a, b, c, d)
               : launch_mixed<in_type::e4m3, in_type::e5m2, out_type::fp32>(job, a, b, c, d);
    return h ? launch_mixed<in_type::e5m2, in_type::e4m3, out_type::fp16>(job, a, b, c, d)
             : launch_mixed<in_type::e5m2, in_type::e4m3, out_type::fp32>(job, a, b, c, d);
  }
  if (job.out == out_type::fp16)
    return job.type == in_type::e4m3   ? launch<in_type::e4m3, out_type::fp16>(job, a, b, c, d)
           : job.type == in_type::e5m2 ? launch<in_type::e5m2, out_type::fp16>(job, a, b, c, d)
                                       : launch<in_type::fp16, out_type::fp16>(job, a, b, c, d);
  switch (job.type) {
  case in_type::bf16: return launch<in_type::bf16, out_type::fp32>(job, a, b, c, d);
  case in_type::fp16: return launch<in_type::fp16, out_type::fp32>(job, a, b, c, d);
  case in_type::tf32: return launch<in_type::tf32, out_type::fp32>(job, a, b, c, d);
  case in_type::e4m3: return launch<in_type::e4m3, out_type::fp32>(job, a, b, c, d);
  default: return launch<in_type::e5m2, out_type::fp32>(job, a, b, c, d);
  }
}

// Copies nab elements of A and B and `lines` of C to the device, runs launch(a, b, c, d) (which
// returns a cudaError_t as int), waits, and copies `lines` results back to d_host. Returns the
// first CUDA error, or 0. No lines: nothing runs.
template <class T, class Launch>
int run_on_device(const T *a_host, const T *b_host, const T *c_host, T *d_host, std::size_t nab,
                  std::size_t lines, Launch launch) {
  if (lines == 0) return 0;
  T *da = nullptr, *db = nullptr, *dc = nullptr, *dd = nullptr;
  int err = 0;
  auto fail = [&](cudaError_t e) {
    if (e != cudaSuccess && err == 0) err = int(e);
    return e != cudaSuccess;
  };
  if (!fail(cudaMalloc(&da, nab * sizeof(T))) && !fail(cudaMalloc(&db, nab * sizeof(T))) &&
      !fail(cudaMalloc(&dc, lines * sizeof(T))) && !fail(cudaMalloc(&dd, lines * sizeof(T))) &&
      !fail(cudaMemcpy(da, a_host, nab * sizeof(T), cudaMemcpyHostToDevice)) &&
      !fail(cudaMemcpy(db, b_host, nab * sizeof(T), cudaMemcpyHostToDevice)) &&
      !fail(cudaMemcpy(dc, c_host, lines * sizeof(T), cudaMemcpyHostToDevice)) &&
      !fail(cudaMemset(dd, 0xa5, lines * sizeof(T)))) {
    if (!fail(cudaError_t(launch(da, db, dc, dd))) && !fail(cudaDeviceSynchronize()))
      fail(cudaMemcpy(d_host, dd, lines * sizeof(T), cudaMemcpyDeviceToHost));
  }
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
  return err;
}

} // namespace

int instr_k(in_type t) { return kin(t); }
int lines_per_issue(instr op) { return op == instr::tcgen05 ? kTc5N : op == instr::wgmma ? 64 : 8; }

bool supported(const probe_job &job, int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  const auto fp8 = [](in_type t) { return t == in_type::e4m3 || t == in_type::e5m2; };
  if (job.type != job.type_b) { // fp8 mixes: wgmma and tcgen05 (the mma.sync ones are probe16's)
    if (job.op == instr::mma_sync || !fp8(job.type) || !fp8(job.type_b)) return false;
  } else if (job.out == out_type::fp16 && job.type != in_type::fp16 && !fp8(job.type)) {
    return false;
  }
  if (job.k <= 0 || job.k % kin(job.type) != 0) return false;
  // This build carries sm_80 machine code (plus its PTX), sm_89 and sm_90a code (cuda/CMakeLists.txt).
  // wgmma exists only in the sm_90a code, which runs on compute capability 9.0 alone; the fp8
  // mma.sync in the sm_89 and sm_90a code (8.9, 9.0; the model has sm89 and sm90 rows).
  if (job.op == instr::wgmma) return cc == 90;
  // tcgen05: the sm_100a code (cc 10.0 only), kind::f16, kind::tf32, kind::f8f6f4 (fp8 operands).
  if (job.op == instr::tcgen05) return cc == 100;
  if (job.type == in_type::e4m3 || job.type == in_type::e5m2) return cc == 89 || cc == 90; // sm_89, sm_90a
  return cc >= 80;
}

int run_probe(const probe_job &job) {
  return run_on_device(job.a, job.b, job.c, job.d, job.lines * std::size_t(job.k), job.lines,
                       [&](const std::uint32_t *a, const std::uint32_t *b, const std::uint32_t *c,
                           std::uint32_t *d) { return dispatch(job, a, b, c, d); });
}

// ------------------------------------------------------------------------------------------------
// Issue-16 probes (kernels.hpp, probe16_op). Fragment layouts (PTX ISA "Matrix Fragments"), g =
// lane/4, t = lane%4:
//   m16n8k32 8-bit A: reg0 = row g, cols 4t..4t+3; reg2 = row g, cols 4t+16..; B: reg0 = rows 4t..4t+3
//     of col g, reg1 = rows 4t+16..4t+19 (kind::f8f6f4 with fp8 operands: the same layout).
//   m16n8k8 f16 A: reg0 = row g, cols 2t,2t+1 (reg1 row g+8 stays 0); B: reg0 = rows 2t,2t+1 of col g.
//   m16n8 f32 C/D: c0,c1 = row g, cols 2t,2t+1; f16 C/D: reg0 = row g, cols 2t (low), 2t+1 (high).
//   m8n8k4 f64 A: row g, col t; B: row t, col g; C/D: d0,d1 = row g, cols 2t,2t+1.
namespace {

// Ops with an f16 accumulator (C/D as two halves per register).
constexpr bool half16(probe16_op op) {
  return op == probe16_op::fp16_k8_f16 || op == probe16_op::e4m3_e5m2_f16 ||
         op == probe16_op::e5m2_e4m3_f16 || op == probe16_op::f8f6f4_e4m3_e4m3_f16 ||
         op == probe16_op::f8f6f4_e4m3_e5m2_f16 || op == probe16_op::f8f6f4_e5m2_e4m3_f16 ||
         op == probe16_op::f8f6f4_e5m2_e5m2_f16;
}

constexpr int k16(probe16_op op) {
  return op == probe16_op::f64                                              ? 4
         : (op == probe16_op::fp16_k8_f32 || op == probe16_op::fp16_k8_f16) ? 8
                                                                            : 32;
}

#define BF16EMU_MMA_K32(ptx)                                                                                 \
  asm volatile(ptx " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                \
               : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])                                              \
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]))
// The same with an f16 accumulator: two registers of two halves (row g, cols 2t and 2t+1 in reg0).
#define BF16EMU_MMA_K32_H(ptx)                                                                               \
  asm volatile(ptx " {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\n"                                            \
               : "+r"(acc[0]), "+r"(acc[1])                                                                  \
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]))

// The f32 view `f` of four accumulator registers, written back to them at the end of the scope
// unless H (an f16 accumulator, which the instruction updates in the registers in place).
template <bool H> struct f32_view {
  std::uint32_t (&acc)[4];
  float f[4] = {0, 0, 0, 0};
  __device__ explicit f32_view(std::uint32_t (&a)[4]) : acc(a) {
#if defined(__CUDA_ARCH__)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      f[i] = __uint_as_float(a[i]);
#endif
  }
  __device__ ~f32_view() {
#if defined(__CUDA_ARCH__)
    if constexpr (!H) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[i] = __float_as_uint(f[i]);
    }
#endif
  }
};

// One m16n8 instruction on 32-bit accumulator registers (f32 bits, or f16 pairs for fp16_k8_f16).
template <probe16_op Op>
__device__ __forceinline__ void issue16(std::uint32_t (&acc)[4], const std::uint32_t (&ra)[4],
                                        const std::uint32_t (&rb)[2]) {
  f32_view<half16(Op)> view(acc);
  [[maybe_unused]] float(&f)[4] = view.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750 // m16n8k8 .f16: sm_75 (the sm_75 code); the others below
  if constexpr (Op == probe16_op::fp16_k8_f16) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%0,%1};\n"
                 : "+r"(acc[0]), "+r"(acc[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]));
  } else if constexpr (Op == probe16_op::fp16_k8_f32) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]));
  } else if constexpr (Op == probe16_op::e4m3_e5m2 || Op == probe16_op::e5m2_e4m3 ||
                       Op == probe16_op::e4m3_e5m2_f16 || Op == probe16_op::e5m2_e4m3_f16) {
#if __CUDA_ARCH__ >= 890
    if constexpr (Op == probe16_op::e4m3_e5m2)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32");
    else if constexpr (Op == probe16_op::e5m2_e4m3)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32");
    else if constexpr (Op == probe16_op::e4m3_e5m2_f16)
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16");
    else
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16");
#else
    f[0] = f[1] = f[2] = f[3] = __uint_as_float(0xffffffffu); // not launched below sm_89
    if constexpr (half16(Op)) acc[0] = acc[1] = 0xffffffffu;
#endif
  } else {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
    if constexpr (Op == probe16_op::f8f6f4_e4m3_e4m3)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32");
    else if constexpr (Op == probe16_op::f8f6f4_e4m3_e5m2)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e5m2.f32");
    else if constexpr (Op == probe16_op::f8f6f4_e5m2_e4m3)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e4m3.f32");
    else if constexpr (Op == probe16_op::f8f6f4_e5m2_e5m2)
      BF16EMU_MMA_K32("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e5m2.e5m2.f32");
    else if constexpr (Op == probe16_op::f8f6f4_e4m3_e4m3_f16)
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e4m3.f16");
    else if constexpr (Op == probe16_op::f8f6f4_e4m3_e5m2_f16)
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e5m2.f16");
    else if constexpr (Op == probe16_op::f8f6f4_e5m2_e4m3_f16)
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e4m3.f16");
    else
      BF16EMU_MMA_K32_H("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e5m2.f16");
#else
    f[0] = f[1] = f[2] = f[3] = __uint_as_float(0xffffffffu); // sm_120a code only
    if constexpr (half16(Op)) acc[0] = acc[1] = 0xffffffffu;
#endif
  }
#endif
}
template <probe16_op Op>
__global__ void __launch_bounds__(256)
    mma_probe16(const std::uint64_t *__restrict__ a, const std::uint64_t *__restrict__ b,
                const std::uint64_t *__restrict__ c, std::uint64_t *__restrict__ d, int K,
                std::size_t lines) {
  constexpr int k = k16(Op);
  for_each_group8(lines, [&](std::size_t line, bool valid, int g, int t) { // row g of A, column g of B
    if constexpr (Op == probe16_op::f64) {
      double acc[2] = {0, 0};
      diag_c<false>(acc, c, line, valid, g, t);
      for (int k0 = 0; k0 < K; k0 += k) {
        const double x = __longlong_as_double((long long)e16(a, line, valid, K, k0 + t));
        const double y = __longlong_as_double((long long)e16(b, line, valid, K, k0 + t));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                     : "+d"(acc[0]), "+d"(acc[1])
                     : "d"(x), "d"(y));
#else
        acc[0] = acc[1] = x + y; // not launched
#endif
      }
      diag_d<false>(acc, d, line, valid, g, t);
    } else {
      std::uint32_t acc[4] = {0, 0, 0, 0};
      diag_c<half16(Op)>(acc, c, line, valid, g, t);
      for (int k0 = 0; k0 < K; k0 += k) {
        std::uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};
        if constexpr (k == 8) {
          ra[0] = pack16(a, line, valid, K, k0 + 2 * t, 16);
          rb[0] = pack16(b, line, valid, K, k0 + 2 * t, 16);
        } else {
          ra[0] = pack16(a, line, valid, K, k0 + 4 * t, 8);
          ra[2] = pack16(a, line, valid, K, k0 + 4 * t + 16, 8);
          rb[0] = pack16(b, line, valid, K, k0 + 4 * t, 8);
          rb[1] = pack16(b, line, valid, K, k0 + 4 * t + 16, 8);
        }
        issue16<Op>(acc, ra, rb);
      }
      diag_d<half16(Op)>(acc, d, line, valid, g, t);
    }
  });
}

template <probe16_op Op>
int launch16(const probe16_job &job, const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
             std::uint64_t *d) {
  const unsigned blocks = probe_blocks(job.lines);
  mma_probe16<Op><<<blocks, 256>>>(a, b, c, d, job.k, job.lines);
  return int(cudaGetLastError());
}

int dispatch16(const probe16_job &job, const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
               std::uint64_t *d) {
  switch (job.op) {
  case probe16_op::e4m3_e5m2: return launch16<probe16_op::e4m3_e5m2>(job, a, b, c, d);
  case probe16_op::e5m2_e4m3: return launch16<probe16_op::e5m2_e4m3>(job, a, b, c, d);
  case probe16_op::fp16_k8_f32: return launch16<probe16_op::fp16_k8_f32>(job, a, b, c, d);
  case probe16_op::fp16_k8_f16: return launch16<probe16_op::fp16_k8_f16>(job, a, b, c, d);
  case probe16_op::f8f6f4_e4m3_e4m3: return launch16<probe16_op::f8f6f4_e4m3_e4m3>(job, a, b, c, d);
  case probe16_op::f8f6f4_e4m3_e5m2: return launch16<probe16_op::f8f6f4_e4m3_e5m2>(job, a, b, c, d);
  case probe16_op::f8f6f4_e5m2_e4m3: return launch16<probe16_op::f8f6f4_e5m2_e4m3>(job, a, b, c, d);
  case probe16_op::f8f6f4_e5m2_e5m2: return launch16<probe16_op::f8f6f4_e5m2_e5m2>(job, a, b, c, d);
  case probe16_op::e4m3_e5m2_f16: return launch16<probe16_op::e4m3_e5m2_f16>(job, a, b, c, d);
  case probe16_op::e5m2_e4m3_f16: return launch16<probe16_op::e5m2_e4m3_f16>(job, a, b, c, d);
  case probe16_op::f8f6f4_e4m3_e4m3_f16: return launch16<probe16_op::f8f6f4_e4m3_e4m3_f16>(job, a, b, c, d);
  case probe16_op::f8f6f4_e4m3_e5m2_f16: return launch16<probe16_op::f8f6f4_e4m3_e5m2_f16>(job, a, b, c, d);
  case probe16_op::f8f6f4_e5m2_e4m3_f16: return launch16<probe16_op::f8f6f4_e5m2_e4m3_f16>(job, a, b, c, d);
  case probe16_op::f8f6f4_e5m2_e5m2_f16: return launch16<probe16_op::f8f6f4_e5m2_e5m2_f16>(job, a, b, c, d);
  default: return launch16<probe16_op::f64>(job, a, b, c, d);
  }
}

} // namespace

int probe16_instr_k(probe16_op op) { return k16(op); }

bool probe16_supported(const probe16_job &job, int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  if (job.k <= 0 || job.k % k16(job.op) != 0) return false;
  switch (job.op) {
  case probe16_op::e4m3_e5m2:
  case probe16_op::e5m2_e4m3:
  case probe16_op::e4m3_e5m2_f16:
  case probe16_op::e5m2_e4m3_f16: return cc == 89 || cc == 90; // the sm_89 and sm_90a code (as above)
  case probe16_op::f8f6f4_e4m3_e4m3:
  case probe16_op::f8f6f4_e4m3_e5m2:
  case probe16_op::f8f6f4_e5m2_e4m3:
  case probe16_op::f8f6f4_e5m2_e5m2:
  case probe16_op::f8f6f4_e4m3_e4m3_f16:
  case probe16_op::f8f6f4_e4m3_e5m2_f16:
  case probe16_op::f8f6f4_e5m2_e4m3_f16:
  case probe16_op::f8f6f4_e5m2_e5m2_f16: return cc == 120; // the sm_120a code (cuda/CMakeLists.txt)
  case probe16_op::fp16_k8_f32:
  case probe16_op::fp16_k8_f16: return cc >= 75; // the sm_75 code, and sm_80 (+ PTX) from 8.0 on
  default: return cc >= 80;
  }
}

int run_probe16(const probe16_job &job) {
  return run_on_device(job.a, job.b, job.c, job.d, job.lines * std::size_t(job.k), job.lines,
                       [&](const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
                           std::uint64_t *d) { return dispatch16(job, a, b, c, d); });
}

// ------------------------------------------------------------------------------------------------
// Issue-16 probes, second batch (kernels.hpp, mma_family). Fragment layouts (PTX ISA 9.7.14.5.6-10,
// "Matrix Fragments for mma.m16n8k4 / mma.m16n8k8 / mma.m16n8k16 with floating point type /
// mma.m16n8k16 with integer type / mma.m16n8k32"), g = lane/4, t = lane%4; only rows 0..7 of A
// carry lines, so the row g+8 registers of A stay zero:
//   m16n8k32 kind::f8f6f4: the 8-bit m16n8k32 layout above (A reg0 = row g, cols 4t..4t+3, reg2 =
//     cols 4t+16..; B reg0 = rows 4t..4t+3 of col g, reg1 = rows 4t+16..), every element in an
//     8-bit container (PTX ISA 9.7.14.5.14 "Multiply-and-Accumulate Instruction: mma",
//     Description: with .kind::f8f6f4 an .e2m1 element sits in the central 4 bits [5:2] of its
//     byte, an .e3m2 / .e2m3 element in the low 6 bits [5:0]; the padding bits are zero here).
//   m16n8k16 .e4m3/.e5m2 (the integer-type layout): A reg0 = row g, cols 4t..4t+3; B reg0 = rows
//     4t..4t+3 of col g.
//   m16n8k4 .tf32: A reg0 = (g, t); B reg0 = (t, g).
//   m16n8k8 .bf16: A reg0 = row g, cols 2t, 2t+1; B reg0 = rows 2t, 2t+1 of col g.
//   m16n8k8 / m16n8k16 .f64: A reg 2j = (g, t + 4j) (odd registers: row g+8); B reg j = (t + 4j, g).
//   C/D: .f32 / .f64 c0, c1 = row g, cols 2t, 2t+1; .f16 reg0 = row g, cols 2t (low), 2t+1 (high).
namespace {

constexpr int kfam(mma_family f) {
  switch (f) {
  case mma_family::f8f6f4_k32: return 32;
  case mma_family::fp8_k16:
  case mma_family::f64_k16: return 16;
  case mma_family::bf16_k8:
  case mma_family::f64_k8: return 8;
  case mma_family::tf32_k4:
  case mma_family::m8n8k4: return 4;
  default: return 0;
  }
}

// Two A registers (row g, row g+8), one B register.
#define BF16EMU_MMA_A2B1(ptx)                                                                                \
  asm volatile(ptx " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"                                         \
               : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])                                              \
               : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]))
#define BF16EMU_MMA_A2B1_H(ptx)                                                                              \
  asm volatile(ptx " {%0,%1}, {%2,%3}, {%4}, {%0,%1};\n"                                                     \
               : "+r"(acc[0]), "+r"(acc[1])                                                                  \
               : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]))
// The else-if arm of the (TA, TB) pair: MMA (f32 accumulator) or MMA_H (f16) issuing
// PREFIX.{f32,f16}.A.B.{f32,f16}.
#define BF16EMU_ISSUE_PAIR(MMA, MMA_H, prefix, A, B)                                                         \
  else if constexpr (TA == mma_elem::A && TB == mma_elem::B) {                                               \
    if constexpr (H)                                                                                         \
      MMA_H(prefix ".f16." #A "." #B ".f16");                                                                \
    else                                                                                                     \
      MMA(prefix ".f32." #A "." #B ".f32");                                                                  \
  }
#define BF16EMU_ISSUE_F8F6F4(A, B)                                                                           \
  BF16EMU_ISSUE_PAIR(BF16EMU_MMA_K32, BF16EMU_MMA_K32_H, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4",   \
                     A, B)
#define BF16EMU_ISSUE_FP8_K16(A, B)                                                                          \
  BF16EMU_ISSUE_PAIR(BF16EMU_MMA_A2B1, BF16EMU_MMA_A2B1_H, "mma.sync.aligned.m16n8k16.row.col", A, B)

// One m16n8 instruction of a 32-bit family on 32-bit accumulator registers (f32 bits, or f16 pairs).
template <mma_family F, mma_elem TA, mma_elem TB, bool H>
__device__ __forceinline__ void issue_fam(std::uint32_t (&acc)[4], const std::uint32_t (&ra)[4],
                                          const std::uint32_t (&rb)[2]) {
  f32_view<H> view(acc);
  [[maybe_unused]] float(&f)[4] = view.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (F == mma_family::tf32_k4) {
    BF16EMU_MMA_A2B1("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32");
  } else if constexpr (F == mma_family::bf16_k8) {
    BF16EMU_MMA_A2B1("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32");
  } else if constexpr (F == mma_family::fp8_k16) {
#if __CUDA_ARCH__ >= 890
    if constexpr (false) {
    }
    BF16EMU_FP8_PAIRS(BF16EMU_ISSUE_FP8_K16)
#else
    f[0] = f[1] = f[2] = f[3] = __uint_as_float(0xffffffffu); // not launched below sm_89
    if constexpr (H) acc[0] = acc[1] = 0xffffffffu;
#endif
  } else {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
    if constexpr (false) {
    }
    BF16EMU_F8F6F4_FP6FP4_PAIRS(BF16EMU_ISSUE_F8F6F4)
#else
    f[0] = f[1] = f[2] = f[3] = __uint_as_float(0xffffffffu); // sm_120a code only
    if constexpr (H) acc[0] = acc[1] = 0xffffffffu;
#endif
  }
#endif
}
#undef BF16EMU_ISSUE_F8F6F4
#undef BF16EMU_ISSUE_FP8_K16
#undef BF16EMU_ISSUE_PAIR
#undef BF16EMU_MMA_A2B1
#undef BF16EMU_MMA_A2B1_H
#undef BF16EMU_MMA_K32
#undef BF16EMU_MMA_K32_H

// One f64 instruction: x[j] = A(g, t + 4j), y[j] = B(t + 4j, g); A's row g+8 registers are zero.
template <mma_family F>
__device__ __forceinline__ void issue_f64(double (&acc)[4], const double (&x)[4], const double (&y)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const double z = 0;
  if constexpr (F == mma_family::f64_k8)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+d"(acc[0]), "+d"(acc[1]), "+d"(acc[2]), "+d"(acc[3])
                 : "d"(x[0]), "d"(z), "d"(x[1]), "d"(z), "d"(y[0]), "d"(y[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                 : "+d"(acc[0]), "+d"(acc[1]), "+d"(acc[2]), "+d"(acc[3])
                 : "d"(x[0]), "d"(z), "d"(x[1]), "d"(z), "d"(x[2]), "d"(z), "d"(x[3]), "d"(z), "d"(y[0]),
                   "d"(y[1]), "d"(y[2]), "d"(y[3]));
#else
  acc[0] = acc[1] = x[0] + y[0];            // f64 m16n8k8 / k16 need sm_90: not launched below it
#endif
}

template <mma_family F, mma_elem TA, mma_elem TB, bool H>
__global__ void __launch_bounds__(256)
    mma_fam_probe(const std::uint64_t *__restrict__ a, const std::uint64_t *__restrict__ b,
                  const std::uint64_t *__restrict__ c, std::uint64_t *__restrict__ d, int K,
                  std::size_t lines) {
  constexpr int k = kfam(F);
  for_each_group8(lines, [&](std::size_t line, bool valid, int g, int t) { // row g of A, column g of B
    if constexpr (F == mma_family::f64_k8 || F == mma_family::f64_k16) {
      double acc[4] = {0, 0, 0, 0};
      diag_c<false>(acc, c, line, valid, g, t);
      for (int k0 = 0; k0 < K; k0 += k) {
        double x[4] = {0, 0, 0, 0}, y[4] = {0, 0, 0, 0};
#pragma unroll
        for (int j = 0; j < k / 4; ++j) {
          x[j] = __longlong_as_double((long long)e16(a, line, valid, K, k0 + t + 4 * j));
          y[j] = __longlong_as_double((long long)e16(b, line, valid, K, k0 + t + 4 * j));
        }
        issue_f64<F>(acc, x, y);
      }
      diag_d<false>(acc, d, line, valid, g, t);
    } else {
      std::uint32_t acc[4] = {0, 0, 0, 0};
      diag_c<H>(acc, c, line, valid, g, t);
      for (int k0 = 0; k0 < K; k0 += k) {
        std::uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};
        if constexpr (F == mma_family::f8f6f4_k32) {
          ra[0] = pack8<TA>(a, line, valid, K, k0 + 4 * t);
          ra[2] = pack8<TA>(a, line, valid, K, k0 + 4 * t + 16);
          rb[0] = pack8<TB>(b, line, valid, K, k0 + 4 * t);
          rb[1] = pack8<TB>(b, line, valid, K, k0 + 4 * t + 16);
        } else if constexpr (F == mma_family::fp8_k16) {
          ra[0] = pack8<TA>(a, line, valid, K, k0 + 4 * t);
          rb[0] = pack8<TB>(b, line, valid, K, k0 + 4 * t);
        } else if constexpr (F == mma_family::bf16_k8) {
          ra[0] = pack16(a, line, valid, K, k0 + 2 * t, 16);
          rb[0] = pack16(b, line, valid, K, k0 + 2 * t, 16);
        } else { // tf32: the FP32 register bits of the 19-bit pattern
          ra[0] = std::uint32_t(e16(a, line, valid, K, k0 + t) & 0x7ffffu) << 13;
          rb[0] = std::uint32_t(e16(b, line, valid, K, k0 + t) & 0x7ffffu) << 13;
        }
        issue_fam<F, TA, TB, H>(acc, ra, rb);
      }
      diag_d<H>(acc, d, line, valid, g, t);
    }
  });
}

// m8n8k4 .f16 (PTX ISA 9.7.14.5.1 "Matrix Fragments for mma.m8n8k4 with .f16 floating point
// type"): a warp computes four independent 8x8x4 products, computation q on lanes 4q..4q+3 (rows
// 0..3) and 16+4q..16+4q+3 (rows 4..7); a lane's row is r = lane%4 (+4 from lane 16). A .row:
// a0..a3 = A[r][0..3]; B .col: b0..b3 = B[0..3][r]: every thread holds its own line's A row and
// B column. C/D .f16: c_i = (r, i); .f32: row (lane&1) + (i&2) (+4 from lane 16), col (i&4) +
// (lane&2) + (i&1). 32 lines per warp, line 8q + row on the diagonal of computation q's tile.
// HC, HD: C and D in f16 (both, or C only: the first instruction of a line is .f32.f16.f16.f16 on
// the line's f16 C, the next ones .f32.f16.f16.f32 on the D before them, as tc::c_as_out reads C).
template <bool HC, bool HD>
__global__ void __launch_bounds__(256)
    mma_m8n8k4_probe(const std::uint64_t *__restrict__ a, const std::uint64_t *__restrict__ b,
                     const std::uint64_t *__restrict__ c, std::uint64_t *__restrict__ d, int K,
                     std::size_t lines) {
  static_assert(HC || !HD, "D f16 with C f32: ptxas rejects it");
  const int lane = threadIdx.x & 31, q = (lane >> 2) & 3, hi = lane >> 4, r = (lane & 3) + 4 * hi;
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::size_t nwarps = (std::size_t(gridDim.x) * blockDim.x) >> 5;
  // The tile element that C/D register i of this lane holds (h: the f16 layout).
  const auto row_of = [&](bool h, int i) { return h ? r : (lane & 1) + (i & 2) + 4 * hi; };
  const auto col_of = [&](bool h, int i) { return h ? i : (i & 4) + (lane & 2) + (i & 1); };
  for (std::size_t base = warp * 32; base < lines; base += nwarps * 32) {
    const std::size_t first = base + 8 * q, line = first + r; // this lane's line (A row r, B column r)
    const bool valid = line < lines;
    std::uint32_t cin[8] = {0, 0, 0, 0, 0, 0, 0, 0}; // C: f32 bits, or (HC) four f16x2 registers
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (row_of(HC, i) == col_of(HC, i) && first + row_of(HC, i) < lines) {
        const std::uint64_t ci = c[first + row_of(HC, i)];
        if constexpr (HC)
          cin[i / 2] |= std::uint32_t(ci & 0xffffu) << (16 * (i % 2));
        else
          cin[i] = std::uint32_t(ci);
      }
    std::uint32_t acc[8]; // D, in place from the first instruction on where C has D's format
#pragma unroll
    for (int i = 0; i < 8; ++i)
      acc[i] = HC == HD ? cin[i] : 0u;
    for (int k0 = 0; k0 < K; k0 += 4) {
      const std::uint32_t ra[2] = {pack16(a, line, valid, K, k0, 16), pack16(a, line, valid, K, k0 + 2, 16)};
      const std::uint32_t rb[2] = {pack16(b, line, valid, K, k0, 16), pack16(b, line, valid, K, k0 + 2, 16)};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
      if constexpr (HD)
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16 {%0,%1,%2,%3}, {%4,%5}, {%6,%7}, "
                     "{%0,%1,%2,%3};\n"
                     : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                     : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]));
      else if (HC && k0 == 0)
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11}, {%12,%13,%14,%15};\n"
                     : "=r"(acc[0]), "=r"(acc[1]), "=r"(acc[2]), "=r"(acc[3]), "=r"(acc[4]), "=r"(acc[5]),
                       "=r"(acc[6]), "=r"(acc[7])
                     : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]), "r"(cin[0]), "r"(cin[1]), "r"(cin[2]),
                       "r"(cin[3]));
      else
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11}, {%0,%1,%2,%3,%4,%5,%6,%7};\n"
                     : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),
                       "+r"(acc[6]), "+r"(acc[7])
                     : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]));
#else
      acc[0] = ra[0] ^ rb[0] ^ 0xffffffffu; // the sm_75 code only: not launched elsewhere
#endif
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (row_of(HD, i) == col_of(HD, i) && first + row_of(HD, i) < lines)
        d[first + row_of(HD, i)] = HD ? (acc[i / 2] >> (16 * (i % 2))) & 0xffffu : acc[i];
  }
}

template <mma_family F, mma_elem TA, mma_elem TB, bool H>
int launch_fam(const mma_job &job, const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
               std::uint64_t *d) {
  const unsigned blocks = probe_blocks(job.lines);
  if constexpr (F == mma_family::m8n8k4)
    job.c16 ? mma_m8n8k4_probe<true, false><<<blocks, 256>>>(a, b, c, d, job.k, job.lines)
            : mma_m8n8k4_probe<H, H><<<blocks, 256>>>(a, b, c, d, job.k, job.lines);
  else
    mma_fam_probe<F, TA, TB, H><<<blocks, 256>>>(a, b, c, d, job.k, job.lines);
  return int(cudaGetLastError());
}

int dispatch_fam(const mma_job &job, const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
                 std::uint64_t *d) {
  using E = mma_elem;
  using M = mma_family;
  switch (job.fam) {
  case M::tf32_k4: return launch_fam<M::tf32_k4, E::tf32, E::tf32, false>(job, a, b, c, d);
  case M::bf16_k8: return launch_fam<M::bf16_k8, E::bf16, E::bf16, false>(job, a, b, c, d);
  case M::f64_k8: return launch_fam<M::f64_k8, E::f64, E::f64, false>(job, a, b, c, d);
  case M::f64_k16: return launch_fam<M::f64_k16, E::f64, E::f64, false>(job, a, b, c, d);
  case M::m8n8k4:
    return job.out16 ? launch_fam<M::m8n8k4, E::f16, E::f16, true>(job, a, b, c, d)
                     : launch_fam<M::m8n8k4, E::f16, E::f16, false>(job, a, b, c, d);
#define BF16EMU_LAUNCH(FAM, A, B)                                                                            \
  if (job.a == E::A && job.b == E::B)                                                                        \
    return job.out16 ? launch_fam<M::FAM, E::A, E::B, true>(job, a, b, c, d)                                 \
                     : launch_fam<M::FAM, E::A, E::B, false>(job, a, b, c, d);
#define BF16EMU_LAUNCH_FP8(A, B) BF16EMU_LAUNCH(fp8_k16, A, B)
#define BF16EMU_LAUNCH_F8F6F4(A, B) BF16EMU_LAUNCH(f8f6f4_k32, A, B)
  case M::fp8_k16: BF16EMU_FP8_PAIRS(BF16EMU_LAUNCH_FP8) break;
  case M::f8f6f4_k32: BF16EMU_F8F6F4_FP6FP4_PAIRS(BF16EMU_LAUNCH_F8F6F4) break;
#undef BF16EMU_LAUNCH_F8F6F4
#undef BF16EMU_LAUNCH_FP8
#undef BF16EMU_LAUNCH
  default: break;
  }
  return int(cudaErrorInvalidValue); // a family / format pair no kernel issues
}

} // namespace

int mma_family_k(mma_family f) { return kfam(f); }

bool mma_supported(const mma_job &job, int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  if (kfam(job.fam) == 0 || job.k <= 0 || job.k % kfam(job.fam) != 0) return false;
  if (job.c16 && (job.fam != mma_family::m8n8k4 || job.out16)) return false; // the one C/D mix
  switch (job.fam) {
  case mma_family::f8f6f4_k32:
    return cc == 120; // the sm_120a code
  // PTX ISA: sm_89+. The sm_80 code (and its compute_80 PTX) cannot carry it; of the devices the
  // build has code for (8.9, 9.0, 10.0, 12.0) the model has presets on sm89 and sm120.
  case mma_family::fp8_k16: return cc == 89 || cc == 120;
  case mma_family::f64_k8:
  case mma_family::f64_k16:
    return cc == 90; // PTX ISA: sm_90; the sm_90a code
  // The sm_75 code (nvcc 13 has no sm_70); the model has no m8n8k4 preset past sm75.
  case mma_family::m8n8k4: return cc == 75;
  default: return cc >= 80;
  }
}

int run_mma(const mma_job &job) {
  return run_on_device(job.ab, job.bb, job.c, job.d, job.lines * std::size_t(job.k), job.lines,
                       [&](const std::uint64_t *a, const std::uint64_t *b, const std::uint64_t *c,
                           std::uint64_t *d) { return dispatch_fam(job, a, b, c, d); });
}

} // namespace bf16emu::gpu
