// Tensor-core model throughput: emulated bf16 MACs per second (one thread) of the block
// model for the Hopper (one block of 16 per k16 instruction) and Ampere (two blocks of 8)
// presets, and a native FP32 dot-product loop over the same data in the same run.
// Target (issue 14, goal 3): >= 1 G bf16 MAC/s per core; docs/performance-attention.md.
// items_per_second = multiply-accumulates per second. tc::dot runs the AVX2 instance of the
// fast path where the host has AVX2 (run-time cpuid dispatch, tc/block.hpp); to measure the
// portable instance (hosts without AVX2), build this file with -DBF16EMU_NO_AVX2_DISPATCH.
//   uptime; ./build/bench/bench_tc --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <bf16emu/tc.hpp>

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

} // namespace

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
