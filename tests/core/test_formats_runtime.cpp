// Run-time formats (format_spec, core/spec.hpp; issue 44):
//  - the new 8-bit formats (ml_dtypes' fnuz family, e3m4, IEEE e4m3, IEEE P3109 binary8p1..p7,
//    OCP E8M0) decoded on every encoding and compared with the exact oracle (tests/oracle, which
//    implements their definitions itself) and with published facts (below, cited);
//  - binary32 into each of them, a stride of all 2^32 inputs in every mode, against the oracle;
//  - every compile-time format against its run-time twin make_spec<F>(): every encoding of the
//    formats up to 16 bits widened to binary32/binary64 and converted into every other format,
//    and random binary32 inputs in every mode (BF16EMU_TWIN_CASES per mode, default 10^5; the
//    "long" CTest core_formats_runtime_long runs 10^7).
// The expectations come from the oracle or from the tables, never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

using namespace bf16emu;
using coretest::hex;

struct named_spec {
  const char *name;
  format_spec spec;
  oracle::format ofmt; // the same definition as the oracle reads it
};

format_spec spec_of(int e, int m, int bias, special_encoding enc) {
  format_spec s;
  s.exp_bits = e;
  s.frac_bits = m;
  s.bias = bias;
  s.encoding = enc;
  EXPECT_EQ(make_format_spec(s), nullptr);
  return s;
}

oracle::format ofmt_of(int e, int m, int bias, special_encoding enc) {
  oracle::format f{e, m};
  f.bias_value = bias;
  f.fn = enc == special_encoding::fn;
  f.finite = enc == special_encoding::finite;
  f.fnuz = enc == special_encoding::fnuz;
  f.p3109 = enc == special_encoding::p3109;
  return f;
}

named_spec make(const char *name, int e, int m, int bias, special_encoding enc) {
  return {name, spec_of(e, m, bias, enc), ofmt_of(e, m, bias, enc)};
}

// The new 8-bit formats with a sign bit (e8m0 has its own tests below).
std::vector<named_spec> new_formats() {
  using E = special_encoding;
  std::vector<named_spec> v = {
      make("e4m3fnuz", 4, 3, 8, E::fnuz),     make("e5m2fnuz", 5, 2, 16, E::fnuz),
      make("e4m3b11fnuz", 4, 3, 11, E::fnuz), make("e3m4", 3, 4, 3, E::ieee),
      make("e4m3 (IEEE)", 4, 3, 7, E::ieee),
  };
  static const char *p_names[] = {"",         "p3109:p1", "p3109:p2", "p3109:p3",
                                  "p3109:p4", "p3109:p5", "p3109:p6", "p3109:p7"};
  for (int p = 1; p <= 7; ++p)
    v.push_back(make(p_names[p], 8 - p, p - 1, 1 << (7 - p), E::p3109));
  return v;
}

const format_spec fp64_spec = make_spec<binary64>();
const format_spec fp32_spec = make_spec<binary32>();

