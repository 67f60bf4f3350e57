// bf16emu: floating-point formats as traits of one template.
//
//   sign | exponent (E bits, biased) | fraction (M bits)
//
// Every format below is an instance of format<E, M, Enc>. Enc says how the
// top exponent code is used:
//   ieee : exponent all ones = infinity (fraction 0) or NaN (fraction != 0);
//          the fraction's top bit is the quiet bit.
//   fn   : no infinities; only S.1111.111 (all ones) is NaN, every other
//          pattern with the top exponent code is a normal number (OCP E4M3).
//   finite: no infinities and no NaN: every pattern is a number (the OCP MX element
//          formats FP6 E2M3, FP6 E3M2 and FP4 E2M1). What an overflow, an infinite or a
//          NaN result gives there is in docs/formats.md.
// Run-time formats (format_spec below) have two more, for formats the traits do not cover:
//   fnuz : no infinities, no negative zero: the pattern 1.0000.000 (sign bit alone) is the one
//          NaN, every other pattern a number (ml_dtypes' float8_e4m3fnuz, e5m2fnuz, e4m3b11fnuz).
//   p3109: IEEE P3109 binary8pP: the one NaN is 1.0000.000, no negative zero, +-Inf are the
//          all-ones magnitudes 0.1111.111 / 1.1111.111, every other pattern a number.
//   e8m0 : OCP MX's scale E8M0 (ml_dtypes' float8_e8m0fnu): no sign bit, no fraction, no zero,
//          no Inf: every pattern but the all-ones NaN is the power of two 2^(code - bias).
#pragma once

#include <cstdint>

#include "bf16emu/core/config.hpp"

