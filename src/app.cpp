// bf16emu CLI: the app and the checks on the raw arguments (app.hpp).
#include "app.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "command.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/number.hpp"

#ifndef BF16EMU_VERSION
#error "BF16EMU_VERSION: defined by src/CMakeLists.txt from project(bf16emu VERSION ...)"
#endif

namespace bf16emu::cli {
std::vector<command_entry> &command_registry() {
  static std::vector<command_entry> registry;
  return registry;
}
} // namespace bf16emu::cli

namespace {

// The subcommand named by the first argument that is not an option (the top-level options
// take no value), and its index in args; null when that argument names none (or there is none).
CLI::App *named_subcommand(CLI::App &app, const std::vector<std::string> &args, std::size_t &at) {
  for (at = 0; at < args.size(); ++at)
    if (args[at].empty() || args[at][0] != '-') break;
  if (at == args.size()) return nullptr;
  for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
    if (sub->check_name(args[at])) return sub;
  return nullptr;
}

// An argument that begins with '-' and reads as a number: -inf, -nan, -.5, -2.5e3, -0x1p-3.
bool is_negative_number(const std::string &arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') return false;
  try {
    (void)bf16emu::io::parse_operand(arg, bf16emu::format_id::fp64);
    return true;
  } catch (const bf16emu::io::input_error &) {
    return false;
  }
}

// Negative numbers are operands. CLI11 2.1 reads "-inf", "-nan" or "-.5" as an option (a '-'
// and a letter), and a "--" inside a subcommand ends its options only while it still needs
// operands. A subcommand whose operands are numbers also takes each one as "--operand=X"
// (cmd_arith.cpp). For such a subcommand every argument that reads as a negative number
// (unless it is the value of the option before it) and every argument after its first "--"
// is passed in that form, in place, so the operands keep their order and real options work.
// sub: the command args[at] names (named_subcommand), or null.
std::vector<std::string> negative_operands(CLI::App *sub, std::size_t at,
                                           const std::vector<std::string> &args) {
  if (sub == nullptr || sub->get_option_no_throw("--operand") == nullptr) return args;
  std::vector<std::string> out(args.begin(), args.begin() + std::ptrdiff_t(at) + 1);
  bool operands_only = false;
  for (std::size_t i = at + 1; i < args.size(); ++i) {
    const std::string &arg = args[i], &before = args[i - 1];
    const CLI::Option *opt =
        before.size() > 1 && before[0] == '-' ? sub->get_option_no_throw(before) : nullptr;
    const bool value = opt != nullptr && opt->get_items_expected_min() > 0; // arg is that option's value
    if (operands_only || (!value && is_negative_number(arg)))
      out.push_back("--operand=" + arg);
    else if (!value && arg == "--")
      operands_only = true;
    else
      out.push_back(arg);
  }
  return out;
}

// Option values that no option accepts, checked on the raw arguments before any command runs:
// an empty value ("--ledger ''" is not "no --ledger") and a number that is not finite ("--tie-share
// nan", "--strength inf", "--base 1e999"). Operands of the arithmetic commands (--operand) may be
// any number. Throws input_error naming the option and the value. sub and at as above.
void check_option_values(const CLI::App *sub, std::size_t at, const std::vector<std::string> &args) {
  if (sub == nullptr) return;
  for (std::size_t i = at + 1; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-' || is_negative_number(arg)) continue;
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const CLI::Option *opt = sub->get_option_no_throw(name);
    if (opt == nullptr || opt->get_items_expected_min() == 0) continue; // a flag, or CLI11's own error
    std::string value;
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (i + 1 < args.size())
      value = args[++i];
    else
      continue; // CLI11 reports the missing value
    if (name == "--operand") continue;
    if (value.empty())
      throw bf16emu::io::input_error(name + ": an empty value (leave the option out instead)");
    if (opt->get_type_name() != "FLOAT") continue; // integer and text options read their own values
    char *end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && *end == '\0' && !std::isfinite(v))
      throw bf16emu::io::input_error(name + " " + bf16emu::io::shorten(value) +
                                     ": must be a finite number (" + name + ": " + opt->get_description() +
                                     ")");
  }
}

// "paper, add, sub, ...": the subcommands in --help order.
std::string command_names(CLI::App &app) {
  std::string s;
  for (const CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
    s += (s.empty() ? "" : ", ") + sub->get_name();
  return s;
}

} // namespace

namespace bf16emu::cli {

void build_app(CLI::App &app) {
  app.description("bf16emu: bit-exact BF16/FP32 arithmetic, tensor-core model and attention error ledger.\n"
                  "Start with: bf16emu paper");
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", "bf16emu " BF16EMU_VERSION);
  auto &registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const command_entry &a, const command_entry &b) { return a.order < b.order; });
  for (const auto &entry : registry)
    entry.fn(app);
}

std::vector<std::string> prepare_arguments(CLI::App &app, const std::vector<std::string> &args) {
  std::size_t at = 0;
  CLI::App *sub = named_subcommand(app, args, at);
  if (sub == nullptr && at < args.size())
    throw bad_input("unknown command '" + io::shorten(args[at]) + "' (commands: " + command_names(app) + ")");
  // Only options before any command: each must be one of the top-level ones.
  for (const std::string &arg : args)
    if (at == args.size() && !arg.empty() && arg[0] == '-' && arg != "-h" && arg != "--help" &&
        arg != "--help-all" && arg != "--version")
      throw bad_input("unknown option '" + io::shorten(arg) +
                      "' (put a command first: " + command_names(app) + "; or --help)");
  // The rewrite keeps every argument up to the command in place, so `at` indexes it in both.
  std::vector<std::string> out = negative_operands(sub, at, args);
  check_option_values(sub, at, out);
  return out;
}

} // namespace bf16emu::cli
