// Shared helpers for the core test tiers: mapping core formats/environments to the oracle's own
// descriptors, random generators, and readable mismatch reports.
#pragma once

#include <bf16emu/core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "oracle.hpp"

namespace coretest {

using namespace bf16emu;

template <class F> oracle::format ofmt() {
  return oracle::format{F::exp_bits, F::frac_bits, F::encoding == special_encoding::fn,
                        F::encoding == special_encoding::finite};
}

// The oracle has its own flag constants; they are meant to carry the same meaning bit for bit.
static_assert(flag::invalid == oracle::flags::invalid && flag::divbyzero == oracle::flags::divbyzero &&
              flag::overflow == oracle::flags::overflow && flag::underflow == oracle::flags::underflow &&
              flag::inexact == oracle::flags::inexact);

inline oracle::environment oenv(const env &e) {
  oracle::environment o;
  o.mode = static_cast<oracle::rounding>(static_cast<int>(e.mode));
  o.tiny = e.tiny == tininess::before_rounding ? oracle::tininess::before_rounding
                                               : oracle::tininess::after_rounding;
  o.nan = e.nan == nan_policy::ieee   ? oracle::nan_policy::ieee
          : e.nan == nan_policy::cuda ? oracle::nan_policy::cuda
                                      : oracle::nan_policy::pytorch;
  o.flush_outputs = (static_cast<unsigned>(e.subnormal) & 1u) != 0;
  o.inputs_as_zero = (static_cast<unsigned>(e.subnormal) & 2u) != 0;
  o.saturate = e.saturate;
  o.random = e.random;
  o.sr_bits = e.sr_bits;
  return o;
}

inline std::string env_string(const env &e) {
  std::ostringstream s;
  s << to_string(e.mode) << (e.tiny == tininess::before_rounding ? " tiny=before" : " tiny=after") << " nan="
    << (e.nan == nan_policy::ieee   ? "ieee"
        : e.nan == nan_policy::cuda ? "cuda"
                                    : "pytorch")
    << " subnormal=" << static_cast<int>(e.subnormal) << (e.saturate ? " saturate" : "")
    << " sr_bits=" << int(e.sr_bits) << " random=0x" << std::hex << e.random;
  return s.str();
}

inline std::string hex(std::uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// splitmix64: deterministic random stream.
struct rng {
  std::uint64_t s;
  explicit rng(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint32_t u32() { return static_cast<std::uint32_t>(next() >> 32); }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  bool coin() { return next() & 1; }
};

inline std::uint32_t hash32(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// A random environment: every mode, both tininess settings, NaN policies, subnormal handling and
// saturation in some share.
inline env random_env(rng &r, round_mode m) {
  env e;
  e.mode = m;
  e.random = r.u32();
  if (r.below(4) == 0) e.random = r.coin() ? 0u : 0xFFFFFFFFu;
  e.tiny = r.coin() ? tininess::before_rounding : tininess::after_rounding;
  const int n = r.below(8);
  e.nan = n == 0 ? nan_policy::cuda : n == 1 ? nan_policy::pytorch : nan_policy::ieee;
  const int s = r.below(8);
  e.subnormal = s == 0   ? subnormals::flush_outputs
                : s == 1 ? subnormals::inputs_as_zero
                : s == 2 ? subnormals::flush_both
                         : subnormals::ieee;
  e.saturate = r.below(8) == 0;
  return e;
}

} // namespace coretest

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace coretest {

// Collects mismatches from several threads; keeps the first few messages.
struct tally {
  std::atomic<long long> cases{0}, bad{0};
  std::mutex mu;
  std::vector<std::string> msgs;
  void fail(const std::string &m) {
    ++bad;
    std::lock_guard<std::mutex> lk(mu);
    if (msgs.size() < 20) msgs.push_back(m);
  }
  std::string report() {
    std::string s;
    for (auto &m : msgs)
      s += m + "\n";
    return s;
  }
};

// Runs body(i) for i in [0, n) on hardware_concurrency threads (interleaved chunks).
inline void parallel_for(long long n, const std::function<void(long long)> &body) {
  unsigned t = std::thread::hardware_concurrency();
  if (t == 0) t = 1;
  std::atomic<long long> next{0};
  const long long chunk = 64;
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < t; ++k)
    pool.emplace_back([&] {
      for (;;) {
        const long long lo = next.fetch_add(chunk);
        if (lo >= n) return;
        const long long hi = lo + chunk < n ? lo + chunk : n;
        for (long long i = lo; i < hi; ++i)
          body(i);
      }
    });
  for (auto &th : pool)
    th.join();
}

// A core result against a hand-derived bit pattern and flag set (the test uses coretest::hex).
#define EXPECT_RES(expr, want_bits, want_flags)                                                              \
  do {                                                                                                       \
    const auto r_ = (expr);                                                                                  \
    EXPECT_EQ(std::uint64_t(r_.value.bits), std::uint64_t(want_bits))                                        \
        << #expr << ": got " << hex(r_.value.bits) << " want " << hex(want_bits);                            \
    EXPECT_EQ(int(r_.flags), int(want_flags))                                                                \
        << #expr << ": flags got " << int(r_.flags) << " want " << int(want_flags);                          \
  } while (0)

// Compares a core result with an oracle result; on mismatch describes the case via what().
template <class R, class What>
inline void check_result(tally &t, const R &got, const oracle::result &want, What &&what) {
  ++t.cases;
  if (std::uint64_t(got.value.bits) != want.bits || got.flags != want.flags) {
    t.fail(what() + ": core " + hex(got.value.bits) + " flags " + oracle::flags_string(got.flags) +
           ", oracle " + hex(want.bits) + " flags " + oracle::flags_string(want.flags));
  }
}

} // namespace coretest
