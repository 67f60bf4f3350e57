// Core soft-float throughput. Every emulated benchmark has its native-float
// baseline in the same run; docs/performance.md reports the ratios.
//
//   ./build/bench/bench_core --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "bf16emu/core.hpp"

using namespace bf16emu;

namespace {

// Random operands: random sign, exponents within +-20 of 1, random fraction bits.
// Finite and mostly normal, so the branch pattern is that of real data.
std::vector<std::uint32_t> random_f32(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
  std::uint64_t s = seed;
  for (auto &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint32_t r = std::uint32_t(s >> 32);
    const std::uint32_t exp = 107u + (r % 41u);
    x = (r & 0x80000000u) | (exp << 23) | ((r * 2654435761u) & 0x7fffffu);
  }
  return v;
}

constexpr std::size_t kN = 4096; // fits in L1/L2: measures arithmetic, not memory

struct counting_tracer {
  static constexpr bool enabled = true;
  std::uint64_t ups = 0;
  void operator()(const rounding_event &e) noexcept { ups += e.dec == decision::up; }
};

void BM_native_f32_add(benchmark::State &state) {
  const auto a = random_f32(kN, 1), b = random_f32(kN, 2);
  std::vector<float> fa(kN), fb(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    fa[i] = to_float(f32::from_bits(a[i]));
    fb[i] = to_float(f32::from_bits(b[i]));
  }
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      float r = fa[i] + fb[i];
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_native_f32_add);

template <bool Trace> void BM_f32_add(benchmark::State &state) {
  const auto a = random_f32(kN, 1), b = random_f32(kN, 2);
  env e;
  e.mode = static_cast<round_mode>(state.range(0));
  counting_tracer tr;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      e.random = std::uint32_t(i * 2654435761u);
      result<binary32> r;
      if constexpr (Trace)
        r = add(f32::from_bits(a[i]), f32::from_bits(b[i]), e, tr);
      else
        r = add(f32::from_bits(a[i]), f32::from_bits(b[i]), e);
      benchmark::DoNotOptimize(r);
    }
  }
  benchmark::DoNotOptimize(tr.ups);
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetLabel(to_string(e.mode));
}
BENCHMARK(BM_f32_add<false>)->DenseRange(0, round_mode_count - 1);
BENCHMARK(BM_f32_add<true>)->DenseRange(0, round_mode_count - 1);

void BM_native_bf16_add_bulk(benchmark::State &state) {
  // Baseline: what a native path does for bf16 (widen to float, add, truncate-free RNE by bits).
  const auto a = random_f32(kN, 3), b = random_f32(kN, 4);
  std::vector<float> fa(kN), fb(kN);
  std::vector<std::uint16_t> out(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    fa[i] = to_float(f32::from_bits(a[i] & 0xffff0000u));
    fb[i] = to_float(f32::from_bits(b[i] & 0xffff0000u));
  }
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      const std::uint32_t s = from_float(fa[i] + fb[i]).bits;
      out[i] = std::uint16_t((s + 0x7fffu + ((s >> 16) & 1u)) >> 16);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_native_bf16_add_bulk);

void BM_bf16_add_bulk(benchmark::State &state) {
  const auto a32 = random_f32(kN, 3), b32 = random_f32(kN, 4);
  std::vector<std::uint16_t> a(kN), b(kN), out(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i] = std::uint16_t(a32[i] >> 16);
    b[i] = std::uint16_t(b32[i] >> 16);
  }
  const env e{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i)
      out[i] = add(bf16::from_bits(a[i]), bf16::from_bits(b[i]), e).bits();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_bf16_add_bulk);

// add_n (core/bulk.hpp) on the same operands as BM_bf16_add_bulk, in every mode.
void BM_bf16_add_n(benchmark::State &state) {
  const auto a32 = random_f32(kN, 3), b32 = random_f32(kN, 4);
  std::vector<bf16> a(kN), b(kN), out(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i] = bf16::from_bits(a32[i] >> 16);
    b[i] = bf16::from_bits(b32[i] >> 16);
  }
  env e;
  e.mode = static_cast<round_mode>(state.range(0));
  e.random = 0x9E3779B9u;
  for (auto _ : state) {
    const std::uint8_t flags = add_n(a.data(), b.data(), out.data(), kN, e);
    benchmark::DoNotOptimize(flags);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetLabel(to_string(e.mode));
}
BENCHMARK(BM_bf16_add_n)->DenseRange(0, round_mode_count - 1);

void BM_native_f32_to_bf16_bulk(benchmark::State &state) {
  const auto a = random_f32(kN, 5);
  std::vector<std::uint16_t> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      const std::uint32_t s = a[i];
      out[i] = std::uint16_t((s + 0x7fffu + ((s >> 16) & 1u)) >> 16); // RNE by bits, finite inputs
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_native_f32_to_bf16_bulk);

void BM_f32_to_bf16_bulk(benchmark::State &state) {
  const auto a = random_f32(kN, 5);
  std::vector<std::uint16_t> out(kN);
  const env e{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i)
      out[i] = convert<bfloat16>(f32::from_bits(a[i]), e).bits();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_f32_to_bf16_bulk);

void BM_f32_to_bf16_convert_n(benchmark::State &state) {
  const auto a = random_f32(kN, 5);
  std::vector<f32> in(kN);
  std::vector<bf16> out(kN);
  for (std::size_t i = 0; i < kN; ++i)
    in[i] = f32::from_bits(a[i]);
  env e;
  e.mode = static_cast<round_mode>(state.range(0));
  for (auto _ : state) {
    const std::uint8_t flags = convert_n(in.data(), out.data(), kN, e);
    benchmark::DoNotOptimize(flags);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetLabel(to_string(e.mode));
}
BENCHMARK(BM_f32_to_bf16_convert_n)->DenseRange(0, round_mode_count - 1);

} // namespace

BENCHMARK_MAIN();
