// bf16emu io: the CPU BF16 instruction models (include/bf16emu/cpu) as `mma --list-arch` and
// `cpu-probe --list` print them.
#pragma once

#include "io/json.hpp"

namespace bf16emu::io {

// One line per model: name, k (2n: any even k), ISA, what one lane computes.
void print_cpu_models();
// One JSON object per model (inside an array the caller opened).
void write_cpu_models(json_writer &w);

} // namespace bf16emu::io
