// Argument harness: the whole CLI option parser (src/app.cpp and every subcommand's options, as
// `bf16emu` parses them), with the commands themselves switched off, so that no input runs a
// computation or touches a file. Any argument vector either parses or is refused with one of the
// errors main() reports as bad input (exit 2): CLI11's parse errors, bad_input, io::input_error.
// Nothing else may escape, crash or leak, and the refusal's message, as main() prints it, is one
// line without control characters (a user's newline or escape in a token is shown escaped).
//
// Input: the arguments, separated by NUL bytes. The first selects the command: its first byte
// modulo (number of commands + 1), the last value leaving the arguments without a command. An
// argument of one byte below 0x20 stands for the command's option of that index (modulo their
// number), so that the fuzzer reaches every option without having to guess its name.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app.hpp"
#include "command.hpp"
#include "io/error.hpp"
#include "io/files.hpp"

namespace {

// Thrown once an argument vector is parsed, before any command runs.
struct parsed_only {};

CLI::App &quiet_app() {
  static CLI::App *app = [] {
    auto *a = new CLI::App;
    bf16emu::cli::build_app(*a);
    // Parse only: CLI11 runs the top level's parse-complete callback after every option is parsed
    // and checked and before the subcommands' callbacks, so a throw there stops the command from
    // running. (Replacing the subcommands' callbacks instead would free the option storage that
    // their lambdas own and leave the options bound to freed strings.)
    a->parse_complete_callback([] { throw parsed_only{}; });
    return a;
  }();
  return *app;
}

// The message main() would print: bad_input and input_error as they are, CLI11's cut by shorten.
void check_message(const std::string &printed) {
  for (const char c : printed)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') {
      std::fprintf(stderr, "control character 0x%02x in the message: %s\n", unsigned(c), printed.c_str());
      std::abort();
    }
  if (printed.empty()) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace cli = bf16emu::cli;
  namespace io = bf16emu::io;
  if (size == 0 || size > 4096) return 0;
  CLI::App &app = quiet_app();
  const auto subs = app.get_subcommands([](CLI::App *) { return true; });
  std::vector<std::string> args;
  std::string cur;
  for (std::size_t i = 1; i <= size; ++i) {
    if (i == size || data[i] == 0) {
      args.push_back(cur);
      cur.clear();
      if (args.size() > 32) break;
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  CLI::App *sub = nullptr;
  if (data[0] % (subs.size() + 1) < subs.size()) {
    sub = subs[data[0] % (subs.size() + 1)];
    args.insert(args.begin(), sub->get_name());
  }
  if (sub != nullptr) {
    const auto opts = sub->get_options();
    for (std::string &a : args)
      if (a.size() == 1 && static_cast<unsigned char>(a[0]) < 0x20 && !opts.empty()) {
        const CLI::Option *o = opts[static_cast<unsigned char>(a[0]) % opts.size()];
        const auto &longs = o->get_lnames();
        const auto &shorts = o->get_snames();
        if (!longs.empty())
          a = "--" + longs.front();
        else if (!shorts.empty())
          a = "-" + shorts.front();
      }
  }
  try {
    std::vector<std::string> prepared = cli::prepare_arguments(app, args);
    std::vector<char *> argp{const_cast<char *>("bf16emu")};
    for (auto &a : prepared)
      argp.push_back(a.data());
    app.parse(int(argp.size()), argp.data());
    std::abort(); // parse_complete_callback throws: unreachable
  } catch (const parsed_only &) {
  } catch (const CLI::CallForHelp &) {
  } catch (const CLI::CallForAllHelp &) {
  } catch (const CLI::CallForVersion &) {
  } catch (const CLI::ParseError &e) {
    check_message(io::shorten(e.what(), 400));
  } catch (const cli::bad_input &e) {
    check_message(e.what());
  } catch (const io::input_error &e) {
    check_message(e.what());
  }
  return 0;
}
