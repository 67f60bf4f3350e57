// bf16emu pitfalls: low-precision failures next to the FlashAttention bias, each a small exact
// tool on top of the core and the reference attention. See docs/pitfalls.md.
//   positions.hpp  position ids / RoPE / ALiBi built in BF16 or FP16
//   compare.hpp    normwise error in BF16 epsilon, ULP distance, bit fingerprints
//   blockwise.hpp  the backward as a sum over block pairs, its order a parameter
//   cp.hpp         context parallelism: merging per-chunk (O, LSE)
//   bwd_order.hpp  deterministic backward: fixed orders, reproducibility, differences
#pragma once

#include "bf16emu/pitfalls/blockwise.hpp"
#include "bf16emu/pitfalls/bwd_order.hpp"
#include "bf16emu/pitfalls/compare.hpp"
#include "bf16emu/pitfalls/cp.hpp"
#include "bf16emu/pitfalls/positions.hpp"
