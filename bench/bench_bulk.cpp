// bf16emu::bulk kernels (src/bulk, Highway dynamic dispatch) against their native baselines
// in the same run, on 2^20 random bit patterns (issue 14, goal 2). The dispatch target that
// ran is printed in the context block ("bulk_target"). Arguments: the rounding mode (0..6 in
// round_mode order; 6 = stochastic with a counter-based random stream).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "bulk/bulk.hpp"

namespace bf = bf16emu;
namespace bk = bf16emu::bulk;

namespace {

constexpr std::size_t kN = std::size_t{1} << 20;

const std::vector<std::uint32_t> &f32_bits() {
  static const std::vector<std::uint32_t> v = [] {
    std::mt19937 rng(12345);
    std::vector<std::uint32_t> x(kN);
    for (auto &b : x)
      b = rng();
    return x;
  }();
  return v;
}

// Random bf16 bit patterns (all classes, as the scalar benchmarks use).
const std::vector<std::uint16_t> &bf16_bits(unsigned which) {
  static const std::vector<std::uint16_t> v[2] = {[] {
                                                    std::mt19937 rng(777);
                                                    std::vector<std::uint16_t> x(kN);
                                                    for (auto &b : x)
                                                      b = std::uint16_t(rng());
                                                    return x;
                                                  }(),
                                                  [] {
                                                    std::mt19937 rng(778);
                                                    std::vector<std::uint16_t> x(kN);
                                                    for (auto &b : x)
                                                      b = std::uint16_t(rng());
                                                    return x;
                                                  }()};
  return v[which];
}

bf::env mode_env(const benchmark::State &state) {
  bf::env e;
  e.mode = bf::round_mode(state.range(0));
  return e;
}

const bk::random_stream kStream{0x5EEDull, 0};

// Native baseline: fp32 -> bf16 round-to-nearest-even by the bit trick (no NaN or flag
// handling), compiled like the rest of the project (no -march).
void BM_native_f32_to_bf16(benchmark::State &state) {
  const auto &in = f32_bits();
  std::vector<std::uint16_t> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      const std::uint32_t x = in[i];
      out[i] = std::uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_native_f32_to_bf16);

template <class Out> void BM_bulk_f32_to(benchmark::State &state) {
  const auto &bits = f32_bits();
  std::vector<bf::f32> in(kN);
  for (std::size_t i = 0; i < kN; ++i)
    in[i].bits = bits[i];
  std::vector<bf::fp<Out>> out(kN);
  const bf::env e = mode_env(state);
  for (auto _ : state) {
    benchmark::DoNotOptimize(bk::convert_n(in.data(), out.data(), kN, e, &kStream));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_bulk_f32_to<bf::bfloat16>)->DenseRange(0, bf::round_mode_count - 1);
BENCHMARK(BM_bulk_f32_to<bf::tensorfloat32>)->Arg(0)->Arg(6);
BENCHMARK(BM_bulk_f32_to<bf::binary16>)->Arg(0);
BENCHMARK(BM_bulk_f32_to<bf::float8_e4m3>)->Arg(0);
BENCHMARK(BM_bulk_f32_to<bf::float8_e5m2>)->Arg(0);

template <class In> void BM_bulk_widen(benchmark::State &state) {
  std::mt19937 rng(99);
  std::vector<bf::fp<In>> in(kN);
  for (auto &x : in)
    x.bits = typename In::storage(rng() & ((std::uint64_t{1} << In::width) - 1));
  std::vector<bf::f32> out(kN);
  const bf::env e{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(bk::convert_n(in.data(), out.data(), kN, e));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_bulk_widen<bf::bfloat16>);
BENCHMARK(BM_bulk_widen<bf::binary16>);
BENCHMARK(BM_bulk_widen<bf::float8_e4m3>);

// Native baseline for add_n: widen both bf16 operands to float, native float add, back to
// bf16 by the nearest-even bit trick (double rounding; no flags or NaN handling).
void BM_native_bf16_add(benchmark::State &state) {
  const auto &a = bf16_bits(0), &b = bf16_bits(1);
  std::vector<std::uint16_t> out(kN);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      float x, y;
      const std::uint32_t xa = std::uint32_t(a[i]) << 16, xb = std::uint32_t(b[i]) << 16;
      std::memcpy(&x, &xa, 4);
      std::memcpy(&y, &xb, 4);
      const float s = x + y;
      std::uint32_t r;
      std::memcpy(&r, &s, 4);
      out[i] = std::uint16_t((r + 0x7FFFu + ((r >> 16) & 1u)) >> 16);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_native_bf16_add);

enum class op { add, sub, mul, fma };
template <op Op> void BM_bulk_bf16(benchmark::State &state) {
  const auto &ab = bf16_bits(0), &bb = bf16_bits(1);
  std::vector<bf::bf16> a(kN), b(kN), out(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i].bits = ab[i];
    b[i].bits = bb[i];
  }
  const bf::env e = mode_env(state);
  for (auto _ : state) {
    std::uint8_t f = 0;
    if constexpr (Op == op::add)
      f = bk::add_n(a.data(), b.data(), out.data(), kN, e, &kStream);
    else if constexpr (Op == op::sub)
      f = bk::sub_n(a.data(), b.data(), out.data(), kN, e, &kStream);
    else if constexpr (Op == op::mul)
      f = bk::mul_n(a.data(), b.data(), out.data(), kN, e, &kStream);
    else
      f = bk::fma_n(a.data(), b.data(), a.data(), out.data(), kN, e, &kStream);
    benchmark::DoNotOptimize(f);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_bulk_bf16<op::add>)->DenseRange(0, bf::round_mode_count - 1);
BENCHMARK(BM_bulk_bf16<op::sub>)->Arg(0);
BENCHMARK(BM_bulk_bf16<op::mul>)->Arg(0)->Arg(6);
BENCHMARK(BM_bulk_bf16<op::fma>)->Arg(0);

// The same kernels on normal operands only (|x| in [2^-20, 2^20), random sign and fraction):
// every lane stays on the SIMD path, the case of typical data.
template <op Op> void BM_bulk_bf16_normal(benchmark::State &state) {
  std::mt19937 rng(31);
  std::vector<bf::bf16> a(kN), b(kN), out(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i].bits = std::uint16_t(((rng() & 1) << 15) | ((107 + rng() % 40) << 7) | (rng() & 0x7F));
    b[i].bits = std::uint16_t(((rng() & 1) << 15) | ((107 + rng() % 40) << 7) | (rng() & 0x7F));
  }
  const bf::env e = mode_env(state);
  for (auto _ : state) {
    std::uint8_t f = 0;
    if constexpr (Op == op::add)
      f = bk::add_n(a.data(), b.data(), out.data(), kN, e, &kStream);
    else if constexpr (Op == op::mul)
      f = bk::mul_n(a.data(), b.data(), out.data(), kN, e, &kStream);
    else
      f = bk::fma_n(a.data(), b.data(), a.data(), out.data(), kN, e, &kStream);
    benchmark::DoNotOptimize(f);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_bulk_bf16_normal<op::add>)->Arg(0)->Arg(6);
BENCHMARK(BM_bulk_bf16_normal<op::mul>)->Arg(0)->Arg(6);
BENCHMARK(BM_bulk_bf16_normal<op::fma>)->Arg(0);

// Dot products of random normal values (|x| in [2^-4, 2^4)), sequential and blocked16.
void BM_bulk_dot(benchmark::State &state) {
  std::mt19937 rng(5);
  std::vector<bf::bf16> a(kN), b(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i].bits = std::uint16_t(((rng() & 1) << 15) | ((123 + rng() % 8) << 7) | (rng() & 0x7F));
    b[i].bits = std::uint16_t(((rng() & 1) << 15) | ((123 + rng() % 8) << 7) | (rng() & 0x7F));
  }
  const bf::env e{};
  const auto order = bk::dot_order(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(bk::dot_n(a.data(), b.data(), kN, {}, order, e));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(kN));
}
BENCHMARK(BM_bulk_dot)->Arg(0)->Arg(1);

} // namespace

int main(int argc, char **argv) {
  benchmark::AddCustomContext("bulk_target", bk::target_name());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
