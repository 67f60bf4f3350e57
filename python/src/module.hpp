// bf16emu Python module: shared pieces of the bindings (the per-call environment read from the
// Python keyword arguments, small helpers) and the binders of each area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bf16emu/core/env.hpp>
#include <bf16emu/parallel.hpp>

namespace bf16emu::py {

// The rounding settings of one call: env plus the stochastic-rounding key (from the seed),
// the element index whose random bits a single-element trace uses, and the thread count.
struct call_env {
  env e{};
  std::uint64_t key = 0;
  std::size_t index = 0;
  unsigned threads = 0;
};

// Reads rounding, tininess, nan (names, parsed by io::parse_mode / parse_tininess /
// parse_nan_policy), ftz, daz, saturate (bools), seed, index, threads (ints) from opts.
// An unknown name is a ValueError naming the argument.
call_env make_env(const pybind11::dict &opts);

// "add", "sub", "mul", "div", "fma", "sqrt", "convert" -> op_kind (ValueError otherwise).
op_kind parse_op(const std::string &name);

// The one check of bit patterns (convert's, and every function's through bf16emu.to_bits): the
// storage width of format f, C-contiguous, and no bit above the pattern width (tf32 in 32-bit
// storage, the fp6/fp4 formats in a byte). TypeError / ValueError naming `name`, the element
// index and the format.
void check_bits(const pybind11::array &a, format_id f, const char *name);

std::string shape_text(const pybind11::array &a); // "(2, 3)"
std::string hex(std::uint64_t v);                 // upper-case hex digits, no prefix

// Ctrl-C in a long call: a parallel_for progress callback (made in the calling thread, with the
// GIL held, before it is released). At most every 50 ms, and only in the thread that made it
// (parallel_for's worker 0 is the calling thread), it takes the GIL and runs Python's signal
// handlers; a KeyboardInterrupt, or any exception a handler raises, is thrown as
// error_already_set, which stops the loop (parallel_for rethrows it) and raises it in Python.
progress_fn signal_checker();

void bind_elementwise(pybind11::module_ &m);
void bind_formats(pybind11::module_ &m);
void bind_tc(pybind11::module_ &m);
void bind_attention(pybind11::module_ &m);

} // namespace bf16emu::py
