// bf16emu attention: reference attention under exact / fp32 / paper / fa2 arithmetic, with
// an error ledger per rounding site. See docs/attention.md.
#pragma once

#include "bf16emu/attention/arith.hpp"
#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/backward_fa2.hpp"
#include "bf16emu/attention/exp2_poly.hpp"
#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/attention/rules.hpp"
#include "bf16emu/attention/run.hpp"
#include "bf16emu/attention/scenario.hpp"
#include "bf16emu/attention/tc_adapter.hpp"
