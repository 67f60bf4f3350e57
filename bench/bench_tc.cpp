// Tensor-core model throughput: emulated bf16 MACs per second (one thread) of the block
// model for the Hopper (one block of 16 per k16 instruction) and Ampere (two blocks of 8)
// presets, and a native FP32 dot-product loop over the same data in the same run.
// Target (issue 14, goal 3): >= 1 G bf16 MAC/s per core; docs/performance-attention.md. The
// GEMM rows (issue 32): the lane-parallel kernel >= 2 G MAC/s per core with AVX2, >= 4 G with
// AVX-512, against native FP32 GEMM in the same run; docs/performance.md.
// items_per_second = multiply-accumulates per second. tc::dot runs the AVX2 instance of the
// fast path where the host has AVX2 (run-time cpuid dispatch, tc/block.hpp); to measure the
// portable instance (hosts without AVX2), build this file with -DBF16EMU_NO_AVX2_DISPATCH.
//   uptime; ./build/bench/bench_tc --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <bf16emu/tc.hpp>
#if defined(BF16EMU_HAVE_TC_LANES)
#include "tc_lanes/tc_lanes.hpp"
#endif

namespace {

using namespace bf16emu;

constexpr int K = 4096;   // one dot product of length K per iteration
constexpr int NCOL = 8;   // the multi-column runs: NCOL dot products of length K sharing a
constexpr int KCOL = 128; // ... and attention's S = Q K^T shape: NCOL products of length d = 128

struct data {
  std::vector<bf16> a, b, bcols;
  std::vector<float> fa, fb;
  data() : a(K), b(K), bcols(std::size_t(NCOL) * K), fa(K), fb(K) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto draw = [&] { return bf16::from_bits(detail::bit_cast<std::uint32_t>(nd(rng)) >> 16); };
    for (int i = 0; i < K; ++i) {
      a[i] = draw(), b[i] = draw();
      fa[i] = detail::bit_cast<float>(std::uint32_t(a[i].bits) << 16);
      fb[i] = detail::bit_cast<float>(std::uint32_t(b[i].bits) << 16);
    }
    for (std::size_t i = 0; i < bcols.size(); ++i) // column j: bcols[j*K, (j+1)*K), column 0 = b
      bcols[i] = i < std::size_t(K) ? b[i] : draw();
  }
};
const data &inputs() {
  static const data d;
  return d;
}

void run_model(benchmark::State &state, tc::arch arch) {
  const data &d = inputs();
  const tc::preset &P = *tc::find_preset(arch, tc::instr_kind::mma, format_id::bf16, format_id::fp32);
  for (auto _ : state) {
    f32 r = tc::dot<bfloat16, binary32>(P.block, P.k, d.a.data(), 1, d.b.data(), 1, K, f32::from_bits(0));
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * K);
}

void BM_tc_bf16_sm90_mma(benchmark::State &state) { run_model(state, tc::arch::sm90); }
void BM_tc_bf16_sm80_mma(benchmark::State &state) { run_model(state, tc::arch::sm80); }

// NCOL dot products of length k sharing a (tc::dot_cols: the columns' chains of blocks advance
// together, so the CPU overlaps them; the bits of NCOL tc::dot calls), optionally with the
// summary tracer.
template <bool Summary> void run_cols(benchmark::State &state, tc::arch arch, int k) {
  const data &d = inputs();
  const tc::preset &P = *tc::find_preset(arch, tc::instr_kind::mma, format_id::bf16, format_id::fp32);
  double lost = 0;
  auto tr = tc::make_block_summary_tracer([&](const tc::block_summary &t) { lost += t.trunc_err - t.lost; });
  f32 c[NCOL];
  for (auto _ : state) {
    for (f32 &x : c)
      x = f32::from_bits(0);
    if constexpr (Summary)
      tc::dot_cols<bfloat16, binary32>(P.block, P.k, d.a.data(), 1, d.bcols.data(), 1, K, NCOL, k, c, tr);
    else
      tc::dot_cols<bfloat16, binary32>(P.block, P.k, d.a.data(), 1, d.bcols.data(), 1, K, NCOL, k, c);
    benchmark::DoNotOptimize(c);
  }
  benchmark::DoNotOptimize(lost);
  state.SetItemsProcessed(state.iterations() * NCOL * k);
}
void BM_tc_bf16_sm90_mma_cols(benchmark::State &state) { run_cols<false>(state, tc::arch::sm90, K); }
void BM_tc_bf16_sm80_mma_cols(benchmark::State &state) { run_cols<false>(state, tc::arch::sm80, K); }
void BM_tc_bf16_sm90_mma_cols_k128(benchmark::State &state) { run_cols<false>(state, tc::arch::sm90, KCOL); }
void BM_tc_bf16_sm90_mma_cols_k128_summary(benchmark::State &state) {
  run_cols<true>(state, tc::arch::sm90, KCOL);
}

