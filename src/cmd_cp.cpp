// bf16emu CLI: `bf16emu cp`: context-parallel attention. The sequence is split into C chunks,
// each (query chunk, KV chunk) pair gives a partial (O, LSE), the partials are merged in a
// stated order under the policy's arithmetic, and the result (forward and backward) is
// compared with the single pass: normwise error in BF16 epsilon and max ULP distance.
// See docs/pitfalls.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bf16emu/pitfalls/compare.hpp"
#include "bf16emu/pitfalls/cp.hpp"
#include "command.hpp"
#include "io/attention.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/memory.hpp"
#include "options.hpp"

namespace bf16emu::cli {

namespace {

namespace pit = bf16emu::pitfalls;
namespace at = bf16emu::attention;

struct cp_cli {
  long n = 256, d = 64, chunks = 4, bug_chunk = 1;
  std::string policy = "fa2:sm80", variant = "fa2", scenario = "random", form = "global", order = "ascending",
              bug = "none";
  bool causal = false, no_backward = false, json = false;
  std::uint64_t seed = 1, max_memory = 0;
  int threads = 0;
  double fail_above = 0;
  CLI::Option *fail_above_opt = nullptr;
};

void run(const cp_cli &o) {
  pit::cp_options opt;
  opt.cfg.pol = io::parse_policy_name(o.policy);
  opt.cfg.var = io::parse_variant(o.variant);
  opt.cfg.causal = o.causal;
  if (o.n < 2 || o.d < 1) throw bad_input("--n must be >= 2 and --d >= 1");
  if (o.fail_above_opt->count() > 0 && !(o.fail_above > 0 && std::isfinite(o.fail_above)))
    throw bad_input(
        "--fail-above " + o.fail_above_opt->as<std::string>() +
        ": must be a positive finite number of eps (0, a negative or NaN value would switch the gate off)");
  if (o.chunks < 2 || o.chunks > o.n || o.n % o.chunks)
    throw bad_input("--chunks must be >= 2 and divide --n (" + std::to_string(o.n) + ")");
  opt.chunks = o.chunks;
  if (o.form == "global")
    opt.form = pit::merge_form::global;
  else if (o.form == "online")
    opt.form = pit::merge_form::online;
  else
    throw bad_input("--form '" + io::shorten(o.form) + "': must be global or online");
  if (o.order != "ascending" && o.order != "descending")
    throw bad_input("--order '" + io::shorten(o.order) + "': must be ascending or descending");
  opt.descending = o.order == "descending";
  if (o.bug == "none")
    opt.bug = pit::merge_bug::none;
  else if (o.bug == "skip-rescale")
    opt.bug = pit::merge_bug::skip_rescale;
  else if (o.bug == "stale-lse")
    opt.bug = pit::merge_bug::stale_lse;
  else
    throw bad_input("--bug '" + io::shorten(o.bug) + "': must be none, skip-rescale or stale-lse");
  if (o.bug_chunk < 0 || o.bug_chunk >= o.chunks) throw bad_input("--bug-chunk must be in [0, chunks)");
  opt.bug_chunk = o.bug_chunk;
  opt.backward = !o.no_backward;
  opt.threads = o.threads;

  // What the run holds at once: the inputs (and the forward's copies of them), the chunk pairs'
  // partial outputs and gradients, the outputs and gradients of the three runs, and the
  // single-pass backwards' n x n P and dS.
  io::memory_need need;
  const std::uint64_t n = std::uint64_t(o.n), d = std::uint64_t(o.d), c = std::uint64_t(o.chunks);
  need.add({n, d, 8, 16}, "Q, K, V, dO and their copies")
      .add({c, n, d + 1, 8, opt.backward ? 4u : 1u}, "chunk-pair partials")
      .add({n, d + 1, 8, 12}, "outputs and gradients")
      .add({c, c, 256}, "chunk-pair slots"); // forward results, gradient vectors, task lists
  if (opt.backward) need.add({n, n, 16}, "backward P and dS");
  io::check_memory(need, o.max_memory, "cp");

  const std::optional<at::attention_inputs> scenario = at::scenario_by_name(o.scenario, o.n, o.d, o.seed);
  if (!scenario) throw bad_input("unknown --scenario '" + io::shorten(o.scenario) + "' (random, sink)");
  const at::attention_inputs &in = *scenario;
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};

