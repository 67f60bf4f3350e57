// bf16emu bias / merge: statistical bias of accumulations, bias maps, adversarial search, and
// sharded sweeps. The numerics live in include/bf16emu/bias/ (docs/bias.md); this file parses
// options, runs, and prints text, JSON or CSV.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <bf16emu/bias.hpp>

#include "command.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/names.hpp"

namespace bf16emu::cli {
namespace {

namespace b = bf16emu::bias;
using io::json_writer;

// ---------------------------------------------------------------------------------------------
// Options.

struct bias_options {
  std::string scenario = "custom";
  std::string methods = "fp32_seq";
  std::string rounds = "nearest_even";
  std::string out = "bf16";
  std::uint32_t n = 64;
  double neg = 0.5, spread = 4, ones = 0, residual = 0;
  std::string weights = "uniform";
  std::string tc_preset = "sm80";
  int tc_L = 0, tc_F = 0;
  std::uint64_t trials = 20000, seed = 1, chunk = 1000;
  unsigned threads = 0;
  bool json = false, csv = false, quiet = false;
  std::string map_x, map_y, plot, map_value = "mean_ulp";
  std::string shard, state;
  bool search = false;
  std::uint64_t iters = 20000;
  unsigned restarts = 4;
  CLI::App *app = nullptr;
};

bool given(const bias_options &o, const char *name) { return o.app->count(name) > 0; }

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

b::method parse_method(const std::string &s) {
  for (int i = 0; i < b::method_count; ++i)
    if (s == b::to_string(static_cast<b::method>(i))) return static_cast<b::method>(i);
  throw bad_input("unknown --method '" + s + "' (fp32_seq, bf16_seq, pairwise, kahan, tc, all)");
}

b::weight_dist parse_weights(const std::string &s) {
  if (s == "uniform") return b::weight_dist::uniform;
  if (s == "softmax") return b::weight_dist::softmax;
  if (s == "tiny") return b::weight_dist::tiny;
  throw bad_input("unknown --weights '" + s + "' (uniform, softmax, tiny)");
}

// "name=lo:hi:steps" -> knob name and values.
struct axis {
  std::string knob;
  std::vector<double> values;
};

axis parse_axis(const std::string &s, const char *opt) {
  axis a;
  const auto eq = s.find('=');
  const auto parts = eq == std::string::npos ? std::vector<std::string>{} : split(s.substr(eq + 1), ':');
  if (eq == std::string::npos || parts.size() != 3)
    throw bad_input(std::string(opt) + " expects KNOB=LO:HI:STEPS, got '" + s + "'");
  a.knob = s.substr(0, eq);
  b::config probe;
  if (!b::set_knob(probe, a.knob, 0))
    throw bad_input(std::string(opt) + ": unknown knob '" + a.knob +
                    "' (n, neg, spread, ones, residual, tc_L, tc_F)");
  double lo, hi;
  long steps;
  try {
    lo = std::stod(parts[0]);
    hi = std::stod(parts[1]);
    steps = std::stol(parts[2]);
  } catch (const std::exception &) {
    throw bad_input(std::string(opt) + ": bad number in '" + s + "'");
  }
  if (steps < 1 || steps > 1000) throw bad_input(std::string(opt) + ": STEPS must be 1..1000");
  for (long i = 0; i < steps; ++i)
    a.values.push_back(steps == 1 ? lo : lo + (hi - lo) * double(i) / double(steps - 1));
  return a;
}

void check_knobs(const b::config &c) {
  const b::knobs &k = c.k;
  if (k.n < 1 || k.n > (1u << 24)) throw bad_input("--n must be between 1 and 16777216");
  auto unit = [](double v, const char *name) {
    if (!(v >= 0 && v <= 1)) throw bad_input(std::string("--") + name + " must be in [0, 1]");
  };
  unit(k.neg, "neg");
  unit(k.ones, "ones");
  unit(k.residual, "residual");
  if (!(k.spread >= 0 && k.spread <= 60)) throw bad_input("--spread must be in [0, 60] binades");
  if (c.acc.tc.L < 1 || c.acc.tc.L > tc::max_block) throw bad_input("--tc-L must be 1..32");
  if (c.acc.tc.F < 1 || c.acc.tc.F > 48) throw bad_input("--tc-F must be 1..48");
}

// The base configuration from the scenario and the explicit options.
b::config base_config(const bias_options &o) {
  b::config c;
  if (!b::apply_scenario(c, o.scenario))
    throw bad_input("unknown --scenario '" + o.scenario + "' (paper, symmetric, custom)");
  if (o.scenario == "custom" || given(o, "--n")) c.k.n = o.n;
  if (o.scenario == "custom" || given(o, "--neg")) c.k.neg = o.neg;
  if (o.scenario == "custom" || given(o, "--spread")) c.k.spread = o.spread;
  if (o.scenario == "custom" || given(o, "--ones")) c.k.ones = o.ones;
  if (o.scenario == "custom" || given(o, "--residual")) c.k.residual = o.residual;
  c.k.weights = parse_weights(o.weights);
  if (o.out == "bf16")
    c.acc.out = b::out_format::bf16;
  else if (o.out == "fp32")
    c.acc.out = b::out_format::fp32;
  else
    throw bad_input("unknown --out '" + o.out + "' (bf16, fp32)");
  if (!b::tc_preset(o.tc_preset.c_str(), c.acc.tc))
    throw bad_input("--tc-preset '" + o.tc_preset +
                    "' has no bf16 -> fp32 preset (sm80, sm86, sm89, sm90, ...)");
  if (given(o, "--tc-L")) {
    c.acc.tc.L = o.tc_L;
    c.acc.tc.instr_k = o.tc_L;
  }
  if (given(o, "--tc-F")) c.acc.tc.F = o.tc_F;
  return c;
}

std::vector<b::method> methods_of(const bias_options &o) {
  std::vector<b::method> ms;
  if (o.methods == "all") {
    for (int i = 0; i < b::method_count; ++i)
      ms.push_back(static_cast<b::method>(i));
  } else {
    for (const auto &m : split(o.methods, ','))
      ms.push_back(parse_method(m));
  }
  if (ms.empty()) throw bad_input("--method is empty");
  return ms;
}

std::vector<round_mode> rounds_of(const bias_options &o) {
  std::vector<round_mode> rs;
  if (o.rounds == "all") {
    for (int i = 0; i < round_mode_count; ++i)
      rs.push_back(static_cast<round_mode>(i));
  } else {
    for (const auto &r : split(o.rounds, ','))
      rs.push_back(io::rethrow_as<bad_input>([&] { return io::parse_mode(r); }));
  }
  if (rs.empty()) throw bad_input("--round is empty");
  return rs;
}

// ---------------------------------------------------------------------------------------------
// Reports: one row per configuration, from its serialized identity and its statistics (so
// `merge` prints exactly what an unsharded run prints).

struct row {
  std::map<std::string, std::string> cfg; // key=value of config::serialize()
  std::vector<std::pair<std::string, std::string>> cfg_order;
  b::summary s;
};

row make_row(const std::string &cfg_line, const b::stats &st) {
  row r;
  std::istringstream in(cfg_line);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    r.cfg[tok.substr(0, eq)] = tok.substr(eq + 1);
    r.cfg_order.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
  }
  r.s = b::summarize(st);
  return r;
}

std::string g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct run_header {
  std::uint64_t seed = 0, trials = 0, chunk = 0, shards = 1;
};

void print_json(std::ostream &out, const run_header &h, const std::vector<row> &rows) {
  json_writer j(out);
  j.begin_object();
  j.kv("tool", "bf16emu bias").kv("seed", h.seed).kv("trials", h.trials).kv("chunk", h.chunk);
  j.key("configs").begin_array();
  for (const row &r : rows) {
    const b::summary &s = r.s;
    j.begin_object();
    for (const auto &[k, v] : r.cfg_order) {
      char *end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end && *end == 0 && !v.empty())
        j.kv(k, d);
      else
        j.kv(k, v);
    }
    j.kv("trials", s.trials).kv("nonfinite", s.nonfinite);
    j.kv("mean_ulp", s.mean_ulp).kv("se_ulp", s.se_ulp);
    j.key("ci99_ulp").begin_array().value(s.ci99_lo_ulp).value(s.ci99_hi_ulp).end_array();
    j.kv("z", s.z).kv("significant", std::fabs(s.z) > b::z99);
    j.kv("mean_rel", s.mean_rel).kv("se_rel", s.se_rel);
    j.key("ci99_rel").begin_array().value(s.ci99_lo_rel).value(s.ci99_hi_rel).end_array();
    j.kv("mean_abs", s.mean_abs);
    j.kv("mean_away_ulp", s.mean_mag_ulp).kv("se_away_ulp", s.se_mag_ulp).kv("z_away", s.z_mag);
    j.kv("share_away", s.share_away).kv("share_toward", s.share_toward);
    j.kv("steps_inexact", s.steps_inexact).kv("share_steps_away", s.share_steps_away);
    j.key("worst").begin_object();
    j.kv("trial", s.worst_trial).kv("err_ulp", s.worst_ulp).kv("err", s.worst_err).kv("rel", s.worst_rel);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

const char *const csv_stats =
    "trials,nonfinite,mean_ulp,se_ulp,ci99_lo_ulp,ci99_hi_ulp,z,mean_rel,se_rel,ci99_lo_rel,ci99_hi_rel,"
    "mean_away_ulp,se_away_ulp,z_away,share_away,share_toward,share_steps_away,worst_trial,worst_ulp,worst_"
    "err,"
    "worst_rel";

void print_csv(std::ostream &out, const std::vector<row> &rows) {
  if (rows.empty()) return;
  for (const auto &kv : rows[0].cfg_order)
    out << kv.first << ',';
  out << csv_stats << '\n';
  for (const row &r : rows) {
    const b::summary &s = r.s;
    for (const auto &kv : r.cfg_order)
      out << kv.second << ',';
    out << s.trials << ',' << s.nonfinite << ',' << g(s.mean_ulp) << ',' << g(s.se_ulp) << ','
        << g(s.ci99_lo_ulp) << ',' << g(s.ci99_hi_ulp) << ',' << g(s.z) << ',' << g(s.mean_rel) << ','
        << g(s.se_rel) << ',' << g(s.ci99_lo_rel) << ',' << g(s.ci99_hi_rel) << ',' << g(s.mean_mag_ulp)
        << ',' << g(s.se_mag_ulp) << ',' << g(s.z_mag) << ',' << g(s.share_away) << ',' << g(s.share_toward)
        << ',' << g(s.share_steps_away) << ',' << s.worst_trial << ',' << g(s.worst_ulp) << ','
        << g(s.worst_err) << ',' << g(s.worst_rel) << '\n';
  }
}

void print_text(std::ostream &out, const run_header &h, const std::vector<row> &rows) {
  out << "bf16emu bias: seed " << h.seed << ", " << h.trials << " trials per configuration\n";
  for (const row &r : rows) {
    const b::summary &s = r.s;
    auto c = [&](const char *k) { return r.cfg.count(k) ? r.cfg.at(k) : std::string("?"); };
    out << "\n"
        << c("method") << " " << c("round") << " -> " << c("out") << "  (scenario " << c("scenario") << ", n "
        << c("n") << ", neg " << c("neg") << ", spread " << c("spread") << ", ones " << c("ones")
        << ", weights " << c("weights") << ", residual " << c("residual");
    if (c("method") == "tc") out << ", tc L " << c("tc_L") << " F " << c("tc_F");
    out << ")\n";
    out << "  mean signed error  " << g(s.mean_ulp) << " ulp  (SE " << g(s.se_ulp) << ", 99% CI ["
        << g(s.ci99_lo_ulp) << ", " << g(s.ci99_hi_ulp) << "], z " << g(s.z)
        << (std::fabs(s.z) > b::z99 ? ", significant" : "") << ")\n";
    out << "  relative           " << g(s.mean_rel) << "  (SE " << g(s.se_rel) << ", 99% CI ["
        << g(s.ci99_lo_rel) << ", " << g(s.ci99_hi_rel) << "])\n";
    out << "  away from zero     " << g(s.mean_mag_ulp) << " ulp  (SE " << g(s.se_mag_ulp) << ", z "
        << g(s.z_mag) << ")\n";
    out << "  results away/toward zero  " << g(s.share_away) << " / " << g(s.share_toward)
        << ";  step roundings away " << g(s.share_steps_away) << " of " << s.steps_inexact << "\n";
    out << "  worst              " << g(s.worst_ulp) << " ulp = " << g(s.worst_err) << " (rel "
        << g(s.worst_rel) << ") at trial " << s.worst_trial << "\n";
    if (s.nonfinite) out << "  nonfinite results  " << s.nonfinite << "\n";
  }
}

// ---------------------------------------------------------------------------------------------
// State files (shards): a header, one line per configuration, one line of statistics per
// configuration. Everything exact, so `merge` reproduces the unsharded run bit for bit.

constexpr const char *state_magic = "bf16emu-bias-state 1";

void write_state(std::ostream &out, const b::run_spec &s, const std::vector<b::stats> &st) {
  out << state_magic << "\n";
  out << "run seed=" << s.seed << " trials=" << s.trials << " chunk=" << s.chunk << " shards=" << s.shards
      << " shard=" << s.shard << " configs=" << s.configs.size() << "\n";
  for (std::size_t i = 0; i < s.configs.size(); ++i)
    out << "config " << i << " " << s.configs[i].serialize() << "\n";
  for (std::size_t i = 0; i < st.size(); ++i)
    out << "stats " << i << " " << st[i].serialize() << "\n";
}

struct state {
  std::string run_line; // the "run" line without shard=
  run_header h;
  std::uint64_t shard = 0;
  std::vector<std::string> configs;
  std::vector<b::stats> stats;
};

state read_state(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw bad_input("cannot open state file '" + path + "'");
  std::string line;
  if (!std::getline(in, line) || line != state_magic)
    throw bad_input(path + ": not a bf16emu bias state file (first line must be '" + state_magic + "')");
  state s;
  std::size_t ncfg = 0;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "run") {
      std::string tok, rest;
      std::map<std::string, std::string> kv;
      while (ls >> tok) {
        const auto eq = tok.find('=');
        if (eq == std::string::npos) throw bad_input(where + "bad token '" + tok + "'");
        kv[tok.substr(0, eq)] = tok.substr(eq + 1);
        if (tok.rfind("shard=", 0) != 0) rest += tok + " ";
      }
      try {
        s.h.seed = std::stoull(kv.at("seed"));
        s.h.trials = std::stoull(kv.at("trials"));
        s.h.chunk = std::stoull(kv.at("chunk"));
        s.h.shards = std::stoull(kv.at("shards"));
        s.shard = std::stoull(kv.at("shard"));
        ncfg = std::stoull(kv.at("configs"));
      } catch (const std::exception &) {
        throw bad_input(where + "bad run line");
      }
      if (ncfg > 1000000 || s.h.shards == 0 || s.shard >= s.h.shards) throw bad_input(where + "bad run line");
      s.run_line = rest;
      s.configs.assign(ncfg, "");
      s.stats.assign(ncfg, b::stats{});
    } else if (kind == "config" || kind == "stats") {
      std::size_t idx = 0;
      if (!(ls >> idx) || idx >= ncfg) throw bad_input(where + "bad configuration index");
      std::string rest;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (kind == "config") {
        s.configs[idx] = rest;
      } else {
        const std::string err = s.stats[idx].parse(rest);
        if (!err.empty()) throw bad_input(where + err);
      }
    } else {
      throw bad_input(where + "unknown line kind '" + kind + "'");
    }
  }
  if (s.run_line.empty()) throw bad_input(path + ": no run line");
  return s;
}

