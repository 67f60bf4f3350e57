// bf16emu io: the bias state file. See bias_state.hpp.
#include "io/bias_state.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/memory.hpp"
#include "io/names.hpp"
#include "io/number.hpp"

namespace bf16emu::io {

std::string superacc_text(const bias::superacc &a) {
  std::string s;
  char buf[48];
  for (int i = 0; i < bias::superacc::limbs; ++i) {
    if (!a.w[i]) continue;
    std::snprintf(buf, sizeof buf, "%s%d:%llx", s.empty() ? "" : ",", i,
                  static_cast<unsigned long long>(a.w[i]));
    s += buf;
  }
  return s.empty() ? "0" : s;
}

bool parse_superacc(const std::string &s, bias::superacc &a) {
  a.w.fill(0);
  if (s == "0") return true;
  std::size_t p = 0;
  while (p < s.size()) {
    std::size_t colon = s.find(':', p);
    if (colon == std::string::npos) return false;
    std::size_t end = s.find(',', colon);
    if (end == std::string::npos) end = s.size();
    const std::string idx = s.substr(p, colon - p), val = s.substr(colon + 1, end - colon - 1);
    if (idx.empty() || val.empty() || idx.size() > 4 || val.size() > 16) return false;
    for (char c : idx)
      if (c < '0' || c > '9') return false;
    for (char c : val)
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    const int i = std::stoi(idx);
    if (i >= bias::superacc::limbs) return false;
    a.w[i] = std::stoull(val, nullptr, 16);
    p = end + 1;
  }
  return true;
}

std::string bias_config_text(const bias::config &c) {
  std::ostringstream o;
  const auto hf = bias::shortest;
  o << "scenario=" << c.scenario << " method=" << to_string(c.acc.m) << " round=" << to_string(c.acc.mode)
    << " out=" << to_string(c.acc.out) << " tc_L=" << c.acc.tc.L << " tc_F=" << c.acc.tc.F
    << " tc_k=" << c.acc.tc.instr_k << " n=" << c.k.n << " neg=" << hf(c.k.neg)
    << " spread=" << hf(c.k.spread) << " ones=" << hf(c.k.ones) << " weights=" << to_string(c.k.weights)
    << " residual=" << hf(c.k.residual);
  return o.str();
}

std::string bias_stats_text(const bias::stats &st) {
  std::ostringstream o;
  char b[64];
  auto hf = [&](double d) {
    std::snprintf(b, sizeof b, "%a", d);
    return std::string(b);
  };
  o << "trials=" << st.trials << " nonfinite=" << st.nonfinite << " rel_trials=" << st.rel_trials
    << " s_ulp=" << superacc_text(st.s_ulp) << " s_ulp2=" << superacc_text(st.s_ulp2)
    << " s_rel=" << superacc_text(st.s_rel) << " s_rel2=" << superacc_text(st.s_rel2)
    << " s_abs=" << superacc_text(st.s_abs) << " s_mag=" << superacc_text(st.s_mag) << " away=" << st.away
    << " toward=" << st.toward << " steps_inexact=" << st.steps_inexact << " steps_away=" << st.steps_away
    << " has_worst=" << (st.has_worst ? 1 : 0) << " worst_trial=" << st.worst_trial
    << " worst_ulp=" << hf(st.worst_ulp) << " worst_err=" << hf(st.worst_err)
    << " worst_rel=" << hf(st.worst_rel);
  return o.str();
}

std::string parse_bias_stats(const std::string &line, bias::stats &st) {
  st = bias::stats{};
  std::istringstream in(line);
  std::string tok;
  std::map<std::string, std::string> kv;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) return "token without '=': " + tok;
    if (!kv.emplace(tok.substr(0, eq), tok.substr(eq + 1)).second) return "duplicate " + tok.substr(0, eq);
  }
  try {
    auto u = [&](const char *k, std::uint64_t &v) { // decimal digits only: no sign, no wrap
      if (!kv.count(k)) throw std::invalid_argument(std::string("missing ") + k);
      const std::string &t = kv[k];
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v, 10);
      if (t.empty() || r.ec != std::errc{} || r.ptr != t.data() + t.size())
        throw std::invalid_argument(std::string("bad ") + k);
    };
    auto s = [&](const char *k, bias::superacc &v) {
      if (!kv.count(k) || !parse_superacc(kv[k], v)) throw std::invalid_argument(std::string("bad ") + k);
    };
    auto d = [&](const char *k, double &v) {
      if (!kv.count(k)) throw std::invalid_argument(std::string("missing ") + k);
      std::size_t used = 0;
      try {
        v = std::stod(kv[k], &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != kv[k].size()) throw std::invalid_argument(std::string("bad ") + k);
    };
    std::uint64_t hw = 0;
    u("trials", st.trials);
    u("nonfinite", st.nonfinite);
    u("rel_trials", st.rel_trials);
    s("s_ulp", st.s_ulp);
    s("s_ulp2", st.s_ulp2);
    s("s_rel", st.s_rel);
    s("s_rel2", st.s_rel2);
    s("s_abs", st.s_abs);
    s("s_mag", st.s_mag);
    u("away", st.away);
    u("toward", st.toward);
    u("steps_inexact", st.steps_inexact);
    u("steps_away", st.steps_away);
    u("has_worst", hw);
    st.has_worst = hw != 0;
    u("worst_trial", st.worst_trial);
    d("worst_ulp", st.worst_ulp);
    d("worst_err", st.worst_err);
    d("worst_rel", st.worst_rel);
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

namespace {

// FNV-1a, 64 bits, over the text of the lines before the checksum line (each with its '\n').
std::uint64_t fnv1a64(std::uint64_t h, const std::string &text) {
  for (unsigned char c : text)
    h = (h ^ c) * 0x100000001b3ULL;
  return (h ^ '\n') * 0x100000001b3ULL;
}
constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;

std::string checksum_line(std::uint64_t h) {
  char b[48];
  std::snprintf(b, sizeof b, "checksum fnv1a64=%016llx", static_cast<unsigned long long>(h));
  return b;
}

} // namespace

void write_bias_state(std::ostream &stream, const bias::run_spec &s, const std::vector<bias::stats> &st) {
  std::ostringstream out;
  out << bias_state_magic << "\n";
  out << "run seed=" << s.seed << " trials=" << s.trials << " chunk=" << s.chunk << " shards=" << s.shards
      << " shard=" << s.shard << " configs=" << s.configs.size() << "\n";
  for (std::size_t i = 0; i < s.configs.size(); ++i)
    out << "config " << i << " " << bias_config_text(s.configs[i]) << "\n";
  for (std::size_t i = 0; i < st.size(); ++i)
    out << "stats " << i << " " << bias_stats_text(st[i]) << "\n";
  const std::string text = out.str();
  std::uint64_t h = fnv_offset;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    h = fnv1a64(h, text.substr(at, nl - at));
    at = nl + 1;
  }
  stream << text << checksum_line(h) << "\n";
}

