// bf16emu io: the size guard. See memory.hpp.
#include "io/memory.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

#include "io/error.hpp"
#include "io/files.hpp"

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

namespace {

// The first number in a file (a cgroup's limit or usage); saturated for "max" or no file.
std::uint64_t read_number(const std::string &path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  if (in >> v) return v;
  return saturated;
}

// What the memory cgroup of this process still allows: limit minus usage (v2: memory.max and
// memory.current; v1: memory.limit_in_bytes and memory.usage_in_bytes); saturated when there
// is no limit.
std::uint64_t cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::uint64_t room = saturated;
  while (std::getline(in, line)) {
    const auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    std::uint64_t limit = saturated, usage = 0;
    if (controllers.empty()) { // v2
      limit = read_number("/sys/fs/cgroup" + path + "/memory.max");
      usage = read_number("/sys/fs/cgroup" + path + "/memory.current");
    } else if (controllers == "memory") { // v1; "no limit" reads as a number near 2^63
      limit = read_number("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      usage = read_number("/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
      if (limit >= (std::uint64_t{1} << 62)) limit = saturated;
    }
    if (limit == saturated) continue;
    if (usage == saturated) usage = 0;
    room = std::min(room, limit > usage ? limit - usage : 0);
  }
  return room;
}

// What RLIMIT_AS (ulimit -v) still allows: the limit minus the address space in use now.
std::uint64_t address_space_room() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return saturated;
  std::ifstream in("/proc/self/statm");
  std::uint64_t pages = 0;
  in >> pages;
  const std::uint64_t used = pages * std::uint64_t(sysconf(_SC_PAGE_SIZE));
  const auto limit = std::uint64_t(rl.rlim_cur);
  return limit > used ? limit - used : 0;
}

} // namespace

std::uint64_t available_memory() noexcept { return available_memory(nullptr); }

std::uint64_t available_memory(const char **which) noexcept {
  std::uint64_t avail = saturated;
  const char *why = "physical memory";
  try {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::uint64_t kb = 0;
    while (in >> key >> kb >> unit)
      if (key == "MemAvailable:") {
        avail = kb * 1024;
        why = "MemAvailable";
        break;
      }
    if (avail == saturated) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      if (pages > 0 && page > 0) avail = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
    }
    if (const std::uint64_t as = address_space_room(); as < avail) avail = as, why = "ulimit -v (RLIMIT_AS)";
    if (const std::uint64_t cg = cgroup_room(); cg < avail) avail = cg, why = "the cgroup's memory limit";
  } catch (...) { // a read failure leaves the figures found so far
  }
  if (which) *which = why;
  return avail;
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
    const std::string shown = shorten(std::string(text), 40);
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

void check_memory(const memory_need &need, std::uint64_t max_memory, std::string_view command,
                  std::string_view override_hint) {
  const bool explicit_limit = max_memory != 0;
  const char *which = nullptr;
  const std::uint64_t limit = explicit_limit ? max_memory : available_memory(&which);
  if (!need.overflowed() && need.bytes() <= limit) return;
  std::string msg = std::string(command) + " needs " + human_bytes(need.bytes());
  if (!need.largest().empty()) msg += " (largest: " + need.largest() + ")";
  if (explicit_limit)
    msg += "; --max-memory is " + human_bytes(limit);
  else
    msg += "; " + human_bytes(limit) +
           " is available (the least of MemAvailable, ulimit -v and the cgroup's " + "limit: here " + which +
           ")" + (override_hint.empty() ? std::string() : "; " + std::string(override_hint) + " to override");
  throw input_error(msg);
}

} // namespace bf16emu::io
