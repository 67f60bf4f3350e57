// bf16emu: host/device portability macros. Everything in the core is constexpr,
// allocation-free and exception-free, so one definition serves host and device.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define BF16EMU_HD __host__ __device__
#else
#define BF16EMU_HD
#endif

#define BF16EMU_CXHD constexpr BF16EMU_HD

#if defined(__GNUC__) || defined(__clang__)
#define BF16EMU_INLINE inline __attribute__((always_inline))
#else
#define BF16EMU_INLINE inline
#endif

namespace bf16emu::detail {

// Bit-cast that works in constant expressions under GCC, clang and nvcc.
template <class To, class From> BF16EMU_CXHD To bit_cast(const From &f) noexcept {
  static_assert(sizeof(To) == sizeof(From));
  return __builtin_bit_cast(To, f);
}

// Count of leading zeros of a 64-bit value; 64 for zero.
BF16EMU_CXHD int clz64(unsigned long long x) noexcept {
  if (x == 0) return 64;
#if defined(__CUDA_ARCH__)
  if (!__builtin_is_constant_evaluated()) return __clzll(static_cast<long long>(x));
  int n = 0;
  while (!(x & (1ull << 63))) {
    x <<= 1;
    ++n;
  }
  return n;
#else
  return __builtin_clzll(x);
#endif
}

} // namespace bf16emu::detail
