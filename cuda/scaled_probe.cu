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

constexpr int sk_k(scaled_op op) { return op == scaled_op::mxf8f6f4 || op == scaled_op::f8f6f4 ? 32 : 64; }
constexpr int sk_vec(scaled_op op) {
  return !block_scaled(op) ? 0 : op == scaled_op::mxf4nvf4_ue4m3 || op == scaled_op::mxf4nvf4_ue8m0 ? 16 : 32;
}
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

// ------------------------------------------------------------------------------------------------
// sm_100a: tcgen05.mma.cta_group::1.kind::{mxf8f6f4, mxf4, mxf4nvf4}.block_scale with f32 D and,
// without scale factors, kind::f8f6f4 with f32 or f16 D (the fp6/fp4 mixes), M = 128, N = 128:
// 128 lines per instruction, line t = row t of A, row t of B^T (column t of B), D[t][t].
// The sequence around the instruction (tensor memory, descriptors, commit and wait, C and D on the
// diagonal) is the kind::f16 / tf32 / f8f6f4 probe's (probe_kernels.cu, probe_device.cuh). Never
// run on a device: see docs/gpu-validation.md. PTX ISA 9.x sources and what is assumed:
//   Instruction descriptor, 9.7.16.4.2 Table 43 (mxf8f6f4) and Table 44 (mxf4, mxf4nvf4): SFB_ID
//     bits 4-5 and SFA_ID bits 29-30 (both 0 here); atype 7-9, btype 10-12 (mxf8f6f4: E4M3 0,
//     E5M2 1, E2M3 3, E3M2 4, E2M1 5; mxf4*: E2M1 1, btype in 10-11); K-major (bits 15, 16 = 0);
//     N >> 3 at 17-22; scale type bit 23 (UE8M0 1, UE4M3 0); M >> 7 at 27-28; bit 31 (mxf4*) 0 =
//     dense K 64. D is f32 (the block-scaled descriptors have no dtype field). kind::f8f6f4:
//     Table 42 (dtype bits 4-5, F16 0, F32 1; M >> 4 at 24-28), an f16 D in the low half of its
//     32-bit column as in the probe above.
//   Operands in shared memory, K-major, no swizzle, the canonical layout of the probe above (two
//     16-byte core-matrix rows per operand row and instruction). Packing, 9.7.16.10.4.4 and .6:
//     kind::mxf4 / mxf4nvf4 pack two e2m1 per byte, no padding (32 values per 16 bytes);
//     kind::mxf8f6f4 packs 16 fp6 or fp4 values contiguously and pads them to 16 bytes (the
//     .b6x16_p32 / .b4x16_p64 formats of 5.5.1.1.1: 96 or 64 bits of data, then the padding);
//     fp8 takes a byte per value. Assumed: within a 16-byte row the values run from bit 0 up in
//     increasing k (the figures give it as a picture), the padding is zero, and kind::f8f6f4
//     takes its fp6/fp4 operands in the same padded form (the packing sections name the mx kinds).
//   Scale factors, 9.7.16.10.7: scale_A is M x SFA_N, scale_B SFB_M x N, with 1 / 2 / 4 factors
//     per row (scale_vec::1X / 2X / 4X, Table 56) in the bytes of a 32-bit tensor-memory word
//     (SF_ID 0: byte 0 for 1X, bytes 0-1 for 2X, all four for 4X; chunk j in byte j, assumed), and
//     "duplicated to all 32 lane partitions". Assumed, from that sentence and the 4x32dp128bit
//     copies that fill them (tcgen05.cp .32x128b.warpx4): row r of scale_A (column r of scale_B)
//     sits in lane r % 32 of every 32-lane partition, column base + r / 32, so each scale matrix
//     takes 4 columns. Each warp writes its own partition's copy with tcgen05.st .32x32b.x4.
//   A wrong assumption shows on a device as lines whose D ignores or misplaces a scale factor;
//   the probe's vectors give every line and chunk its own factors (cuda/vectors.cpp).
constexpr int kTc5Lines = 128;                              // M = N = 128
constexpr int kSfaCol = 128, kSfbCol = 160, kTc5Cols = 256; // D in columns 0..127

