// bf16emu tensor-core model (umbrella): block fused dot-product-add, presets per NVIDIA
// generation, dot / mma / gemm references, the block-scaled kinds, and the AMD CDNA MFMA
// models. docs/tensor-cores.md describes the model.
#pragma once

#include "bf16emu/tc/amd.hpp"
#include "bf16emu/tc/block.hpp"
#include "bf16emu/tc/mma.hpp"
#include "bf16emu/tc/presets.hpp"
#include "bf16emu/tc/scaled.hpp"
