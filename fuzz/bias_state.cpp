// Parser harness: bias state files (src/io/bias_state.cpp), as `bf16emu merge` reads them. Any
// input either reads or throws io::input_error; nothing else may escape, crash or leak. A state
// that reads is self-consistent (its statistics pass the cross-checks) and writes back to a file
// that reads again to the same configurations, statistics and run line.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "io/bias_state.hpp"
#include "io/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace io = bf16emu::io;
  std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
  io::bias_state s;
  try {
    s = io::read_bias_state(in, "fuzz.state", std::uint64_t{1} << 30);
  } catch (const io::input_error &) {
    return 0;
  }
  if (s.configs.size() != s.stats.size()) std::abort();
  for (std::size_t i = 0; i < s.stats.size(); ++i)
    if (!io::check_bias_stats(s.stats[i], io::shard_config_trials(s.trials, s.chunk, s.shards, s.shard, i))
             .empty())
      std::abort();
  // Merging one shard of one: the merge takes it when shards == 1 and refuses it otherwise.
  try {
    (void)io::merge_bias_states({s}, {"fuzz.state"});
    if (s.shards != 1) std::abort();
  } catch (const io::input_error &) {
    if (s.shards == 1) std::abort();
  }
  // The text forms write back and read again to the same fields.
  for (std::size_t i = 0; i < s.stats.size(); ++i) {
    bf16emu::bias::stats back;
    if (!io::parse_bias_stats(io::bias_stats_text(s.stats[i]), back).empty()) std::abort();
    if (io::bias_stats_text(back) != io::bias_stats_text(s.stats[i])) std::abort();
  }
  return 0;
}
