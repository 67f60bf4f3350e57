// bf16emu CUDA twin: reading the `bf16emu mma` line format (docs/tensor-cores.md) into a vec_set.
// Tokens are read by the support library's operand parser (hex bit patterns, decimals, inf,
// nan); a value that is not exact in its format is an error, as in `bf16emu mma`.
#pragma once

#include <iosfwd>
#include <string>

#include "vectors.hpp"

namespace bf16emu::gpu {

// Appends the records of `is` to v (v.in, v.out and v.k must be set). Comment lines ("#...")
// and empty lines are skipped. Returns false with "line N: ..." in `err` on the first bad line.
bool read_lines(std::istream &is, vec_set &v, std::string &err);

// Reads D values (one hex or decimal per line, '#' lines skipped) in format f.
bool read_outputs(std::istream &is, format_id f, std::vector<std::uint64_t> &d, std::string &err);
// The same for formats up to 32 bits.
bool read_outputs(std::istream &is, format_id f, std::vector<std::uint32_t> &d, std::string &err);

} // namespace bf16emu::gpu
