// bf16emu: the core headers compiled by nvcc as __host__ __device__ code.
//
// Built for every architecture in CMAKE_CUDA_ARCHITECTURES (sm_80, sm_90a) as part of ALL, so a
// change to the core, the tensor-core model or the exp2 polynomial that nvcc cannot compile for
// the device fails the build. Nothing here is run; the kernels only have to compile and link.
#include <cstdint>
#include <string_view>

#include "bf16emu/core.hpp"
#if __has_include("bf16emu/tc.hpp")
#include "bf16emu/tc.hpp"
#define BF16EMU_CHECK_TC 1
#endif
#if __has_include("bf16emu/attention/exp2_poly.hpp")
#include "bf16emu/attention/exp2_poly.hpp"
#define BF16EMU_CHECK_EXP2 1
#endif

namespace bf16emu::nvcc_check {

// Every core operation in every rounding mode on device, with and without a tracer.
__global__ void core_ops(const std::uint32_t *in, std::uint32_t *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const f32 a = f32::from_bits(in[3 * i]), b = f32::from_bits(in[3 * i + 1]),
            c = f32::from_bits(in[3 * i + 2]);
  env e;
  e.mode = round_mode(i % round_mode_count);
  e.random = in[3 * i] ^ 0x9e3779b9u;
  std::uint32_t acc = 0;
  acc ^= add(a, b, e).bits() ^ sub(a, b, e).bits() ^ mul(a, b, e).bits();
  acc ^= fma(a, b, c, e).bits() ^ div(a, b, e).bits() ^ sqrt(a, e).bits();
  const bf16 ha = convert<bfloat16>(a, e).value, hb = convert<bfloat16>(b, e).value;
  acc ^= fma_to<binary32>(ha, hb, c, e).bits();
  acc ^= std::uint32_t(add(ha, hb, e).bits()) << 16;
  acc ^=
      convert<binary16>(a, e).bits() ^ convert<float8_e4m3>(a, e).bits() ^ convert<float8_e5m2>(a, e).bits();
  acc ^= convert<tensorfloat32>(a, e).bits();
  acc ^=
      add_to<binary32>(ha, c, e).bits() ^ mul_to<bfloat16>(a, b, e).bits() ^ div_to<binary16>(a, b, e).bits();
  acc ^= sqrt_to<bfloat16>(a, e).bits();
  acc ^= neg(a).bits ^ abs(b).bits;
  acc ^= std::uint32_t(compare(a, b, e).ord) ^ std::uint32_t(compare_signaling(a, c, e).ord);
  e.subnormal = subnormals::flush_both;
  e.nan = nan_policy::cuda;
  last_event t;
  acc ^= fma(a, b, c, e, t).bits() ^ std::uint32_t(t.event.dec) ^ std::uint32_t(t.event.kept);
  out[i] = acc;
}

#if defined(BF16EMU_CHECK_TC)
// The tensor-core model on device: one sm90 and one sm80 dot product per thread.
__global__ void tc_dot(const std::uint16_t *a, const std::uint16_t *b, std::uint32_t *out, int n, int K) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto *pa = reinterpret_cast<const bf16 *>(a) + std::size_t(i) * K;
  const auto *pb = reinterpret_cast<const bf16 *>(b) + std::size_t(i) * K;
  const tc::block_params hopper{16, 25, -133, 23, tc::out_round::truncate};
  const tc::block_params ampere{8, 24, -132, 23, tc::out_round::truncate};
  const f32 d1 = tc::dot<bfloat16, binary32>(hopper, 16, pa, 1, pb, 1, K, f32::from_bits(0));
  const f32 d2 = tc::dot<bfloat16, binary32>(ampere, 16, pa, 1, pb, 1, K, d1);
  out[i] = d2.bits;
}

// The GPU-generation type on device: parse (a device-side name), to_string, default_kind,
// and the instruction names.
__global__ void tc_arch_names(const char *name, int len, std::uint32_t *out) {
  tc::arch a = tc::arch::sm70;
  tc::instr_kind k = tc::instr_kind::mma;
  const bool ok = tc::parse_arch(std::string_view(name, std::size_t(len)), a) &&
                  tc::parse_instr(std::string_view(name, std::size_t(len)), k);
  out[0] = std::uint32_t(ok) | std::uint32_t(a) << 1 | std::uint32_t(tc::default_kind(a)) << 4 |
           std::uint32_t(k) << 6 | std::uint32_t(tc::to_string(a)[2]) << 8 |
           std::uint32_t(tc::generation_name(a) != nullptr) << 16;
}
#endif

#if defined(BF16EMU_CHECK_EXP2)
// exp2_poly with the device's IEEE intrinsics (what the attention kernel uses) and with the
// soft-float core (what the CPU twin uses): both compile on device.
struct soft_backend {
  using value = f32;
  __host__ __device__ value fma(value a, value b, value c) const { return bf16emu::fma(a, b, c).value; }
  __host__ __device__ value mul(value a, value b) const { return bf16emu::mul(a, b).value; }
  __host__ __device__ value add(value a, value b) const { return bf16emu::add(a, b).value; }
  __host__ __device__ value from_bits(std::uint32_t u) const { return f32::from_bits(u); }
  __host__ __device__ std::uint32_t to_bits(value v) const { return v.bits; }
};

__global__ void exp2(const float *x, std::uint32_t *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  attention::native_f32_backend nb;
  soft_backend sb;
  const float y = attention::exp2_poly(nb, x[i]);
  const f32 z = attention::exp2_poly(sb, from_float(x[i]));
  out[i] = __float_as_uint(y) ^ z.bits;
}
#endif

} // namespace bf16emu::nvcc_check
