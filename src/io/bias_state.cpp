// bf16emu io: the bias state file. See bias_state.hpp.
#include "io/bias_state.hpp"

#include <set>
#include <sstream>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/memory.hpp"
#include "io/number.hpp"

namespace bf16emu::io {

void write_bias_state(std::ostream &out, const bias::run_spec &s, const std::vector<bias::stats> &st) {
  out << bias_state_magic << "\n";
  out << "run seed=" << s.seed << " trials=" << s.trials << " chunk=" << s.chunk << " shards=" << s.shards
      << " shard=" << s.shard << " configs=" << s.configs.size() << "\n";
  for (std::size_t i = 0; i < s.configs.size(); ++i)
    out << "config " << i << " " << s.configs[i].serialize() << "\n";
  for (std::size_t i = 0; i < st.size(); ++i)
    out << "stats " << i << " " << st[i].serialize() << "\n";
}

namespace {

// An unsigned decimal field in [min, max]; a sign, hex or junk is an error naming the field.
std::uint64_t field(const std::string &where, const std::string &key, const std::string &text,
                    std::uint64_t min, std::uint64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  if (!text.empty() && text[0] == '-')
    throw input_error(where + key + "=" + shorten(text) + " is negative; expected " + range);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  std::uint64_t v = 0;
  bool ok = digits;
  if (ok) try {
      v = parse_uint(text, max, key.c_str());
    } catch (const input_error &) {
      ok = false;
    }
  if (!ok || v < min) throw input_error(where + "bad " + key + "=" + shorten(text) + "; expected " + range);
  return v;
}

} // namespace

bias_state read_bias_state(const std::string &path, std::uint64_t max_memory) {
  std::ifstream in = open_input(path, "state file");
  const std::string &name = path;
  std::string line;
  std::uint64_t lineno = 1;
  if (!std::getline(in, line) || line != bias_state_magic)
    throw input_error(name + ": not a bf16emu bias state file (first line must be '" + bias_state_magic +
                      "')");
  bias_state s;
  bool have_run = false;
  std::uint64_t ncfg = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const std::string where = name + ":" + std::to_string(lineno) + ": ";
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "run") {
      if (have_run) throw input_error(where + "a second run line");
      std::set<std::string> seen;
      std::string tok;
      while (ls >> tok) {
        const auto eq = tok.find('=');
        if (eq == std::string::npos) throw input_error(where + "bad token '" + shorten(tok) + "'");
        const std::string key = tok.substr(0, eq), val = tok.substr(eq + 1);
        if (!seen.insert(key).second) throw input_error(where + "repeated key " + shorten(key));
        if (key == "seed")
          s.seed = field(where, key, val, 0, UINT64_MAX);
        else if (key == "trials")
          s.trials = field(where, key, val, 1, bias_max_trials);
        else if (key == "chunk")
          s.chunk = field(where, key, val, 1, bias_max_chunk);
        else if (key == "shards")
          s.shards = field(where, key, val, 1, bias_max_shards);
        else if (key == "shard")
          s.shard = field(where, key, val, 0, bias_max_shards - 1);
        else if (key == "configs")
          ncfg = field(where, key, val, 1, bias_max_configs);
        else
          throw input_error(where + "unknown key '" + shorten(key) + "'");
        if (key != "shard") s.run_line += tok + " ";
      }
      for (const char *key : {"seed", "trials", "chunk", "shards", "shard", "configs"})
        if (!seen.count(key)) throw input_error(where + "run line without " + key + "=");
      if (s.shard >= s.shards)
        throw input_error(where + "shard=" + std::to_string(s.shard) +
                          " is not below shards=" + std::to_string(s.shards));
      memory_need need;
      need.add({ncfg, sizeof(bias::stats) + sizeof(std::string) + 256}, "statistics");
      check_memory(need, max_memory, "merge of " + name);
      have_run = true;
    } else if (kind == "config" || kind == "stats") {
      if (!have_run) throw input_error(where + kind + " line before the run line");
      const bool is_config = kind == "config";
      const std::uint64_t expected = is_config ? s.configs.size() : s.stats.size();
      std::string idx;
      ls >> idx;
      if (expected >= ncfg || idx != std::to_string(expected))
        throw input_error(where + "expected " +
                          (expected >= ncfg
                               ? "no more " + kind + " lines (configs=" + std::to_string(ncfg) + ")"
                               : kind + " " + std::to_string(expected)) +
                          ", got '" + shorten(line, 40) + "'");
      std::string rest;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (is_config) {
        s.configs.push_back(rest);
      } else {
        s.stats.emplace_back();
        const std::string err = s.stats.back().parse(rest);
        if (!err.empty()) throw input_error(where + shorten(err));
      }
    } else {
      throw input_error(where + "unknown line kind '" + shorten(kind) + "'");
    }
  }
  if (!have_run) throw input_error(name + ": no run line");
  if (s.configs.size() != ncfg || s.stats.size() != ncfg)
    throw input_error(name + ":" + std::to_string(lineno) +
                      ": truncated: " + std::to_string(s.configs.size()) + " config and " +
                      std::to_string(s.stats.size()) + " stats lines of configs=" + std::to_string(ncfg));
  return s;
}

std::vector<bias::stats> merge_bias_states(const std::vector<bias_state> &parts,
                                           const std::vector<std::string> &paths) {
  if (parts.empty()) throw input_error("merge needs state files");
  const bias_state &first = parts[0];
  std::set<std::uint64_t> seen;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bias_state &p = parts[i];
    if (p.run_line != first.run_line || p.configs != first.configs)
      throw input_error(paths[i] + ": a different run than " + paths[0] +
                        " (seed, trials, chunk, shards or configurations differ)");
    if (!seen.insert(p.shard).second)
      throw input_error(paths[i] + ": shard " + std::to_string(p.shard) + " given twice");
  }
  // Every shard is below shards and none repeats, so the first gap is at most parts.size().
  for (std::uint64_t k = 0; k < first.shards; ++k)
    if (!seen.count(k))
      throw input_error("shard " + std::to_string(k) + "/" + std::to_string(first.shards) + " is missing");
  std::vector<bias::stats> total(first.configs.size());
  for (const bias_state &p : parts)
    for (std::size_t i = 0; i < total.size(); ++i)
      total[i].merge(p.stats[i]);
  return total;
}

} // namespace bf16emu::io
