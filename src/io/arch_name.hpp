// bf16emu io: architecture and instruction-family names as the front ends take them (--arch,
// --instr, Python's arch= and kind=): the one spelling rule of names.hpp (surrounding spaces
// dropped, lower case) applied before the tensor-core model's own parsers, so that "SM90",
// " Hopper " and "WGMMA" are read as the CLI's tables spell them, in every front end.
// (The probe files' own parsers in cuda/ read their exact spelling.)
#pragma once

#include <string_view>

#include <bf16emu/tc/arch.hpp>
#include <bf16emu/tc/presets.hpp>

namespace bf16emu::io {

bool parse_arch_name(std::string_view name, tc::arch &out);        // false: unknown (out unchanged)
bool parse_instr_name(std::string_view name, tc::instr_kind &out); // false: unknown (out unchanged)

} // namespace bf16emu::io
