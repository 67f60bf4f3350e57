// bf16emu::bulk vs the element-wise scalar core: every kernel, every mode, the env variants,
// random and special-value arrays, odd lengths and misaligned pointers, each compiled SIMD
// target forced in turn (hwy::SetSupportedTargetsForTest). The reference for element i is the
// scalar call with env.random = counter_random(seed, offset + i) when a stream is given.
#include <gtest/gtest.h>

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#if defined(__SSE2__) || defined(_M_X64)
#include <xmmintrin.h> // _mm_getcsr, _mm_setcsr
#endif

#include "../hwy_targets.hpp"
#include "bf16emu/parallel.hpp"
#include "bulk/bulk.hpp"

namespace bf = bf16emu;
namespace bk = bf16emu::bulk;
using bf::env;
using bf::round_mode;

namespace {

// Runs body() once per SIMD target that is compiled and supported here, forcing it.
template <class Fn> void for_each_target(Fn &&body) {
  bf16emu_test::for_each_hwy_target(bk::target_name, body);
}

// The environments: all 7 modes under each of these policies.
std::vector<env> envs() {
  std::vector<env> out;
  for (int m = 0; m < bf::round_mode_count; ++m) {
    env e;
    e.mode = round_mode(m);
    e.random = 0x9E3779B9u;
    out.push_back(e); // IEEE
    env f = e;
    f.tiny = bf::tininess::before_rounding;
    f.subnormal = bf::subnormals::flush_both;
    f.random = 0;
    out.push_back(f);
    env g = e;
    g.saturate = true;
    g.nan = bf::nan_policy::cuda;
    g.random = 0xFFFFFFFFu;
    out.push_back(g);
    env h = e;
    h.subnormal = bf::subnormals::inputs_as_zero;
    h.nan = bf::nan_policy::pytorch;
    out.push_back(h);
    env k = e;
    k.subnormal = bf::subnormals::flush_outputs;
    k.random = 0x80000000u;
    out.push_back(k);
    env t = e;
    t.tiny = bf::tininess::before_rounding;
    out.push_back(t);
  }
  return out;
}

const std::vector<std::size_t> lengths = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 255, 1001};

// fp32 values that exercise every class: zeros, subnormals, normals near the cut (ties,
// ties +- 1), the overflow edge of bf16/tf32, Inf, quiet and signaling NaNs, both signs.
std::vector<std::uint32_t> f32_specials() {
  std::vector<std::uint32_t> v = {0x00000000, 0x00000001, 0x00007FFF, 0x00008000, 0x00008001, 0x00018000,
                                  0x003FFFFF, 0x00400000, 0x007F7FFF, 0x007F8000, 0x007FFFFF, 0x00800000,
                                  0x00807FFF, 0x00808000, 0x00818000, 0x3F800000, 0x3F808000, 0x3F818000,
                                  0x3F80FFFF, 0x3F801000, 0x3F800FFF, 0x3F801001, 0x7F7F0000, 0x7F7F7FFF,
                                  0x7F7F8000, 0x7F7FEFFF, 0x7F7FF000, 0x7F7FFFFF, 0x7F800000, 0x7F800001,
                                  0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF, 0x7FA00000, 0x38800000, 0x387FFFFF};
  const std::size_t k = v.size();
  for (std::size_t i = 0; i < k; ++i)
    v.push_back(v[i] | 0x80000000u);
  return v;
}

// Mixed arrays: random bit patterns with specials sprinkled in (1 in 4).
std::vector<std::uint32_t> f32_array(std::size_t n, std::mt19937_64 &rng) {
  const std::vector<std::uint32_t> sp = f32_specials();
  std::vector<std::uint32_t> v(n);
  for (auto &x : v) {
    const std::uint64_t r = rng();
    x = (r & 3) == 0 ? sp[(r >> 2) % sp.size()] : std::uint32_t(r >> 32);
  }
  return v;
}

template <class F> std::string hex(std::uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

env element_env(const env &e, const bk::random_stream *rng, std::size_t i) {
  env x = e;
  if (rng && bf::is_stochastic(e.mode)) x.random = bk::counter_random(rng->seed, rng->offset + i);
  return x;
}

// fp32 values in and around Out's range: exponents from far below 2^emin (deep underflow,
// stochastic fractions below 2^-32) through the subnormal binades and the binade just below
// 2^emin (after-rounding tininess) up past the overflow edge; fractions random, exact ties at
// a random cut, all ones below a random cut (carries into the next binade, to 2^emin, to
// overflow), or zeros below it; both signs.
std::vector<std::uint32_t> f32_exponents(std::size_t n, std::mt19937_64 &rng, int lo, int hi) {
  std::vector<std::uint32_t> v(n);
  for (auto &x : v) {
    const std::uint64_t r = rng();
    const std::uint32_t E = std::uint32_t(lo + int((r >> 8) % std::uint64_t(hi - lo + 1)));
    const unsigned k = unsigned((r >> 16) % 24);
    const std::uint32_t below = (1u << k) - 1;
    std::uint32_t f = std::uint32_t(r >> 40) & 0x7FFFFFu;
    switch (r & 3) {
    case 1: f = (f & ~below & 0x7FFFFFu) | (k ? 1u << (k - 1) : 0u); break; // a tie at cut k
    case 2: f |= below; break;                                              // all ones below k
    case 3: f &= ~below & 0x7FFFFFu; break;                                 // zeros below k
    default: break;
    }
    x = std::uint32_t((r >> 7) & 1) << 31 | E << 23 | f;
  }
  return v;
}
template <class Out> std::vector<std::uint32_t> f32_near_range(std::size_t n, std::mt19937_64 &rng) {
  return f32_exponents(n, rng, std::max(1, 127 + Out::emin - Out::frac_bits - 14),
                       std::min(254, 127 + Out::emax + 2));
}
// fp32 values inside Out's normal range (2^emin to its top binade; whole vectors of them take
// the kernels' fast paths), ties and carries as above, and every 16th one just below the
// overflow edge (the top binade of Out, all ones below a random cut).
template <class Out> std::vector<std::uint32_t> f32_in_range(std::size_t n, std::mt19937_64 &rng) {
  std::vector<std::uint32_t> v = f32_exponents(n, rng, 127 + Out::emin, 127 + Out::emax);
  for (std::size_t i = 0; i < v.size(); i += 16)
    v[i] = (v[i] & 0x80000000u) | std::uint32_t(127 + Out::emax) << 23 | (0x7FFFFFu >> (rng() % 12));
  return v;
}

// Checks one narrowing conversion fp32 -> Out against the scalar convert<Out>.
template <class Out>
void check_narrow(const std::vector<std::uint32_t> &src, const env &e, const bk::random_stream *rng) {
  using S = typename Out::storage;
  // Misaligned: the arrays start one element into their buffers.
  std::vector<bf::f32> in(src.size() + 1);
  for (std::size_t i = 0; i < src.size(); ++i)
    in[i + 1].bits = src[i];
  std::vector<bf::fp<Out>> out(src.size() + 2, bf::fp<Out>{S(0x5A)});
  const std::uint8_t flags = bk::convert_n(in.data() + 1, out.data() + 1, src.size(), e, rng);
  std::uint8_t want_flags = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const bf::result<Out> r = bf::convert<Out>(in[i + 1], element_env(e, rng, i));
    want_flags |= r.flags;
    ASSERT_EQ(out[i + 1].bits, r.value.bits)
        << bf::format_name<Out>() << " x=" << hex<Out>(src[i]) << " i=" << i << " n=" << src.size()
        << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal) << " nan=" << int(e.nan);
  }
  ASSERT_EQ(out[0].bits, S(0x5A));
  ASSERT_EQ(out[src.size() + 1].bits, S(0x5A));
  ASSERT_EQ(flags, want_flags) << bf::format_name<Out>() << " n=" << src.size()
                               << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal)
                               << " tiny=" << int(e.tiny);
}

