// Blackwell block-scaled tcgen05 issue code (issue 16; the model is include/bf16emu/tc/scaled.hpp,
// docs/tensor-cores.md "Blackwell tcgen05: f16 accumulation, f8f6f4 and block-scaled kinds").
// Compile-checked for sm_100a (tcgen05.mma kind::f8f6f4 / mxf8f6f4 / mxf4nvf4 issue); no runner
// calls it yet, and nothing here has run on a device. The sm_120a mma.sync kinds, unscaled and
// block-scaled, are the runner's probes (probe_kernels.cu, scaled_probe.cu).
#include <cstdint>

namespace bf16emu::gpu {

#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM103_ALL))
#define BF16EMU_SM100A 1
#endif

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
