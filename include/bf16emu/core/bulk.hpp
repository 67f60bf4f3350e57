// bf16emu: the header-only bulk loops (convert_loop, add_loop, sub_loop). Not to be confused
// with the compiled Highway kernels bf16emu::bulk::convert_n/add_n/sub_n (src/bulk), which
// serve the Python module; these loops serve a module built without Highway and the formats
// src/bulk has no kernel for (fp32, tf32 and e5m2 add and sub). Each is a loop over plain integer lanes that
// ends in the shared rounding primitives of core/round.hpp (`cut`, `inexact_bit`, `rounds_up<Mode>`) with the
// mode fixed at compile time, and a second pass in which the scalar routine redoes every
// lane the loop cannot settle. Results and flags equal the element-wise scalar calls with
// the same env (stochastic rounding included: every element uses env::random, as a scalar
// call with that env does).
//
// convert_loop: formats with the same exponent range (fp32 -> bf16, fp32 -> tf32). The quantum
//   is at a fixed bit position for every normal input, so the rounding is `cut` at a constant
//   shift. Scalar lanes: NaN and subnormal inputs.
// add_loop / sub_loop: one format with infinities and <= 24 significant bits. Scalar lanes: an
//   operand that is zero, subnormal, Inf or NaN, an exact zero sum, a tiny result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bf16emu/core/arith.hpp"

