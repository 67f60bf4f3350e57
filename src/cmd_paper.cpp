// bf16emu CLI: `bf16emu paper` -- the worked example of Qiu & Yao (arXiv 2510.04212), traced
// step by step with the same code as `bf16emu add ... --to bf16 --trace`.
//
// An FP32 running sum -2.4071154594421387 (0xC01A0E2E) receives -2.296875. The FP32 sum
// 0xC0968717 = -4.703990459442139 is exact; storing it in BF16 with round-to-nearest-even
// sees guard 1 and sticky 1 and rounds the magnitude up to -4.71875 (0xC097): an error of
// -0.014759540557861328125. With -2.40625 instead the sum -4.703125 is a tie and rounds to
// the even neighbour -4.6875.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "io/arith_report.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/paper_sections.hpp"
#include "io/print.hpp"

namespace bf16emu::cli {

namespace {

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
