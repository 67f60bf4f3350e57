// bf16emu CUDA twin: host interface of the kernels (plain C++, no CUDA types), so that the runner
// and the CPU model are compiled by the host compiler and only the kernels by nvcc.
//
// Every launcher returns 0 on success, otherwise a cudaError_t value (as int); the caller turns
// it into a message with gpu::error_string(). Buffers are host pointers: the launcher copies in,
// runs, synchronises and copies out. `ms`, where present, receives the kernel time measured with
// CUDA events (median of `repeats` launches after one warm-up launch).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bf16emu::gpu {

// ------------------------------------------------------------------------------------------------
// Tensor-core probe: one line of the `bf16emu mma` format = one dot product
//   D = sum_{k<K} A[k]*B[k] + C,
// issued as K/k consecutive instructions in increasing k, each instruction's D feeding the next
// instruction's C. Lines are placed on the diagonal of the instruction's output tile (line j of a
// group uses row j of A, column j of B and C[j][j]); off-diagonal outputs are discarded.
enum class instr : std::uint8_t { mma_sync, wgmma, tcgen05 };
enum class in_type : std::uint8_t { bf16, fp16, tf32, e4m3, e5m2 };
enum class out_type : std::uint8_t { fp32, fp16 };

struct probe_job {
  instr op = instr::mma_sync;
  in_type type = in_type::bf16;   // A
  in_type type_b = in_type::bf16; // B: == type, or the other fp8 format (wgmma e4m3 x e5m2 mixes)
  out_type out = out_type::fp32;
  int k = 16;             // values of A (and of B) per line: a multiple of the instruction's k
  std::size_t lines = 0;  // number of dot products
  const std::uint32_t *a; // lines*k bit patterns, right-aligned (tf32: the 19-bit pattern)
  const std::uint32_t *b; // lines*k
  const std::uint32_t *c; // lines (fp32 bits, or fp16 bits in the low half)
  std::uint32_t *d;       // lines, same encoding as c
};

// The instruction's own k (16 bf16/fp16, 8 tf32, 32 fp8).
int instr_k(in_type t);
// Lines per instruction issue (8 for mma.sync m16n8, 64 for wgmma m64n64, 128 for tcgen05 M128 N128).
int lines_per_issue(instr op);
// Whether the current device can run the job (mma.sync fp8 and wgmma need sm_89 / sm_90a; the
// f16 accumulator takes fp16 inputs, or on wgmma an fp8 mix).
bool supported(const probe_job &job, int cc_major, int cc_minor);
int run_probe(const probe_job &job);

