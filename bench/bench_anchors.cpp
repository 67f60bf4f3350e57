// bf16emu against external anchors on the same operands, in the same run (issue 32 items 4, 5):
// Berkeley SoftFloat 3e for scalar fp32 add, mul, fma, div, sqrt; CPFloat for bulk fp32 -> bf16
// round to nearest even. Built only when the anchors' checkouts are given at configure time
// (docs/performance.md, "Against SoftFloat 3e and CPFloat"):
//   cmake ... -DBF16EMU_SOFTFLOAT_DIR=<softfloat checkout> -DBF16EMU_CPFLOAT_DIR=<cpfloat checkout>
//   nice -n 5 ./build/bench/bench_anchors --benchmark_repetitions=7
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// Before any timing the program checks that each anchor computes the same bits (and, for
// SoftFloat, the same flags) as bf16emu on the benchmarks' operands and more, and prints the
// mismatch counts. After the timings it prints, for every row, each bf16emu variant's CPU time
// over the anchor's, from the separate rows and from the paired row (medians when there are
// repetitions).
// Own options: --anchors_check_only, --anchors_no_check, --anchors_iterations=N (a fixed
// iteration count, for callgrind with --toggle-collect='*anchors_loop*': instructions per
// element = the difference of Ir between two values of N over the difference of elements).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <time.h>
#include <unistd.h>

#include "bf16emu/core.hpp"

#ifdef BF16EMU_ANCHOR_BULK
#include "bulk/bulk.hpp"
#endif
#ifdef BF16EMU_ANCHOR_SOFTFLOAT
extern "C" {
#include "softfloat.h"
}
#endif
#ifdef BF16EMU_ANCHOR_CPFLOAT
#include "anchor_cpfloat.h"
#endif

using namespace bf16emu;

namespace {

// The operand sets of bench_core.cpp: "data" (random sign, exponent within +-20 of 1, random
// fraction: finite, normal) and "bits" (random bit patterns, every class).
enum class set { data, bits };
const char *set_name(set s) { return s == set::data ? "data" : "bits"; }

std::vector<std::uint32_t> generate(set s, std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
  std::uint64_t st = seed;
  for (auto &x : v) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint32_t r = std::uint32_t(st >> 32);
    if (s == set::bits)
      x = r;
    else
      x = (r & 0x80000000u) | ((107u + (r % 41u)) << 23) | ((r * 2654435761u) & 0x7fffffu);
  }
  return v;
}

constexpr std::size_t kN = 4096;                      // scalar rows and the small bulk row: in L1
constexpr std::size_t kBigN = std::size_t{1} << 20;   // the bulk row of issue 14 goal 2
constexpr std::size_t kCheckN = std::size_t{1} << 22; // the check; its first kN are the rows'

enum class op { add, mul, fma, div, sqrt };
const char *op_name(op o) {
  constexpr const char *names[] = {"add", "mul", "fma", "div", "sqrt"};
  return names[int(o)];
}

struct operands {
  std::vector<std::uint32_t> a, b, c;
};

// The same seeds as bench_core.cpp; sqrt reads absolute values.
operands make_operands(op o, set s, std::size_t n) {
  operands d{generate(s, n, 1), generate(s, n, 2), generate(s, n, 6)};
  if (o == op::sqrt)
    for (auto &x : d.a)
      x &= 0x7FFFFFFFu;
  return d;
}

template <op Op> result<binary32> emulated(f32 x, f32 y, f32 z, const env &e) {
  if constexpr (Op == op::add)
    return add(x, y, e);
  else if constexpr (Op == op::mul)
    return mul(x, y, e);
  else if constexpr (Op == op::fma)
    return fma(x, y, z, e);
  else if constexpr (Op == op::div)
    return div(x, y, e);
  else
    return sqrt(x, e);
}

bool is_nan32(std::uint32_t x) { return (x & 0x7FFFFFFFu) > 0x7F800000u; }

