// bf16emu bias / merge: statistical bias of accumulations, bias maps, adversarial search, and
// sharded sweeps. The numerics live in include/bf16emu/bias/ (docs/bias.md), the state-file
// format in io/bias_state, the reports and the map plot in io/bias_report; this file parses
// options, runs, and prints.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <bf16emu/bias.hpp>

#include "command.hpp"
#include "io/bias_report.hpp"
#include "io/bias_state.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/memory.hpp"
#include "io/names.hpp"
#include "mpi/distribute.hpp"
#include "options.hpp"

namespace bf16emu::cli {
namespace {

namespace b = bf16emu::bias;

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
  std::uint64_t max_memory = 0;
  CLI::App *app = nullptr;
};

bool given(const bias_options &o, const char *name) { return o.app->count(name) > 0; }

io::report_format format_of(bool json, bool csv) {
  if (json && csv) throw bad_input("--json and --csv are exclusive");
  return json ? io::report_format::json : csv ? io::report_format::csv : io::report_format::text;
}

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
  throw bad_input("unknown --method '" + io::shorten(s) + "' (fp32_seq, bf16_seq, pairwise, kahan, tc, all)");
}

b::weight_dist parse_weights(const std::string &s) {
  if (s == "uniform") return b::weight_dist::uniform;
  if (s == "softmax") return b::weight_dist::softmax;
  if (s == "tiny") return b::weight_dist::tiny;
  throw bad_input("unknown --weights '" + io::shorten(s) + "' (uniform, softmax, tiny)");
}

// A whole token as a double (no junk after it); bad_input naming opt otherwise.
double parse_double(const std::string &t, const std::string &opt, const std::string &whole) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != t.size()) throw bad_input(opt + ": bad number in '" + io::shorten(whole) + "'");
  return v;
}

// "KNOB=LO:HI:STEPS" -> the axis; every value range-checked as a double (bias::make_axis).
b::axis parse_axis(const std::string &s, const char *opt) {
  const auto eq = s.find('=');
  const auto parts = eq == std::string::npos ? std::vector<std::string>{} : split(s.substr(eq + 1), ':');
  if (eq == std::string::npos || parts.size() != 3)
    throw bad_input(std::string(opt) + " expects KNOB=LO:HI:STEPS, got '" + io::shorten(s) + "'");
  const std::string knob = s.substr(0, eq);
  if (!b::find_knob(knob))
    throw bad_input(std::string(opt) + ": unknown knob '" + io::shorten(knob) +
                    "' (n, neg, spread, ones, residual, tc_L, tc_F)");
  const double lo = parse_double(parts[0], opt, s), hi = parse_double(parts[1], opt, s);
  const std::uint64_t steps = parse_count(parts[2], std::string(opt) + " STEPS", 1, b::max_axis_steps);
  try {
    return b::make_axis(knob, lo, hi, steps);
  } catch (const std::invalid_argument &e) {
    throw bad_input(std::string(opt) + ": " + e.what());
  }
}

// Every knob of c in its range; the message names the option that sets it.
void check_knobs(const b::config &c) {
  if (const b::knob_range *r = b::bad_knob(c)) {
    std::string opt = std::string("--") + r->name;
    if (opt == "--tc_L" || opt == "--tc_F") opt[4] = '-';
    throw bad_input(opt + ": " + b::out_of_range(*r, b::knob_value(c, *r)));
  }
}