// ------------------------------------------------------------------------------------------------
// Issue-16 probes (docs/tensor-cores.md): the instructions of the mixed-format, m16n8k8 fp16,
// sm120 kind::f8f6f4 and f64 presets, one line per output element laid on the diagonal of an
// m16n8 (or m8n8) tile, 8 lines per warp-level instruction, K/k instructions chained in
// increasing k. Every operand is a right-aligned bit pattern in a 64-bit slot (f64 needs 64).
enum class probe16_op : std::uint8_t {
  e4m3_e5m2,            // mma.sync m16n8k32 .f32.e4m3.e5m2.f32 (sm_89+)
  e5m2_e4m3,            // mma.sync m16n8k32 .f32.e5m2.e4m3.f32 (sm_89+)
  e4m3_e5m2_f16,        // mma.sync m16n8k32 .f16.e4m3.e5m2.f16 (sm_89+)
  e5m2_e4m3_f16,        // mma.sync m16n8k32 .f16.e5m2.e4m3.f16 (sm_89+)
  fp16_k8_f32,          // mma.sync m16n8k8 .f32.f16.f16.f32
  fp16_k8_f16,          // mma.sync m16n8k8 .f16.f16.f16.f16
  f8f6f4_e4m3_e4m3,     // mma.sync m16n8k32 .kind::f8f6f4 .f32.e4m3.e4m3.f32 (sm_120a)
  f8f6f4_e4m3_e5m2,     // ... .f32.e4m3.e5m2.f32 (sm_120a)
  f8f6f4_e5m2_e4m3,     // ... .f32.e5m2.e4m3.f32 (sm_120a)
  f8f6f4_e5m2_e5m2,     // ... .f32.e5m2.e5m2.f32 (sm_120a)
  f8f6f4_e4m3_e4m3_f16, // mma.sync m16n8k32 .kind::f8f6f4 .f16.e4m3.e4m3.f16 (sm_120a)
  f8f6f4_e4m3_e5m2_f16, // ... .f16.e4m3.e5m2.f16 (sm_120a)
  f8f6f4_e5m2_e4m3_f16, // ... .f16.e5m2.e4m3.f16 (sm_120a)
  f8f6f4_e5m2_e5m2_f16, // ... .f16.e5m2.e5m2.f16 (sm_120a)
  f64,                  // mma.sync m8n8k4 .f64.f64.f64.f64 (sm_80+)
};
struct probe16_job {
  probe16_op op = probe16_op::f64;
  int k = 4;              // values of A (and of B) per line: a multiple of the instruction's k
  std::size_t lines = 0;  // number of dot products
  const std::uint64_t *a; // lines*k
  const std::uint64_t *b; // lines*k
  const std::uint64_t *c; // lines (fp32/fp16/f64 bits, right-aligned)
  std::uint64_t *d;       // lines, same encoding as c
};
int probe16_instr_k(probe16_op op);
// Whether this build can run the job on the device (compute capability, and the machine code
// it carries: fp8 mixes need the sm_90a code, kind::f8f6f4 the sm_120a code).
bool probe16_supported(const probe16_job &job, int cc_major, int cc_minor);
int run_probe16(const probe16_job &job);

// ------------------------------------------------------------------------------------------------
// Issue-16 probes, second batch (cuda/mma_probe_kernels.cu): the mma.sync shapes of the NVIDIA
// presets the first probes leave out, one kernel template per shape family, the element formats of
// A and B a template argument: sm120 kind::f8f6f4 with fp6/fp4 operands (m16n8k32), fp8 m16n8k16,
// tf32 m16n8k4, bf16 m16n8k8 and the sm_90 f64 m16n8k8 / m16n8k16. Lines on the diagonal of the
// m16n8 tile as above (8 lines per instruction), operands right-aligned in 64-bit slots.
enum class mma_family : std::uint8_t {
  none,
  f8f6f4_k32, // mma.sync m16n8k32 .kind::f8f6f4, A and B any of e4m3 e5m2 e3m2 e2m3 e2m1 (sm_120a)
  fp8_k16,    // mma.sync m16n8k16, A and B e4m3 / e5m2 (PTX ISA: sm_89+)
  tf32_k4,    // mma.sync m16n8k4 .f32.tf32.tf32.f32 (sm_80+)
  bf16_k8,    // mma.sync m16n8k8 .f32.bf16.bf16.f32 (sm_80+)
  f64_k8,     // mma.sync m16n8k8 .f64 (PTX ISA: sm_90+)
  f64_k16,    // mma.sync m16n8k16 .f64 (PTX ISA: sm_90+)
  m8n8k4,     // mma.sync m8n8k4 .row.col .f16 inputs, C/D both f32 or both f16 (the sm_75 code)
};
// The A x B mixes of the f8f6f4_k32 kernels (every pair with an fp6 or fp4 operand, the sm120
// presets' list) and of fp8_k16; X(A, B) with mma_elem / format_id names.
// clang-format off
#define BF16EMU_F8F6F4_FP6FP4_PAIRS(X) \
  X(e4m3, e3m2) X(e4m3, e2m3) X(e4m3, e2m1) X(e5m2, e3m2) X(e5m2, e2m3) X(e5m2, e2m1) X(e3m2, e4m3) \
  X(e3m2, e5m2) X(e3m2, e3m2) X(e3m2, e2m3) X(e3m2, e2m1) X(e2m3, e4m3) X(e2m3, e5m2) X(e2m3, e3m2) \
  X(e2m3, e2m3) X(e2m3, e2m1) X(e2m1, e4m3) X(e2m1, e5m2) X(e2m1, e3m2) X(e2m1, e2m3) X(e2m1, e2m1)
