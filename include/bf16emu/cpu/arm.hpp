// bf16emu CPU models: the Arm BF16 instructions (FEAT_BF16, Armv8.6; FEAT_EBF16), as the Arm
// ARM's shared pseudo-code defines them (docs/cpu-bf16.md cites the functions).
//
//   BFDOT   addend + a0*b0 + a1*b1 (BFDotAdd)
//           FPCR.EBF = 0: BFAdd(addend, BFAdd(BFMul(a0,b0), BFMul(a1,b1))): every step rounded to
//                         FP32 with round-to-odd (BFRound), overflow -> Inf, denormal inputs and
//                         results flushed to zero (flush decided before rounding), default NaN
//           FPCR.EBF = 1: FPAdd(addend, FPDot(a0,a1,b0,b1)): the two products summed exactly and
//                         rounded once, then added: both steps follow FPCR.RMode and FPCR.FZ,
//                         default NaN (DN forced)
//   BFMMLA  per output element: two BFDotAdd steps in k order (k = 0, 1) over 4 BF16 pairs' worth
//           (a 2x4 by 4x2 block product)
//   BFMLALB / BFMLALT  addend + a*b with the even (B) or odd (T) BF16 element widened to FP32:
//           one fused multiply-add under the full FPCR (RMode, FZ, DN); IEEE otherwise
//   BFCVT   FP32 -> BF16 under the full FPCR (RMode, FZ, DN)
//
// Pure numerics on the core soft-float: header-only, no I/O, no exceptions, no allocation.
#pragma once

#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu::cpu {

// The FPCR fields these instructions read. Defaults: the reset-like state of a Linux process
// (RNE, FZ = 0, DN = 0), EBF = 0.
struct arm_fpcr {
  bool ebf = false;                            // FEAT_EBF16: extended BFloat16 behaviours for BFDOT / BFMMLA
  bool fz = false;                             // flush denormal inputs and results of FP32 arithmetic
  bool dn = false;                             // default NaN instead of propagating
  round_mode rmode = round_mode::nearest_even; // RNE, RP (upward), RM (downward), RZ
};

inline constexpr std::uint32_t arm_default_nan32 = 0x7FC00000u; // FPDefaultNaN, FPCR.AH = 0
inline constexpr std::uint16_t arm_default_nan16 = 0x7FC0u;

// Arm detects tininess before rounding; an FZ flush is decided on the unrounded value.
BF16EMU_CXHD env arm_env(round_mode m, bool fz, bool dn) noexcept {
  env e{};
  e.mode = m;
  e.tiny = tininess::before_rounding;
  e.nan = dn ? nan_policy::pytorch : nan_policy::ieee; // pytorch policy = +qNaN 0x7FC00000
  e.subnormal = fz ? subnormals::flush_both : subnormals::ieee;
  return e;
}

namespace detail {

// BFRound / BFMul / BFAdd (FPCR.EBF = 0): round to odd, flush before rounding, default NaN.
BF16EMU_CXHD env bf_env() noexcept { return arm_env(round_mode::to_odd, true, true); }

// BFRound turns an overflow into an appropriately signed Infinity, which round-to-odd in the
// core (IEEE: toward the largest finite value) does not: mend it here.
BF16EMU_CXHD f32 bf_overflow_to_inf(const result<binary32> &r) noexcept {
  if (r.flags & flag::overflow) return f32{(r.value.bits & 0x80000000u) | 0x7F800000u};
  return r.value;
}

template <class Tr> BF16EMU_CXHD f32 bf_mul(bf16 a, bf16 b, Tr &tr) noexcept {
  return bf_overflow_to_inf(mul_to<binary32>(a, b, bf_env(), tr));
}
template <class Tr> BF16EMU_CXHD f32 bf_add(f32 a, f32 b, Tr &tr) noexcept {
  return bf_overflow_to_inf(add_to<binary32>(a, b, bf_env(), tr));
}

// An FP32-sized significand with binary64's exponent range: holds a BF16 x BF16 product
// exactly (16 significant bits, exponents -266 .. 255), so FPDot's single rounding can be an FMA.
using wide_product = format<11, 23>;

} // namespace detail

