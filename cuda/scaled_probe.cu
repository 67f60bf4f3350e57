// Block-scaled tensor-core probes (issue 16; kernels.hpp, probe_scaled_job): sm_120a
// mma.sync ... .block_scale with f32 out. The host model is tc::scaled_dot on the sm120 presets of
// include/bf16emu/tc/scaled.hpp. Compile-checked only: nothing here has run on a device yet.
//
// PTX ISA sources (the section numbers of PTX ISA 9.x):
//   9.7.14.3 "Block Scaling for mma.sync": D = (A * scale_A) * (B * scale_B) + C; scale_A is
//     M x SFA_N (one factor per chunk of a row of A), scale_B SFB_M x N; scale_vec::1X / 2X / 4X
//     give 1 / 2 / 4 chunks per instruction. Valid kinds: mxf8f6f4 (ue8m0, 1X), mxf4 (ue8m0, 2X),
//     mxf4nvf4 (ue8m0 2X or 4X; ue4m3 4X) (Table 36). ptxas 13.0 refuses mxf4nvf4 with ue8m0 at
//     scale_vec::4X for sm_120a ("Illegal modifier"), the one form the model's sm120 mxf4nvf4
//     ue8m0 preset describes (vec 16), so no kernel issues it; mxf4nvf4 ue8m0 at 2X assembles but
//     the model has no preset for it. Selectors (Table 37): thread-id-a picks the
//     thread pair of each quad that supplies SF_A (0: lanes with lane%4 in {0, 1}; 1: {2, 3});
//     thread-id-b the one thread per quad (lane%4 == thread-id-b) that supplies SF_B; byte-id
//     picks the byte (1X), the byte pair (2X: 0 low pair, 2 high pair) or must be 0 (4X: all four
//     bytes) of scale-a-data / scale-b-data.
//   Which row a lane of the pair scales (Figure 43) is read here as: lane 4g + 2*tid scales row g,
//   lane 4g + 2*tid + 1 row g + 8 (tid = thread-id-a); every lane of quad g supplies column g of B
//   (Figure 44). Only rows 0..7 carry lines (row g of A is line g of the group), so each lane sets
//   its scale register as both thread-id values read it: lanes with lane%2 == 0 hold their own
//   line's SF_A, the others the unit scale (rows 8..15 are zero products); every lane holds its
//   line's SF_B. Within a register, byte j is the j-th chunk of the instruction's k (the k order
//   of Figure 45). The selectors used are all 0.
//   9.7.14.5 "Matrix Fragments for mma.m16n8k32" (8-bit elements) and "... mma.m16n8k64" (4-bit
//   e2m1), g = lane/4, t = lane%4:
//     k32: A reg0 = row g, k 4t..4t+3 (one element per byte, lowest k in the low byte), reg2 =
//          row g, k 16+4t..; B reg0 = col g, k 4t..4t+3, reg1 = k 16+4t..;
//     k64: A reg0 = row g, k 8t..8t+7 (one e2m1 per nibble, lowest k in the low nibble), reg2 =
//          row g, k 32+8t..; B reg0 = col g, k 8t..8t+7, reg1 = k 32+8t..;
//     f32 C/D: c0, c1 = row g, cols 2t, 2t+1; c2, c3 = row g+8 (reg1 and reg3 of A stay zero).
//   Under kind::mxf8f6f4 every element takes an 8-bit container; the fp6 types (e3m2, e2m3) sit
//   in bits 5:0 and e2m1 in bits 5:2 (the sub-byte packing of the f8f6f4 kinds, 9.7.14.2 "Matrix
//   Data-types" and the tcgen05 packing figures 9.7.16.10.4); kind::mxf4 / mxf4nvf4 pack e2m1 two
//   per byte.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels.hpp"
#include "probe_device.cuh"