// The same dot product with a summary tracer (d, trunc_err, lost per block: what the attention
// ledger reads; the model's fast path computes it).
void BM_tc_bf16_sm90_mma_summary(benchmark::State &state) {
  const data &d = inputs();
  const tc::preset &P =
      *tc::find_preset(tc::arch::sm90, tc::instr_kind::mma, format_id::bf16, format_id::fp32);
  double lost = 0;
  auto tr = tc::make_block_summary_tracer([&](const tc::block_summary &t) { lost += t.trunc_err - t.lost; });
  for (auto _ : state) {
    f32 r = tc::dot<bfloat16, binary32>(P.block, P.k, d.a.data(), 1, d.b.data(), 1, K, f32::from_bits(0), tr);
    benchmark::DoNotOptimize(r);
  }
  benchmark::DoNotOptimize(lost);
  state.SetItemsProcessed(state.iterations() * K);
}

// The same dot product with the full block tracer on (every term's exponent, shift and loss:
// the general path, as `mma --trace` uses it).
void BM_tc_bf16_sm90_mma_traced(benchmark::State &state) {
  const data &d = inputs();
  const tc::preset &P =
      *tc::find_preset(tc::arch::sm90, tc::instr_kind::mma, format_id::bf16, format_id::fp32);
  double lost = 0;
  auto tr = tc::make_block_tracer([&](const tc::block_trace &t) { lost += t.trunc_err; });
  for (auto _ : state) {
    f32 r = tc::dot<bfloat16, binary32>(P.block, P.k, d.a.data(), 1, d.b.data(), 1, K, f32::from_bits(0), tr);
    benchmark::DoNotOptimize(r);
  }
  benchmark::DoNotOptimize(lost);
  state.SetItemsProcessed(state.iterations() * K);
}

// Native FP32 dot product (sequential fmaf-free loop, as the compiler emits it at -O2/-O3).
void BM_native_fp32_dot(benchmark::State &state) {
  const data &d = inputs();
  for (auto _ : state) {
    float s = 0;
    for (int i = 0; i < K; ++i)
      s += d.fa[i] * d.fb[i];
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * K);
}

// GEMM of GM^3 (issue 32): the model's lane-parallel kernel (src/tc_lanes, the SIMD target the
// dispatcher chooses, named in the label), the model's own chains (tc::gemm without the kernel:
// a row at a time, its columns' chains together), and native FP32 GEMM (a plain loop blocked
// over k, the compiler vectorising its j loop; the same shapes and data) in the same run.
// items_per_second = multiply-accumulates per second.
constexpr int GM = 512;

struct gemm_data {
  std::vector<bf16> a, b;
  std::vector<f16> ah, bh;
  std::vector<float> fa, fb;
  gemm_data() : a(GM * GM), b(GM * GM), ah(GM * GM), bh(GM * GM), fa(GM * GM), fb(GM * GM) {
    std::mt19937 rng(2);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int i = 0; i < GM * GM; ++i) {
      a[i] = bf16::from_bits(detail::bit_cast<std::uint32_t>(nd(rng)) >> 16);
      b[i] = bf16::from_bits(detail::bit_cast<std::uint32_t>(nd(rng)) >> 16);
      fa[i] = detail::bit_cast<float>(std::uint32_t(a[i].bits) << 16);
      fb[i] = detail::bit_cast<float>(std::uint32_t(b[i].bits) << 16);
      ah[i] = convert<binary16>(f32::from_bits(detail::bit_cast<std::uint32_t>(fa[i]))).value;
      bh[i] = convert<binary16>(f32::from_bits(detail::bit_cast<std::uint32_t>(fb[i]))).value;
    }
  }
};
const gemm_data &gemm_inputs() {
  static const gemm_data d;
  return d;
}