struct mismatches {
  std::uint64_t cases = 0, value = 0, nan_only = 0, nan_lost = 0, flags = 0;
};

// Flags are compared with SoftFloat only (CPFloat raises none).
void print_mismatches(const std::string &what, const mismatches &m, bool flags_compared) {
  std::printf("check %-44s %8llu cases: %llu value mismatches, %llu NaN bits only, %llu NaN "
              "operand -> non-NaN",
              what.c_str(), (unsigned long long)m.cases, (unsigned long long)m.value,
              (unsigned long long)m.nan_only, (unsigned long long)m.nan_lost);
  if (flags_compared) std::printf(", %llu flag mismatches", (unsigned long long)m.flags);
  std::printf("\n");
}

// Compares two results: equal bits; both NaN with different bits (NaN rules may differ); a NaN
// operand whose anchor result is not a NaN; anything else is a value mismatch.
void tally(mismatches &m, std::uint32_t ours, std::uint32_t theirs, bool nan_operand) {
  ++m.cases;
  if (ours == theirs) return;
  if (is_nan32(ours) && is_nan32(theirs))
    ++m.nan_only;
  else if (nan_operand && is_nan32(ours))
    ++m.nan_lost;
  else
    ++m.value;
}

#ifdef BF16EMU_ANCHOR_SOFTFLOAT
void softfloat_defaults() {
  softfloat_roundingMode = softfloat_round_near_even;
  softfloat_detectTininess = softfloat_tininess_afterRounding;
  softfloat_exceptionFlags = 0;
}

template <op Op> float32_t anchor(float32_t x, float32_t y, float32_t z) {
  if constexpr (Op == op::add)
    return f32_add(x, y);
  else if constexpr (Op == op::mul)
    return f32_mul(x, y);
  else if constexpr (Op == op::fma)
    return f32_mulAdd(x, y, z);
  else if constexpr (Op == op::div)
    return f32_div(x, y);
  else
    return f32_sqrt(x);
}

// SoftFloat's exception flags in bf16emu's encoding.
std::uint8_t softfloat_flags() {
  const std::uint_fast8_t f = softfloat_exceptionFlags;
  return std::uint8_t(((f & softfloat_flag_invalid) ? flag::invalid : 0) |
                      ((f & softfloat_flag_infinite) ? flag::divbyzero : 0) |
                      ((f & softfloat_flag_overflow) ? flag::overflow : 0) |
                      ((f & softfloat_flag_underflow) ? flag::underflow : 0) |
                      ((f & softfloat_flag_inexact) ? flag::inexact : 0));
}

template <op Op> mismatches check_scalar(const operands &d, const std::string &label) {
  const env e{};
  mismatches m;
  int shown = 0;
  for (std::size_t i = 0; i < d.a.size(); ++i) {
    const result<binary32> r =
        emulated<Op>(f32::from_bits(d.a[i]), f32::from_bits(d.b[i]), f32::from_bits(d.c[i]), e);
    softfloat_exceptionFlags = 0;
    const float32_t t = anchor<Op>({d.a[i]}, {d.b[i]}, {d.c[i]});
    const bool nan_operand =
        is_nan32(d.a[i]) || (Op != op::sqrt && is_nan32(d.b[i])) || (Op == op::fma && is_nan32(d.c[i]));
    const mismatches before = m;
    tally(m, r.bits(), t.v, nan_operand);
    const bool flags_differ = r.flags != softfloat_flags();
    m.flags += flags_differ;
    if ((m.value != before.value || m.nan_only != before.nan_only || flags_differ) && shown++ < 3)
      std::printf("  %s: %08x %08x %08x -> bf16emu %08x flags %02x, SoftFloat %08x flags %02x\n",
                  label.c_str(), d.a[i], d.b[i], d.c[i], r.bits(), r.flags, t.v, softfloat_flags());
  }
  print_mismatches(label + " vs SoftFloat", m, true);
  return m;
}

