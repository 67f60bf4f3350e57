// bf16emu attention: an FMA-only exp2 for FP32 with a fixed rounding sequence.
//
// The same template is instantiated by the CUDA kernel (fmaf / __fmul_rn / __fadd_rn) and by
// the CPU twin (the core's soft-float fma / mul / add in FP32, nearest-even), so both give the
// same bits. Only IEEE operations with round-to-nearest-even are used; everything else is
// integer work on bit patterns (sign tests, building powers of two), which does not round.
//
// Backend requirements (an object, so a CPU backend can carry a tracer):
//   using value = <an FP32 datum>;
//   value fma(value a, value b, value c);   // RN(a*b + c), one rounding
//   value mul(value a, value b);            // RN(a*b)
//   value add(value a, value b);            // RN(a+b)
//   value from_bits(std::uint32_t);  std::uint32_t to_bits(value);   // exact reinterpretation
//
// Algorithm (x an FP32 number; the steps are the contract, in this order):
//   0. x NaN -> add(x, x) (quiet NaN); x >= 128 -> +Inf; x < -150 (and -Inf) -> +0.
//   1. t  = add(x, 0x1.8p23)           rounds x to the nearest integer n (ties to even),
//      n  = bits(t) - bits(0x1.8p23)   (an integer, |n| <= 150),
//      nf = add(t, -0x1.8p23)          (exact: the integer n as FP32),
//      r  = add(x, -nf)                (exact: |r| <= 1/2, r lies on x's grid).
//   2. p  = c7;  p = fma(p, r, c_k) for k = 6, 5, ..., 1;  p = fma(p, r, 1)
//      with c_k = ln(2)^k / k! rounded to the nearest FP32 (bit patterns below). The
//      truncation error of this degree-7 Taylor polynomial on |r| <= 1/2 is below 6e-9
//      (0.1 ulp); the rounding errors of Horner's scheme keep the result within a few ulp.
//   3. a = floor(n / 2), b = n - a;  y = mul(mul(p, 2^a), 2^b).
//      Both powers of two are normal FP32 numbers (|a|, |b| <= 75); the first product is
//      exact, the second rounds once (only when the result is subnormal or overflows).
#pragma once

#include <cstdint>

#include "bf16emu/core/config.hpp"

namespace bf16emu::attention {

namespace exp2_detail {
// A function, not a namespace-scope array: device code cannot read host constexpr arrays.
BF16EMU_CXHD std::uint32_t coeff_bits(int k) noexcept {
  switch (k) {
  case 0: return 0x3f800000u;  // 1
  case 1: return 0x3f317218u;  // ln2
  case 2: return 0x3e75fdf0u;  // ln2^2/2
  case 3: return 0x3d635847u;  // ln2^3/6
  case 4: return 0x3c1d955bu;  // ln2^4/24
  case 5: return 0x3aaec3ffu;  // ln2^5/120
  case 6: return 0x39218489u;  // ln2^6/720
  default: return 0x377fe5feu; // ln2^7/5040
  }
}
inline constexpr std::uint32_t magic_bits = 0x4b400000u;     // 1.5 * 2^23
inline constexpr std::uint32_t neg_magic_bits = 0xcb400000u; // -1.5 * 2^23
inline constexpr std::uint32_t limit_hi_bits = 0x43000000u;  // 128
inline constexpr std::uint32_t limit_lo_bits = 0x43160000u;  // 150 (magnitude)

// 2^k as FP32 bits, k in [-126, 127].
BF16EMU_CXHD std::uint32_t pow2_bits(int k) noexcept { return std::uint32_t(k + 127) << 23; }
} // namespace exp2_detail

// FP32 exp2(x) from IEEE fma/mul/add only (see the header comment for the exact sequence).
template <class B> BF16EMU_CXHD typename B::value exp2_poly(B &b, typename B::value x) noexcept {
  using namespace exp2_detail;
  const std::uint32_t xb = b.to_bits(x);
  const std::uint32_t mag = xb & 0x7fffffffu;
  const bool neg = (xb >> 31) != 0;
  if (mag > 0x7f800000u) return b.add(x, x);                         // NaN
  if (!neg && mag >= limit_hi_bits) return b.from_bits(0x7f800000u); // >= 128 and +Inf
  if (neg && mag > limit_lo_bits) return b.from_bits(0u);            // < -150 and -Inf
  // 1. range reduction
  const auto t = b.add(x, b.from_bits(magic_bits));
  const int n = int(b.to_bits(t)) - int(magic_bits);
  const auto nf = b.add(t, b.from_bits(neg_magic_bits));
  const auto r = b.add(x, b.from_bits(b.to_bits(nf) ^ 0x80000000u));
  // 2. polynomial
  auto p = b.from_bits(coeff_bits(7));
  for (int k = 6; k >= 0; --k)
    p = b.fma(p, r, b.from_bits(coeff_bits(k)));
  // 3. scaling by 2^n in two exact-power steps
  const int lo = n >= 0 ? n / 2 : -((-n + 1) / 2); // floor(n/2)
  const int hi = n - lo;
  const auto y = b.mul(p, b.from_bits(pow2_bits(lo)));
  return b.mul(y, b.from_bits(pow2_bits(hi)));
}

// The argument FlashAttention-2 feeds to exp2: s*c - m*c with c = softmax_scale*log2(e),
// m*c precomputed (mc = RN(m*c)). fused: one FMA, RN(s*c - mc); else RN(RN(s*c) - mc).
template <class B>
BF16EMU_CXHD typename B::value exp2_arg(B &b, typename B::value s, typename B::value c, typename B::value mc,
                                        bool fused) noexcept {
  const auto neg_mc = b.from_bits(b.to_bits(mc) ^ 0x80000000u);
  return fused ? b.fma(s, c, neg_mc) : b.add(b.mul(s, c), neg_mc);
}

// Native-float backend (host reference and CUDA): each operation is one IEEE FP32 operation
// in round-to-nearest-even, given a host that rounds to nearest even without FTZ/DAZ (attention's
// hw_f32 probes that before using it); the CPU twin with a ledger uses the soft-float backend.
struct native_f32_backend {
  using value = float;
#if defined(__CUDA_ARCH__)
  __device__ value fma(value a, value b, value c) const noexcept { return __fmaf_rn(a, b, c); }
  __device__ value mul(value a, value b) const noexcept { return __fmul_rn(a, b); }
  __device__ value add(value a, value b) const noexcept { return __fadd_rn(a, b); }
#else
  // In binary64, rounded once to FP32: the product is exact and the sum's double rounding is
  // innocuous (53 >= 2*24 + 2), so these are RN(a*b) and RN(a+b); every rounding to FP32 being
  // an explicit conversion, no compiler may contract them into an FMA.
  value fma(value a, value b, value c) const noexcept { return __builtin_fmaf(a, b, c); }
  value mul(value a, value b) const noexcept { return float(double(a) * double(b)); }
  value add(value a, value b) const noexcept { return float(double(a) + double(b)); }
#endif
  BF16EMU_CXHD value from_bits(std::uint32_t u) const noexcept { return detail::bit_cast<float>(u); }
  BF16EMU_CXHD std::uint32_t to_bits(value v) const noexcept { return detail::bit_cast<std::uint32_t>(v); }
};

} // namespace bf16emu::attention
