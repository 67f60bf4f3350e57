// bf16emu io: naming the tensor-core presets and explaining a combination that has none, once
// for every front end (the CLI's mma, the Python module's gemm/mma, the CUDA runner's model).
#pragma once

#include <string>

#include <bf16emu/tc/presets.hpp>

#include "io/front_end.hpp"

namespace bf16emu::io {

// "sm70 sm75 ... sm120" + sep + "volta turing ... rtx-blackwell": the NVIDIA names --arch and
// arch= take.
std::string arch_names(const char *sep);

// "e4m3" or, when B differs, "e4m3xe5m2"; "fp32" or, when C differs, "fp32<fp16" (C's format).
std::string in_column(const tc::preset &p);
std::string out_column(const tc::preset &p);

// A combination asked for: arch, instruction, formats (c_given: C's format given apart from D's),
// the k of the shape (0: the preset's).
struct preset_request {
  tc::arch arch;
  tc::instr_kind instr;
  format_id a, b, c, out;
  bool c_given = false;
  int shape_k = 0;
};

// The bad-input message for a combination without a preset: what works instead, written as the
// options of `fe` that differ (--instr mma --out fp16; kind='mma', c_format='fp16'), then the
// arch's presets.
std::string no_preset_message(const preset_request &r, front_end fe);

} // namespace bf16emu::io