// Every triple of signed special and boundary values (zeros, subnormals, the normal range's
// ends, ties, infinities, quiet and signalling NaNs with payloads), for the NaN and flag rules.
operands special_triples() {
  constexpr std::uint32_t mags[] = {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x3F800000u,
                                    0x3FC00000u, 0x40400000u, 0x33800000u, 0x7F7FFFFFu, 0x7F800000u,
                                    0x7FC00000u, 0x7FC12345u, 0x7F800001u, 0x7FA00000u};
  std::vector<std::uint32_t> v;
  for (std::uint32_t m : mags)
    for (std::uint32_t sign : {0u, 0x80000000u})
      v.push_back(m | sign);
  operands d;
  for (std::uint32_t a : v)
    for (std::uint32_t b : v)
      for (std::uint32_t c : v) {
        d.a.push_back(a);
        d.b.push_back(b);
        d.c.push_back(c);
      }
  return d;
}

template <op Op> void check_scalar_all() {
  softfloat_defaults();
  for (set s : {set::data, set::bits})
    check_scalar<Op>(make_operands(Op, s, kCheckN), std::string("f32_") + op_name(Op) + "/" + set_name(s));
  check_scalar<Op>(special_triples(), std::string("f32_") + op_name(Op) + "/specials");
}
#endif

#ifdef BF16EMU_ANCHOR_CPFLOAT
void *cpfloat_options() {
  static void *const opts = bf16emu_anchor_cpfloat_bf16_rne();
  if (opts == nullptr) {
    std::fprintf(stderr, "CPFloat rejected the bfloat16 options\n");
    std::exit(2);
  }
  return opts;
}
#endif

// Bulk fp32 -> bf16 nearest even: bf16emu's Highway kernels, the header-only convert_loop and
// CPFloat (which stores the rounded value as a float), checked against each other.
[[maybe_unused]] void check_bulk(const std::vector<std::uint32_t> &in_bits, const std::string &row) {
  const std::size_t n = in_bits.size();
  std::vector<f32> in(n);
  for (std::size_t i = 0; i < n; ++i)
    in[i] = f32::from_bits(in_bits[i]);
  const env e{};
  std::vector<bf16> core(n);
  convert_loop(in.data(), core.data(), n, e);
#ifdef BF16EMU_ANCHOR_BULK
  {
    std::vector<bf16> hwy(n);
    bulk::convert_n(in.data(), hwy.data(), n, e);
    mismatches m;
    for (std::size_t i = 0; i < n; ++i)
      tally(m, std::uint32_t(hwy[i].bits) << 16, std::uint32_t(core[i].bits) << 16, is_nan32(in_bits[i]));
    print_mismatches(row + " hwy vs core convert_n", m, false);
  }
#endif
#ifdef BF16EMU_ANCHOR_CPFLOAT
  std::vector<float> src(n), dst(n);
  std::memcpy(src.data(), in_bits.data(), n * 4);
  bf16emu_anchor_cpfloat_round(dst.data(), src.data(), n, cpfloat_options());
  mismatches m;
  int shown = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t theirs;
    std::memcpy(&theirs, &dst[i], 4);
    const mismatches before = m;
    tally(m, std::uint32_t(core[i].bits) << 16, theirs, is_nan32(in_bits[i]));
    if ((m.value != before.value || m.nan_lost != before.nan_lost) && shown++ < 3)
      std::printf("  %s: %08x -> bf16emu %04x, CPFloat %08x\n", row.c_str(), in_bits[i], core[i].bits,
                  theirs);
  }
  print_mismatches(row + " core convert_n vs CPFloat", m, false);
#endif
}

void run_checks() {
#ifdef BF16EMU_ANCHOR_SOFTFLOAT
  check_scalar_all<op::add>();
  check_scalar_all<op::mul>();
  check_scalar_all<op::fma>();
  check_scalar_all<op::div>();
  check_scalar_all<op::sqrt>();
#endif
#if defined(BF16EMU_ANCHOR_CPFLOAT) || defined(BF16EMU_ANCHOR_BULK)
  for (set s : {set::data, set::bits})
    check_bulk(generate(s, kCheckN, 5), std::string("f32_to_bf16/") + set_name(s));
  // Every 257th fp32 encoding: all classes, both signs.
  std::vector<std::uint32_t> sweep;
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFull; x += 257)
    sweep.push_back(std::uint32_t(x));
  check_bulk(sweep, "f32_to_bf16/every-257th");
