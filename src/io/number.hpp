// bf16emu io: reading operands and small integers from the command line or a file.
//
// An operand is read into a given format from one of:
//   decimal          -2.4071154594421387, 1e-3, .5, +7
//   C hex-float      -0x1.34p+1, 0x1p-149, 0x.8p1
//   bit pattern      0xC01A0E2E (fp32), 0xC097 (bf16): "0x" and at most width/4 (rounded up)
//                    hex digits, no '.', no 'p', no sign; the value must fit the width
//   special          inf, -inf, infinity, nan, -nan, snan (not in e4m3, which has no Inf/sNaN)
// Decimal and hex-float text is rounded ONCE, to nearest-even, into the format (never via an
// intermediate double): the exact value is computed with big integers, reduced to a 64-bit
// window plus sticky bit, rounded to odd at 53 bits (which keeps enough bits for any format
// of up to 24 significant bits to round correctly) and then rounded by the core's convert.
// fp64 operands use the C library's correctly rounded strtod; exactness is checked exactly.
//
// Every error throws io::input_error naming the token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <bf16emu/core/format.hpp>

namespace bf16emu::io {

struct operand {
  enum class syntax { bits, decimal, hexfloat, special };
  format_id format = format_id::fp32;
  std::uint64_t bits = 0;
  syntax how = syntax::bits;
  bool exact = true;     // the text's value is the value of `bits` (always true for bits/special)
  bool overflow = false; // the text's value was beyond the format's range (rounded to Inf/NaN)
  std::string text;      // the token as given
};

operand parse_operand(std::string_view text, format_id format);

// Unsigned integer in decimal or 0x-hex that must fit in `max`; `what` names it in errors
// ("--random").
std::uint64_t parse_uint(std::string_view text, std::uint64_t max, const char *what);

} // namespace bf16emu::io
