// Tier f: the rounding trace against the oracle's own rounding: sign, binade exponent, lsb
// exponent, kept significand, guard/round/sticky, tininess, decision, result bits and flags for
// random cases of every operation, format mix and mode; and the error err_hi + err_lo, summed
// exactly (as dyadic rationals), equal to the oracle's exact result - exact value. err_exact
// must be set for add/sub/mul/fma/convert (finite results) and for div/sqrt without remainder,
// and clear for div/sqrt with a nonzero remainder.
#include <gtest/gtest.h>

#include "common.hpp"

namespace {

using namespace coretest;

oracle::decision map_dec(decision d) {
  switch (d) {
  case decision::exact: return oracle::decision::exact;
  case decision::down: return oracle::decision::down;
  case decision::up: return oracle::decision::up;
  case decision::tie_down: return oracle::decision::tie_down;
  case decision::tie_up: return oracle::decision::tie_up;
  case decision::overflow_inf: return oracle::decision::overflow_inf;
  case decision::overflow_max: return oracle::decision::overflow_max;
  case decision::flush_zero: return oracle::decision::flush_zero;
  }
  return oracle::decision::none;
}

std::uint64_t pick(rng &r, int width) {
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  std::uint64_t v = r.next() & mask;
  if (r.below(4) == 0) { // small exponent field: subnormals / tiny values
    const int top = width - 1;
    v &= ~(mask >> 3) | (mask >> 4); // clear a few high exponent bits
    v &= ~(std::uint64_t{1} << (top - 1));
  }
  return v;
}

// Whether a dyadic value is the exact sum of two binary64 numbers (exponent range aside): it fits
// 53 bits, or its top 53 bits (truncated or rounded up) leave a remainder that fits 53 bits.
bool fits53(const boost::multiprecision::cpp_int &m) {
  if (m == 0) return true;
  return boost::multiprecision::msb(m) - boost::multiprecision::lsb(m) < 53;
}
bool two_doubles(const oracle::dyadic &d) {
  using boost::multiprecision::cpp_int;
  if (fits53(d.mag)) return true;
  const unsigned cut = static_cast<unsigned>(boost::multiprecision::msb(d.mag)) - 52;
  const cpp_int hi = (d.mag >> cut) << cut;
  if (fits53(d.mag - hi)) return true;
  const cpp_int up = hi + (cpp_int(1) << cut);
  return fits53(up) && fits53(up - d.mag);
}

struct trace_stats {
  tally t;
  std::atomic<long long> events{0}, err_checked{0}, flagged_three_terms{0};
};

template <class Out>
void compare_event(trace_stats &st, const last_event &ev, const result<Out> &got, const oracle::result &want,
                   oracle::op o, oracle::operand a, oracle::operand b, oracle::operand c, const env &e,
                   const std::string &what) {
  tally &t = st.t;
  ++t.cases;
  if (std::uint64_t(got.value.bits) != want.bits || got.flags != want.flags) {
    t.fail(what + ": value " + hex(got.value.bits) + "/" + oracle::flags_string(got.flags) + " vs oracle " +
           hex(want.bits) + "/" + oracle::flags_string(want.flags));
    return;
  }
  if (!want.rounded) return; // NaN, Inf or exact zero: no rounding to compare
  ++st.events;
  if (ev.count != 1) {
    t.fail(what + ": tracer called " + std::to_string(ev.count) + " times");
    return;
  }
  const rounding_event &x = ev.event;
  std::string diff;
  auto chk = [&](bool ok, const char *field, long long g, long long w) {
    if (!ok) diff += std::string(" ") + field + " " + std::to_string(g) + "!=" + std::to_string(w);
  };
  chk(x.sign == want.sign, "sign", x.sign, want.sign);
  chk(x.exponent == want.exponent, "exponent", x.exponent, want.exponent);
  chk(x.lsb_exp == want.lsb_exp, "lsb_exp", x.lsb_exp, want.lsb_exp);
  chk(x.kept == want.kept, "kept", (long long)x.kept, (long long)want.kept);
  chk(x.guard == want.guard, "guard", x.guard, want.guard);
  chk(x.round == want.round, "round", x.round, want.round);
  chk(x.sticky == want.sticky, "sticky", x.sticky, want.sticky);
  chk(x.tiny == want.tiny, "tiny", x.tiny, want.tiny);
  chk(map_dec(x.dec) == want.dec, "decision", int(x.dec), int(want.dec));
  chk(x.result_bits == want.bits, "result_bits", (long long)x.result_bits, (long long)want.bits);
  chk(x.flags == want.flags, "flags", x.flags, want.flags);
  chk(x.dst_exp_bits == Out::exp_bits && x.dst_frac_bits == Out::frac_bits, "dst format", x.dst_frac_bits,
      Out::frac_bits);
  chk(x.mode == e.mode, "mode", int(x.mode), int(e.mode));
  // The error.
  const auto err = oracle::exact_error(o, a, b, c, ofmt<Out>(), want.bits, oenv(e));
  if (err) {
    ++st.err_checked;
    // The error is a sum of up to three exact terms (result, operands/product, addend); when the
    // result lies far from the exact value (overflow to +-max, a tiny value rounded up to the
    // smallest subnormal) it can need three binary64 terms, which the contract allows to be
    // flagged. So err_exact may be false only when the exact error is not a sum of two doubles.
    // When err_exact is set, the value is always checked.
    const bool may_flag = !two_doubles(*err);
    if (!x.err_exact && may_flag)
      ++st.flagged_three_terms;
    else if (!x.err_exact)
      diff += " err_exact=false for a dyadic error";
    else if (!(oracle::dyadic_from_double(x.err_hi) + oracle::dyadic_from_double(x.err_lo) == *err))
      diff += " err " + std::to_string(x.err_hi) + "+" + std::to_string(x.err_lo) +
              " != " + oracle::to_string(*err);
  } else if (want.dec != oracle::decision::overflow_inf) {
    // Only div/sqrt with a remainder have no dyadic error.
    if (o != oracle::op::div && o != oracle::op::sqrt)
      diff += " oracle has no error for a finite result";
    else if (x.err_exact)
      diff += " err_exact=true for an inexact quotient/root";
  }
  if (!diff.empty()) t.fail(what + ":" + diff);
}

template <class Out, class FA, class FB, class FC> void trace_mix(std::uint64_t seed, long long n) {
  trace_stats st;
  parallel_for(n, [&](long long i) {
    rng r(seed * 0x100000000ull + std::uint64_t(i));
    const env e = random_env(r, round_mode(i % round_mode_count));
    const std::uint64_t a = pick(r, FA::width), b = pick(r, FB::width), c = pick(r, FC::width);
    const auto x = fp<FA>::from_bits(a);
    const auto y = fp<FB>::from_bits(b);
    const auto z = fp<FC>::from_bits(c);
    const oracle::operand oa{a, ofmt<FA>()}, ob{b, ofmt<FB>()}, oc{c, ofmt<FC>()}, none{0, ofmt<FA>()};
    const auto oe = oenv(e);
    const std::string tag = oracle::name(ofmt<FA>()) + "," + oracle::name(ofmt<FB>()) + "," +
                            oracle::name(ofmt<FC>()) + "->" + oracle::name(ofmt<Out>()) + " a=" + hex(a) +
                            " b=" + hex(b) + " c=" + hex(c) + " " + env_string(e);
    {
      last_event ev;
      const auto g = add_to<Out>(x, y, e, ev);
      compare_event(st, ev, g, oracle::add(oa, ob, ofmt<Out>(), oe), oracle::op::add, oa, ob, none, e,
                    "add " + tag);
    }
    {
      last_event ev;
      const auto g = sub_to<Out>(x, y, e, ev);
      compare_event(st, ev, g, oracle::sub(oa, ob, ofmt<Out>(), oe), oracle::op::sub, oa, ob, none, e,
                    "sub " + tag);
    }
    {
      last_event ev;
      const auto g = mul_to<Out>(x, y, e, ev);
      compare_event(st, ev, g, oracle::mul(oa, ob, ofmt<Out>(), oe), oracle::op::mul, oa, ob, none, e,
                    "mul " + tag);
    }
    {
      last_event ev;
      const auto g = fma_to<Out>(x, y, z, e, ev);
      compare_event(st, ev, g, oracle::fma(oa, ob, oc, ofmt<Out>(), oe), oracle::op::fma, oa, ob, oc, e,
                    "fma " + tag);
    }
    {
      last_event ev;
      const auto g = div_to<Out>(x, y, e, ev);
      compare_event(st, ev, g, oracle::div(oa, ob, ofmt<Out>(), oe), oracle::op::div, oa, ob, none, e,
                    "div " + tag);
    }
    {
      last_event ev;
      const auto g = sqrt_to<Out>(z, e, ev);
      compare_event(st, ev, g, oracle::sqrt(oc, ofmt<Out>(), oe), oracle::op::sqrt, oc, none, none, e,
                    "sqrt " + tag);
    }
    {
      last_event ev;
      const auto g = convert<Out>(z, e, ev);
      compare_event(st, ev, g, oracle::convert(oc, ofmt<Out>(), oe), oracle::op::convert, oc, none, none, e,
                    "convert " + tag);
    }
  });
  EXPECT_EQ(st.t.bad.load(), 0) << st.t.report();
  std::printf("%lld checks, %lld rounding events compared, %lld exact errors compared (%lld errors needing "
              "three binary64 "
              "terms flagged inexact), %lld mismatches\n",
              st.t.cases.load(), st.events.load(), st.err_checked.load(), st.flagged_three_terms.load(),
              st.t.bad.load());
}

TEST(Trace, Fp32) { trace_mix<binary32, binary32, binary32, binary32>(31, 300000); }
TEST(Trace, Bf16) { trace_mix<bfloat16, bfloat16, bfloat16, bfloat16>(32, 300000); }
TEST(Trace, Bf16ToFp32) { trace_mix<binary32, bfloat16, bfloat16, binary32>(33, 200000); }
TEST(Trace, Fp32ToBf16) { trace_mix<bfloat16, binary32, binary32, binary32>(34, 200000); }
TEST(Trace, Fp16AndFp8) { trace_mix<float8_e4m3, binary16, float8_e5m2, binary16>(35, 200000); }
TEST(Trace, Fp32ToFp16) { trace_mix<binary16, binary32, bfloat16, binary32>(36, 200000); }
TEST(Trace, Fp64Convert) {
  // fp64 sources only go through convert: reuse the mix with Out = fp32 and c = fp64 values.
  trace_stats st;
  parallel_for(300000, [&](long long i) {
    rng r(37 * 0x100000000ull + std::uint64_t(i));
    const env e = random_env(r, round_mode(i % round_mode_count));
    std::uint64_t c = r.next();
    if (r.below(3) == 0) c = (c & 0x800FFFFFFFFFFFFFull) | (std::uint64_t(r.below(400) + 1023 - 200) << 52);
    if (r.below(5) == 0) c = (c & 0x800FFFFFFFFFFFFFull) | (std::uint64_t(r.below(60) + 1023 - 160) << 52);
    const oracle::operand oc{c, oracle::fp64}, none{0, oracle::fp64};
    const std::string tag = "fp64 x=" + hex(c) + " " + env_string(e);
    const auto x = f64::from_bits(c);
    {
      last_event ev;
      const auto g = convert<binary32>(x, e, ev);
      compare_event(st, ev, g, oracle::convert(oc, oracle::fp32, oenv(e)), oracle::op::convert, oc, none,
                    none, e, "->fp32 " + tag);
    }
    {
      last_event ev;
      const auto g = convert<bfloat16>(x, e, ev);
      compare_event(st, ev, g, oracle::convert(oc, oracle::bf16, oenv(e)), oracle::op::convert, oc, none,
                    none, e, "->bf16 " + tag);
    }
    {
      last_event ev;
      const auto g = convert<float8_e4m3>(x, e, ev);
      compare_event(st, ev, g, oracle::convert(oc, oracle::e4m3, oenv(e)), oracle::op::convert, oc, none,
                    none, e, "->e4m3 " + tag);
    }
  });
  EXPECT_EQ(st.t.bad.load(), 0) << st.t.report();
  std::printf("%lld checks, %lld rounding events compared, %lld exact errors compared (%lld errors needing "
              "three binary64 "
              "terms flagged inexact), %lld mismatches\n",
              st.t.cases.load(), st.events.load(), st.err_checked.load(), st.flagged_three_terms.load(),
              st.t.bad.load());
}

} // namespace

