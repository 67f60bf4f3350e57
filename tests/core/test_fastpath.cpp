// Fast-path oracle tier for the scalar core (issue 14, goal 1): fp32 sqrt and div below, and the
// same-format add/sub/mul/fma/div/sqrt fast paths (FastPath.Add ... SqrtGeneralAndFast, further down).
//
// sqrt now forms its 57-bit root from the binary64 root plus an exact integer fix-up
// (core/arith.hpp sqrt_root). div keeps its two-step integer long division (a binary64
// estimate was tried and measured no faster); this tier checks it all the same, so that a
// later div fast path has its oracle. Each result is checked against an independent reference:
//   * div:  the quotient from a 128-bit integer division, rounded by fast_oracle::round_sig;
//   * sqrt: a 128-bit integer Newton root, proved by squaring, rounded the same way;
//   * special operands (NaN, Inf, zero): hand-written IEEE rules (sqrt) or the exact oracle (div).
// Every case runs in all 7 rounding modes, both tininess settings alternating, random
// stochastic bits, and 1 in 64 also through the tracer path.
//
// Default tier (core_tests): BF16EMU_FASTPATH_CASES cases per op per mode, default 150000
// (about 10^6 per op). Long tier (CTest label "long", test core_fastpath_long):
//   ctest --test-dir build -R core_fastpath_long
// (core_tests --gtest_filter='FastPath.*' with BF16EMU_FASTPATH_CASES=100000000 and
// BF16EMU_FASTPATH_ALL_SQRT=1), which also runs every one of the 2^32 fp32 sqrt inputs in all 7 modes.
#include <gtest/gtest.h>

#include <bf16emu/core.hpp>
#include <bf16emu/parallel.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common.hpp"
#include "fast_oracle.hpp"

namespace {

using namespace coretest;

constexpr fast_oracle::out_fmt kFp32{8, 23};

std::uint64_t env_u64(const char *name, std::uint64_t fallback) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 10);
}

std::uint64_t cases_per_mode() { return env_u64("BF16EMU_FASTPATH_CASES", 150000); }

int msb64(std::uint64_t x) { return 63 - __builtin_clzll(x); }

// |x| = sig * 2^e2 for a finite nonzero fp32 pattern.
void decode(std::uint32_t x, std::uint64_t &sig, int &e2) {
  const std::uint32_t ef = (x >> 23) & 0xFF, fr = x & 0x7FFFFF;
  sig = ef == 0 ? fr : (fr | 0x800000u);
  e2 = ef == 0 ? -149 : int(ef) - 150;
}

bool is_nan32(std::uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFF) != 0; }
bool is_inf32(std::uint32_t x) { return (x & 0x7FFFFFFFu) == 0x7F800000u; }
bool is_zero32(std::uint32_t x) { return (x & 0x7FFFFFFFu) == 0; }

// The mode-independent part of a reference result: a fixed answer, or
// (-1)^sign * sig * 2^(E - p) (sig's bit 0 a round-to-odd sticky bit) still to be rounded.
struct prepared {
  bool fixed = false;
  fast_oracle::res fixed_res{0, 0};
  bool sign = false;
  std::uint64_t sig = 0;
  int p = 0, E = 0;
};

fast_oracle::res finish(const prepared &p, int mode, bool tiny_before, std::uint32_t random) {
  if (p.fixed) return p.fixed_res;
  return fast_oracle::round_sig(p.sign, p.sig, p.p, p.E, kFp32, mode, tiny_before, random);
}

// ---- sqrt reference: an integer Newton root in 128 bits ----------------------------------------
// Written from docs/semantics.md, not from core/arith.hpp (which forms its root from the
// binary64 root and a fix-up): for x = sig * 2^e2, N = sig * 2^k with k making e2 - k even and
// N 116 or 117 bits long, so sqrt(x) = sqrt(N) * 2^((e2 - k) / 2) with R = floor(sqrt(N)) of
// 58 or 59 bits, at least 34 below the last bit of a 24-bit result. R comes from Newton's
// iteration on integers and is then proved: R^2 <= N < (R + 1)^2, or the case fails.
__extension__ typedef unsigned __int128 u128; // GCC and clang, host only

int bit_length(u128 n) {
  const std::uint64_t hi = std::uint64_t(n >> 64), lo = std::uint64_t(n);
  return hi != 0 ? 128 - __builtin_clzll(hi) : (lo != 0 ? 64 - __builtin_clzll(lo) : 0);
}