#endif
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Timed passes over operands prepared before the benchmarks run. Two kinds of rows:
//  - <row>/<impl>: one implementation per benchmark, its loop an out-of-line function
//    (callgrind: --toggle-collect='*anchors_loop_*'; instructions per op = the difference of two
//    runs with different --anchors_iterations over the difference of their element counts);
//  - pair/<row>/<impl>:<anchor>: both in the same benchmark, alternating section by section
//    (which goes first alternates too), each section timed by the thread's CPU clock; the
//    counter `ratio` is bf16emu's time over the anchor's, both under the same machine state.

struct scalar_input {
  std::vector<f32> x, y, z;
  std::vector<std::uint32_t> a, b, c;
};

scalar_input make_scalar(op o, set s) {
  const operands d = make_operands(o, s, kN);
  scalar_input in{{}, {}, {}, d.a, d.b, d.c};
  for (std::size_t i = 0; i < kN; ++i) {
    in.x.push_back(f32::from_bits(d.a[i]));
    in.y.push_back(f32::from_bits(d.b[i]));
    in.z.push_back(f32::from_bits(d.c[i]));
  }
  return in;
}

template <op Op> void pass_bf16emu(const scalar_input &d) {
  const env e{};
  for (std::size_t i = 0; i < kN; ++i) {
    result<binary32> r = emulated<Op>(d.x[i], d.y[i], d.z[i], e);
    benchmark::DoNotOptimize(r);
  }
}

#ifdef BF16EMU_ANCHOR_SOFTFLOAT
template <op Op> void pass_softfloat(const scalar_input &d) {
  for (std::size_t i = 0; i < kN; ++i) {
    float32_t r = anchor<Op>({d.a[i]}, {d.b[i]}, {d.c[i]});
    benchmark::DoNotOptimize(r);
  }
}
#endif

struct bulk_input {
  std::vector<f32> in;
  std::vector<float> in_float;
  mutable std::vector<bf16> out;
  mutable std::vector<float> out_float;
};

bulk_input make_bulk(set s, std::size_t n) {
  const auto bits = generate(s, n, 5);
  bulk_input b{std::vector<f32>(n), std::vector<float>(n), std::vector<bf16>(n), std::vector<float>(n)};
  for (std::size_t i = 0; i < n; ++i)
    b.in[i] = f32::from_bits(bits[i]);
  std::memcpy(b.in_float.data(), bits.data(), n * 4);
  return b;
}

void pass_core_convert_n(const bulk_input &b) {
  const env e{};
  benchmark::DoNotOptimize(convert_loop(b.in.data(), b.out.data(), b.in.size(), e));
  benchmark::ClobberMemory();
}

#ifdef BF16EMU_ANCHOR_BULK
void pass_hwy_convert_n(const bulk_input &b) {
  const env e{};
  benchmark::DoNotOptimize(bulk::convert_n(b.in.data(), b.out.data(), b.in.size(), e));
  benchmark::ClobberMemory();
}
#endif

#ifdef BF16EMU_ANCHOR_CPFLOAT
void pass_cpfloat(const bulk_input &b) {
  benchmark::DoNotOptimize(
      bf16emu_anchor_cpfloat_round(b.out_float.data(), b.in_float.data(), b.in.size(), cpfloat_options()));
  benchmark::ClobberMemory();
}
#endif

