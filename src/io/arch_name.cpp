#include "io/arch_name.hpp"

#include "io/names.hpp"

namespace bf16emu::io {

bool parse_arch_name(std::string_view name, tc::arch &out) {
  return tc::parse_arch(normalize_name(name), out);
}

bool parse_instr_name(std::string_view name, tc::instr_kind &out) {
  return tc::parse_instr(normalize_name(name), out);
}

} // namespace bf16emu::io
