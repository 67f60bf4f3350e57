// bf16emu CPU models (umbrella): the x86 (AVX512_BF16, AVX-NE-CONVERT, AMX-BF16) and Arm
// (FEAT_BF16, FEAT_EBF16) BF16 instructions on the core soft-float. docs/cpu-bf16.md describes
// them, cites the manuals and lists the open points.
#pragma once

#include "bf16emu/cpu/arm.hpp"
#include "bf16emu/cpu/models.hpp"
#include "bf16emu/cpu/vectors.hpp"
#include "bf16emu/cpu/x86.hpp"
