// bf16emu CLI: add, sub, mul, fma, div, sqrt, convert on single values, with the full
// rounding trace. The work is done by io/arith_report (shared with `bf16emu paper`).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "io/arith_report.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"

namespace bf16emu::cli {

namespace {

struct arith_cli {
  std::vector<std::string> operands;
  std::string format = "fp32", to, round = "nearest_even", tininess = "after", nan = "ieee", random = "0",
              sr_bits;
  bool ftz = false, daz = false, saturate = false, trace = false, json = false;
};

io::arith_request make_request(const arith_cli &o, op_kind op) {
  io::arith_request rq;
  rq.op = op;
  const io::named_format from = io::parse_format_spec(o.format);
  if (!from.id)
    throw io::input_error("--format " + from.name +
                          ": operands in a run-time format are not supported yet (give it as --to: the "
                          "result is rounded into it)");
  rq.format = *from.id;
  if (!o.to.empty()) {
    // A compile-time format, or one named at run time (e4m3fnuz, p3109:p4, fp:e=..,m=..).
    io::named_format to = io::parse_format_spec(o.to);
    if (to.id)
      rq.to = *to.id;
    else
      rq.to_runtime = to;
  } else if (op == op_kind::convert)
    throw io::input_error("convert needs --to FORMAT (the destination format)");
  const io::rounding rounding = io::parse_rounding(o.round);
  rq.e.mode = rounding.mode;
  rq.e.sr_bits = std::uint8_t(rounding.sr_bits);
  if (!o.sr_bits.empty()) {
    if (rq.e.mode != round_mode::stochastic_k)
      throw io::input_error("--sr-bits applies to --round stochastic_k (sr_k) only, not to '" + o.round +
                            "'");
    rq.e.sr_bits = std::uint8_t(io::parse_sr_bits(o.sr_bits));
  }
  rq.e.tiny = io::parse_tininess(o.tininess);
  rq.e.nan = io::parse_nan_policy(o.nan);
  rq.e.subnormal = subnormals((o.ftz ? unsigned(subnormals::flush_outputs) : 0u) |
                              (o.daz ? unsigned(subnormals::inputs_as_zero) : 0u));
  rq.e.saturate = o.saturate;
  rq.e.random = std::uint32_t(io::parse_uint(o.random, 0xFFFFFFFFu, "--random"));
  for (const auto &t : o.operands)
    rq.operands.push_back(io::parse_operand(t, rq.format));
  return rq;
}

void run(const arith_cli &o, op_kind op) {
  io::rethrow_as<bad_input>([&] {
    io::arith_report r = io::run_arith(make_request(o, op));
    if (o.json) {
      io::json_writer w(std::cout);
      io::print_json(w, r, o.trace);
    } else {
      io::print_text(std::cout, r, o.trace);
    }
  });
}

const char *operand_help =
    "Operands: decimal (-2.4071154594421387), C hex-float (-0x1.34p+1), a bit pattern of "
    "the operand format (0xC01A0E2E for fp32, 0xC097 for bf16), inf, nan, snan. Decimal "
    "and hex-float are rounded once, to nearest even, into --format.";

void add_op(CLI::App &app, op_kind op, const char *name, const char *what, const char *example) {
  auto o = std::make_shared<arith_cli>();
  const int n = io::arity(op);
  CLI::App *sub = app.add_subcommand(name, what);
  // Any count is collected; run_arith checks it and names the extra or missing operands.
  // "--operand=X" is the same list: main() passes negative numbers (-inf, -.5) and everything
  // after "--" that way, so that CLI11 does not read them as options.
  sub->add_option("operands,--operand", o->operands,
                  (n == 1 ? std::string("the operand") : "the operands (" + std::to_string(n) + ")") +
                      "; negative numbers (-inf, -.5) and anything after -- are operands too")
      ->required()
      ->expected(-1);
  sub->add_option("-f,--format", o->format, "operand format: " + io::format_names() + " (default fp32)");
  sub->add_option("-t,--to", o->to,
                  std::string(op == op_kind::convert
                                  ? "destination format (required)"
                                  : "round the result into this format too (a second rounding "
                                    "step)") +
                      "; also a run-time format: " + io::runtime_format_names());
  sub->add_option("-r,--round,--rounding", o->round, "rounding mode: " + io::mode_names());
  sub->add_option("--tininess", o->tininess, "underflow tininess: before or after rounding (default after)");
  sub->add_option("--nan", o->nan, "NaN results: ieee (propagate, quiet), cuda (all ones), pytorch (+qNaN)");
  sub->add_flag("--ftz", o->ftz, "flush tiny results to zero");
  sub->add_flag("--daz", o->daz, "read subnormal operands as zero");
  sub->add_flag("--saturate", o->saturate, "overflow gives the largest finite value");
  sub->add_option(
      "--random", o->random,
      "random bits for the stochastic modes (32-bit, decimal or 0x hex; stochastic_k reads the low "
      "--sr-bits of them)");
  sub->add_option("--sr-bits", o->sr_bits,
                  "K, the random bits of --round stochastic_k (1..32, default 32; also --round sr_k:K)");
  sub->add_flag("--trace", o->trace,
                "show guard/round/sticky, kept significand, decision and error of every rounding");
  sub->add_flag("--json", o->json, "machine-readable output");
  sub->footer(std::string(operand_help) + "\n\nExample:\n  " + example);
  sub->callback([o, op] { run(*o, op); });
}

void register_arith(CLI::App &app) {
  add_op(app, op_kind::add, "add", "a + b, rounded once (then into --to if given)",
         "bf16emu add -2.4071154594421387 -2.296875 --to bf16 --trace   (the paper's case)\n"
         "  bf16emu add 1 2 --to p3109:p4 --round sr_k --sr-bits 3 --random 5 --trace\n"
         "  bf16emu add 1 0.1 --to e4m3fnuz --round nearest_zero --trace");
  add_op(app, op_kind::sub, "sub", "a - b, rounded once", "bf16emu sub 1 0x1p-30 --round to_odd --trace");
  add_op(app, op_kind::mul, "mul", "a * b, rounded once", "bf16emu mul 3 0.1 --format bf16 --trace");
  add_op(app, op_kind::fma, "fma", "a * b + c with a single rounding",
         "bf16emu fma 0x3F800001 0x3F800001 -1 --trace");
  add_op(app, op_kind::div, "div", "a / b, rounded once",
         "bf16emu div 1 3 --format fp16 --round upward --trace");
  add_op(app, op_kind::sqrt, "sqrt", "square root, rounded once", "bf16emu sqrt 2 --format bf16 --trace");
  add_op(app, op_kind::convert, "convert", "round a value of --format into --to",
         "bf16emu convert 0.1 --format fp64 --to bf16 --trace\n"
         "  bf16emu convert 300 --to fp:e=4,m=3,bias=8,enc=fnuz --saturate --trace");
}

} // namespace

BF16EMU_COMMAND(10, register_arith);

} // namespace bf16emu::cli
