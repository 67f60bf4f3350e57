// bf16emu io: names of formats, rounding modes, tininess and NaN policies as the
// CLI, the JSON output and the test files spell them, and their parsers.
//
// Formats: fp64 fp32 bf16 fp16 tf32 e4m3 e5m2 e2m3 e3m2 e2m1, with aliases (binary32, float,
// bfloat16, half, binary16, float8_e4m3fn, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4, float4_e2m1fn, ...).
// Case-insensitive. e2m3, e3m2 and e2m1 are the OCP MX element formats (docs/formats.md).
// Modes:   nearest_even (rne), nearest_away (rna), toward_zero (rz), upward (ru),
//          downward (rd), to_odd (ro), stochastic (sr), nearest_zero (rnz: ties toward zero),
//          stochastic_equal (sr_eq), stochastic_k (sr_k; sr_k:K gives the number K of random
//          bits, 1..32, docs/rounding.md); TestFloat's near_even, near_maxMag, minMag, max, min,
//          odd are accepted too.
// Every parser throws io::input_error naming the token and the accepted names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <bf16emu/core/env.hpp>
#include <bf16emu/core/format.hpp>

namespace bf16emu::io {

// Static facts about a runtime format, read off the format traits (format.hpp).
struct format_desc {
  format_id id;
  const char *name; // short name: "fp32", "bf16", ...
  int exp_bits, frac_bits, width, precision, bias, emin, emax;
  bool has_inf;
  std::uint64_t width_mask; // (1 << width) - 1
};
format_desc describe(format_id id) noexcept;

// The one spelling rule for names (formats, rounding modes, policies, variants, backward kinds,
// architectures, ...), shared by the CLI's parsers and the Python module: surrounding ASCII
// whitespace dropped, ASCII letters lower-cased (" BF16 " is "bf16", "FA2:SM90" is "fa2:sm90").
// Every parser of the I/O ring applies it before its table look-up.
std::string normalize_name(std::string_view name);

format_id parse_format(std::string_view name);

// A format named at run time (issue 44): a compile-time format (id set; spec is its twin
// make_spec<F>()), a named run-time one, or one given by its fields. Grammar (docs/formats.md):
//   NAME        fp32, bf16, ..., e4m3fnuz, e5m2fnuz, e4m3b11fnuz, e3m4, e4m3ieee, e8m0,
//               p3109:pP (P = 1..7), and the aliases (float8_e4m3fnuz, binary8p4, ...)
//   fp:FIELDS   FIELDS = comma-separated key=value, e= and m= required:
//               e=  exponent bits (1..11)        m=   fraction bits (0..52)
//               bias= (default 2^(e-1)-1; fnuz and p3109: 2^(e-1))
//               enc= ieee | fn | fnuz | finite | p3109 | e8m0 (default ieee)
//               sub= 1 | 0 (subnormals kept, default 1)   sat= 0 | 1 (overflow saturates, default 0)
//   e.g. fp:e=5,m=2,bias=16,enc=fnuz is e5m2fnuz; fp:e=8,m=7 is bf16.
// Every value of an accepted format is a binary64 number (the exponent range and precision are
// checked against binary64's). Throws io::input_error naming the token and what is wrong.
struct named_format {
  std::string name; // canonical: the short name, or "fp:e=..,m=..,bias=..,enc=..[,sub=0][,sat=1]"
  format_spec spec;
  std::optional<format_id> id; // the compile-time format this is, if any
};
named_format parse_format_spec(std::string_view token);
named_format named(format_id id);
named_format named(const format_spec &spec);      // its canonical name (a preset's, or the fields)
std::string spec_fields(const format_spec &spec); // "fp:e=..,m=..,bias=..,enc=.."
const char *encoding_name(special_encoding e);    // "ieee", "fn", "finite", "fnuz", "p3109", "e8m0"
// The run-time format names, for --help texts.
std::string runtime_format_names();
round_mode parse_mode(std::string_view name);
// A rounding mode with its parameter: "sr_k:3" is stochastic_k with 3 random bits; a bare name
// leaves sr_bits at its default (32). Only stochastic_k takes ":K".
struct rounding {
  round_mode mode = round_mode::nearest_even;
  int sr_bits = 32;
};
rounding parse_rounding(std::string_view name);
// K of k-bit stochastic rounding: an integer 1..32, else io::input_error naming it.
int parse_sr_bits(std::string_view token);
tininess parse_tininess(std::string_view name);     // before | after (before_rounding, after_rounding)
nan_policy parse_nan_policy(std::string_view name); // ieee | cuda | pytorch

const char *name(format_id id) noexcept;
const char *name(tininess t) noexcept;
const char *name(nan_policy p) noexcept;
// round_mode and decision names: bf16emu::to_string (core/env.hpp).

// The accepted names, for --help texts: "fp64, fp32, bf16, fp16, tf32, e4m3, e5m2, e2m3 (fp6_e2m3), ...".
std::string format_names();
std::string mode_names();

} // namespace bf16emu::io
