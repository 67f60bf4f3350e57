// bf16emu CLI: `bf16emu bwd-order`: the attention backward with its block accumulation order
// as a parameter (ascending / descending KV blocks, DASH-style schedules, a seeded random order,
// the nondeterministic arrival order). Each order is run several times with several thread
// counts (same bits?), and every two orders are compared (how many elements differ, by how
// many ULPs). See docs/pitfalls.md.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bf16emu/pitfalls/bwd_order.hpp"
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

struct bwd_order_cli {
  long n = 256, d = 64, block = 64;
  std::string policy = "fa2:sm80", variant = "fa2", scenario = "random";
  std::string orders = "ascending,descending,dash-descending-q,dash-shift,random:1";
  std::string threads = "1,2";
  int repeats = 2;
  bool causal = false, bf16_grads = false, json = false, no_exact = false;
  std::uint64_t seed = 1, max_memory = 0;
};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

pit::order_spec parse_order(const std::string &s) {
  pit::order_spec o;
  if (s == "ascending")
    o.kind = pit::schedule_kind::ascending;
  else if (s == "descending")
    o.kind = pit::schedule_kind::descending;
  else if (s == "dash-descending-q")
    o.kind = pit::schedule_kind::dash_descending_q;
  else if (s == "dash-shift")
    o.kind = pit::schedule_kind::dash_shift;
  else if (s == "arrival")
    o.kind = pit::schedule_kind::arrival;
  else if (s.rfind("random:", 0) == 0) {
    o.kind = pit::schedule_kind::random;
    o.seed = parse_count(s.substr(7), "--orders random:SEED", 0, UINT64_MAX);
  } else
    throw bad_input("unknown order '" + s +
                    "' (ascending, descending, dash-descending-q, dash-shift, random:SEED, arrival)");
  return o;
}

std::string hex(std::uint64_t x) {
  char b[24];
  std::snprintf(b, sizeof b, "%016" PRIx64, x);
  return b;
}

void run(const bwd_order_cli &o) {
  pit::bwd_order_options opt;
  opt.cfg.pol = io::parse_policy_name(o.policy);
  opt.cfg.var = io::parse_variant(o.variant);
  opt.cfg.causal = o.causal;
  if (o.n < 2 || o.d < 1) throw bad_input("--n must be >= 2 and --d >= 1");
  if (o.block < 1 || o.block >= o.n || o.n % o.block)
    throw bad_input("--block must divide --n (" + std::to_string(o.n) + ") into at least 2 blocks");
  opt.block = o.block;
  opt.out_bf16 = o.bf16_grads;
  opt.with_exact = !o.no_exact;
  for (const auto &s : split(o.orders))
    opt.orders.push_back(parse_order(s));
  if (opt.orders.empty()) throw bad_input("--orders is empty");
  opt.threads.clear();
  for (const auto &s : split(o.threads)) {
    opt.threads.push_back(int(parse_count(s, "--threads", 1, 1024)));
  }
  if (opt.threads.empty()) throw bad_input("--threads is empty");
  if (o.repeats < 1 || o.repeats > 100) throw bad_input("--repeats must be in [1, 100]");
  opt.repeats = o.repeats;

  // What the run holds at once: the inputs (and the forward's copies), the forward's O and L,
  // the block pairs' partial gradients, the summed gradients of every order (and one being
  // summed), and the binary64 reference backward's n x n P and dS.
  io::memory_need need;
  const std::uint64_t n = std::uint64_t(o.n), d = std::uint64_t(o.d), nb = n / std::uint64_t(o.block);
  need.add({n, d + 1, 8, 12}, "Q, K, V, dO, O, L and their copies")
      .add({nb, n, d, 8, 3}, "block-pair partial gradients")
      .add({opt.orders.size() + 1, n, d, 8, 3}, "gradients of the orders")
      .add({nb, nb, 128}, "block-pair slots"); // gradient vectors, task and schedule lists
  if (opt.with_exact) need.add({n, n, 16}, "reference backward P and dS");
  io::check_memory(need, o.max_memory, "bwd-order");

  const std::optional<at::attention_inputs> scenario = at::scenario_by_name(o.scenario, o.n, o.d, o.seed);
  if (!scenario) throw bad_input("unknown --scenario '" + io::shorten(o.scenario) + "' (random, sink)");
  const at::attention_inputs &in = *scenario;
  const at::head_view h{in.n, in.d, in.q.data(), in.k.data(), in.v.data()};
  const pit::bwd_order_report r = pit::run_bwd_orders(opt, h, in.dout.data());
  const char *fmt = r.orders.front().g.frac_bits == 7    ? "bf16"
                    : r.orders.front().g.frac_bits == 23 ? "fp32"
                                                         : "fp64";

  if (o.json) {
    io::json_writer j(std::cout);
    j.begin_object();
    j.kv("policy", at::policy_name(opt.cfg.pol)).kv("variant", at::to_string(opt.cfg.var));
    j.kv("n", std::int64_t(o.n)).kv("d", std::int64_t(o.d)).kv("causal", o.causal);
    j.kv("block", std::int64_t(o.block)).kv("blocks", std::int64_t(o.n / o.block));
    j.kv("scenario", o.scenario).kv("seed", std::uint64_t(o.seed)).kv("grad_format", fmt);
    j.kv("repeats", o.repeats).key("threads").begin_array();
    for (int t : opt.threads)
      j.value(t);
    j.end_array();
    j.key("orders").begin_array();
    for (const auto &x : r.orders) {
      j.begin_object();
      j.kv("order", x.spec.name()).kv("runs", std::uint64_t(x.fingerprints.size()));
      j.kv("reproducible", x.reproducible());
      j.key("fingerprints").begin_array();
      for (auto f : x.fingerprints)
        j.value(hex(f));
      j.end_array();
      if (opt.with_exact) {
        j.kv("dq_vs_exact_eps", x.err_dq.rel_eps()).kv("dk_vs_exact_eps", x.err_dk.rel_eps());
        j.kv("dv_vs_exact_eps", x.err_dv.rel_eps());
      }
      j.end_object();
    }
    j.end_array();
    j.key("pairs").begin_array();
    for (const auto &p : r.pairs) {
      j.begin_object();
      j.kv("a", r.orders[p.a].spec.name()).kv("b", r.orders[p.b].spec.name());
      for (const auto &[name, s] :
           {std::pair<const char *, const pit::diff_stats *>{"dq", &p.dq}, {"dk", &p.dk}, {"dv", &p.dv}}) {
        j.key(name).begin_object();
        j.kv("differing", s->differing).kv("count", s->n).kv("max_ulp", s->max_ulp);
        j.kv("max_abs_ulps_of_max", s->max_abs_ulps());
        j.kv("rel_diff_eps", s->rel_eps());
        j.end_object();
      }
      j.end_object();
    }
    j.end_array();
    j.end_object();
    return;
  }
  std::printf(
      "backward accumulation orders: n %ld, d %ld%s, %ld blocks of %ld, policy %s, variant %s, scenario %s "
      "seed %llu; gradients summed in FP32%s\n",
      o.n, o.d, o.causal ? " causal" : "", o.n / o.block, o.block, at::policy_name(opt.cfg.pol).c_str(),
      at::to_string(opt.cfg.var), o.scenario.c_str(), (unsigned long long)o.seed,
      o.bf16_grads ? ", written as BF16" : "");
  std::printf("runs: %d repeat(s) x threads {%s}\n\n", o.repeats, o.threads.c_str());
  std::printf("%-20s %5s %13s %17s", "order", "runs", "reproducible", "fingerprint");
  if (opt.with_exact) std::printf(" %11s %11s %11s", "dQ-exact", "dK-exact", "dV-exact");
  std::printf("\n");
  for (const auto &x : r.orders) {
    std::printf("%-20s %5zu %13s %17s", x.spec.name().c_str(), x.fingerprints.size(),
                x.reproducible() ? "yes" : "NO", hex(x.fingerprints.front()).c_str());
    if (opt.with_exact)
      std::printf(" %9.4f e %9.4f e %9.4f e", x.err_dq.rel_eps(), x.err_dk.rel_eps(), x.err_dv.rel_eps());
    std::printf("\n");
  }
  std::printf("\npairs of orders (first run of each): elements whose bits differ, max distance in %s ulps, "
              "normwise difference in BF16 eps\n",
              fmt);
  std::printf("(ulp: largest distance in representable values; @max: largest |difference| in ulps of the\n"
              "tensor's largest element)\n");
  std::printf("%-18s %-18s | %-36s | %-36s | %-36s\n", "order a", "order b", "dQ differ / ulp / @max / eps",
              "dK differ / ulp / @max / eps", "dV differ / ulp / @max / eps");
  for (const auto &p : r.pairs) {
    std::printf("%-18s %-18s", r.orders[p.a].spec.name().c_str(), r.orders[p.b].spec.name().c_str());
    for (const pit::diff_stats *s : {&p.dq, &p.dk, &p.dv})
      std::printf(" | %5llu/%-5llu %8llu %5.2f %8.2e", (unsigned long long)s->differing,
                  (unsigned long long)s->n, (unsigned long long)s->max_ulp, s->max_abs_ulps(), s->rel_eps());
    std::printf("\n");
  }
}

