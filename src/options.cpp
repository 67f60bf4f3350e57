// bf16emu CLI: option helpers. See options.hpp.
#include "options.hpp"

#include "io/files.hpp"

namespace bf16emu::cli {

std::uint64_t parse_count(const std::string &text, const std::string &name, std::uint64_t min,
                          std::uint64_t max) {
  const std::string shown = io::shorten(text, 40); // control characters escaped, long text cut
  if (!text.empty() && text[0] == '-')
    throw bad_input(name + ": '" + shown + "' is negative; expected a count in " + std::to_string(min) +
                    ".." + std::to_string(max));
  std::uint64_t v = 0;
  try {
    v = io::parse_uint(text, max, name.c_str());
  } catch (const io::input_error &) {
    throw bad_input(name + ": cannot read '" + shown + "' (expected an integer in " + std::to_string(min) +
                    ".." + std::to_string(max) + ")");
  }
  if (v < min) throw bad_input(name + ": " + shown + " is below the minimum " + std::to_string(min));
  return v;
}

} // namespace bf16emu::cli