// floor(sqrt(n)) for n > 0: start at a power of two >= sqrt(n); y = (x + n / x) / 2 decreases
// strictly until x = floor(sqrt(n)).
u128 newton_isqrt(u128 n) {
  u128 x = u128{1} << ((bit_length(n) + 1) / 2);
  for (;;) {
    const u128 y = (x + n / x) / 2;
    if (y >= x) return x;
    x = y;
  }
}

// floor(sqrt(m * 2^52)) and the remainder (m < 2^62), as core/arith.hpp's sqrt_root defines them.
struct root_rem {
  std::uint64_t root, rem;
};
root_rem reference_root57(std::uint64_t m) {
  const u128 n = u128{m} << 52;
  const u128 r = newton_isqrt(n);
  return {std::uint64_t(r), std::uint64_t(n - r * r)};
}

prepared sqrt_prepare(std::uint32_t x, bool &root_ok) {
  prepared p;
  root_ok = true;
  if (is_nan32(x)) { // a NaN operand: quieted; invalid when it was signaling
    p.fixed = true;
    p.fixed_res = {x | 0x400000u, std::uint8_t((x & 0x400000u) ? 0 : fast_oracle::F_INVALID)};
  } else if (is_zero32(x)) { // sqrt(+-0) = +-0
    p.fixed = true;
    p.fixed_res = {x, 0};
  } else if (x >> 31) { // sqrt(x < 0): invalid, default NaN
    p.fixed = true;
    p.fixed_res = {0x7FC00000u, fast_oracle::F_INVALID};
  } else if (is_inf32(x)) { // sqrt(+Inf) = +Inf, exact
    p.fixed = true;
    p.fixed_res = {x, 0};
  } else {
    std::uint64_t sig;
    int e2;
    decode(x, sig, e2);
    int k = 116 - (msb64(sig) + 1);
    if ((e2 - k) & 1) ++k;
    const u128 n = u128{sig} << k;
    const u128 r = newton_isqrt(n);
    root_ok = r * r <= n && (r + 1) * (r + 1) > n;
    // sqrt(x) = (r + f) * 2^h, h = (e2 - k) / 2, f in [0, 1): one more bit, f > 0 as a sticky bit.
    p.sig = (std::uint64_t(r) << 1) | std::uint64_t(r * r != n);
    p.p = msb64(p.sig);
    p.E = p.p + (e2 - k) / 2 - 1; // value = sig * 2^(h - 1) = sig * 2^(E - p)
  }
  return p;
}

// ---- div reference: 128-bit integer quotient --------------------------------------------------
prepared div_prepare(std::uint32_t a, std::uint32_t b, const env &e) {
  prepared p;
  if (is_nan32(a) || is_nan32(b) || is_inf32(a) || is_inf32(b) || is_zero32(a) || is_zero32(b)) {
    const oracle::result o = oracle::div(oracle::operand{a, oracle::fp32}, oracle::operand{b, oracle::fp32},
                                         oracle::fp32, oenv(e));
    p.fixed = true;
    p.fixed_res = {std::uint32_t(o.bits), o.flags};
    return p;
  }
  std::uint64_t sa, sb;
  int ea, eb;
  decode(a, sa, ea);
  decode(b, sb, eb);
  const int na = 23 - msb64(sa), nb = 23 - msb64(sb); // leading bits to 23
  sa <<= na;
  sb <<= nb;
  ea -= na;
  eb -= nb;
  // q = floor(sa * 2^58 / sb) in (2^57, 2^59): 58 or 59 bits, at least 34 below a 24-bit result.
  const u128 num = static_cast<u128>(sa) << 58;
  const std::uint64_t q = std::uint64_t(num / sb);
  const bool sticky = num % sb != 0;
  p.sign = ((a ^ b) >> 31) != 0;
  p.sig = (q << 1) | std::uint64_t(sticky);
  p.p = msb64(p.sig);
  p.E = p.p + ea - eb - 59; // value = sig * 2^(ea - eb - 59)
  return p;
}

// ---- operand generators ---------------------------------------------------------------------
// Class boundaries: subnormal/normal, around 1, the overflow and underflow exponents, and
// fractions at their extremes, mixed with random bits.
std::uint32_t edge_f32(rng &r) {
  static constexpr std::uint32_t exps[] = {0, 0, 1, 1, 2, 23, 24, 25, 103, 126, 127, 128, 229, 252, 253, 254};
  static constexpr std::uint32_t fracs[] = {0, 1, 2, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x3FFFFF, 0x400001};
  const std::uint32_t ex = r.below(8) == 0 ? std::uint32_t(r.below(255)) : exps[r.below(16)];
  const std::uint32_t fr = r.coin() ? (r.u32() & 0x7FFFFF) : fracs[r.below(8)];
  return (r.u32() & 0x80000000u) | (ex << 23) | fr;
}

