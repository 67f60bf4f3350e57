// bf16emu CLI: `bf16emu paper` -- the worked example of Qiu & Yao (arXiv 2510.04212), traced
// step by step with the same code as `bf16emu add ... --to bf16 --trace`.
//
// An FP32 running sum -2.4071154594421387 (0xC01A0E2E) receives -2.296875. The FP32 sum
// 0xC0968717 = -4.703990459442139 is exact; storing it in BF16 with round-to-nearest-even
// sees guard 1 and sticky 1 and rounds the magnitude up to -4.71875 (0xC097): an error of
// -0.014759540557861328125. With -2.40625 instead the sum -4.703125 is a tie and rounds to
// the even neighbour -4.6875.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bf16emu/attention.hpp"
#include "command.hpp"
#include "io/ablate.hpp"
#include "io/arith_report.hpp"
#include "io/attention.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/paper_sections.hpp"
#include "io/print.hpp"

namespace bf16emu::cli {

namespace {

namespace at = bf16emu::attention;

struct paper_case {
  const char *key;
  const char *a, *b;
  const char *story;
};

const paper_case cases[] = {
    {"case", "-2.4071154594421387", "-2.296875",
     "The paper's case: an FP32 running sum s = -2.4071154594421387 receives x = -2.296875.\n"
     "The FP32 addition is exact; storing the sum in BF16 (round to nearest even) must drop 16\n"
     "significand bits: the first dropped bit (guard) is 1 and some later one (sticky) is 1,\n"
     "so the sum is above the halfway point and the magnitude is rounded up."},
    {"tie_variant", "-2.40625", "-2.296875",
     "Tie variant: -2.40625 + -2.296875 = -4.703125 lies exactly halfway between the BF16\n"
     "neighbours -4.6875 and -4.71875 (guard 1, round 0, sticky 0): ties-to-even keeps -4.6875."},
};

io::arith_report run_case(const paper_case &c) {
  io::arith_request rq;
  rq.op = op_kind::add;
  rq.format = format_id::fp32;
  rq.to = format_id::bf16;
  rq.operands = {io::parse_operand(c.a, rq.format), io::parse_operand(c.b, rq.format)};
  return io::run_arith(rq);
}

// One-line summary of a report: the exact FP32 sum, and the BF16 rounding with its bits.
void summary_line(std::ostream &out, const char *key, const io::arith_report &r) {
  const auto &sum = r.steps.at(0);
  const auto &st = r.steps.at(1);
  out << "  " << key << ": fp32 sum " << io::hex_bits(sum.to, sum.bits) << " = "
      << io::value_decimal(sum.to, sum.bits) << ((sum.flags & flag::inexact) ? " (rounded)" : " (exact)")
      << " -> bf16 " << io::describe_value(st.to, st.bits);
  if (!st.events.empty()) {
    const auto &ev = st.events.back();
    out << ", guard " << ev.guard << " round " << ev.round << " sticky " << ev.sticky << ", "
        << to_string(ev.dec) << ", error " << io::exact_error_text(ev);
  }
  out << "\n";
}

// ---------------------------------------------------------------------------
// The bias over independent heads under the authors' arithmetic (paper:bf16, paper:autocast),
// unstabilized and stabilized (Algorithm 1, beta 2 as in their attention.py), and under the
// FlashAttention-2 kernel's (fa2:sm90). Each head is an independent draw of the sink scenario
// at the settings of the headline bias; H and n are kept small so that `paper` takes seconds
// (docs/paper-reproduction.md has the 96-head runs and the site ablation).

constexpr long heads_h = 24, heads_n = 128, heads_d = 64;
constexpr std::uint64_t heads_seed = 1;

at::sink_params heads_sink() {
  at::sink_params s;
  s.multiplicity = 8, s.strength = 10;
  return s;
}

constexpr const char *ledger_policy = "paper:autocast"; // the ledger section's policy, unstabilized

struct heads_row {
  const char *policy;
  bool stabilized;
  io::head_bias_row res;
};

// Runs once (text and JSON share it): one run_head_bias per variant, as each has its own exact
// reference (the exact policy under the same variant). The unstabilized paper:autocast run also
// files its roundings in a ledger (head_bias_config::with_ledger): the ledger section below
// reads it instead of running the same heads again.
std::vector<heads_row> &heads_rows() {
  static std::vector<heads_row> rows = [] {
    const at::attention_inputs in = at::scenario_sink(1, heads_h, heads_n, heads_d, heads_seed, heads_sink());
    std::vector<heads_row> r = {{"paper:bf16", false, {}},
                                {"paper:autocast", false, {}},
                                {"fa2:sm90", false, {}},
                                {"paper:bf16", true, {}},
                                {"paper:autocast", true, {}}};
    for (const bool stab : {false, true}) {
      io::head_bias_request rq;
      rq.reference.var = stab ? at::variant::stabilized : at::variant::fa2;
      rq.reference.pol.kind = at::policy_kind::exact;
      for (const auto &x : r) {
        if (x.stabilized != stab) continue;
        io::head_bias_config c;
        c.label = x.policy;
        c.cfg.pol = io::parse_policy_name(x.policy, "--policy", true);
        c.cfg.var = rq.reference.var;
        c.with_ledger = !stab && std::string_view(x.policy) == ledger_policy;
        rq.configs.push_back(c);
      }
      auto res = io::run_head_bias(in, rq);
      std::size_t k = 0;
      for (auto &x : r)
        if (x.stabilized == stab) x.res = std::move(res.at(k++));
    }
    return r;
  }();
  return rows;
}

void heads_text(std::ostream &out) {
  const at::sink_params sp = heads_sink();
  char b[1024];
  std::snprintf(
      b, sizeof b,
      "sink scenario: %ld independent heads of n %ld, d %ld (seed %llu; multiplicity %d, strength %g,\n"
      "tie share %g, V skew %g on half the columns, dO + %g there). Per head: the mean signed error of\n"
      "O (and of delta = rowsum(dO o O), binary64 from the policy's O) against the exact policy;\n"
      "bias = mean over heads, se over heads, z (heads) = bias / se.\n",
      heads_h, heads_n, heads_d, (unsigned long long)heads_seed, sp.multiplicity, sp.strength, sp.tie_share,
      sp.v_skew, sp.do_bias);
  out << b;
  std::snprintf(b, sizeof b, "  %-15s %-17s %11s %9s %10s %9s   %11s %10s\n", "policy", "variant", "O bias",
                "se", "z (heads)", "heads < 0", "delta bias", "z (heads)");
  out << b;
  for (const auto &x : heads_rows()) {
    const auto &o = x.res.o, &dl = x.res.delta;
    std::snprintf(b, sizeof b, "  %-15s %-17s %+11.3e %9.1e %+10.1f %5llu/%-3llu   %+11.3e %+10.1f\n",
                  x.policy, x.stabilized ? "stabilized beta 2" : "unstabilized", o.mean, o.se, o.z(),
                  (unsigned long long)o.negative_heads, (unsigned long long)o.heads, dl.mean, dl.z());
    out << b;
  }
  std::snprintf(
      b, sizeof b,
      "(the same: bf16emu attention --scenario sink --multiplicity 8 --strength 10 --n %ld --heads %ld\n"
      " --policy P [--variant stabilized --beta 2], line \"by heads\"; which site causes it:\n"
      " bf16emu ablate --policy P)\n",
      heads_n, heads_h);
  out << b;
}

void heads_json(io::json_writer &w) {
  const at::sink_params sp = heads_sink();
  w.begin_object();
  w.kv("scenario", "sink").kv("seed", heads_seed).kv("heads", std::int64_t(heads_h));
  w.kv("n", std::int64_t(heads_n)).kv("d", std::int64_t(heads_d));
  w.kv("multiplicity", sp.multiplicity).kv("strength", sp.strength).kv("tie_share", sp.tie_share);
  w.kv("v_skew", sp.v_skew).kv("skew_cols", sp.skew_cols).kv("do_bias", sp.do_bias);
  w.key("rows").begin_array();
  for (const auto &x : heads_rows()) {
    w.begin_object();
    w.kv("policy", x.policy).kv("variant", x.stabilized ? "stabilized" : "fa2");
    if (x.stabilized) w.kv("beta", 2.0);
    w.key("o");
    io::write_over_heads_json(w, x.res.o);
    w.key("delta");
    io::write_over_heads_json(w, x.res.delta);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

BF16EMU_PAPER_SECTION(5, "bias_over_heads", "Bias over independent heads (z over heads)", heads_text,
                      heads_json);

// ---------------------------------------------------------------------------
// The error ledger of the same 24 heads under the authors' arithmetic under autocast
// (paper:autocast, unstabilized): every rounding site with its events, how many moved the
// value away from zero, and the signed error it filed, in total and for the events whose
// operands involved P-bar = 1 exactly. Sites sorted by |signed error| of their P-bar = 1
// events, then of all events; sites without an inexact event are left out.

struct ledger_row {
  at::site s;
  const at::site_stats *st;
};

// The ledger of the unstabilized paper:autocast row of the bias section: the same as
// bf16emu attention --policy paper:autocast over those heads (run_attention's per-head ledgers,
// merged in head order).
const at::ledger &ledger_of_heads() {
  for (const heads_row &x : heads_rows())
    if (!x.stabilized && std::string_view(x.policy) == ledger_policy) return x.res.led;
  throw std::logic_error("paper: no ledger row");
}

std::vector<ledger_row> ledger_rows(const at::ledger &led) {
  std::vector<ledger_row> rows;
  for (int i = 0; i < at::site_count; ++i)
    if (led.sites[i].all.away + led.sites[i].all.toward > 0) rows.push_back({at::site(i), &led.sites[i]});
  // The P-bar = 1 events (the paper's mechanism) first, then the rest, each by |signed error|.
  std::stable_sort(rows.begin(), rows.end(), [](const ledger_row &a, const ledger_row &b) {
    const double pa = std::fabs(a.st->p_one.sum.value()), pb = std::fabs(b.st->p_one.sum.value());
    if (pa != pb) return pa > pb;
    return std::fabs(a.st->all.sum.value()) > std::fabs(b.st->all.sum.value());
  });
  return rows;
}

void ledger_text(std::ostream &out) {
  const at::ledger &r = ledger_of_heads();
  char b[512];
  std::snprintf(
      b, sizeof b,
      "paper:autocast, unstabilized, on the %ld heads above: each rounding site's inexact events,\n"
      "the share that moved the value away from zero, and the signed error filed (all events; and\n"
      "those whose operands involved P-bar = 1 exactly). A site's signed error is a sum of its\n"
      "roundings, not O's error: which site causes O's bias is what `bf16emu ablate` measures.\n"
      "(rescale's large error is the first tile's m_old - m_new = -max(bf16) - m, which BF16 cannot\n"
      "hold; exp of it is 0 either way.)\n",
      heads_h);
  out << b;
  std::snprintf(b, sizeof b, "  %-12s %12s %7s %14s %12s %14s\n", "site", "inexact", "away", "signed error",
                "P-bar = 1", "signed (P=1)");
  out << b;
  for (const ledger_row &x : ledger_rows(r)) {
    const at::sign_counts &a = x.st->all, &p = x.st->p_one;
    const std::uint64_t moved = a.away + a.toward;
    std::snprintf(b, sizeof b, "  %-12s %12llu %6.1f%% %+14.6e %12llu %+14.6e\n", at::to_string(x.s),
                  (unsigned long long)moved, 100.0 * double(a.away) / double(moved), a.sum.value(),
                  (unsigned long long)(p.away + p.toward), p.sum.value());
    out << b;
  }
  std::snprintf(
      b, sizeof b,
      "(the same: bf16emu attention --scenario sink --multiplicity 8 --strength 10 --n %ld --heads %ld\n"
      " --policy paper:autocast; the full ledger with --json)\n",
      heads_n, heads_h);
  out << b;
}

void ledger_json(io::json_writer &w) {
  const at::ledger &r = ledger_of_heads();
  w.begin_object();
  w.kv("policy", "paper:autocast").kv("variant", "fa2").kv("heads", std::int64_t(heads_h));
  w.kv("n", std::int64_t(heads_n)).kv("d", std::int64_t(heads_d));
  w.key("sites").begin_array();
  for (const ledger_row &x : ledger_rows(r)) {
    const at::sign_counts &a = x.st->all, &p = x.st->p_one;
    w.begin_object();
    w.kv("site", at::to_string(x.s)).kv("inexact", a.away + a.toward).kv("away", a.away);
    w.kv("signed_error", a.sum.value())
        .kv("p_one_inexact", p.away + p.toward)
        .kv("p_one_signed_error", p.sum.value());
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

BF16EMU_PAPER_SECTION(6, "attention_ledger", "Attention error ledger (where the roundings go)", ledger_text,
                      ledger_json);

std::vector<io::paper_section> sorted_sections() {
  auto s = io::paper_sections();
  std::stable_sort(s.begin(), s.end(), [](const auto &x, const auto &y) { return x.order < y.order; });
  return s;
}

void run(bool json) {
  io::rethrow_as<bad_input>([&] {
    if (json) {
      io::json_writer w(std::cout);
      w.begin_object();
      w.kv("paper", "Qiu & Yao, arXiv 2510.04212");
      for (const auto &c : cases) {
        w.key(c.key);
        io::print_json(w, run_case(c), true);
      }
      // ---- Further sections (attention ledger, ...): registered with BF16EMU_PAPER_SECTION ----
      for (const auto &s : sorted_sections()) {
        w.key(s.key);
        s.json(w);
      }
      w.end_object();
      return;
    }
    std::cout << "bf16emu paper: the worked example of Qiu & Yao, arXiv 2510.04212\n\n";
    std::vector<io::arith_report> reports;
    for (const auto &c : cases) {
      std::cout << c.story << "\n\n$ bf16emu add " << c.a << " " << c.b << " --to bf16 --trace\n";
      reports.push_back(run_case(c));
      io::print_text(std::cout, reports.back(), true);
      std::cout << "\n";
    }
    std::cout << "Summary\n";
    for (std::size_t i = 0; i < reports.size(); ++i)
      summary_line(std::cout, cases[i].key, reports[i]);

    // ==== ATTENTION LEDGER SUMMARY ====================================================
    // The attention area adds its ledger summary here without editing this file:
    // BF16EMU_PAPER_SECTION(order, "attention_ledger", "Attention error ledger", text_fn, json_fn)
    // in its own .cpp (see src/io/paper_sections.hpp). Every registered section is
    // printed below, in order, in both text and --json output.
    // ===================================================================================
    for (const auto &s : sorted_sections()) {
      std::cout << "\n" << s.title << "\n";
      s.text(std::cout);
    }
  });
}

void register_paper(CLI::App &app) {
  auto json = std::make_shared<bool>(false);
  CLI::App *sub =
      app.add_subcommand("paper", "the paper's worked example (Qiu & Yao, arXiv 2510.04212), fully traced");
  sub->add_flag("--json", *json, "machine-readable output");
  sub->footer("The same trace as: bf16emu add -2.4071154594421387 -2.296875 --to bf16 --trace");
  sub->callback([json] { run(*json); });
}

} // namespace

BF16EMU_COMMAND(1, register_paper);

} // namespace bf16emu::cli
