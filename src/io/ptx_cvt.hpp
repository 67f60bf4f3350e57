// bf16emu io: PTX `cvt` instructions with a floating-point destination, as written
// ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.relu.bf16x2.f32", "cvt.rna.satfinite.tf32.f32",
// "cvt.rz.satfinite.ue8m0x2.f32", "cvt.rn.f16.f32", "cvt.f32.bf16") -> the form, its qualifiers
// and its operand types (parse_ptx_cvt, pure text -> struct), and the model of one execution
// (run_ptx_cvt: every element through the core's one convert). docs/formats.md, "PTX cvt".
//
// Accepted: cvt[.ROUND][.relu][.satfinite][.ftz].DTYPE.ATYPE, qualifiers in any order, each once,
// a trailing ';' ignored, where (DTYPE, ATYPE) is a row of cvt_forms() and the row allows the
// qualifiers (PTX ISA 9.1, 9.7.9.21 cvt). `.rs` forms (stochastic rounding, sm_100a) and the x4
// destinations parse, and run_ptx_cvt refuses them: not modelled yet (issue 44).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <bf16emu/core/env.hpp>
#include <bf16emu/core/format.hpp>

namespace bf16emu::io {

// PTX type names of cvt operands with a floating-point meaning.
enum class cvt_type : std::uint8_t {
  f32,
  f16,
  bf16,
  tf32,
  f16x2,
  bf16x2,
  e4m3x2,
  e5m2x2,
  e2m3x2,
  e3m2x2,
  e2m1x2,
  ue8m0x2,
  e4m3x4,
  e5m2x4,
  e2m3x4,
  e3m2x4,
  e2m1x4, // .rs destinations only (four elements, rbits)
};
const char *name(cvt_type t) noexcept;
int lanes(cvt_type t) noexcept;         // elements: 1, 2 or 4
int register_bits(cvt_type t) noexcept; // width of the register: 8, 16 or 32
int element_bits(cvt_type t) noexcept;  // width of one element in the register (tf32: 32)

enum class cvt_round : std::uint8_t { none, rn, rz, rna, rm, rp, rs };
const char *name(cvt_round r) noexcept; // "" for none, else "rn" ...

struct ptx_cvt {
  cvt_round round = cvt_round::none;
  bool relu = false, satfinite = false, ftz = false;
  cvt_type d = cvt_type::f32, a = cvt_type::f32;
};

// One row of the form table: a destination/source pair and the qualifiers it takes.
struct cvt_form {
  cvt_type d, a;
  std::vector<cvt_round> rounds;      // allowed; empty: the form takes no rounding (exact widening)
  std::vector<cvt_round> relu_rounds; // .relu allowed only with these
  std::vector<cvt_round> sat_rounds;  // .satfinite allowed only with these
  bool sat_required = false;          // .satfinite mandatory
  bool ftz = false;                   // .ftz allowed
  const char *target;                 // the sm target and PTX version the ISA names
  const char *syntax;                 // the ISA's line for the form
};
const std::vector<cvt_form> &cvt_forms();

// Parses one instruction string. Anything else is input_error "'TEXT': 'TOKEN' ..." naming the
// first token that does not fit and what would have.
ptx_cvt parse_ptx_cvt(std::string_view text);

// The row of cvt_forms() that `p` is an instance of (parse_ptx_cvt found it; never null for its
// results).
const cvt_form *form_of(const ptx_cvt &p) noexcept;

// Whether the model covers p; if not, why ("not modelled yet: ...").
std::string not_modelled(const ptx_cvt &p);

// One element of a run: where it came from and where it went.
struct cvt_lane {
  int d_hi = 0, d_lo = 0;    // bit range of d it fills
  std::string input;         // "a", "b", "a[31:16]" ...
  format_id in_format{};     // element format read
  std::uint64_t in_bits = 0; // element bits read
  bool ue8m0_in = false;     // input element is a ue8m0 byte (in_format unused)
  format_id out_format{};    // element format written (ue8m0_out: unused)
  bool ue8m0_out = false;
  std::uint64_t out_bits = 0; // element bits written (tf32: as the 32-bit register pattern)
  std::uint8_t flags = 0;
};

struct cvt_run {
  ptx_cvt p;
  std::uint64_t d = 0; // the destination register
  int d_bits = 0;      // its width
  std::vector<cvt_lane> lanes;
  env e{}; // the environment each element was converted in
};

// Operands as given on the command line: A [B]. f32/f16/bf16 sources read like every other
// operand (io/number.hpp); packed sources (f16x2, bf16x2, e4m3x2 ...) only as a 0x bit pattern
// of the register width. Wrong count, bad value: input_error naming it. An unmodelled form:
// input_error with not_modelled's text.
cvt_run run_ptx_cvt(std::string_view text, const std::vector<std::string> &operands);

} // namespace bf16emu::io