// Descriptor type codes (Tables 42 to 44): kind::f8f6f4 and mxf8f6f4 E4M3 0, E5M2 1, E2M3 3,
// E3M2 4, E2M1 5; mxf4 / mxf4nvf4 E2M1 1.
template <scaled_op Op> constexpr std::uint32_t bs_type(mma_elem e) {
  if (Op != scaled_op::mxf8f6f4 && Op != scaled_op::f8f6f4) return 1;
  return e == mma_elem::e4m3   ? 0
         : e == mma_elem::e5m2 ? 1
         : e == mma_elem::e2m3 ? 3
         : e == mma_elem::e3m2 ? 4
                               : 5;
}
// kind::f8f6f4 (Table 42): dtype bits 4-5 (F16 0, F32 1), M >> 4 at 24-28; the block-scaled kinds
// (Tables 43, 44): scale type bit 23 (UE8M0 1, UE4M3 0), M >> 7 at 27-28, SF IDs 0.
template <scaled_op Op, mma_elem TA, mma_elem TB, bool H> constexpr std::uint32_t bs_idesc() {
  constexpr std::uint32_t ab =
      (bs_type<Op>(TA) << 7) | (bs_type<Op>(TB) << 10) | (std::uint32_t(kTc5Lines >> 3) << 17);
  if constexpr (Op == scaled_op::f8f6f4)
    return ab | ((H ? 0u : 1u) << 4) | (std::uint32_t(kTc5Lines >> 4) << 24);
  constexpr std::uint32_t ue8m0 = Op == scaled_op::mxf4nvf4_ue4m3 ? 0u : 1u;
  return ab | (ue8m0 << 23) | (std::uint32_t(kTc5Lines >> 7) << 27);
}
static_assert(bs_idesc<scaled_op::mxf8f6f4, mma_elem::e4m3, mma_elem::e2m1, false>() == 0x08a01400u,
              "mxf8f6f4 e4m3 x e2m1, ue8m0, M128 N128");
static_assert(bs_idesc<scaled_op::mxf4nvf4_ue4m3, mma_elem::e2m1, mma_elem::e2m1, false>() == 0x08200480u,
              "mxf4nvf4 e2m1, ue4m3, M128 N128");
static_assert(bs_idesc<scaled_op::f8f6f4, mma_elem::e3m2, mma_elem::e2m1, true>() == 0x08201600u,
              "f8f6f4 e3m2 x e2m1 -> f16, M128 N128");

// Bits per value in shared memory, and values per 16-byte core-matrix row.
template <scaled_op Op, mma_elem E> constexpr int smem_bits() {
  return Op != scaled_op::mxf8f6f4 && Op != scaled_op::f8f6f4 ? 4
         : E == mma_elem::e4m3 || E == mma_elem::e5m2         ? 8
         : E == mma_elem::e2m1                                ? 4
                                                              : 6;
}
constexpr int per_row16(scaled_op op) { return sk_k(op) / 2; }

// Operand row `row` (line `line`) for k in [k0, k0 + 2n): two 16-byte core-matrix rows of n values
// of `bits` bits each from bit 0 up, the rest of each 16 bytes zero.
template <int n, int bits>
__device__ __forceinline__ void fill_packed(unsigned char *s, const std::uint64_t *p, std::size_t line,
                                            bool valid, int K, int k0, int row) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    std::uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < n; ++i) {
      const auto v = std::uint32_t(e16(p, line, valid, K, k0 + half * n + i) & ((1u << bits) - 1));
      const int pos = i * bits;
      w[pos >> 5] |= v << (pos & 31);
      if ((pos & 31) + bits > 32) w[(pos >> 5) + 1] |= v >> (32 - (pos & 31));
    }
    *reinterpret_cast<uint4 *>(s + kmajor_offset(row, half)) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// tcgen05.st .32x32b.x4 (9.7.16.8.4): lane l of warp w writes columns taddr.. taddr + 3 of lane 32w + l.
__device__ __forceinline__ void tc5_put4(std::uint32_t taddr, const std::uint32_t (&r)[4]) {
#ifdef BF16EMU_TC5
  asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(taddr), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  (void)taddr, (void)r;
#endif
}

#define BF16EMU_TC5_BS(KIND)                                                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\ntcgen05.mma.cta_group::1.kind::" KIND                \
               " [%0], %1, %2, %3, [%4], [%5], p;\n}\n" ::"r"(dt),                                           \
               "l"(ad), "l"(bd), "r"(idesc), "r"(sfa), "r"(sfb)                                              \
               : "memory")
