// bf16emu core: bit-exact soft-float for binary32, bfloat16, binary16, fp8 e4m3/e5m2.
// See docs/api.md for the API and docs/semantics.md for the arithmetic contract.
#pragma once

#include "bf16emu/core/arith.hpp"
#include "bf16emu/core/bulk.hpp"
#include "bf16emu/core/compare.hpp"
#include "bf16emu/core/config.hpp"
#include "bf16emu/core/cvt_options.hpp"
#include "bf16emu/core/env.hpp"
#include "bf16emu/core/format.hpp"
#include "bf16emu/core/scale.hpp"
#include "bf16emu/core/spec.hpp"
