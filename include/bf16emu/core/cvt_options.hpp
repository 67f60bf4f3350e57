// bf16emu: the two result options of PTX `cvt` to a floating-point type that are not a rounding
// mode, applied around the core's one convert (docs/formats.md, "PTX cvt"):
//
//   .satfinite  a magnitude beyond the destination's max finite, an infinite input included,
//               gives the max finite of the same sign; a NaN input stays NaN. (env::saturate
//               covers a finite value that rounds past max; an infinite input is added here.)
//   .relu       the converted result, if negative, becomes +0; a NaN result becomes the
//               canonical NaN (all exponent and fraction bits set, sign clear). -0 counts as
//               negative here (sign bit test): an open question, docs/formats.md.
//
// Neither is a rounding mode: both act on what the convert returns, flags untouched but for
// .satfinite's overflow on an infinite input (none: the input is exact, the clamp is the
// instruction's definition).
#pragma once

#include "bf16emu/core/arith.hpp"

namespace bf16emu {

// .relu on a converted value of F.
template <class F> BF16EMU_CXHD fp<F> relu(fp<F> x) noexcept {
  if (x.is_nan()) return fp<F>::from_bits(F::exp_mask | F::frac_mask);
  if (x.sign()) return fp<F>::from_bits(0);
  return x;
}

// The core's convert with .satfinite on or off (e.saturate is set from `satfinite`).
template <class Out, class In>
BF16EMU_CXHD result<Out> convert_satfinite(fp<In> x, env e, bool satfinite) noexcept {
  e.saturate = satfinite;
  if (satfinite && x.is_inf())
    return {fp<Out>::from_bits((x.sign() ? Out::sign_mask : 0) | Out::max_finite_bits), 0};
  return convert<Out>(x, e);
}

} // namespace bf16emu
