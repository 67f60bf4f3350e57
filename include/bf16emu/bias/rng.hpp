// bf16emu bias: counter-based random numbers. Every draw is a pure function of
// (seed, stream, trial, counter), so a trial gives the same numbers whichever thread,
// chunk or shard runs it.
#pragma once

#include <cstdint>

namespace bf16emu::bias {

inline std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Streams: independent uses of the same (seed, trial).
enum class stream : std::uint64_t { generate = 1, rounding = 2, search = 3 };

inline std::uint64_t key(std::uint64_t seed, stream s, std::uint64_t trial) noexcept {
  return splitmix64(splitmix64(splitmix64(seed) ^ (static_cast<std::uint64_t>(s) * 0xd1b54a32d192ed03ull)) ^
                    trial);
}

// draw i of a keyed sequence = splitmix64(key + i * golden): a counter-based generator.
struct counter_rng {
  std::uint64_t k = 0, ctr = 0;
  std::uint64_t next() noexcept { return splitmix64(k + (ctr++) * 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1p-53; }
  // Uniform integer in [0, n), n > 0 (multiply-shift; bias < 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) noexcept {
    __extension__ using u128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }
  bool chance(double p) noexcept { return uniform() < p; }
};

} // namespace bf16emu::bias
