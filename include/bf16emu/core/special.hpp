// bf16emu: special results (NaN by policy, infinities, signed zeros).
// Implementation-defined choices live here and nowhere else (docs/semantics.md).
#pragma once

#include <cstdint>

#include "bf16emu/core/env.hpp"

namespace bf16emu::detail {

template <class F> BF16EMU_CXHD std::uint64_t nan_bits_fn_or(std::uint64_t ieee_bits) noexcept {
  return F::has_inf ? ieee_bits : F::inf_bits; // fn formats: the one NaN, S.1111.111
}

// The NaN produced by an invalid operation with no NaN operand.
// Formats without NaN (special_encoding::finite) give +max finite and raise invalid instead.
template <class F> BF16EMU_CXHD result<F> default_nan(const env &e, std::uint8_t flags) noexcept {
  if constexpr (!F::has_nan)
    return {fp<F>::from_bits(F::max_finite_bits), std::uint8_t(flags | flag::invalid)};
  std::uint64_t bits = 0;
  switch (e.nan) {
  case nan_policy::cuda: bits = F::exp_mask | F::frac_mask; break;
  default: bits = nan_bits_fn_or<F>(F::exp_mask | F::quiet_bit); break;
  }
  return {fp<F>::from_bits(bits), flags};
}

// The NaN produced from a NaN operand `x` (format In) into format Out.
template <class Out, class In>
BF16EMU_CXHD result<Out> propagate_nan(fp<In> x, const env &e, std::uint8_t flags) noexcept {
  if (!Out::has_nan || e.nan != nan_policy::ieee) return default_nan<Out>(e, flags);
  const std::uint64_t sign = x.sign() ? Out::sign_mask : 0;
  if constexpr (!Out::has_inf) {
    return {fp<Out>::from_bits(sign | Out::inf_bits), flags};
  } else {
    std::uint64_t payload = x.frac();
    if constexpr (Out::frac_bits >= In::frac_bits)
      payload <<= (Out::frac_bits - In::frac_bits);
    else
      payload >>= (In::frac_bits - Out::frac_bits);
    return {fp<Out>::from_bits(sign | Out::exp_mask | payload | Out::quiet_bit), flags};
  }
}

// First NaN among the operands (a, then b, then c), with invalid for any signaling NaN.
template <class Out, class FA, class FB, class FC = FA>
BF16EMU_CXHD result<Out> nan_result(const env &e, std::uint8_t extra_flags, fp<FA> a, fp<FB> b,
                                    fp<FC> c = fp<FC>{}, bool has_c = false) noexcept {
  const bool snan = a.is_signaling_nan() || b.is_signaling_nan() || (has_c && c.is_signaling_nan());
  const std::uint8_t flags = std::uint8_t(extra_flags | (snan ? flag::invalid : 0));
  if (a.is_nan()) return propagate_nan<Out>(a, e, flags);
  if (b.is_nan()) return propagate_nan<Out>(b, e, flags);
  return propagate_nan<Out>(c, e, flags);
}

// A signed infinity; formats without one give NaN (invalid) or, saturating, the max finite;
// formats without NaN (finite) the max finite with overflow and inexact, as an overflow.
template <class F> BF16EMU_CXHD result<F> infinity(bool sign, const env &e, std::uint8_t flags = 0) noexcept {
  const std::uint64_t s = sign ? F::sign_mask : 0;
  if constexpr (F::has_inf) {
    return {fp<F>::from_bits(s | F::inf_bits), flags};
  } else if constexpr (!F::has_nan) {
    return {fp<F>::from_bits(s | F::max_finite_bits), std::uint8_t(flags | flag::overflow | flag::inexact)};
  } else {
    if (e.saturate) return {fp<F>::from_bits(s | F::max_finite_bits), flags};
    return {fp<F>::from_bits(s | F::inf_bits), std::uint8_t(flags | flag::invalid)};
  }
}

template <class F> BF16EMU_CXHD result<F> zero(bool sign) noexcept {
  return {fp<F>::from_bits(sign ? F::sign_mask : 0), 0};
}

// Sign of an exact zero sum of terms with signs sa and sb.
BF16EMU_CXHD bool zero_sum_sign(bool sa, bool sb, const env &e) noexcept {
  return sa == sb ? sa : e.mode == round_mode::downward;
}

} // namespace bf16emu::detail
