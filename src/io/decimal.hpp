// bf16emu io: exact decimal printing of binary64 values and of sums of them.
//
// Every finite binary64 value has a finite decimal expansion; these functions print it in
// full (plain notation, no exponent, trailing zeros trimmed), so the printed string IS the
// value: exact_decimal(-4.703990459442138671875) == "-4.703990459442138671875".
// Non-finite values print as "inf", "-inf", "nan".
#pragma once

#include <initializer_list>
#include <span>
#include <string>

namespace bf16emu::io {

// Exact decimal expansion of x ("-0" for negative zero).
std::string exact_decimal(double x);

// Exact decimal expansion of the real sum of the terms (e.g. an error pair hi + lo);
// no rounding happens anywhere. An exact zero sum prints "0". Any non-finite term gives
// "nan" (or "inf"/"-inf" when the infinities agree).
std::string exact_decimal_sum(std::span<const double> terms);
std::string exact_decimal_sum(std::initializer_list<double> terms);

// Shortest decimal that reads back as the same binary64 (std::to_chars), like Python's
// repr(float): shortest_decimal(-4.703990459442138671875) == "-4.703990459442139".
std::string shortest_decimal(double x);

} // namespace bf16emu::io