// clang-format on
#define BF16EMU_FP8_PAIRS(X) X(e4m3, e4m3) X(e4m3, e5m2) X(e5m2, e4m3) X(e5m2, e5m2)
enum class mma_elem : std::uint8_t { e4m3, e5m2, e3m2, e2m3, e2m1, tf32, bf16, f16, f64 };
struct mma_job {
  mma_family fam = mma_family::none;
  mma_elem a = mma_elem::e4m3, b = mma_elem::e4m3;
  bool out16 = false;      // f16 C/D (otherwise f32, or f64 for the f64 families)
  bool c16 = false;        // m8n8k4 only: C f16 with an f32 D (out16 false)
  int k = 0;               // values of A (and of B) per line: a multiple of mma_family_k(fam)
  std::size_t lines = 0;   // number of dot products
  const std::uint64_t *ab; // A: lines*k right-aligned bit patterns (tf32: the 19-bit pattern)
  const std::uint64_t *bb; // B: lines*k
  const std::uint64_t *c;  // lines (fp32/fp16/f64 bits, right-aligned; f16 with c16)
  std::uint64_t *d;        // lines, in D's format
};
int mma_family_k(mma_family f);
// Whether this build carries the family's code for the device (cuda/CMakeLists.txt: sm_80 code
// with compute_80 PTX, sm_90a, sm_100a, sm_120a).
bool mma_supported(const mma_job &job, int cc_major, int cc_minor);
int run_mma(const mma_job &job);
// Block-scaled probes (issue 16; cuda/scaled_probe.cu), f32 out, K/k instructions chained in
// increasing k, each with the line's scale factors of that k-step:
//   op mma_sync: sm_120a mma.sync ... .block_scale, one line per output element on the diagonal of
//     the m16n8 tile (8 lines per instruction). (No kernel for mxf4nvf4 with ue8m0 factors: see
//     scaled_probe.cu.)
//   op tcgen05: sm_100a tcgen05.mma.cta_group::1 ... .block_scale, M128 N128, 128 lines per
//     instruction on the diagonal of D, the scale factors in tensor memory.
//   mxf8f6f4        k32 kind::mxf8f6f4.block_scale.scale_vec::1X, ue8m0 (A, B any f8f6f4 type)
//   mxf4            k64 kind::mxf4.block_scale.scale_vec::2X, e2m1, ue8m0
//   mxf4nvf4_ue4m3  k64 kind::mxf4nvf4.block_scale.scale_vec::4X, e2m1, ue4m3
//   mxf4nvf4_ue8m0  k64 kind::mxf4nvf4.block_scale.scale_vec::4X, e2m1, ue8m0 (tcgen05 only)
// and, on the same tcgen05 kernel without scale factors (sa, sb unused), f32 or f16 out:
//   f8f6f4          k32 kind::f8f6f4, A and B any f8f6f4 type (tcgen05 only; fp8 x fp8 is also
//                   the tcgen05 probe of run_probe)
enum class scaled_op : std::uint8_t { none, mxf8f6f4, mxf4, mxf4nvf4_ue4m3, mxf4nvf4_ue8m0, f8f6f4 };
// Whether the op's lines carry scale factors.
constexpr bool block_scaled(scaled_op op) { return op != scaled_op::none && op != scaled_op::f8f6f4; }
struct probe_scaled_job {
  scaled_op op = scaled_op::mxf8f6f4;
  instr unit = instr::mma_sync;                      // mma_sync (sm_120a) or tcgen05 (sm_100a)
  bool out16 = false;                                // f16 C/D (kind::f8f6f4 only; else f32)
  mma_elem ta = mma_elem::e4m3, tb = mma_elem::e4m3; // A and B (e2m1 for the fp4 kinds)
  int k = 32;                  // values of A (and of B) per line: a multiple of the instruction's k
  std::size_t lines = 0;       // number of dot products
  const std::uint64_t *a;      // lines*k bit patterns, right-aligned
  const std::uint64_t *b;      // lines*k
  const std::uint64_t *c;      // lines (fp32 bits)
  const std::uint8_t *sa, *sb; // lines*(k/vec) scale factors of A and of B, in increasing k
  std::uint64_t *d;            // lines (fp32 bits)
};
// The instruction's k (32, 64, 64, 64, 32) and k-elements per scale factor (32, 32, 16, 16; 0 for
// f8f6f4).
int scaled_instr_k(scaled_op op);
int scaled_vec(scaled_op op);
// Whether this build can run the job on the device (the sm_120a code: compute capability 12.0;
// the sm_100a code: 10.0).
bool probe_scaled_supported(const probe_scaled_job &job, int cc_major, int cc_minor);
int run_probe_scaled(const probe_scaled_job &job);

