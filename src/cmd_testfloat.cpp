// bf16emu CLI: `bf16emu testfloat FUNCTION` -- run Berkeley TestFloat 3 test cases.
//
//   testfloat_gen -rmin f32_add | bf16emu testfloat -rmin f32_add | testfloat_ver -rmin f32_add
//   testfloat_gen f32_mulAdd | bf16emu testfloat f32_mulAdd --check
//
// Each stdin line is "operands result flags" in hex (io/testfloat.hpp). By default the
// line is written back with bf16emu's result and flags, which testfloat_ver then checks.
// With --check each line's expected result and flags are compared here instead (NaN
// results match any NaN, as testfloat_ver without -checkNaNs), mismatches are listed, and
// the last line is "N passed, M failed"; exit status 1 when anything failed.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/print.hpp"
#include "io/testfloat.hpp"

namespace bf16emu::cli {

namespace {

namespace tf = bf16emu::testfloat;

struct testfloat_cli {
  std::string function;
  bool check = false;
  std::size_t max_report = 20;
};

int run(const testfloat_cli &o, const std::vector<std::string> &extras) {
  env e; // TestFloat defaults: round to nearest even, tininess after rounding
  for (const auto &x : extras) {
    if (tf::rounding_option(x, e.mode)) continue;
    if (x == "-tininessbefore")
      e.tiny = tininess::before_rounding;
    else if (x == "-tininessafter")
      e.tiny = tininess::after_rounding;
    else
      throw bad_input("testfloat: unknown option '" + io::shorten(x) +
                      "' (known: -rnear_even -rminMag -rmin -rmax -rnear_maxMag -rodd -tininessbefore "
                      "-tininessafter --check)");
  }
  const tf::function &f =
      io::rethrow_as<bad_input>([&]() -> const tf::function & { return tf::parse_function(o.function); });
  std::ios_base::sync_with_stdio(false); // millions of lines: no C stdio synchronisation
  std::string text;
  std::size_t line_no = 0, passed = 0, failed = 0;
  io::rethrow_as<bad_input>([] { io::check_stdin("testfloat"); });
  while (io::rethrow_as<bad_input>(
      [&] { return io::read_line(std::cin, text, io::max_testfloat_line, "standard input", line_no + 1); })) {
    ++line_no;
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    tf::line l = io::rethrow_as<bad_input>([&] { return tf::parse_line(text, f, line_no); });
    tf::outcome r = tf::evaluate(f, l.ops, e);
    tf::line mine = l;
    mine.result = r.bits;
    mine.flags = tf::from_bf16emu_flags(r.flags);
    if (!o.check) {
      std::cout << tf::format_line(f, mine) << '\n';
      continue;
    }
    if (tf::same_result(f, l.result, mine.result) && l.flags == mine.flags) {
      ++passed;
    } else {
      if (failed < o.max_report)
        std::cout << "line " << line_no << ": expected " << tf::format_line(f, l) << "\n"
                  << "line " << line_no << ": got      " << tf::format_line(f, mine) << "\n";
      ++failed;
    }
  }
  if (o.check) {
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return failed ? 1 : 0;
  }
  return 0;
}

void register_testfloat(CLI::App &app) {
  auto o = std::make_shared<testfloat_cli>();
  CLI::App *sub =
      app.add_subcommand("testfloat", "run Berkeley TestFloat 3 lines (testfloat_gen output) from stdin");
  sub->add_option("function", o->function, "TestFloat function: " + tf::function_names())->required();
  sub->add_flag("--check", o->check,
                "compare with each line's expected result and flags; end with 'N passed, M failed'");
  sub->allow_extras();
  sub->footer(
      "TestFloat options (as testfloat_gen/testfloat_ver spell them): -rnear_even (default) -rminMag -rmin "
      "-rmax -rnear_maxMag -rodd, -tininessbefore, -tininessafter (default).\n"
      "Flags are two hex digits: inexact 01, underflow 02, overflow 04, infinite 08, invalid 10.\n\n"
      "Examples:\n"
      "  testfloat_gen -rmin f32_add | bf16emu testfloat -rmin f32_add | testfloat_ver -rmin f32_add\n"
      "  testfloat_gen f32_to_bf16 | bf16emu testfloat f32_to_bf16 --check");
  sub->callback([o, sub] {
    // main() maps std::runtime_error to exit status 1 (bad input stays 2).
    if (run(*o, sub->remaining()) != 0) throw std::runtime_error("testfloat --check: some cases failed");
  });
}

} // namespace

BF16EMU_COMMAND(40, register_testfloat);

} // namespace bf16emu::cli
