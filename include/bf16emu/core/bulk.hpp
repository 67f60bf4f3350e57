// bf16emu: bulk conversion between formats with the same exponent range
// (fp32 -> bf16, fp32 -> tf32): the quantum is at a fixed bit position for every
// normal input, so the rounding is `cut` at a constant shift and one `rounds_up`
// rule with the mode fixed at compile time — a loop the compiler vectorises.
// Lanes the fixed path cannot settle (NaN, subnormal inputs) are redone by the
// scalar routine, so results and flags equal element-wise convert<Out>().
#pragma once

#include <cstddef>
#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu {

namespace detail {

template <class Out, class In>
inline constexpr bool same_range_narrowing =
    In::exp_bits == Out::exp_bits &&In::has_inf &&Out::has_inf &&In::frac_bits > Out::frac_bits;

template <class Out, class In, round_mode Mode>
std::uint8_t convert_n_fixed(const fp<In> *in, fp<Out> *out, std::size_t n, const env &e) noexcept {
  using U = typename In::storage;
  constexpr int sh = In::frac_bits - Out::frac_bits;
  env fixed = e;
  fixed.mode = Mode;
  const U sat_pos = overflow_to_inf(false, fixed) ? U(Out::inf_bits) : U(Out::max_finite_bits);
  const U sat_neg = overflow_to_inf(true, fixed) ? U(Out::inf_bits) : U(Out::max_finite_bits);
  const std::uint32_t random = e.random;
  // fp<F> is standard-layout with one member: its array is an array of bit patterns.
  const U *src = &in[0].bits;
  typename Out::storage *dst = &out[0].bits;
  U any_inexact = 0, any_overflow = 0, any_slow = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const U x = src[i];
    const U mag = U(x & In::abs_mask);
    const bool sign = (x & In::sign_mask) != 0;
    const cut_bits<U> c = cut<U>(mag, sh, false);
    const bool inexact = (c.guard | c.round | c.sticky) != 0;
    const U rounded = U(c.kept + U(rounds_up<Mode>(c, sign, random) & inexact));
    const bool finite = mag < U(In::exp_mask);
    const bool over = finite & (rounded > U(Out::max_finite_bits));
    const U res = over ? (sign ? sat_neg : sat_pos) : rounded;
    dst[i] = typename Out::storage(U(x & In::sign_mask) >> (In::width - Out::width) | res);
    any_inexact |= U(inexact & finite);
    any_overflow |= U(over);
    any_slow |= U((mag > U(In::exp_mask)) | ((mag < U(In::min_normal_bits)) & (mag != 0)));
  }
  std::uint8_t flags = std::uint8_t((any_inexact ? flag::inexact : 0) | (any_overflow ? flag::overflow : 0));
  if (any_slow) {
    for (std::size_t i = 0; i < n; ++i) {
      const U mag = U(in[i].bits & In::abs_mask);
      if (mag > U(In::exp_mask) || (mag < U(In::min_normal_bits) && mag != 0)) {
        const result<Out> r = convert<Out>(in[i], e);
        out[i] = r.value;
        flags |= r.flags;
      }
    }
  }
  return flags;
}

} // namespace detail

// out[i] = convert<Out>(in[i], e) for i < n; returns the OR of all flags.
template <class Out, class In>
requires detail::same_range_narrowing<Out, In> std::uint8_t convert_n(const fp<In> *in, fp<Out> *out,
                                                                      std::size_t n, const env &e = {})
noexcept {
  switch (e.mode) {
  case round_mode::nearest_even:
    return detail::convert_n_fixed<Out, In, round_mode::nearest_even>(in, out, n, e);
  case round_mode::nearest_away:
    return detail::convert_n_fixed<Out, In, round_mode::nearest_away>(in, out, n, e);
  case round_mode::toward_zero:
    return detail::convert_n_fixed<Out, In, round_mode::toward_zero>(in, out, n, e);
  case round_mode::upward: return detail::convert_n_fixed<Out, In, round_mode::upward>(in, out, n, e);
  case round_mode::downward: return detail::convert_n_fixed<Out, In, round_mode::downward>(in, out, n, e);
  case round_mode::to_odd: return detail::convert_n_fixed<Out, In, round_mode::to_odd>(in, out, n, e);
  default: return detail::convert_n_fixed<Out, In, round_mode::stochastic>(in, out, n, e);
  }
}

} // namespace bf16emu
