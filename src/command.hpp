// bf16emu CLI: subcommand registry. Each cmd_*.cpp defines a function that adds
// its subcommand to the app and registers it with BF16EMU_COMMAND(order, fn);
// `order` fixes the position in --help.
#pragma once

#include <CLI/CLI.hpp>

namespace bf16emu::cli {

using register_fn = void (*)(CLI::App &);

struct command_entry {
  int order;
  register_fn fn;
};

// Returns the registry (function-local static: safe across translation units).
std::vector<command_entry> &command_registry();

struct command_registrar {
  command_registrar(int order, register_fn fn) { command_registry().push_back({order, fn}); }
};

// Exit code for bad input (unparsable value, wrong size, unknown option).
inline constexpr int exit_bad_input = 2;

// Thrown by command code for bad input; main() prints "bf16emu: <what>" and exits 2.
struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace bf16emu::cli

#define BF16EMU_CAT2(a, b) a##b
#define BF16EMU_CAT(a, b) BF16EMU_CAT2(a, b)
#define BF16EMU_COMMAND(order, fn)                                                                           \
  static ::bf16emu::cli::command_registrar BF16EMU_CAT(bf16emu_cmd_reg_, __LINE__)(order, fn)
