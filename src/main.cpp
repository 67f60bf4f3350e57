// bf16emu command-line tool: the subcommands register themselves (command.hpp).
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app.hpp"
#include "command.hpp"
#include "io/error.hpp"
#include "io/fast_paths.hpp"
#include "io/files.hpp"

// SIGINT, SIGTERM, SIGHUP: the temporary files of unfinished outputs go, then the default action,
// so an interrupted run leaves every earlier file as it was and no half-written one.
extern "C" void on_fatal_signal(int sig) {
  bf16emu::io::remove_unfinished_outputs();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

int main(int argc, char **argv) {
  using namespace bf16emu::cli;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    std::signal(sig, on_fatal_signal);
  try {
    bf16emu::io::check_stdout_open();
  } catch (const bf16emu::io::input_error &e) {
    std::fprintf(stderr, "bf16emu: %s\n", e.what());
    return exit_bad_input;
  }
  // The tensor-core model's lane-parallel kernel and attention's host FP32 (the same bits;
  // BF16EMU_TC_LANES=0 / BF16EMU_HW_F32=0 leave them off, for timing comparisons).
  bf16emu::io::install_fast_paths();
  CLI::App app;
  build_app(app);
  auto finish = [](int rc) {
    try {
      bf16emu::io::finish_stdout();
    } catch (const bf16emu::io::input_error &e) {
      std::fprintf(stderr, "bf16emu: %s\n", e.what());
      return rc == 0 ? int(exit_bad_input) : rc;
    }
    return rc;
  };
  try {
    std::vector<std::string> args = prepare_arguments(app, std::vector<std::string>(argv + 1, argv + argc));
    std::vector<char *> argp{argv[0]};
    for (auto &a : args)
      argp.push_back(a.data());
    app.parse(int(argp.size()), argp.data());
  } catch (const CLI::CallForHelp &e) {
    return finish(app.exit(e));
  } catch (const CLI::CallForAllHelp &e) {
    return finish(app.exit(e));
  } catch (const CLI::CallForVersion &e) {
    return finish(app.exit(e));
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
  return finish(0);
}
