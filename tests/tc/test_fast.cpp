// The model's fast paths (tc/block.hpp: the portable fast_block and, on x86-64 hosts with
// AVX2, fast_block_avx2) against the general path of block_fdpa, on random blocks of every
// preset's formats and parameters. The general path with the full tracer is the expected
// value: d, and the summary the attention ledger reads (trunc_err; lost = the terms' losses
// summed in term order, as tc::block_summary defines it), compared bit for bit, as is the
// choice to decline a block (an Inf or NaN operand). Full blocks with unit strides (the AVX2
// instance), short blocks and strided blocks (the portable instances) are all covered. On a
// host without AVX2 the AVX2 comparison is skipped and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "common.hpp"

namespace tctest {
namespace {

struct expected {
  std::uint64_t d;
  double trunc_err, lost;
  bool special;
};

template <class In, class Out>
expected general(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                 std::ptrdiff_t sb, int n, fp<Out> c) {
  expected e{};
  auto tr = make_block_tracer([&](const block_trace &t) {
    e.trunc_err = t.trunc_err, e.special = t.special;
    double lost = 0;
    if (!t.special)
      for (int i = 0; i <= t.n_products; ++i)
        lost += t.terms[i].lost;
    e.lost = lost;
  });
  e.d = block_fdpa<In, Out>(p, a, sa, b, sb, n, c, tr).bits;
  return e;
}

std::uint64_t dbits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// One path's answer for a block against the general path's; returns a description or "".
std::string check(const char *path, bool done, const block_summary &s, const expected &e, bool lost) {
  char buf[160] = "";
  if (done == e.special)
    std::snprintf(buf, sizeof buf, "%s %s", path, done ? "took a special block" : "declined a finite block");
  else if (done && s.d_bits != e.d)
    std::snprintf(buf, sizeof buf, "%s d %s != %s", path, hex(s.d_bits).c_str(), hex(e.d).c_str());
  else if (done && lost && dbits(s.trunc_err) != dbits(e.trunc_err))
    std::snprintf(buf, sizeof buf, "%s trunc_err %.17g != %.17g", path, s.trunc_err, e.trunc_err);
  else if (done && lost && dbits(s.lost) != dbits(e.lost))
    std::snprintf(buf, sizeof buf, "%s lost %.17g != %.17g", path, s.lost, e.lost);
  return buf;
}

struct counts {
  long blocks = 0, avx2_blocks = 0, failures = 0;
  std::string first;
};

// A normal value with exponent in [lo, hi], the window moved into the format's range (gen::normal
// needs a window that meets it).
std::uint64_t normal_in(gen &g, const tcref::fmt &f, int lo, int hi) {
  const int emin = f.emin(), emax = (1 << f.ebits) - 1 - f.bias() - (f.fn ? 0 : 1);
  lo = std::clamp(lo, emin, emax), hi = std::clamp(hi, emin, emax);
  return g.normal(f, lo, hi);
}

template <class In, class Out> void run(const preset &P, long nblocks, std::uint64_t seed, counts &k) {
  const block_params &p = P.block;
  ASSERT_TRUE((tc::detail::fast_formats<In, Out>)&&tc::detail::fast_params<In>(p)) << describe(P);
  const tcref::fmt fi = ref_fmt(P.in), fo = ref_fmt(P.out);
  gen g(seed);
  constexpr int stride_max = 2;
  fp<In> a[max_block * stride_max], b[max_block * stride_max];
  bool avx2 = false;
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  avx2 = bf16emu::detail::host_has_avx2();
#endif
  tc::detail::fast_status st; // the portable instance's conversions raise inexact
  for (long i = 0; i < nblocks; ++i) {
    // Mostly full unit-stride blocks; some short (padding zeros) and some strided.
    const int shape = int(i % 8);
    const int n = shape == 6 ? g.uniform(1, p.L) : p.L;
    const std::ptrdiff_t sa = shape == 7 ? 2 : 1, sb = shape == 7 ? g.uniform(1, 2) : 1;
    // Operand classes: a narrow exponent window around a random centre (alignment losses of
    // every size), wide windows (far-apart products, tiny ones under a large c), random bit
    // patterns (subnormals, specials), zeros.
    const int cls = g.uniform(0, 9);
    const int centre = g.uniform(-40, 40), width = cls < 5 ? g.uniform(0, 6) : g.uniform(10, 300);
    for (int j = 0; j < n; ++j) {
      auto pick = [&] {
        if (cls == 9 || g.coin(64)) return g.any(fi);
        if (g.coin(16)) return g.coin(2) ? std::uint64_t(0) : g.tiny(fi);
        return normal_in(g, fi, centre - width, centre + width);
      };
      a[j * sa] = fp<In>::from_bits(pick()), b[j * sb] = fp<In>::from_bits(pick());
    }
    std::uint64_t cb;
    switch (g.uniform(0, 5)) {
    case 0: cb = 0; break;
    case 1: cb = g.any(fo); break;
    case 2: cb = normal_in(g, fo, 2 * centre + 40, 2 * centre + 200); break; // c far above the products
    default: cb = normal_in(g, fo, 2 * centre - 10, 2 * centre + 12); break;
    }
    const fp<Out> c = fp<Out>::from_bits(cb);
    const expected e = general<In, Out>(p, a, sa, b, sb, n, c);
    std::string why;
    block_summary s{}, s0{};
    bool d1 = tc::detail::fast_any_portable<In, Out, true>(p, a, sa, b, sb, n, c, s);
    bool d0 = tc::detail::fast_any_portable<In, Out, false>(p, a, sa, b, sb, n, c, s0);
    if (why.empty()) why = check("portable", d1, s, e, true);
    if (why.empty()) why = check("portable (no loss)", d0, s0, e, false);
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
    if (avx2) {
      s = {}, s0 = {};
      d1 = tc::detail::fast_any_avx2<In, Out, true>(p, a, sa, b, sb, n, c, s);
      d0 = tc::detail::fast_any_avx2<In, Out, false>(p, a, sa, b, sb, n, c, s0);
      if (why.empty()) why = check("avx2", d1, s, e, true);
      if (why.empty()) why = check("avx2 (no loss)", d0, s0, e, false);
      ++k.avx2_blocks;
    }
#endif
    ++k.blocks;
    if (!why.empty() && k.failures++ == 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " block %ld n=%d: ", i, n);
      k.first = describe(P);
      k.first.append(buf).append(why).append("; c=").append(hex(cb)).append(" a,b=");
      for (int j = 0; j < n; ++j)
        k.first.append(" ").append(hex(a[j * sa].bits)).append(",").append(hex(b[j * sb].bits));
    }
  }
}

void run_preset(const preset &P, long nblocks, counts &k) {
  visit_format(P.in, [&](auto fin) {
    using In = decltype(fin);
    if constexpr (In::width <= 24) {
      const std::uint64_t seed = 0x5eed0000u + std::uint64_t(&P - presets);
      if (P.out == format_id::fp16)
        run<In, binary16>(P, nblocks, seed, k);
      else
        run<In, binary32>(P, nblocks, seed, k);
    }
  });
}

// Whether the block model takes its fast path for P: one input format for A and B, C in D's
// format, fused blocks, and formats and parameters the fast path covers (fast_formats,
// fast_params). The others (mixed formats, f64 fma chains, wide blocks such as sm120's fp8
// L 32 x F 25) always take the general path, so there is nothing to compare.
bool fast_eligible(const preset &P) {
  if (P.b != P.in || P.c != P.out || P.accum != tc::accum_kind::fused) return false;
  return visit_format(P.in, [&](auto fin) {
    using In = decltype(fin);
    if constexpr (In::width <= 24) {
      const bool formats = P.out == format_id::fp16 ? tc::detail::fast_formats<In, binary16>
                                                    : tc::detail::fast_formats<In, binary32>;
      return formats && tc::detail::fast_params<In>(P.block);
    } else {
      return false;
    }
  });
}

// Every preset the fast path serves, BF16EMU_TC_FAST_BLOCKS blocks per distinct (input, output,
// block parameters) combination: 10^6 in the long tier (tc_fast_long_tests), 10^5 by default.
#ifndef BF16EMU_TC_FAST_BLOCKS
#define BF16EMU_TC_FAST_BLOCKS 100000
#endif
TEST(FastPaths, AgreeWithGeneralPathOnEveryPresetFormat) {
  constexpr long per_combination = BF16EMU_TC_FAST_BLOCKS;
  counts k;
  std::vector<const preset *> seen;
  int combos = 0;
  for (const preset &P : presets) {
    if (!fast_eligible(P)) continue;
    bool dup = false;
    for (const preset *q : seen)
      dup |= q->in == P.in && q->out == P.out && std::memcmp(&q->block, &P.block, sizeof P.block) == 0;
    seen.push_back(&P);
    if (dup) continue;
    ++combos;
    run_preset(P, per_combination, k);
  }
  EXPECT_EQ(k.failures, 0) << k.first;
  EXPECT_EQ(k.blocks, combos * per_combination);
  std::printf("fast paths: %d combinations, %ld blocks, %ld on the AVX2 instance, %ld mismatches\n", combos,
              k.blocks, k.avx2_blocks, k.failures);
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  if (!bf16emu::detail::host_has_avx2())
    GTEST_SKIP() << "no AVX2 on this host: only the portable instance ran";
#else
  GTEST_SKIP() << "no AVX2 dispatch in this build: only the portable instance ran";
#endif
}

// The comparison can fail: a wrong F on one side is caught.
TEST(FastPaths, ComparisonDetectsAWrongParameter) {
  const preset &P = *find_preset(arch::sm90, instr_kind::mma, format_id::bf16, format_id::fp32);
  block_params q = P.block;
  q.F -= 1;
  gen g(7);
  const tcref::fmt fi = ref_fmt(P.in);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    bf16 a[16], b[16];
    for (int j = 0; j < 16; ++j)
      a[j] = bf16::from_bits(g.normal(fi, -3, 3)), b[j] = bf16::from_bits(g.normal(fi, -3, 3));
    const expected e = general<bfloat16, binary32>(P.block, a, 1, b, 1, 16, f32::from_bits(0));
    block_summary s{};
    tc::detail::fast_status st;
    const bool done = tc::detail::fast_any<bfloat16, binary32, true>(q, a, 1, b, 1, 16, f32::from_bits(0), s);
    differ += !check("fast", done, s, e, true).empty();
  }
  EXPECT_GT(differ, 20); // about 9 % of these blocks depend on the F-th bit
}

} // namespace
} // namespace tctest
