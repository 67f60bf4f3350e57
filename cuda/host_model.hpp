// bf16emu CUDA twin: the CPU side of every comparison, as thin calls into the library
// (tc::dot / tc::gemm with the presets of include/bf16emu/tc/presets.hpp, and
// attention::forward_head with the fa2_twin policy). Nothing here models arithmetic itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "bf16emu/tc/arch.hpp"
#include "bf16emu/tc/presets.hpp"
#include "bf16emu/tc/scaled.hpp"
#include "vectors.hpp"

namespace bf16emu::gpu {

// The preset for (arch, instruction, formats); nullptr (and a message in `why`) if none.
const tc::preset *model_preset(tc::arch arch, bool wgmma, format_id in, format_id out, std::string &why);
// The same for A and B formats that may differ, a C format (c: the m8n8k4 C/D mixes; D's format
// elsewhere) and an instruction k (0: the first listed), as tc::find_preset.
const tc::preset *model_preset(tc::arch arch, tc::instr_kind kind, format_id in, format_id b, format_id c,
                               format_id out, int k, std::string &why);

// D of every line of v (A in v.in, B in v.b_format(), C in v.c_format(), D in v.out) on the preset, by
// tc::preset_dot, in parallel (threads <= 0: all hardware threads). The uint32 form is for the
// formats up to 32 bits.
void model_lines(const vec_set &v, const tc::preset &p, std::vector<std::uint64_t> &d, int threads = 0);
void model_lines(const vec_set &v, const tc::preset &p, std::vector<std::uint32_t> &d, int threads = 0);
// The same on a preset of tc/scaled.hpp (A and B any f8f6f4 formats), by tc::scaled_dot: without
// scale factors (kind::f8f6f4), or with each line's v.sa / v.sb (the block-scaled kinds; v.vec the
// preset's, v.k a multiple of its k).
void model_lines(const vec_set &v, const tc::scaled_preset &p, std::vector<std::uint64_t> &d,
                 int threads = 0);

// The model's block trace of one line, as '#'-prefixed text lines.
void trace_line(std::ostream &os, const vec_set &v, std::size_t line, const tc::preset &p);

// GEMM reference tc::gemm: D[m][n] = sum_k A[m][k] * Bt[n][k] from +0, on the preset of
// (arch, mma, bf16, fp32). Parallel over row slabs.
bool model_gemm(tc::arch arch, int M, int N, int K, const std::uint16_t *A, const std::uint16_t *Bt,
                std::vector<std::uint32_t> &D, std::string &why, int threads = 0);
// The block trace of D[m][n].
void trace_gemm(std::ostream &os, tc::arch arch, int K, const std::uint16_t *arow,
                const std::uint16_t *btrow);

// The CPU twin of the forward kernel: attention::forward_head with attention::fa2_twin() on the
// tensor-core model of `arch` (one with a BF16 preset: sm80, sm86, sm89, sm90, sm100), per head (heads in
// parallel). O as BF16 bits.
struct attention_case {
  int heads = 1, n = 0, d = 64;
  bool causal = false, stabilized = false;
  double beta = 2.0;
  const std::uint16_t *q, *k, *v; // [heads][n][d] BF16 bits
};
bool model_attention(tc::arch arch, const attention_case &c, std::vector<std::uint16_t> &o, std::string &why,
                     int threads = 0);
// The element trace of O[row][col] of head `head` (the reference's trace points).
void trace_attention(std::ostream &os, tc::arch arch, const attention_case &c, int head, int row, int col);
// Softmax constants of the contract: scale = RN32(1/sqrt(d)), c = RN32(scale * log2 e).
float contract_c(int d);

// delta[r] = sum_i dO[r][i] * O[r][i], FP32, one FMA per term in increasing i from +0 (the
// reference backward's delta for fma_contract = true), with the core's soft-float fma.
void model_delta(int rows, int d, const std::uint16_t *o, const std::uint16_t *dout,
                 std::vector<std::uint32_t> &delta);

// The presets' architecture of a compute capability (8.0 sm80, 8.6 and 8.7 sm86, 8.9 sm89,
// 9.0 sm90, 10.0 sm100); nullopt when the model has none.
std::optional<tc::arch> arch_of(int cc_major, int cc_minor);

} // namespace bf16emu::gpu