void report(const bias_options &o, const run_header &h, const std::vector<row> &rows) {
  if (o.json)
    print_json(std::cout, h, rows);
  else if (o.csv)
    print_csv(std::cout, rows);
  else
    print_text(std::cout, h, rows);
}

// ---------------------------------------------------------------------------------------------
// Bias map plot: CSV beside the PNG, rendered with gnuplot.

void plot_map(const bias_options &o, const axis &x, const axis &y, const std::vector<row> &rows) {
  std::string base = o.plot;
  if (base.size() > 4 && base.substr(base.size() - 4) == ".png") base.resize(base.size() - 4);
  const std::string csv = base + ".csv", png = base + ".png";
  {
    std::ofstream f(csv);
    if (!f) throw bad_input("cannot write '" + csv + "'");
    print_csv(f, rows);
  }
  // Column of the plotted statistic in the CSV.
  int col = 0, ix = 0, iy = 0, i = 1;
  for (const auto &kv : rows[0].cfg_order) {
    if (kv.first == x.knob) ix = i;
    if (kv.first == y.knob) iy = i;
    ++i;
  }
  for (const auto &name : split(csv_stats, ',')) {
    if (name == o.map_value) col = i;
    ++i;
  }
  if (!col) throw bad_input("--map-value must be one of: " + std::string(csv_stats));
  double vmax = 0;
  for (const row &r : rows) {
    const b::summary &s = r.s;
    const double v = o.map_value == "z"               ? s.z
                     : o.map_value == "mean_rel"      ? s.mean_rel
                     : o.map_value == "mean_away_ulp" ? s.mean_mag_ulp
                                                      : s.mean_ulp;
    vmax = std::fmax(vmax, std::fabs(v));
  }
  if (vmax == 0) vmax = 1;
  const row &r0 = rows[0];
  auto c = [&](const char *k) { return r0.cfg.count(k) ? r0.cfg.at(k) : std::string("?"); };
  const std::string title = "bf16emu bias: " + o.map_value + ", " + c("method") + " " + c("round") + " -> " +
                            c("out") + ", seed " + std::to_string(o.seed) + ", " + std::to_string(o.trials) +
                            " trials/cell";
  const std::string script = base + ".gp";
  {
    std::ofstream f(script);
    f << "set terminal pngcairo size 900,700 font 'Sans,10'\n"
      << "set termoption noenhanced\n"
      << "set output '" << png << "'\n"
      << "set datafile separator ','\n"
      << "set title '" << title << "'\n"
      << "set xlabel '" << x.knob << "'\nset ylabel '" << y.knob << "'\n"
      << "set cblabel '" << o.map_value << "'\n"
      << "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\n"
      << "set cbrange [" << -vmax << ":" << vmax << "]\n"
      << "set xrange [" << x.values.front() - (x.values.size() > 1 ? (x.values[1] - x.values[0]) / 2 : 0.5)
      << ":" << x.values.back() + (x.values.size() > 1 ? (x.values[1] - x.values[0]) / 2 : 0.5) << "]\n"
      << "set yrange [" << y.values.front() - (y.values.size() > 1 ? (y.values[1] - y.values[0]) / 2 : 0.5)
      << ":" << y.values.back() + (y.values.size() > 1 ? (y.values[1] - y.values[0]) / 2 : 0.5) << "]\n"
      << "plot '" << csv << "' skip 1 using " << ix << ":" << iy << ":" << col << " with image notitle\n";
  }
  const std::string cmd = "gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("gnuplot failed (is gnuplot installed?): " + cmd);
  std::remove(script.c_str());
  if (!o.quiet) std::fprintf(stderr, "bias: wrote %s and %s\n", png.c_str(), csv.c_str());
}

