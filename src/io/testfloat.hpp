// bf16emu io: Berkeley TestFloat 3 test-case lines (testfloat_gen output, the input of
// testfloat_ver), shared by `bf16emu testfloat` and the fuzzers.
//
// A line is the operands, the result and the flags, as hex separated by spaces:
//     f32_add:    C01A0E2E C0130000 C0968717 00
//     f32_to_bf16: C0968717 C097 01
// Floating-point values are written with width/4 hex digits (8 for f32, 4 for f16/bf16);
// the flags are two hex digits with TestFloat's bit order:
//     bit 0 inexact, bit 1 underflow, bit 2 overflow, bit 3 infinite (divide by zero), bit 4 invalid
// (testfloat_gen.html, "Output Format"). This differs from bf16emu's flag:: bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <bf16emu/core/env.hpp>
#include <bf16emu/core/format.hpp>

namespace bf16emu::testfloat {

namespace tf_flag {
inline constexpr unsigned inexact = 1, underflow = 2, overflow = 4, infinite = 8, invalid = 16;
} // namespace tf_flag

unsigned from_bf16emu_flags(std::uint8_t flags) noexcept;
std::uint8_t to_bf16emu_flags(unsigned tf_flags) noexcept;

enum class fn_id {
  f32_add,
  f32_sub,
  f32_mul,
  f32_mulAdd,
  f32_div,
  f32_sqrt,
  f32_to_bf16,
  bf16_to_f32,
  f32_to_f16,
  f16_to_f32
};

struct function {
  fn_id id;
  const char *name; // TestFloat's name, e.g. "f32_mulAdd"
  int arity;        // operands per line (1..3)
  format_id in, out;
};

// nullptr when unknown.
const function *find_function(std::string_view name) noexcept;
// Throws io::input_error naming the token and listing the known functions.
const function &parse_function(std::string_view name);
std::string function_names();

// TestFloat rounding options: "-rnear_even" "-rminMag" "-rmin" "-rmax" "-rnear_maxMag" "-rodd";
// returns false when `opt` is none of them.
bool rounding_option(std::string_view opt, round_mode &mode) noexcept;

struct line {
  std::uint64_t ops[3] = {0, 0, 0};
  std::uint64_t result = 0;
  unsigned flags = 0; // TestFloat bit order
};

// Parses one line for function f. Throws io::input_error "line N: ..." naming the bad
// token (or saying which field is missing / extra).
line parse_line(std::string_view text, const function &f, std::size_t line_no);

// "C01A0E2E C0130000 C0968717 00" (upper-case hex, full width).
std::string format_line(const function &f, const line &l);

struct outcome {
  std::uint64_t bits;
  std::uint8_t flags; // bf16emu flag:: bits
};

// Runs the function on the line's operands with the core.
outcome evaluate(const function &f, const std::uint64_t *ops, const env &e);

// Same result as testfloat_ver compares it without -checkNaNs: equal bits, or both NaN.
bool same_result(const function &f, std::uint64_t a, std::uint64_t b);

} // namespace bf16emu::testfloat
