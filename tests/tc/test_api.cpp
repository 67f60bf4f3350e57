// The tensor-core API: presets and aliases, tile/GEMM entry points, the trace, constexpr use,
// and the reductions to IEEE arithmetic (expected values from the host FPU).
#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "bf16emu/attention/policy.hpp"
#include "bf16emu/attention/tc_adapter.hpp"
#include "common.hpp"

namespace {

using namespace tctest;

std::uint32_t host_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// FP16 bit pattern of x when x is a nonzero finite FP16 value (plain <cmath>, no model code).
bool fp16_exact_bits(double x, std::uint64_t &bits) {
  if (x == 0 || !std::isfinite(x) || std::abs(x) > 65504) return false;
  const int e = std::ilogb(x);
  const int q = std::max(e, -14) - 10; // weight of the last fraction bit
  const double s = std::ldexp(std::abs(x), -q);
  if (s != std::floor(s)) return false;
  const std::uint64_t sig = std::uint64_t(s);
  bits = (x < 0 ? 0x8000u : 0u) | (e >= -14 ? (std::uint64_t(e + 15) << 10) | (sig - 1024) : sig);
  return true;
}

// Exact value of a bf16/fp16/tf32 pattern as a double (independent decoding).
double value_of(const tcref::fmt &f, std::uint64_t bits) {
  const tcref::value v = tcref::decode(f, bits);
  double m = double(v.sig.convert_to<std::uint64_t>());
  double r = m;
  for (int e = v.exp - f.mbits; e > 0; --e)
    r *= 2;
  for (int e = v.exp - f.mbits; e < 0; ++e)
    r /= 2;
  return v.neg ? -r : r;
}

// Expected names written out here, not read from the code under test.
TEST(Arch, NamesRoundTrip) {
  const std::pair<const char *, arch> canonical[] = {
      {"sm70", arch::sm70}, {"sm75", arch::sm75}, {"sm80", arch::sm80},   {"sm86", arch::sm86},
      {"sm89", arch::sm89}, {"sm90", arch::sm90}, {"sm100", arch::sm100}, {"sm120", arch::sm120}};
  ASSERT_EQ(std::size(canonical), std::size_t(arch_count));
  for (const auto &[name, a] : canonical) {
    EXPECT_STREQ(to_string(a), name);
    arch parsed = arch::sm70 == a ? arch::sm100 : arch::sm70;
    EXPECT_TRUE(parse_arch(name, parsed)) << name;
    EXPECT_EQ(parsed, a) << name;
  }
  static_assert([] {
    arch a = arch::sm70;
    return parse_arch("hopper", a) && a == arch::sm90;
  }());
}

TEST(Arch, AliasesAndRejects) {
  const std::pair<const char *, arch> aliases[] = {{"volta", arch::sm70},          {"turing", arch::sm75},
                                                   {"ampere", arch::sm80},         {"ada", arch::sm89},
                                                   {"hopper", arch::sm90},         {"sm90a", arch::sm90},
                                                   {"blackwell", arch::sm100},     {"sm100a", arch::sm100},
                                                   {"rtx-blackwell", arch::sm120}, {"sm120a", arch::sm120}};
  for (const auto &[name, a] : aliases) {
    arch parsed = arch::sm86;
    EXPECT_TRUE(parse_arch(name, parsed)) << name;
    EXPECT_EQ(parsed, a) << name;
  }
  for (const char *bad :
       {"sm61", "", "sm8", "sm800", "sm80 ", "SM80", "Ampere", "sm86a", "sm1000", "fa2:sm80"}) {
    arch parsed = arch::sm86;
    EXPECT_FALSE(parse_arch(bad, parsed)) << bad;
    EXPECT_EQ(parsed, arch::sm86) << bad; // left unchanged
  }
  // A prefix of a longer name in a bigger buffer: only the view's characters count.
  arch parsed = arch::sm70;
  EXPECT_TRUE(parse_arch(std::string_view("sm100", 4), parsed) == false);
  EXPECT_TRUE(parse_arch(std::string_view("sm90a", 4), parsed));
  EXPECT_EQ(parsed, arch::sm90);
  EXPECT_STREQ(generation_name(arch::sm86), nullptr);
  EXPECT_EQ(default_kind(arch::sm100), instr_kind::tcgen05);
  for (const auto &[name, k] :
       {std::pair{"mma", instr_kind::mma}, std::pair{"mma.sync", instr_kind::mma},
        std::pair{"wgmma", instr_kind::wgmma}, std::pair{"tcgen05", instr_kind::tcgen05}}) {
    instr_kind parsed = instr_kind::tcgen05 == k ? instr_kind::mma : instr_kind::tcgen05;
    EXPECT_TRUE(parse_instr(name, parsed)) << name;
    EXPECT_EQ(parsed, k) << name;
  }
  for (const char *bad : {"", "MMA", "wgmma ", "mma.syn", "hmma"}) {
    instr_kind parsed = instr_kind::wgmma;
    EXPECT_FALSE(parse_instr(bad, parsed)) << bad;
    EXPECT_EQ(parsed, instr_kind::wgmma) << bad;
  }
  EXPECT_EQ(default_kind(arch::sm90), instr_kind::mma);
}

// The attention policies name the same type: fa2:ARCH for the canonical names with a BF16
// model, nothing else.
TEST(Arch, AttentionPolicyNames) {
  for (const char *ok : {"fa2:sm80", "fa2:sm86", "fa2:sm89", "fa2:sm90", "fa2:sm100"}) {
    attention::kernel_policy p;
    p.arch = arch::sm70;
    EXPECT_TRUE(attention::parse_policy(ok, p)) << ok;
    EXPECT_EQ(attention::policy_name(p), ok);
  }
  for (const char *bad : {"fa2:sm70", "fa2:sm75", "fa2:ampere", "fa2:hopper", "fa2:sm90a", "fa2:", "fa2:sm61",
                          "fa2:SM80", "fa2sm80"}) {
    attention::kernel_policy p;
    EXPECT_FALSE(attention::parse_policy(bad, p)) << bad;
    EXPECT_EQ(p.arch, arch::sm80) << bad; // the default, untouched
  }
  EXPECT_TRUE(attention::tc_for(arch::sm90).valid);
  EXPECT_EQ(attention::tc_for(arch::sm90).block.L, 16);
  EXPECT_EQ(attention::tc_for(arch::sm86).block.L, 8);
  EXPECT_FALSE(attention::tc_for(arch::sm70).valid);
  EXPECT_FALSE(attention::tc_for(arch::sm75).valid);
}

TEST(Presets, Gaps) {
  // Open in the sources: no preset.
  EXPECT_EQ(find_preset(arch::sm100, instr_kind::tcgen05, format_id::e4m3, format_id::fp32), nullptr);
  EXPECT_EQ(find_preset(arch::sm80, instr_kind::mma, format_id::e4m3, format_id::fp32), nullptr);
  EXPECT_EQ(find_preset(arch::sm80, instr_kind::wgmma, format_id::bf16, format_id::fp32), nullptr);
  for (const preset &P : presets) {
    EXPECT_TRUE(P.block.valid()) << describe(P);
    EXPECT_EQ(P.k % P.block.L, 0) << describe(P);
    // e_zero can matter only for inputs with 8 exponent bits (see presets.hpp; A or B: the
    // tcgen05 fp16 x bf16 mixes).
    EXPECT_EQ(P.e_zero_matters, P.in == format_id::bf16 || P.in == format_id::tf32 || P.b == format_id::bf16)
        << describe(P);
  }
}

// Where e_zero_matters is false, no input can tell e_zero apart: random vectors (tiny and
// random patterns) give the same D with e_zero = -1000.
TEST(Presets, ZeroTermExponentIrrelevantForNarrowInputs) {
  for (const preset &P : presets) {
    if (P.e_zero_matters || P.accum != accum_kind::fused) continue;
    block_params other = P.block;
    other.e_zero = -1000;
    gen g(7);
    const tcref::fmt in = ref_fmt(P.in), inb = ref_fmt(P.b), out = ref_fmt(P.c);
    std::vector<std::uint64_t> a(P.k), b(P.k);
    for (int i = 0; i < 20000; ++i) {
      for (int k = 0; k < P.k; ++k) {
        a[k] = g.coin(3) ? 0 : g.coin(2) ? g.tiny(in) : g.any(in);
        b[k] = g.coin(2) ? g.tiny(inb) : g.any(inb);
      }
      const std::uint64_t c = g.coin(2) ? 0 : g.tiny(out);
      ASSERT_EQ(model_dot(P, P.block, a.data(), b.data(), P.k, c),
                model_dot(P, other, a.data(), b.data(), P.k, c))
          << describe(P);
    }
  }
}

// A single product with c = 0 is exact when the product is representable in the output
// (F >= 2*frac_bits + 1 for every preset: no alignment loss). Expected: the host FPU product.
TEST(IeeeReduction, SingleProductExact) {
  for (const preset &P : presets) {
    if (P.accum != accum_kind::fused) continue; // f64: ProbeDmma
    const tcref::fmt in = ref_fmt(P.in), inb = ref_fmt(P.b);
    gen g(11);
    std::vector<std::uint64_t> a(P.k, 0), b(P.k, 0);
    int tested = 0;
    for (int i = 0; i < 200000; ++i) {
      a[0] = g.coin(8) ? g.tiny(in) : g.normal(in, -70, 70);
      b[0] = g.coin(8) ? g.tiny(inb) : g.normal(inb, -70, 70);
      if (P.out == format_id::fp16) { // short significands, so that the product can fit FP16
        // (fp6/fp4 significands are short already: at most 4 bits)
        a[0] = g.normal(in, -7, 7) & ~std::uint64_t(in.width() >= 8 ? 0x3f : 0);
        b[0] = g.normal(inb, -7, 7) & ~std::uint64_t(inb.width() >= 8 ? 0x3f : 0);
      }
      const double x = value_of(in, a[0]) * value_of(inb, b[0]); // exact: <= 22-bit significands
      std::uint64_t expect;
      if (P.out == format_id::fp32) {
        const float f = float(x);
        if (double(f) != x || x == 0 || std::abs(x) > 3.0e38) continue;
        expect = host_bits(f);
      } else {
        if (!fp16_exact_bits(x, expect)) continue;
      }
      if (P.block.out_frac < 23 && P.out == format_id::fp32) { // 13-bit output: must fit 14 bits
        const std::uint32_t low = std::uint32_t(expect) & ((1u << (23 - P.block.out_frac)) - 1);
        if (low != 0 || std::abs(x) < 1.2e-38) continue;
      }
      ++tested;
      ASSERT_EQ(model_dot(P, a.data(), b.data(), P.k, 0), expect)
          << describe(P) << " a " << hex(a[0]) << " b " << hex(b[0]);
    }
    EXPECT_GT(tested, 1000) << describe(P);
  }
}

// c plus zero products is c when F covers c's fraction (FP32 c: F >= 23; FP16 c: F >= 10).
TEST(IeeeReduction, ZeroProductsKeepC) {
  for (const preset &P : presets) {
    if (P.block.F < (P.out == format_id::fp32 ? 23 : 10) || P.block.out_frac < 10) continue;
    if (P.c != P.out || P.accum != accum_kind::fused) continue; // C/D mixes, f64: their own probes
    gen g(3);
    std::vector<std::uint64_t> a(P.k, 0), b(P.k, 0);
    const tcref::fmt out = ref_fmt(P.out);
    for (int i = 0; i < 100000; ++i) {
      std::uint64_t c = g.coin(4) ? g.tiny(out) : g.normal(out, -126, 127);
      if (P.out == format_id::fp32 && P.block.out_frac < 23) c &= ~std::uint64_t(0x3ff); // 13-bit c
      const std::uint64_t expect = (c & ((std::uint64_t{1} << (out.width() - 1)) - 1)) == 0 ? 0 : c;
      ASSERT_EQ(model_dot(P, a.data(), b.data(), P.k, c), expect) << describe(P) << " c " << hex(c);
    }
  }
}

// Sums of small integers are exact and independent of the order: compare with the host.
TEST(IeeeReduction, SmallIntegerDotProducts) {
  const preset &P = *find_preset(arch::sm90, instr_kind::wgmma, format_id::bf16, format_id::fp32);
  gen g(5);
  std::vector<bf16> a(64), b(64);
  for (int i = 0; i < 10000; ++i) {
    float expect = 0;
    for (int k = 0; k < 64; ++k) {
      const int x = g.uniform(-100, 100), y = g.uniform(-100, 100);
      a[k] = bf16::from_bits(host_bits(float(x)) >> 16), b[k] = bf16::from_bits(host_bits(float(y)) >> 16);
      expect += float(x) * float(y);
    }
    const f32 d = dot<bfloat16, binary32>(P.block, P.k, a.data(), 1, b.data(), 1, 64, f32::from_bits(0));
    ASSERT_EQ(d.bits, host_bits(expect + 0.0f));
  }
}

// mma(): every element is the dot product of its row and column; gemm() with K > k chains
// instructions; D may alias C.
// The mixed presets through mma(): B, C and D arrays in their own formats (the template
// parameters deduced from the pointers), each D element equal to the reference's dot product.
template <class In, class InB, class InC, class Out>
void check_mixed_mma(const preset &P, std::uint64_t seed) {
  gen g(seed);
  const tcref::fmt fa = ref_fmt(P.in), fb = ref_fmt(P.b), fc = ref_fmt(P.c);
  std::vector<fp<In>> A(P.m * P.k);
  std::vector<fp<InB>> B(P.k * P.n);
  std::vector<fp<InC>> C(P.m * P.n);
  std::vector<fp<Out>> D(P.m * P.n);
  for (auto &x : A)
    x = fp<In>::from_bits(g.coin(5) ? g.any(fa) : g.normal(fa, -5, 5));
  for (auto &x : B)
    x = fp<InB>::from_bits(g.coin(5) ? g.any(fb) : g.normal(fb, -5, 5));
  for (auto &x : C)
    x = fp<InC>::from_bits(g.coin(5) ? g.tiny(fc) : g.normal(fc, -3, 3));
  mma<In, Out>(P, A.data(), B.data(), C.data(), D.data());
  for (int i = 0; i < P.m; ++i)
    for (int j = 0; j < P.n; ++j) {
      std::vector<std::uint64_t> a(P.k), b(P.k);
      for (int k = 0; k < P.k; ++k)
        a[k] = A[i * P.k + k].bits, b[k] = B[k * P.n + j].bits;
      ASSERT_EQ(std::uint64_t(D[i * P.n + j].bits), ref_dot(P, a.data(), b.data(), P.k, C[i * P.n + j].bits))
          << describe(P) << " i " << i << " j " << j;
    }
}

TEST(Api, MixedFormatMma) {
  using fmt = format_id;
  check_mixed_mma<float8_e4m3, float8_e5m2, binary32, binary32>(
      *find_preset(arch::sm89, instr_kind::mma, fmt::e4m3, fmt::e5m2, fmt::fp32, fmt::fp32), 1);
  check_mixed_mma<float8_e5m2, float8_e4m3, binary16, binary16>(
      *find_preset(arch::sm90, instr_kind::wgmma, fmt::e5m2, fmt::e4m3, fmt::fp16, fmt::fp16), 2);
  check_mixed_mma<binary16, binary16, binary16, binary32>(
      *find_preset(arch::sm70, instr_kind::mma, fmt::fp16, fmt::fp16, fmt::fp16, fmt::fp32), 3);
  check_mixed_mma<binary16, binary16, binary32, binary16>(
      *find_preset(arch::sm75, instr_kind::mma, fmt::fp16, fmt::fp16, fmt::fp32, fmt::fp16), 4);
  check_mixed_mma<binary64, binary64, binary64, binary64>(
      *find_preset(arch::sm90, instr_kind::mma, fmt::fp64, fmt::fp64, fmt::fp64, fmt::fp64), 5);
}

TEST(Api, MmaAndGemmAreDotProducts) {
  const preset &P = *find_preset(arch::sm80, instr_kind::mma, format_id::bf16, format_id::fp32);
  gen g(9);
  const tcref::fmt in = tcref::bf16, out = tcref::fp32;
  std::vector<bf16> A(P.m * P.k), B(P.k * P.n);
  std::vector<f32> C(P.m * P.n), D(P.m * P.n);
  for (auto &x : A)
    x = bf16::from_bits(g.normal(in, -5, 5));
  for (auto &x : B)
    x = bf16::from_bits(g.normal(in, -5, 5));
  for (auto &x : C)
    x = f32::from_bits(g.normal(out, -3, 3));
  mma<bfloat16, binary32>(P, A.data(), B.data(), C.data(), D.data());
  for (int i = 0; i < P.m; ++i)
    for (int j = 0; j < P.n; ++j) {
      std::vector<std::uint64_t> a(P.k), b(P.k);
      for (int k = 0; k < P.k; ++k)
        a[k] = A[i * P.k + k].bits, b[k] = B[k * P.n + j].bits;
      EXPECT_EQ(D[i * P.n + j].bits, ref_dot(P, a.data(), b.data(), P.k, C[i * P.n + j].bits));
    }
  // GEMM 5 x 3 x 37 (K not a multiple of k: zero padding), in place.
  const int M = 5, N = 3, K = 37;
  std::vector<bf16> GA(M * K), GB(K * N);
  std::vector<f32> GC(M * N);
  for (auto &x : GA)
    x = bf16::from_bits(g.normal(in, -5, 5));
  for (auto &x : GB)
    x = bf16::from_bits(g.normal(in, -5, 5));
  for (auto &x : GC)
    x = f32::from_bits(g.normal(out, -3, 3));
  const std::vector<f32> C0 = GC;
  gemm<bfloat16, binary32>(P, M, N, K, GA.data(), K, GB.data(), N, GC.data(), N, GC.data(), N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      std::vector<std::uint64_t> a(K), b(K);
      for (int k = 0; k < K; ++k)
        a[k] = GA[i * K + k].bits, b[k] = GB[k * N + j].bits;
      EXPECT_EQ(GC[i * N + j].bits, ref_dot(P, a.data(), b.data(), K, C0[i * N + j].bits));
    }
}

// The trace of the A100 probe 1*1 + c, c = -2^-25 (two blocks of 8).
TEST(Trace, BlockRecord) {
  const preset &P = *find_preset(arch::sm80, instr_kind::mma, format_id::bf16, format_id::fp32);
  std::vector<bf16> a(16, bf16{}), b(16, bf16{});
  a[0] = bf16::from_bits(0x3f80), b[0] = bf16::from_bits(0x3f80);
  a[1] = bf16::from_bits(0x3f80), b[1] = bf16::from_bits(0x3380); // 2^-24
  std::vector<block_trace> seen;
  auto tr = make_block_tracer([&](const block_trace &t) { seen.push_back(t); });
  // c = -(2^-25 + 2^-48): both bits lie below the lsb 2^-24.
  const f32 c = f32::from_bits(0xb3000001);
  const f32 d = dot<bfloat16, binary32>(P.block, P.k, a.data(), 1, b.data(), 1, 16, c, tr);
  ASSERT_EQ(seen.size(), 2u);
  const block_trace &t0 = seen[0];
  EXPECT_EQ(t0.block, 0);
  EXPECT_EQ(t0.k0, 0);
  EXPECT_EQ(t0.n_products, 8);
  EXPECT_FALSE(t0.special);
  EXPECT_EQ(t0.max_exp, 0);
  EXPECT_EQ(t0.lsb_exp, -24);
  EXPECT_EQ(t0.aligned_sum, (1 << 24) + 1); // 1 + 2^-24; c is cut to 0
  EXPECT_EQ(t0.sum_value, 1.0 + 0x1p-24);
  EXPECT_EQ(t0.terms[0].exp, 0);
  EXPECT_LE(t0.terms[0].shift, 0);
  EXPECT_EQ(t0.terms[0].lost, 0.0);
  EXPECT_EQ(t0.terms[1].exp, -24);
  EXPECT_TRUE(t0.terms[2].zero);
  EXPECT_EQ(t0.terms[2].exp, P.block.e_zero);
  EXPECT_EQ(t0.terms[8].exp, -25);                   // c
  EXPECT_EQ(t0.terms[8].lost, -(0x1p-25 + 0x1p-48)); // all of c
  EXPECT_EQ(t0.terms[8].shift, 24);                  // its 24 significant bits are all below 2^-24
  EXPECT_EQ(t0.c_bits, 0xb3000001u);
  EXPECT_EQ(t0.d_bits, 0x3f800000u);
  EXPECT_EQ(t0.trunc_err, -0x1p-24); // 1 + 2^-24 truncated to 1
  EXPECT_EQ(seen[1].block, 1);
  EXPECT_EQ(seen[1].k0, 8);
  EXPECT_EQ(seen[1].c_bits, 0x3f800000u);
  EXPECT_EQ(seen[1].trunc_err, 0.0);
  EXPECT_EQ(d.bits, 0x3f800000u);
  // Ledger identities: exact = sum_value + sum(lost); d = sum_value + trunc_err.
  double lost = 0;
  for (int i = 0; i <= t0.n_products; ++i)
    lost += t0.terms[i].lost;
  EXPECT_EQ(t0.sum_value + lost, 1.0 + 0x1p-24 - 0x1p-25 - 0x1p-48);
  EXPECT_EQ(t0.sum_value + t0.trunc_err, 1.0);
}

TEST(Trace, SpecialBlockAndZeroCostDefault) {
  static_assert(!no_block_trace::enabled);
  const preset &P = *find_preset(arch::sm90, instr_kind::mma, format_id::bf16, format_id::fp32);
  std::vector<bf16> a(16, bf16{}), b(16, bf16{});
  a[0] = bf16::from_bits(0x7f80);
  int calls = 0;
  bool special = false;
  auto tr = make_block_tracer([&](const block_trace &t) { ++calls, special = t.special; });
  EXPECT_EQ((dot<bfloat16, binary32>(P.block, P.k, a.data(), 1, b.data(), 1, 16, f32{}, tr).bits),
            0x7fffffffu);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(special);
}

// The model runs in constant expressions (the same code runs on the device).
constexpr std::uint32_t constexpr_probe() {
  bf16 a[16]{}, b[16]{};
  a[0].bits = 0x3f80, b[0].bits = 0x3f80;
  const preset &P = *find_preset(arch::sm90, instr_kind::wgmma, format_id::bf16, format_id::fp32);
  return dot<bfloat16, binary32>(P.block, P.k, a, 1, b, 1, 16, f32::from_bits(0xb3000000)).bits;
}
static_assert(constexpr_probe() == 0x3f7fffff); // [KM25] H100 probe, tests/tc/test_probes.cpp

} // namespace