// ---------------------------------------------------------------------------------------------

void run_search(const bias_options &o, const b::config &base, b::method m, round_mode r) {
  b::search_spec s;
  s.acc = base.acc;
  s.acc.m = m;
  s.acc.mode = r;
  s.k = base.k;
  s.seed = o.seed;
  s.iters = o.iters;
  s.restarts = o.restarts;
  s.threads = o.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const b::search_result res = b::search(s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  b::config c = base;
  c.acc = s.acc;
  auto hex16 = [](std::uint32_t v, int w) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", w, v);
    return std::string(buf);
  };
  if (o.json) {
    json_writer j(std::cout);
    j.begin_object();
    j.kv("tool", "bf16emu bias --search").kv("seed", o.seed).kv("iters", o.iters).kv("restarts", o.restarts);
    j.kv("config", c.serialize());
    j.kv("evaluations", res.evaluations).kv("best_restart", res.restart);
    j.kv("err", res.outcome.err).kv("err_ulp", res.outcome.err_ulp).kv("rel", res.outcome.rel);
    j.kv("exact", res.outcome.exact).kv("sum_abs", res.sum_abs).kv("bound", res.bound).kv("ratio", res.ratio);
    j.kv("start_ratio", res.start_ratio);
    j.kv("start", hex16(res.best.start.bits, 8));
    j.key("v").begin_array();
    for (const auto &v : res.best.v)
      j.value(hex16(v.bits, 4));
    j.end_array();
    j.key("w").begin_array();
    for (const auto &w : res.best.w)
      j.value(hex16(w.bits, 4));
    j.end_array();
    j.end_object();
    return;
  }
  std::cout << "bf16emu bias --search: " << b::to_string(m) << " " << to_string(r) << " -> "
            << b::to_string(s.acc.out) << ", n " << s.k.n << ", seed " << o.seed << ", " << o.restarts
            << " restarts x " << o.iters << " iterations (" << res.evaluations << " evaluations, " << g(secs)
            << " s)\n";
  std::cout << "  worst |error| found   " << g(std::fabs(res.outcome.err)) << "  (" << g(res.outcome.err_ulp)
            << " ulp at the exact sum, rel " << g(res.outcome.rel) << ")\n";
  std::cout << "  classic bound         " << g(res.bound) << "  (n*u*sum|x|, sum|x| = " << g(res.sum_abs)
            << ")\n";
  std::cout << "  ratio error/bound     " << g(res.ratio) << "  (random start: " << g(res.start_ratio)
            << ")\n";
  std::cout << "  sequence: start " << hex16(res.best.start.bits, 8) << ", v*w:";
  for (std::size_t i = 0; i < res.best.v.size() && i < 16; ++i)
    std::cout << " " << hex16(res.best.v[i].bits, 4) << "*" << hex16(res.best.w[i].bits, 4);
  if (res.best.v.size() > 16) std::cout << " ... (--json for all)";
  std::cout << "\n";
}