// BFDotAdd(addend, a0, a1, b0, b1, FPCR).
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t bfdot(std::uint32_t addend, std::uint16_t a0, std::uint16_t a1, std::uint16_t b0,
                                 std::uint16_t b1, const arm_fpcr &fpcr = {}, Tr &&tr = Tr{}) noexcept {
  if (!fpcr.ebf) {
    const f32 prod =
        detail::bf_add(detail::bf_mul(bf16{a0}, bf16{b0}, tr), detail::bf_mul(bf16{a1}, bf16{b1}, tr), tr);
    return detail::bf_add(f32{addend}, prod, tr).bits;
  }
  // FEAT_EBF16: FPDot rounds a0*b0 + a1*b1 once; FPAdd adds the addend. DN is forced to 1.
  const env e = arm_env(fpcr.rmode, fpcr.fz, true);
  const result<detail::wide_product> p1 = mul_to<detail::wide_product>(bf16{a1}, bf16{b1}, e); // exact
  const result<binary32> prod = fma_to<binary32>(bf16{a0}, bf16{b0}, p1.value, e, tr);
  return add_to<binary32>(f32{addend}, prod.value, e, tr).value.bits;
}

// BFMMLA, one FP32 element of the 2x2 result: a[0..3] from a row of the first operand,
// b[0..3] from a column of the second; sum = BFDotAdd(sum, a[2k], a[2k+1], b[2k], b[2k+1]), k = 0, 1.
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t bfmmla(std::uint32_t addend, const std::uint16_t *a, const std::uint16_t *b,
                                  const arm_fpcr &fpcr = {}, Tr &&tr = Tr{}) noexcept {
  std::uint32_t sum = addend;
  for (int k = 0; k < 2; ++k)
    sum = bfdot(sum, a[2 * k], a[2 * k + 1], b[2 * k], b[2 * k + 1], fpcr, tr);
  return sum;
}

namespace detail {

// FPProcessNaNs3 (addend first, then op1, op2): a signaling NaN wins over a quiet one; the NaN
// is quieted (or the default NaN under DN). Returns false when no operand is a NaN.
BF16EMU_CXHD bool arm_process_nans3(f32 addend, f32 op1, f32 op2, bool dn, std::uint32_t &out) noexcept {
  const f32 ops[3] = {addend, op1, op2};
  for (int pass = 0; pass < 2; ++pass)
    for (const f32 x : ops)
      if (pass == 0 ? x.is_signaling_nan() : x.is_nan()) {
        out = dn ? arm_default_nan32 : (x.bits | 0x00400000u);
        return true;
      }
  return false;
}

} // namespace detail

// BFMLALB (odd = false) / BFMLALT (odd = true), one FP32 lane: FPMulAdd(addend, a, b, FPCR)
// with the BF16 element shifted into an FP32 pattern. FPMulAdd gives the default NaN when the
// addend is a quiet NaN and the product is Inf * 0; otherwise FPProcessNaNs3 picks the NaN.
template <class Tr = no_trace>
BF16EMU_CXHD std::uint32_t bfmlal(std::uint32_t addend, std::uint16_t a, std::uint16_t b,
                                  const arm_fpcr &fpcr = {}, Tr &&tr = Tr{}) noexcept {
  const f32 fa{std::uint32_t(a) << 16}, fb{std::uint32_t(b) << 16}, fc{addend};
  const env e = arm_env(fpcr.rmode, fpcr.fz, fpcr.dn);
  const bool inf_times_zero = (fa.is_inf() && (fb.is_zero() || (fpcr.fz && fb.is_subnormal()))) ||
                              (fb.is_inf() && (fa.is_zero() || (fpcr.fz && fa.is_subnormal())));
  if (fc.is_nan() && !fc.is_signaling_nan() && inf_times_zero) return arm_default_nan32;
  std::uint32_t nan_out = 0;
  if (detail::arm_process_nans3(fc, fa, fb, fpcr.dn, nan_out)) return nan_out;
  const result<binary32> r = fma_to<binary32>(fa, fb, fc, e, tr);
  if (r.value.is_nan()) return arm_default_nan32; // invalid without NaN operands
  return r.value.bits;
}

// BFCVT: FPConvertBF(op, FPCR).
template <class Tr = no_trace>
BF16EMU_CXHD std::uint16_t bfcvt(std::uint32_t x, const arm_fpcr &fpcr = {}, Tr &&tr = Tr{}) noexcept {
  const env e = arm_env(fpcr.rmode, fpcr.fz, fpcr.dn);
  return convert<bfloat16>(f32{x}, e, tr).value.bits;
}

} // namespace bf16emu::cpu
