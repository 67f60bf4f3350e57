// bf16emu io: the size guard. See memory.hpp.
#include "io/memory.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "io/error.hpp"

namespace bf16emu::io {

namespace {
constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();
}

std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) noexcept {
  std::uint64_t p = 1;
  for (std::uint64_t f : factors)
    if (__builtin_mul_overflow(p, f, &p)) return saturated;
  return p;
}

memory_need &memory_need::add(std::initializer_list<std::uint64_t> factors, const char *what) {
  const std::uint64_t b = saturating_product(factors);
  if (b == saturated || __builtin_add_overflow(bytes_, b, &bytes_)) {
    bytes_ = saturated;
    overflow_ = true;
  }
  if (what && b >= largest_bytes_) largest_bytes_ = b, largest_ = what;
  return *this;
}

std::uint64_t available_memory() noexcept {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  return saturated;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes == saturated) return "more than 18 EB";
  static const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 6)
    v /= 1000, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2g %s" : "%.3g %s", v, units[u]);
  return buf;
}

std::uint64_t parse_size(std::string_view text, const char *what) {
  auto fail = [&]() -> std::uint64_t {
    std::string shown(text.substr(0, 40));
    throw input_error(std::string(what) + ": cannot read '" + shown +
                      "' as a size (bytes, or a number with K, M, G, T or P: 512M, 24G, 1.5T)");
  };
  std::string t(text);
  if (!t.empty() && (t.back() == 'B' || t.back() == 'b')) t.pop_back();
  double scale = 1;
  if (!t.empty()) {
    const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    const char *units = "KMGTP";
    for (int i = 0; units[i]; ++i)
      if (c == units[i]) {
        scale = std::ldexp(1.0, 10 * (i + 1));
        t.pop_back();
        break;
      }
  }
  if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.')) return fail();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    return fail();
  }
  if (used != t.size() || !(v > 0)) return fail();
  const double b = v * scale;
  if (!(b >= 1) || b >= 1.8e19) return fail();
  return static_cast<std::uint64_t>(b);
}

void check_memory(const memory_need &need, std::uint64_t max_memory, std::string_view command) {
  const bool explicit_limit = max_memory != 0;
  const std::uint64_t limit = explicit_limit ? max_memory : available_memory();
  if (!need.overflowed() && need.bytes() <= limit) return;
  std::string msg = std::string(command) + " needs " + human_bytes(need.bytes());
  if (!need.largest().empty()) msg += " (largest: " + need.largest() + ")";
  if (explicit_limit)
    msg += "; --max-memory is " + human_bytes(limit);
  else
    msg += "; this machine has " + human_bytes(limit) + " available; --max-memory to override";
  throw input_error(msg);
}

} // namespace bf16emu::io
