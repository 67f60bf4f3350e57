// bf16emu CLI: `bf16emu ablate`: which rounding site causes an attention bias. For a scenario and
// a policy it runs H independent heads under the baseline, under each rounding site promoted
// alone to FP32 or binary64, and under chosen pairs, and reports the bias of O and delta over
// heads (mean, se, z over heads) and the share of the baseline bias each promotion removes.
// The numerics and the reports are in src/io/ablate.hpp; docs/paper-reproduction.md has the
// measured table.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "bf16emu/attention.hpp"
#include "command.hpp"
#include "io/ablate.hpp"
#include "io/attention.hpp"
#include "io/attention_request.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/memory.hpp"
#include "options.hpp"
#include "scenario_options.hpp"

#include "mpi/distribute.hpp"

namespace bf16emu::cli {

namespace {

namespace at = bf16emu::attention;

struct ablate_cli {
  long n = 256, d = 64, heads = 96;
  long block_m = 0, block_n = 0; // 0: the policy's default
  std::uint64_t seed = 1, max_memory = 0;
  std::string scenario = "sink", policy = "paper:bf16", variant = "fa2", to = "fp32", sites, pairs, plot;
  double beta = 2.0, tie_tol = 1e-3;
  bool causal = false, backward = false, json = false;
  unsigned threads = 0;
  at::sink_params sink = [] {
    at::sink_params s; // the settings of the paper's headline bias (docs/paper-reproduction.md)
    s.multiplicity = 8, s.strength = 10;
    return s;
  }();
};

// "ablate: K/N runs done (S s)" on stderr, at most about once a second, and at the end.
progress_fn progress_printer() {
  const auto t0 = std::chrono::steady_clock::now();
  auto last = std::make_shared<double>(-1.0);
  return [t0, last](std::uint64_t done, std::uint64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (done != total && s - *last < 1.0) return;
    *last = s;
    std::fprintf(stderr, "ablate: %llu/%llu head runs done (%.1f s)\n", (unsigned long long)done,
                 (unsigned long long)total, s);
  };
}

void run(const ablate_cli &o) {
  io::rethrow_as<bad_input>([&] {
    io::ablation_request rq;
    io::attention_request fwd; // the forward's names and rules, as `bf16emu attention` reads them
    fwd.policy = o.policy, fwd.variant = o.variant, fwd.causal = o.causal;
    fwd.beta = o.beta, fwd.tie_tol = o.tie_tol, fwd.block_m = o.block_m, fwd.block_n = o.block_n;
    rq.base = io::make_attention_options(fwd, io::front_end::cli).cfg;
    std::optional<io::plot_paths> plot;
    if (!o.plot.empty()) plot = io::plot_paths_for(o.plot, "--plot");
    rq.to = io::parse_promotion(o.to);
    if (!o.pairs.empty()) rq.pairs = io::parse_site_pairs(o.pairs);
    rq.backward = o.backward;
    rq.threads = o.threads;
    check_scenario(o.scenario, o.sink);
    at::run_options mem;
    mem.cfg = rq.base, mem.backward = o.backward;
    io::check_memory(io::attention_memory_need(1, std::uint64_t(o.heads), std::uint64_t(o.n),
                                               std::uint64_t(o.d), mem, true),
                     o.max_memory, "ablate");
    const at::attention_inputs in = make_scenario(o.scenario, 1, o.heads, o.n, o.d, o.seed, o.sink);
    rq.sites =
        o.sites.empty() ? io::rounding_sites(in, rq.base, rq.backward, rq.bwd) : io::parse_site_list(o.sites);
    const std::uint64_t work = io::saturating_product({std::uint64_t(o.n), std::uint64_t(o.n),
                                                       std::uint64_t(o.d), std::uint64_t(o.heads),
                                                       std::uint64_t(rq.sites.size() + rq.pairs.size() + 2)});
    if (work >= (std::uint64_t(1) << 28)) rq.progress = progress_printer();
    // io::run_ablation, over the ranks when started by mpirun/srun (docs/scale.md)
    const std::optional<io::ablation_report> all = mpi::run_ablation(in, rq);
    if (!all) return; // another rank of an MPI run: rank 0 prints
    const io::ablation_report &rep = *all;
    const io::ablation_origin origin{o.scenario, o.seed, o.sink};
    if (o.json) {
      io::json_writer w(std::cout);
      io::write_ablation_json(w, rep, origin);
    } else {
      io::print_ablation_text(std::cout, rep, origin);
    }
    if (plot) {
      io::write_ablation_csv(plot->csv, rep);
      io::plot_ablation(*plot, "bias of O over " + std::to_string(rep.heads) + " heads, " +
                                   at::policy_name(rq.base.pol) + ", sites promoted to " + o.to);
    }
  });
}

void register_ablate(CLI::App &app) {
  auto o = std::make_shared<ablate_cli>();
  auto *s = app.add_subcommand(
      "ablate", "Which rounding site causes an attention bias: promote each site over independent heads");
  s->footer(
      "Examples:\n"
      "  bf16emu ablate                                   # paper:bf16, 96 sink heads, each site -> fp32\n"
      "  bf16emu ablate --policy paper:autocast --pairs row_sum+pv_to_bf16 --plot ablate.png\n"
      "  bf16emu ablate --heads 24 --to exact --json\n"
      "Default run (96 heads of n 256, d 64; under paper:bf16 the baseline and 10 sites, 0.36 s per\n"
      "head and configuration): about 7 minutes of one idle core, divided over every core (--threads).\n"
      "Details and the measured table: docs/paper-reproduction.md");
  add_count(s, "--n", o->n, "sequence length (default 256)", 1);
  add_count(s, "--d", o->d, "head dimension (default 64)", 1);
  add_count(s, "--heads", o->heads, "independent heads (default 96)", 1);
  add_count(s, "--seed", o->seed, "scenario seed (default 1); the heads are independent draws from it");
  s->add_option("--scenario", o->scenario, "sink (default) or random");
  add_sink_options(s, o->sink);
  s->add_option("--policy", o->policy, io::policy_names(true) + " (default paper:bf16)");
  s->add_option("--variant", o->variant, "standard, fa2 (default) or stabilized");
  s->add_option("--beta", o->beta, "stabilized: beta > 1 (default 2)");
  s->add_option("--tie-tol", o->tie_tol, "stabilized: tie tolerance (default 1e-3)");
  s->add_flag("--causal", o->causal, "causal mask");
  add_count(s, "--block-m", o->block_m, "Br (default: the policy's)", 1);
  add_count(s, "--block-n", o->block_n, "Bc (default: the policy's)", 1);
  s->add_option("--to", o->to, "promote each site to fp32 (default) or exact (binary64)");
  s->add_option("--sites", o->sites,
                "sites to promote alone, a,b,c (default: every site where the policy rounds inexactly on "
                "head 0 and that can move O or delta)");
  s->add_option("--pairs", o->pairs, "pairs of sites promoted together, a+b,c+d");
  s->add_flag("--backward", o->backward,
              "delta from the policy's backward (default: binary64 rowsum(dO o O) of the policy's O)");
  s->add_flag("--json", o->json, "JSON output");
  s->add_option("--plot", o->plot, "bar chart PNG of the O bias per configuration (CSV written beside it)");
  add_count(s, "--threads", o->threads, "worker threads, 1..1024 (default: all cores)", 1, 1024);
  add_max_memory(s, o->max_memory);
  s->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(41, register_ablate);

} // namespace bf16emu::cli
