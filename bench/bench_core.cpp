// Core soft-float throughput. Every emulated benchmark has its native-float
// baseline in the same run; docs/performance.md reports the ratios.
//
//   ./build/bench/bench_core --benchmark_min_time=0.5
// Scalar core (docs/performance.md), medians of 5 on a shared machine:
//   ./build/bench/bench_core
//   --benchmark_filter='BM_(native_)?(f32|bf16)_(add|mul|fma|div|sqrt)(_bits)?(<|/|$)'
//     --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// The issue-14 targets are ratios to BM_native_f32_add_bits (random bit patterns, every class);
// the *_bits rows of every op are the targets' rows, the others show data-like operands.
//   (one command line)
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

// Random bit patterns (the measurement): every class, NaN, Inf and subnormal included.
std::vector<std::uint32_t> random_bits(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
  std::uint64_t s = seed;
  for (auto &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = std::uint32_t(s >> 32);
  }
  return v;
}

constexpr std::size_t kN = 4096; // fits in L1/L2: measures arithmetic, not memory

struct counting_tracer {
  static constexpr bool enabled = true;
  std::uint64_t ups = 0;
  void operator()(const rounding_event &e) noexcept { ups += e.dec == decision::up; }
};

// Native baselines: the same operands, the host's own float arithmetic.
enum class op2 { add, mul, fma, div, sqrt };

template <op2 Op> float native_op(float x, float y, float z) {
  if constexpr (Op == op2::add)
    return x + y;
  else if constexpr (Op == op2::mul)
    return x * y;
  else if constexpr (Op == op2::fma)
    return __builtin_fmaf(x, y, z);
  else if constexpr (Op == op2::div)
    return x / y;
  else
    return __builtin_sqrtf(x);
}

template <op2 Op, class F, class Tr> result<F> emulated_op(fp<F> x, fp<F> y, fp<F> z, const env &e, Tr &tr) {
  if constexpr (Op == op2::add)
    return add(x, y, e, tr);
  else if constexpr (Op == op2::mul)
    return mul(x, y, e, tr);
  else if constexpr (Op == op2::fma)
    return fma(x, y, z, e, tr);
  else if constexpr (Op == op2::div)
    return div(x, y, e, tr);
  else
    return sqrt(x, e, tr);
}

// sqrt reads positive operands (negative ones would all take the invalid early exit).
// Bits: random bit patterns instead of values near 1.
template <bool Bits = false> std::vector<std::uint32_t> operands(op2 op, std::uint64_t seed) {
  auto v = Bits ? random_bits(kN, seed) : random_f32(kN, seed);
  if (op == op2::sqrt)
    for (auto &x : v)
      x &= 0x7FFFFFFFu;
  return v;
}

template <op2 Op, bool Bits = false> void BM_native_f32(benchmark::State &state) {
  const auto a = operands<Bits>(Op, 1), b = operands<Bits>(op2::add, 2), c = operands<Bits>(op2::add, 6);
  std::vector<float> fa(kN), fb(kN), fc(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    fa[i] = to_float(f32::from_bits(a[i]));
    fb[i] = to_float(f32::from_bits(b[i]));
    fc[i] = to_float(f32::from_bits(c[i]));
  }
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      float r = native_op<Op>(fa[i], fb[i], fc[i]);
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
void BM_native_f32_add(benchmark::State &state) { BM_native_f32<op2::add>(state); }
void BM_native_f32_mul(benchmark::State &state) { BM_native_f32<op2::mul>(state); }
void BM_native_f32_fma(benchmark::State &state) { BM_native_f32<op2::fma>(state); }
void BM_native_f32_div(benchmark::State &state) { BM_native_f32<op2::div>(state); }
void BM_native_f32_sqrt(benchmark::State &state) { BM_native_f32<op2::sqrt>(state); }
BENCHMARK(BM_native_f32_add);
BENCHMARK(BM_native_f32_mul);
BENCHMARK(BM_native_f32_fma);
BENCHMARK(BM_native_f32_div);
BENCHMARK(BM_native_f32_sqrt);
void BM_native_f32_add_bits(benchmark::State &state) { BM_native_f32<op2::add, true>(state); }
void BM_native_f32_mul_bits(benchmark::State &state) { BM_native_f32<op2::mul, true>(state); }
void BM_native_f32_fma_bits(benchmark::State &state) { BM_native_f32<op2::fma, true>(state); }
void BM_native_f32_div_bits(benchmark::State &state) { BM_native_f32<op2::div, true>(state); }
void BM_native_f32_sqrt_bits(benchmark::State &state) { BM_native_f32<op2::sqrt, true>(state); }
BENCHMARK(BM_native_f32_add_bits);
BENCHMARK(BM_native_f32_mul_bits);
BENCHMARK(BM_native_f32_fma_bits);
BENCHMARK(BM_native_f32_div_bits);
BENCHMARK(BM_native_f32_sqrt_bits);

// One emulated op over the operands, in the mode given by the argument, tracer off or on.
template <op2 Op, class F, bool Trace, bool Bits = false> void run_emulated(benchmark::State &state) {
  const auto a = operands<Bits>(Op, 1), b = operands<Bits>(op2::add, 2), c = operands<Bits>(op2::add, 6);
  std::vector<fp<F>> x(kN), y(kN), z(kN);
  for (std::size_t i = 0; i < kN; ++i) { // bf16: the top half of the fp32 pattern
    constexpr int drop = 32 - F::width;
    x[i] = fp<F>::from_bits(a[i] >> drop);
    y[i] = fp<F>::from_bits(b[i] >> drop);
    z[i] = fp<F>::from_bits(c[i] >> drop);
  }
  env e;
  e.mode = static_cast<round_mode>(state.range(0));
  counting_tracer tr;
  no_trace off;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      e.random = std::uint32_t(i * 2654435761u);
      result<F> r;
      if constexpr (Trace)
        r = emulated_op<Op>(x[i], y[i], z[i], e, tr);
      else
        r = emulated_op<Op>(x[i], y[i], z[i], e, off);
      benchmark::DoNotOptimize(r);
    }
  }
  benchmark::DoNotOptimize(tr.ups);
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetLabel(to_string(e.mode));
}

