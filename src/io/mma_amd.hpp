// The `bf16emu mma` glue for the AMD CDNA MFMA models (include/bf16emu/tc/amd.hpp): resolving
// --arch/--instr/--a-format/--out to an instruction, evaluating one dot-product line, and the
// --list-arch rows (text and JSON). docs/tensor-cores.md, "AMD CDNA matrix cores".
#pragma once

#include <string>
#include <vector>

#include <bf16emu/tc/amd.hpp>

#include "io/json.hpp"

namespace bf16emu::io {

// The instruction that --arch, --instr, --a-format and --out name; nullptr when `arch` is not an
// AMD name (cdna1/mi100/gfx908, cdna2/mi200/gfx90a, cdna3/mi300/gfx942). An AMD arch with an
// unknown instruction, a format it lacks or a wrong --out is an input_error.
const tc::amd_preset *resolve_amd(const std::string &arch, const std::string &instr,
                                  const std::string &a_format, const std::string &out);

// D of one line of 2K+1 tokens (K values of A, K of B, then C) as a hex bit pattern. Values are
// bit patterns or exact decimals (fp8/bf8: bit patterns 0x00..0xff only); a bad value is an
// input_error naming the line.
std::string amd_line(const tc::amd_preset &P, const std::vector<std::string> &tok, int K, int lineno);

// --list-arch: one text line per instruction, and the same as JSON objects.
void print_amd_presets();
void write_amd_presets(json_writer &w);

} // namespace bf16emu::io
