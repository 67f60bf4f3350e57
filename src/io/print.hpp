// bf16emu io: printing values of any format the same way in every command.
//
//   hex_bits(format_id::fp32, 0xC0968717)       "0xC0968717"  (width/4 digits, upper case)
//   binary_fields(format_id::fp32, 0xC0968717)  "1 | 10000001 | 00101101000011100010111"
//   value_decimal(format_id::fp32, 0xC0968717)  "-4.703990459442139"   (shortest binary64 text)
//   value_exact(format_id::fp32, 0xC0968717)    "-4.703990459442138671875" (the exact value)
//   significand_binary(0x96, 8)                 "1.0010110"
//   flag_names(flag::inexact | flag::overflow)  "overflow inexact" ("none" for 0)
// NaNs print as "nan"/"-nan" with "(quiet)"/"(signaling)" in describe(); infinities as
// "inf"/"-inf".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <bf16emu/core/format.hpp>

namespace bf16emu::io {

std::string hex_bits(format_id f, std::uint64_t bits);
std::string binary_fields(format_id f, std::uint64_t bits);
// The binary64 value (exact for every format); NaN keeps the sign.
double value_double(format_id f, std::uint64_t bits);
std::string value_decimal(format_id f, std::uint64_t bits);
std::string value_exact(format_id f, std::uint64_t bits);
// "nan", "inf", "zero", "subnormal", "normal".
const char *value_class(format_id f, std::uint64_t bits);
bool is_nan(format_id f, std::uint64_t bits);
// One line: "0xC0968717 = -4.703990459442139", plus " (exact value -4.7039...875)" when the
// shortest text is not the exact value, or " (quiet NaN)" etc. (describe(format_id) in
// names.hpp gives the format facts.)
std::string describe_value(format_id f, std::uint64_t bits);

// The same for a format named at run time (names.hpp): a compile-time one prints exactly as
// above; a run-time one through its binary64 value (every value of an accepted run-time format
// is a binary64 number). Fields "S | E | M" (no sign field in e8m0, no fraction field when m=0).
struct named_format;
std::string hex_bits(const named_format &f, std::uint64_t bits);
std::string binary_fields(const named_format &f, std::uint64_t bits);
double value_double(const named_format &f, std::uint64_t bits);
std::string value_decimal(const named_format &f, std::uint64_t bits);
std::string value_exact(const named_format &f, std::uint64_t bits);
const char *value_class(const named_format &f, std::uint64_t bits);
bool is_nan(const named_format &f, std::uint64_t bits);
std::string describe_value(const named_format &f, std::uint64_t bits);

// `nbits` significant bits of `sig` as "1.0010110" (first bit, point, the rest).
std::string significand_binary(std::uint64_t sig, int nbits);

// Names of the set bits of bf16emu flags, in IEEE order: "invalid divbyzero overflow
// underflow inexact"; "none" when no flag is set.
std::string flag_names(std::uint8_t flags);
std::vector<std::string> flag_list(std::uint8_t flags);

} // namespace bf16emu::io
