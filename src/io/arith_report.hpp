// bf16emu io: one arithmetic request run through the core with full tracing, and its
// report as text or JSON. `bf16emu add/sub/mul/fma/div/sqrt/convert` and `bf16emu paper`
// both use this, so the paper case prints exactly what the CLI prints.
//
//   io::arith_request rq;
//   rq.op = op_kind::add;  rq.format = format_id::fp32;  rq.to = format_id::bf16;
//   rq.operands = {parse_operand("-2.4071154594421387", format_id::fp32),
//                  parse_operand("-2.296875", format_id::fp32)};
//   io::arith_report r = io::run_arith(rq);
//   io::print_text(std::cout, r, /*trace=*/true);
//
// Step 1 is the operation in the operand format (op_kind::convert for convert, which rounds
// straight into `to`); step 2, when `to` is given for an arithmetic op, rounds the result
// into `to` (a second rounding, as when an FP32 sum is stored as BF16).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <bf16emu/core/env.hpp>
#include <bf16emu/core/format.hpp>

#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"

namespace bf16emu::io {

struct arith_request {
  op_kind op = op_kind::add;
  format_id format = format_id::fp32;
  std::optional<format_id> to;
  // A destination named at run time (issue 44: e4m3fnuz, p3109:p4, fp:e=..,m=..): when set it is
  // the destination and `to` is ignored. The rounding is core/spec.hpp's convert, the trace the same.
  std::optional<named_format> to_runtime;
  env e{};
  std::vector<operand> operands;
};

struct arith_step {
  op_kind op = op_kind::add;
  format_id from = format_id::fp32;
  named_format to = named(format_id::fp32);
  std::uint64_t input_bits = 0; // for a conversion step: the value being converted
  std::uint64_t bits = 0;       // result
  std::uint8_t flags = 0;
  std::vector<rounding_event> events; // empty when no finite rounding happened (NaN, Inf, exact 0)
};

struct arith_report {
  arith_request request;
  std::vector<arith_step> steps;
  named_format result_format = named(format_id::fp32);
  std::uint64_t result_bits = 0;
  std::uint8_t flags = 0; // OR of all steps
};

// Operand count: 1 (sqrt, convert), 2, or 3 (fma).
int arity(op_kind op) noexcept;

// Throws input_error for a wrong operand count or an arithmetic op in a format the core
// does not do arithmetic in (fp64: conversion source only).
arith_report run_arith(const arith_request &rq);

// Human-readable report; with trace, every rounding step shows the exact value, the kept
// significand, guard/round/sticky, the decision and the exact error.
void print_text(std::ostream &out, const arith_report &r, bool trace);
// The same as a JSON object (written as one value into w).
void print_json(json_writer &w, const arith_report &r, bool trace);

// The trace lines of one rounding event (used by print_text; indented by `indent`).
void print_event(std::ostream &out, const rounding_event &ev, const named_format &to, const char *indent);
void write_event_json(json_writer &w, const rounding_event &ev, const named_format &to);

// The error err_hi + err_lo as an exact decimal ("0" for an exact rounding).
std::string exact_error_text(const rounding_event &ev);

// "up: magnitude rounded up by one unit in the last place" etc.
const char *explain(decision d) noexcept;

} // namespace bf16emu::io
