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

// The host's floating-point status word. div and sqrt form estimates in binary64 (exact
// fix-ups follow), which raises the host's inexact flag; the core reports its own flags in
// result::flags and leaves the host's as it found them. Done on x86 SSE with GCC or clang
// (MXCSR); elsewhere (nvcc-compiled code, other hosts) the host flags may gain inexact.
#if !defined(__CUDACC__) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__))) &&        \
    (defined(__GNUC__) || defined(__clang__))
#define BF16EMU_HOST_MXCSR 1
#endif
// Keeps the compiler from moving floating-point work across the status save and restore
// (volatile asm statements stay in program order): values computed after
// host_fp_status pass through fp_fence on the way in, results on the way out.
template <class T> BF16EMU_HD inline T fp_fence(T v) noexcept {
#if defined(BF16EMU_HOST_MXCSR)
  if constexpr (sizeof(T) == 8 && T(0.5) != T(0))
    __asm__ volatile("" : "+x"(v));
  else
    __asm__ volatile("" : "+r"(v));
#endif
  return v;
}
// Volatile asm, not __builtin_ia32_stmxcsr: GCC treats that builtin as pure and merges the
// two reads when no call lies between them.
BF16EMU_HD inline unsigned host_fp_status() noexcept {
  unsigned v = 0;
#if defined(BF16EMU_HOST_MXCSR)
  __asm__ volatile("stmxcsr %0" : "=m"(v));
#endif
  return v;
}
BF16EMU_HD inline void restore_host_fp_status([[maybe_unused]] unsigned saved) noexcept {
#if defined(BF16EMU_HOST_MXCSR)
  if (host_fp_status() != saved)
    __asm__ volatile("ldmxcsr %0" : : "m"(saved)); // usually equal: inexact is sticky
#endif
}
// The same after binary64 steps that can raise inexact and no other flag (exact finite
// operands, no overflow, underflow or invalid operation): when inexact was already raised
// (the usual state of a program that has done any floating point) nothing can have changed,
// so no second read (stmxcsr costs ~16 ns on the development machine's AMD VM).
BF16EMU_HD inline void restore_host_inexact([[maybe_unused]] unsigned saved) noexcept {
#if defined(BF16EMU_HOST_MXCSR)
  if ((saved & 0x20u) == 0) // MXCSR PE clear before: clear it again
    __asm__ volatile("ldmxcsr %0" : : "m"(saved));
#endif
}

} // namespace bf16emu::detail

// Run-time CPU dispatch (host x86-64, GCC or clang; not nvcc-compiled code): functions marked
// BF16EMU_TARGET_AVX2 are compiled for AVX2, BMI1/2 and LZCNT whatever -march says, and may
// run only where host_has_avx2() is true (cpuid, queried once). Elsewhere the macro is not
// defined (nor where BF16EMU_NO_AVX2_DISPATCH is) and callers keep their portable code.
#if !defined(__CUDACC__) && !defined(__HIPCC__) && !defined(BF16EMU_NO_AVX2_DISPATCH) &&                     \
    defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define BF16EMU_HOST_AVX2_DISPATCH 1
#define BF16EMU_TARGET_AVX2 __attribute__((target("avx2,bmi,bmi2,lzcnt")))
namespace bf16emu::detail {
inline bool host_has_avx2() noexcept {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0,
             d = 0; // LZCNT: leaf 0x80000001, ecx bit 5 (no cpu_supports name in clang 14)
    const bool lzcnt = __get_cpuid(0x80000001u, &a, &b, &c, &d) && ((c >> 5) & 1u);
    return lzcnt && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2");
  }();
  return yes;
}
} // namespace bf16emu::detail
#endif