// Normal numbers of Out, exact in fp32 (so each narrows exactly), with at most one element
// moved off Out's grid by one fp32 ulp: the OR of the flags then depends on that element alone,
// wherever it sits (a fast whole vector or not).
template <class Out>
std::vector<std::uint32_t> f32_exact_but_one(std::size_t n, std::mt19937_64 &rng, bool one) {
  std::vector<std::uint32_t> v(n);
  const std::uint64_t exp_field = (std::uint64_t(Out::exp_mask) >> Out::frac_bits);
  for (auto &x : v) {
    const std::uint64_t r = rng();
    const std::uint64_t field = 1 + (r >> 8) % (exp_field - 1); // 1 .. top binade - 1 (finite)
    const auto bits = typename Out::storage((((r >> 3) & 1) << (Out::width - 1)) | (field << Out::frac_bits) |
                                            ((r >> 20) & Out::frac_mask));
    x = bf::convert<bf::binary32>(bf::fp<Out>{bits}, env{}).value.bits;
  }
  if (one && n) v[rng() % n] += 1;
  return v;
}

template <class Out> void narrow_suite() {
  std::mt19937_64 rng(0x5EED0001);
  const bk::random_stream stream{0xC0FFEEull, 12345};
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n : lengths) {
        const auto src = f32_array(n, rng);
        check_narrow<Out>(src, e, nullptr);
        if (bf::is_stochastic(e.mode)) check_narrow<Out>(src, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
      check_narrow<Out>(f32_specials(), e, nullptr);
      const auto near = f32_near_range<Out>(4099, rng);
      check_narrow<Out>(near, e, nullptr);
      if (bf::is_stochastic(e.mode)) check_narrow<Out>(near, e, &stream);
      const auto inside = f32_in_range<Out>(4099, rng);
      check_narrow<Out>(inside, e, nullptr);
      if (bf::is_stochastic(e.mode)) check_narrow<Out>(inside, e, &stream);
      for (const bool one : {false, true, true, true}) {
        check_narrow<Out>(f32_exact_but_one<Out>(1001, rng, one), e, nullptr);
        if (::testing::Test::HasFatalFailure()) return;
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

// bf16 values of every class: zeros, subnormals, min/max normal, Inf, quiet and signaling
// NaNs, 1 and its neighbours, both signs.
// v, then each of its values with the sign bit (bit 15) set.
std::vector<std::uint16_t> with_negatives(std::vector<std::uint16_t> v) {
  const std::size_t k = v.size();
  for (std::size_t i = 0; i < k; ++i)
    v.push_back(std::uint16_t(v[i] | 0x8000u));
  return v;
}

std::vector<std::uint16_t> bf16_specials() {
  return with_negatives({0x0000, 0x0001, 0x0040, 0x007F, 0x0080, 0x0081, 0x00FF, 0x0100,
                         0x3F80, 0x3F81, 0x3FFF, 0x4000, 0x7F00, 0x7F7E, 0x7F7F, 0x7F80,
                         0x7F81, 0x7FBF, 0x7FC0, 0x7FFF, 0x3B80, 0x4380, 0x0180, 0x0200});
}

// Operand pairs: random patterns, specials, b near a's exponent (ties, cancellation, the
// near/far boundary), b = +-a, with random c for fma.
struct bf16_triples {
  std::vector<std::uint16_t> a, b, c;
};
// n operand pairs of a 16-bit format with `frac` fraction bits (sign, exponent, fraction):
// a random pattern or a special, and b likewise, or within `gap` binades of a (random fraction
// and sign), or +-a, or -a with the last bit flipped. emit(a, b, pick) takes each pair; pick(r)
// draws another operand the same way (fma's c).
template <class Emit>
void operand_pairs(std::size_t n, std::mt19937_64 &rng, const std::vector<std::uint16_t> &sp, int frac,
                   int gap, Emit emit) {
  const unsigned exp_max = (1u << (15 - frac)) - 1, frac_mask = (1u << frac) - 1;
  const auto pick = [&](std::uint64_t r) {
    return (r & 3) == 0 ? sp[(r >> 2) % sp.size()] : std::uint16_t(r >> 40);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng(), q = rng();
    const std::uint16_t a = pick(r);
    std::uint16_t b = pick(q);
    switch ((q >> 8) % 5) {
    case 0: { // exponent within gap of a's, random fraction and sign
      const int ea = int((a >> frac) & exp_max);
      int eb = ea + int((q >> 16) % unsigned(2 * gap + 1)) - gap;
      eb = eb < 0 ? 0 : (eb > int(exp_max) ? int(exp_max) : eb);
      b = std::uint16_t((q & 0x8000) | (unsigned(eb) << frac) | ((q >> 24) & frac_mask));
      break;
    }
    case 1: b = std::uint16_t(a ^ ((q >> 16) & 1 ? 0x8000 : 0)); break; // +-a
    case 2: b = std::uint16_t(a ^ 0x8000 ^ ((q >> 16) & 1)); break;     // -a, last bit off
    default: break;
    }
    emit(a, b, pick);
  }
}

bf16_triples bf16_operands(std::size_t n, std::mt19937_64 &rng) {
  bf16_triples t;
  operand_pairs(n, rng, bf16_specials(), 7, 20, [&](std::uint16_t a, std::uint16_t b, const auto &pick) {
    t.a.push_back(a);
    t.b.push_back(b);
    t.c.push_back(pick(rng()));
  });
  return t;
}

enum class arith { add, sub, mul, fma };
const char *name(arith k) {
  return k == arith::add ? "add" : k == arith::sub ? "sub" : k == arith::mul ? "mul" : "fma";
}

bf::result<bf::bfloat16> scalar(arith k, bf::bf16 a, bf::bf16 b, bf::bf16 c, const env &e) {
  switch (k) {
  case arith::add: return bf::add(a, b, e);
  case arith::sub: return bf::sub(a, b, e);
  case arith::mul: return bf::mul(a, b, e);
  default: return bf::fma(a, b, c, e);
  }
}

std::uint8_t run(arith k, const bf::bf16 *a, const bf::bf16 *b, const bf::bf16 *c, bf::bf16 *out,
                 std::size_t n, const env &e, const bk::random_stream *rng) {
  switch (k) {
  case arith::add: return bk::add_n(a, b, out, n, e, rng);
  case arith::sub: return bk::sub_n(a, b, out, n, e, rng);
  case arith::mul: return bk::mul_n(a, b, out, n, e, rng);
  default: return bk::fma_n(a, b, c, out, n, e, rng);
  }
}

// One kernel call on misaligned copies (one element into their buffers), against the scalar core.
void check_arith(arith k, const bf16_triples &t, const env &e, const bk::random_stream *rng) {
  const std::size_t n = t.a.size();
  std::vector<bf::bf16> a(n + 1), b(n + 1), c(n + 1), out(n + 2, bf::bf16{0x5A5A});
  for (std::size_t i = 0; i < n; ++i) {
    a[i + 1].bits = t.a[i];
    b[i + 1].bits = t.b[i];
    c[i + 1].bits = t.c[i];
  }
  const std::uint8_t flags = run(k, a.data() + 1, b.data() + 1, c.data() + 1, out.data() + 1, n, e, rng);
  std::uint8_t want_flags = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bf::result<bf::bfloat16> r = scalar(k, a[i + 1], b[i + 1], c[i + 1], element_env(e, rng, i));
    want_flags |= r.flags;
    ASSERT_EQ(out[i + 1].bits, r.value.bits)
        << name(k) << " a=" << hex<int>(t.a[i]) << " b=" << hex<int>(t.b[i]) << " c=" << hex<int>(t.c[i])
        << " i=" << i << " n=" << n << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal)
        << " nan=" << int(e.nan) << " sat=" << e.saturate;
  }
  ASSERT_EQ(out[0].bits, 0x5A5A);
  ASSERT_EQ(out[n + 1].bits, 0x5A5A);
  ASSERT_EQ(flags, want_flags) << name(k) << " n=" << n << " mode=" << bf::to_string(e.mode)
                               << " sub=" << int(e.subnormal) << " tiny=" << int(e.tiny);
}

void arith_suite(arith k) {
  std::mt19937_64 rng(0x5EED0002 + unsigned(k));
  const bk::random_stream stream{0xBADC0DEull, (std::uint64_t{1} << 32) - 40}; // crosses a key block
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n : lengths) {
        const bf16_triples t = bf16_operands(n, rng);
        check_arith(k, t, e, nullptr);
        if (bf::is_stochastic(e.mode)) check_arith(k, t, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
      // Every special against every special.
      bf16_triples all;
      const auto sp = bf16_specials();
      for (const auto x : sp)
        for (const auto y : sp) {
          all.a.push_back(x);
          all.b.push_back(y);
          all.c.push_back(sp[(x + 3u * y) % sp.size()]);
        }
      check_arith(k, all, e, nullptr);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

// In place: out == a.
void check_in_place(arith k) {
  std::mt19937_64 rng(0x5EED0003);
  for_each_target([&] {
    const bf16_triples t = bf16_operands(1001, rng);
    std::vector<bf::bf16> a(t.a.size()), b(t.a.size()), c(t.a.size()), want(t.a.size());
    for (std::size_t i = 0; i < t.a.size(); ++i) {
      a[i].bits = t.a[i];
      b[i].bits = t.b[i];
      c[i].bits = t.c[i];
      want[i] = scalar(k, a[i], b[i], c[i], env{}).value;
    }
    run(k, a.data(), b.data(), c.data(), a.data(), a.size(), env{}, nullptr);
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(a[i].bits, want[i].bits) << name(k) << " i=" << i;
  });
}

template <class In> void widen_suite() {
  std::mt19937_64 rng(0x5EED0004);
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n :
           {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(17), std::size_t(300),
            std::size_t(1023), std::size_t(1024), std::size_t(4099)}) {
        std::vector<bf::fp<In>> in(n + 1);
        for (auto &x : in)
          x.bits = typename In::storage(rng() & ((std::uint64_t{1} << In::width) - 1));
        std::vector<bf::f32> out(n + 2, bf::f32{0x5A5A5A5Au});
        const std::uint8_t flags = bk::convert_n(in.data() + 1, out.data() + 1, n, e);
        std::uint8_t want = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const bf::result<bf::binary32> r = bf::convert<bf::binary32>(in[i + 1], e);
          want |= r.flags;
          ASSERT_EQ(out[i + 1].bits, r.value.bits)
              << bf::format_name<In>() << " x=" << hex<int>(in[i + 1].bits) << " nan=" << int(e.nan)
              << " sub=" << int(e.subnormal);
        }
        ASSERT_EQ(out[0].bits, 0x5A5A5A5Au);
        ASSERT_EQ(out[n + 1].bits, 0x5A5A5A5Au);
        ASSERT_EQ(flags, want) << bf::format_name<In>() << " n=" << n;
      }
    }
  });
}