namespace {

// Minimal case for a finding of this tier: the exact error is a sum of two binary64 values
// (hi = bits 2^111..2^59, lo = bits 2^57..2^5), so err_exact must be set.
TEST(Trace, ErrExactWhenTwoDoublesSuffice) {
  env e;
  e.saturate = true; // fp32 + bf16 -> fp16 overflows to -65504
  last_event ev;
  const auto r = add_to<binary16>(f32::from_bits(0xe809c67b), bf16::from_bits(0xf713), e, ev);
  const auto want = oracle::add({0xe809c67b, oracle::fp32}, {0xf713, oracle::bf16}, oracle::fp16, oenv(e));
  ASSERT_EQ(r.value.bits, want.bits);
  ASSERT_EQ(r.value.bits, 0xFBFF); // -max, saturated
  const auto err = oracle::exact_error(oracle::op::add, {0xe809c67b, oracle::fp32}, {0xf713, oracle::bf16},
                                       {0, oracle::fp32}, oracle::fp16, want.bits, oenv(e));
  ASSERT_TRUE(err.has_value());
  ASSERT_TRUE(two_doubles(*err));
  EXPECT_TRUE(ev.event.err_exact) << "exact error " << oracle::to_string(*err);
  if (ev.event.err_exact) {
    EXPECT_TRUE(oracle::dyadic_from_double(ev.event.err_hi) + oracle::dyadic_from_double(ev.event.err_lo) ==
                *err);
  }
}

} // namespace