namespace bf16emu {

namespace detail {

// Calls fn(std::integral_constant<round_mode, M>{}) for the run-time mode m, so that a bulk
// loop is compiled once per mode with its rounding rule fixed.
template <class Fn> decltype(auto) with_fixed_mode(round_mode m, Fn &&fn) {
  using rm = round_mode;
  switch (m) {
  case rm::nearest_even: return fn(std::integral_constant<rm, rm::nearest_even>{});
  case rm::nearest_away: return fn(std::integral_constant<rm, rm::nearest_away>{});
  case rm::toward_zero: return fn(std::integral_constant<rm, rm::toward_zero>{});
  case rm::upward: return fn(std::integral_constant<rm, rm::upward>{});
  case rm::downward: return fn(std::integral_constant<rm, rm::downward>{});
  case rm::to_odd: return fn(std::integral_constant<rm, rm::to_odd>{});
  case rm::nearest_zero: return fn(std::integral_constant<rm, rm::nearest_zero>{});
  case rm::stochastic_equal: return fn(std::integral_constant<rm, rm::stochastic_equal>{});
  case rm::stochastic_k: return fn(std::integral_constant<rm, rm::stochastic_k>{});
  default: return fn(std::integral_constant<rm, rm::stochastic>{});
  }
}

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
  if (n == 0) return 0; // in and out may be null: no element to take the address of
  // fp<F> is standard-layout with one member: its array is an array of bit patterns.
  const U *src = &in[0].bits;
  typename Out::storage *dst = &out[0].bits;
  U any_inexact = 0, any_overflow = 0, any_slow = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const U x = src[i];
    const U mag = U(x & In::abs_mask);
    const bool sign = (x & In::sign_mask) != 0;
    const cut_bits<U> c = cut<U>(mag, sh, false);
    const U inexact = U(inexact_bit(c));
    const U rounded = U(c.kept + U(rounds_up<Mode>(c, sign, random, e.sr_bits) & inexact));
    const U finite = U(mag < U(In::exp_mask));
    const U over = U(finite & U(rounded > U(Out::max_finite_bits)));
    const U res = over ? (sign ? sat_neg : sat_pos) : rounded;
    dst[i] = typename Out::storage(U(x & In::sign_mask) >> (In::width - Out::width) | res);
    // Flags of lanes the scalar routine redoes are its own (a subnormal input read as zero
    // under inputs_as_zero is exact, for one).
    const U slow = U(U(mag > U(In::exp_mask)) | U(U(mag < U(In::min_normal_bits)) & U(mag != 0)));
    any_inexact |= U(inexact & finite & (slow ^ 1));
    any_overflow |= over;
    any_slow |= slow;
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

// Bulk add: the lane's window and its size. The larger operand's significand sits at bit K
// (its leading bit at P - 1 + K), the smaller one is shifted left by K - d (exact) or, when
// d > K, dropped into the sticky bit: K is chosen so that the dropped operand lies below every
// bit the rounding reads (guard and round bits; for stochastic rounding the 32 bits below the
// last kept bit), so the window minus one plus sticky (subtraction) or plus sticky (addition)
// rounds as the exact sum does, which is what round_pack sees in its 64-bit window.
//
//   bf16, nearest-even (K = P + 1 = 9):  B = 1xxxxxxx.000000000   (big, 8 bits at bit 9)
//                                        S =   1yyyyyyy0.0000000   (small << (K - d), d = 2)
//   R = B +- S, normalised so that its leading bit is at P + K = 17; then cut at K + 1.
template <class F, round_mode Mode> struct add_lane {
  static constexpr int P = F::precision;
  static constexpr int K = reads_frac32<Mode> ? P + 31 : P + 1;
  static constexpr int top = P + K; // leading bit of |a| + |b| is at most here
  static constexpr bool supported = top < 64;
  using W = std::conditional_t<(top < 32), std::uint32_t, std::uint64_t>;
};

template <class F> inline constexpr bool bulk_add_format = F::has_inf &&F::precision <= 24;

template <class F, round_mode Mode>
std::uint8_t add_n_fixed(const fp<F> *a, const fp<F> *b, fp<F> *out, std::size_t n, bool negate_b,
                         const env &e) noexcept {
  using L = add_lane<F, Mode>;
  using W = typename L::W;
  using S = typename F::storage;
  constexpr int M = F::frac_bits, K = L::K, top = L::top;
  constexpr W wbits = W(sizeof(W) * 8);
  env fixed = e;
  fixed.mode = Mode;
  const W sat_pos = overflow_to_inf(false, fixed) ? W(F::inf_bits) : W(F::max_finite_bits);
  const W sat_neg = overflow_to_inf(true, fixed) ? W(F::inf_bits) : W(F::max_finite_bits);
  const std::uint32_t random = e.random;
  const W flip = negate_b ? W(F::sign_mask) : W(0);
  if (n == 0) return 0; // a, b and out may be null: no element to take the address of
  const S *pa = &a[0].bits, *pb = &b[0].bits;
  S *dst = &out[0].bits;
  W any_inexact = 0, any_overflow = 0;
  std::uint8_t flags = 0;
  constexpr std::size_t chunk = 256;
  std::uint8_t slow[chunk];
  for (std::size_t base = 0; base < n; base += chunk) {
    const std::size_t m = n - base < chunk ? n - base : chunk;
    W any_slow = 0;
    for (std::size_t i = 0; i < m; ++i) {
      // 1. Operands in sign-magnitude, ordered by magnitude (bit patterns of normal numbers
      //    order as their values do); the result has the larger one's sign.
      const W x = pa[base + i], y = W(pb[base + i] ^ flip);
      const W mx = W(x & F::abs_mask), my = W(y & F::abs_mask);
      const W swap = W(W(0) - W(mx < my)); // all ones when y is larger (a select, not a min/max)
      const W big = W(x ^ ((x ^ y) & swap));
      const W mbig = W(big & F::abs_mask), msmall = W((x ^ y ^ big) & F::abs_mask);
      const W ebig = W(mbig >> M), esmall = W(msmall >> M);
      const W sbig = W((mbig & F::frac_mask) | F::min_normal_bits);
      const W ssmall = W((msmall & F::frac_mask) | F::min_normal_bits);
      // 2. The exact sum in the window, floor plus sticky.
      const W d = W(ebig - esmall);
      const W far = W(d > W(K));
      const W dk = d < W(K) ? d : W(K);
      const W aligned = W(W(ssmall << (K - dk)) & W(far - 1)); // masks, not branches: d is random
      const W wide = W(sbig << K);
      const W subtract = W(((x ^ y) & F::sign_mask) != 0);
      const W sum = W(wide + W(W(aligned ^ W(0 - subtract)) + subtract) - W(far & subtract));
      // 3. Normalise the leading bit to `top`: the binade, then `cut` at a fixed shift.
      const W shift = W(W(top - 63 + clz64(sum)) & (wbits - 1)); // a zero sum is a scalar lane
      const cut_bits<W> c = cut<W>(W(sum << shift), K + 1, far != 0);
      const W inexact = W(inexact_bit(c));
      const W rounded =
          W(c.kept + W(rounds_up<Mode>(c, (big & F::sign_mask) != 0, random, e.sr_bits) & inexact));
      // 4. Pack: the hidden bit carries into the exponent field (as in round_pack).
      const W mag = W(W(W(ebig - shift) << M) + rounded); // biased exponent ebig + 1 - shift, minus 1
      const W over = W(mag > W(F::max_finite_bits));
      const W sign = W(big & F::sign_mask);
      const W res = over ? (sign ? sat_neg : sat_pos) : mag;
      dst[base + i] = S(sign | res);
      const W lane_slow = W(W(W(mx - F::min_normal_bits) >= W(F::exp_mask - F::min_normal_bits)) |
                            W(W(my - F::min_normal_bits) >= W(F::exp_mask - F::min_normal_bits)) |
                            W(sum == 0) | W(shift >= W(ebig + 1)));
      slow[i] = std::uint8_t(lane_slow);
      any_slow |= lane_slow;
      any_inexact |= W(inexact & (lane_slow ^ 1));
      any_overflow |= W(over & (lane_slow ^ 1));
    }
    if (any_slow) {
      for (std::size_t i = 0; i < m; ++i) {
        if (slow[i]) {
          const result<F> r = negate_b ? sub(a[base + i], b[base + i], e) : add(a[base + i], b[base + i], e);
          out[base + i] = r.value;
          flags |= r.flags;
        }
      }
    }
  }
  return std::uint8_t(flags | (any_inexact ? flag::inexact : 0) |
                      (any_overflow ? (flag::overflow | flag::inexact) : 0));
}

// Element-wise scalar add/sub: modes or formats the fixed loop does not cover.
template <class F>
std::uint8_t add_n_scalar(const fp<F> *a, const fp<F> *b, fp<F> *out, std::size_t n, bool negate_b,
                          const env &e) noexcept {
  std::uint8_t flags = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const result<F> r = negate_b ? sub(a[i], b[i], e) : add(a[i], b[i], e);
    out[i] = r.value;
    flags |= r.flags;
  }
  return flags;
}

template <class F, round_mode Mode>
std::uint8_t add_n_mode(const fp<F> *a, const fp<F> *b, fp<F> *out, std::size_t n, bool negate_b,
                        const env &e) noexcept {
  if constexpr (add_lane<F, Mode>::supported)
    return add_n_fixed<F, Mode>(a, b, out, n, negate_b, e);
  else
    return add_n_scalar<F>(a, b, out, n, negate_b, e);
}

template <class F>
std::uint8_t add_n_dispatch(const fp<F> *a, const fp<F> *b, fp<F> *out, std::size_t n, bool negate_b,
                            const env &e) noexcept {
  return with_fixed_mode(
      e.mode, [&](auto mode) { return add_n_mode<F, decltype(mode)::value>(a, b, out, n, negate_b, e); });
}

} // namespace detail

