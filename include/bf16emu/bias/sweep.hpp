// bf16emu bias: configurations, the parallel and sharded runner.
//
// A run is a list of configurations (accumulation method x rounding mode x generator knobs),
// each with `trials` trials. Work is cut into units of `chunk` trials of one configuration;
// unit u = config * chunks_per_config + chunk. Shard K of N runs the units with u % N == K.
// Threads take units from a shared counter and merge their statistics exactly (stats.hpp),
// so the result is bit-identical for every thread count and every sharding.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bf16emu/bias/accumulate.hpp"
#include "bf16emu/bias/generate.hpp"
#include "bf16emu/bias/stats.hpp"

namespace bf16emu::bias {

struct config {
  accumulation acc{};
  knobs k{};
  std::string scenario = "custom";

  // "key=value" tokens: the identity of the configuration in state files and reports.
  std::string serialize() const {
    std::ostringstream o;
    auto hf = [](double d) { // shortest decimal that reads back as d
      char b[64];
      const auto r = std::to_chars(b, b + sizeof b, d);
      return std::string(b, r.ptr);
    };
    o << "scenario=" << scenario << " method=" << to_string(acc.m) << " round=" << to_string(acc.mode)
      << " out=" << to_string(acc.out) << " tc_L=" << acc.tc.L << " tc_F=" << acc.tc.F
      << " tc_k=" << acc.tc.instr_k << " n=" << k.n << " neg=" << hf(k.neg) << " spread=" << hf(k.spread)
      << " ones=" << hf(k.ones) << " weights=" << to_string(k.weights) << " residual=" << hf(k.residual);
    return o.str();
  }
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

// The numeric knobs a bias map can sweep.
inline const char *const map_knobs[] = {"n", "neg", "spread", "ones", "residual", "tc_L", "tc_F"};

// Sets a numeric knob by name; false for an unknown name.
inline bool set_knob(config &c, const std::string &name, double v) {
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
  } else if (name == "tc_F")
    c.acc.tc.F = static_cast<int>(v);
  else
    return false;
  return true;
}

struct run_spec {
  std::vector<config> configs;
  std::uint64_t seed = 1;
  std::uint64_t trials = 10000;
  std::uint64_t chunk = 1000;
  unsigned threads = 1;
  std::uint64_t shard = 0, shards = 1;
  // Called now and then with (units done, units of this shard), from one thread at a time;
  // it should rate-limit its own output.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

inline std::uint64_t chunks_per_config(const run_spec &s) { return (s.trials + s.chunk - 1) / s.chunk; }

// The units of this shard, in increasing order.
inline std::vector<std::uint64_t> shard_units(const run_spec &s) {
  std::vector<std::uint64_t> u;
  const std::uint64_t total = chunks_per_config(s) * s.configs.size();
  for (std::uint64_t i = s.shard; i < total; i += s.shards)
    u.push_back(i);
  return u;
}

// Runs the trials of one unit into `st`.
inline void run_unit(const run_spec &s, std::uint64_t unit, stats &st, trial_input &buf) {
  const std::uint64_t cpc = chunks_per_config(s);
  const config &c = s.configs[unit / cpc];
  const std::uint64_t first = (unit % cpc) * s.chunk;
  const std::uint64_t last = std::min(first + s.chunk, s.trials);
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
    if (c.acc.tc.L < 1 || c.acc.tc.L > tc::max_block || c.acc.tc.F < 1 || c.acc.tc.F > 48)
      throw std::invalid_argument("tensor-core block parameters out of range (1 <= L <= 32, 1 <= F <= 48)");
  std::vector<stats> out(s.configs.size());
  const std::vector<std::uint64_t> units = shard_units(s);
  const std::uint64_t cpc = chunks_per_config(s);
  std::atomic<std::uint64_t> next{0}, done{0};
  std::mutex mu;
  const unsigned nt = std::max(1u, std::min<unsigned>(s.threads, static_cast<unsigned>(units.size())));
  const bool single = nt == 1;
  auto worker = [&] {
    trial_input buf;
    for (;;) {
      const std::uint64_t i = next.fetch_add(1);
      if (i >= units.size()) break;
      stats local;
      run_unit(s, units[i], local, buf);
      std::lock_guard<std::mutex> lock(mu);
      out[units[i] / cpc].merge(local);
      done.fetch_add(1);
      if (s.progress && single) s.progress(done.load(), units.size());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < nt; ++t)
    pool.emplace_back(worker);
  if (s.progress && nt > 1) {
    // The calling thread reports progress while the pool works.
    std::thread last(worker);
    while (done.load() < units.size()) {
      s.progress(done.load(), units.size());
      for (int i = 0; i < 20 && done.load() < units.size(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    last.join();
  } else {
    worker();
  }
  for (auto &t : pool)
    t.join();
  if (s.progress) s.progress(units.size(), units.size());
  return out;
}

} // namespace bf16emu::bias
