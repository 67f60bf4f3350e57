// bf16emu io: the facts of a format (`bf16emu finfo`, Python bf16emu.finfo), read off the core's
// description of it (format traits, or a format named at run time: io/names.hpp), never from a
// second table.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "io/json.hpp"
#include "io/names.hpp"

namespace bf16emu::io {

struct format_facts {
  std::string name;     // canonical name
  std::string fields;   // "fp:e=..,m=..,bias=..,enc=.." (the format by fields)
  std::string encoding; // ieee, fn, finite, fnuz, p3109, e8m0
  int width = 0, storage_bits = 0, exp_bits = 0, frac_bits = 0, precision = 0, bias = 0, emin = 0, emax = 0;
  bool has_inf = false, has_nan = false, has_neg_zero = false, is_signed = true, has_subnormals = true;
  bool saturates = false;    // every overflow gives +-max (finite formats; sat=1)
  bool compile_time = false; // a trait of core/format.hpp (else the run-time format_spec path)
  bool bulk = false;         // src/bulk has a SIMD conversion kernel from/to fp32
  double max = 0, min_normal = 0, min_subnormal = 0, eps = 0;
  std::uint64_t max_bits = 0, min_normal_bits = 0, min_subnormal_bits = 0;
  std::optional<std::uint64_t> inf_bits; // +Inf, when the format has one
  std::optional<std::uint64_t> nan_bits; // the default NaN (+qNaN in ieee formats), when there is one
  int nan_count = 0;                     // patterns that are NaN
};

format_facts facts(const named_format &f);

void print_facts(std::ostream &out, const format_facts &f);
void write_facts_json(json_writer &w, const format_facts &f);

} // namespace bf16emu::io
