// Device helper shared by the kind::f8f6f4 / mxf8f6f4 probe kernels (probe_kernels.cu,
// scaled_probe.cu): where an fp8/fp6/fp4 element sits in its 8-bit register container.
#pragma once

#include <cstdint>

#include "kernels.hpp"

namespace bf16emu::gpu {

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

} // namespace bf16emu::gpu
