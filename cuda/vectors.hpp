// bf16emu CUDA twin: test vectors for tensor-core instructions, in the `bf16emu mma` line format
// (docs/tensor-cores.md): one line = K values of a row of A, K values of a column of B, then C.
//
// Generators (all deterministic for a given seed; none needs a GPU):
//   probes  the discriminating probes of the tensor-core notes and the methods behind them
//           (F scan, block-size slide, order pairs, specials), for the chosen format;
//   normal  normal-range values with a spread of exponents, random signs, C of similar size;
//   bits    random bit patterns, one element in eight drawn from a special set (+-0, the
//           smallest and largest subnormals, min normal, max finite, +-Inf, NaN);
//   cancel  near-cancelling sets: pairs x*y and -x*y' with y' one ulp from y, C close to minus
//           the sum, so that the result depends on the low bits kept at alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/scaled.hpp"

namespace bf16emu::gpu {

struct vec_set {
  format_id in = format_id::bf16;  // A (and B unless in_b is set)
  format_id out = format_id::fp32; // C and D
  std::optional<format_id> in_b;   // B's format where it differs from A's (e4m3 x e5m2 mixes)
  std::optional<format_id> in_c;   // C's format where it differs from D's (the m8n8k4 C/D mixes)
  int k = 16;                      // values of A (and of B) per line
  std::vector<std::uint64_t> a, b; // lines*k bit patterns (tf32: the 19-bit pattern)
  std::vector<std::uint64_t> c;    // lines
  std::vector<std::string> notes;  // per line, may be empty: written as a "# ..." line before it
  // Block-scaled kinds (tc/scaled.hpp): the scale factors' format, k-elements per factor, and
  // per line k/vec factors of A and of B (bit patterns), written after B as `bf16emu mma` reads them.
  tc::scale_kind scale = tc::scale_kind::none;
  int vec = 0;                      // 0: unscaled
  std::vector<std::uint8_t> sa, sb; // lines*scales()

  std::size_t lines() const noexcept { return c.size(); }
  format_id b_format() const noexcept { return in_b.value_or(in); }
  format_id c_format() const noexcept { return in_c.value_or(out); }
  int scales() const noexcept { return vec > 0 ? k / vec : 0; } // per line, of A and of B
  void clear() { a.clear(), b.clear(), c.clear(), notes.clear(), sa.clear(), sb.clear(); }
};

enum class gen_kind { probes, normal, bits, cancel };

// Parses "probes", "normal", "bits", "cancel"; false when unknown.
bool parse_gen_kind(const std::string &s, gen_kind &g);
// A format name of io::parse_format (aliases included) that tensor cores take as A and B
// (bf16 fp16 tf32 e4m3 e5m2 ..., fp64 for DMMA) / as C and D (fp32 fp16 fp64); false otherwise
// (f unchanged).
bool parse_in_format(const std::string &s, format_id &f);
bool parse_out_format(const std::string &s, format_id &f);

// Appends `count` lines of the given kind (probes: the whole probe set, `count` ignored); C in
// c_format() (the D format's generators, applied to C's format). With
// scale factors (v.vec > 0), each line also gets its factors (unit ones for the probe set, which
// then adds the scale probes; random ones for the other kinds, from a stream of their own, so
// that A, B and C are those of the unscaled vectors).
void generate(vec_set &v, gen_kind kind, std::size_t count, std::uint64_t seed);

// Bit pattern as lowercase hex with 0x and the format's full width (tf32: 5 digits).
// (A scale factor: hex_scale, two digits.)
std::string hex(format_id f, std::uint64_t bits);
std::string hex_scale(std::uint8_t bits);
// A scale factor token 0x0..0xff (as `bf16emu mma` reads them); false when it is not one.
bool parse_scale(const std::string &tok, std::uint8_t &bits);

// Writes lines [first, first+count) (all by default); with notes, each note as a "# " line.
void write_lines(std::ostream &os, const vec_set &v, bool notes = true, std::size_t first = 0,
                 std::size_t count = std::size_t(-1));

} // namespace bf16emu::gpu