namespace bf16emu {

enum class special_encoding : std::uint8_t { ieee, fn, finite, fnuz, p3109, e8m0 };

namespace detail {
template <int Width> struct storage_for { using type = std::uint64_t; };
template <int Width>
requires(Width <= 8) struct storage_for<Width> {
  using type = std::uint8_t;
};
template <int Width>
requires(Width > 8 && Width <= 16) struct storage_for<Width> {
  using type = std::uint16_t;
};
template <int Width>
requires(Width > 16 && Width <= 32) struct storage_for<Width> {
  using type = std::uint32_t;
};
} // namespace detail

template <int ExpBits, int FracBits, special_encoding Enc = special_encoding::ieee> struct format {
  static_assert(ExpBits >= 2 && ExpBits <= 11 && FracBits >= 1 && FracBits <= 52);
  static constexpr int exp_bits = ExpBits;
  static constexpr int frac_bits = FracBits;
  static constexpr int precision = FracBits + 1; // significand bits incl. hidden bit
  static constexpr int width = 1 + ExpBits + FracBits;
  static constexpr special_encoding encoding = Enc;
  static constexpr bool has_inf = Enc == special_encoding::ieee;
  static constexpr bool has_nan = Enc != special_encoding::finite;

  using storage = typename detail::storage_for<width>::type;

  static constexpr int bias = (1 << (ExpBits - 1)) - 1;
  static constexpr int exp_field_max = (1 << ExpBits) - 1;
  // Largest biased exponent of a finite number.
  static constexpr int max_finite_biased_exp = has_inf ? exp_field_max - 1 : exp_field_max;
  static constexpr int emax = max_finite_biased_exp - bias;
  static constexpr int emin = 1 - bias;

  static constexpr std::uint64_t frac_mask = (std::uint64_t{1} << FracBits) - 1;
  static constexpr std::uint64_t exp_mask = std::uint64_t(exp_field_max) << FracBits;
  static constexpr std::uint64_t sign_mask = std::uint64_t{1} << (width - 1);
  static constexpr std::uint64_t abs_mask = sign_mask - 1;
  static constexpr std::uint64_t quiet_bit = std::uint64_t{1} << (FracBits - 1);
  // Largest finite magnitude: all-ones fraction, except in fn where that is NaN.
  static constexpr std::uint64_t max_finite_bits = (std::uint64_t(max_finite_biased_exp) << FracBits) |
                                                   (Enc == special_encoding::fn ? frac_mask - 1 : frac_mask);
  // +Inf for ieee formats; for fn formats the NaN pattern (no infinity exists); finite
  // formats have neither, and the core never writes this pattern there (docs/formats.md).
  static constexpr std::uint64_t inf_bits = has_inf ? exp_mask : (exp_mask | frac_mask);
  static constexpr std::uint64_t min_normal_bits = std::uint64_t{1} << FracBits;
  // The fields a run-time format_spec has too (a compile-time format is its run-time twin's
  // special case: subnormals kept, overflow by the mode, a sign bit, a negative zero).
  static constexpr bool has_subnormals = true;
  static constexpr bool saturates = Enc == special_encoding::finite;
  static constexpr bool is_signed = true;
  static constexpr bool has_neg_zero = true;
  // The default NaN (+qNaN; fn: S.1111.111 with sign 0; finite formats: unused).
  static constexpr std::uint64_t nan_bits = Enc == special_encoding::ieee ? exp_mask | quiet_bit : inf_bits;
};

using binary64 = format<11, 52>;
using binary32 = format<8, 23>;
using bfloat16 = format<8, 7>;
using binary16 = format<5, 10>;
using tensorfloat32 = format<8, 10>; // NVIDIA TF32: 19 significant bits of an FP32 register
using float8_e4m3 = format<4, 3, special_encoding::fn>;
using float8_e5m2 = format<5, 2>;
// The OCP Microscaling (MX) v1.0 element formats without Inf or NaN: max finite 7.5, 28 and 6.
using float6_e2m3 = format<2, 3, special_encoding::finite>;
using float6_e3m2 = format<3, 2, special_encoding::finite>;
using float4_e2m1 = format<2, 1, special_encoding::finite>;

template <class F> inline constexpr bool is_format_v = requires {
  F::exp_bits;
  F::frac_bits;
  F::encoding;
};

// Short names used by the CLI, the JSON output and the docs.
template <class F> BF16EMU_CXHD const char *format_name() noexcept {
  if constexpr (F::exp_bits == 11 && F::frac_bits == 52)
    return "fp64";
  else if constexpr (F::exp_bits == 8 && F::frac_bits == 23)
    return "fp32";
  else if constexpr (F::exp_bits == 8 && F::frac_bits == 7)
    return "bf16";
  else if constexpr (F::exp_bits == 5 && F::frac_bits == 10)
    return "fp16";
  else if constexpr (F::exp_bits == 8 && F::frac_bits == 10)
    return "tf32";
  else if constexpr (F::exp_bits == 4 && F::frac_bits == 3 && F::encoding == special_encoding::fn)
    return "e4m3";
  else if constexpr (F::exp_bits == 5 && F::frac_bits == 2)
    return "e5m2";
  else if constexpr (F::exp_bits == 2 && F::frac_bits == 3 && F::encoding == special_encoding::finite)
    return "e2m3";
  else if constexpr (F::exp_bits == 3 && F::frac_bits == 2 && F::encoding == special_encoding::finite)
    return "e3m2";
  else if constexpr (F::exp_bits == 2 && F::frac_bits == 1 && F::encoding == special_encoding::finite)
    return "e2m1";
  else
    return "custom";
}

// A floating-point datum of format F, held as its bit pattern.
template <class F> struct fp {
  using format_type = F;
  using storage = typename F::storage;
  storage bits{};

  static BF16EMU_CXHD fp from_bits(std::uint64_t b) noexcept { return fp{storage(b)}; }

  BF16EMU_CXHD bool sign() const noexcept { return (bits & F::sign_mask) != 0; }
  BF16EMU_CXHD int biased_exp() const noexcept { return int((bits & F::exp_mask) >> F::frac_bits); }
  BF16EMU_CXHD std::uint64_t frac() const noexcept { return bits & F::frac_mask; }
  BF16EMU_CXHD std::uint64_t magnitude() const noexcept { return bits & F::abs_mask; }

  BF16EMU_CXHD bool is_nan() const noexcept {
    if constexpr (!F::has_nan)
      return false;
    else if constexpr (F::has_inf)
      return biased_exp() == F::exp_field_max && frac() != 0;
    else
      return magnitude() == (F::exp_mask | F::frac_mask);
  }
  BF16EMU_CXHD bool is_inf() const noexcept {
    if constexpr (F::has_inf)
      return magnitude() == F::exp_mask;
    else
      return false;
  }
  // fn formats have a single NaN and no quiet/signaling distinction: treated as quiet.
  BF16EMU_CXHD bool is_signaling_nan() const noexcept {
    if constexpr (F::has_inf)
      return is_nan() && (bits & F::quiet_bit) == 0;
    else
      return false;
  }
  BF16EMU_CXHD bool is_zero() const noexcept { return magnitude() == 0; }
  BF16EMU_CXHD bool is_subnormal() const noexcept { return biased_exp() == 0 && frac() != 0; }
  BF16EMU_CXHD bool is_finite() const noexcept { return !is_nan() && !is_inf(); }

  friend BF16EMU_CXHD bool operator==(fp a, fp b) noexcept { return a.bits == b.bits; }
};

using f64 = fp<binary64>;
using f32 = fp<binary32>;
using bf16 = fp<bfloat16>;
using f16 = fp<binary16>;
using tf32 = fp<tensorfloat32>;
using e4m3 = fp<float8_e4m3>;
using e5m2 = fp<float8_e5m2>;
using e2m3 = fp<float6_e2m3>;
using e3m2 = fp<float6_e3m2>;
using e2m1 = fp<float4_e2m1>;

// Exact host conversions between native floating types and bit patterns.
BF16EMU_CXHD f32 from_float(float x) noexcept { return f32{detail::bit_cast<std::uint32_t>(x)}; }
BF16EMU_CXHD f64 from_double(double x) noexcept { return f64{detail::bit_cast<std::uint64_t>(x)}; }
BF16EMU_CXHD float to_float(f32 x) noexcept { return detail::bit_cast<float>(x.bits); }
BF16EMU_CXHD double to_native_double(f64 x) noexcept { return detail::bit_cast<double>(x.bits); }

// Runtime identifier for dispatch (CLI, file formats).
enum class format_id : std::uint8_t { fp64, fp32, bf16, fp16, tf32, e4m3, e5m2, e2m3, e3m2, e2m1 };

// Calls f(format_tag) with a default-constructed trait for id.
template <class Fn> BF16EMU_CXHD decltype(auto) visit_format(format_id id, Fn &&f) {
  switch (id) {
  case format_id::fp64: return f(binary64{});
  case format_id::fp32: return f(binary32{});
  case format_id::bf16: return f(bfloat16{});
  case format_id::fp16: return f(binary16{});
  case format_id::tf32: return f(tensorfloat32{});
  case format_id::e4m3: return f(float8_e4m3{});
  case format_id::e2m3: return f(float6_e2m3{});
  case format_id::e3m2: return f(float6_e3m2{});
  case format_id::e2m1: return f(float4_e2m1{});
  default: return f(float8_e5m2{});
  }
}

// ---------------------------------------------------------------------------------------------
// Run-time formats (issue 44). A format_spec holds the same fields as the traits above, as data:
// exponent bits, fraction bits, bias, encoding, subnormals kept or flushed, overflow rule. The
// core's routines that take a format description (detail::round_pack_spec, unpack_spec,
// convert_spec) read these fields from a trait (constants) or from a format_spec (run time):
// one routine for both. make_spec<F>() is a trait's run-time twin.
//
// Supported: 1 <= width <= 16 for every encoding, and the ieee encoding up to 64 bits (binary64
// among them); frac_bits 0 (precision 1) only for p3109 and e8m0; exp_bits 1..11. The bias is
// any integer with the exponent range inside [-16382, 16383]. make_format_spec checks all this
// and says what is wrong (core/format.hpp has no I/O: it returns a reason string).
struct format_spec {
  int exp_bits = 8, frac_bits = 7, bias = 127;
  special_encoding encoding = special_encoding::ieee;
  bool has_subnormals = true; // false: subnormal encodings read as zero, tiny results flush to zero
  bool saturates = false;     // true: every overflow gives +-max finite, whatever the mode