// The dot product's two documented orders, restated with the scalar core.
bf::result<bf::binary32> dot_reference(const std::vector<bf::bf16> &a, const std::vector<bf::bf16> &b,
                                       bf::f32 init, bk::dot_order order, const env &e,
                                       const bk::random_stream *rng) {
  std::uint8_t flags = 0;
  const std::size_t n = a.size();
  if (order == bk::dot_order::sequential) {
    bf::f32 acc = init;
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = bf::fma_to<bf::binary32>(a[i], b[i], acc, element_env(e, rng, i));
      acc = r.value;
      flags |= r.flags;
    }
    return {acc, flags};
  }
  std::vector<bf::f32> p(16);
  p[0] = init;
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = bf::fma_to<bf::binary32>(a[i], b[i], p[i % 16], element_env(e, rng, i));
    p[i % 16] = r.value;
    flags |= r.flags;
  }
  std::size_t k = 0;
  for (const std::size_t w : {8, 4, 2, 1})
    for (std::size_t j = 0; j < w; ++j) {
      const auto r = bf::add(p[j], p[j + w], element_env(e, rng, n + k++));
      p[j] = r.value;
      flags |= r.flags;
    }
  return {p[0], flags};
}

// fp16 values of every class: zeros, subnormals (smallest, largest, a power of two), min/max
// normal, Inf, quiet and signaling NaNs, 1 and its neighbours, both signs.
std::vector<std::uint16_t> f16_specials() {
  return with_negatives({0x0000, 0x0001, 0x0002, 0x0200, 0x03FF, 0x0400, 0x0401, 0x07FF,
                         0x0800, 0x3C00, 0x3C01, 0x3BFF, 0x4000, 0x7800, 0x7BFE, 0x7BFF,
                         0x7C00, 0x7C01, 0x7DFF, 0x7E00, 0x7FFF, 0x1400, 0x5BFF, 0x2E66});
}

