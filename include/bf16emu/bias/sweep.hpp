// bf16emu bias: configurations, the parallel and sharded runner.
//
// A run is a list of configurations (accumulation method x rounding mode x generator knobs),
// each with `trials` trials. Work is cut into units of `chunk` trials of one configuration;
// unit u = config * chunks_per_config + chunk. Shard K of N runs the units with u % N == K.
// Threads take units from a shared counter and merge their statistics exactly (stats.hpp),
// so the result is bit-identical for every thread count and every sharding.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16emu/bias/accumulate.hpp"
#include "bf16emu/bias/generate.hpp"
#include "bf16emu/bias/stats.hpp"
#include "bf16emu/parallel.hpp"

namespace bf16emu::bias {

// The shortest decimal that reads back as d.
inline std::string shortest(double d) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, d);
  return std::string(b, r.ptr);
}

struct config {
  accumulation acc{};
  knobs k{};
  std::string scenario = "custom";
};

// Named knob presets. false for an unknown name.
//   paper      the worked example's conditions (docs/bias.md): a running FP32 sum whose low
//              bits are not zero (residual <= 0.1 BF16 ulp), mostly negative BF16 values
//              (90%) in [0.5, 2) added with weight exactly 1, n = 4, one final BF16 rounding
//   symmetric  symmetric random data: signs 50/50, 4 binades, weights uniform (no exact 1),
//              start 0, n = 64
//   custom     the defaults of struct knobs
inline bool apply_scenario(config &c, const std::string &name) {
  if (name == "paper") {
    c.k.n = 4;
    c.k.neg = 0.9;
    c.k.spread = 1;
    c.k.ones = 1;
    c.k.residual = 0.1;
    c.k.weights = weight_dist::uniform;
  } else if (name == "symmetric") {
    c.k.n = 64;
    c.k.neg = 0.5;
    c.k.spread = 4;
    c.k.ones = 0;
    c.k.residual = 0;
    c.k.weights = weight_dist::uniform;
  } else if (name != "custom") {
    return false;
  }
  c.scenario = name;
  return true;
}

// The numeric knobs a bias map can sweep, and the range of values each accepts (the same
// bounds the bias command checks for its options).
struct knob_range {
  const char *name;
  double lo, hi;
};
inline constexpr knob_range map_knobs[] = {
    {"n", 1, 16777216},         {"neg", 0, 1},   {"spread", 0, 60}, {"ones", 0, 1}, {"residual", 0, 1},
    {"tc_L", 1, tc::max_block}, {"tc_F", 1, 48},
};

// The range of a map knob; nullptr for an unknown name.
inline const knob_range *find_knob(const std::string &name) {
  for (const knob_range &k : map_knobs)
    if (name == k.name) return &k;
  return nullptr;
}

// Sets a numeric knob by name; false for an unknown name or a value outside the knob's range
// (checked as a double, before any conversion to an integer; NaN is outside every range).
// Integer knobs take the value truncated toward zero.
inline bool set_knob(config &c, const std::string &name, double v) {
  const knob_range *r = find_knob(name);
  if (!r || !(v >= r->lo && v <= r->hi)) return false;
  if (name == "n")
    c.k.n = static_cast<std::uint32_t>(v);
  else if (name == "neg")
    c.k.neg = v;
  else if (name == "spread")
    c.k.spread = v;
  else if (name == "ones")
    c.k.ones = v;
  else if (name == "residual")
    c.k.residual = v;
  else if (name == "tc_L") {
    c.acc.tc.L = static_cast<int>(v);
    if (c.acc.tc.instr_k < c.acc.tc.L) c.acc.tc.instr_k = c.acc.tc.L;
  } else
    c.acc.tc.F = static_cast<int>(v);
  return true;
}

// "neg must be in [0, 1], got 1.5"
inline std::string out_of_range(const knob_range &r, double v) {
  return std::string(r.name) + " must be in [" + shortest(r.lo) + ", " + shortest(r.hi) + "], got " +
         shortest(v);
}

// The value of map knob r in c.
inline double knob_value(const config &c, const knob_range &r) {
  const std::string name = r.name;
  return name == "n"          ? double(c.k.n)
         : name == "neg"      ? c.k.neg
         : name == "spread"   ? c.k.spread
         : name == "ones"     ? c.k.ones
         : name == "residual" ? c.k.residual
         : name == "tc_L"     ? double(c.acc.tc.L)
                              : double(c.acc.tc.F);
}

// The first knob of c outside its range (NaN included); nullptr when every knob is inside.
inline const knob_range *bad_knob(const config &c) {
  for (const knob_range &r : map_knobs) {
    const double v = knob_value(c, r);
    if (!(v >= r.lo && v <= r.hi)) return &r;
  }
  return nullptr;
}

// A bias map axis: a knob and the values it takes.
struct axis {
  std::string knob; // empty: no axis (one value, nothing set)
  std::vector<double> values;
};

inline constexpr std::uint64_t max_axis_steps = 1000;

