// bf16emu io: the one exception type for bad user input (unparsable number,
// unknown name, malformed file or line). The message names the bad input.
// CLI commands turn it into exit code 2 (see rethrow_as below and src/command.hpp).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace bf16emu::io {

struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs fn(); an input_error escaping it is rethrown as E (e.g. cli::bad_input) with the
// same message. Lets commands map support errors to their own exit code.
template <class E, class Fn> decltype(auto) rethrow_as(Fn &&fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const input_error &e) {
    throw E(e.what());
  }
}

} // namespace bf16emu::io
