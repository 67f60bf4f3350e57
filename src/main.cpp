// bf16emu command-line tool: the subcommands register themselves (command.hpp).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>

#include "command.hpp"
#include "io/error.hpp"

namespace bf16emu::cli {
std::vector<command_entry> &command_registry() {
  static std::vector<command_entry> registry;
  return registry;
}
} // namespace bf16emu::cli

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "bf16emu: %s\n", e.what());
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
