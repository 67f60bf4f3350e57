// bf16emu CLI: the attention scenarios' options. See scenario_options.hpp.
#include "scenario_options.hpp"

#include <sstream>

#include "command.hpp"
#include "io/files.hpp"

namespace bf16emu::cli {

namespace {

template <class T> std::string with_default(const char *what, T value) {
  std::ostringstream s;
  s << "sink: " << what << " (default " << value << ")";
  return s.str();
}

bool in_unit(double x) {
  return x >= 0 && x <= 1;
} // false for NaN (the app refuses non-finite numbers before this)

} // namespace

void add_sink_options(CLI::App *app, attention::sink_params &p) {
  app->add_option("--tie-share", p.tie_share, with_default("share of rows whose max repeats", p.tie_share));
  app->add_option("--multiplicity", p.multiplicity,
                  with_default("copies of the repeated key", p.multiplicity));
  app->add_option("--v-skew", p.v_skew, with_default("P(negative) in skewed V columns", p.v_skew));
  app->add_option("--skew-cols", p.skew_cols, with_default("share of skewed V columns", p.skew_cols));
  app->add_option("--strength", p.strength, with_default("score gap of the repeated key", p.strength));
  app->add_option("--do-bias", p.do_bias, with_default("added to dO in the skewed columns", p.do_bias));
}

void check_scenario(const std::string &scenario, const attention::sink_params &p) {
  if (scenario != "random" && scenario != "sink")
    throw bad_input("unknown --scenario '" + io::shorten(scenario) + "' (random, sink)");
  if (p.multiplicity < 0 || !in_unit(p.tie_share) || !in_unit(p.v_skew) || !in_unit(p.skew_cols))
    throw bad_input("sink knobs: --tie-share, --v-skew, --skew-cols in [0, 1], --multiplicity >= 0");
}

attention::attention_inputs make_scenario(const std::string &scenario, long batch, long heads, long n, long d,
                                          std::uint64_t seed, const attention::sink_params &p) {
  check_scenario(scenario, p);
  if (scenario == "random") return attention::scenario_random(batch, heads, n, d, seed);
  return attention::scenario_sink(batch, heads, n, d, seed, p);
}

} // namespace bf16emu::cli