struct f16_pairs {
  std::vector<std::uint16_t> a, b;
  void push(std::uint16_t x, std::uint16_t y) {
    a.push_back(x);
    b.push_back(y);
  }
};

// Operand pairs: random patterns, specials, b near a's exponent (gaps up to 16: cancellation,
// the TwoSum error, tiny and exact zero sums), b = +-a and -a with the last bit changed.
f16_pairs f16_operands(std::size_t n, std::mt19937_64 &rng) {
  f16_pairs t;
  operand_pairs(n, rng, f16_specials(), 10, 16,
                [&](std::uint16_t a, std::uint16_t b, const auto &) { t.push(a, b); });
  return t;
}

// Every exponent field pair (0..30 each: subnormal to the overflow edge), fractions 0, all
// ones or random, all four sign pairs: every exponent gap of add / sub and every product
// binade of mul, the round-to-odd intermediate's carries and borrows at a power of two.
f16_pairs f16_edges(std::mt19937_64 &rng) {
  f16_pairs t;
  for (unsigned ea = 0; ea <= 30; ++ea)
    for (unsigned eb = 0; eb <= 30; ++eb)
      for (unsigned k = 0; k < 12; ++k) {
        const unsigned fa = k % 3 == 0 ? 0u : k % 3 == 1 ? 0x3FFu : unsigned(rng()) & 0x3FFu;
        const unsigned fb = k < 4 ? 0u : k < 8 ? unsigned(rng()) & 0x3FFu : 0x3FFu - (unsigned(rng()) & 3u);
        t.push(std::uint16_t(((k & 1) << 15) | (ea << 10) | fa),
               std::uint16_t((((k >> 1) & 1) << 15) | (eb << 10) | fb));
      }
  return t;
}

enum class arith16 { add, sub, mul };
const char *name(arith16 k) { return k == arith16::add ? "add" : k == arith16::sub ? "sub" : "mul"; }

bf::result<bf::binary16> scalar16(arith16 k, bf::f16 a, bf::f16 b, const env &e) {
  switch (k) {
  case arith16::add: return bf::add(a, b, e);
  case arith16::sub: return bf::sub(a, b, e);
  default: return bf::mul(a, b, e);
  }
}

std::uint8_t run16(arith16 k, const bf::f16 *a, const bf::f16 *b, bf::f16 *out, std::size_t n, const env &e,
                   const bk::random_stream *rng) {
  switch (k) {
  case arith16::add: return bk::add_n(a, b, out, n, e, rng);
  case arith16::sub: return bk::sub_n(a, b, out, n, e, rng);
  default: return bk::mul_n(a, b, out, n, e, rng);
  }
}

