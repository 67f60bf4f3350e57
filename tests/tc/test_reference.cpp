// The fast model against the independent cpp_int reference (tests/oracle/tc_reference.hpp), per preset:
// >= 10^6 random dot products each (BF16EMU_TC_VECTORS overrides the count; the issue-16 presets
// run 10^5 in the default tier and 10^6 under label long, see issue16()), spread over threads. Classes of
// vectors (index mod 6):
//   0 random normal values in a moderate exponent range, random normal c
//   1 random bit patterns for every operand (subnormals, Inf, NaN, huge and tiny values)
//   2 near-cancelling sets: products in +- pairs that differ in low bits, c close to -sum
//   3 tiny values: subnormal/min-normal inputs, c zero or tiny (zero-term exponent,
//     subnormal products and subnormal results)
//   4 values around the zero-term exponent: products near 2^e_zero, c = 0, some zero products
//   5 normal values over the full exponent range (overflow to Inf, total alignment loss)
// A quarter of the vectors use a K other than the instruction's k (1 .. 2k: padding and
// chaining of instructions).
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "common.hpp"

namespace {

using namespace tctest;

// The presets of issue 16 (mixed formats, m8n8k4 C/D mixes, m16n8k8 fp16, mma.sync on sm100 and
// sm120 with fp8, fp6 and fp4 operands, f64 on sm80 and sm90) and the sm100 fp8 mma.sync rows,
// f64 m8n8k4 on sm86/sm89/sm100/sm120 and the tcgen05 f16 x bf16 mixes of issue 33: 10^5 vectors
// each in the default tier, 10^6
// under label long (tc_reference_issue16_long sets BF16EMU_TC_VECTORS_ISSUE16=1000000).
bool issue16(const preset &P) {
  for (const char *src :
       {tc::detail::src_volta_mix,      tc::detail::src_volta_open,   tc::detail::src_turing_k4,
        tc::detail::src_turing_k4_open, tc::detail::src_k8,           tc::detail::src_mix_fp8_ada,
        tc::detail::src_mix_fp8_hopper, tc::detail::src_sm100_mma,    tc::detail::src_sm100_mma_h,
        tc::detail::src_sm120,          tc::detail::src_sm120_fp8,    tc::detail::src_dmma,
        tc::detail::src_sm120_fp4,      tc::detail::src_sm120_fp6,    tc::detail::src_dmma_sm90,
        tc::detail::src_small_k,        tc::detail::src_small_k_open, tc::detail::src_fp8_k16,
        tc::detail::src_fp8_mma_sm100,  tc::detail::src_dmma_later,   tc::detail::src_tcgen05_f16_mix})
    if (P.source == src) return true;
  return false;
}

long vectors_per_preset(const preset &P) {
  if (issue16(P)) {
    if (const char *s = std::getenv("BF16EMU_TC_VECTORS_ISSUE16")) return std::max(1L, std::atol(s));
    if (const char *s = std::getenv("BF16EMU_TC_VECTORS")) return std::max(1L, std::atol(s));
    return 100000;
  }
  if (const char *s = std::getenv("BF16EMU_TC_VECTORS")) return std::max(1L, std::atol(s));
  return 1000000;
}

struct mismatch {
  std::vector<std::uint64_t> a, b;
  std::uint64_t c, model, ref;
  int K;
};

void make_vector(gen &g, const preset &P, long index, std::vector<std::uint64_t> &a,
                 std::vector<std::uint64_t> &b, std::uint64_t &c, int &K) {
  // A in P.in, B in P.b, C in P.c (they differ for the mixed presets).
  const tcref::fmt in = ref_fmt(P.in), inb = ref_fmt(P.b), out = ref_fmt(P.c);
  K = g.coin(4) ? g.uniform(1, 2 * P.k) : P.k;
  a.assign(K, 0), b.assign(K, 0);
  const int cls = int(index % 6);
  const int in_emax = in.emax();
  switch (cls) {
  case 0:
    for (int i = 0; i < K; ++i)
      a[i] = g.normal(in, -6, 6), b[i] = g.normal(inb, -6, 6);
    c = g.coin(8) ? 0 : g.normal(out, -10, 10);
    break;
  case 1:
    for (int i = 0; i < K; ++i)
      a[i] = g.any(in), b[i] = g.any(inb);
    c = g.any(out);
    break;
  case 2: {
    const int half = K / 2;
    for (int i = 0; i < half; ++i) {
      a[i] = g.normal(in, -4, 4), b[i] = g.normal(inb, -4, 4);
      const std::uint64_t sign = std::uint64_t{1} << (in.ebits + in.mbits);
      std::uint64_t na = a[i] ^ sign; // -a, then perturb its low fraction bits
      if (g.coin(2)) na ^= g.bits(std::min(2, in.mbits));
      if (tcref::decode(in, na).k != tcref::kind::finite) na = a[i] ^ sign;
      a[half + i] = na, b[half + i] = b[i];
    }
    for (int i = 2 * half; i < K; ++i)
      a[i] = g.normal(in, -20, -8), b[i] = g.normal(inb, -4, 4);
    // Shuffle so that pairs straddle block boundaries.
    for (int i = K - 1; i > 0; --i) {
      const int j = g.uniform(0, i);
      std::swap(a[i], a[j]), std::swap(b[i], b[j]);
    }
    c = g.coin(3) ? 0 : g.normal(out, -30, 2);
    break;
  }
  case 3:
    for (int i = 0; i < K; ++i) {
      a[i] = g.coin(2) ? g.tiny(in) : g.normal(in, -8, 8);
      b[i] = g.coin(2) ? g.tiny(inb) : g.normal(inb, -8, 8);
    }
    c = g.coin(2) ? 0 : g.tiny(out);
    break;
  case 4: {
    // Products whose exponent is near e_zero (only reachable by 8-bit-exponent inputs);
    // for narrow inputs this is just more tiny products.
    const int target = P.block.e_zero / 2;
    for (int i = 0; i < K; ++i) {
      if (g.coin(4)) {
        a[i] = 0, b[i] = g.normal(inb, -4, 4);
      } else {
        a[i] = g.normal(in, target - 12, target + 4);
        b[i] = g.normal(inb, target - 12, target + 4);
      }
    }
    c = g.coin(4) ? g.tiny(out) : (g.coin(2) ? std::uint64_t{1} << (out.ebits + out.mbits) : 0);
    break;
  }
  default:
    for (int i = 0; i < K; ++i)
      a[i] = g.normal(in, in.emin(), in_emax), b[i] = g.normal(inb, inb.emin(), in_emax);
    c = g.coin(4) ? 0 : g.normal(out, -200, 200);
    break;
  }
}

class ModelVsReference : public ::testing::TestWithParam<int> {};

TEST_P(ModelVsReference, RandomVectorsAgreeBitForBit) {
  const preset &P = presets[GetParam()];
  const long total = vectors_per_preset(P);
  const unsigned nthreads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  std::atomic<long> checked{0}, bad{0};
  std::mutex mu;
  std::vector<mismatch> first;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nthreads; ++t) {
    pool.emplace_back([&, t] {
      gen g(0x7c0ffee0ull * (GetParam() + 1) + t);
      std::vector<std::uint64_t> a, b;
      std::uint64_t c = 0;
      int K = 0;
      long local = 0;
      for (long i = t; i < total; i += nthreads) {
        make_vector(g, P, i, a, b, c, K);
        const std::uint64_t dm = model_dot(P, a.data(), b.data(), K, c);
        const std::uint64_t dr = ref_dot(P, a.data(), b.data(), K, c);
        ++local;
        if (dm != dr) {
          ++bad;
          std::lock_guard<std::mutex> lock(mu);
          if (first.size() < 5) first.push_back({a, b, c, dm, dr, K});
        }
      }
      checked += local;
    });
  }
  for (auto &th : pool)
    th.join();
  EXPECT_EQ(checked.load(), total);
  EXPECT_EQ(bad.load(), 0) << describe(P) << ": " << bad.load() << " of " << total << " differ";
  for (const mismatch &m : first) {
    std::ostringstream s;
    s << "K=" << m.K << " a:";
    for (auto v : m.a)
      s << ' ' << hex(v);
    s << " b:";
    for (auto v : m.b)
      s << ' ' << hex(v);
    ADD_FAILURE() << s.str() << " c: " << hex(m.c) << " model " << hex(m.model) << " reference "
                  << hex(m.ref);
  }
  RecordProperty("vectors", std::to_string(checked.load()));
}