double as_double(std::uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

// Published facts, entered by hand (facts only):
//  ml_dtypes (jax-ml/ml_dtypes, Apache-2.0), README "float8_*" descriptions: float8_e4m3fnuz
//    max 240, min normal 2^-7, min subnormal 2^-10, NaN 0x80 (the negative zero pattern), no Inf;
//    float8_e5m2fnuz max 57344, 2^-15, 2^-17, NaN 0x80; float8_e4m3b11fnuz max 30, 2^-10, 2^-13,
//    NaN 0x80; float8_e3m4 max 15.5, 0.25, 2^-6, Inf 0x70; float8_e4m3 max 240, 2^-6, 2^-9,
//    Inf 0x78 (IEEE-style).
//  IEEE SA P3109 Working Group, Interim Report on Binary Floating-point Formats for Machine
//    Learning, and its value tables (github.com/P3109/Public, "Value Tables/HexStrings/K8/Pp/
//    Binary8ppse.csv"): binary8p1 0x01 = 2^-63, 0x7E = 2^62; binary8p3 0x01 = 2^-17 (0x0.8p-16),
//    0x04 = 2^-15, 0x7E = 0x1.8p+15; 0x7F/0xFF = +-Inf, 0x80 = NaN, no negative zero; bias
//    2^(7-P) (P3109's 2^(K-P-1)), so binary8p4 max 0x7E = 224, binary8p5 15, p2 2^31, p6 3.875,
//    p7 1.96875.
struct facts {
  const char *name;
  double max, min_normal, min_subnormal; // min_subnormal = min_normal when there is none
  int nan_codes, inf_codes;              // how many patterns are NaN / Inf
};
const facts published[] = {
    {"e4m3fnuz", 240, 0x1p-7, 0x1p-10, 1, 0},     {"e5m2fnuz", 57344, 0x1p-15, 0x1p-17, 1, 0},
    {"e4m3b11fnuz", 30, 0x1p-10, 0x1p-13, 1, 0},  {"e3m4", 15.5, 0.25, 0x1p-6, 30, 2},
    {"e4m3 (IEEE)", 240, 0x1p-6, 0x1p-9, 14, 2},  {"p3109:p1", 0x1p62, 0x1p-63, 0x1p-63, 1, 2},
    {"p3109:p2", 0x1p31, 0x1p-31, 0x1p-32, 1, 2}, {"p3109:p3", 0x1.8p15, 0x1p-15, 0x1p-17, 1, 2},
    {"p3109:p4", 224, 0x1p-7, 0x1p-10, 1, 2},     {"p3109:p5", 15, 0x1p-3, 0x1p-7, 1, 2},
    {"p3109:p6", 3.875, 0.5, 0x1p-6, 1, 2},       {"p3109:p7", 1.96875, 1, 0x1p-6, 1, 2},
};

// Every encoding of each new format decoded into binary64 (bits and flags) as the oracle decodes
// it, and the value set against the published facts.
TEST(FormatsRuntime, DecodeEveryEncodingAgainstOracleAndTables) {
  const oracle::environment oe = coretest::oenv(env{});
  for (const named_spec &f : new_formats()) {
    double max = 0, min_normal = INFINITY, min_sub = INFINITY;
    int nans = 0, infs = 0, zeros = 0;
    for (std::uint64_t code = 0; code < 256; ++code) {
      const spec_result r = convert(fp64_spec, f.spec, code);
      const oracle::result o = oracle::convert(oracle::operand{code, f.ofmt}, oracle::fp64, oe);
      ASSERT_EQ(r.bits, o.bits) << f.name << " " << hex(code);
      ASSERT_EQ(r.flags, o.flags) << f.name << " " << hex(code);
      const double v = as_double(r.bits);
      if (std::isnan(v)) {
        ++nans;
      } else if (std::isinf(v)) {
        ++infs;
      } else if (v == 0) {
        ++zeros;
      } else if (v > 0) {
        max = std::fmax(max, v);
        min_sub = std::fmin(min_sub, v);
        const int e = std::ilogb(v);
        const double lsb = std::ldexp(1.0, e - f.spec.frac_bits);
        // normal: its binade holds 2^frac_bits numbers of this spacing from 2^e
        if (e >= f.spec.emin && std::fmod(v, lsb) == 0)
          min_normal = std::fmin(min_normal, std::ldexp(1.0, e));
      }
    }
    const facts *fact = nullptr;
    for (const facts &p : published)
      if (std::string(p.name) == f.name) fact = &p;
    ASSERT_NE(fact, nullptr) << f.name;
    EXPECT_EQ(max, fact->max) << f.name;
    EXPECT_EQ(min_sub, fact->min_subnormal) << f.name;
    EXPECT_EQ(std::ldexp(1.0, f.spec.emin), fact->min_normal) << f.name;
    EXPECT_EQ(nans, fact->nan_codes) << f.name;
    EXPECT_EQ(infs, fact->inf_codes) << f.name;
    // One zero where there is no negative zero (fnuz, p3109), else two.
    EXPECT_EQ(zeros, f.spec.encoding == special_encoding::ieee ? 2 : 1) << f.name;
  }
}

long long env_count(const char *name, long long fallback) {
  const char *v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

// binary32 into each new format: inputs i * stride + offset over all 2^32 patterns (stride
// BF16EMU_FORMATS_STRIDE, default 65537: 65,537 inputs per format), each in a mode and environment
// drawn per input (every mode equally often), against the oracle.
TEST(FormatsRuntime, Binary32IntoNewFormatsAgainstOracle) {
  const long long stride = env_count("BF16EMU_FORMATS_STRIDE", 65537);
  const long long n = ((1ll << 32) + stride - 1) / stride;
  for (const named_spec &f : new_formats()) {
    coretest::tally t;
    coretest::parallel_for(n, [&](long long i) {
      const std::uint32_t x = std::uint32_t(std::uint64_t(i) * std::uint64_t(stride) + 12345u);
      coretest::rng g(std::uint64_t(i) * 0x9E37u + 44u);
      env e = coretest::random_env(g, round_mode(i % round_mode_count));
      e.sr_bits = std::uint8_t(1 + g.below(32));
      const spec_result r = convert(f.spec, fp32_spec, x, e);
      const oracle::result o = oracle::convert(oracle::operand{x, oracle::fp32}, f.ofmt, coretest::oenv(e));
      ++t.cases;
      if (r.bits != o.bits || r.flags != o.flags)
        t.fail(std::string(f.name) + " " + hex(x) + " " + coretest::env_string(e) + ": core " + hex(r.bits) +
               " flags " + std::to_string(r.flags) + ", oracle " + hex(o.bits) + " flags " +
               std::to_string(o.flags));
    });
    EXPECT_EQ(t.bad.load(), 0) << f.name << "\n" << t.report();
    EXPECT_EQ(t.cases.load(), n);
  }
}

// The nearest-even rounding of a few hand-derived cases (independent of both the core and the
// oracle): the P3109 tie rule on an odd max, saturation, the unsigned zero.
TEST(FormatsRuntime, HandCases) {
  const named_spec p3 = new_formats()[7], e4fnuz = new_formats()[0];
  ASSERT_STREQ(p3.name, "p3109:p3");
  const auto cv = [](const format_spec &to, float x, env e = {}) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return convert(to, fp32_spec, b, e);
  };
  EXPECT_EQ(cv(p3.spec, 1.0f).bits, 0x40u);
  EXPECT_EQ(cv(p3.spec, -0.0f).bits, 0x00u);   // no negative zero
  EXPECT_EQ(cv(p3.spec, -1e-30f).bits, 0x00u); // rounds to zero: +0, underflow
  EXPECT_EQ(cv(p3.spec, -1e-30f).flags, flag::underflow | flag::inexact);
  EXPECT_EQ(cv(p3.spec, 49152.0f).bits, 0x7Eu);  // max
  EXPECT_EQ(cv(p3.spec, 57344.0f).bits, 0x7Fu);  // 1.75 * 2^15 is past max: Inf, overflow
  EXPECT_EQ(cv(p3.spec, -57344.0f).bits, 0xFFu); // -Inf
  env sat;
  sat.saturate = true;
  EXPECT_EQ(cv(p3.spec, -57344.0f, sat).bits, 0xFEu);
  EXPECT_EQ(cv(p3.spec, 0.0f / 0.0f).bits, 0x80u);
  EXPECT_EQ(cv(e4fnuz.spec, 240.0f).bits, 0x7Fu);
  EXPECT_EQ(cv(e4fnuz.spec, 256.0f).bits, 0x80u); // overflow: the NaN (no Inf)
  EXPECT_EQ(cv(e4fnuz.spec, -256.0f).bits, 0x80u);
  EXPECT_EQ(cv(e4fnuz.spec, 256.0f, sat).bits, 0x7Fu);
  EXPECT_EQ(cv(e4fnuz.spec, -0.0f).bits, 0x00u);
}

// OCP E8M0 (ml_dtypes float8_e8m0fnu; OCP MX v1.0 scale): decoded by its definition, 2^(code -
// 127) and 0xFF NaN, and binary32 into it as core/scale.hpp's to_ue8m0 (the MX scale conversion,
// its own tests in test_mx.cpp) rounds, in every mode.
TEST(FormatsRuntime, E8M0) {
  format_spec s;
  s.exp_bits = 8;
  s.frac_bits = 0;
  s.bias = 127;
  s.encoding = special_encoding::e8m0;
  ASSERT_EQ(make_format_spec(s), nullptr);
  EXPECT_EQ(s.width, 8);
  for (std::uint64_t code = 0; code < 256; ++code) {
    const double v = as_double(convert(fp64_spec, s, code).bits);
    if (code == 0xFF)
      EXPECT_TRUE(std::isnan(v));
    else
      EXPECT_EQ(v, std::ldexp(1.0, int(code) - 127)) << hex(code);
  }
  coretest::rng g(8);
  for (int i = 0; i < 400000; ++i) {
    const std::uint32_t x = i < 1024 ? (std::uint32_t(i) << 22) : g.u32();
    env e = coretest::random_env(g, round_mode(i % round_mode_count));
    e.subnormal = subnormals::ieee;
    e.tiny = tininess::after_rounding;
    const spec_result r = convert(s, fp32_spec, x, e);
    const ue8m0_result w = to_ue8m0(f32{x}, e);
    ASSERT_EQ(r.bits, w.value.bits) << hex(x) << " " << coretest::env_string(e);
    ASSERT_EQ(r.flags, w.flags) << hex(x) << " " << coretest::env_string(e);
  }
}

// ---------------------------------------------------------------------------------------------
// Twins: a trait and make_spec<F>().

template <class F> void twin_encodings(coretest::tally &t) {
  const format_spec sf = make_spec<F>();
  EXPECT_EQ(sf.max_finite_bits, F::max_finite_bits);
  EXPECT_EQ(sf.inf_bits, F::inf_bits);
  if (F::has_nan) {
    EXPECT_EQ(sf.nan_bits, F::nan_bits);
  }
  EXPECT_EQ(sf.emax, F::emax);
  EXPECT_EQ(sf.emin, F::emin);
  EXPECT_EQ(sf.width, F::width);
  if constexpr (F::width <= 16) {
    coretest::rng g(F::width * 131 + F::frac_bits);
    for (std::uint64_t x = 0; x < (std::uint64_t{1} << F::width); ++x) {
      env e = coretest::random_env(g, round_mode(x % round_mode_count));
      e.sr_bits = std::uint8_t(1 + g.below(32));
      const auto check = [&](auto to) {
        using T = decltype(to);
        const result<T> a = convert<T>(fp<F>::from_bits(x), e);
        const spec_result b = convert(make_spec<T>(), sf, x, e);
        ++t.cases;
        if (std::uint64_t(a.bits()) != b.bits || a.flags != b.flags)
          t.fail(std::string(format_name<F>()) + " -> " + format_name<T>() + " " + hex(x) + " " +
                 coretest::env_string(e));
      };
      visit_format(format_id(x % 10), check);
      check(binary32{});
      check(binary64{});
    }
  }
}

template <class F> void twin_from_fp32(coretest::tally &t, long long per_mode) {
  const format_spec sf = make_spec<F>();
  coretest::parallel_for(per_mode * round_mode_count, [&](long long i) {
    coretest::rng g(std::uint64_t(i) * 7919u + F::width);
    const std::uint32_t x = g.u32();
    env e = coretest::random_env(g, round_mode(i % round_mode_count));
    e.sr_bits = std::uint8_t(1 + g.below(32));
    last_event ta, tb;
    const result<F> a = convert<F>(f32{x}, e, ta);
    const spec_result b = convert(sf, fp32_spec, x, e, tb);
    ++t.cases;
    if (std::uint64_t(a.bits()) != b.bits || a.flags != b.flags || ta.count != tb.count ||
        (ta.count && (ta.event.result_bits != tb.event.result_bits || ta.event.dec != tb.event.dec ||
                      ta.event.err_hi != tb.event.err_hi || ta.event.kept != tb.event.kept)))
      t.fail(std::string(format_name<F>()) + " from fp32 " + hex(x) + " " + coretest::env_string(e));
  });
}

TEST(FormatsRuntime, EveryTraitEqualsItsRuntimeTwin) {
  coretest::tally t;
  const long long per_mode = env_count("BF16EMU_TWIN_CASES", 100000);
  for (int id = 0; id < 10; ++id)
    visit_format(format_id(id), [&](auto f) {
      using F = decltype(f);
      twin_encodings<F>(t);
      twin_from_fp32<F>(t, per_mode);
    });
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  EXPECT_GT(t.cases.load(), per_mode * round_mode_count * 10);
}

// Arithmetic: every trait (up to 24 significant bits) against its twin through the run-time
// arithmetic (core/spec.hpp), random operands in every mode, trace events compared.
template <class F> void twin_arith(coretest::tally &t, long long per_mode) {
  if constexpr (F::precision <= 24) {
    const format_spec sf = make_spec<F>();
    const std::uint64_t mask = (std::uint64_t{1} << F::width) - 1;
    coretest::parallel_for(per_mode * round_mode_count, [&](long long i) {
      coretest::rng g(std::uint64_t(i) * 104729u + F::width);
      env e = coretest::random_env(g, round_mode(i % round_mode_count));
      e.sr_bits = std::uint8_t(1 + g.below(32));
      const std::uint64_t a = g.next() & mask, b = g.next() & mask, c = g.next() & mask;
      const fp<F> x = fp<F>::from_bits(a), y = fp<F>::from_bits(b), z = fp<F>::from_bits(c);
      const op_kind ops[] = {op_kind::add, op_kind::sub, op_kind::mul,
                             op_kind::fma, op_kind::div, op_kind::sqrt};
      for (const op_kind op : ops) {
        last_event ta, tb;
        result<F> r{};
        switch (op) {
        case op_kind::add: r = add(x, y, e, ta); break;
        case op_kind::sub: r = sub(x, y, e, ta); break;
        case op_kind::mul: r = mul(x, y, e, ta); break;
        case op_kind::fma: r = fma(x, y, z, e, ta); break;
        case op_kind::div: r = div(x, y, e, ta); break;
        default: r = sqrt(x, e, ta); break;
        }
        const spec_result s = arith(op, sf, sf, a, b, c, e, tb);
        ++t.cases;
        if (std::uint64_t(r.bits()) != s.bits || r.flags != s.flags || ta.count != tb.count ||
            (ta.count && (ta.event.result_bits != tb.event.result_bits || ta.event.dec != tb.event.dec ||
                          ta.event.kept != tb.event.kept || ta.event.lsb_exp != tb.event.lsb_exp)))
          t.fail(std::string(format_name<F>()) + " " + to_string(op) + " " + hex(a) + " " + hex(b) + " " +
                 hex(c) + " " + coretest::env_string(e) + ": trait " + hex(r.bits()) + ", spec " +
                 hex(s.bits));
      }
    });
  }
}

TEST(FormatsRuntime, ArithmeticEveryTraitEqualsItsTwin) {
  coretest::tally t;
  const long long per_mode = env_count("BF16EMU_TWIN_CASES", 100000) / 10;
  for (int id = 0; id < 10; ++id)
    visit_format(format_id(id), [&](auto f) { twin_arith<decltype(f)>(t, per_mode); });
  EXPECT_EQ(t.bad.load(), 0) << t.report();
  EXPECT_GT(t.cases.load(), per_mode * round_mode_count * 9 * 6 - 1);
}

// Arithmetic in the new formats against the oracle: random operand pairs (triples for fma) and
// environments, every operation (BF16EMU_FORMATS_ARITH cases per format, default 3,000 x 6 ops).
TEST(FormatsRuntime, ArithmeticInNewFormatsAgainstOracle) {
  const long long n = env_count("BF16EMU_FORMATS_ARITH", 3000);
  for (const named_spec &f : new_formats()) {
    coretest::tally t;
    coretest::parallel_for(n, [&](long long i) {
      coretest::rng g(std::uint64_t(i) * 31337u + std::uint64_t(f.spec.frac_bits) * 7u + f.spec.bias);
      env e = coretest::random_env(g, round_mode(i % round_mode_count));
      e.sr_bits = std::uint8_t(1 + g.below(32));
      const oracle::environment oe = coretest::oenv(e);
      const std::uint64_t a = g.next() & 0xFF, b = g.next() & 0xFF, c = g.next() & 0xFF;
      const oracle::operand oa{a, f.ofmt}, ob{b, f.ofmt}, oc{c, f.ofmt};
      const struct {
        op_kind op;
        oracle::result want;
      } cases[] = {{op_kind::add, oracle::add(oa, ob, f.ofmt, oe)},
                   {op_kind::sub, oracle::sub(oa, ob, f.ofmt, oe)},
                   {op_kind::mul, oracle::mul(oa, ob, f.ofmt, oe)},
                   {op_kind::div, oracle::div(oa, ob, f.ofmt, oe)},
                   {op_kind::fma, oracle::fma(oa, ob, oc, f.ofmt, oe)},
                   {op_kind::sqrt, oracle::sqrt(oa, f.ofmt, oe)}};
      for (const auto &k : cases) {
        const spec_result r = arith(k.op, f.spec, f.spec, a, b, c, e);
        ++t.cases;
        if (r.bits != k.want.bits || r.flags != k.want.flags)
          t.fail(std::string(f.name) + " " + to_string(k.op) + " " + hex(a) + " " + hex(b) + " " + hex(c) +
                 " " + coretest::env_string(e) + ": core " + hex(r.bits) + " flags " +
                 std::to_string(r.flags) + ", oracle " + hex(k.want.bits) + " flags " +
                 std::to_string(k.want.flags));
      }
    });
    EXPECT_EQ(t.bad.load(), 0) << f.name << "\n" << t.report();
  }
}

// e8m0 products of powers of two, by hand: 2^(a-127) * 2^(b-127) = 2^(a+b-254), code a+b-127.
TEST(FormatsRuntime, E8M0Products) {
  format_spec s;
  s.exp_bits = 8;
  s.frac_bits = 0;
  s.bias = 127;
  s.encoding = special_encoding::e8m0;
  ASSERT_EQ(make_format_spec(s), nullptr);
  for (std::uint64_t a = 0; a < 255; a += 3)
    for (std::uint64_t b = 0; b < 255; b += 5) {
      const long code = long(a + b) - 127;
      if (code < 0 || code > 254) continue;
      const spec_result r = arith(op_kind::mul, s, s, a, b);
      EXPECT_EQ(r.bits, std::uint64_t(code)) << a << " " << b;
      EXPECT_EQ(r.flags, 0) << a << " " << b;
    }
  EXPECT_EQ(arith(op_kind::sub, s, s, 127, 128).bits, 0xFFu); // 1 - 2 < 0: NaN (no sign)
}

// Bad fields are refused with a reason.
TEST(FormatsRuntime, BadFieldsRefused) {
  format_spec s;
  s.exp_bits = 12;
  EXPECT_NE(make_format_spec(s), nullptr);
  s = format_spec{};
  s.exp_bits = 8;
  s.frac_bits = 20; // 29 bits, not ieee
  s.encoding = special_encoding::fnuz;
  EXPECT_NE(make_format_spec(s), nullptr);
  s = format_spec{};
  s.frac_bits = 0;
  s.encoding = special_encoding::ieee;
  EXPECT_NE(make_format_spec(s), nullptr);
}

} // namespace
