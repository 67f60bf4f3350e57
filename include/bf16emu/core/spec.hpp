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

// ---------------------------------------------------------------------------------------------
// Arithmetic with formats given as descriptions: the general routines of core/arith.hpp
// (add_general, mul_general, fma_general, div_general, sqrt_general) rule for rule, the exact
// result formed by the same sum_terms / long_div / sqrt_root, rounded by round_pack_spec. Every
// operand has at most 24 significant bits (arith_ok); the front ends check it.

// The first NaN among the operands (a, then b, then c), invalid for any signaling NaN.
template <class Out, class A, class B, class C>
BF16EMU_CXHD packed nan_result_spec(const Out &out, const env &e, std::uint8_t extra, const A &fa,
                                    const spec_unpacked &a, const B &fb, const spec_unpacked &b, const C &fc,
                                    const spec_unpacked &c, bool has_c) noexcept {
  const bool snan = a.snan || b.snan || (has_c && c.snan);
  const std::uint8_t flags = std::uint8_t(extra | (snan ? flag::invalid : 0));
  if (a.u.k == kind::nan) return propagate_nan_spec(out, a.u.sign, a.frac, fa.frac_bits, e, flags);
  if (b.u.k == kind::nan) return propagate_nan_spec(out, b.u.sign, b.frac, fb.frac_bits, e, flags);
  return propagate_nan_spec(out, c.u.sign, c.frac, fc.frac_bits, e, flags);
}

template <class Out, class A, class B, class Tr>
BF16EMU_CXHD packed add_spec(const Out &out, const A &fa, std::uint64_t a, const B &fb, std::uint64_t b,
                             bool negate_b, const env &e, Tr &tr, op_kind op) noexcept {
  const spec_unpacked sa = unpack_spec(fa, a, e), sb = unpack_spec(fb, b, e);
  const unpacked &ua = sa.u;
  unpacked ub = sb.u;
  ub.sign ^= negate_b;
  if (ua.k == kind::nan || ub.k == kind::nan)
    return nan_result_spec(out, e, 0, fa, sa, fb, sb, fb, sb, false);
  if (ua.k == kind::inf || ub.k == kind::inf) {
    if (ua.k == kind::inf && ub.k == kind::inf && ua.sign != ub.sign)
      return default_nan_spec(out, e, flag::invalid);
    return infinity_spec(out, ua.k == kind::inf ? ua.sign : ub.sign, e);
  }
  if (ua.k == kind::zero && ub.k == kind::zero) return zero_spec(out, zero_sum_sign(ua.sign, ub.sign, e));
  unrounded u;
  if (ua.k == kind::zero || ub.k == kind::zero) {
    const unpacked &nz = ua.k == kind::zero ? ub : ua;
    u.sign = nz.sign;
    u.exp = nz.exp;
    u.sig = nz.sig;
  } else {
    bool exact_zero = false;
    u = sum_terms<Tr::enabled>(ua.sign, ua.exp, ua.sig, ub.sign, ub.exp, ub.sig, e, exact_zero);
    if (exact_zero) return zero_spec(out, u.sign);
  }
  return round_pack_spec(out, u, e, tr, op);
}

template <class Out, class A, class B, class Tr>
BF16EMU_CXHD packed mul_spec(const Out &out, const A &fa, std::uint64_t a, const B &fb, std::uint64_t b,
                             const env &e, Tr &tr) noexcept {
  const spec_unpacked sa = unpack_spec(fa, a, e), sb = unpack_spec(fb, b, e);
  const unpacked &ua = sa.u, &ub = sb.u;
  const bool sign = ua.sign != ub.sign;
  if (ua.k == kind::nan || ub.k == kind::nan)
    return nan_result_spec(out, e, 0, fa, sa, fb, sb, fb, sb, false);
  if (ua.k == kind::inf || ub.k == kind::inf) {
    if (ua.k == kind::zero || ub.k == kind::zero) return default_nan_spec(out, e, flag::invalid);
    return infinity_spec(out, sign, e);
  }
  if (ua.k == kind::zero || ub.k == kind::zero) return zero_spec(out, sign);
  unrounded u;
  u.sign = sign;
  u.exp = ua.exp + ub.exp;
  u.sig = ua.sig * ub.sig; // <= 48 bits: exact
  return round_pack_spec(out, u, e, tr, op_kind::mul);
}