  const pit::attention_result cp = pit::cp_attention(opt, h, in.dout.data());
  const pit::attention_result one = pit::single_pass(opt.cfg, h, in.dout.data(), opt.backward);
  at::forward_config ecfg = opt.cfg;
  ecfg.pol.kind = at::policy_kind::exact;
  const pit::attention_result ex = pit::single_pass(ecfg, h, in.dout.data(), opt.backward);

  struct row {
    const char *name;
    pit::diff_stats vs_single, cp_exact, single_exact;
  };
  std::vector<row> rows;
  const int ob = cp.out_frac_bits, gb = cp.g.frac_bits;
  rows.push_back(
      {"O", pit::compare(cp.o, one.o, ob), pit::compare(cp.o, ex.o, 52), pit::compare(one.o, ex.o, 52)});
  if (opt.backward) {
    rows.push_back({"dQ", pit::compare(cp.g.dq, one.g.dq, gb), pit::compare(cp.g.dq, ex.g.dq, 52),
                    pit::compare(one.g.dq, ex.g.dq, 52)});
    rows.push_back({"dK", pit::compare(cp.g.dk, one.g.dk, gb), pit::compare(cp.g.dk, ex.g.dk, 52),
                    pit::compare(one.g.dk, ex.g.dk, 52)});
    rows.push_back({"dV", pit::compare(cp.g.dv, one.g.dv, gb), pit::compare(cp.g.dv, ex.g.dv, 52),
                    pit::compare(one.g.dv, ex.g.dv, 52)});
  }
  double worst = 0;
  for (const auto &r : rows)
    worst = std::max(worst, r.vs_single.rel_eps());
  const bool flagged = o.fail_above > 0 && !(worst <= o.fail_above);