float as_float(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t as_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

std::uint32_t with_exp(std::uint32_t x, int biased) {
  return (x & 0x807FFFFFu) | (std::uint32_t(biased) << 23);
}

void div_operands(rng &r, std::uint32_t &a, std::uint32_t &b) {
  switch (r.below(6)) {
  case 0:
  case 1: // random bit patterns
    a = r.u32();
    b = r.u32();
    break;
  case 2: // boundary classes
    a = edge_f32(r);
    b = edge_f32(r);
    break;
  case 3: { // quotient exponent near overflow (~254) or underflow (~1, and deep subnormal)
    a = r.u32();
    b = r.u32();
    const int ia = int((a >> 23) & 0xFF);
    int ib = r.coin() ? ia - 127 : ia + 126 + r.below(26);
    ib += r.below(5) - 2;
    if (ib >= 0 && ib <= 254) b = with_exp(b, ib);
    break;
  }
  case 4: { // exact quotients: a = b * q with q of few bits (also into the subnormal range)
    b = r.u32() & 0x7FFFFFFFu;
    if (r.coin()) b = with_exp(b, r.below(254) + 1);
    const double q = double(r.below(64) + 1) * std::ldexp(1.0, r.below(40) - 20);
    const double pr = double(as_float(b)) * q;
    a = std::isfinite(pr) && double(float(pr)) == pr ? as_bits(float(pr)) : r.u32();
    a ^= r.u32() & 0x80000000u;
    break;
  }
  default: { // divisor a power of two: subnormal quotients with exact ties and exact results
    a = r.u32();
    b = (r.u32() & 0x80000000u) | (std::uint32_t(r.below(254) + 1) << 23);
    if (r.coin()) b = with_exp(b, int((a >> 23) & 0xFF) + 126 - r.below(3)); // lands near 2^-126
    break;
  }
  }
}

std::uint32_t sqrt_operand(rng &r) {
  switch (r.below(6)) {
  case 0:
  case 1: return r.u32(); // random bit patterns (half of them negative: invalid)
  case 2: return edge_f32(r) & 0x7FFFFFFFu;
  case 3: { // exact squares, including squares in the subnormal range
    const float s = float(r.below(4096) + 1) * std::ldexp(1.0f, r.below(140) - 80);
    const float sq = s * s;
    return as_bits(sq);
  }
  case 4: { // neighbours of exact squares
    const float s = float(r.below(4096) + 1) * std::ldexp(1.0f, r.below(120) - 60);
    const std::uint32_t sq = as_bits(s * s);
    return sq + std::uint32_t(r.below(5)) - 2u;
  }
  default: return r.u32() & 0x007FFFFFu; // subnormals
  }
}

// ---- runner -------------------------------------------------------------------------------------
template <class CoreFn>
void compare_modes(tally &t, std::uint64_t i, const prepared &p, CoreFn &&core, const std::string &what) {
  for (int m = 0; m < round_mode_count; ++m) {
    env e;
    e.mode = round_mode(m);
    e.tiny = ((i >> 1) ^ std::uint64_t(m)) & 1 ? tininess::before_rounding : tininess::after_rounding;
    e.random = hash32(i * 7 + std::uint64_t(m));
    if ((i & 15) == 3) e.random = (i & 16) ? 0xFFFFFFFFu : 0u;
    const fast_oracle::res want = finish(p, m, e.tiny == tininess::before_rounding, e.random);
    const result<binary32> got = core(e, (i & 63) == 5);
    ++t.cases;
    if (got.bits() != want.bits || got.flags != want.flags)
      t.fail(what + " " + env_string(e) + ": got " + hex(got.bits()) + " flags " + hex(got.flags) +
             ", reference " + hex(want.bits) + " flags " + hex(want.flags));
  }
}

constexpr std::uint64_t kBlock = 4096;

template <class Body> void run_blocks(std::uint64_t n, Body &&body) {
  const std::uint64_t blocks = (n + kBlock - 1) / kBlock;
  bf16emu::parallel_for(blocks, 0, [&](std::uint64_t blk, unsigned) {
    const std::uint64_t end = (blk + 1) * kBlock < n ? (blk + 1) * kBlock : n;
    for (std::uint64_t i = blk * kBlock; i < end; ++i)
      body(i);
  });
}

void report(tally &t, const char *op, std::uint64_t expected) {
  EXPECT_EQ(std::uint64_t(t.cases.load()), expected);
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("fast-path %s: %lld cases (%llu per mode), %lld mismatches\n", op, t.cases.load(),
              static_cast<unsigned long long>(expected / round_mode_count), t.bad.load());
}

// One sqrt operand in all 7 modes against the reference.
void check_sqrt(tally &t, std::uint64_t i, std::uint32_t a) {
  bool root_ok = true;
  const prepared p = sqrt_prepare(a, root_ok);
  if (!root_ok) t.fail("sqrt a=" + hex(a) + ": the reference root is not floor(sqrt(N))");
  const f32 x = f32::from_bits(a);
  compare_modes(
      t, i, p,
      [&](const env &e, bool trace) {
        if (!trace) return sqrt(x, e);
        last_event ev;
        return sqrt(x, e, ev);
      },
      "sqrt a=" + hex(a));
}

TEST(FastPath, Div) {
  const std::uint64_t n = cases_per_mode();
  tally t;
  run_blocks(n, [&](std::uint64_t i) {
    rng r(0xD1D1ull * 0x100000000ull + i);
    std::uint32_t a, b;
    div_operands(r, a, b);
    // Special results (NaN, Inf, zero) do not depend on what compare_modes varies (mode,
    // tininess, random bits), so the default environment prepares them once.
    const prepared p = div_prepare(a, b, env{});
    const f32 x = f32::from_bits(a), y = f32::from_bits(b);
    compare_modes(
        t, i, p,
        [&](const env &e, bool trace) {
          if (!trace) return div(x, y, e);
          last_event ev;
          return div(x, y, e, ev);
        },
        "div a=" + hex(a) + " b=" + hex(b));
  });
  report(t, "div", n * round_mode_count);
}

TEST(FastPath, Sqrt) {
  const std::uint64_t n = cases_per_mode();
  tally t;
  run_blocks(n, [&](std::uint64_t i) {
    rng r(0x5A5Aull * 0x100000000ull + i);
    check_sqrt(t, i, sqrt_operand(r));
  });
  report(t, "sqrt", n * round_mode_count);
}

// Every fp32 input, all 7 modes (long tier only: BF16EMU_FASTPATH_ALL_SQRT=1).
TEST(FastPath, SqrtAllFp32) {
  if (env_u64("BF16EMU_FASTPATH_ALL_SQRT", 0) == 0) GTEST_SKIP() << "set BF16EMU_FASTPATH_ALL_SQRT=1";
  const std::uint64_t n = std::uint64_t{1} << 32;
  tally t;
  run_blocks(n, [&](std::uint64_t i) { check_sqrt(t, i, std::uint32_t(i)); });
  report(t, "sqrt (all 2^32 inputs)", n * round_mode_count);
}

// The changed part of sqrt is the exact root, which depends only on the normalised radicand m:
// every fp32 input (normal or subnormal) reaches one of the 2^23 significands times two exponent
// parities. All of them: the new root and remainder equal the Newton reference's.
TEST(FastPath, SqrtRootEveryFp32Radicand) {
  const std::uint64_t n = std::uint64_t{1} << 24;
  tally t;
  run_blocks(n, [&](std::uint64_t i) {
    const std::uint64_t m = ((i >> 1) | 0x800000u) << (37 + (i & 1)); // leading bit 60 or 61
    const bf16emu::detail::isqrt_result got = bf16emu::detail::sqrt_root(m);
    const root_rem want = reference_root57(m);
    ++t.cases;
    if (got.root != want.root || got.rem != want.rem)
      t.fail("m=" + hex(m) + ": root " + hex(got.root) + " rem " + hex(got.rem) + ", reference " +
             hex(want.root) + " " + hex(want.rem));
  });
  EXPECT_EQ(std::uint64_t(t.cases.load()), n);
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  std::printf("sqrt_root: %lld radicands, %lld mismatches\n", t.cases.load(), t.bad.load());
}

// The constant-evaluation path of the root (bit by bit, then the same fix-up) agrees with the
// run-time path and with the reference on a few values, including an exact square.
constexpr std::uint64_t kM1 = std::uint64_t{1} << 60, kM2 = (std::uint64_t{3} << 60) + 12345;
static_assert(bf16emu::detail::sqrt_root(kM1).root == std::uint64_t{1} << 56 &&
              bf16emu::detail::sqrt_root(kM1).rem == 0);
TEST(FastPath, RootConstantEvaluationMatchesRunTime) {
  constexpr auto c2 = bf16emu::detail::sqrt_root(kM2);
  volatile std::uint64_t m2 = kM2;
  const auto r2 = bf16emu::detail::sqrt_root(m2);
  const root_rem ref = reference_root57(kM2);
  EXPECT_EQ(c2.root, ref.root);
  EXPECT_EQ(c2.rem, ref.rem);
  EXPECT_EQ(r2.root, ref.root);
  EXPECT_EQ(r2.rem, ref.rem);
}

// ---- add, sub, mul, fma, div, sqrt fast paths ----------------------------------------------------
// Same-format operations try detail::fast_dispatch first (normal operands, normal result; with a
// tracer only add, sub, mul and fma, which fill the event themselves) and fall back to
// detail::*_general. Each case runs in all 7 modes under a random environment (tininess, NaN,
// subnormal and saturation policies, stochastic bits incl. 0 and all ones) and checks: the public
// operation (what users call) equals the general routine, bits and flags; the fast path called
// directly, where it answers, equals it too; 1 case in 64 also equals the independent oracle
// (tests/oracle). Every case also runs traced: the public traced call's event equals the general
// routine's event in every field (doubles bit for bit), and so does the traced fast path's, called
// directly, where it answers. Formats: fp32 (half the cases), bf16 and fp16 (a quarter each).
enum class fop { add, sub, mul, fma, div, sqrt };

const char *fop_name(fop o) {
  switch (o) {
  case fop::add: return "add";
  case fop::sub: return "sub";
  case fop::mul: return "mul";
  case fop::fma: return "fma";
  case fop::sqrt: return "sqrt";
  default: return "div";
  }
}

template <class F> struct fast_case {
  static constexpr int M = F::frac_bits;
  static constexpr unsigned emax = unsigned(F::exp_field_max - 1); // largest normal biased exponent
  static constexpr unsigned bias = unsigned(F::bias);

  static std::uint64_t pack(bool sign, int ex, std::uint64_t fr) {
    const unsigned e = ex < 0 ? 0u : ex > int(F::exp_field_max) ? unsigned(F::exp_field_max) : unsigned(ex);
    return (sign ? F::sign_mask : 0) | (std::uint64_t(e) << M) | (fr & F::frac_mask);
  }
  static int exp_of(std::uint64_t x) { return int((x & F::exp_mask) >> M); }
  static std::uint64_t any(rng &r) { return r.next() & (F::sign_mask | F::exp_mask | F::frac_mask); }
  static std::uint64_t frac(rng &r) {
    static constexpr std::uint64_t h = std::uint64_t{1} << (M - 1);
    const std::uint64_t edges[] = {0, 1, 2, F::frac_mask, F::frac_mask - 1, h, h - 1, h + 1};
    return r.coin() ? r.next() : edges[r.below(8)];
  }
  // Class boundaries: zero/subnormal, min normal, around 1, max finite, Inf/NaN.
  static std::uint64_t edge(rng &r) {
    const int exps[] = {0,
                        1,
                        1,
                        2,
                        int(bias) - 1,
                        int(bias),
                        int(bias) + 1,
                        int(emax) - 1,
                        int(emax),
                        int(emax),
                        int(F::exp_field_max)};
    return pack(r.coin(), exps[r.below(11)], frac(r));
  }
  static std::uint64_t normal(rng &r, int lo, int hi) {
    return pack(r.coin(), lo + r.below(hi - lo + 1), frac(r));
  }

  // a op b (op c): random patterns, random normals, data-like exponents, boundaries, and
  // operands aimed at ties, exact cancellation, and results that just overflow or underflow.
  static void operands(fop o, rng &r, std::uint64_t &a, std::uint64_t &b, std::uint64_t &c) {
    const int E = int(emax), B = int(bias), spread = E > 60 ? 20 : 8;
    const bool additive = o == fop::add || o == fop::sub;
    c = r.coin() ? normal(r, 1, E) : edge(r);
    switch (r.below(8)) {
    case 0: a = any(r), b = any(r), c = any(r); break;
    case 1: a = normal(r, 1, E), b = normal(r, 1, E); break;
    case 2: // what data looks like: exponents near 1
      a = normal(r, B - spread, B + spread), b = normal(r, B - spread, B + spread);
      c = normal(r, B - spread, B + spread);
      break;
    case 3: a = edge(r), b = edge(r); break;
    case 4: { // aligned magnitudes: exact cancellation, ties (b = half an ulp of a), carries
      a = normal(r, 1, E);
      const int d = r.below(M + 4);
      const std::uint64_t fr = r.coin() ? (a & F::frac_mask) + std::uint64_t(r.below(5)) - 2u : frac(r);
      b = pack(r.coin(), exp_of(a) - d, r.below(4) == 0 ? 0 : fr);
      // fma: c cancels the product a * b (truncated, then nudged by up to 2 ulps).
      const result<F> p =
          bf16emu::mul(fp<F>::from_bits(typename F::storage(a)), fp<F>::from_bits(typename F::storage(b)),
                       with_mode(round_mode::toward_zero));
      c = (p.bits() ^ F::sign_mask) + std::uint64_t(r.below(5)) - 2u;
      break;
    }
    case 5: { // result exponent just below or above the largest
      const int t = E + r.below(5) - 2;
      if (additive) {
        const bool s = r.coin();
        a = pack(s, E - r.below(2), frac(r)), b = pack(r.below(4) == 0 ? !s : s, E - r.below(3), frac(r));
      } else {
        const int ea = 1 + r.below(E);
        a = pack(r.coin(), ea, frac(r));
        b = pack(r.coin(), o == fop::div ? ea - t + B : t - ea + B, frac(r));
      }
      break;
    }
    case 6: { // result exponent just above or below the smallest normal
      const int t = 1 + r.below(5) - 2;
      if (additive) {
        const int ea = 1 + r.below(3);
        a = pack(r.coin(), ea, frac(r)), b = pack(r.coin(), ea + r.below(3) - 1, frac(r));
      } else {
        const int ea = 1 + r.below(E);
        a = pack(r.coin(), ea, frac(r));
        b = pack(r.coin(), o == fop::div ? ea - t + B : t - ea + B, frac(r));
      }
      c = pack(r.coin(), r.below(4), frac(r));
      break;
    }
    default: a = edge(r), b = normal(r, 1, E); break;
    }
  }

  static result<F> public_op(fop o, fp<F> a, fp<F> b, fp<F> c, const env &e) {
    switch (o) {
    case fop::add: return bf16emu::add(a, b, e);
    case fop::sub: return bf16emu::sub(a, b, e);
    case fop::mul: return bf16emu::mul(a, b, e);
    case fop::fma: return bf16emu::fma(a, b, c, e);
    case fop::sqrt: return bf16emu::sqrt(a, e);
    default: return bf16emu::div(a, b, e);
    }
  }
  static result<F> traced_op(fop o, fp<F> a, fp<F> b, fp<F> c, const env &e, last_event &ev) {
    switch (o) {
    case fop::add: return bf16emu::add(a, b, e, ev);
    case fop::sub: return bf16emu::sub(a, b, e, ev);
    case fop::mul: return bf16emu::mul(a, b, e, ev);
    case fop::fma: return bf16emu::fma(a, b, c, e, ev);
    case fop::sqrt: return bf16emu::sqrt(a, e, ev);
    default: return bf16emu::div(a, b, e, ev);
    }
  }
  template <class Tr> static result<F> general_op(fop o, fp<F> a, fp<F> b, fp<F> c, const env &e, Tr &tr) {
    switch (o) {
    case fop::add: return detail::add_general<F>(a, b, false, e, tr, op_kind::add);
    case fop::sub: return detail::add_general<F>(a, b, true, e, tr, op_kind::sub);
    case fop::mul: return detail::mul_general<F>(a, b, e, tr);
    case fop::fma: return detail::fma_general<F>(a, b, c, e, tr);
    case fop::sqrt: return detail::sqrt_general<F>(a, e, tr);
    default: return detail::div_general<F>(a, b, e, tr);
    }
  }
  // The fast path called directly, tracer off (no_trace) or on (last_event; only the ops
  // whose fast path fills the event: add, sub, mul, fma).
  template <class Tr>
  static bool fast_op(fop o, fp<F> a, fp<F> b, fp<F> c, const env &e, result<F> &r, Tr &tr) {
    switch (o) {
    case fop::add: return detail::fast_dispatch<detail::fast_add>(e.mode, a, b, false, e, r, tr);
    case fop::sub: return detail::fast_dispatch<detail::fast_add>(e.mode, a, b, true, e, r, tr);
    case fop::mul: return detail::fast_dispatch<detail::fast_mul>(e.mode, a, b, e, r, tr);
    case fop::fma: return detail::fast_dispatch<detail::fast_fma>(e.mode, a, b, c, e, r, tr);
    default:
      if constexpr (!Tr::enabled) {
        if (o == fop::sqrt) return detail::fast_dispatch<detail::fast_sqrt>(e.mode, a, e, r, tr);
        return detail::fast_dispatch<detail::fast_div>(e.mode, a, b, e, r, tr);
      }
      return false;
    }
  }
  static oracle::result oracle_op(fop o, fp<F> a, fp<F> b, fp<F> c, const env &e) {
    const oracle::format f = ofmt<F>();
    const oracle::operand oa{a.bits, f}, ob{b.bits, f}, oc{c.bits, f};
    switch (o) {
    case fop::add: return oracle::add(oa, ob, f, oenv(e));
    case fop::sub: return oracle::sub(oa, ob, f, oenv(e));
    case fop::mul: return oracle::mul(oa, ob, f, oenv(e));
    case fop::fma: return oracle::fma(oa, ob, oc, f, oenv(e));
    case fop::sqrt: return oracle::sqrt(oa, f, oenv(e));
    default: return oracle::div(oa, ob, f, oenv(e));
    }
  }
};

struct fast_tally {
  tally t;
  std::atomic<long long> taken{0}, oracle_checked{0}, traced{0}, traced_taken{0};
};

std::uint64_t dbits(double x) { return std::bit_cast<std::uint64_t>(x); }

// Every field of two events, doubles compared bit for bit (signed zeros included); "" when equal.
std::string event_diff(const rounding_event &x, const rounding_event &y) {
  std::string d;
  const auto field = [&d](const char *name, std::uint64_t u, std::uint64_t v) {
    if (u != v) d += std::string(" ") + name + " " + hex(u) + " vs " + hex(v);
  };
  field("op", std::uint64_t(x.op), std::uint64_t(y.op));
  field("mode", std::uint64_t(x.mode), std::uint64_t(y.mode));
  field("dst_exp_bits", x.dst_exp_bits, y.dst_exp_bits);
  field("dst_frac_bits", x.dst_frac_bits, y.dst_frac_bits);
  field("sign", x.sign, y.sign);
  field("exponent", std::uint64_t(std::int64_t(x.exponent)), std::uint64_t(std::int64_t(y.exponent)));
  field("lsb_exp", std::uint64_t(std::int64_t(x.lsb_exp)), std::uint64_t(std::int64_t(y.lsb_exp)));
  field("kept", x.kept, y.kept);
  field("guard", x.guard, y.guard);
  field("round", x.round, y.round);
  field("sticky", x.sticky, y.sticky);
  field("tiny", x.tiny, y.tiny);
  field("dec", std::uint64_t(x.dec), std::uint64_t(y.dec));
  field("result_bits", x.result_bits, y.result_bits);
  field("flags", x.flags, y.flags);
  field("err_hi", dbits(x.err_hi), dbits(y.err_hi));
  field("err_lo", dbits(x.err_lo), dbits(y.err_lo));
  field("err_exact", x.err_exact, y.err_exact);
  return d;
}

template <class F> void check_fast_case(fast_tally &ft, fop o, std::uint64_t i, rng &r) {
  using C = fast_case<F>;
  std::uint64_t ab, bb, cb;
  C::operands(o, r, ab, bb, cb);
  if (o == fop::sqrt && r.below(4) != 0) ab &= F::abs_mask; // mostly nonnegative radicands
  using S = typename F::storage;
  const fp<F> a = fp<F>::from_bits(S(ab)), b = fp<F>::from_bits(S(bb)), c = fp<F>::from_bits(S(cb));
  const std::string what = std::string(fop_name(o)) + " " + format_name<F>() + " a=" + hex(a.bits) +
                           " b=" + hex(b.bits) + (o == fop::fma ? " c=" + hex(c.bits) : std::string());
  const bool with_oracle = (i & 63) == 7;
  for (int m = 0; m < round_mode_count; ++m) {
    const env e = random_env(r, round_mode(m));
    const result<F> got = C::public_op(o, a, b, c, e);
    no_trace off;
    const result<F> want = C::general_op(o, a, b, c, e, off);
    ++ft.t.cases;
    if (got.bits() != want.bits() || got.flags != want.flags)
      ft.t.fail(what + " " + env_string(e) + ": public " + hex(got.bits()) + " flags " + hex(got.flags) +
                ", general " + hex(want.bits()) + " flags " + hex(want.flags));
    result<F> fast;
    if (C::fast_op(o, a, b, c, e, fast, off)) {
      ++ft.taken;
      if (fast.bits() != want.bits() || fast.flags != want.flags)
        ft.t.fail(what + " " + env_string(e) + ": fast path " + hex(fast.bits()) + " flags " +
                  hex(fast.flags) + ", general " + hex(want.bits()) + " flags " + hex(want.flags));
    }
    if (with_oracle) {
      ++ft.oracle_checked;
      const oracle::result ref = C::oracle_op(o, a, b, c, e);
      if (got.bits() != ref.bits || got.flags != ref.flags)
        ft.t.fail(what + " " + env_string(e) + ": public " + hex(got.bits()) + " flags " + hex(got.flags) +
                  ", oracle " + hex(ref.bits) + " flags " + hex(ref.flags));
    }
    // Traced (every case): the public call (fast path where it fills the event) against the
    // general routine's event, field by field; and the traced fast path called directly.
    last_event pub_ev, gen_ev;
    const result<F> tr = C::traced_op(o, a, b, c, e, pub_ev);
    C::general_op(o, a, b, c, e, gen_ev);
    ++ft.traced;
    if (tr.bits() != got.bits() || tr.flags != got.flags)
      ft.t.fail(what + " " + env_string(e) + ": traced " + hex(tr.bits()) + ", untraced " + hex(got.bits()));
    if (pub_ev.count != gen_ev.count)
      ft.t.fail(what + " " + env_string(e) + ": traced call gave " + std::to_string(pub_ev.count) +
                " events, the general routine " + std::to_string(gen_ev.count));
    else if (const std::string d = event_diff(pub_ev.event, gen_ev.event); !d.empty())
      ft.t.fail(what + " " + env_string(e) + ": traced event differs from the general routine's:" + d);
    last_event fast_ev;
    result<F> fast_tr;
    if (C::fast_op(o, a, b, c, e, fast_tr, fast_ev)) {
      ++ft.traced_taken;
      if (fast_tr.bits() != want.bits() || fast_tr.flags != want.flags || fast_ev.count != 1 ||
          gen_ev.count != 1)
        ft.t.fail(what + " " + env_string(e) + ": traced fast path " + hex(fast_tr.bits()) + " flags " +
                  hex(fast_tr.flags) + " events " + std::to_string(fast_ev.count) + ", general " +
                  hex(want.bits()) + " flags " + hex(want.flags) + " events " + std::to_string(gen_ev.count));
      else if (const std::string d = event_diff(fast_ev.event, gen_ev.event); !d.empty())
        ft.t.fail(what + " " + env_string(e) + ": traced fast path's event differs:" + d);
    } else if (fast_ev.count != 0) {
      ft.t.fail(what + " " + env_string(e) + ": the traced fast path declined but traced an event");
    }
  }
}

void run_fast_op(fop o, std::uint64_t seed) {
  const std::uint64_t n = cases_per_mode();
  fast_tally ft;
  run_blocks(n, [&](std::uint64_t i) {
    rng r(seed * 0x100000000ull + i);
    switch (i & 3) {
    case 0:
    case 1: check_fast_case<binary32>(ft, o, i, r); break;
    case 2: check_fast_case<bfloat16>(ft, o, i, r); break;
    default: check_fast_case<binary16>(ft, o, i, r); break;
    }
  });
  report(ft.t, fop_name(o), n * round_mode_count);
  // The operands must reach the fast path often, and the general routine often too.
  EXPECT_GT(ft.taken.load(), ft.t.cases.load() / 4);
  EXPECT_LT(ft.taken.load(), ft.t.cases.load() * 15 / 16);
  EXPECT_GT(ft.oracle_checked.load(), 0);
  EXPECT_EQ(ft.traced.load(), ft.t.cases.load());
  // Traced: add, sub, mul and fma fill the event on the fast path (exact binary64 results);
  // div and sqrt always take the general routine.
  if (o == fop::div || o == fop::sqrt) {
    EXPECT_EQ(ft.traced_taken.load(), 0);
  } else {
    EXPECT_GT(ft.traced_taken.load(), ft.t.cases.load() / 8);
  }
  std::printf("fast-path %s: the fast path answered %lld, %lld also against the oracle; traced: %lld events "
              "compared field by field, the traced fast path answered %lld\n",
              fop_name(o), ft.taken.load(), ft.oracle_checked.load(), ft.traced.load(),
              ft.traced_taken.load());
}

TEST(FastPath, Add) { run_fast_op(fop::add, 0xADD0); }
TEST(FastPath, Sub) { run_fast_op(fop::sub, 0x50B0); }
TEST(FastPath, Mul) { run_fast_op(fop::mul, 0x3170); }
TEST(FastPath, Fma) { run_fast_op(fop::fma, 0xF3A0); }
TEST(FastPath, DivGeneralAndFast) { run_fast_op(fop::div, 0xD170); }
TEST(FastPath, SqrtGeneralAndFast) { run_fast_op(fop::sqrt, 0x5170); }

} // namespace