// ------------------------------------------------------------------------------------------------
// GEMM: D[M][N] (fp32) = A[M][K] (bf16, row-major) * B (bf16, given as Bt[N][K], row-major),
// on mma.sync.m16n8k16 with an FP32 accumulator that starts at +0 and runs over k in increasing
// order, one instruction per 16 values of k. Each D element is therefore the line
//   a = A[m][0..K), b = Bt[n][0..K), c = +0
// of the `bf16emu mma` format with --k K. M, N multiples of 64, K a multiple of 16.
struct gemm_job {
  int m = 0, n = 0, k = 0;
  const std::uint16_t *a;  // m*k
  const std::uint16_t *bt; // n*k
  float *d;                // m*n
  int repeats = 0;         // >0: time the kernel
  double ms = 0;
};
int run_gemm(gemm_job &job);
// Dense bf16 GEMM rate of the device through cuBLAS (bf16 in, fp32 compute, bf16 out), in
// TFLOP/s, for an n x n x n product on random data; returns <0 when cuBLAS is not linked.
double cublas_bf16_tflops(int n, int repeats);

// ------------------------------------------------------------------------------------------------
// FlashAttention-2-style forward (one head per grid.y, batch folded into heads):
//   Q, K, V: [heads][n][d] bf16 bit patterns, O: [heads][n][d] bf16, plus per row the final
//   running max m (fp32, the value used as the shift, i.e. after the stabilisation rule) and row
//   sum l (fp32). Block sizes, KV order and reduction orders: cuda/README.md ("Forward kernel").
struct attention_job {
  int heads = 1, n = 0, d = 64;
  bool causal = false;
  bool stabilized = false; // Qiu & Yao Algorithm 1 with parameter beta
  float beta = 2.0f;
  float scale = 0;       // softmax scale (1/sqrt(d) when 0)
  bool fast_exp = false; // MUFU ex2.approx build (not bit-exact; compared by tolerance)
  const std::uint16_t *q, *k, *v;
  std::uint16_t *o;
  float *row_m, *row_l; // heads*n each
  int repeats = 0;
  double ms = 0;
};
int run_attention(attention_job &job); // computes scale and c, then one of the two below
// The two builds of the kernel; c = RN32(scale * log2(e)) as the contract defines it.
int run_attention_exact(attention_job &job, float c);
int run_attention_fast_exp(attention_job &job, float c);

// Backward preprocessing: delta[r] = sum_j dO[r][j] * O[r][j] in FP32 from BF16 O and dO.
struct delta_job {
  int rows = 0, d = 64;
  const std::uint16_t *o, *dout;
  float *delta;
};
int run_delta(delta_job &job);

// ------------------------------------------------------------------------------------------------
// Device discovery. Returns false when no CUDA device (or no driver) is present.
struct device_info {
  char name[256] = {};
  int cc_major = 0, cc_minor = 0, sms = 0;
  int driver_version = 0, runtime_version = 0;
};
bool find_device(device_info &info);
const char *error_string(int err);

} // namespace bf16emu::gpu