void run_bias(bias_options &o) {
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  if (o.trials < 1 || o.trials > (std::uint64_t{1} << 40)) throw bad_input("--trials must be 1..2^40");
  if (o.chunk < 1) throw bad_input("--chunk must be positive");
  if (o.json && o.csv) throw bad_input("--json and --csv are exclusive");
  const b::config base = base_config(o);
  check_knobs(base);
  const auto ms = methods_of(o);
  const auto rs = rounds_of(o);

  if (o.search) {
    if (!o.map_x.empty() || !o.shard.empty()) throw bad_input("--search takes neither --map-x nor --shard");
    if (o.iters < 1 || o.restarts < 1) throw bad_input("--iters and --restarts must be positive");
    for (auto m : ms)
      for (auto r : rs)
        run_search(o, base, m, r);
    return;
  }

  b::run_spec spec;
  spec.seed = o.seed;
  spec.trials = o.trials;
  spec.chunk = o.chunk;
  spec.threads = o.threads;
  if (!o.shard.empty()) {
    const auto slash = o.shard.find('/');
    try {
      if (slash == std::string::npos) throw std::invalid_argument("no slash");
      std::size_t u1 = 0, u2 = 0;
      spec.shard = std::stoull(o.shard.substr(0, slash), &u1);
      spec.shards = std::stoull(o.shard.substr(slash + 1), &u2);
      if (u1 != slash || u2 != o.shard.size() - slash - 1) throw std::invalid_argument("junk");
    } catch (const std::exception &) {
      throw bad_input("--shard expects K/N (0 <= K < N), got '" + o.shard + "'");
    }
    if (spec.shards < 1 || spec.shard >= spec.shards) throw bad_input("--shard expects K/N with 0 <= K < N");
  }

  axis ax, ay;
  const bool map = !o.map_x.empty();
  if (map) {
    ax = parse_axis(o.map_x, "--map-x");
    ay = o.map_y.empty() ? axis{"", {0}} : parse_axis(o.map_y, "--map-y");
  } else if (!o.map_y.empty()) {
    throw bad_input("--map-y needs --map-x");
  }
  if (!o.plot.empty() && (!map || o.map_y.empty())) throw bad_input("--plot needs --map-x and --map-y");
  if (!o.plot.empty() && (ms.size() != 1 || rs.size() != 1))
    throw bad_input("--plot draws one method and one rounding mode");
  if (!o.plot.empty() && !o.shard.empty()) throw bad_input("--plot needs the whole run (merge shards first)");

  for (auto m : ms)
    for (auto r : rs) {
      b::config c = base;
      c.acc.m = m;
      c.acc.mode = r;
      if (!map) {
        spec.configs.push_back(c);
        continue;
      }
      for (double yv : ay.values)
        for (double xv : ax.values) {
          b::config cc = c;
          b::set_knob(cc, ax.knob, xv);
          if (!ay.knob.empty()) b::set_knob(cc, ay.knob, yv);
          check_knobs(cc);
          spec.configs.push_back(cc);
        }
    }

  // Progress on stderr for runs longer than about two seconds.
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = isatty(2);
  if (!o.quiet)
    spec.progress = [t0, tty, last = -1.0](std::uint64_t done, std::uint64_t total) mutable {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (secs < 2 || (done < total && secs - last < 2)) return;
      last = secs;
      std::fprintf(stderr, "%sbias: %llu/%llu units (%.0f%%), %.0f s%s", tty ? "\r" : "",
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                   total ? 100.0 * double(done) / double(total) : 100.0, secs,
                   tty && done < total ? "" : "\n");
    };
  std::vector<b::stats> st;
  try {
    st = b::run(spec);
  } catch (const std::invalid_argument &e) {
    throw bad_input(e.what());
  }

  if (!o.state.empty()) {
    std::ofstream f(o.state);
    if (!f) throw bad_input("cannot write --state file '" + o.state + "'");
    write_state(f, spec, st);
    if (!o.quiet)
      std::fprintf(stderr, "bias: wrote state %s (shard %llu/%llu)\n", o.state.c_str(),
                   static_cast<unsigned long long>(spec.shard), static_cast<unsigned long long>(spec.shards));
  }
  if (spec.shards > 1) {
    if (o.state.empty()) write_state(std::cout, spec, st);
    return; // partial statistics: report after `bf16emu merge`
  }
  std::vector<row> rows;
  for (std::size_t i = 0; i < st.size(); ++i)
    rows.push_back(make_row(spec.configs[i].serialize(), st[i]));
  if (!o.plot.empty()) plot_map(o, ax, ay, rows);
  report(o, run_header{spec.seed, spec.trials, spec.chunk, spec.shards}, rows);
}