template <class Pass, class Input>
[[gnu::noinline]] void anchors_loop(benchmark::State &state, Pass pass, const Input &in, std::size_t n) {
  for (auto _ : state)
    pass(in);
  state.SetItemsProcessed(state.iterations() * std::int64_t(n));
}

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// What one reading of the thread's CPU clock adds to a timed section (a system call on some
// VMs, ~1 us): the smallest of many back-to-back differences, subtracted from every section.
double clock_cost() {
  static const double cost = [] {
    double best = 1;
    for (int i = 0; i < 1000; ++i) {
      const double t0 = thread_seconds();
      best = std::min(best, thread_seconds() - t0);
    }
    return best;
  }();
  return cost;
}

// Each timed section runs the pass `reps` times, at least 2^18 elements, so that the clock's
// own cost is small (and subtracted).
template <class Ours, class Theirs, class Input>
void paired(benchmark::State &state, Ours ours, Theirs theirs, const Input &in, std::size_t n) {
  const std::size_t reps = std::max<std::size_t>(1, (std::size_t{1} << 18) / n);
  const double cost = clock_cost();
  double t_ours = 0, t_theirs = 0;
  bool ours_first = true;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    for (std::size_t k = 0; k < reps; ++k)
      ours_first ? ours(in) : theirs(in);
    const double t1 = thread_seconds();
    for (std::size_t k = 0; k < reps; ++k)
      ours_first ? theirs(in) : ours(in);
    const double t2 = thread_seconds();
    (ours_first ? t_ours : t_theirs) += t1 - t0 - cost;
    (ours_first ? t_theirs : t_ours) += t2 - t1 - cost;
    ours_first = !ours_first;
  }
  const double elements = double(state.iterations()) * double(n * reps);
  state.counters["ratio"] = t_theirs > 0 ? t_ours / t_theirs : 0;
  state.counters["bf16emu_ns"] = 1e9 * t_ours / elements;
  state.counters["anchor_ns"] = 1e9 * t_theirs / elements;
}

// Prepared inputs live here for the whole run (benchmarks keep pointers to them).
std::map<std::string, scalar_input> g_scalar;
std::map<std::string, bulk_input> g_bulk;

void add_row(const std::string &name, std::function<void(benchmark::State &)> fn, long iterations) {
  auto *b = benchmark::RegisterBenchmark(name.c_str(), std::move(fn));
  if (iterations > 0) b->Iterations(iterations);
}

template <op Op> void register_scalar(set s, long iterations) {
  const std::string row = std::string("f32_") + op_name(Op) + "/" + set_name(s);
  const scalar_input &d = g_scalar[row] = make_scalar(Op, s);
  add_row(
      row + "/bf16emu", [&d](benchmark::State &st) { anchors_loop(st, pass_bf16emu<Op>, d, kN); },
      iterations);
#ifdef BF16EMU_ANCHOR_SOFTFLOAT
  add_row(
      row + "/softfloat", [&d](benchmark::State &st) { anchors_loop(st, pass_softfloat<Op>, d, kN); },
      iterations);
  add_row(
      "pair/" + row + "/bf16emu:softfloat",
      [&d](benchmark::State &st) { paired(st, pass_bf16emu<Op>, pass_softfloat<Op>, d, kN); }, iterations);
#endif
}

void register_all(long iterations) {
  for (set s : {set::data, set::bits}) {
    register_scalar<op::add>(s, iterations);
    register_scalar<op::mul>(s, iterations);
    register_scalar<op::fma>(s, iterations);
    register_scalar<op::div>(s, iterations);
    register_scalar<op::sqrt>(s, iterations);
  }
  for (set s : {set::data, set::bits})
    for (std::size_t n : {kN, kBigN}) {
      const std::string row = std::string("f32_to_bf16/") + set_name(s) + "/" + std::to_string(n);
      const bulk_input &b = g_bulk[row] = make_bulk(s, n);
#ifdef BF16EMU_ANCHOR_BULK
      add_row(
          row + "/bf16emu_hwy", [&b, n](benchmark::State &st) { anchors_loop(st, pass_hwy_convert_n, b, n); },
          iterations);
#endif
      add_row(
          row + "/bf16emu_core",
          [&b, n](benchmark::State &st) { anchors_loop(st, pass_core_convert_n, b, n); }, iterations);
#ifdef BF16EMU_ANCHOR_CPFLOAT
      add_row(
          row + "/cpfloat", [&b, n](benchmark::State &st) { anchors_loop(st, pass_cpfloat, b, n); },
          iterations);
#ifdef BF16EMU_ANCHOR_BULK
      add_row(
          "pair/" + row + "/bf16emu_hwy:cpfloat",
          [&b, n](benchmark::State &st) { paired(st, pass_hwy_convert_n, pass_cpfloat, b, n); }, iterations);
#endif
      add_row(
          "pair/" + row + "/bf16emu_core:cpfloat",
          [&b, n](benchmark::State &st) { paired(st, pass_core_convert_n, pass_cpfloat, b, n); }, iterations);
#endif
    }
}

