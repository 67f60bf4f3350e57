// bf16emu CUDA twin: the table of tensor-core probe kernels that `bf16emu-gpu probe` issues, the
// option lookup that picks one (the option names of `bf16emu mma`), and the host model preset of
// each. Plain C++: --list and option validation run without a GPU.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "bf16emu/tc/presets.hpp"
#include "bf16emu/tc/scaled.hpp"
#include "kernels.hpp"
#include "vectors.hpp"

namespace bf16emu::gpu {

// One probe kernel (cuda/probe_kernels.cu): the instruction it issues and where it runs.
struct probe_kernel {
  const char *name;     // default --name stem, e.g. "mma_e4m3xe5m2_fp32"
  tc::instr_kind kind;  // mma or wgmma
  const char *opt_kind; // the --kind value that selects it: "" or "f8f6f4"
  format_id a, b, out;  // A, B, C and D formats
  int k;                // the instruction's k
  const char *ptx;      // the instruction the kernel issues (the preset's, with N = 64 for wgmma)
  int cc_min, cc_max;   // compute capabilities (major*10+minor) whose code the build carries
  bool p16;             // run by run_probe16 (64-bit operands) rather than run_probe
  bool scaled;          // host model: tc::scaled_presets (kind::f8f6f4, unscaled) rather than tc::presets
  instr op;             // run_probe: mma.sync or wgmma
  in_type ta, tb;       // run_probe: A and B types
  out_type to;          // run_probe: C/D type
  probe16_op op16;      // run_probe16: the op
  // run_mma (the second issue-16 batch, kernels.hpp mma_family; A and B elements from a and b);
  // none: run_probe / run_probe16.
  mma_family fam = mma_family::none;
  scaled_op sop = scaled_op::none; // block-scaled kernels (run_probe_scaled, scale factors on each line)
  int cc_also = 0;                 // one more compute capability outside [cc_min, cc_max] that runs it
  std::optional<format_id> c = std::nullopt; // C's format where it differs from D's (m8n8k4 C/D mix)
};
// Whether a device of compute capability cc (major*10+minor) has the kernel's code, and that set
// as text ("cc 8.0+", "cc 9.0", "cc 8.9, 12.0").
bool kernel_runs_on(const probe_kernel &p, int cc);
std::string kernel_ccs(const probe_kernel &p);
// The instruction k the kernel code issues (instr_k, probe16_instr_k or mma_family_k).
int kernel_instr_k(const probe_kernel &p);

// Every probe kernel, in the order --list prints them (and --shape-k 0 takes the first match).
const std::vector<probe_kernel> &probe_kernels();
// A block-scaled kernel's scale-factor format and k-elements per factor (none and 0 for the others).
tc::scale_kind kernel_scale(const probe_kernel &p);
int kernel_vec(const probe_kernel &p);

// What the options ask for (empty strings: not given).
struct probe_request {
  std::string name; // --kernel: a kernel of the table by name (no other kernel option then)
  std::string instr, kind, a, b, c, out, scale_format;
  unsigned scale_vec = 0;
  int shape_k = 0;
};
// The options that name kernel p (its formats, kind and k as shape_k).
probe_request kernel_request(const probe_kernel &p);
// The kernel the request names; nullptr and a one-line reason in `why` when none does (bad
// format names, combinations no kernel issues, the compile-only block-scaled kinds).
const probe_kernel *find_probe_kernel(const probe_request &r, std::string &why);

// Whether the device (cc_major.cc_minor) can run the kernel with K values per line.
bool kernel_supported(const probe_kernel &p, int K, int cc_major, int cc_minor);
// The host model: the library's preset for the kernel's instruction on `arch`, from tc::presets
// (tc::preset_dot) or, for tcgen05 kind::f8f6f4, tc::scaled_presets (tc::scaled_dot without
// scales); empty (and a message in `why`) when the model has none.
struct kernel_model {
  const tc::preset *block = nullptr;
  const tc::scaled_preset *scaled = nullptr;
  explicit operator bool() const noexcept { return block || scaled; }
  const char *ptx() const noexcept { return block ? block->ptx : scaled ? scaled->ptx : ""; }
};
kernel_model kernel_preset(const probe_kernel &p, tc::arch arch, std::string &why);
// D of every line of v on the model; the model's trace of one line ('#' lines).
void model_kernel_lines(const kernel_model &m, const vec_set &v, std::vector<std::uint64_t> &d,
                        int threads = 0);
void trace_kernel_line(std::ostream &os, const kernel_model &m, const vec_set &v, std::size_t line);
// A vec_set header for the kernel's formats, K values per line.
vec_set kernel_vectors(const probe_kernel &p, int K);
// Runs the kernel on every line of v; d receives D (right-aligned bits). Returns a cudaError_t
// value (0 on success).
int run_kernel(const probe_kernel &p, const vec_set &v, std::vector<std::uint64_t> &d);

// "e4m3" or "e4m3xe5m2" (A x B, as `bf16emu mma --list-arch` prints them).
std::string in_column(const probe_kernel &p);

// The `#!` header line of a .vec of kernel p with K values per line (`bf16emu-gpu probe --save`):
//   #! arch=A instr=I in=F out=F k=K [b=F] [c=F] [kind=KIND] [scale=ue8m0|ue4m3 vec=32|16] [shape_k=N]
// b= (B's format), c= (C's), kind= and shape_k= only where they differ from the defaults (B in A's
// format, C in D's, no kind, the first kernel of these formats); scale= and vec= for the block-scaled kernels
// (their lines carry k/vec scale factors of A and of B). parse_probe_header reads it back.
std::string probe_header(const probe_kernel &p, const std::string &arch, int K);
// A header's text (after "#!"): the arch, K and the request that selects the kernel (whose
// selection find_probe_kernel then makes, as the runner's options do). False and a one-line reason
// naming the bad key or value for an unknown key, a missing one, or a value no parser takes.
struct probe_header_fields {
  tc::arch arch{};
  int k = 0;
  probe_request request;
};
bool parse_probe_header(const std::string &text, probe_header_fields &h, std::string &why);

} // namespace bf16emu::gpu
