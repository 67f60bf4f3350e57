// bf16emu I/O ring: the environment switches of the fast paths, read once by a front end (the
// CLI's main, the Python module's init) before any thread starts. Both fast paths give the
// same bits as the paths they replace; the switches exist for timing comparisons.
//   BF16EMU_TC_LANES=0  the tensor-core model keeps its own chains (no lane-parallel kernel)
//   BF16EMU_HW_F32=0    attention's FP32 operations stay on the core's soft-float (and its FP32
//                       dot products are not run as SIMD FMA chains)
#pragma once

#include <cstdlib>
#include <cstring>

#include "bf16emu/attention/arith.hpp"
#if defined(BF16EMU_HAVE_TC_LANES)
#include "tc_lanes/tc_lanes.hpp"
#endif

namespace bf16emu::io {

// False when the variable `name` is set to "0".
inline bool switched_on(const char *name) {
  const char *v = std::getenv(name);
  return !v || std::strcmp(v, "0") != 0;
}

inline void install_fast_paths() {
#if defined(BF16EMU_HAVE_TC_LANES)
  if (switched_on("BF16EMU_TC_LANES")) bf16emu::tc_lanes::install();
#endif
  const bool hw = switched_on("BF16EMU_HW_F32");
  attention::hw_f32::enabled.store(hw);
#if defined(BF16EMU_HAVE_TC_LANES)
  if (hw) bf16emu::tc_lanes::install_fma_cols();
#endif
}

} // namespace bf16emu::io
