// bf16emu bias: statistical bias of accumulations (docs/bias.md).
//   wide.hpp        exact fixed-point accumulators (reference sums, exact statistics)
//   rng.hpp         counter-based random numbers (thread- and shard-independent)
//   generate.hpp    addend generators and their knobs
//   accumulate.hpp  accumulation methods and one trial's signed error
//   stats.hpp       exactly mergeable sufficient statistics and their summary
//   sweep.hpp       configurations, threaded and sharded runs
//   search.hpp      adversarial search for large errors
#pragma once

#include "bf16emu/bias/accumulate.hpp"
#include "bf16emu/bias/generate.hpp"
#include "bf16emu/bias/rng.hpp"
#include "bf16emu/bias/search.hpp"
#include "bf16emu/bias/stats.hpp"
#include "bf16emu/bias/sweep.hpp"
#include "bf16emu/bias/wide.hpp"
