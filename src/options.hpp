// bf16emu CLI: option helpers shared by every subcommand.
//   add_count       an unsigned count or size, read strictly (decimal or 0x hex, no sign, no
//                   saturation) and checked against [min, max]; "-1" is rejected by name
//   add_max_memory  --max-memory SIZE, the limit of the size guard (io/memory.hpp)
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "command.hpp"
#include "io/error.hpp"
#include "io/memory.hpp"
#include "io/number.hpp"

namespace bf16emu::cli {

// Reads `text` as a count for option `name` in [min, max]; throws bad_input naming both.
std::uint64_t parse_count(const std::string &text, const std::string &name, std::uint64_t min,
                          std::uint64_t max);

template <class T>
CLI::Option *add_count(CLI::App *app, const std::string &name, T &var, const std::string &desc,
                       std::uint64_t min = 0,
                       std::uint64_t max = static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
  return app
      ->add_option_function<std::string>(
          name,
          [&var, name, min, max](const std::string &s) {
            var = static_cast<T>(parse_count(s, name, min, max));
          },
          desc)
      ->type_name("UINT");
}

inline CLI::Option *add_max_memory(CLI::App *app, std::uint64_t &var) {
  return app
      ->add_option_function<std::string>(
          "--max-memory", [&var](const std::string &s) { var = io::parse_size(s, "--max-memory"); },
          "memory limit of the size guard, e.g. 512M, 24G (default: the memory available now)")
      ->type_name("SIZE");
}

} // namespace bf16emu::cli
