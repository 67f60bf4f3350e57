// The lane-parallel GEMM kernel (src/tc_lanes) against the tensor-core model's own chains
// (tc::dot), bit for bit, on every preset the kernel covers, each compiled SIMD target that this
// CPU supports forced in turn; and its output rounding against the model's round_out.
// BF16EMU_TC_LANES_ELEMENTS output elements per preset (default 10^5; the long tier 10^6).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <bf16emu/tc.hpp>

#include "../hwy_targets.hpp"
#include "tc_lanes/tc_lanes.hpp"

namespace {

using namespace bf16emu;
using namespace bf16emu::tc;

long elements_per_preset() {
  const char *v = std::getenv("BF16EMU_TC_LANES_ELEMENTS");
  return v ? std::atol(v) : 100000;
}

// Runs body() once per SIMD target that is compiled and supported here, forcing it.
template <class Fn> void for_each_target(Fn &&body) {
  bf16emu_test::for_each_hwy_target(tc_lanes::target_name, body);
}

// The rounding: every leading-one position of the sum and bases that put the result in the
// normal range, across the subnormal range, below it, and past FP32's largest value.
TEST(TcLanes, RoundingMirrorsRoundOut) {
  std::mt19937_64 rng(7);
  const std::size_t n = 200000;
  std::vector<std::int32_t> sum(n), base(n);
  std::vector<std::uint32_t> got(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int width = int(rng() % 32); // bits of |sum|: 0..31
    std::uint32_t mag = width == 0 ? 0u : std::uint32_t(rng() >> (64 - width)) | (1u << (width - 1));
    if (mag >= 0x80000000u) mag = 0x7fffffffu;
    if (rng() % 8 == 0) mag &= ~((1u << (rng() % 24)) - 1); // trailing zeros: exact cases
    sum[i] = (rng() & 1) ? -std::int32_t(mag) : std::int32_t(mag);
    // e = top + base over [-200, 160]: far below the subnormals to past the largest finite value
    const int e = int(rng() % 361) - 200;
    base[i] = e - (width == 0 ? 0 : width - 1);
  }
  for_each_target([&] {
    tc_lanes::round_fp32(sum.data(), base.data(), got.data(), n);
    long bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t s = sum[i];
      const std::uint64_t want = s == 0
                                     ? 0
                                     : tc::detail::round_out<binary32>(s < 0, std::uint64_t(s < 0 ? -s : s),
                                                                       base[i], 23, out_round::truncate);
      if (got[i] != want && bad++ < 5)
        ADD_FAILURE() << "sum " << sum[i] << " base " << base[i] << ": " << std::hex << got[i] << " want "
                      << want;
    }
    EXPECT_EQ(bad, 0) << "of " << n;
  });
}

// Random operands of a format: one of several distributions per problem.
// tiny: products near 2^-140, below bf16's e_zero, with C mostly 0 (the block's max exponent is
// then e_zero); maxsig: every product positive with the largest significand at one exponent and C
// near it, so that the block's 32-bit sum overflows (the kernel's fallback).
enum class dist { normal, mixed, wide, zeros, subnormal, specials, cancel, bits, huge, tiny, maxsig, count };

