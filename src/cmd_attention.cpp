// bf16emu CLI: `bf16emu attention`: reference attention under a rounding policy, with the
// error ledger per rounding site, output errors against the exact policy, the element trace
// (the paper's figure 6) and gnuplot plots. See docs/attention.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bf16emu/attention.hpp"
#include "command.hpp"
#include "io/attention.hpp"
#include "io/attention_request.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/memory.hpp"
#include "options.hpp"
#include "scenario_options.hpp"

// Runs over MPI ranks (src/mpi; a plain run without BF16EMU_WITH_MPI).
#include "mpi/distribute.hpp"

namespace bf16emu::cli {

namespace {

namespace at = bf16emu::attention;

struct attention_cli {
  long n = 256, d = 64, heads = 1, batch = 1;
  bool causal = false, backward = false, json = false, no_ledger = false;
  std::string variant = "fa2", policy = "fa2:sm80", scenario = "sink";
  double beta = 2.0, tie_tol = 1e-3;
  long block_m = 0, block_n = 0; // 0: the policy's default
  unsigned threads = 0;          // 0: all cores
  std::uint64_t seed = 1, max_memory = 0;
  std::string kv_order, exp, row_sum, fma, normalize, site_precision;
  std::string bwd = "reference", delta, dq_order, bwd_q_order;
  long bwd_block_m = 0, bwd_block_n = 0; // 0: the tiled backward's default
  std::string ledger_file, trace_element, plot_file;
  std::string q_file, k_file, v_file, do_file;
  std::string out_o, out_lse, out_dq, out_dk, out_dv, trace_csv;
  at::sink_params sink;
};

// The command line's request: every name and every rule between options in src/io (the one
// request every front end builds).
at::run_options make_options(const attention_cli &o) {
  io::attention_request rq;
  rq.policy = o.policy, rq.variant = o.variant;
  rq.beta = o.beta, rq.tie_tol = o.tie_tol;
  rq.block_m = o.block_m, rq.block_n = o.block_n;
  rq.kv_order = o.kv_order, rq.exp = o.exp, rq.row_sum = o.row_sum, rq.fma = o.fma,
  rq.normalize = o.normalize;
  rq.sites = o.site_precision;
  rq.causal = o.causal;
  rq.backward = o.backward, rq.bwd = o.bwd;
  rq.bwd_block_m = o.bwd_block_m, rq.bwd_block_n = o.bwd_block_n;
  rq.delta = o.delta, rq.dq_order = o.dq_order, rq.bwd_q_order = o.bwd_q_order;
  rq.ledger = !o.no_ledger;
  rq.threads = o.threads;
  return io::make_attention_options(rq, io::front_end::cli);
}

// Q, K, V (and dO) from .npy files, checked against one another.
at::attention_inputs load_files(const attention_cli &o, bool backward) {
  if (o.q_file.empty() || o.k_file.empty() || o.v_file.empty())
    throw bad_input("--q, --k and --v must be given together");
  std::vector<std::size_t> sq, sk, sv, sd;
  at::attention_inputs in;
  in.q = io::read_attention_tensor(o.q_file, "--q", sq);
  in.k = io::read_attention_tensor(o.k_file, "--k", sk);
  in.v = io::read_attention_tensor(o.v_file, "--v", sv);
  if (sk != sq || sv != sq) throw bad_input("--q, --k and --v must have the same shape");
  const std::size_t r = sq.size();
  in.d = long(sq[r - 1]), in.n = long(sq[r - 2]);
  in.heads = r >= 3 ? long(sq[r - 3]) : 1;
  in.batch = r == 4 ? long(sq[0]) : 1;
  if (in.n < 1 || in.d < 1 || in.heads < 1 || in.batch < 1)
    throw bad_input(io::shorten(o.q_file) + ": empty tensor");
  if (!o.do_file.empty()) {
    in.dout = io::read_attention_tensor(o.do_file, "--do", sd);
    if (sd != sq) throw bad_input("--do must have the shape of --q");
  } else if (backward) {
    throw bad_input("--backward with --q/--k/--v needs --do FILE.npy");
  }
  return in;
}

// The inputs: files, or a built-in scenario once the size guard has passed.
at::attention_inputs load_inputs(const attention_cli &o, const at::run_options &opt) {
  const bool files = !o.q_file.empty() || !o.k_file.empty() || !o.v_file.empty();
  if (files) {
    at::attention_inputs in = load_files(o, o.backward);
    io::check_memory(io::attention_memory_need(std::uint64_t(in.batch), std::uint64_t(in.heads),
                                               std::uint64_t(in.n), std::uint64_t(in.d), opt, false),
                     o.max_memory, "attention");
    return in;
  }
  check_scenario(o.scenario, o.sink);
  io::check_memory(io::attention_memory_need(std::uint64_t(o.batch), std::uint64_t(o.heads),
                                             std::uint64_t(o.n), std::uint64_t(o.d), opt, true),
                   o.max_memory, "attention");
  return make_scenario(o.scenario, o.batch, o.heads, o.n, o.d, o.seed, o.sink);
}

// "attention: K/N heads done (S s)" on stderr after each head, for long runs.
progress_fn progress_printer() {
  const auto t0 = std::chrono::steady_clock::now();
  return [t0](std::uint64_t done, std::uint64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "attention: %llu/%llu heads done (%.1f s)\n", (unsigned long long)done,
                 (unsigned long long)total, s);
  };
}

void run(const attention_cli &o) {
  at::run_options opt = make_options(o);
  if (!opt.backward)
    for (const auto &[path, name] :
         {std::pair{&o.out_dq, "--out-dq"}, {&o.out_dk, "--out-dk"}, {&o.out_dv, "--out-dv"}})
      if (!path->empty())
        throw bad_input(std::string(name) + " needs a backward (--backward, or --bwd other than reference)");
  if (!o.plot_file.empty() && o.trace_element.empty()) throw bad_input("--plot needs --trace-element T,i");
  // Every output path is checked now, before the run: none names an input or another output.
  const std::vector<std::pair<std::string, const char *>> inputs{
      {o.q_file, "--q"}, {o.k_file, "--k"}, {o.v_file, "--v"}, {o.do_file, "--do"}};
  std::vector<std::pair<std::string, const char *>> outputs{
      {o.ledger_file, "--ledger"}, {o.trace_csv, "--trace-csv"}, {o.out_o, "--out-o"},
      {o.out_lse, "--out-lse"},    {o.out_dq, "--out-dq"},       {o.out_dk, "--out-dk"},
      {o.out_dv, "--out-dv"}};
  for (const auto &out : outputs)
    if (!out.first.empty()) io::check_output_path(out.first, out.second);
  std::optional<io::plot_paths> plot; // plot_paths_for checks its own paths
  if (!o.plot_file.empty()) {
    plot = io::plot_paths_for(o.plot_file, "--plot", o.trace_csv);
    outputs.insert(outputs.end(), {{plot->png, "--plot"}, {plot->script, "--plot script"}});
    if (o.trace_csv.empty()) outputs.push_back({plot->csv, "--plot CSV"});
  }
  io::check_distinct_files(outputs, inputs);
  at::attention_inputs in = load_inputs(o, opt);
  if (opt.backward && in.dout.empty()) throw bad_input("--backward needs dO");
  if (!o.trace_element.empty()) {
    long t = -1, i = -1;
    char extra;
    if (std::sscanf(o.trace_element.c_str(), "%ld,%ld%c", &t, &i, &extra) != 2 || t < 0 || i < 0 ||
        t >= in.n || i >= in.d)
      throw bad_input("--trace-element T,i needs 0 <= T < n and 0 <= i < d");
    opt.cfg.trace_row = t, opt.cfg.trace_col = i;
  }
  const std::uint64_t work =
      io::saturating_product({std::uint64_t(in.n), std::uint64_t(in.n), std::uint64_t(in.d),
                              std::uint64_t(in.heads), std::uint64_t(in.batch)});
  if (work >= (std::uint64_t(1) << 26) || opt.backward) opt.progress = progress_printer();
  // at::run_attention, over the ranks when started by mpirun/srun (docs/scale.md)
  const std::optional<at::run_report> all = mpi::run_attention(in, opt);
  if (!all) return; // a rank other than 0: rank 0 reports
  const at::run_report &r = *all;
  const io::attention_origin origin{o.q_file.empty() ? o.scenario : "files", o.seed, o.sink};
  const std::string js = io::attention_json(r, &origin);
  if (o.json)
    std::printf("%s\n", js.c_str());
  else
    io::print_attention_text(r);
  if (!o.ledger_file.empty()) io::write_file(o.ledger_file, "--ledger", js + "\n");
  io::write_attention_tensor(o.out_o, r.o, in, false);
  io::write_attention_tensor(o.out_lse, r.lse, in, true);
  if (opt.backward) {
    io::write_attention_tensor(o.out_dq, r.dq, in, false);
    io::write_attention_tensor(o.out_dk, r.dk, in, false);
    io::write_attention_tensor(o.out_dv, r.dv, in, false);
  }
  if (!r.trace.empty()) {
    const std::string csv = plot ? plot->csv : o.trace_csv;
    if (!csv.empty()) io::write_trace_csv(csv, r);
    if (plot) {
      char title[256];
      std::snprintf(title, sizeof title, "O[%ld,%ld] under %s (%s), seed %llu", opt.cfg.trace_row,
                    opt.cfg.trace_col, at::policy_name(opt.cfg.pol).c_str(), at::to_string(opt.cfg.var),
                    (unsigned long long)o.seed);
      io::plot_trace(*plot, title);
    }
  }
}

void register_attention(CLI::App &app) {
  auto o = std::make_shared<attention_cli>();
  auto *s =
      app.add_subcommand("attention", "Reference attention under a rounding policy, with the error ledger");
  s->footer(
      "Examples:\n"
      "  bf16emu attention --scenario sink --policy paper --json\n"
      "  bf16emu attention --scenario sink --policy paper --variant stabilized --beta 4\n"
      "  bf16emu attention --scenario sink --policy paper:autocast --heads 24 --site-precision row_sum=fp32\n"
      "  bf16emu attention --scenario sink --policy fa2:sm90 --backward --ledger ledger.json\n"
      "  bf16emu attention --scenario sink --policy fa2:sm80 --bwd tiled --bwd-block-m 64 --json\n"
      "  bf16emu attention --scenario sink --policy paper --trace-element 0,3 --plot trace.png\n"
      "Details and numbers: docs/attention.md, docs/paper-reproduction.md");
  add_count(s, "--n", o->n, "sequence length (default 256)", 1);
  add_count(s, "--d", o->d, "head dimension (default 64)", 1);
  add_count(s, "--heads", o->heads, "heads (default 1; run in parallel)", 1);
  add_count(s, "--batch", o->batch, "batch (default 1)", 1);
  s->add_flag("--causal", o->causal, "causal mask");
  s->add_option("--variant", o->variant, "standard, fa2 (default) or stabilized");
  s->add_option("--beta", o->beta, "stabilized: beta > 1 (default 2)");
  s->add_option("--tie-tol", o->tie_tol,
                "stabilized: scores within this of the max count as ties (default 1e-3)");
  add_count(s, "--block-m", o->block_m, "Br (default 64; 512 under paper:autocast)", 1);
  add_count(s, "--block-n", o->block_n, "Bc (default 64; 512 under paper:autocast)", 1);
  s->add_option("--policy", o->policy, io::policy_names(true) + " (default fa2:sm80)");
  s->add_option("--kv-order", o->kv_order, "forward or reverse (fa2 default: reverse)");
  s->add_option("--exp", o->exp, "rn (binary64 exp rounded once to FP32) or poly (FMA-only exp2, default)");
  s->add_option("--row-sum", o->row_sum, "sequential or quad (default)");
  s->add_option("--fma", o->fma, "on (default) or off: FMA contraction of the exp2 argument and delta");
  s->add_option("--normalize", o->normalize, "reciprocal (default) or divide");
  s->add_option("--site-precision", o->site_precision,
                "promote rounding sites: SITE=fp32|exact,... with the ledger's site names, e.g. "
                "row_sum=fp32,pv=exact (fp32: roundings to BF16 there round to FP32; exact: binary64)");
  add_count(s, "--seed", o->seed, "scenario seed (default 1)");
  s->add_option("--scenario", o->scenario, "random or sink (default)");
  add_sink_options(s, o->sink);
  s->add_option("--q", o->q_file, "Q as .npy (float32, float64 or bf16 bits as uint16)");
  s->add_option("--k", o->k_file, "K as .npy");
  s->add_option("--v", o->v_file, "V as .npy");
  s->add_option("--do", o->do_file, "dO as .npy (for --backward)");
  s->add_flag("--backward", o->backward, "also run the backward (delta, dQ, dK, dV)");
  s->add_option(
      "--bwd", o->bwd,
      "backward: reference (default; all keys of a row at once), tiled (FlashAttention-2's "
      "Algorithm 2 with the CUDA kernel's rounding points), authors (the paper authors' "
      "attention.py backward, paper policies; under paper:autocast run under autocast as "
      "torch.compile traced it, an inference: docs/attention.md) or authors:promote (the same "
      "without autocast, the mixed FP32 x BF16 einsums in FP32); all but reference imply --backward)");
  add_count(s, "--bwd-block-m", o->bwd_block_m, "tiled backward: Br query rows per block (default 128)", 1);
  add_count(s, "--bwd-block-n", o->bwd_block_n, "tiled backward: Bc keys per block (default 128)", 1);
  s->add_option("--delta", o->delta,
                "tiled backward: delta order, fa2 (default: per-thread sums, 8- or 4-lane butterfly) or "
                "sequential");
  s->add_option("--dq-order", o->dq_order,
                "tiled backward: order of the FP32 dQ additions over KV blocks, ascending (default) or "
                "descending");
  s->add_option("--bwd-q-order", o->bwd_q_order,
                "tiled backward: order of the query blocks in the inner loop, descending (default, as the "
                "kernel) or ascending");
  s->add_flag("--json", o->json, "print the ledger as JSON");
  s->add_flag("--no-ledger", o->no_ledger, "ledger off (timing)");
  s->add_option("--ledger", o->ledger_file, "write the JSON ledger to FILE");
  s->add_option("--trace-element", o->trace_element,
                "follow O[T,i] (batch 0, head 0) through its accumulation");
  s->add_option("--trace-csv", o->trace_csv, "write the element trace as CSV");
  s->add_option("--plot", o->plot_file, "gnuplot PNG of the element trace (CSV written beside it)");
  s->add_option("--out-o", o->out_o, "write O as .npy (float32)");
  s->add_option("--out-lse", o->out_lse, "write L as .npy");
  s->add_option("--out-dq", o->out_dq, "write dQ as .npy");
  s->add_option("--out-dk", o->out_dk, "write dK as .npy");
  s->add_option("--out-dv", o->out_dv, "write dV as .npy");
  add_count(s, "--threads", o->threads, "worker threads for heads, 1..1024 (default: all cores)", 1, 1024);
  add_max_memory(s, o->max_memory);
  s->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(40, register_attention);

} // namespace bf16emu::cli
