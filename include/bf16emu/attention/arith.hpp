// bf16emu attention: scalar arithmetic of the policies, on values held exactly in binary64.
//
// Every value an attention policy keeps (BF16, FP32 or binary64) is held in a double, which
// represents it exactly. Each operation below is one rounding of the core (or plain binary64
// arithmetic for the exact policy) and files its event under a ledger site. The per-site
// precision override of the policy (kernel_policy::site_precision, policy.hpp) acts here, once
// for every caller: at a site promoted to fp32 a rounding to BF16 rounds to FP32 instead; at a
// site promoted to exact every operation is binary64 and nothing is filed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "bf16emu/attention/exp2_poly.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"

namespace bf16emu::attention {

inline f32 as_f32(double x) { return from_float(float(x)); } // exact for FP32 values
inline double of(f32 x) { return double(to_float(x)); }
inline double of(bf16 x) { return to_double(x); }
// x a BF16 value (exact): its upper 16 FP32 bits; any other x: one rounding by the core.
inline bf16 as_bf16(double x) {
  const float f = float(x);
  const std::uint32_t u = detail::bit_cast<std::uint32_t>(f);
  if (double(f) == x && (u & 0xffffu) == 0) return bf16::from_bits(std::uint16_t(u >> 16));
  return convert<bfloat16>(from_double(x)).value;
}

// The host's own FP32 arithmetic, for the path without a ledger (f32_ops::hw).
//
// Each operation is binary64 arithmetic on the FP32 operands, rounded once to FP32: a product
// of two FP32 numbers is exact in binary64, and for +, -, x and / the binary64 rounding
// followed by the FP32 one gives the correctly rounded FP32 result (binary64 has 53 >= 2*24 + 2
// bits: the double rounding is innocuous, Figueroa 1995). Every rounding to FP32 is an explicit
// conversion, so no compiler may contract a product and a sum into one FMA. FMA is fmaf
// (correctly rounded by C's definition). The bits equal the core's only when the host rounds
// to nearest even and keeps subnormals (no FTZ/DAZ): usable() probes exactly that, at run
// time, in the calling thread. A NaN result is always recomputed by the core (its NaN rule).
namespace hw_f32 {
// Process-wide switch (default on): false keeps the core's soft-float on every path, for
// timing comparisons (the CLI reads BF16EMU_HW_F32=0). Set before the threads start.
inline std::atomic<bool> enabled{true};

// The calling thread's floating-point environment rounds to nearest even and keeps subnormal
// operands and results (probed: these four results differ under any other rounding mode,
// flush-to-zero or denormals-are-zero).
inline bool env_is_ieee_rne() noexcept {
  volatile double one = 1.0, half_ulp = 0x1p-24, three_quarter_ulp = 0x1.8p-24, tiny = 0x1p-140;
  volatile float sub = 0x1p-140f;
  const bool ties_even = float(one + half_ulp) == 1.0f;                          // not upward
  const bool nearest = float(one + three_quarter_ulp) == float(1.0 + 0x1p-23);   // not down/zero
  const bool keeps_sub_out = float(tiny) != 0.0f;                                // no FTZ
  const bool keeps_sub_in = double(sub) != 0.0 && float(double(sub) * one) != 0; // no DAZ
  return ties_even && nearest && keeps_sub_out && keeps_sub_in && std::fegetround() == FE_TONEAREST;
}
inline bool usable() noexcept { return enabled.load(std::memory_order_relaxed) && env_is_ieee_rne(); }

// The operations on FP32 values held in doubles: exp2_poly's native backend (its host half
// computes in binary64 and rounds once, as above).
inline float add(double a, double b) noexcept { return native_f32_backend{}.add(float(a), float(b)); }
inline float mul(double a, double b) noexcept { return native_f32_backend{}.mul(float(a), float(b)); }
inline float div(double a, double b) noexcept { return float(double(float(a)) / double(float(b))); }
inline float fma(double a, double b, double c) noexcept {
  return native_f32_backend{}.fma(float(a), float(b), float(c));
}
inline bool is_nan(float x) noexcept { return x != x; }

// FP32 FMA chains across columns: for j < ncols, c[j] = fma(a[t*sa], b[t*sb + j], c[j]) for
// t = 0, 1, ..., k-1 in that order, each step one FP32 FMA of the host. Every column is the
// chain f32_ops::fma would compute element by element; only the columns run side by side.
using fma_cols_fn = void (*)(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k,
                             long ncols, float *c);

// A SIMD kernel of that contract with the host's fused multiply-add (src/tc_lanes, Highway:
// installed by the front ends), or null: the loop below.
inline std::atomic<fma_cols_fn> fma_cols_hook{nullptr};

inline void fma_cols_loop(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k,
                          long ncols, float *c) noexcept {
  for (long j = 0; j < ncols; ++j) {
    float x = c[j];
    for (long t = 0; t < k; ++t)
      x = native_f32_backend{}.fma(a[t * sa], b[t * sb + j], x);
    c[j] = x;
  }
}

// The chains with the core's bits, in a thread where usable() holds: the hook (or the loop),
// then each column that ends in NaN computed again by the core's fma from its first c (its NaN
// rule; before a NaN the host's steps equal the core's).
inline void fma_cols(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k, long ncols,
                     float *c) noexcept {
  constexpr long chunk = 64;
  float c0[chunk];
  const fma_cols_fn kernel = fma_cols_hook.load(std::memory_order_relaxed);
  for (long j0 = 0; j0 < ncols; j0 += chunk) {
    const long nc = ncols - j0 < chunk ? ncols - j0 : chunk;
    float *cj = c + j0;
    std::copy(cj, cj + nc, c0);
    (kernel ? kernel : fma_cols_loop)(a, sa, b + j0, sb, k, nc, cj);
    for (long j = 0; j < nc; ++j)
      if (is_nan(cj[j])) {
        f32 x = from_float(c0[j]);
        for (long t = 0; t < k; ++t)
          x = bf16emu::fma(from_float(a[t * sa]), from_float(b[t * sb + j0 + j]), x).value;
        cj[j] = to_float(x);
      }
  }
}

// x -> BF16 (nearest even) when x is a finite FP32 value: its bits plus 0x7FFF plus the kept
// part's last bit, then the upper half (exact for subnormals, and carries to Inf on overflow).
// False (nothing written) for any other x.
inline bool to_bf16(double x, double &out) noexcept {
  const float f = float(x);
  if (double(f) != x) return false; // NaN, or not an FP32 value: the core rounds it once
  const std::uint32_t u = detail::bit_cast<std::uint32_t>(f);
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  out = double(detail::bit_cast<float>(r));
  return true;
}
} // namespace hw_f32

// FP32 operations (round to nearest even) with their ledger site, under the site precision
// override `prec` (kernel_policy::site_precision; nullptr: every site as the policy).
template <class Obs> struct f32_ops {
  Obs *obs;
  const site_prec *prec = nullptr;
  // Without a ledger, on a host that rounds like the core: the host's FP32 operations (hw_f32,
  // the same bits; NaN results from the core).
  bool hw = !Obs::enabled && hw_f32::usable();
  site_prec at_prec(site s) const { return prec ? prec[int(s)] : site_prec::policy; }
  // Whether FP32 FMA chains at `s` may run as hw_f32::fma_cols on FP32 copies of their operands
  // (the same bits as chains of fma(); a site promoted to fp32 keeps FP32 FMA).
  bool fast_chains(site s) const { return hw && !exact_at(s); }
  bool exact_at(site s) const { return prec && prec[int(s)] == site_prec::exact; }
  site_tracer<Obs> at(site s, bool p1 = false) const { return {obs, s, p1}; }
  double add(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a + b;
    if (hw)
      if (const float r = hw_f32::add(a, b); !hw_f32::is_nan(r)) return r;
    return of(bf16emu::add(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double sub(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a - b;
    if (hw)
      if (const float r = hw_f32::add(a, -b); !hw_f32::is_nan(r)) return r;
    return of(bf16emu::sub(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double mul(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a * b;
    if (hw)
      if (const float r = hw_f32::mul(a, b); !hw_f32::is_nan(r)) return r;
    return of(bf16emu::mul(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  double fma(double a, double b, double c, site s, bool p1 = false) const {
    if (exact_at(s)) return std::fma(a, b, c);
    if (hw)
      if (const float r = hw_f32::fma(a, b, c); !hw_f32::is_nan(r)) return r;
    return of(bf16emu::fma(as_f32(a), as_f32(b), as_f32(c), env{}, at(s, p1)).value);
  }
  double div(double a, double b, site s, bool p1 = false) const {
    if (exact_at(s)) return a / b;
    if (hw)
      if (const float r = hw_f32::div(a, b); !hw_f32::is_nan(r)) return r;
    return of(bf16emu::div(as_f32(a), as_f32(b), env{}, at(s, p1)).value);
  }
  // binary64 value -> FP32 (one rounding).
  double to32(double x, site s, bool p1 = false) const {
    if (exact_at(s)) return x;
    if (hw)
      if (const float r = float(x); !hw_f32::is_nan(r)) return r;
    return of(convert<binary32>(from_double(x), env{}, at(s, p1)).value);
  }
  // FP32 (or binary64) value -> BF16 (one rounding); FP32 at a site promoted to fp32.
  double to16(double x, site s, bool p1 = false) const {
    if (at_prec(s) != site_prec::policy) return to32(x, s, p1);
    if (double y; hw && hw_f32::to_bf16(x, y)) return y;
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
    if (o.hw) { // the same sequence on the host's FP32 operations (same bits; NaN from the core)
      native_f32_backend hb;
      if (const float y = exp2_poly(hb, float(x)); !hw_f32::is_nan(y)) return y;
    }
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
    if (o.hw)
      if (const float y = float(ex); !hw_f32::is_nan(y)) return y;
    return of(convert<binary32>(from_double(ex)).value);
  }
}

} // namespace bf16emu::attention