template <class In>
void run_gemm(benchmark::State &state, tc::arch arch, format_id fin, bool lanes, const std::vector<fp<In>> &A,
              const std::vector<fp<In>> &B) {
  const tc::preset &P = *tc::find_preset(arch, tc::instr_kind::mma, fin, format_id::fp32);
  std::vector<f32> C(GM * GM, f32::from_bits(0)), D(GM * GM);
#if defined(BF16EMU_HAVE_TC_LANES)
  if (lanes) tc_lanes::install();
  state.SetLabel(lanes ? tc_lanes::target_name() : "model chains");
#else
  if (lanes) {
    state.SkipWithError("built without src/tc_lanes (Highway)");
    return;
  }
#endif
  for (auto _ : state) {
    tc::gemm<In, binary32>(P.block, P.k, GM, GM, GM, A.data(), GM, B.data(), GM, C.data(), GM, D.data(), GM);
    benchmark::DoNotOptimize(D.data());
  }
  tc::lanes_hook.store(nullptr);
  state.SetItemsProcessed(state.iterations() * std::int64_t(GM) * GM * GM);
}
void BM_gemm512_bf16_sm90_lanes(benchmark::State &state) {
  run_gemm<bfloat16>(state, tc::arch::sm90, format_id::bf16, true, gemm_inputs().a, gemm_inputs().b);
}
void BM_gemm512_bf16_sm90_model(benchmark::State &state) {
  run_gemm<bfloat16>(state, tc::arch::sm90, format_id::bf16, false, gemm_inputs().a, gemm_inputs().b);
}
void BM_gemm512_fp16_sm90_lanes(benchmark::State &state) {
  run_gemm<binary16>(state, tc::arch::sm90, format_id::fp16, true, gemm_inputs().ah, gemm_inputs().bh);
}
void BM_gemm512_bf16_sm80_lanes(benchmark::State &state) {
  run_gemm<bfloat16>(state, tc::arch::sm80, format_id::bf16, true, gemm_inputs().a, gemm_inputs().b);
}
void BM_gemm512_bf16_sm80_model(benchmark::State &state) {
  run_gemm<bfloat16>(state, tc::arch::sm80, format_id::bf16, false, gemm_inputs().a, gemm_inputs().b);
}

// Native FP32 GEMM: C = A B, blocked over k (64), the j loop vectorised by the compiler: at the
// x86-64 baseline (SSE2), and compiled for AVX2 + FMA where the CPU has them.
__attribute__((always_inline)) inline void native_gemm_body(const float *A, const float *B, float *C) {
  for (int i = 0; i < GM * GM; ++i)
    C[i] = 0;
  for (int k0 = 0; k0 < GM; k0 += 64)
    for (int i = 0; i < GM; ++i)
      for (int k = k0; k < k0 + 64; ++k) {
        const float x = A[i * GM + k];
        const float *b = B + k * GM;
        float *c = C + i * GM;
        for (int j = 0; j < GM; ++j)
          c[j] += x * b[j];
      }
}
void native_gemm(const float *A, const float *B, float *C) { native_gemm_body(A, B, C); }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) void native_gemm_avx2(const float *A, const float *B, float *C) {
  native_gemm_body(A, B, C);
}
#endif

void run_native_gemm(benchmark::State &state, void (*fn)(const float *, const float *, float *),
                     const char *label) {
  const gemm_data &d = gemm_inputs();
  std::vector<float> C(GM * GM);
  for (auto _ : state) {
    fn(d.fa.data(), d.fb.data(), C.data());
    benchmark::DoNotOptimize(C.data());
  }
  state.SetLabel(label);
  state.SetItemsProcessed(state.iterations() * std::int64_t(GM) * GM * GM);
}
void BM_native_fp32_gemm512(benchmark::State &state) {
  run_native_gemm(state, native_gemm, "x86-64 baseline (SSE2)");
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
void BM_native_fp32_gemm512_avx2(benchmark::State &state) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("no AVX2/FMA");
    return;
  }
  run_native_gemm(state, native_gemm_avx2, "AVX2+FMA");
}
#endif

} // namespace

BENCHMARK(BM_gemm512_bf16_sm90_lanes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm512_bf16_sm90_model)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm512_fp16_sm90_lanes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm512_bf16_sm80_lanes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm512_bf16_sm80_model)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_native_fp32_gemm512)->Unit(benchmark::kMillisecond);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
BENCHMARK(BM_native_fp32_gemm512_avx2)->Unit(benchmark::kMillisecond);
#endif
BENCHMARK(BM_tc_bf16_sm90_mma);
BENCHMARK(BM_tc_bf16_sm80_mma);
BENCHMARK(BM_tc_bf16_sm90_mma_cols);
BENCHMARK(BM_tc_bf16_sm80_mma_cols);
BENCHMARK(BM_tc_bf16_sm90_mma_cols_k128);
BENCHMARK(BM_tc_bf16_sm90_mma_cols_k128_summary);
BENCHMARK(BM_tc_bf16_sm90_mma_summary);
BENCHMARK(BM_tc_bf16_sm90_mma_traced);
BENCHMARK(BM_native_fp32_dot);
BENCHMARK_MAIN();