// Console output plus, at the end, a summary: for every row, bf16emu's and the anchor's ns per
// element and their ratio from the separate rows, and the ratio of the paired row; medians of
// the repetitions when there are several, else the single run.
class ratio_reporter : public benchmark::ConsoleReporter {
public:
  explicit ratio_reporter(OutputOptions o) : ConsoleReporter(o) {}
  void ReportRuns(const std::vector<Run> &runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run &r : runs) {
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      medians_ = medians_ || median;
      if (!single && !median) continue;
      auto &c = counters_[r.run_name.function_name];
      for (const auto &[k, v] : r.counters)
        c[k] = v.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto &os = GetOutputStream();
    os << "\nCPU ns per element (" << (medians_ ? "medians" : "single runs")
       << "): separate rows, their ratio; the paired row's ratio\n";
    for (const auto &[name, c] : counters_) {
      const auto slash = name.rfind('/');
      const std::string row = name.substr(0, slash), impl = name.substr(slash + 1);
      if (name.rfind("pair/", 0) == 0 || impl == "softfloat" || impl == "cpfloat") continue;
      for (const char *anchor : {"softfloat", "cpfloat"}) {
        const auto theirs = counters_.find(row + "/" + anchor);
        if (theirs == counters_.end()) continue;
        const double ns = ns_per_element(c), anchor_ns = ns_per_element(theirs->second);
        double paired = 0;
        const auto pair = counters_.find("pair/" + row + "/" + impl + ":" + anchor);
        if (pair != counters_.end() && pair->second.count("ratio")) paired = pair->second.at("ratio");
        char line[200];
        std::snprintf(line, sizeof line, "  %-26s %-12s %7.3f  %-9s %7.3f  ratio %5.2f  paired %5.2f\n",
                      row.c_str(), impl.c_str(), ns, anchor, anchor_ns, anchor_ns > 0 ? ns / anchor_ns : 0.0,
                      paired);
        os << line;
      }
    }
  }

private:
  static double ns_per_element(const std::map<std::string, double> &c) {
    const auto it = c.find("items_per_second");
    return it != c.end() && it->second > 0 ? 1e9 / it->second : 0;
  }
  std::map<std::string, std::map<std::string, double>> counters_;
  bool medians_ = false;
};

} // namespace

int main(int argc, char **argv) {
  bool check = true, time = true;
  long iterations = 0;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--anchors_check_only") == 0)
      time = false;
    else if (std::strcmp(argv[i], "--anchors_no_check") == 0)
      check = false;
    else if (std::strncmp(argv[i], "--anchors_iterations=", 21) == 0)
      iterations = std::atol(argv[i] + 21);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
#ifdef BF16EMU_ANCHOR_BULK
  std::printf("bulk_target %s\n", bulk::target_name());
#endif
  if (check) run_checks();
  if (!time) return 0;
#ifdef BF16EMU_ANCHOR_SOFTFLOAT
  softfloat_defaults();
#endif
  register_all(iterations);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ratio_reporter reporter(isatty(1) ? ratio_reporter::OO_Defaults : ratio_reporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
