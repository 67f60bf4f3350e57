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
#include <cstdlib>
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

// Operand classes: a narrow exponent window around a random centre (alignment losses of every
// size), wide windows (far-apart products, tiny ones under a large c), random bit patterns
// (subnormals, specials), zeros.
struct operand_class {
  int cls, centre, width;
  explicit operand_class(gen &g)
      : cls(g.uniform(0, 9)), centre(g.uniform(-40, 40)),
        width(cls < 5 ? g.uniform(0, 6) : g.uniform(10, 300)) {}
  std::uint64_t pick(gen &g, const tcref::fmt &fi) const {
    if (cls == 9 || g.coin(64)) return g.any(fi);
    if (g.coin(16)) return g.coin(2) ? std::uint64_t(0) : g.tiny(fi);
    return normal_in(g, fi, centre - width, centre + width);
  }
  // An accumulator: zero, any pattern, far above the products, or near them.
  std::uint64_t pick_c(gen &g, const tcref::fmt &fo) const {
    switch (g.uniform(0, 5)) {
    case 0: return 0;
    case 1: return g.any(fo);
    case 2: return normal_in(g, fo, 2 * centre + 40, 2 * centre + 200);
    default: return normal_in(g, fo, 2 * centre - 10, 2 * centre + 12);
    }
  }
};

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
    const operand_class oc(g);
    for (int j = 0; j < n; ++j) {
      const std::uint64_t x = oc.pick(g, fi);
      a[j * sa] = fp<In>::from_bits(x), b[j * sb] = fp<In>::from_bits(oc.pick(g, fi));
    }
    const std::uint64_t cb = oc.pick_c(g, fo);
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

// Multi-column chains (chain_fdpa_cols, tc::dot_cols: the columns advance together, with the
// AVX2 instance's shared-a kernel fast_block_avx2_cols where the blocks are full with unit
// strides) against ncols single chains on the general path (chain_fdpa with the full tracer):
// every column's d and every block record the tracer sees, in order.
struct seen_block {
  int block, k0, n_products, n_real;
  bool special;
  std::uint64_t d, trunc_err, lost;
  bool operator==(const seen_block &) const = default;
};

std::string show(const seen_block &b) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "{block %d k0 %d L %d n %d special %d d %s trunc_err %s lost %s}", b.block,
                b.k0, b.n_products, b.n_real, int(b.special), hex(b.d).c_str(), hex(b.trunc_err).c_str(),
                hex(b.lost).c_str());
  return buf;
}

template <class In, class Out> void run_cols(const preset &P, long nchains, std::uint64_t seed, counts &k) {
  const block_params &p = P.block;
  const tcref::fmt fi = ref_fmt(P.in), fo = ref_fmt(P.out);
  gen g(seed);
  constexpr int max_cols = 9;
  std::vector<fp<In>> a, b;
  for (long i = 0; i < nchains; ++i) {
    const int ncols = g.uniform(1, max_cols);
    // Mostly a few instructions; some chains longer than the held-back summaries (64 blocks).
    const int K = g.coin(32) ? g.uniform(1, 70 * p.L) : g.uniform(1, 4 * P.k);
    const std::ptrdiff_t sa = i % 8 == 7 ? 2 : 1, sb = i % 8 == 7 ? g.uniform(1, 2) : 1;
    const std::ptrdiff_t bcol = K * sb + g.uniform(0, 3);
    a.assign(std::size_t(K * sa), fp<In>{}), b.assign(std::size_t(ncols * bcol), fp<In>{});
    const operand_class oc(g);
    for (int t = 0; t < K; ++t)
      a[t * sa] = fp<In>::from_bits(oc.pick(g, fi));
    fp<Out> c0[max_cols], got[max_cols], plain[max_cols];
    for (int j = 0; j < ncols; ++j) {
      for (int t = 0; t < K; ++t)
        b[j * bcol + t * sb] = fp<In>::from_bits(oc.pick(g, fi));
      c0[j] = fp<Out>::from_bits(oc.pick_c(g, fo));
    }
    std::vector<seen_block> want, seen;
    std::uint64_t want_d[max_cols];
    for (int j = 0; j < ncols; ++j) {
      auto tr = make_block_tracer([&](const block_trace &t) {
        double lost = 0;
        if (!t.special)
          for (int q = 0; q <= t.n_products; ++q)
            lost += t.terms[q].lost;
        want.push_back({t.block, t.k0, t.n_products, t.n_real, t.special, t.d_bits, dbits(t.trunc_err),
                        dbits(t.special ? 0.0 : lost)});
      });
      want_d[j] = chain_fdpa<In, Out>(p, P.k, a.data(), sa, b.data() + j * bcol, sb, K, c0[j], tr).bits;
    }
    auto tr = make_block_summary_tracer([&](const block_summary &t) {
      seen.push_back(
          {t.block, t.k0, t.n_products, t.n_real, t.special, t.d_bits, dbits(t.trunc_err), dbits(t.lost)});
    });
    std::copy(c0, c0 + ncols, got), std::copy(c0, c0 + ncols, plain);
    dot_cols<In, Out>(p, P.k, a.data(), sa, b.data(), sb, bcol, ncols, K, got, tr);
    dot_cols<In, Out>(p, P.k, a.data(), sa, b.data(), sb, bcol, ncols, K, plain);
    std::string why;
    for (int j = 0; j < ncols && why.empty(); ++j)
      if (got[j].bits != want_d[j] || plain[j].bits != want_d[j])
        why = "column " + std::to_string(j) + " d " + hex(got[j].bits) + " / " + hex(plain[j].bits) +
              " != " + hex(want_d[j]);
    if (why.empty() && seen.size() != want.size())
      why = std::to_string(seen.size()) + " block records != " + std::to_string(want.size());
    for (std::size_t q = 0; q < want.size() && why.empty(); ++q)
      if (!(seen[q] == want[q]))
        why = "record " + std::to_string(q) + " " + show(seen[q]) + " != " + show(want[q]);
    k.blocks += long(want.size());
    if (!why.empty() && k.failures++ == 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " chain %ld ncols=%d K=%d sa=%td sb=%td: ", i, ncols, K, sa, sb);
      k.first = describe(P) + buf + why;
    }
  }
}