template <class In> struct gen {
  std::mt19937_64 &rng;
  dist d;
  std::uint64_t pattern(int exp_lo, int exp_hi) { // biased exponent in [exp_lo, exp_hi]
    const std::uint64_t sign = (rng() & 1) ? In::sign_mask : 0;
    const std::uint64_t e = std::uint64_t(exp_lo + int(rng() % std::uint64_t(exp_hi - exp_lo + 1)));
    return sign | (e << In::frac_bits) | (rng() & In::frac_mask);
  }
  std::uint64_t operator()() {
    const int top = In::exp_field_max - 1, mid = In::bias;
    switch (d) {
    case dist::normal: return pattern(mid - 3, mid + 2);
    case dist::mixed: return pattern(std::max(1, mid - 20), std::min(top, mid + 20));
    case dist::wide: return pattern(1, top);
    case dist::zeros: return rng() % 3 == 0 ? ((rng() & 1) ? In::sign_mask : 0) : pattern(mid - 4, mid + 4);
    case dist::subnormal:
      return rng() % 2 ? (((rng() & 1) ? In::sign_mask : 0) | (rng() & In::frac_mask)) : pattern(1, 6);
    case dist::specials:
      if (rng() % 40 == 0)
        return ((rng() & 1) ? In::sign_mask : 0) | In::exp_mask | (rng() % 3 ? 0 : rng() & In::frac_mask);
      return pattern(mid - 8, mid + 8);
    case dist::cancel: return pattern(mid, mid); // one binade: sums of +-x cancel often
    case dist::huge: return pattern(std::max(1, top - 3), top);
    case dist::tiny: return pattern(std::max(1, mid - 76), std::max(1, mid - 66));
    case dist::maxsig: return (std::uint64_t(mid) << In::frac_bits) | In::frac_mask;
    default: return rng() & (In::sign_mask | In::abs_mask);
    }
  }
};

// An FP32 accumulator to go with the operands.
std::uint32_t c_value(std::mt19937_64 &rng, dist d) {
  const std::uint32_t sign = (rng() & 1) ? 0x80000000u : 0u;
  if (d == dist::tiny && rng() % 4 != 0) return 0;
  if (d == dist::maxsig && rng() % 4 != 0) return 0x3f800000u | std::uint32_t(rng() & 0x7fffff); // [1, 2)
  switch (rng() % 8) {
  case 0: return sign;                                   // +-0
  case 1: return sign | std::uint32_t(rng() & 0x7fffff); // subnormal
  case 2:
    return d == dist::specials ? sign | 0x7f800000u | (rng() % 2 ? std::uint32_t(rng() & 0x7fffff) : 0u)
                               : sign;
  case 3: return sign | (std::uint32_t(250 + rng() % 5) << 23) | std::uint32_t(rng() & 0x7fffff); // huge
  case 4: return std::uint32_t(rng()); // any pattern
  default: return sign | (std::uint32_t(100 + rng() % 55) << 23) | std::uint32_t(rng() & 0x7fffff);
  }
}

struct problem {
  int rows, ncols, K;
  std::ptrdiff_t lda, sa, sb, bcol, ldc;
  std::vector<std::uint64_t> a, b; // bit patterns, laid out with the strides
  std::vector<std::uint32_t> c;
};

template <class In> problem make_problem(std::mt19937_64 &rng, int max_k) {
  problem P;
  P.rows = 1 + int(rng() % 9), P.ncols = 1 + int(rng() % 37), P.K = 1 + int(rng() % std::uint64_t(max_k));
  const bool a_rows = rng() % 4 != 0, b_cols = rng() % 2 != 0; // A row-major? B's columns contiguous?
  P.lda = a_rows ? P.K + std::ptrdiff_t(rng() % 3) : 1;
  P.sa = a_rows ? 1 : P.rows;
  P.bcol = b_cols ? P.K + std::ptrdiff_t(rng() % 3) : 1;
  P.sb = b_cols ? 1 : P.ncols;
  P.ldc = P.ncols + std::ptrdiff_t(rng() % 2);
  const dist d = dist(rng() % std::uint64_t(dist::count));
  gen<In> g{rng, d};
  P.a.assign(std::size_t(a_rows ? P.rows * P.lda : P.K * P.rows), 0);
  P.b.assign(std::size_t(b_cols ? P.ncols * P.bcol : P.K * P.ncols), 0);
  for (int i = 0; i < P.rows; ++i)
    for (int k = 0; k < P.K; ++k)
      P.a[std::size_t(i * P.lda + k * P.sa)] = g();
  for (int j = 0; j < P.ncols; ++j)
    for (int k = 0; k < P.K; ++k) {
      std::uint64_t x = g();
      // cancellation: column j's products pair up as x*y and x*(-y)
      if (d == dist::cancel && k % 2 == 1) x = P.b[std::size_t(j * P.bcol + (k - 1) * P.sb)] ^ In::sign_mask;
      P.b[std::size_t(j * P.bcol + k * P.sb)] = x;
    }
  if (d == dist::cancel)
    for (int i = 0; i < P.rows; ++i)
      for (int k = 1; k < P.K; k += 2)
        P.a[std::size_t(i * P.lda + k * P.sa)] = P.a[std::size_t(i * P.lda + (k - 1) * P.sa)];
  P.c.assign(std::size_t(P.rows * P.ldc), 0);
  for (auto &x : P.c)
    x = c_value(rng, d);
  return P;
}