namespace bf16emu::gpu {
namespace {

constexpr int sk_k(scaled_op op) { return op == scaled_op::mxf8f6f4 ? 32 : 64; }
constexpr int sk_vec(scaled_op op) { return op == scaled_op::mxf4nvf4_ue4m3 ? 16 : 32; }
// The unit scale factor: ue8m0 2^0, ue4m3 1.0.
constexpr std::uint32_t sk_one(scaled_op op) { return op == scaled_op::mxf4nvf4_ue4m3 ? 0x38u : 0x7fu; }

// The n scale factors of one k-step of a line as the bytes of a scale register (byte j = chunk j).
__device__ __forceinline__ std::uint32_t pack_scales(const std::uint8_t *s, bool valid, int n,
                                                     std::uint32_t one) {
  std::uint32_t r = 0;
  for (int j = 0; j < n; ++j)
    r |= (valid ? std::uint32_t(s[j]) : one) << (8 * j);
  return r;
}

// The instruction text of each op; the mxf8f6f4 one for the A and B types.
#define BF16EMU_BS_OPERANDS                                                                                  \
  " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {%12, %12}, %11, {%12, %12};\n"
#define BF16EMU_BS_ASM(INSTR)                                                                                \
  asm volatile(INSTR BF16EMU_BS_OPERANDS                                                                     \
               : "+f"(f[0]), "+f"(f[1]), "+f"(f[2]), "+f"(f[3])                                              \
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(sa), "r"(sb),   \
                 "h"(zero))
#define BF16EMU_BS_K32(A, B)                                                                                 \
  BF16EMU_BS_ASM("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32." #A "." #B \
                 ".f32.ue8m0")
#define BF16EMU_BS_K32_B(A)                                                                                  \
  if constexpr (TB == mma_elem::e4m3)                                                                        \
    BF16EMU_BS_K32(A, e4m3);                                                                                 \
  else if constexpr (TB == mma_elem::e5m2)                                                                   \
    BF16EMU_BS_K32(A, e5m2);                                                                                 \
  else if constexpr (TB == mma_elem::e3m2)                                                                   \
    BF16EMU_BS_K32(A, e3m2);                                                                                 \
  else if constexpr (TB == mma_elem::e2m3)                                                                   \
    BF16EMU_BS_K32(A, e2m3);                                                                                 \
  else                                                                                                       \
    BF16EMU_BS_K32(A, e2m1)

// One block-scaled instruction on the lane's fragments (f: the f32 accumulator, in place).
template <scaled_op Op, mma_elem TA, mma_elem TB>
__device__ __forceinline__ void issue_scaled(float (&f)[4], const std::uint32_t (&ra)[4],
                                             const std::uint32_t (&rb)[2], std::uint32_t sa,
                                             std::uint32_t sb) {
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL))
  const std::uint16_t zero = 0; // byte-id and thread-id selectors
  if constexpr (Op == scaled_op::mxf4)
    BF16EMU_BS_ASM(
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0");
  else if constexpr (Op == scaled_op::mxf4nvf4_ue4m3)
    BF16EMU_BS_ASM(
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3");
  else if constexpr (TA == mma_elem::e4m3) {
    BF16EMU_BS_K32_B(e4m3);
  } else if constexpr (TA == mma_elem::e5m2) {
    BF16EMU_BS_K32_B(e5m2);
  } else if constexpr (TA == mma_elem::e3m2) {
    BF16EMU_BS_K32_B(e3m2);
  } else if constexpr (TA == mma_elem::e2m3) {
    BF16EMU_BS_K32_B(e2m3);
  } else {
    BF16EMU_BS_K32_B(e2m1);
  }
#else
  (void)ra, (void)rb, (void)sa, (void)sb;
  f[0] = f[1] = f[2] = f[3] = __uint_as_float(0xffffffffu); // sm_120a code only; not launched elsewhere
#endif
}
#undef BF16EMU_BS_K32_B
#undef BF16EMU_BS_K32
#undef BF16EMU_BS_ASM
#undef BF16EMU_BS_OPERANDS

// Each warp takes groups of 8 lines (line = group base + g: row g of A, column g of B, D[g][g]).
template <scaled_op Op, mma_elem TA, mma_elem TB>
__global__ void __launch_bounds__(256)
    mma_block_scaled(const std::uint64_t *__restrict__ a, const std::uint64_t *__restrict__ b,
                     const std::uint64_t *__restrict__ c, const std::uint8_t *__restrict__ sa,
                     const std::uint8_t *__restrict__ sb, std::uint64_t *__restrict__ d, int K,
                     std::size_t lines) {
  constexpr int k = sk_k(Op), vec = sk_vec(Op), per = k / vec;
  const int S = K / vec;                                                   // scale factors per line
  for_each_group8(lines, [&](std::size_t line, bool valid, int g, int t) { // row g of A, column g of B
    const int lane = threadIdx.x & 31;
    const std::uint8_t *sarow = sa + (valid ? line * std::size_t(S) : 0),
                       *sbrow = sb + (valid ? line * std::size_t(S) : 0);
    float f[4] = {0, 0, 0, 0};
    diag_c<false>(f, c, line, valid, g, t);
    for (int k0 = 0; k0 < K; k0 += k) {
      std::uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};
      if constexpr (k == 32) {
        ra[0] = pack8<TA>(a, line, valid, K, k0 + 4 * t);
        ra[2] = pack8<TA>(a, line, valid, K, k0 + 16 + 4 * t);
        rb[0] = pack8<TB>(b, line, valid, K, k0 + 4 * t);
        rb[1] = pack8<TB>(b, line, valid, K, k0 + 16 + 4 * t);
      } else { // e2m1 nibbles, lowest k in the low nibble
        ra[0] = pack16(a, line, valid, K, k0 + 8 * t, 4);
        ra[2] = pack16(a, line, valid, K, k0 + 32 + 8 * t, 4);
        rb[0] = pack16(b, line, valid, K, k0 + 8 * t, 4);
        rb[1] = pack16(b, line, valid, K, k0 + 32 + 8 * t, 4);
      }
      const int s0 = k0 / vec;
      const std::uint32_t rsa = pack_scales(sarow + s0, valid && (lane & 1) == 0, per, sk_one(Op));
      const std::uint32_t rsb = pack_scales(sbrow + s0, valid, per, sk_one(Op));
      issue_scaled<Op, TA, TB>(f, ra, rb, rsa, rsb);
    }
    diag_d<false>(f, d, line, valid, g, t);
  });
}

// Device copies of the job's arrays; freed on scope exit. err: the first CUDA error (0: none).
struct device_arrays {
  void *p[6] = {};
  int err = 0;
  bool check(cudaError_t e) {
    if (e != cudaSuccess && err == 0) err = int(e);
    return err == 0;
  }
  template <class T> T *upload(int slot, const T *host, std::size_t n) {
    if (err == 0 && check(cudaMalloc(&p[slot], std::max<std::size_t>(n, 1) * sizeof(T))) && n)
      check(cudaMemcpy(p[slot], host, n * sizeof(T), cudaMemcpyHostToDevice));
    return static_cast<T *>(p[slot]);
  }
  ~device_arrays() {
    for (void *q : p)
      cudaFree(q);
  }
};

template <scaled_op Op, mma_elem TA, mma_elem TB> int launch_scaled(const probe_scaled_job &job) {
  const std::size_t nab = job.lines * std::size_t(job.k), ns = job.lines * std::size_t(job.k / sk_vec(Op));
  device_arrays m;
  const std::uint64_t *a = m.upload(0, job.a, nab), *b = m.upload(1, job.b, nab),
                      *c = m.upload(2, job.c, job.lines);
  const std::uint8_t *sa = m.upload(3, job.sa, ns), *sb = m.upload(4, job.sb, ns);
  if (m.err == 0 && m.check(cudaMalloc(&m.p[5], job.lines * sizeof(std::uint64_t)))) {
    auto *d = static_cast<std::uint64_t *>(m.p[5]);
    mma_block_scaled<Op, TA, TB><<<probe_blocks(job.lines), 256>>>(a, b, c, sa, sb, d, job.k, job.lines);
    if (m.check(cudaGetLastError()) && m.check(cudaDeviceSynchronize()))
      m.check(cudaMemcpy(job.d, d, job.lines * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  }
  return m.err;
}

template <mma_elem TA> int launch_mx_b(const probe_scaled_job &job) {
  switch (job.tb) {
  case mma_elem::e4m3: return launch_scaled<scaled_op::mxf8f6f4, TA, mma_elem::e4m3>(job);
  case mma_elem::e5m2: return launch_scaled<scaled_op::mxf8f6f4, TA, mma_elem::e5m2>(job);
  case mma_elem::e3m2: return launch_scaled<scaled_op::mxf8f6f4, TA, mma_elem::e3m2>(job);
  case mma_elem::e2m3: return launch_scaled<scaled_op::mxf8f6f4, TA, mma_elem::e2m3>(job);
  default: return launch_scaled<scaled_op::mxf8f6f4, TA, mma_elem::e2m1>(job);
  }
}

} // namespace

int scaled_instr_k(scaled_op op) { return sk_k(op); }
int scaled_vec(scaled_op op) { return sk_vec(op); }

bool probe_scaled_supported(const probe_scaled_job &job, int cc_major, int cc_minor) {
  if (job.op == scaled_op::none || job.k <= 0 || job.k % sk_k(job.op) != 0) return false;
  if (job.op != scaled_op::mxf8f6f4 && (job.ta != mma_elem::e2m1 || job.tb != mma_elem::e2m1)) return false;
  return cc_major * 10 + cc_minor == 120; // the sm_120a code (cuda/CMakeLists.txt)
}

int run_probe_scaled(const probe_scaled_job &job) {
  if (job.lines == 0) return 0;
  constexpr mma_elem e2m1 = mma_elem::e2m1;
  switch (job.op) {
  case scaled_op::mxf4: return launch_scaled<scaled_op::mxf4, e2m1, e2m1>(job);
  case scaled_op::mxf4nvf4_ue4m3: return launch_scaled<scaled_op::mxf4nvf4_ue4m3, e2m1, e2m1>(job);
  default: break;
  }
  switch (job.ta) {
  case mma_elem::e4m3: return launch_mx_b<mma_elem::e4m3>(job);
  case mma_elem::e5m2: return launch_mx_b<mma_elem::e5m2>(job);
  case mma_elem::e3m2: return launch_mx_b<mma_elem::e3m2>(job);
  case mma_elem::e2m3: return launch_mx_b<mma_elem::e2m3>(job);
  default: return launch_mx_b<e2m1>(job);
  }
}

} // namespace bf16emu::gpu