void register_bias(CLI::App &app) {
  auto o = std::make_shared<bias_options>();
  CLI::App *sub = app.add_subcommand(
      "bias", "Statistical bias of accumulations: many seeded trials, signed error vs the exact sum");
  sub->footer(
      "Examples:\n"
      "  bf16emu bias --scenario paper --json\n"
      "  bf16emu bias --scenario paper --round stochastic\n"
      "  bf16emu bias --scenario paper --map-x ones=0:1:11 --map-y neg=0:1:11 --plot map.png\n"
      "  bf16emu bias --scenario paper --shard 0/4 --state s0.state   (then: bf16emu merge s*.state)\n"
      "Details and numbers: docs/bias.md");
  o->app = sub;
  sub->add_option("--scenario", o->scenario,
                  "paper | symmetric | custom (default): knob presets (docs/bias.md)");
  sub->add_option("--method", o->methods,
                  "fp32_seq (default), bf16_seq, pairwise, kahan, tc; comma list or all");
  sub->add_option("--round", o->rounds, "rounding modes (comma list or all): " + io::mode_names());
  sub->add_option("--out", o->out, "format of the final result: bf16 (default; one final rounding) or fp32");
  sub->add_option("--n", o->n, "addends (products v*w) per accumulation");
  sub->add_option("--neg", o->neg, "probability that a value is negative (sign skew; 0.5 = symmetric)");
  sub->add_option("--spread", o->spread, "magnitude spread of the values in binades");
  sub->add_option("--ones", o->ones, "share of weights exactly 1 (the P=1 case)");
  sub->add_option("--weights", o->weights, "other weights: uniform (default), softmax, tiny");
  sub->add_option("--residual", o->residual,
                  "start value's low FP32 bits, up to this many BF16 ulps (0: start at 0)");
  sub->add_option("--tc-preset", o->tc_preset,
                  "tensor-core preset for --method tc (bf16 -> fp32; default sm80)");
  sub->add_option("--tc-L", o->tc_L, "tensor-core block size L (overrides the preset)");
  sub->add_option("--tc-F", o->tc_F, "tensor-core alignment bits F (overrides the preset)");
  sub->add_option("--trials", o->trials, "accumulations per configuration (default 20000)");
  sub->add_option("--seed", o->seed, "seed (default 1): same seed, same result on any thread count");
  sub->add_option("--threads", o->threads, "worker threads (default: all cores)");
  sub->add_option("--chunk", o->chunk,
                  "trials per work unit (default 1000; part of a sharded run's identity)");
  sub->add_flag("--json", o->json, "JSON output");
  sub->add_flag("--csv", o->csv, "CSV output");
  sub->add_flag("--quiet", o->quiet, "no progress on stderr");
  sub->add_option("--map-x", o->map_x,
                  "bias map axis KNOB=LO:HI:STEPS (knobs: n neg spread ones residual tc_L tc_F)");
  sub->add_option("--map-y", o->map_y, "second bias map axis KNOB=LO:HI:STEPS");
  sub->add_option("--map-value", o->map_value,
                  "statistic drawn by --plot: mean_ulp (default), z, mean_rel, mean_away_ulp");
  sub->add_option("--plot", o->plot,
                  "write the bias map as PNG (gnuplot) with its CSV beside it (FILE.png, FILE.csv)");
  sub->add_option("--shard", o->shard,
                  "run only shard K of N (K/N); combine the state files with bf16emu merge");
  sub->add_option("--state", o->state,
                  "write the exact statistics to FILE (a shard's output; stdout if sharded)");
  sub->add_flag("--search", o->search, "adversarial search for addends maximising |error| / classic bound");
  sub->add_option("--iters", o->iters, "search iterations per restart (default 20000)");
  sub->add_option("--restarts", o->restarts, "search restarts (default 4)");
  sub->callback([o] { run_bias(*o); });
}

