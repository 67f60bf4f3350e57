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

constexpr int K = 4096; // one dot product of length K per iteration

struct data {
  std::vector<bf16> a, b;
  std::vector<float> fa, fb;
  data() : a(K), b(K), fa(K), fb(K) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int i = 0; i < K; ++i) {
      const float x = nd(rng), y = nd(rng);
      a[i] = bf16::from_bits(detail::bit_cast<std::uint32_t>(x) >> 16);
      b[i] = bf16::from_bits(detail::bit_cast<std::uint32_t>(y) >> 16);
      fa[i] = detail::bit_cast<float>(std::uint32_t(a[i].bits) << 16);
      fb[i] = detail::bit_cast<float>(std::uint32_t(b[i].bits) << 16);
    }
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
BENCHMARK(BM_tc_bf16_sm90_mma_summary);
BENCHMARK(BM_tc_bf16_sm90_mma_traced);
BENCHMARK(BM_native_fp32_dot);
BENCHMARK_MAIN();
