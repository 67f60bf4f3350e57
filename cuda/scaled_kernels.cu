// Blackwell mixed-format and block-scaled tensor-core kernels (issue 16; the model is
// include/bf16emu/tc/scaled.hpp, docs/tensor-cores.md "Blackwell tcgen05: f16 accumulation,
// f8f6f4 and block-scaled kinds"). Compile-checked for sm_120a (mma.sync kind::f8f6f4 and
// block_scale) and sm_100a (tcgen05.mma kind::f8f6f4 / mxf8f6f4 / mxf4nvf4 issue); no runner calls
// them yet, and nothing here has run on a device.
//
// The sm_120a kernels take each lane's fragment registers as the host packed them (A: 4 x b32,
// B: 2 x b32, C/D: 4 x f32 per lane, lane-major), and one scale register per lane for A and B
// with byte / thread selectors 0 (PTX ISA, mma .block_scale: scale-a-data, {byte-id-a,
// thread-id-a}). One warp, one instruction.
#include <cstdint>

namespace bf16emu::gpu {

#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL))
#define BF16EMU_SM120A 1
#endif
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM103_ALL))
#define BF16EMU_SM100A 1
#endif

// kind::f8f6f4 m16n8k32, e4m3 x e2m1 -> f32 (unscaled mix).
__global__ void mma_f8f6f4_e4m3_e2m1(const std::uint32_t *a, const std::uint32_t *b, const float *c,
                                     float *d) {
#ifdef BF16EMU_SM120A
  const unsigned l = threadIdx.x;
  float r0, r1, r2, r3;
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e2m1.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)
      : "r"(a[4 * l]), "r"(a[4 * l + 1]), "r"(a[4 * l + 2]), "r"(a[4 * l + 3]), "r"(b[2 * l]),
        "r"(b[2 * l + 1]), "f"(c[4 * l]), "f"(c[4 * l + 1]), "f"(c[4 * l + 2]), "f"(c[4 * l + 3]));
  d[4 * l] = r0, d[4 * l + 1] = r1, d[4 * l + 2] = r2, d[4 * l + 3] = r3;
#else
  (void)a, (void)b, (void)c, (void)d;
#endif
}

// One mma.sync block_scale instruction INSTR on the lane's registers (operands as above).
#define BF16EMU_BLOCK_SCALE_MMA(INSTR)                                                                       \
  asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13}, %14, {%16, %16}, %15, "     \
                     "{%16, %16};\n"                                                                         \
               : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)                                                      \
               : "r"(a[4 * l]), "r"(a[4 * l + 1]), "r"(a[4 * l + 2]), "r"(a[4 * l + 3]), "r"(b[2 * l]),      \
                 "r"(b[2 * l + 1]), "f"(c[4 * l]), "f"(c[4 * l + 1]), "f"(c[4 * l + 2]), "f"(c[4 * l + 3]),  \
                 "r"(sa[l]), "r"(sb[l]), "h"(zero))

// Kind 0: kind::mxf8f6f4 block_scale scale_vec::1X m16n8k32, e4m3 x e2m1 -> f32, ue8m0 scales.
// Kind 1: kind::mxf4nvf4 block_scale scale_vec::4X m16n8k64, e2m1 x e2m1 -> f32, ue4m3 (NVFP4).
template <int Kind>
__global__ void mma_block_scale(const std::uint32_t *a, const std::uint32_t *b, const float *c,
                                const std::uint32_t *sa, const std::uint32_t *sb, float *d) {
#ifdef BF16EMU_SM120A
  const unsigned l = threadIdx.x;
  const std::uint16_t zero = 0;
  float r0, r1, r2, r3;
  if constexpr (Kind == 0)
    BF16EMU_BLOCK_SCALE_MMA(
        "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e2m1.f32.ue8m0");
  else
    BF16EMU_BLOCK_SCALE_MMA(
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3");
  d[4 * l] = r0, d[4 * l + 1] = r1, d[4 * l + 2] = r2, d[4 * l + 3] = r3;
#else
  (void)a, (void)b, (void)c, (void)sa, (void)sb, (void)d;
#endif
}
#undef BF16EMU_BLOCK_SCALE_MMA

template __global__ void mma_block_scale<0>(const std::uint32_t *, const std::uint32_t *, const float *,
                                            const std::uint32_t *, const std::uint32_t *, float *);
template __global__ void mma_block_scale<1>(const std::uint32_t *, const std::uint32_t *, const float *,
                                            const std::uint32_t *, const std::uint32_t *, float *);

// sm_100a: issue one tcgen05.mma of each kind on operands the caller has placed: A and B through
// shared-memory matrix descriptors, D (and the scale factors) in tensor memory at the given
// addresses, idesc the instruction descriptor (PTX ISA, tcgen05 instruction descriptor). A
// compile check of these kinds' syntax only: the complete sequence (allocation, descriptors,
// commit and mbarrier wait, tcgen05.ld of D) is the kind::f16 / tf32 / f8f6f4 (fp8) probe in
// probe_kernels.cu; scale factors in tensor memory (tcgen05.cp) are not written.
__global__ void tcgen05_issue(std::uint32_t d_tmem, std::uint64_t adesc, std::uint64_t bdesc,
                              std::uint32_t idesc, std::uint32_t sa_tmem, std::uint32_t sb_tmem, int which,
                              int accumulate) {
#ifdef BF16EMU_SM100A
  if (which == 0)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
                 "l"(adesc), "l"(bdesc), "r"(idesc), "r"(accumulate));
  else if (which == 1)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], [%5], "
        "p;\n}\n" ::"r"(d_tmem),
        "l"(adesc), "l"(bdesc), "r"(idesc), "r"(sa_tmem), "r"(sb_tmem), "r"(accumulate));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%0], %1, %2, %3, [%4], [%5], "
        "p;\n}\n" ::"r"(d_tmem),
        "l"(adesc), "l"(bdesc), "r"(idesc), "r"(sa_tmem), "r"(sb_tmem), "r"(accumulate));
#else
  (void)d_tmem, (void)adesc, (void)bdesc, (void)idesc, (void)sa_tmem, (void)sb_tmem, (void)which,
      (void)accumulate;
#endif
}

} // namespace bf16emu::gpu