// One fp16 kernel call on misaligned copies, against the scalar core.
void check_f16(arith16 k, const f16_pairs &t, const env &e, const bk::random_stream *rng) {
  const std::size_t n = t.a.size();
  std::vector<bf::f16> a(n + 1), b(n + 1), out(n + 2, bf::f16{0x5A5A});
  for (std::size_t i = 0; i < n; ++i) {
    a[i + 1].bits = t.a[i];
    b[i + 1].bits = t.b[i];
  }
  const std::uint8_t flags = run16(k, a.data() + 1, b.data() + 1, out.data() + 1, n, e, rng);
  std::uint8_t want_flags = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bf::result<bf::binary16> r = scalar16(k, a[i + 1], b[i + 1], element_env(e, rng, i));
    want_flags |= r.flags;
    ASSERT_EQ(out[i + 1].bits, r.value.bits)
        << "fp16 " << name(k) << " a=" << hex<int>(t.a[i]) << " b=" << hex<int>(t.b[i]) << " i=" << i
        << " n=" << n << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal)
        << " tiny=" << int(e.tiny) << " nan=" << int(e.nan) << " sat=" << e.saturate;
  }
  ASSERT_EQ(out[0].bits, 0x5A5A);
  ASSERT_EQ(out[n + 1].bits, 0x5A5A);
  ASSERT_EQ(flags, want_flags) << "fp16 " << name(k) << " n=" << n << " mode=" << bf::to_string(e.mode)
                               << " sub=" << int(e.subnormal) << " tiny=" << int(e.tiny);
}

// Every target and env: the odd lengths, every special against every special, the exponent
// edges and 100,000 random pairs; stochastic rounding also with a stream across a key block.
void f16_suite(arith16 k) {
  std::mt19937_64 rng(0x5EED0010 + unsigned(k));
  const bk::random_stream stream{0xF16ull, (std::uint64_t{1} << 32) - 1500};
  f16_pairs all;
  const auto sp = f16_specials();
  for (const auto x : sp)
    for (const auto y : sp)
      all.push(x, y);
  const f16_pairs edges = f16_edges(rng);
  const f16_pairs many = f16_operands(100000, rng);
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n : lengths) {
        const f16_pairs t = f16_operands(n, rng);
        check_f16(k, t, e, nullptr);
        if (e.mode == round_mode::stochastic) check_f16(k, t, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
      for (const f16_pairs *t : {static_cast<const f16_pairs *>(&all), &edges, &many}) {
        check_f16(k, *t, e, nullptr);
        if (e.mode == round_mode::stochastic) check_f16(k, *t, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  });
}

} // namespace

TEST(Bulk, CounterRandomKnownAnswers) {
  // Computed independently (Python, from the definition in bulk.hpp).
  struct ka {
    std::uint64_t seed, index;
    std::uint32_t value;
  };
  const ka cases[] = {
      {0x0ull, 0x0ull, 0x0200b09cu},
      {0x0ull, 0x1ull, 0x084798aau},
      {0x1ull, 0x0ull, 0xaf3ab395u},
      {0x3039ull, 0x7ull, 0x422c4aa9u},
      {0xdeadbeefull, 0x100000000ull, 0x5fea1f8du},
      {0x2aull, 0x500000063ull, 0x485abbd5u},
  };
  for (const ka &c : cases)
    EXPECT_EQ(bk::counter_random(c.seed, c.index), c.value) << c.seed << " " << c.index;
}

TEST(Bulk, TargetsIncludeSse4AndAvx2WhereSupported) {
  const std::int64_t supported = hwy::SupportedTargets();
  std::int64_t forced = 0;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets())
    forced |= t;
  if (supported & HWY_AVX2) {
    EXPECT_TRUE(forced & HWY_AVX2);
  }
  if (supported & HWY_SSE4) {
    EXPECT_TRUE(forced & HWY_SSE4);
  }
}

TEST(Bulk, ConvertF32ToBf16) { narrow_suite<bf::bfloat16>(); }
TEST(Bulk, ConvertF32ToTf32) { narrow_suite<bf::tensorfloat32>(); }
TEST(Bulk, ConvertF32ToFp16) { narrow_suite<bf::binary16>(); }
TEST(Bulk, ConvertF32ToE4m3) { narrow_suite<bf::float8_e4m3>(); }
TEST(Bulk, ConvertF32ToE5m2) { narrow_suite<bf::float8_e5m2>(); }

TEST(Bulk, WidenBf16) { widen_suite<bf::bfloat16>(); }
TEST(Bulk, WidenTf32) { widen_suite<bf::tensorfloat32>(); }
TEST(Bulk, WidenFp16) { widen_suite<bf::binary16>(); }
TEST(Bulk, WidenE4m3) { widen_suite<bf::float8_e4m3>(); }
TEST(Bulk, WidenE5m2) { widen_suite<bf::float8_e5m2>(); }

TEST(Bulk, Fp16AddN) { f16_suite(arith16::add); }
TEST(Bulk, Fp16SubN) { f16_suite(arith16::sub); }
TEST(Bulk, Fp16MulN) { f16_suite(arith16::mul); }