std::uint64_t shard_config_trials(std::uint64_t trials, std::uint64_t chunk, std::uint64_t shards,
                                  std::uint64_t shard, std::uint64_t config) {
  const std::uint64_t cpc = trials / chunk + (trials % chunk != 0); // units per configuration
  // shards <= 2^32, so the product of the two residues fits 64 bits
  const std::uint64_t first_unit_mod = (config % shards) * (cpc % shards) % shards;
  const std::uint64_t r = (shard + shards - first_unit_mod) % shards; // first j of this shard
  if (r >= cpc) return 0;
  const std::uint64_t count = (cpc - 1 - r) / shards + 1;
  const std::uint64_t last = trials - (cpc - 1) * chunk; // the last unit may be short
  const bool has_last = (cpc - 1 - r) % shards == 0;
  return count * chunk - (has_last ? chunk - last : 0);
}

std::string check_bias_stats(const bias::stats &st, std::uint64_t expected) {
  const auto n = [](std::uint64_t v) { return std::to_string(v); };
  if (st.nonfinite > expected || st.trials != expected - st.nonfinite)
    return "trials=" + n(st.trials) + " + nonfinite=" + n(st.nonfinite) + " must be " + n(expected) +
           ", the trials this shard runs for this configuration";
  if (st.rel_trials > st.trials) return "rel_trials=" + n(st.rel_trials) + " exceeds trials=" + n(st.trials);
  if (st.away > st.trials || st.toward > st.trials - st.away)
    return "away=" + n(st.away) + " + toward=" + n(st.toward) + " exceeds trials=" + n(st.trials);
  if (st.steps_away > st.steps_inexact)
    return "steps_away=" + n(st.steps_away) + " exceeds steps_inexact=" + n(st.steps_inexact);
  if (st.has_worst != (st.trials > 0)) return "has_worst must be 1 exactly when trials > 0";
  if (!std::isfinite(st.worst_ulp) || !std::isfinite(st.worst_err) || !std::isfinite(st.worst_rel))
    return "a worst_* value is not finite";
  if (!st.has_worst && (st.worst_ulp != 0 || st.worst_err != 0 || st.worst_rel != 0 || st.worst_trial != 0))
    return "worst_* values without a worst trial";
  // worst_ulp is the largest |err/ulp| of the trials: it bounds every term of s_ulp and s_mag,
  // and its square (rounded, as each term's square is) every term of s_ulp2.
  const double t = double(st.trials), w = std::fabs(st.worst_ulp), slack = 1 + 0x1p-40;
  const struct {
    const char *name;
    const bias::superacc &sum;
    double lo, hi;
  } sums[] = {
      {"s_ulp", st.s_ulp, -t * w * slack, t * w * slack}, {"s_mag", st.s_mag, -t * w * slack, t * w * slack},
      {"s_ulp2", st.s_ulp2, 0, t * (w * w) * slack},      {"s_rel2", st.s_rel2, 0, HUGE_VAL},
      {"s_rel", st.s_rel, -HUGE_VAL, HUGE_VAL},           {"s_abs", st.s_abs, -HUGE_VAL, HUGE_VAL}};
  for (const auto &x : sums) {
    const double v = x.sum.to_double();
    if (!std::isfinite(v)) return std::string(x.name) + " is not finite";
    if (v < x.lo || v > x.hi)
      return std::string(x.name) + " is outside the bounds that trials and worst_ulp allow";
  }
  return {};
}