// Runs run (blocks) or run_cols (chains) for P's formats, count times.
void run_preset(const preset &P, long count, counts &k, bool chains = false) {
  visit_format(P.in, [&](auto fin) {
    using In = decltype(fin);
    if constexpr (In::width <= 24) {
      const std::uint64_t seed = (chains ? 0xc0150000u : 0x5eed0000u) + std::uint64_t(&P - presets);
      if (chains && P.out == format_id::fp16)
        run_cols<In, binary16>(P, count, seed, k);
      else if (chains)
        run_cols<In, binary32>(P, count, seed, k);
      else if (P.out == format_id::fp16)
        run<In, binary16>(P, count, seed, k);
      else
        run<In, binary32>(P, count, seed, k);
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

// A count from the environment (the long tier sets it), else the default tier's.
long env_count(const char *name, long fallback) {
  const char *s = std::getenv(name);
  return s ? std::max(1L, std::atol(s)) : fallback;
}

// Calls fn(P) for the first preset of every distinct fast-eligible (input, output, block
// parameters) combination (with_k: and instruction k); returns how many.
template <class Fn> int for_each_combination(bool with_k, Fn fn) {
  std::vector<const preset *> seen;
  int combos = 0;
  for (const preset &P : presets) {
    if (!fast_eligible(P)) continue;
    bool dup = false;
    for (const preset *q : seen)
      dup |= q->in == P.in && q->out == P.out && (!with_k || q->k == P.k) &&
             std::memcmp(&q->block, &P.block, sizeof P.block) == 0;
    seen.push_back(&P);
    if (dup) continue;
    ++combos;
    fn(P);
  }
  return combos;
}

// Every preset the fast path serves, BF16EMU_TC_FAST_BLOCKS blocks per distinct (input, output,
// block parameters) combination: 10^6 in the long tier (tc_fast_long), 10^5 by default.
TEST(FastPaths, AgreeWithGeneralPathOnEveryPresetFormat) {
  const long per_combination = env_count("BF16EMU_TC_FAST_BLOCKS", 100000);
  counts k;
  const int combos = for_each_combination(false, [&](const preset &P) { run_preset(P, per_combination, k); });
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

// BF16EMU_TC_FAST_CHAINS chains per combination: 20,000 in the long tier, 2,000 by default.
TEST(FastPaths, MultiColumnChainsAgreeWithSingleGeneralChains) {
  const long chains = env_count("BF16EMU_TC_FAST_CHAINS", 2000);
  counts k;
  const int combos = for_each_combination(true, [&](const preset &P) { run_preset(P, chains, k, true); });
  EXPECT_EQ(k.failures, 0) << k.first;
  EXPECT_GT(k.blocks, combos * chains);
  std::printf("multi-column chains: %d combinations, %ld chains each, %ld blocks, %ld mismatching chains\n",
              combos, chains, k.blocks, k.failures);
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