// ---------------------------------------------------------------------------------------------

struct merge_options {
  std::vector<std::string> files;
  bool json = false, csv = false;
};

void run_merge(const merge_options &mo) {
  if (mo.json && mo.csv) throw bad_input("--json and --csv are exclusive");
  std::vector<state> parts;
  for (const auto &f : mo.files)
    parts.push_back(read_state(f));
  if (parts.empty()) throw bad_input("merge needs state files");
  const state &first = parts[0];
  std::vector<int> seen(first.h.shards, 0);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const state &p = parts[i];
    if (p.run_line != first.run_line || p.configs != first.configs)
      throw bad_input(mo.files[i] + ": a different run than " + mo.files[0] +
                      " (seed, trials, chunk, shards or "
                      "configurations differ)");
    if (seen[p.shard]++) throw bad_input(mo.files[i] + ": shard " + std::to_string(p.shard) + " given twice");
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (!seen[k])
      throw bad_input("shard " + std::to_string(k) + "/" + std::to_string(seen.size()) + " is missing");
  std::vector<b::stats> total(first.configs.size());
  for (const state &p : parts)
    for (std::size_t i = 0; i < total.size(); ++i)
      total[i].merge(p.stats[i]);
  std::vector<row> rows;
  for (std::size_t i = 0; i < total.size(); ++i)
    rows.push_back(make_row(first.configs[i], total[i]));
  bias_options o;
  o.json = mo.json;
  o.csv = mo.csv;
  run_header h = first.h;
  h.shards = 1;
  report(o, h, rows);
}

void register_merge(CLI::App &app) {
  auto o = std::make_shared<merge_options>();
  CLI::App *sub =
      app.add_subcommand("merge", "Combine the state files of a sharded bf16emu bias run (exactly)");
  sub->footer("Example (a sweep in 4 shards, e.g. a Slurm array or GNU parallel):\n"
              "  parallel bf16emu bias --scenario paper --shard {}/4 --state s{}.state ::: 0 1 2 3\n"
              "  bf16emu merge s0.state s1.state s2.state s3.state --json\n"
              "Details: docs/bias.md");
  sub->add_option("files", o->files, "state files written by bf16emu bias --shard K/N --state FILE")
      ->required();
  sub->add_flag("--json", o->json, "JSON output");
  sub->add_flag("--csv", o->csv, "CSV output");
  sub->callback([o] { run_merge(*o); });
}

} // namespace

BF16EMU_COMMAND(50, register_bias);
BF16EMU_COMMAND(51, register_merge);

} // namespace bf16emu::cli