// out[i] = convert<Out>(in[i], e) for i < n; returns the OR of all flags.
template <class Out, class In>
requires detail::same_range_narrowing<Out, In> std::uint8_t convert_loop(const fp<In> *in, fp<Out> *out,
                                                                         std::size_t n, const env &e = {})
noexcept {
  return detail::with_fixed_mode(e.mode, [&](auto mode) {
    return detail::convert_n_fixed<Out, In, decltype(mode)::value>(in, out, n, e);
  });
}

// out[i] = add(a[i], b[i], e) for i < n; returns the OR of all flags. out must not overlap a or b.
template <class F>
requires detail::bulk_add_format<F> std::uint8_t add_loop(const fp<F> *a, const fp<F> *b, fp<F> *out,
                                                          std::size_t n, const env &e = {})
noexcept { return detail::add_n_dispatch<F>(a, b, out, n, false, e); }

// out[i] = sub(a[i], b[i], e) for i < n; returns the OR of all flags. out must not overlap a or b.
template <class F>
requires detail::bulk_add_format<F> std::uint8_t sub_loop(const fp<F> *a, const fp<F> *b, fp<F> *out,
                                                          std::size_t n, const env &e = {})
noexcept { return detail::add_n_dispatch<F>(a, b, out, n, true, e); }

} // namespace bf16emu
