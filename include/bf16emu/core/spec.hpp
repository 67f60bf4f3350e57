// bf16emu: conversion in run-time formats (format_spec, core/format.hpp; issue 44).
//
// Every routine here takes its formats as descriptions: a trait (F{}: its fields are constants)
// or a format_spec (fields read at run time). The rounding is detail::round_pack_spec, the one
// round-and-pack routine of core/round.hpp that round_pack<F> also runs; decoding, NaN, Inf and
// zero follow core/unpack.hpp and core/special.hpp rule for rule (docs/formats.md), extended to
// the fnuz, p3109 and e8m0 encodings. A trait F and its twin make_spec<F>() give the same bits and
// flags (tests/core/test_formats_runtime.cpp checks every encoding and 10^7 binary32 inputs).
//
// Speed: one scalar call per element (no bulk kernel): about 10-20 ns per conversion on this
// project's machines, against 0.2-1 ns for the src/bulk kernels of the compile-time formats.
#pragma once

#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu {

namespace detail {

// The one NaN of fnuz, p3109 and e8m0 has no sign; a NaN of those reads as positive.
template <class F> BF16EMU_CXHD bool signed_nan(const F &f) noexcept {
  return f.encoding == special_encoding::ieee || f.encoding == special_encoding::fn;
}

// What decoding a pattern of F gives (unpack<F> for a description), and whether it is a
// signaling NaN (ieee encoding, quiet bit clear).
struct spec_unpacked {
  unpacked u;
  std::uint64_t frac = 0; // the fraction field (a NaN's payload)
  bool snan = false;
};

template <class F>
BF16EMU_CXHD spec_unpacked unpack_spec(const F &f, std::uint64_t bits, const env &e) noexcept {
  using E = special_encoding;
  spec_unpacked r;
  unpacked &u = r.u;
  bits &= f.sign_mask | f.abs_mask;
  const int M = f.frac_bits;
  if (f.encoding == E::e8m0) { // 2^(code - bias), the all-ones code NaN; no sign, no zero
    if (bits == f.abs_mask) {
      u.k = kind::nan;
    } else {
      u.k = kind::finite;
      u.sig = 1;
      u.exp = int(bits) - f.bias;
    }
    return r;
  }
  const std::uint64_t mag = bits & f.abs_mask;
  const std::uint64_t frac = mag & f.frac_mask;
  const int biased = int(mag >> M);
  r.frac = frac;
  u.sign = (bits & f.sign_mask) != 0;
  bool nan = false, inf = false;
  switch (f.encoding) {
  case E::ieee:
    nan = biased == f.exp_field_max && frac != 0;
    inf = biased == f.exp_field_max && frac == 0;
    break;
  case E::fn: nan = mag == (f.exp_mask | f.frac_mask); break;
  case E::fnuz: nan = bits == f.sign_mask; break;
  case E::p3109:
    nan = bits == f.sign_mask;
    inf = mag == f.abs_mask;
    break;
  default: break; // finite
  }
  if (nan) {
    u.k = kind::nan;
    if (!signed_nan(f)) u.sign = false;
    r.snan = f.encoding == E::ieee && (frac & f.quiet_bit) == 0;
    return r;
  }
  if (inf) {
    u.k = kind::inf;
    return r;
  }
  if (biased == 0) {
    const bool daz =
        (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
    u.k = (frac == 0 || daz || !f.has_subnormals) ? kind::zero : kind::finite;
    u.sig = frac;
    u.exp = f.emin - M;
    return r;
  }
  u.k = kind::finite;
  u.sig = frac | (std::uint64_t{1} << M);
  u.exp = biased - f.bias - M;
  return r;
}

// default_nan<F> (core/special.hpp) for a description.
template <class F>
BF16EMU_CXHD packed default_nan_spec(const F &f, const env &e, std::uint8_t flags) noexcept {
  if (!f.has_nan) return {f.max_finite_bits, std::uint8_t(flags | flag::invalid)};
  const bool all_ones = e.nan == nan_policy::cuda &&
                        (f.encoding == special_encoding::ieee || f.encoding == special_encoding::fn);
  return {all_ones ? (f.exp_mask | f.frac_mask) : f.nan_bits, flags};
}

// propagate_nan<Out, In> for descriptions: the NaN operand's sign and fraction (payload) given.
template <class Out>
BF16EMU_CXHD packed propagate_nan_spec(const Out &out, bool sign, std::uint64_t frac, int in_frac_bits,
                                       const env &e, std::uint8_t flags) noexcept {
  if (!out.has_nan || e.nan != nan_policy::ieee) return default_nan_spec(out, e, flags);
  const std::uint64_t s = sign ? out.sign_mask : 0;
  if (out.encoding == special_encoding::fn) return {s | out.inf_bits, flags};
  if (out.encoding != special_encoding::ieee) return {out.nan_bits, flags}; // the one unsigned NaN
  std::uint64_t payload = frac;
  if (out.frac_bits >= in_frac_bits)
    payload <<= (out.frac_bits - in_frac_bits);
  else
    payload >>= (in_frac_bits - out.frac_bits);
  return {s | out.exp_mask | payload | out.quiet_bit, flags};
}

// infinity<F> for a description. Formats without Inf: NaN (invalid), or +-max finite under
// env::saturate; finite formats +-max with overflow and inexact; e8m0: -Inf is NaN (no sign).
template <class F>
BF16EMU_CXHD packed infinity_spec(const F &f, bool sign, const env &e, std::uint8_t flags = 0) noexcept {
  const std::uint64_t s = sign ? f.sign_mask : 0;
  if (f.has_inf) return {s | f.inf_bits, flags};
  if (!f.has_nan) return {s | f.max_finite_bits, std::uint8_t(flags | flag::overflow | flag::inexact)};
  if (f.encoding == special_encoding::e8m0 && sign) return {f.nan_bits, std::uint8_t(flags | flag::invalid)};
  if (e.saturate) return {s | f.max_finite_bits, flags};
  return {f.encoding == special_encoding::fn ? (s | f.inf_bits) : f.nan_bits,
          std::uint8_t(flags | flag::invalid)};
}

// zero<F> for a description: no sign where the format has no negative zero; e8m0 (no zero) gives
// its smallest number 2^-bias with underflow and inexact.
template <class F> BF16EMU_CXHD packed zero_spec(const F &f, bool sign) noexcept {
  if (f.encoding == special_encoding::e8m0) return {0, std::uint8_t(flag::underflow | flag::inexact)};
  return {f.has_neg_zero && sign ? f.sign_mask : 0, 0};
}

// convert<Out>(fp<In>) for descriptions.
template <class Out, class In, class Tr>
BF16EMU_CXHD packed convert_spec(const Out &out, const In &in, std::uint64_t bits, const env &e,
                                 Tr &tr) noexcept {
  const spec_unpacked su = unpack_spec(in, bits, e);
  const unpacked &u = su.u;
  if (u.k == kind::nan)
    return propagate_nan_spec(out, u.sign, su.frac, in.frac_bits, e,
                              su.snan ? flag::invalid : std::uint8_t(0));
  if (u.k == kind::inf) return infinity_spec(out, u.sign, e);
  if (u.k == kind::zero) return zero_spec(out, u.sign);
  if (out.encoding == special_encoding::e8m0 && u.sign) return {out.nan_bits, flag::invalid}; // no sign
  unrounded r;
  r.sign = u.sign;
  r.exp = u.exp;
  r.sig = u.sig;
  return round_pack_spec(out, r, e, tr, op_kind::convert);
}
template <class Out, class In>
BF16EMU_CXHD packed convert_spec(const Out &out, const In &in, std::uint64_t bits,
                                 const env &e = {}) noexcept {
  no_trace off;
  return convert_spec(out, in, bits, e, off);
}

} // namespace detail

// The public names: a value of a run-time format is its bit pattern (uint64_t, low `width` bits).
struct spec_result {
  std::uint64_t bits = 0;
  std::uint8_t flags = 0;
};

// x (bits of `from`) rounded into `to`; from and to are format_specs (make_spec<F>() for a trait).
template <class T = no_trace>
BF16EMU_CXHD spec_result convert(const format_spec &to, const format_spec &from, std::uint64_t bits,
                                 const env &e = {}, T &&tr = T{}) noexcept {
  const detail::packed p = detail::convert_spec(to, from, bits, e, tr);
  return {p.bits, p.flags};
}

} // namespace bf16emu
