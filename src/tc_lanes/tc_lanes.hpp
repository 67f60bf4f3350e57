// bf16emu::tc_lanes: the tensor-core model's lane-parallel GEMM kernel, compiled once per SIMD
// target (Google Highway: AVX3 where the CPU has AVX-512, AVX2, SSE4, ..., a portable emulation)
// and chosen at run time. Each lane owns one output element (a column of a tile of rows x
// columns), so a block's max-exponent search, alignment, truncation to F bits and integer sum
// are vertical SIMD operations; the blocks chain per lane. docs/tensor-cores.md, "The lane-
// parallel kernel".
//
// Bits: every element equals tc::dot<In, binary32> (include/bf16emu/tc/mma.hpp). The kernel
// covers FP32 output truncated to 23 fraction bits (every NVIDIA FP32-output preset with fused
// blocks) for bf16, fp16 and tf32 inputs with F >= 2 * (input fraction bits), 23 <= F <= 30 and
// L * (largest aligned product) < 2^31; an element whose row or column holds an Inf or NaN,
// whose C is Inf or NaN, or one of whose block sums does not fit the 32-bit lane (or reaches
// Inf) is computed by tc::dot itself. tests/tc_lanes compares the two bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bf16emu/tc/lanes.hpp"

namespace bf16emu::tc_lanes {

// Whether the kernel takes calls with these parameters and input format.
bool covers(const tc::block_params &p, format_id in) noexcept;

// The kernel (tc::lanes_kernel): false, nothing written, where covers() is false.
bool run(const tc::lanes_call &call) noexcept;

// Installs run() as the model's hook (tc::lanes_hook): from then on tc::gemm and tc::dot_rows
// without a tracer, and the attention's tensor-core products, use it.
void install() noexcept;

// The block's output rounding as the kernel does it, n lanes at a time: out[i] = the FP32 bits
// of sum[i] * 2^base[i] truncated to 23 fraction bits (tc::detail::round_out<binary32>(sum < 0,
// |sum|, base, 23, truncate); +0 for a zero sum). |sum[i]| < 2^31; base[i] within the model's
// range (-400, 300). For tests/tc_lanes, which checks it against round_out.
void round_fp32(const std::int32_t *sum, const std::int32_t *base, std::uint32_t *out,
                std::size_t n) noexcept;

// attention::hw_f32's FP32 FMA chains across columns (its fma_cols_fn contract): SIMD lanes with
// the CPU's fused multiply-add where the target has one (AVX2, AVX-512), else the scalar loop.
// fma_cols.cpp.
void fma_cols(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k, long ncols,
              float *c) noexcept;

// Installs fma_cols as attention::hw_f32::fma_cols_hook: the attention policies' FP32 dot
// products (fp32, paper:bf16, paper:autocast) on the host path use it.
void install_fma_cols() noexcept;

// Name of the SIMD target the dispatcher chooses on this CPU (hwy::TargetName), e.g. "AVX2".
const char *target_name() noexcept;

} // namespace bf16emu::tc_lanes