void register_bwd_order(CLI::App &app) {
  auto o = std::make_shared<bwd_order_cli>();
  auto *s = app.add_subcommand(
      "bwd-order", "Deterministic backward: block accumulation orders, reproducibility and differences");
  s->footer("Examples:\n"
            "  bf16emu bwd-order --n 256 --d 64 --block 64 --threads 1,2,4\n"
            "  bf16emu bwd-order --orders ascending,descending,dash-shift --bf16-grads --json\n"
            "Details and numbers: docs/pitfalls.md");
  add_count(s, "--n", o->n, "sequence length (default 256; 2..2^40)", 2, std::uint64_t{1} << 40);
  add_count(s, "--d", o->d, "head dimension (default 64; 1..2^20)", 1, std::uint64_t{1} << 20);
  add_count(s, "--block", o->block, "block size b (query and KV blocks; divides n; default 64)", 1,
            std::uint64_t{1} << 40);
  s->add_option("--policy", o->policy, io::policy_names() + " (default fa2:sm80)");
  s->add_option("--variant", o->variant, "standard, fa2 (default) or stabilized (the forward)");
  s->add_flag("--causal", o->causal, "causal mask");
  s->add_option("--scenario", o->scenario, "random (default) or sink");
  add_count(s, "--seed", o->seed, "scenario seed (default 1)");
  s->add_option("--orders", o->orders,
                "comma list: ascending, descending, dash-descending-q, dash-shift, random:SEED, arrival "
                "(default ascending,descending,dash-descending-q,dash-shift,random:1)");
  s->add_option("--threads", o->threads, "comma list of thread counts to run with (default 1,2)");
  add_count(s, "--repeats", o->repeats, "runs per thread count (default 2; 1..100)", 1, 100);
  s->add_flag("--bf16-grads", o->bf16_grads,
              "round the summed dQ, dK, dV to BF16 (as a kernel writing BF16)");
  s->add_flag("--no-exact", o->no_exact, "skip the binary64 reference backward");
  add_max_memory(s, o->max_memory);
  s->add_flag("--json", o->json, "JSON output");
  s->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(62, register_bwd_order);

} // namespace bf16emu::cli
