// bf16emu_io: the mixed-format and block-scaled tensor-core kinds on `bf16emu mma` lines
// (tc/scaled.hpp; docs/tensor-cores.md, "Blackwell tcgen05: f16 accumulation, f8f6f4 and
// block-scaled kinds"): option values, the line format with scale factors, the --list-arch rows.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include <bf16emu/core/format.hpp>
#include <bf16emu/tc/scaled.hpp>

namespace bf16emu::io {

class json_writer;

// The mma options that select a scaled / mixed-format kind (empty: not given).
struct scaled_mma_options {
  std::string kind;         // --kind: f8f6f4, mxf8f6f4, mxf4, mxf4nvf4
  std::string b_format;     // --b-format (default: the A format)
  std::string scale_format; // --scale-format: ue8m0 or ue4m3 (default: the kind's)
  unsigned vec = 0;         // --scale-vec: 16 or 32 k-elements per scale (default: the kind's)
  bool packed = false;      // --packed: e2m1 operands two codes per byte (io/packed.hpp)
};

// Whether any of the options above was given (the line then goes to run_scaled_lines).
bool scaled_requested(const scaled_mma_options &o) noexcept;

// The common mma options the scaled lines also use.
struct mma_common {
  std::string arch, instr, a_format, out;
  unsigned k = 0; // 0: the instruction's k
  bool json = false;
  std::string ptx; // --ptx: the instruction string, whose mapping is written first (io/ptx.hpp)
  tc::zero_exp zeros = tc::zero_exp::e_zero; // --zero-exp
};

// The preset that the options name, with the A, B and D formats it runs on (fa, fb, fo); an
// unknown kind or format, or a combination without a preset, throws io::input_error naming it.
const tc::scaled_preset &resolve_scaled(const scaled_mma_options &o, const mma_common &c, format_id &fa,
                                        format_id &fb, format_id &fo);

// D of one dot product of K bit patterns of fa x fb (scale factors sa, sb: one per p.vec elements
// of K; null when unscaled) and C, in fo (fp32 or fp16): tc::scaled_dot on bit patterns.
std::uint64_t scaled_dot_bits(const tc::scaled_params &p, format_id fa, format_id fb, format_id fo,
                              const std::uint64_t *a, const std::uint64_t *b, int K, const std::uint8_t *sa,
                              const std::uint8_t *sb, std::uint64_t c);

// Reads lines of K values of A, K of B, then (scaled kinds) K/vec scale factors of A and K/vec
// of B as bit patterns (0x00..0xff), then C; writes D as a hex bit pattern per line (or one JSON
// object per line). Bad input (an unknown kind or format, no such preset, a bad value or scale
// factor, a wrong count) throws io::input_error naming it.
void run_scaled_lines(const scaled_mma_options &o, const mma_common &c, std::istream &in, std::ostream &out);

// The scaled presets for --list-arch: text rows, and JSON objects inside an open array.
void print_scaled_presets(std::ostream &out);
void write_scaled_presets(json_writer &w);
// The members of one scaled preset's JSON object (inside an object the caller opened).
void write_scaled_preset(json_writer &w, const tc::scaled_preset &P);

} // namespace bf16emu::io