INSTANTIATE_TEST_SUITE_P(AllPresets, ModelVsReference, ::testing::Range(0, preset_count),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return describe(presets[info.param], "_", "_");
                         });

// zero_exp::mmasim (MMA-Sim's zero-term exponents, block.hpp) against the reference's own
// mmasim_zeros rule, on every preset with fused or two-block accumulation: 4,000 vectors each
// (the classes above, with a quarter of the operands and of the C values then set to zero, so
// that zero terms are common). Also counts the vectors on which the two rules give different D,
// to show the option changes results (a zero product of 0 * 2^e has exponent e - 126, above a
// tiny c even for fp16 and fp8 inputs).
TEST(ModelVsReference, MmasimZeroRuleAgreesBitForBit) {
  long total = 0, differ_from_default = 0;
  for (const preset &P0 : presets) {
    if (P0.accum == accum_kind::fma_chain) continue;
    preset P = P0;
    P.block.zeros = zero_exp::mmasim;
    constexpr long count = 4000;
    const unsigned nthreads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    std::atomic<long> bad{0}, differ{0};
    std::mutex mu;
    std::string first;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < nthreads; ++t) {
      pool.emplace_back([&, t] {
        gen g(0x2e70ull * std::uint64_t(&P0 - presets + 1) + t);
        std::vector<std::uint64_t> a, b;
        std::uint64_t c = 0;
        int K = 0;
        for (long i = t; i < count; i += nthreads) {
          make_vector(g, P, i, a, b, c, K);
          for (int k = 0; k < K; ++k) {
            if (g.coin(4)) a[k] &= std::uint64_t{1} << (ref_fmt(P.in).width() - 1); // +-0
            if (g.coin(8)) b[k] = 0;
          }
          if (g.coin(4)) c = 0;
          const std::uint64_t dm = model_dot(P, a.data(), b.data(), K, c);
          const std::uint64_t dr = ref_dot(P, a.data(), b.data(), K, c);
          differ += dm != model_dot(P0, a.data(), b.data(), K, c);
          if (dm != dr && bad++ == 0) {
            std::lock_guard<std::mutex> lock(mu);
            first = "K=" + std::to_string(K) + " c " + hex(c) + " model " + hex(dm) + " reference " + hex(dr);
          }
        }
      });
    }
    for (auto &th : pool)
      th.join();
    EXPECT_EQ(bad.load(), 0) << describe(P) << ": " << first;
    total += count, differ_from_default += differ.load();
  }
  std::printf("[ mmasim ] %ld vectors, 0 expected mismatches; %ld differ from the e_zero default\n", total,
              differ_from_default);
  EXPECT_GT(differ_from_default, 0);
}

// The reference against itself is no test; this checks that the reference can fail:
// a deliberately wrong parameter (F one less) must disagree with the model somewhere.
TEST(ModelVsReference, ReferenceDetectsAWrongParameter) {
  const preset &P = *find_preset(arch::sm90, instr_kind::mma, format_id::bf16, format_id::fp32);
  gen g(42);
  std::vector<std::uint64_t> a, b;
  std::uint64_t c = 0;
  int K = 0, differ = 0;
  tcref::params wrong = ref_params(P.block);
  wrong.F -= 1;
  for (long i = 0; i < 20000; ++i) {
    make_vector(g, P, i, a, b, c, K);
    const std::uint64_t dm = model_dot(P, a.data(), b.data(), K, c);
    const std::uint64_t dr = tcref::dot(ref_fmt(P.in), ref_fmt(P.out), wrong, P.k, a.data(), b.data(), K, c);
    differ += dm != dr;
  }
  EXPECT_GT(differ, 0);
}

} // namespace
