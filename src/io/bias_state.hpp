// bf16emu io: the state file of a sharded bias run (bf16emu bias --shard K/N --state FILE,
// combined by bf16emu merge). A header line, a run line, one line per configuration and one
// line of exact statistics per configuration, in index order:
//
//   bf16emu-bias-state 2
//   run seed=1 trials=4000 chunk=1000 shards=2 shard=0 configs=1
//   config 0 scenario=paper method=fp32_seq ...      (bias_config_text)
//   stats 0 trials=2000 nonfinite=0 ...               (bias_stats_text)
//   checksum fnv1a64=0123456789abcdef                 (of every line above, each ending in '\n')
//
// Everything is exact, so merging the shards reproduces the unsharded run bit for bit. Reading
// is strict: every field an unsigned decimal within its bound (a sign is rejected), no unknown
// or repeated key, every configuration and its statistics present, lines of at most
// max_state_line characters (LF or CRLF), the checksum right; anything else is io::input_error
// naming the file and line. Each statistics line is cross-checked against the run line (the
// trials it must hold are known from seed-free arithmetic on trials, chunk, shards and shard) and
// against itself (no count above trials, sums finite and within trials times the worst error,
// the worst error finite); each configuration line must name known methods, rounding modes and
// formats. Memory grows with the file, never with a count it declares, and the declared count is
// checked against the size guard (memory.hpp) first.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include <bf16emu/bias/stats.hpp>
#include <bf16emu/bias/sweep.hpp>

namespace bf16emu::io {

inline constexpr const char *bias_state_magic = "bf16emu-bias-state 2";

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
// What is wrong with statistics that should hold `expected_trials` trials (finite and not),
// empty when nothing is: counts that do not add up, sums out of bounds, a non-finite worst.
std::string check_bias_stats(const bias::stats &st, std::uint64_t expected_trials);
// What is wrong with a configuration line's text (bias_config_text), empty when nothing is.
std::string check_bias_config(const std::string &text);
// The trials that shard `shard` of `shards` runs for configuration `config` (sweep.hpp's units).
std::uint64_t shard_config_trials(std::uint64_t trials, std::uint64_t chunk, std::uint64_t shards,
                                  std::uint64_t shard, std::uint64_t config);

void write_bias_state(std::ostream &out, const bias::run_spec &spec, const std::vector<bias::stats> &st);

struct bias_state {
  std::string run_line; // the run line's tokens without shard=: equal for shards of one run
  std::uint64_t seed = 0, trials = 0, chunk = 0, shards = 1, shard = 0;
  std::vector<std::string> configs; // serialized configurations
  std::vector<bias::stats> stats;
};

// Reads a state file; max_memory is the size guard's limit (0: the memory available now).
bias_state read_bias_state(const std::string &path, std::uint64_t max_memory = 0);
// The same from a stream; `name` stands for the file in messages (fuzz/bias_state.cpp).
bias_state read_bias_state(std::istream &in, const std::string &name, std::uint64_t max_memory = 0);

// Merges the states of every shard of one run (each exactly once, in any order) into one
// statistics per configuration; throws input_error naming the file that does not belong or
// the shard that is missing. paths name the states in messages.
std::vector<bias::stats> merge_bias_states(const std::vector<bias_state> &parts,
                                           const std::vector<std::string> &paths);

} // namespace bf16emu::io
