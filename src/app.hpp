// bf16emu CLI: the app and the checks made on the raw arguments before CLI11 parses them,
// shared by main() and the argument fuzzer (fuzz/cli_args.cpp).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace bf16emu::cli {

// Gives app its title, --version and every registered subcommand (command.hpp), in --help order.
void build_app(CLI::App &app);

// The arguments (argv[1..]) as CLI11 is to parse them: negative operands of the arithmetic
// commands rewritten as --operand=X. Throws bad_input for an unknown command or a top-level
// option that is not one, io::input_error for an option value no option accepts (empty, or a
// number that is not finite).
std::vector<std::string> prepare_arguments(CLI::App &app, const std::vector<std::string> &args);

} // namespace bf16emu::cli