TEST(Bulk, AddN) { arith_suite(arith::add); }
TEST(Bulk, SubN) { arith_suite(arith::sub); }
TEST(Bulk, MulN) { arith_suite(arith::mul); }
TEST(Bulk, FmaN) { arith_suite(arith::fma); }
// Operands for the round-to-odd fp32 intermediate of add/sub/mul/fma (bulk.cpp bf16_odd):
// every exponent gap 0..40 between a and b (both orders, all four sign pairs; a at a power of
// two, at the top of its binade, or random; exponents from the subnormal range to the overflow
// edge); fma products that sit exactly half a bf16 ulp above the grid with c 25..40 binades
// below (the fp32 sum is then that tie and inexact: the double-rounding case), and products at a
// power of two with c of either sign far below. Expected values come from the scalar core.
std::uint16_t bf16_of(unsigned sign, int field, unsigned frac) {
  return std::uint16_t((sign << 15) | (unsigned(field) << 7) | (frac & 0x7Fu));
}
bf16_triples odd_edges(std::mt19937_64 &rng) {
  bf16_triples t;
  const auto push = [&](std::uint16_t a, std::uint16_t b, std::uint16_t c) {
    t.a.push_back(a);
    t.b.push_back(b);
    t.c.push_back(c);
  };
  for (int gap = 0; gap <= 40; ++gap)
    for (const int ea : {1, 2, 30, 127, 160, 230, 253, 254})
      for (unsigned k = 0; k < 12; ++k) {
        const int eb = ea - gap;
        if (eb < 0) continue;
        const unsigned fa = k % 3 == 0 ? 0u : k % 3 == 1 ? 0x7Fu : unsigned(rng());
        const unsigned fb = k < 4 ? 0u : unsigned(rng());
        const std::uint16_t a = bf16_of(k & 1, ea, fa), b = bf16_of((k >> 1) & 1, eb, fb);
        const std::uint16_t c =
            bf16_of(unsigned(rng()) & 1, std::max(0, ea - gap - int(rng() % 3)), unsigned(rng()));
        push(a, b, c);
        push(b, a, c);
        push(a, bf16_of(k & 1, 127 - gap / 2, unsigned(rng())), c); // fma: c = a * (product ~ a)
      }
  // fma ties: significands A, B (8 bits with the hidden bit) whose product's bits below the
  // bf16 cut are exactly half an ulp; c = +-2^(ep - g) * (1 + f/128), g in 25..40.
  for (unsigned fa = 0; fa < 128; ++fa)
    for (unsigned fb = 0; fb < 128; ++fb) {
      const unsigned P = (128 + fa) * (128 + fb); // in [2^14, 2^16)
      const bool wide = P >= (1u << 15);
      const bool tie = wide ? (P & 0xFFu) == 0x80u : (P & 0x7Fu) == 0x40u;
      const bool pow2 = P == (1u << 14);
      if (!tie && !pow2) continue;
      const int ep = wide ? 1 : 0; // p = P * 2^-14 for a, b in [1, 2)
      for (int g = 25; g <= 40; g += 3) {
        const unsigned sa = unsigned(rng()) & 1, sb = unsigned(rng()) & 1, sc = unsigned(rng()) & 1;
        const int scale = int(rng() % 100) - 50; // a's binade moves, c's with it
        push(bf16_of(sa, 127 + scale, fa), bf16_of(sb, 127, fb),
             bf16_of(sc, 127 + scale + ep - g, unsigned(rng())));
      }
    }
  return t;
}

