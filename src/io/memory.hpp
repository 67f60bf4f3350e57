// bf16emu io: the one size guard. Before a command allocates, it adds up what it will need in
// checked (saturating) arithmetic and asks check_memory() whether that fits; a need that does
// not fit, or that overflows 64 bits, is bad input (exit 2 in the CLI), never std::bad_alloc
// or a wrapped size.
//
//   io::memory_need need;
//   need.add({batch, heads, n, d, 8}, "Q")      // bytes = product of the factors
//       .add({batch, heads, n, d, 8}, "K");
//   io::check_memory(need, opt.max_memory, "attention");
//
// The limit is --max-memory when given, else the memory available now (available_memory()).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace bf16emu::io {

class memory_need {
public:
  // Adds the product of `factors` bytes; `what` names the largest item in the error message.
  memory_need &add(std::initializer_list<std::uint64_t> factors, const char *what = nullptr);
  std::uint64_t bytes() const noexcept { return bytes_; } // UINT64_MAX when it overflowed
  bool overflowed() const noexcept { return overflow_; }
  const std::string &largest() const noexcept { return largest_; }

private:
  std::uint64_t bytes_ = 0, largest_bytes_ = 0;
  bool overflow_ = false;
  std::string largest_;
};

// Product of the factors, or UINT64_MAX when it does not fit.
std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) noexcept;

// Memory available to a new allocation now, bytes: the least of Linux MemAvailable (else
// physical memory), what ulimit -v (RLIMIT_AS) leaves above the address space in use, and what
// the memory cgroup leaves (memory.max - memory.current; v1 limit_in_bytes - usage_in_bytes).
// `which` (optional) gets the name of the one that applied.
std::uint64_t available_memory() noexcept;
std::uint64_t available_memory(const char **which) noexcept;

// "800 GB", "1.5 MB", "more than 18 EB" (decimal units, 3 significant digits).
std::string human_bytes(std::uint64_t bytes);

// "24G", "512M", "1.5T", "100000" (bytes); K/M/G/T/P are powers of 1024, an optional trailing B.
// Throws input_error naming `what` ("--max-memory") on anything else, zero or overflow.
std::uint64_t parse_size(std::string_view text, const char *what);

// Throws input_error when need exceeds max_memory (0: available_memory()):
//   "attention needs 800 GB (largest: Q); 24 GB is available (the least of MemAvailable, ulimit -v and
//   the cgroup's limit: here MemAvailable); --max-memory to override"
// `override_hint` names the front end's way to raise the limit ("--max-memory" in the CLI); empty
// (the Python module, which has none): no hint.
void check_memory(const memory_need &need, std::uint64_t max_memory, std::string_view command,
                  std::string_view override_hint = "--max-memory");

} // namespace bf16emu::io
