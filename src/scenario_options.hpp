// bf16emu CLI: the attention scenarios (random, sink) as `bf16emu attention` and `bf16emu ablate`
// read them: the sink knobs' options, with each command's own defaults in their help, and one
// check of the scenario's name and knobs before anything is sized or drawn.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "bf16emu/attention/scenario.hpp"

namespace bf16emu::cli {

// --tie-share, --multiplicity, --v-skew, --skew-cols, --strength, --do-bias into `p`; the help
// gives p's values at the call as the defaults.
void add_sink_options(CLI::App *app, attention::sink_params &p);

// Throws bad_input for an unknown --scenario, or for sink knobs out of range, naming them. The knobs
// are checked whatever the scenario (a knob out of range is a mistake even where it is not read),
// as `ablate` always did.
void check_scenario(const std::string &scenario, const attention::sink_params &p);

// The inputs of a checked scenario.
attention::attention_inputs make_scenario(const std::string &scenario, long batch, long heads, long n, long d,
                                          std::uint64_t seed, const attention::sink_params &p);

} // namespace bf16emu::cli
