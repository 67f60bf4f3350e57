// bf16emu: decoding a bit pattern into class, sign, integer significand and exponent.
#pragma once

#include <cstdint>

#include "bf16emu/core/env.hpp"

namespace bf16emu::detail {

enum class kind : std::uint8_t { zero, finite, inf, nan };

// |x| = sig * 2^exp for finite x. sig includes the hidden bit for normal numbers;
// subnormals keep their raw fraction (exp = emin - M), so sig has 1..precision bits.
struct unpacked {
  kind k = kind::zero;
  bool sign = false;
  std::int32_t exp = 0;
  std::uint64_t sig = 0;
};

// Normal numbers (one unsigned compare). In fn formats the top exponent code holds
// normal numbers too, all but the NaN pattern.
template <class F> BF16EMU_CXHD bool is_normal(fp<F> x) noexcept {
  constexpr unsigned top_normal = unsigned(F::has_inf ? F::exp_field_max - 1 : F::exp_field_max);
  return unsigned(x.biased_exp() - 1) < top_normal && (F::has_inf || !x.is_nan());
}

// The decoding of a number known to be normal (is_normal(x)).
template <class F> BF16EMU_CXHD unpacked unpack_normal(fp<F> x) noexcept {
  unpacked u;
  u.k = kind::finite;
  u.sign = x.sign();
  u.sig = std::uint64_t(x.frac()) | (std::uint64_t{1} << F::frac_bits);
  u.exp = x.biased_exp() - F::bias - F::frac_bits;
  return u;
}

// The binary64 value of a number known to be normal (is_normal(x)): exact, as every format
// here has at most 24 significant bits and an exponent range inside binary64's. binary32 and
// bfloat16 convert through float (one instruction; a normal operand raises no host flag),
// the others by placing the fields.
template <class F> BF16EMU_CXHD double to_binary64(fp<F> x) noexcept {
  if constexpr (F::exp_bits == 8 && (F::frac_bits == 23 || F::frac_bits == 7)) {
    return double(bit_cast<float>(std::uint32_t(std::uint32_t(x.bits) << (23 - F::frac_bits))));
  } else {
    const std::uint64_t sign = std::uint64_t(x.sign()) << 63;
    const std::uint64_t mag = std::uint64_t(x.bits & F::abs_mask) << (52 - F::frac_bits);
    return bit_cast<double>(sign | (mag + (std::uint64_t(1023 - F::bias) << 52)));
  }
}

template <class F> BF16EMU_CXHD unpacked unpack(fp<F> x, const env &e) noexcept {
  if (is_normal(x)) return unpack_normal(x); // the common case first
  unpacked u;
  u.sign = x.sign();
  const std::uint64_t frac = x.frac();
  if (x.is_nan()) {
    u.k = kind::nan;
  } else if (x.is_inf()) {
    u.k = kind::inf;
  } else { // biased == 0
    const bool daz =
        (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
    u.k = (frac == 0 || daz) ? kind::zero : kind::finite;
    u.sig = frac;
    u.exp = F::emin - F::frac_bits;
  }
  return u;
}

// Index of the most significant set bit (sig != 0).
BF16EMU_CXHD int msb(std::uint64_t sig) noexcept { return 63 - clz64(sig); }

// Shifts sig left so that its leading bit sits at bit `pos`, adjusting exp.
BF16EMU_CXHD void normalize_to(std::uint64_t &sig, std::int32_t &exp, int pos) noexcept {
  const int s = pos - msb(sig);
  sig <<= s;
  exp -= s;
}

} // namespace bf16emu::detail