namespace {
// Regression (found by fuzz/tc.cpp under UBSan): a zero product whose exponent ea + eb lies
// above the block maximum must not produce a negative shift count. Constant evaluation
// rejects such a shift, so this compiles only if none happens.
constexpr std::uint32_t zero_product_above_max(std::uint16_t small) {
  bf16 a[16]{}, b[16]{};
  b[0].bits = 0x7f00;                    // 0 * 2^127: exponent -126 + 127 = 1 > emax
  a[1].bits = small, b[1].bits = 0x3f80; // small * 1
  const preset &P = *find_preset(arch::sm90, instr_kind::mma, format_id::bf16, format_id::fp32);
  return dot<bfloat16, binary32>(P.block, P.k, a, 1, b, 1, 16, f32::from_bits(0)).bits;
}
static_assert(zero_product_above_max(0x3f80) == 0x3f800000); // 1
static_assert(zero_product_above_max(0x0001) == 0x00010000); // 2^-133
// A zero c with tiny products (c's exponent -126 far above them; emax = e_zero).
constexpr std::uint32_t tiny_products_zero_c() {
  bf16 a[16]{}, b[16]{};
  for (int i = 0; i < 16; ++i)
    a[i].bits = 0x0001, b[i].bits = 0x0001; // 2^-133 * 2^-133
  const preset &P = *find_preset(arch::sm80, instr_kind::mma, format_id::bf16, format_id::fp32);
  return dot<bfloat16, binary32>(P.block, P.k, a, 1, b, 1, 16, f32::from_bits(0)).bits;
}
static_assert(tiny_products_zero_c() == 0x00000000); // 16 * 2^-266 truncates to +0
} // namespace
