// bf16emu attention: scalar arithmetic of the policies, on values held exactly in binary64.
//
// Every value an attention policy keeps (BF16, FP32 or binary64) is held in a double, which
// represents it exactly. Each operation below is one rounding of the core (or plain binary64
// arithmetic for the exact policy) and files its event under a ledger site. The per-site
// precision override of the policy (kernel_policy::site_precision, policy.hpp) acts here, once
// for every caller: at a site promoted to fp32 a rounding to BF16 rounds to FP32 instead; at a
// site promoted to exact every operation is binary64 and nothing is filed.
#pragma once

#include <cmath>

#include "bf16emu/attention/exp2_poly.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"

namespace bf16emu::attention {

inline f32 as_f32(double x) { return from_float(float(x)); } // exact for FP32 values
inline double of(f32 x) { return double(to_float(x)); }
inline double of(bf16 x) { return to_double(x); }
inline bf16 as_bf16(double x) { return convert<bfloat16>(from_double(x)).value; } // exact for BF16 values

// FP32 operations (round to nearest even) with their ledger site, under the site precision
// override `prec` (kernel_policy::site_precision; nullptr: every site as the policy).
template <class Obs> struct f32_ops {
  Obs *obs;
  const site_prec *prec = nullptr;
  site_prec at_prec(site s) const { return prec ? prec[int(s)] : site_prec::policy; }
  bool exact_at(site s) const { return at_prec(s) == site_prec::exact; }
  site_tracer<Obs> at(site s, bool p1 = false) const { return {obs, s, p1}; }
  double add(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a + b;
    return of(bf16emu::add(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double sub(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a - b;
    return of(bf16emu::sub(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double mul(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a * b;
    return of(bf16emu::mul(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double fma(double a, double b, double c, site s, bool p1 = false) const {
    if (exact_at(s)) return std::fma(a, b, c);
    return of(bf16emu::fma(as_f32(a), as_f32(b), as_f32(c), env{}, at(s, p1)).value);
  }
  double div(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a / b;
    return of(bf16emu::div(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  // binary64 value -> FP32 (one rounding).
  double to32(double x, site s, bool p1 = false) const {
    if (exact_at(s)) return x;
    return of(convert<binary32>(from_double(x), env{}, at(s, p1)).value);
  }
  // FP32 (or binary64) value -> BF16 (one rounding); FP32 at a site promoted to fp32.
  double to16(double x, site s, bool p1 = false) const {
    if (at_prec(s) != site_prec::policy) return to32(x, s, p1);
    return of(convert<bfloat16>(from_double(x), env{}, at(s, p1)).value);
  }
};

// The core's FP32 operations as an exp2_poly backend. The polynomial's internal roundings
// are not filed in the ledger; the exp site records the result's error against binary64 exp2.
struct soft_f32_backend {
  using value = f32;
  value fma(value a, value b, value c) const { return bf16emu::fma(a, b, c).value; }
  value mul(value a, value b) const { return bf16emu::mul(a, b).value; }
  value add(value a, value b) const { return bf16emu::add(a, b).value; }
  value from_bits(std::uint32_t u) const { return f32::from_bits(u); }
  std::uint32_t to_bits(value v) const { return v.bits; }
};

template <class Obs> double rn_f32(const f32_ops<Obs> &o, double ex, site s);

// FP32 exp2 of an FP32 x: poly (exp2_poly) or rn (binary64 exp2 rounded once to FP32).
template <class Obs> double exp2_f32(const f32_ops<Obs> &o, double x, bool poly, site s) {
  if (o.exact_at(s)) return std::exp2(x);
  if (poly) {
    soft_f32_backend b;
    const double y = of(exp2_poly(b, as_f32(x)));
    if constexpr (Obs::enabled) {
      const double ex = std::exp2(x);
      if (std::isfinite(ex) && std::isfinite(y)) o.obs->record(s, y - ex, false, y == 1.0, false, ex);
    }
    return y;
  }
  return rn_f32(o, std::exp2(x), s);
}

// A binary64 function value rounded once to FP32; a P-bar = 1 event when the result is 1.
// At a site promoted to exact: the binary64 value itself.
template <class Obs> double rn_f32(const f32_ops<Obs> &o, double ex, site s) {
  if (o.exact_at(s)) return ex;
  if constexpr (Obs::enabled) {
    last_event t;
    const double y = of(convert<binary32>(from_double(ex), env{}, t).value);
    if (t.count) o.obs->record(s, t.event, y == 1.0);
    return y;
  } else {
    return of(convert<binary32>(from_double(ex)).value);
  }
}

} // namespace bf16emu::attention