  // Derived fields, as the traits name them (filled by finish()).
  int precision = 8, width = 16, exp_field_max = 255, max_finite_biased_exp = 254, emax = 127, emin = -126;
  bool has_inf = true, has_nan = true, is_signed = true, has_neg_zero = true;
  std::uint64_t frac_mask = 0, exp_mask = 0, sign_mask = 0, abs_mask = 0, quiet_bit = 0;
  std::uint64_t max_finite_bits = 0, inf_bits = 0, min_normal_bits = 0;
  // The NaN pattern a NaN result gets by default (+qNaN for ieee; the one NaN otherwise).
  std::uint64_t nan_bits = 0;

  BF16EMU_CXHD format_spec &finish() noexcept {
    using E = special_encoding;
    const bool e8 = encoding == E::e8m0;
    if (encoding == E::finite) saturates = true; // no Inf, no NaN: every overflow saturates
    precision = frac_bits + 1;
    is_signed = !e8;
    width = (is_signed ? 1 : 0) + exp_bits + frac_bits;
    has_inf = encoding == E::ieee || encoding == E::p3109;
    has_nan = encoding != E::finite;
    has_neg_zero = encoding == E::ieee || encoding == E::fn || encoding == E::finite;
    exp_field_max = (1 << exp_bits) - 1;
    frac_mask = (std::uint64_t{1} << frac_bits) - 1;
    exp_mask = std::uint64_t(exp_field_max) << frac_bits;
    sign_mask = is_signed ? std::uint64_t{1} << (width - 1) : 0;
    abs_mask = (width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1) & ~sign_mask;
    quiet_bit = frac_bits > 0 ? std::uint64_t{1} << (frac_bits - 1) : 0;
    min_normal_bits = e8 ? 0 : std::uint64_t{1} << frac_bits;
    switch (encoding) {
    case E::ieee: max_finite_bits = exp_mask - 1; break;             // 0.11110.11
    case E::fn: max_finite_bits = exp_mask | (frac_mask - 1); break; // 0.1111.110
    case E::p3109: max_finite_bits = abs_mask - 1; break;            // 0.1111.110 (0.1111.111 is Inf)
    case E::e8m0: max_finite_bits = abs_mask - 1; break;             // 1111.1110 (1111.1111 is NaN)
    default: max_finite_bits = abs_mask; break;                      // finite, fnuz: all ones
    }
    max_finite_biased_exp = int(max_finite_bits >> frac_bits);
    emax = max_finite_biased_exp - bias;
    emin = e8 ? -bias : 1 - bias; // e8m0: the code 0 is the number 2^-bias (no zero, no subnormal)
    switch (encoding) {
    case E::ieee: inf_bits = exp_mask; break;
    case E::p3109: inf_bits = abs_mask; break;
    case E::fn: inf_bits = exp_mask | frac_mask; break; // the NaN stands in for Inf (as the traits)
    case E::fnuz: inf_bits = sign_mask; break;          // likewise the NaN, 1.0000.000
    case E::e8m0: inf_bits = abs_mask; break;           // likewise the NaN, 1111.1111
    default: inf_bits = max_finite_bits; break;         // finite: never written
    }
    switch (encoding) {
    case E::ieee: nan_bits = exp_mask | quiet_bit; break;
    case E::fnuz:
    case E::p3109: nan_bits = sign_mask; break;
    default: nan_bits = inf_bits; break; // fn: S.1111.111 (positive), e8m0: 0xFF, finite: unused
    }
    return *this;
  }
};

// A trait's run-time twin.
template <class F> BF16EMU_CXHD format_spec make_spec() noexcept {
  format_spec s;
  s.exp_bits = F::exp_bits;
  s.frac_bits = F::frac_bits;
  s.bias = F::bias;
  s.encoding = F::encoding;
  s.has_subnormals = F::has_subnormals;
  s.saturates = F::saturates;
  return s.finish();
}

// The fields of a run-time format, checked: nullptr when they describe a format the core supports,
// else what is wrong (for the I/O ring's message). The spec is finished (derived fields set).
BF16EMU_CXHD const char *make_format_spec(format_spec &s) noexcept {
  using E = special_encoding;
  if (s.exp_bits < 1 || s.exp_bits > 11) return "the exponent bits must be 1..11";
  if (s.frac_bits < 0 || s.frac_bits > 52) return "the fraction bits must be 0..52";
  if (s.encoding == E::e8m0 && s.frac_bits != 0) return "the e8m0 encoding has no fraction bits (m=0)";
  if (s.frac_bits == 0 && s.encoding != E::p3109 && s.encoding != E::e8m0)
    return "a format without fraction bits (m=0) needs enc=p3109 or enc=e8m0";
  if (s.encoding == E::fn && s.frac_bits < 1) return "enc=fn needs a fraction bit";
  if (s.encoding == E::ieee && s.exp_bits < 2) return "enc=ieee needs 2 or more exponent bits";
  const int width = (s.encoding == E::e8m0 ? 0 : 1) + s.exp_bits + s.frac_bits;
  if (width > 64 || (width > 16 && s.encoding != E::ieee))
    return "the format is too wide (up to 16 bits, or 64 with enc=ieee)";
  if (s.bias < -16000 || s.bias > 16000) return "the bias must be within -16000..16000";
  s.finish();
  if (s.encoding == E::fnuz && s.frac_bits + s.exp_bits < 1) return "enc=fnuz needs a magnitude bit";
  if (s.max_finite_bits == 0 && s.encoding != E::e8m0) return "the format has no nonzero finite number";
  return nullptr;
}

} // namespace bf16emu