  if (o.json) {
    io::json_writer j(std::cout);
    j.begin_object();
    j.kv("policy", at::policy_name(opt.cfg.pol)).kv("variant", at::to_string(opt.cfg.var));
    j.kv("n", std::int64_t(o.n)).kv("d", std::int64_t(o.d)).kv("causal", o.causal);
    j.kv("scenario", o.scenario).kv("seed", std::uint64_t(o.seed));
    j.kv("chunks", std::int64_t(o.chunks)).kv("chunk_size", std::int64_t(o.n / o.chunks));
    j.kv("form", pit::to_string(opt.form)).kv("order", o.order);
    j.kv("bug", pit::to_string(opt.bug));
    if (opt.bug != pit::merge_bug::none) j.kv("bug_chunk", std::int64_t(o.bug_chunk));
    j.kv("eps", pit::bf16_eps);
    j.key("tensors").begin_object();
    for (const auto &r : rows) {
      j.key(r.name).begin_object();
      j.kv("rel_error_eps", r.vs_single.rel_eps()).kv("rel_error", r.vs_single.rel_norm);
      j.kv("max_ulp", r.vs_single.max_ulp).kv("max_abs_ulps_of_max", r.vs_single.max_abs_ulps());
      j.kv("differing", r.vs_single.differing).kv("count", r.vs_single.n);
      j.kv("cp_vs_exact_eps", r.cp_exact.rel_eps()).kv("single_vs_exact_eps", r.single_exact.rel_eps());
      j.end_object();
    }
    j.end_object();
    j.kv("worst_rel_error_eps", worst);
    if (o.fail_above > 0) j.kv("fail_above", o.fail_above).kv("flagged", flagged);
    j.end_object();
  } else {
    std::printf(
        "context parallel: n %ld, d %ld%s, %ld chunks of %ld, policy %s, variant %s, scenario %s seed %llu\n",
        o.n, o.d, o.causal ? " causal" : "", o.chunks, o.n / o.chunks, at::policy_name(opt.cfg.pol).c_str(),
        at::to_string(opt.cfg.var), o.scenario.c_str(), (unsigned long long)o.seed);
    std::printf("merge %s, chunks %s, bug %s", pit::to_string(opt.form), o.order.c_str(),
                pit::to_string(opt.bug));
    if (opt.bug != pit::merge_bug::none) std::printf(" (chunk %ld)", o.bug_chunk);
    std::printf("; errors in BF16 eps = 2^-7, normwise ||x - y|| / ||y||\n");
    std::printf("%-4s | %14s %11s %9s %13s | %14s %15s\n", "", "CP vs single", "max ulp", "ulp@max",
                "differing", "CP vs exact", "single vs exact");
    for (const auto &r : rows)
      std::printf("%-4s | %12.5g e %11llu %9.2f %6llu/%-6llu | %12.5g e %13.5g e\n", r.name,
                  r.vs_single.rel_eps(), (unsigned long long)r.vs_single.max_ulp, r.vs_single.max_abs_ulps(),
                  (unsigned long long)r.vs_single.differing, (unsigned long long)r.vs_single.n,
                  r.cp_exact.rel_eps(), r.single_exact.rel_eps());
    std::printf(
        "max ulp: largest distance in representable values (explodes near zero); ulp@max: largest |error|\n"
        "in ulps of the tensor's largest reference element\n");
    if (o.fail_above > 0)
      std::printf("worst %.4f eps: %s (threshold %g eps)\n", worst, flagged ? "FLAGGED" : "ok", o.fail_above);
  }
  if (flagged) {
    std::fflush(stdout);
    std::exit(3);
  }
}

void register_cp(CLI::App &app) {
  auto o = std::make_shared<cp_cli>();
  auto *s =
      app.add_subcommand("cp", "Context-parallel attention: merge per-chunk (O, LSE), compare with one pass");
  s->footer("Examples:\n"
            "  bf16emu cp --n 256 --d 64 --chunks 4\n"
            "  bf16emu cp --n 256 --d 64 --chunks 4 --bug skip-rescale --json\n"
            "Details and numbers: docs/pitfalls.md");
  add_count(s, "--n", o->n, "sequence length (default 256; 2..2^40)", 2, std::uint64_t{1} << 40);
  add_count(s, "--d", o->d, "head dimension (default 64; 1..2^20)", 1, std::uint64_t{1} << 20);
  add_count(s, "--chunks", o->chunks, "number of chunks C, dividing n (default 4; 2..n)", 2,
            std::uint64_t{1} << 40);
  s->add_option("--policy", o->policy, io::policy_names() + " (default fa2:sm80)");
  s->add_option("--variant", o->variant, "standard, fa2 (default) or stabilized (per chunk pair)");
  s->add_flag("--causal", o->causal, "causal mask (query chunk i sees KV chunks 0..i)");
  s->add_option("--scenario", o->scenario, "random (default) or sink");
  add_count(s, "--seed", o->seed, "scenario seed (default 1)");
  s->add_option("--form", o->form,
                "merge: global (max, sum, log; default) or online (log1p running correction)");
  s->add_option("--order", o->order,
                "chunk order of the merge and the gradient sums: ascending (default), descending");
  s->add_option("--bug", o->bug, "deliberate merge bug: none (default), skip-rescale, stale-lse");
  add_count(s, "--bug-chunk", o->bug_chunk, "chunk the bug hits (default 1; below --chunks)", 0,
            std::uint64_t{1} << 40);
  s->add_flag("--no-backward", o->no_backward, "forward only");
  add_count(s, "--threads", o->threads, "worker threads for the chunk pairs, 1..1024 (default: all cores)", 1,
            1024);
  add_max_memory(s, o->max_memory);
  o->fail_above_opt = s->add_option("--fail-above", o->fail_above,
                                    "exit 3 when any tensor is off by more than this many eps (> 0)");
  s->add_flag("--json", o->json, "JSON output");
  s->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(61, register_cp);

} // namespace bf16emu::cli