// The base configuration from the scenario and the explicit options.
b::config base_config(const bias_options &o) {
  b::config c;
  if (!b::apply_scenario(c, o.scenario))
    throw bad_input("unknown --scenario '" + io::shorten(o.scenario) + "' (paper, symmetric, custom)");
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
    throw bad_input("unknown --out '" + io::shorten(o.out) + "' (bf16, fp32)");
  if (!b::tc_preset(o.tc_preset.c_str(), c.acc.tc))
    throw bad_input("--tc-preset '" + io::shorten(o.tc_preset) +
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
  b::config c = base;
  c.acc = s.acc;
  io::search_report rep;
  rep.seed = o.seed;
  rep.iters = o.iters;
  rep.restarts = o.restarts;
  rep.config = io::bias_config_text(c);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  io::print_search(std::cout, o.json, rep, s, res);
}

// --shard K/N.
void parse_shard(const std::string &text, b::run_spec &spec) {
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw bad_input("--shard expects K/N (0 <= K < N), got '" + io::shorten(text) + "'");
  spec.shards = parse_count(text.substr(slash + 1), "--shard N", 1, io::bias_max_shards);
  spec.shard = parse_count(text.substr(0, slash), "--shard K", 0, spec.shards - 1);
}

// Progress on stderr for runs longer than about two seconds, at most every two seconds.
progress_fn progress_printer() {
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = isatty(2);
  return [t0, tty, last = -1.0](std::uint64_t done, std::uint64_t total) mutable {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (secs < 2 || (done < total && secs - last < 2)) return;
    last = secs;
    std::fprintf(stderr, "%sbias: %llu/%llu units (%.0f%%), %.0f s%s", tty ? "\r" : "",
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 total ? 100.0 * double(done) / double(total) : 100.0, secs, tty && done < total ? "" : "\n");
  };
}

void run_bias(bias_options &o) {
  const io::report_format fmt = format_of(o.json, o.csv);
  const b::config base = base_config(o);
  check_knobs(base);
  const auto ms = methods_of(o);
  const auto rs = rounds_of(o);
  const unsigned threads = o.threads = resolve_threads(o.threads, UINT64_MAX);

  if (o.search) {
    if (!o.map_x.empty() || !o.shard.empty()) throw bad_input("--search takes neither --map-x nor --shard");
    // Per restart its best candidate, per worker a candidate being mutated: v, w (BF16), x (FP32).
    io::memory_need need;
    need.add({std::uint64_t{o.restarts} + 2 * std::uint64_t{threads}, base.k.n, 16}, "search candidates");
    io::check_memory(need, o.max_memory, "bias --search");
    for (auto m : ms)
      for (auto r : rs)
        run_search(o, base, m, r);
    return;
  }

  b::run_spec spec;
  spec.seed = o.seed;
  spec.trials = o.trials;
  spec.chunk = o.chunk;
  spec.threads = threads;
  if (!o.shard.empty()) parse_shard(o.shard, spec);

  b::axis ax, ay;
  const bool map = !o.map_x.empty();
  if (map) {
    ax = parse_axis(o.map_x, "--map-x");
    if (!o.map_y.empty()) ay = parse_axis(o.map_y, "--map-y");
  } else if (!o.map_y.empty()) {
    throw bad_input("--map-y needs --map-x");
  }
  if (!o.plot.empty() && (!map || o.map_y.empty())) throw bad_input("--plot needs --map-x and --map-y");
  if (!o.plot.empty() && (ms.size() != 1 || rs.size() != 1))
    throw bad_input("--plot draws one method and one rounding mode");
  if (!o.plot.empty() && !o.shard.empty()) throw bad_input("--plot needs the whole run (merge shards first)");
  if (!o.plot.empty() && !io::bias_map_value_known(o.map_value))
    throw bad_input("--map-value '" + io::shorten(o.map_value) + "' is not a statistic of the CSV");
  // Output paths are checked before the run, not after it.
  std::optional<io::plot_paths> plot;
  if (!o.plot.empty()) plot = io::plot_paths_for(o.plot, "--plot");
  if (!o.state.empty()) io::check_output_path(o.state, "--state");
  if (plot)
    io::check_distinct_files({{o.state, "--state"}, {plot->png, "--plot"}, {plot->csv, "--plot CSV"}});

  // The grid: its size bounded, its memory (configurations, statistics, report rows, one trial
  // buffer per worker) checked before anything is allocated.
  const std::uint64_t ncfg = map ? b::grid_size(ms.size(), rs.size(), ax, ay) : ms.size() * rs.size();
  io::memory_need need;
  need.add({ncfg, sizeof(b::config) + sizeof(b::stats) + sizeof(io::bias_row) + 2048}, "configurations")
      .add({threads, base.k.n, 16}, "trial buffers");
  io::check_memory(need, o.max_memory, "bias");
  if (ncfg > io::bias_max_configs)
    throw bad_input("bias: " + std::to_string(ncfg) + " configurations; at most " +
                    std::to_string(io::bias_max_configs) +
                    " (the product of the --map-x/--map-y steps, "
                    "methods and rounding modes)");
  spec.configs = b::expand_grid(base, ms, rs, ax, ay);
  for (const b::config &c : spec.configs)
    check_knobs(c);

  if (!o.quiet) spec.progress = progress_printer();
  std::optional<std::vector<b::stats>> all;
  try {
    all = mpi::run_bias(spec); // b::run, over the ranks when started by mpirun/srun (docs/scale.md)
  } catch (const std::invalid_argument &e) {
    throw bad_input(e.what());
  }
  if (!all) return; // a rank other than 0: rank 0 reports
  const std::vector<b::stats> &st = *all;

  if (!o.state.empty()) {
    io::output_file f(o.state, "--state");
    io::write_bias_state(f.stream(), spec, st);
    f.commit();
    if (!o.quiet)
      std::fprintf(stderr, "bias: wrote state %s (shard %llu/%llu)\n", o.state.c_str(),
                   static_cast<unsigned long long>(spec.shard), static_cast<unsigned long long>(spec.shards));
  }
  if (spec.shards > 1) {
    if (o.state.empty()) io::write_bias_state(std::cout, spec, st);
    return; // partial statistics: report after `bf16emu merge`
  }
  std::vector<io::bias_row> rows;
  for (std::size_t i = 0; i < st.size(); ++i)
    rows.push_back(io::make_bias_row(io::bias_config_text(spec.configs[i]), st[i]));
  const io::bias_header h{spec.seed, spec.trials, spec.chunk};
  if (plot) {
    io::plot_bias_map(*plot, o.map_value, ax, ay, rows, h);
    if (!o.quiet) std::fprintf(stderr, "bias: wrote %s and %s\n", plot->png.c_str(), plot->csv.c_str());
  }
  io::print_bias_report(std::cout, fmt, h, rows);
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
  add_count(sub, "--n", o->n, "addends (products v*w) per accumulation (1..16777216)", 1, 16777216);
  sub->add_option("--neg", o->neg, "probability that a value is negative (sign skew; 0.5 = symmetric)");
  sub->add_option("--spread", o->spread, "magnitude spread of the values in binades");
  sub->add_option("--ones", o->ones, "share of weights exactly 1 (the P=1 case)");
  sub->add_option("--weights", o->weights, "other weights: uniform (default), softmax, tiny");
  sub->add_option("--residual", o->residual,
                  "start value's low FP32 bits, up to this many BF16 ulps (0: start at 0)");
  sub->add_option("--tc-preset", o->tc_preset,
                  "tensor-core preset for --method tc (bf16 -> fp32; default sm80)");
  add_count(sub, "--tc-L", o->tc_L, "tensor-core block size L, 1..32 (overrides the preset)", 1,
            tc::max_block);
  add_count(sub, "--tc-F", o->tc_F, "tensor-core alignment bits F, 1..48 (overrides the preset)", 1, 48);
  add_count(sub, "--trials", o->trials, "accumulations per configuration (default 20000; 1..2^40)", 1,
            io::bias_max_trials);
  add_count(sub, "--seed", o->seed, "seed (default 1): same seed, same result on any thread count");
  add_count(sub, "--threads", o->threads, "worker threads, 1..1024 (default: all cores)", 1, 1024);
  add_count(sub, "--chunk", o->chunk,
            "trials per work unit (default 1000; 1..2^40; part of a sharded run's identity)", 1,
            io::bias_max_chunk);
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
  add_count(sub, "--iters", o->iters, "search iterations per restart (default 20000; 1..2^40)", 1,
            std::uint64_t{1} << 40);
  add_count(sub, "--restarts", o->restarts, "search restarts (default 4; 1..65536)", 1, 65536);
  add_max_memory(sub, o->max_memory);
  sub->callback([o] { run_bias(*o); });
}

// ---------------------------------------------------------------------------------------------

struct merge_options {
  std::vector<std::string> files;
  bool json = false, csv = false;
  std::uint64_t max_memory = 0;
};

void run_merge(const merge_options &mo) {
  const io::report_format fmt = format_of(mo.json, mo.csv);
  std::vector<io::bias_state> parts;
  for (const auto &f : mo.files)
    parts.push_back(io::read_bias_state(f, mo.max_memory));
  const std::vector<b::stats> total = io::merge_bias_states(parts, mo.files);
  std::vector<io::bias_row> rows;
  for (std::size_t i = 0; i < total.size(); ++i)
    rows.push_back(io::make_bias_row(parts[0].configs[i], total[i]));
  io::print_bias_report(std::cout, fmt, io::bias_header{parts[0].seed, parts[0].trials, parts[0].chunk},
                        rows);
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
  add_max_memory(sub, o->max_memory);
  sub->callback([o] { run_merge(*o); });
}

} // namespace

BF16EMU_COMMAND(50, register_bias);
BF16EMU_COMMAND(51, register_merge);

} // namespace bf16emu::cli