// steps values evenly spaced from lo to hi (lo alone when steps == 1). Throws
// std::invalid_argument for an unknown knob, steps outside 1..max_axis_steps, or an end point
// outside the knob's range (every value between the end points is then inside it too).
inline axis make_axis(const std::string &knob, double lo, double hi, std::uint64_t steps) {
  const knob_range *r = find_knob(knob);
  if (!r)
    throw std::invalid_argument("unknown knob '" + knob + "' (n, neg, spread, ones, residual, tc_L, tc_F)");
  if (steps < 1 || steps > max_axis_steps) throw std::invalid_argument("STEPS must be 1..1000");
  for (double v : {lo, hi})
    if (!(v >= r->lo && v <= r->hi)) throw std::invalid_argument(out_of_range(*r, v));
  axis a{knob, {}};
  a.values.reserve(steps);
  for (std::uint64_t i = 0; i < steps; ++i) {
    const double v = steps == 1 ? lo : lo + (hi - lo) * double(i) / double(steps - 1);
    a.values.push_back(std::fmin(std::fmax(v, r->lo), r->hi)); // rounding never leaves the range
  }
  return a;
}

// Number of configurations expand_grid makes (saturates at UINT64_MAX).
inline std::uint64_t grid_size(std::size_t methods, std::size_t rounds, const axis &x, const axis &y) {
  std::uint64_t n = 1;
  for (std::uint64_t f : {std::uint64_t(methods), std::uint64_t(rounds), std::uint64_t(x.values.size()),
                          std::uint64_t(y.knob.empty() ? 1 : y.values.size())}) {
    if (f != 0 && n > UINT64_MAX / f) return UINT64_MAX;
    n *= f;
  }
  return n;
}

// The configurations of a run: for every method and rounding mode (in that nesting), the
// base configuration, or with a map the grid, x varying fastest. An axis with an empty knob
// is absent; without x there is no map.
inline std::vector<config> expand_grid(const config &base, const std::vector<method> &ms,
                                       const std::vector<round_mode> &rs, const axis &x = {},
                                       const axis &y = {}) {
  std::vector<config> out;
  const bool map = !x.knob.empty();
  out.reserve(map ? grid_size(ms.size(), rs.size(), x, y) : ms.size() * rs.size());
  const std::vector<double> none{0};
  for (method m : ms)
    for (round_mode r : rs) {
      config c = base;
      c.acc.m = m;
      c.acc.mode = r;
      if (!map) {
        out.push_back(c);
        continue;
      }
      for (double yv : y.knob.empty() ? none : y.values)
        for (double xv : x.values) {
          config cc = c;
          set_knob(cc, x.knob, xv);
          if (!y.knob.empty()) set_knob(cc, y.knob, yv);
          out.push_back(cc);
        }
    }
  return out;
}

struct run_spec {
  std::vector<config> configs;
  std::uint64_t seed = 1;
  std::uint64_t trials = 10000;
  std::uint64_t chunk = 1000;
  unsigned threads = 1;
  std::uint64_t shard = 0, shards = 1;
  // Called after every finished unit with (units done, units of this shard), from one thread
  // at a time (parallel_for); it should rate-limit its own output.
  progress_fn progress;
};

inline std::uint64_t chunks_per_config(const run_spec &s) {
  return s.trials / s.chunk + (s.trials % s.chunk != 0);
}

// Shard K of N runs units K, K + N, K + 2N, ... below chunks_per_config * configs: this many.
// Precondition: that product fits 64 bits (run() checks it).
inline std::uint64_t shard_unit_count(const run_spec &s) {
  return shard_size(chunks_per_config(s) * s.configs.size(), s.shard, s.shards);
}

// Runs the trials of one unit into `st`.
inline void run_unit(const run_spec &s, std::uint64_t unit, stats &st, trial_input &buf) {
  const std::uint64_t cpc = chunks_per_config(s);
  const config &c = s.configs[unit / cpc];
  const std::uint64_t first = (unit % cpc) * s.chunk;
  const std::uint64_t last = first + std::min(s.chunk, s.trials - first);
  for (std::uint64_t t = first; t < last; ++t) {
    generate(c.k, s.seed, t, buf);
    st.add(accumulate(c.acc, buf, s.seed, t), t);
  }
}

// Runs this shard; returns one stats per configuration (configurations without units of
// this shard stay empty).
inline std::vector<stats> run(const run_spec &s) {
  if (s.shards == 0 || s.shard >= s.shards) throw std::invalid_argument("shard index out of range");
  if (s.chunk == 0) throw std::invalid_argument("chunk must be positive");
  for (const config &c : s.configs)
    if (const knob_range *r = bad_knob(c)) throw std::invalid_argument(out_of_range(*r, knob_value(c, *r)));
  const std::uint64_t cpc = chunks_per_config(s);
  if (cpc != 0 && s.configs.size() > UINT64_MAX / cpc) throw std::invalid_argument("too many work units");
  std::vector<stats> out(s.configs.size());
  const std::uint64_t units = shard_unit_count(s);
  // One trial buffer per worker; each unit's statistics are merged into its configuration
  // under a lock, and the merge is exact and order-free (stats.hpp).
  std::vector<trial_input> bufs(resolve_threads(s.threads, units));
  std::mutex mu;
  parallel_for(
      units, s.threads,
      [&](std::uint64_t i, unsigned worker) {
        const std::uint64_t unit = s.shard + i * s.shards;
        stats local;
        run_unit(s, unit, local, bufs[worker]);
        std::lock_guard<std::mutex> lock(mu);
        out[unit / cpc].merge(local);
      },
      s.progress);
  if (units == 0 && s.progress) s.progress(0, 0);
  return out;
}

} // namespace bf16emu::bias