TEST(Bulk, OddIntermediateEdges) {
  std::mt19937_64 rng(0x5EED0009);
  const bf16_triples t = odd_edges(rng);
  ASSERT_GT(t.a.size(), 10000u);
  const bk::random_stream stream{0xC0FFEEull, 12345};
  for_each_target([&] {
    for (const arith k : {arith::add, arith::sub, arith::mul, arith::fma})
      for (const env &e : envs()) {
        check_arith(k, t, e, nullptr);
        if (bf::is_stochastic(e.mode)) check_arith(k, t, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
  });
}

// The SIMD float path is used only in the host's default float environment: with flush-to-zero,
// denormals-are-zero and round-toward-zero set in MXCSR the kernels must still equal the scalar
// core (computed before the environment changes).
TEST(Bulk, HostFloatEnvironment) {
#if defined(__SSE2__) || defined(_M_X64)
  std::mt19937_64 rng(0x5EED000A);
  bf16_triples t = odd_edges(rng);
  const bf16_triples r = bf16_operands(4000, rng);
  t.a.insert(t.a.end(), r.a.begin(), r.a.end());
  t.b.insert(t.b.end(), r.b.begin(), r.b.end());
  t.c.insert(t.c.end(), r.c.begin(), r.c.end());
  const std::size_t n = t.a.size();
  std::vector<bf::bf16> a(n), b(n), c(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i].bits = t.a[i];
    b[i].bits = t.b[i];
    c[i].bits = t.c[i];
  }
  const unsigned saved = _mm_getcsr();
  for (const unsigned csr :
       {0x9FC0u /* FTZ | DAZ */, 0x7F80u /* toward zero */, 0x5F80u /* upward */, 0xFFC0u /* all three */}) {
    for (const arith k : {arith::add, arith::sub, arith::mul, arith::fma})
      for (const env &e : envs()) {
        std::vector<std::uint16_t> want(n);
        std::uint8_t want_flags = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const bf::result<bf::bfloat16> s = scalar(k, a[i], b[i], c[i], e);
          want[i] = s.value.bits;
          want_flags |= s.flags;
        }
        for_each_target([&] {
          _mm_setcsr(csr);
          const std::uint8_t flags = run(k, a.data(), b.data(), c.data(), out.data(), n, e, nullptr);
          _mm_setcsr(saved);
          for (std::size_t i = 0; i < n; ++i)
            ASSERT_EQ(out[i].bits, want[i]) << name(k) << " csr=" << hex<int>(csr)
                                            << " a=" << hex<int>(t.a[i]) << " b=" << hex<int>(t.b[i])
                                            << " c=" << hex<int>(t.c[i]) << " mode=" << bf::to_string(e.mode);
          ASSERT_EQ(flags, want_flags) << name(k) << " csr=" << hex<int>(csr);
        });
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
#else
  GTEST_SKIP() << "MXCSR is x86 only";
#endif
}

// The fp16 kernels and the fp32 -> fp16 conversion (its F16C path) under the same foreign
// MXCSR settings.
TEST(Bulk, Fp16HostFloatEnvironment) {
#if defined(__SSE2__) || defined(_M_X64)
  std::mt19937_64 rng(0x5EED0011);
  f16_pairs t = f16_edges(rng);
  const f16_pairs r = f16_operands(4000, rng);
  t.a.insert(t.a.end(), r.a.begin(), r.a.end());
  t.b.insert(t.b.end(), r.b.begin(), r.b.end());
  const std::size_t n = t.a.size();
  std::vector<bf::f16> a(n), b(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i].bits = t.a[i];
    b[i].bits = t.b[i];
  }
  const std::vector<std::uint32_t> src = f32_in_range<bf::binary16>(4099, rng);
  std::vector<bf::f32> x(src.size());
  for (std::size_t i = 0; i < src.size(); ++i)
    x[i].bits = src[i];
  std::vector<bf::f16> y(src.size());
  const unsigned saved = _mm_getcsr();
  for (const unsigned csr : {0x9FC0u, 0x7F80u, 0x5F80u, 0xFFC0u}) {
    for (const env &e : envs()) {
      if (e.mode == round_mode::stochastic) continue; // add/sub run the scalar core there
      for (const arith16 k : {arith16::add, arith16::sub, arith16::mul}) {
        std::vector<std::uint16_t> want(n);
        std::uint8_t want_flags = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const bf::result<bf::binary16> s = scalar16(k, a[i], b[i], e);
          want[i] = s.value.bits;
          want_flags |= s.flags;
        }
        for_each_target([&] {
          _mm_setcsr(csr);
          const std::uint8_t flags = run16(k, a.data(), b.data(), out.data(), n, e, nullptr);
          _mm_setcsr(saved);
          for (std::size_t i = 0; i < n; ++i)
            ASSERT_EQ(out[i].bits, want[i])
                << name(k) << " csr=" << hex<int>(csr) << " a=" << hex<int>(t.a[i])
                << " b=" << hex<int>(t.b[i]) << " mode=" << bf::to_string(e.mode);
          ASSERT_EQ(flags, want_flags) << name(k) << " csr=" << hex<int>(csr);
        });
        if (::testing::Test::HasFatalFailure()) return;
      }
      std::uint8_t want_flags = 0;
      std::vector<std::uint16_t> want(src.size());
      for (std::size_t i = 0; i < src.size(); ++i) {
        const bf::result<bf::binary16> s = bf::convert<bf::binary16>(x[i], e);
        want[i] = s.value.bits;
        want_flags |= s.flags;
      }
      for_each_target([&] {
        _mm_setcsr(csr);
        const std::uint8_t flags = bk::convert_n(x.data(), y.data(), x.size(), e);
        _mm_setcsr(saved);
        for (std::size_t i = 0; i < src.size(); ++i)
          ASSERT_EQ(y[i].bits, want[i]) << "fp32->fp16 csr=" << hex<int>(csr) << " x=" << hex<int>(src[i]);
        ASSERT_EQ(flags, want_flags) << "fp32->fp16 csr=" << hex<int>(csr);
      });
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
#else
  GTEST_SKIP() << "MXCSR is x86 only";
#endif
}

TEST(Bulk, InPlace) {
  for (const arith k : {arith::add, arith::sub, arith::mul, arith::fma})
    check_in_place(k);
}

TEST(Bulk, DotBothOrders) {
  std::mt19937_64 rng(0x5EED0005);
  const bk::random_stream stream{77, 5};
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(15), std::size_t(16),
                                  std::size_t(17), std::size_t(100), std::size_t(1000)}) {
        const bf16_triples t = bf16_operands(n, rng);
        std::vector<bf::bf16> a(n), b(n);
        for (std::size_t i = 0; i < n; ++i) {
          // Mostly moderate values (long sums stay finite), some specials from the generator.
          a[i].bits = (rng() & 7) ? std::uint16_t((t.a[i] & 0x807F) | ((120 + rng() % 16) << 7)) : t.a[i];
          b[i].bits = (rng() & 7) ? std::uint16_t((t.b[i] & 0x807F) | ((120 + rng() % 16) << 7)) : t.b[i];
        }
        const bf::f32 init{std::uint32_t(rng() % 3 == 0 ? 0x3F800000u : 0u)};
        for (const auto order : {bk::dot_order::sequential, bk::dot_order::blocked16}) {
          for (const bk::random_stream *r : {static_cast<const bk::random_stream *>(nullptr), &stream}) {
            const auto want = dot_reference(a, b, init, order, e, r);
            const auto got = bk::dot_n(a.data(), b.data(), n, init, order, e, r);
            ASSERT_EQ(got.value.bits, want.value.bits)
                << "n=" << n << " order=" << int(order) << " mode=" << bf::to_string(e.mode);
            ASSERT_EQ(got.flags, want.flags) << "n=" << n << " order=" << int(order);
          }
        }
      }
    }
  });
}

// Dot products on data that keep the SIMD nearest-even steps busy, and on their edges: normal
// operands with moderate exponents, exponents whose products and sums are tiny (subnormal
// partial sums, underflow), or near 2^128 (overflow), and sums that cancel exactly (element
// i + 16 negates element i, so a partial sum returns to zero); and 32 elements whose only
// inexact steps are the second 16 (2^10 + 2^-20 per partial sum; every other step and every
// combining addition exact), so the inexact flag can only come from those steps.
TEST(Bulk, DotRegimes) {
  std::mt19937_64 rng(0x5EED0006);
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const int regime : {0, 1, 2, 3, 4}) {
        const std::size_t n = regime == 3 ? 4096 : regime == 4 ? 32 : 1024 + 37;
        std::vector<bf::bf16> a(n), b(n);
        const auto pick = [&](int lo, int span) {
          return std::uint16_t(((rng() & 1) << 15) | (unsigned(lo + int(rng() % unsigned(span))) << 7) |
                               (rng() & 0x7F));
        };
        for (std::size_t i = 0; i < n; ++i) {
          switch (regime) {
          case 0: a[i].bits = pick(120, 16), b[i].bits = pick(120, 16); break;
          case 1: a[i].bits = pick(58, 8), b[i].bits = pick(62, 8); break;
          case 2: a[i].bits = pick(186, 8), b[i].bits = pick(186, 6); break;
          case 4:
            a[i].bits = i < 16 ? 0x4480 : 0x3580; // 2^10, then 2^-20
            b[i].bits = 0x3F80;                   // 1
            break;
          default:
            a[i].bits = (i / 16) % 2 ? a[i - 16].bits : pick(110, 30);
            b[i].bits = (i / 16) % 2 ? std::uint16_t(b[i - 16].bits ^ 0x8000u) : pick(110, 30);
            break;
          }
        }
        for (const auto order : {bk::dot_order::sequential, bk::dot_order::blocked16}) {
          const auto want = dot_reference(a, b, {}, order, e, nullptr);
          const auto got = bk::dot_n(a.data(), b.data(), n, {}, order, e);
          ASSERT_EQ(got.value.bits, want.value.bits)
              << "regime=" << regime << " order=" << int(order) << " mode=" << bf::to_string(e.mode);
          ASSERT_EQ(got.flags, want.flags)
              << "regime=" << regime << " order=" << int(order) << " mode=" << bf::to_string(e.mode)
              << " sub=" << int(e.subnormal);
        }
      }
    }
  });
}

