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
#pragma once

#include <cstdint>

#include "bf16emu/core/config.hpp"

namespace bf16emu {

enum class special_encoding : std::uint8_t { ieee, fn, finite };

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

} // namespace bf16emu
