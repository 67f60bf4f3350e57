// bf16emu io: the state file of a sharded bias run (bf16emu bias --shard K/N --state FILE,
// combined by bf16emu merge). A header line, a run line, one line per configuration and one
// line of exact statistics per configuration, in index order:
//
//   bf16emu-bias-state 1
//   run seed=1 trials=4000 chunk=1000 shards=2 shard=0 configs=1
//   config 0 scenario=paper method=fp32_seq ...      (bias_config_text)
//   stats 0 trials=2000 nonfinite=0 ...               (bias_stats_text)
//
// Everything is exact, so merging the shards reproduces the unsharded run bit for bit. Reading
// is strict: every field an unsigned decimal within its bound (a sign is rejected), no unknown
// or repeated key, every configuration and its statistics present; anything else is
// io::input_error naming the file and line. Memory grows with the file, never with a count it
// declares, and the declared count is checked against the size guard (memory.hpp) first.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <bf16emu/bias/stats.hpp>
#include <bf16emu/bias/sweep.hpp>

namespace bf16emu::io {

inline constexpr const char *bias_state_magic = "bf16emu-bias-state 1";

// Bounds of a bias run, shared by the state file and the bias command's options.
inline constexpr std::uint64_t bias_max_trials = std::uint64_t{1} << 40; // per configuration
inline constexpr std::uint64_t bias_max_chunk = bias_max_trials;
inline constexpr std::uint64_t bias_max_shards = std::uint64_t{1} << 32;
inline constexpr std::uint64_t bias_max_configs = std::uint64_t{1} << 24;

// The text forms of the state file's lines (exact: sums as sparse hex limbs, doubles as %a).
//   superacc    "i:hex,i:hex,..." (limb index and value), "0" when zero
//   config      "scenario=paper method=fp32_seq round=... residual=0.1" (its identity in reports)
//   stats       "trials=2000 nonfinite=0 ... worst_rel=0x1.8p-9"
std::string superacc_text(const bias::superacc &a);
bool parse_superacc(const std::string &text, bias::superacc &a); // false on malformed text
std::string bias_config_text(const bias::config &c);
std::string bias_stats_text(const bias::stats &st);
// Parses bias_stats_text's output into st; returns an error message, empty on success.
std::string parse_bias_stats(const std::string &line, bias::stats &st);

void write_bias_state(std::ostream &out, const bias::run_spec &spec, const std::vector<bias::stats> &st);

struct bias_state {
  std::string run_line; // the run line's tokens without shard=: equal for shards of one run
  std::uint64_t seed = 0, trials = 0, chunk = 0, shards = 1, shard = 0;
  std::vector<std::string> configs; // serialized configurations
  std::vector<bias::stats> stats;
};

// Reads a state file; max_memory is the size guard's limit (0: the memory available now).
bias_state read_bias_state(const std::string &path, std::uint64_t max_memory = 0);

// Merges the states of every shard of one run (each exactly once, in any order) into one
// statistics per configuration; throws input_error naming the file that does not belong or
// the shard that is missing. paths name the states in messages.
std::vector<bias::stats> merge_bias_states(const std::vector<bias_state> &parts,
                                           const std::vector<std::string> &paths);

} // namespace bf16emu::io
