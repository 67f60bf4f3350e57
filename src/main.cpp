// bf16emu command-line tool: the subcommands register themselves (command.hpp).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/number.hpp"

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
std::vector<std::string> negative_operands(CLI::App &app, const std::vector<std::string> &args) {
  std::size_t at = 0;
  CLI::App *sub = named_subcommand(app, args, at);
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

// "paper, add, sub, ...": the subcommands in --help order.
std::string command_names(CLI::App &app) {
  std::string s;
  for (const CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
    s += (s.empty() ? "" : ", ") + sub->get_name();
  return s;
}

} // namespace

int main(int argc, char **argv) {
  using namespace bf16emu::cli;
  CLI::App app{"bf16emu: bit-exact BF16/FP32 arithmetic, tensor-core model and attention error ledger.\n"
               "Start with: bf16emu paper"};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", "bf16emu 0.1.0");
  auto &registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const command_entry &a, const command_entry &b) { return a.order < b.order; });
  for (const auto &entry : registry)
    entry.fn(app);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::size_t at = 0;
  if (named_subcommand(app, args, at) == nullptr && at < args.size()) {
    std::fprintf(stderr, "bf16emu: unknown command '%s' (commands: %s)\n",
                 bf16emu::io::shorten(args[at]).c_str(), command_names(app).c_str());
    return exit_bad_input;
  }
  args = negative_operands(app, args);
  std::vector<char *> argp{argv[0]};
  for (auto &a : args)
    argp.push_back(a.data());
  try {
    app.parse(int(argp.size()), argp.data());
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    // CLI11 quotes whole arguments ("not expected: <10 MB>"): the message is cut.
    std::fprintf(stderr, "bf16emu: %s\n", bf16emu::io::shorten(e.what(), 400).c_str());
    std::fprintf(stderr, "Run with --help for usage.\n");
    return exit_bad_input;
  } catch (const bad_input &e) {
    std::fprintf(stderr, "bf16emu: %s\n", e.what());
    return exit_bad_input;
  } catch (const bf16emu::io::input_error &e) {
    std::fprintf(stderr, "bf16emu: %s\n", e.what());
    return exit_bad_input;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bf16emu: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