template <class Out, class A, class B, class C, class Tr>
BF16EMU_CXHD packed fma_spec(const Out &out, const A &fa, std::uint64_t a, const B &fb, std::uint64_t b,
                             const C &fc, std::uint64_t c, const env &e, Tr &tr) noexcept {
  const spec_unpacked sa = unpack_spec(fa, a, e), sb = unpack_spec(fb, b, e), sc = unpack_spec(fc, c, e);
  const unpacked &ua = sa.u, &ub = sb.u, &uc = sc.u;
  const bool ps = ua.sign != ub.sign;
  const bool inf_times_zero =
      (ua.k == kind::inf && ub.k == kind::zero) || (ua.k == kind::zero && ub.k == kind::inf);
  if (ua.k == kind::nan || ub.k == kind::nan || uc.k == kind::nan)
    return nan_result_spec(out, e, inf_times_zero ? flag::invalid : 0, fa, sa, fb, sb, fc, sc, true);
  if (inf_times_zero) return default_nan_spec(out, e, flag::invalid);
  const bool prod_inf = ua.k == kind::inf || ub.k == kind::inf;
  if (prod_inf || uc.k == kind::inf) {
    if (prod_inf && uc.k == kind::inf && ps != uc.sign) return default_nan_spec(out, e, flag::invalid);
    return infinity_spec(out, prod_inf ? ps : uc.sign, e);
  }
  const bool prod_zero = ua.k == kind::zero || ub.k == kind::zero;
  if (prod_zero && uc.k == kind::zero) return zero_spec(out, zero_sum_sign(ps, uc.sign, e));
  unrounded u;
  if (prod_zero) {
    u.sign = uc.sign;
    u.exp = uc.exp;
    u.sig = uc.sig;
  } else if (uc.k == kind::zero) {
    u.sign = ps;
    u.exp = ua.exp + ub.exp;
    u.sig = ua.sig * ub.sig;
  } else {
    bool exact_zero = false;
    u = sum_terms<Tr::enabled>(ps, ua.exp + ub.exp, ua.sig * ub.sig, uc.sign, uc.exp, uc.sig, e, exact_zero);
    if (exact_zero) return zero_spec(out, u.sign);
  }
  return round_pack_spec(out, u, e, tr, op_kind::fma);
}

template <class Out, class A, class B, class Tr>
BF16EMU_CXHD packed div_spec(const Out &out, const A &fa, std::uint64_t a, const B &fb, std::uint64_t b,
                             const env &e, Tr &tr) noexcept {
  const spec_unpacked sa = unpack_spec(fa, a, e), sb = unpack_spec(fb, b, e);
  const unpacked &ua = sa.u, &ub = sb.u;
  const bool sign = ua.sign != ub.sign;
  if (ua.k == kind::nan || ub.k == kind::nan)
    return nan_result_spec(out, e, 0, fa, sa, fb, sb, fb, sb, false);
  if (ua.k == kind::inf) {
    if (ub.k == kind::inf) return default_nan_spec(out, e, flag::invalid);
    return infinity_spec(out, sign, e);
  }
  if (ub.k == kind::inf) return zero_spec(out, sign);
  if (ub.k == kind::zero) {
    if (ua.k == kind::zero) return default_nan_spec(out, e, flag::invalid);
    return infinity_spec(out, sign, e, flag::divbyzero);
  }
  if (ua.k == kind::zero) return zero_spec(out, sign);
  return round_pack_spec(out, long_div<Tr::enabled>(sign, ua, ub), e, tr, op_kind::div);
}

template <class Out, class A, class Tr>
BF16EMU_CXHD packed sqrt_spec(const Out &out, const A &fa, std::uint64_t a, const env &e, Tr &tr) noexcept {
  const spec_unpacked sa = unpack_spec(fa, a, e);
  const unpacked &ua = sa.u;
  if (ua.k == kind::nan) return nan_result_spec(out, e, 0, fa, sa, fa, sa, fa, sa, false);
  if (ua.k == kind::zero) return zero_spec(out, ua.sign);
  if (ua.sign) return default_nan_spec(out, e, flag::invalid);
  if (ua.k == kind::inf) return infinity_spec(out, false, e);
  std::uint64_t m = ua.sig;
  std::int32_t ex = ua.exp;
  normalize_to(m, ex, 60);
  if (ex & 1) {
    m <<= 1;
    ex -= 1;
  }
  const isqrt_result r = sqrt_root(m);
  unrounded u;
  u.sig = r.root;
  u.exp = ex / 2 - sqrt_extra_bits;
  u.tail_sign = r.rem != 0;
  if constexpr (Tr::enabled) {
    u.tail = scale(double(r.rem) / (2.0 * double(r.root)), u.exp);
    u.tail_exact = r.rem == 0;
  }
  return round_pack_spec(out, u, e, tr, op_kind::sqrt);
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

// Arithmetic in run-time formats: operands of format `in` (at most 24 significant bits), the
// result rounded once into `out`. op is add, sub, mul, div, fma (a * b + c) or sqrt (a).
template <class T = no_trace>
BF16EMU_CXHD spec_result arith(op_kind op, const format_spec &out, const format_spec &in, std::uint64_t a,
                               std::uint64_t b = 0, std::uint64_t c = 0, const env &e = {},
                               T &&tr = T{}) noexcept {
  detail::packed p;
  switch (op) {
  case op_kind::add: p = detail::add_spec(out, in, a, in, b, false, e, tr, op_kind::add); break;
  case op_kind::sub: p = detail::add_spec(out, in, a, in, b, true, e, tr, op_kind::sub); break;
  case op_kind::mul: p = detail::mul_spec(out, in, a, in, b, e, tr); break;
  case op_kind::fma: p = detail::fma_spec(out, in, a, in, b, in, c, e, tr); break;
  case op_kind::div: p = detail::div_spec(out, in, a, in, b, e, tr); break;
  case op_kind::sqrt: p = detail::sqrt_spec(out, in, a, e, tr); break;
  default: p = detail::convert_spec(out, in, a, e, tr); break;
  }
  return {p.bits, p.flags};
}

} // namespace bf16emu