template <class In> std::vector<fp<In>> as_fp(const std::vector<std::uint64_t> &bits) {
  std::vector<fp<In>> v(bits.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = fp<In>::from_bits(bits[i]);
  return v;
}

template <class In> void check_preset(const preset &pr, long elements) {
  SCOPED_TRACE(std::string(to_string(pr.arch)) + " " + to_string(pr.kind) + " " + pr.ptx);
  std::mt19937_64 rng(std::uint64_t(pr.block.L) * 1000003u + std::uint64_t(pr.block.F) * 101u +
                      std::uint64_t(pr.in));
  struct done {
    problem P;
    std::vector<fp<In>> a, b;
    std::vector<std::uint32_t> want;
  };
  std::vector<done> cases;
  long n = 0;
  while (n < elements) {
    done x{make_problem<In>(rng, cases.size() % 16 == 0 ? 600 : 80), {}, {}, {}};
    const problem &P = x.P;
    x.a = as_fp<In>(P.a), x.b = as_fp<In>(P.b);
    const std::vector<fp<In>> &a = x.a, &b = x.b;
    x.want = P.c;
    for (int i = 0; i < P.rows; ++i)
      for (int j = 0; j < P.ncols; ++j) {
        std::uint32_t &w = x.want[std::size_t(i * P.ldc + j)];
        w = dot<In, binary32>(pr.block, pr.k, a.data() + i * P.lda, P.sa, b.data() + j * P.bcol, P.sb, P.K,
                              f32::from_bits(w))
                .bits;
      }
    n += long(P.rows) * P.ncols;
    cases.push_back(std::move(x));
  }
  for_each_target([&] {
    long bad = 0, total = 0;
    for (const done &x : cases) {
      const problem &P = x.P;
      std::vector<std::uint32_t> got = P.c;
      lanes_call call;
      call.p = pr.block, call.instr_k = pr.k, call.in = pr.in;
      call.rows = P.rows, call.ncols = P.ncols, call.K = P.K;
      call.a = x.a.data(), call.lda = P.lda, call.sa = P.sa;
      call.b = x.b.data(), call.sb = P.sb, call.bcol = P.bcol;
      call.c = got.data(), call.ldc = P.ldc;
      ASSERT_TRUE(tc_lanes::run(call));
      for (int i = 0; i < P.rows; ++i)
        for (int j = 0; j < P.ldc; ++j) { // the padding column too: left as it was
          const std::size_t e = std::size_t(i * P.ldc + j);
          ++total;
          if (got[e] != x.want[e] && bad++ < 5)
            ADD_FAILURE() << "row " << i << " col " << j << " K " << P.K << ": " << std::hex << got[e]
                          << " want " << x.want[e];
        }
    }
    EXPECT_EQ(bad, 0) << "mismatches of " << total << " elements";
  });
}

// Every fused FP32-output preset whose block the kernel covers.
TEST(TcLanes, KernelEqualsModelOnEveryCoveredPreset) {
  const long elements = elements_per_preset();
  int covered = 0;
  for (int i = 0; i < preset_count; ++i) {
    const preset &pr = presets[i];
    if (pr.accum != accum_kind::fused || pr.out != format_id::fp32 || pr.b != pr.in || pr.c != pr.out)
      continue;
    if (!tc_lanes::covers(pr.block, pr.in)) continue;
    ++covered;
    if (pr.in == format_id::bf16)
      check_preset<bfloat16>(pr, elements);
    else if (pr.in == format_id::fp16)
      check_preset<binary16>(pr, elements);
    else
      check_preset<tensorfloat32>(pr, elements);
  }
  // sm80 and sm90 bf16 and fp16 at least (mma and wgmma), and the presets sharing their blocks.
  EXPECT_GE(covered, 8);
  for (arch a : {arch::sm80, arch::sm90})
    for (format_id f : {format_id::bf16, format_id::fp16}) {
      const preset *pr = find_preset(a, instr_kind::mma, f, format_id::fp32);
      ASSERT_NE(pr, nullptr);
      EXPECT_TRUE(tc_lanes::covers(pr->block, f)) << to_string(a);
    }
}

// What the kernel declines: FP16 output, nearest-even, fp8 blocks (F 13), an int32 overflow of
// the products' sum (L 32 at F 25 for bf16).
TEST(TcLanes, DeclinesWhatItDoesNotCover) {
  const preset *h = find_preset(arch::sm90, instr_kind::mma, format_id::fp16, format_id::fp16);
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(tc_lanes::covers(h->block, format_id::fp16));
  EXPECT_FALSE(tc_lanes::covers(block_params{32, 13, -133, 13, out_round::truncate}, format_id::bf16));
  EXPECT_FALSE(tc_lanes::covers(block_params{32, 25, -133, 23, out_round::truncate}, format_id::bf16));
  EXPECT_FALSE(tc_lanes::covers(block_params{16, 25, -133, 23, out_round::truncate}, format_id::e4m3));
}

// Installed as the model's hook, tc::gemm takes it and gives tc::dot's bits; under MMA-Sim's
// zero rule (block_params::zeros, which the kernel declines) too.
class TcLanesGemm : public ::testing::TestWithParam<zero_exp> {};
INSTANTIATE_TEST_SUITE_P(Zeros, TcLanesGemm, ::testing::Values(zero_exp::e_zero, zero_exp::mmasim),
                         [](const ::testing::TestParamInfo<zero_exp> &i) {
                           return std::string(to_string(i.param));
                         });
TEST_P(TcLanesGemm, GemmThroughTheHook) {
  preset pr = *find_preset(arch::sm90, instr_kind::mma, format_id::bf16, format_id::fp32);
  pr.block.zeros = GetParam();
  EXPECT_EQ(tc_lanes::covers(pr.block, format_id::bf16), GetParam() == zero_exp::e_zero);
  std::mt19937_64 rng(3);
  const int M = 37, N = 29, K = 100;
  std::vector<bf16> A(std::size_t(M * K)), B(std::size_t(K * N));
  std::vector<f32> C(std::size_t(M * N)), D(C.size());
  // Half the rows: mixed operands; the other half: products near 2^-140, every fifth A element
  // zero and C mostly 0, where the two zero rules give different bits.
  gen<bfloat16> mixed{rng, dist::mixed}, tiny{rng, dist::tiny};
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      A[std::size_t(i * K + k)] = bf16::from_bits(i % 2 ? (k % 5 ? tiny() : 0) : mixed());
  for (auto &x : B)
    x = bf16::from_bits(tiny());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      C[std::size_t(i * N + j)] = f32::from_bits(c_value(rng, i % 2 ? dist::tiny : dist::mixed));
  tc_lanes::install();
  gemm<bfloat16, binary32>(pr.block, pr.k, M, N, K, A.data(), K, B.data(), N, C.data(), N, D.data(), N);
  tc::lanes_hook.store(nullptr);
  block_params other = pr.block;
  other.zeros = GetParam() == zero_exp::e_zero ? zero_exp::mmasim : zero_exp::e_zero;
  long bad = 0, rule_matters = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const f32 want =
          dot<bfloat16, binary32>(pr.block, pr.k, A.data() + i * K, 1, B.data() + j, N, K, C[i * N + j]);
      const f32 alt =
          dot<bfloat16, binary32>(other, pr.k, A.data() + i * K, 1, B.data() + j, N, K, C[i * N + j]);
      bad += D[std::size_t(i * N + j)].bits != want.bits;
      rule_matters += alt.bits != want.bits;
    }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(rule_matters, 0); // the data tell the two rules apart
}

} // namespace