namespace {

// The environment of one row of the all-pairs checks: the mode, a random word from the row, and
// one of four policy sets (0: IEEE defaults; 1: flush both, tininess before rounding; 2: saturate,
// CUDA NaNs; 3: inputs as zero, PyTorch NaNs).
env row_env(round_mode mode, std::uint64_t row, std::uint64_t policies) {
  env e;
  e.mode = mode;
  e.random = std::uint32_t(row * 2654435761u);
  switch (policies) {
  case 1:
    e.subnormal = bf::subnormals::flush_both;
    e.tiny = bf::tininess::before_rounding;
    break;
  case 2:
    e.saturate = true;
    e.nan = bf::nan_policy::cuda;
    break;
  case 3:
    e.subnormal = bf::subnormals::inputs_as_zero;
    e.nan = bf::nan_policy::pytorch;
    break;
  default: break;
  }
  return e;
}

// Rows of the all-pairs check: add_n(row, every bf16 b) on the chosen target in each mode,
// rows rotating four environments, stochastic with a stream per row; returns the mismatches
// (values, plus one per row whose OR-ed flags differ).
std::uint64_t add_rows(const std::vector<std::uint16_t> &rows) {
  const unsigned threads = bf::resolve_threads(0, rows.size());
  std::uint64_t total = 0;
  for (int m = 0; m < bf::round_mode_count; ++m) {
    std::vector<std::uint64_t> bad(rows.size(), 0);
    bf::parallel_for(rows.size(), threads, [&](std::uint64_t k, unsigned) {
      const std::uint64_t row = rows[k];
      const env e = row_env(round_mode(m), row, row % 4);
      const bk::random_stream stream{row, row << 16};
      std::vector<bf::bf16> a(65536, bf::bf16{std::uint16_t(row)}), b(65536), out(65536);
      for (std::size_t j = 0; j < 65536; ++j)
        b[j].bits = std::uint16_t(j);
      const std::uint8_t flags = bk::add_n(a.data(), b.data(), out.data(), 65536, e, &stream);
      std::uint8_t want = 0;
      for (std::size_t j = 0; j < 65536; ++j) {
        const auto r = bf::add(a[j], b[j], element_env(e, &stream, j));
        want |= r.flags;
        bad[k] += r.value.bits != out[j].bits;
      }
      bad[k] += flags != want;
    });
    for (const auto x : bad)
      total += x;
  }
  return total;
}

} // namespace

// Every subnormal and zero row (both signs, 256 rows) against every bf16, all modes: the
// subnormal-operand window of add_n.
TEST(Bulk, AddSubnormalRowsAllPairs) {
  std::vector<std::uint16_t> rows;
  for (std::uint16_t x = 0; x < 0x80; ++x) {
    rows.push_back(x);
    rows.push_back(std::uint16_t(x | 0x8000));
  }
  EXPECT_EQ(add_rows(rows), 0u);
}

// Long tier (label long, ctest -R bulk_add_all_pairs): every bf16 pair through add_n on the
// chosen target, each mode, rows rotating four environments, stochastic with a stream.
TEST(BulkLong, AddAllPairs) {
  std::vector<std::uint16_t> rows(65536);
  for (std::size_t x = 0; x < 65536; ++x)
    rows[x] = std::uint16_t(x);
  EXPECT_EQ(add_rows(rows), 0u);
}

// Long tier (label long, ctest -R bulk_fp16_all_pairs): every fp16 pair through add_n, sub_n
// and mul_n on the chosen target; row x runs mode x % 7 under one of four environments
// ((x / 7) % 4), stochastic with a stream per row.
TEST(BulkLong, Fp16AllPairs) {
  const unsigned threads = bf::resolve_threads(0, 65536);
  for (const arith16 k : {arith16::add, arith16::sub, arith16::mul}) {
    std::vector<std::uint64_t> bad(65536, 0);
    bf::parallel_for(65536, threads, [&](std::uint64_t row, unsigned) {
      const env e = row_env(round_mode(row % bf::round_mode_count), row, (row / bf::round_mode_count) % 4);
      const bk::random_stream stream{row, row << 16};
      std::vector<bf::f16> a(65536, bf::f16{std::uint16_t(row)}), b(65536), out(65536);
      for (std::size_t j = 0; j < 65536; ++j)
        b[j].bits = std::uint16_t(j);
      const std::uint8_t flags = run16(k, a.data(), b.data(), out.data(), 65536, e, &stream);
      std::uint8_t want = 0;
      for (std::size_t j = 0; j < 65536; ++j) {
        const auto r = scalar16(k, a[j], b[j], element_env(e, &stream, j));
        want |= r.flags;
        bad[row] += r.value.bits != out[j].bits;
      }
      bad[row] += flags != want;
    });
    std::uint64_t total = 0;
    for (const auto x : bad)
      total += x;
    EXPECT_EQ(total, 0u) << name(k);
  }
}