template <bool Trace> void BM_f32_add(benchmark::State &state) {
  run_emulated<op2::add, binary32, Trace>(state);
}
template <bool Trace> void BM_f32_mul(benchmark::State &state) {
  run_emulated<op2::mul, binary32, Trace>(state);
}
template <bool Trace> void BM_f32_fma(benchmark::State &state) {
  run_emulated<op2::fma, binary32, Trace>(state);
}
template <bool Trace> void BM_f32_div(benchmark::State &state) {
  run_emulated<op2::div, binary32, Trace>(state);
}
template <bool Trace> void BM_f32_sqrt(benchmark::State &state) {
  run_emulated<op2::sqrt, binary32, Trace>(state);
}
void BM_bf16_add(benchmark::State &state) { run_emulated<op2::add, bfloat16, false>(state); }
void BM_bf16_mul(benchmark::State &state) { run_emulated<op2::mul, bfloat16, false>(state); }
BENCHMARK(BM_f32_add<false>)->DenseRange(0, round_mode_count - 1);
BENCHMARK(BM_f32_add<true>)->DenseRange(0, round_mode_count - 1);
// The other ops: nearest-even and stochastic (the mode with the most discarded bits to read).
BENCHMARK(BM_f32_mul<false>)->Arg(0)->Arg(6);
BENCHMARK(BM_f32_mul<true>)->Arg(0);
BENCHMARK(BM_f32_fma<false>)->Arg(0)->Arg(6);
BENCHMARK(BM_f32_fma<true>)->Arg(0);
BENCHMARK(BM_f32_div<false>)->Arg(0)->Arg(6);
BENCHMARK(BM_f32_div<true>)->Arg(0);
BENCHMARK(BM_f32_sqrt<false>)->Arg(0)->Arg(6);
BENCHMARK(BM_f32_sqrt<true>)->Arg(0);
BENCHMARK(BM_bf16_add)->Arg(0);
BENCHMARK(BM_bf16_mul)->Arg(0);
// Random bit patterns: operands and results of every class, so the general routine's share.
void BM_f32_add_bits(benchmark::State &state) { run_emulated<op2::add, binary32, false, true>(state); }
void BM_f32_mul_bits(benchmark::State &state) { run_emulated<op2::mul, binary32, false, true>(state); }
void BM_f32_fma_bits(benchmark::State &state) { run_emulated<op2::fma, binary32, false, true>(state); }
void BM_f32_div_bits(benchmark::State &state) { run_emulated<op2::div, binary32, false, true>(state); }
void BM_f32_sqrt_bits(benchmark::State &state) { run_emulated<op2::sqrt, binary32, false, true>(state); }
void BM_bf16_add_bits(benchmark::State &state) { run_emulated<op2::add, bfloat16, false, true>(state); }
void BM_bf16_mul_bits(benchmark::State &state) { run_emulated<op2::mul, bfloat16, false, true>(state); }
BENCHMARK(BM_f32_add_bits)->Arg(0);
BENCHMARK(BM_f32_mul_bits)->Arg(0);
BENCHMARK(BM_f32_fma_bits)->Arg(0);
BENCHMARK(BM_f32_div_bits)->Arg(0);
BENCHMARK(BM_f32_sqrt_bits)->Arg(0);
BENCHMARK(BM_bf16_add_bits)->Arg(0);
BENCHMARK(BM_bf16_mul_bits)->Arg(0);

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

// add_loop (core/bulk.hpp) on the same operands as BM_bf16_add_bulk, in every mode.
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
    const std::uint8_t flags = add_loop(a.data(), b.data(), out.data(), kN, e);
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
    const std::uint8_t flags = convert_loop(in.data(), out.data(), kN, e);
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