std::string check_bias_config(const std::string &text) {
  static const char *const keys[] = {"scenario", "method", "round",  "out",  "tc_L",    "tc_F",    "tc_k",
                                     "n",        "neg",    "spread", "ones", "weights", "residual"};
  std::istringstream in(text);
  std::string tok;
  std::size_t k = 0;
  for (; in >> tok; ++k) {
    const auto eq = tok.find('=');
    if (k >= std::size(keys) || eq == std::string::npos || tok.compare(0, eq, keys[k]) != 0)
      return "configuration: expected " + std::string(k < std::size(keys) ? keys[k] : "nothing more") +
             "=..., got '" + shorten(tok) + "'";
    const std::string key = keys[k], v = tok.substr(eq + 1);
    bool ok = !v.empty();
    if (key == "scenario") {
      ok = ok && v.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
    } else if (key == "method") {
      ok = false;
      for (int m = 0; m < bias::method_count; ++m)
        ok = ok || v == to_string(static_cast<bias::method>(m));
    } else if (key == "round") {
      try {
        (void)parse_mode(v);
      } catch (const std::exception &) {
        ok = false;
      }
    } else if (key == "out") {
      ok = v == "bf16" || v == "fp32";
    } else if (key == "weights") {
      ok = v == "uniform" || v == "softmax" || v == "tiny";
    } else if (key[0] == 't' || key == "n") { // tc_L, tc_F, tc_k, n: small integers
      ok = ok && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
    } else { // neg, spread, ones, residual: finite numbers
      std::size_t used = 0;
      try {
        ok = ok && std::isfinite(std::stod(v, &used)) && used == v.size();
      } catch (const std::exception &) {
        ok = false;
      }
    }
    if (!ok) return "configuration: bad " + key + "=" + shorten(v);
  }
  if (k != std::size(keys)) return "configuration: " + std::string(keys[k]) + "= is missing";
  return {};
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
  return read_bias_state(in, path, max_memory);
}

bias_state read_bias_state(std::istream &in, const std::string &name, std::uint64_t max_memory) {
  std::string line;
  std::uint64_t lineno = 1;
  if (!read_line(in, line, max_state_line, name, lineno) || line != bias_state_magic) {
    if (line == "bf16emu-bias-state 1")
      throw input_error(name + ": a version 1 state file (no checksum); rerun its shard with this bf16emu");
    throw input_error(name + ": not a bf16emu bias state file (first line must be '" + bias_state_magic +
                      "')");
  }
  std::uint64_t hash = fnv1a64(fnv_offset, line);
  bias_state s;
  bool have_run = false, have_checksum = false;
  std::uint64_t ncfg = 0;
  while (read_line(in, line, max_state_line, name, lineno + 1)) {
    ++lineno;
    if (line.empty()) continue;
    const std::string where = name + ":" + std::to_string(lineno) + ": ";
    if (have_checksum) throw input_error(where + "a line after the checksum line");
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "checksum") {
      if (line != checksum_line(hash))
        throw input_error(where + "checksum mismatch (the file was changed or damaged; expected '" +
                          checksum_line(hash) + "')");
      have_checksum = true;
      continue;
    }
    hash = fnv1a64(hash, line);
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
        if (const std::string err = check_bias_config(rest); !err.empty()) throw input_error(where + err);
        s.configs.push_back(rest);
      } else {
        s.stats.emplace_back();
        std::string err = parse_bias_stats(rest, s.stats.back());
        if (err.empty())
          err = check_bias_stats(s.stats.back(),
                                 shard_config_trials(s.trials, s.chunk, s.shards, s.shard, expected));
        if (err.empty() && s.stats.back().worst_trial >= s.trials)
          err = "worst_trial=" + std::to_string(s.stats.back().worst_trial) +
                " is not below trials=" + std::to_string(s.trials);
        if (!err.empty()) throw input_error(where + shorten(err, 200));
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
  if (!have_checksum)
    throw input_error(name + ":" + std::to_string(lineno) + ": no checksum line at the end");
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