// One instruction, accumulating into D (enable-input-d = 1).
template <scaled_op Op>
__device__ __forceinline__ void tc5_issue_scaled(std::uint32_t dt, std::uint64_t ad, std::uint64_t bd,
                                                 std::uint32_t idesc, std::uint32_t sfa, std::uint32_t sfb) {
#ifdef BF16EMU_TC5
  if constexpr (Op == scaled_op::f8f6f4)
    BF16EMU_TC5_MMA("f8f6f4", dt, ad, bd, idesc);
  else if constexpr (Op == scaled_op::mxf8f6f4)
    BF16EMU_TC5_BS("mxf8f6f4.block_scale.scale_vec::1X");
  else if constexpr (Op == scaled_op::mxf4)
    BF16EMU_TC5_BS("mxf4.block_scale.scale_vec::2X");
  else
    BF16EMU_TC5_BS("mxf4nvf4.block_scale.scale_vec::4X");
#else
  (void)dt, (void)ad, (void)bd, (void)idesc, (void)sfa, (void)sfb;
#endif
}
#undef BF16EMU_TC5_BS

template <scaled_op Op, mma_elem TA, mma_elem TB, bool H>
__global__ void __launch_bounds__(128)
    tcgen05_block_scaled(const std::uint64_t *__restrict__ a, const std::uint64_t *__restrict__ b,
                         const std::uint64_t *__restrict__ c, const std::uint8_t *__restrict__ sa,
                         const std::uint8_t *__restrict__ sb, std::uint64_t *__restrict__ d, int K,
                         std::size_t lines) {
#ifdef BF16EMU_TC5
  __shared__ alignas(1024) unsigned char smem_a[kTc5Lines * 32];
  __shared__ alignas(1024) unsigned char smem_b[kTc5Lines * 32];
  __shared__ alignas(8) std::uint64_t mbar;
  __shared__ std::uint32_t tmem_slot;
  constexpr int k = sk_k(Op), vec = block_scaled(Op) ? sk_vec(Op) : k, n = per_row16(Op);
  const int tid = threadIdx.x, lane = tid & 31, S = K / vec;
  const std::uint32_t tmem = tc5_begin(&tmem_slot, &mbar, kTc5Cols);
  const std::uint32_t partition = std::uint32_t(32 * (tid >> 5)) << 16; // this warp's lanes
  const std::uint64_t adesc = tc5_smem_desc(smem_a), bdesc = tc5_smem_desc(smem_b);
  constexpr std::uint32_t idesc = bs_idesc<Op, TA, TB, H>(), cmask = H ? 0xffffu : 0xffffffffu;
  std::uint32_t phase = 0;
  for (std::size_t base = std::size_t(blockIdx.x) * kTc5Lines; base < lines;
       base += std::size_t(gridDim.x) * kTc5Lines) {
    const std::size_t line = base + std::size_t(tid);
    const bool valid = line < lines;
    tc5_put_diag(tmem, valid ? std::uint32_t(c[line]) & cmask : 0u);
    for (int k0 = 0; k0 < K; k0 += k) {
      fill_packed<n, smem_bits<Op, TA>()>(smem_a, a, line, valid, K, k0, tid);
      fill_packed<n, smem_bits<Op, TB>()>(smem_b, b, line, valid, K, k0, tid);
      if constexpr (block_scaled(Op)) { // column j of each scale matrix: lines base + 32j + lane
        std::uint32_t fa[4], fb[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const std::size_t row = base + std::size_t(32 * j + lane);
          const bool ok = row < lines;
          const std::size_t at = ok ? row * std::size_t(S) + std::size_t(k0 / vec) : 0;
          fa[j] = pack_scales(sa + at, ok, k / vec, sk_one(Op));
          fb[j] = pack_scales(sb + at, ok, k / vec, sk_one(Op));
        }
        tc5_put4(tmem + partition + kSfaCol, fa);
        tc5_put4(tmem + partition + kSfbCol, fb);
        asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      tc5_sync();
      if (tid == 0) tc5_issue_scaled<Op>(tmem, adesc, bdesc, idesc, tmem + kSfaCol, tmem + kSfbCol);
      tc5_commit_wait(&mbar, phase);
    }
    const std::uint32_t v = tc5_get_diag(tmem);
    if (valid) d[line] = v & cmask;
    tc5_sync(); // every warp has read D before the next group writes C
  }
  tc5_end(tmem, kTc5Cols);
#else
  (void)a, (void)b, (void)c, (void)sa, (void)sb, (void)d, (void)K, (void)lines;
#endif
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

template <scaled_op Op, mma_elem TA, mma_elem TB, bool H> int launch_scaled(const probe_scaled_job &job) {
  const std::size_t nab = job.lines * std::size_t(job.k),
                    ns = block_scaled(Op) ? job.lines * std::size_t(job.k / sk_vec(Op)) : 0;
  device_arrays m;
  const std::uint64_t *a = m.upload(0, job.a, nab), *b = m.upload(1, job.b, nab),
                      *c = m.upload(2, job.c, job.lines);
  const std::uint8_t *sa = m.upload(3, job.sa, ns), *sb = m.upload(4, job.sb, ns);
  if (m.err == 0 && m.check(cudaMalloc(&m.p[5], job.lines * sizeof(std::uint64_t)))) {
    auto *d = static_cast<std::uint64_t *>(m.p[5]);
    if (job.unit == instr::tcgen05) {
      const unsigned blocks = unsigned(std::min<std::size_t>((job.lines + kTc5Lines - 1) / kTc5Lines, 1024));
      tcgen05_block_scaled<Op, TA, TB, H><<<blocks, 128>>>(a, b, c, sa, sb, d, job.k, job.lines);
    } else if constexpr (!H && block_scaled(Op) && Op != scaled_op::mxf4nvf4_ue8m0) {
      // (no mma.sync kernel for the others: probe_scaled_supported)
      mma_block_scaled<Op, TA, TB><<<probe_blocks(job.lines), 256>>>(a, b, c, sa, sb, d, job.k, job.lines);
    } else {
      m.check(cudaErrorNotSupported);
    }
    if (m.check(cudaGetLastError()) && m.check(cudaDeviceSynchronize()))
      m.check(cudaMemcpy(job.d, d, job.lines * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  }
  return m.err;
}

// The f8f6f4-type kinds (mxf8f6f4, f8f6f4) for each A x B pair and D format.
template <scaled_op Op, mma_elem TA, bool H> int launch_b(const probe_scaled_job &job) {
  switch (job.tb) {
  case mma_elem::e4m3: return launch_scaled<Op, TA, mma_elem::e4m3, H>(job);
  case mma_elem::e5m2: return launch_scaled<Op, TA, mma_elem::e5m2, H>(job);
  case mma_elem::e3m2: return launch_scaled<Op, TA, mma_elem::e3m2, H>(job);
  case mma_elem::e2m3: return launch_scaled<Op, TA, mma_elem::e2m3, H>(job);
  default: return launch_scaled<Op, TA, mma_elem::e2m1, H>(job);
  }
}
template <scaled_op Op, bool H> int launch_ab(const probe_scaled_job &job) {
  switch (job.ta) {
  case mma_elem::e4m3: return launch_b<Op, mma_elem::e4m3, H>(job);
  case mma_elem::e5m2: return launch_b<Op, mma_elem::e5m2, H>(job);
  case mma_elem::e3m2: return launch_b<Op, mma_elem::e3m2, H>(job);
  case mma_elem::e2m3: return launch_b<Op, mma_elem::e2m3, H>(job);
  default: return launch_b<Op, mma_elem::e2m1, H>(job);
  }
}

} // namespace

int scaled_instr_k(scaled_op op) { return sk_k(op); }
int scaled_vec(scaled_op op) { return sk_vec(op); }

bool probe_scaled_supported(const probe_scaled_job &job, int cc_major, int cc_minor) {
  if (job.op == scaled_op::none || job.k <= 0 || job.k % sk_k(job.op) != 0) return false;
  const bool f8f6f4_types = job.op == scaled_op::mxf8f6f4 || job.op == scaled_op::f8f6f4;
  if (!f8f6f4_types && (job.ta != mma_elem::e2m1 || job.tb != mma_elem::e2m1)) return false;
  if (job.out16 && job.op != scaled_op::f8f6f4) return false;
  const int cc = cc_major * 10 + cc_minor; // the sm_100a and sm_120a code (cuda/CMakeLists.txt)
  if (job.unit == instr::tcgen05) return cc == 100;
  return block_scaled(job.op) && job.op != scaled_op::mxf4nvf4_ue8m0 && cc == 120;
}

int run_probe_scaled(const probe_scaled_job &job) {
  if (job.lines == 0) return 0;
  constexpr mma_elem e2m1 = mma_elem::e2m1;
  switch (job.op) {
  case scaled_op::mxf4: return launch_scaled<scaled_op::mxf4, e2m1, e2m1, false>(job);
  case scaled_op::mxf4nvf4_ue4m3: return launch_scaled<scaled_op::mxf4nvf4_ue4m3, e2m1, e2m1, false>(job);
  case scaled_op::mxf4nvf4_ue8m0: return launch_scaled<scaled_op::mxf4nvf4_ue8m0, e2m1, e2m1, false>(job);
  case scaled_op::f8f6f4:
    return job.out16 ? launch_ab<scaled_op::f8f6f4, true>(job) : launch_ab<scaled_op::f8f6f4, false>(job);
  default: return launch_ab<scaled_op::mxf8f6f4, false>(job);
  }
}

} // namespace bf16emu::gpu
