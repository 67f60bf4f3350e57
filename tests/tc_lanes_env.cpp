// Linked into test programs of the tensor-core model and the attention: with BF16EMU_TC_LANES=1
// in the environment they run on the model's lane-parallel kernel (src/tc_lanes, installed
// before any test starts) instead of the model's own chains, and the attention's FP32 dot products
// on its SIMD FMA chains (fma_cols.cpp), against the same expected values.
#include <cstdlib>
#include <string>

#include "tc_lanes/tc_lanes.hpp"

namespace {
const bool installed = [] {
  const char *v = std::getenv("BF16EMU_TC_LANES");
  if (v && std::string(v) == "1") bf16emu::tc_lanes::install(), bf16emu::tc_lanes::install_fma_cols();
  return true;
}();
} // namespace
