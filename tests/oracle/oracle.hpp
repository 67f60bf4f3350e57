// Independent test oracle for bf16emu.
//
// Written from docs/semantics.md only. It does NOT include any bf16emu header: it works on raw
// bit patterns with a runtime format descriptor and its own environment type, decodes operands
// to exact values (sign, boost::multiprecision::cpp_int significand, binary exponent), computes
// add/sub/mul/fma exactly, div/sqrt to many extra bits with a remainder sticky, and rounds once
// with one plain routine transcribed from the tables of the contract.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/multiprecision/cpp_int.hpp>

namespace oracle {

// A binary floating-point format: 1 sign bit, exp_bits exponent bits, frac_bits fraction bits.
// fn = OCP E4M3 style: no infinities, the only NaN is S.1..1.1..1.
// finite = OCP MX FP6/FP4 style (docs/formats.md): no infinities, no NaN; every pattern is a number.
struct format {
  int exp_bits;
  int frac_bits;
  bool fn = false;
  bool finite = false;
  // Issue 44 (docs/formats.md), written from ml_dtypes' and IEEE P3109's definitions:
  // fnuz  = ml_dtypes float8_*fnuz: no infinities, no negative zero; the only NaN is 1.000..0
  //         (the sign bit alone); every other pattern is a number, the all-ones one included.
  // p3109 = IEEE P3109 binary8pP: no negative zero, the only NaN is 1.000..0, +-Inf are the
  //         patterns with every magnitude bit set (0.111..1, 1.111..1); frac_bits may be 0.
  bool fnuz = false;
  bool p3109 = false;
  int bias_value = -100000; // -100000: the IEEE bias 2^(exp_bits - 1) - 1

  int width() const { return 1 + exp_bits + frac_bits; }
  int bias() const { return bias_value != -100000 ? bias_value : (1 << (exp_bits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  // The exponent of the largest finite number (p3109 with no fraction bit: the all-ones exponent
  // code is Inf, so the largest number is one code below).
  int emax() const {
    if (p3109 && frac_bits == 0) return (1 << exp_bits) - 2 - bias();
    return (fn || finite || fnuz || p3109 ? (1 << exp_bits) - 1 : (1 << exp_bits) - 2) - bias();
  }
  bool has_neg_zero() const { return !fnuz && !p3109; }
  std::uint64_t sign_mask() const { return std::uint64_t{1} << (width() - 1); }
  std::uint64_t frac_mask() const { return (std::uint64_t{1} << frac_bits) - 1; }
  std::uint64_t exp_field_max() const { return (std::uint64_t{1} << exp_bits) - 1; }
  std::uint64_t all_bits_mask() const {
    return width() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width()) - 1;
  }
  bool operator==(const format &) const = default;
};

inline constexpr format fp64{11, 52, false};
inline constexpr format fp32{8, 23, false};
inline constexpr format bf16{8, 7, false};
inline constexpr format fp16{5, 10, false};
inline constexpr format tf32{8, 10, false};
inline constexpr format e4m3{4, 3, true};
inline constexpr format e5m2{5, 2, false};
inline constexpr format e2m3{2, 3, false, true};
inline constexpr format e3m2{3, 2, false, true};
inline constexpr format e2m1{2, 1, false, true};

std::string name(format f);

// Rounding modes, in the order of docs/semantics.md.
enum class rounding {
  nearest_even,
  nearest_away,
  toward_zero,
  upward,
  downward,
  to_odd,
  stochastic,
  nearest_zero,
  stochastic_equal,
  stochastic_k
};
inline constexpr int rounding_count = 10;
const char *name(rounding m);

enum class tininess { after_rounding, before_rounding };
enum class nan_policy { ieee, cuda, pytorch };

struct environment {
  rounding mode = rounding::nearest_even;
  tininess tiny = tininess::after_rounding;
  nan_policy nan = nan_policy::ieee;
  bool flush_outputs = false;  // tiny results become signed zeros (underflow + inexact)
  bool inputs_as_zero = false; // subnormal operands read as signed zeros
  bool saturate = false;       // every overflow gives +-max finite
  std::uint32_t random = 0;    // stochastic rounding bits
  int sr_bits = 32;            // K of stochastic_k (1..32): the low K bits of random are used
};

// Flag bits (same meaning as the contract's five IEEE flags).
namespace flags {
inline constexpr std::uint8_t invalid = 1;
inline constexpr std::uint8_t divbyzero = 2;
inline constexpr std::uint8_t overflow = 4;
inline constexpr std::uint8_t underflow = 8;
inline constexpr std::uint8_t inexact = 16;
} // namespace flags
std::string flags_string(std::uint8_t f);

// What the single rounding did (none: no finite rounding happened: NaN, Inf, exact zero).
enum class decision { none, exact, down, up, tie_down, tie_up, overflow_inf, overflow_max, flush_zero };
const char *name(decision d);

struct result {
  std::uint64_t bits = 0;
  std::uint8_t flags = 0;
  // Details of the rounding when rounded is true (a nonzero finite exact value was rounded).
  bool rounded = false;
  bool sign = false;
  int exponent = 0;       // binade of the exact value, clamped to emin
  int lsb_exp = 0;        // exponent of the quantum (last kept bit)
  std::uint64_t kept = 0; // |x| truncated to the quantum, in quanta (fits: <= 2^53)
  bool guard = false, round = false, sticky = false;
  bool tiny = false; // per env.tiny
  decision dec = decision::none;
};

struct operand {
  std::uint64_t bits;
  format fmt;
};

result add(operand a, operand b, format out, const environment &env);
result sub(operand a, operand b, format out, const environment &env);
result mul(operand a, operand b, format out, const environment &env);
result fma(operand a, operand b, operand c, format out, const environment &env); // a*b+c
result div(operand a, operand b, format out, const environment &env);
result sqrt(operand a, format out, const environment &env);
result convert(operand a, format out, const environment &env);

// ---------------------------------------------------------------------------------------------
// Exact values: (-1)^neg * mag * 2^exp.
struct dyadic {
  bool neg = false;
  boost::multiprecision::cpp_int mag = 0;
  int exp = 0;
};
dyadic operator+(const dyadic &a, const dyadic &b);
dyadic operator-(const dyadic &a);
bool operator==(const dyadic &a, const dyadic &b); // value equality (+0 == -0)
std::string to_string(const dyadic &d);
dyadic dyadic_from_double(double x); // x finite
// Exact value of a finite bit pattern (inputs_as_zero not applied).
dyadic value_of(operand a);

enum class op { add, sub, mul, fma, div, sqrt, convert };

// Exact real value of the operation on finite operands (after inputs_as_zero when set in env);
// nullopt when an operand is NaN/Inf or the exact value is not dyadic (div/sqrt with remainder).
std::optional<dyadic> exact_value(op o, operand a, operand b, operand c, const environment &env);

// result - exact for a finite result bit pattern; nullopt when either is not finite/dyadic.
std::optional<dyadic> exact_error(op o, operand a, operand b, operand c, format out,
                                  std::uint64_t result_bits, const environment &env);

} // namespace oracle
