// Support library: exact decimals, operand reading, names, JSON, TestFloat lines.
// Expected strings/bits are derived by hand (see the comments) or are published constants.
#include <gtest/gtest.h>

#include <bf16emu/core.hpp>

#include <sstream>

#include "io/arch_name.hpp"
#include "io/arith_report.hpp"
#include "io/attention.hpp"
#include "io/decimal.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/print.hpp"
#include "io/testfloat.hpp"

using namespace bf16emu;
using namespace bf16emu::io;

namespace {

std::string error_of(std::string_view text, format_id f) {
  try {
    parse_operand(text, f);
  } catch (const input_error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Decimal, ExactExpansions) {
  // 0.1 as binary64 = 3602879701896397 / 2^55, a classic constant.
  EXPECT_EQ(exact_decimal(0.1), "0.1000000000000000055511151231257827021181583404541015625");
  // 2^-60 = 8.67361737988403547205962240695953369140625e-19.
  EXPECT_EQ(exact_decimal_sum({1.0, 0x1p-60}),
            "1.000000000000000000867361737988403547205962240695953369140625");
  EXPECT_EQ(exact_decimal(1e23), "99999999999999991611392");
  EXPECT_EQ(exact_decimal(-4.703990459442138671875), "-4.703990459442138671875");
  EXPECT_EQ(exact_decimal(-0.0), "-0");
  EXPECT_EQ(exact_decimal(0.0), "0");
  EXPECT_EQ(exact_decimal_sum({0.1, -0.1}), "0");
  EXPECT_EQ(exact_decimal_sum({0.5, -0.75}), "-0.25");
  EXPECT_EQ(exact_decimal_sum({1.0 / 0.0, 1.0}), "inf");
  // Smallest subnormal 2^-1074 = 4.9406564584124654417656879286822137236505980...e-324.
  std::string tiny = exact_decimal(0x1p-1074);
  EXPECT_EQ(tiny.substr(0, 2 + 323 + 16), "0." + std::string(323, '0') + "4940656458412465");
  EXPECT_EQ(tiny.size(), 2u + 1074u); // 2^-1074 has exactly 1074 decimals
}

TEST(Decimal, Shortest) {
  EXPECT_EQ(shortest_decimal(-4.703990459442138671875), "-4.703990459442139");
  EXPECT_EQ(shortest_decimal(-2.407115459442138671875), "-2.4071154594421387");
  EXPECT_EQ(shortest_decimal(0.1), "0.1");
}

TEST(Number, PaperOperands) {
  // The paper's running sum -2.4071154594421387 is fp32 0xC01A0E2E (not exactly).
  operand a = parse_operand("-2.4071154594421387", format_id::fp32);
  EXPECT_EQ(a.bits, 0xC01A0E2Eu);
  EXPECT_FALSE(a.exact);
  operand b = parse_operand("-2.296875", format_id::fp32); // -(2 + 19/64) = -1.001001100 x 2^1
  EXPECT_EQ(b.bits, 0xC0130000u);
  EXPECT_TRUE(b.exact);
}

TEST(Number, SingleRoundingNotViaDouble) {
  // 1 + 2^-24 + 1e-29: above the fp32 tie, so 1 + 2^-23; through binary64 it would tie to 1.
  EXPECT_EQ(parse_operand("1.00000005960464477539062500001", format_id::fp32).bits, 0x3F800001u);
  EXPECT_EQ(parse_operand("1.000000059604644775390625", format_id::fp32).bits, 0x3F800000u); // the tie itself
  // bf16: 1 + 2^-8 is a tie (even: 1.0); a hair above rounds up to 0x3F81.
  EXPECT_EQ(parse_operand("1.00390625", format_id::bf16).bits, 0x3F80u);
  EXPECT_EQ(parse_operand("1.00390625000000001", format_id::bf16).bits, 0x3F81u);
}

TEST(Number, HexFloatAndSubnormals) {
  EXPECT_EQ(parse_operand("-0x1.34p+1", format_id::bf16).bits, 0xC01Au); // -2.40625
  EXPECT_EQ(parse_operand("0x1p-149", format_id::fp32).bits, 0x1u);      // smallest subnormal
  EXPECT_EQ(parse_operand("0x1p-150", format_id::fp32).bits, 0x0u);      // tie with 0: even
  EXPECT_EQ(parse_operand("0x1.0000000001p-150", format_id::fp32).bits, 0x1u);
  EXPECT_EQ(parse_operand("-0x1p-150", format_id::fp32).bits, 0x80000000u);
  EXPECT_EQ(parse_operand("0x1.8", format_id::fp32).bits, 0x3FC00000u);
  EXPECT_EQ(parse_operand("5.96e-8", format_id::fp16).bits, 0x1u); // 2^-24 = 5.96046e-8
}

TEST(Number, RangeEnds) {
  operand o = parse_operand("1e39", format_id::fp32);
  EXPECT_EQ(o.bits, 0x7F800000u);
  EXPECT_TRUE(o.overflow);
  EXPECT_EQ(parse_operand("65519.99", format_id::fp16).bits, 0x7BFFu); // below 65520 = max + half ulp
  EXPECT_EQ(parse_operand("65520", format_id::fp16).bits, 0x7C00u);    // tie: max 0x7BFF is odd -> Inf
  EXPECT_EQ(parse_operand("464", format_id::e4m3).bits, 0x7Eu);        // tie 448 / 480: 448 even
  EXPECT_EQ(parse_operand("465", format_id::e4m3).bits, 0x7Fu);        // rounds to 480: NaN code
  EXPECT_EQ(parse_operand("1e-400", format_id::fp32).bits, 0x0u);
  EXPECT_EQ(parse_operand("1e400", format_id::bf16).bits, 0x7F80u);
  // Between the far-range shortcut and binary64's limit: still overflow, never "exact".
  for (const char *big : {"1e300", "1e320", "-1e330", "0x1p1000"}) {
    operand b = parse_operand(big, format_id::fp32);
    EXPECT_TRUE(b.overflow) << big;
    EXPECT_FALSE(b.exact) << big;
  }
  for (const char *small : {"1e-100", "1e-320", "0x1p-1100"}) {
    operand t = parse_operand(small, format_id::fp32);
    EXPECT_EQ(t.bits, 0u) << small;
    EXPECT_FALSE(t.exact) << small;
  }
}

TEST(Number, Binary64) {
  EXPECT_EQ(parse_operand("0.1", format_id::fp64).bits, 0x3FB999999999999Aull);
  EXPECT_FALSE(parse_operand("0.1", format_id::fp64).exact);
  EXPECT_TRUE(parse_operand("0.5", format_id::fp64).exact);
  EXPECT_TRUE(parse_operand("0x1p-1074", format_id::fp64).exact);
  EXPECT_EQ(parse_operand("0x1p-1074", format_id::fp64).bits, 0x1ull);
  EXPECT_EQ(parse_operand("0x1p1024", format_id::fp64).bits, 0x7FF0000000000000ull);
}

TEST(Number, BitPatternsAndSpecials) {
  EXPECT_EQ(parse_operand("0xC01A0E2E", format_id::fp32).bits, 0xC01A0E2Eu);
  EXPECT_EQ(parse_operand("0x7FFFF", format_id::tf32).bits, 0x7FFFFu);
  EXPECT_EQ(parse_operand("0x7f", format_id::e4m3).bits, 0x7Fu);
  EXPECT_EQ(parse_operand("-inf", format_id::bf16).bits, 0xFF80u);
  EXPECT_EQ(parse_operand("nan", format_id::fp32).bits, 0x7FC00000u);
  EXPECT_EQ(parse_operand("snan", format_id::fp16).bits, 0x7C01u);
  EXPECT_EQ(parse_operand("-0", format_id::fp16).bits, 0x8000u);
}

TEST(Number, Errors) {
  EXPECT_NE(error_of("0x1C01A0E2E", format_id::fp32).find("'0x1C01A0E2E'"), std::string::npos);
  EXPECT_NE(error_of("0xC0970", format_id::bf16).find("at most 4 hex digits"), std::string::npos);
  EXPECT_NE(error_of("0x80000", format_id::tf32).find("19-bit"), std::string::npos);
  EXPECT_NE(error_of("-0xC097", format_id::bf16).find("no sign"), std::string::npos);
  EXPECT_NE(error_of("abc", format_id::fp32).find("'abc'"), std::string::npos);
  EXPECT_NE(error_of("1.2.3", format_id::fp32).find("'1.2.3'"), std::string::npos);
  EXPECT_NE(error_of("1e", format_id::fp32).find("exponent"), std::string::npos);
  EXPECT_NE(error_of("", format_id::fp32).find("empty"), std::string::npos);
  EXPECT_NE(error_of("inf", format_id::e4m3).find("no infinity"), std::string::npos);
  EXPECT_NE(error_of(std::string(3000, '1'), format_id::fp32).find("2000"), std::string::npos);
  EXPECT_THROW(parse_uint("0x100000000", 0xFFFFFFFFu, "--random"), input_error);
  EXPECT_EQ(parse_uint("0xFFFFFFFF", 0xFFFFFFFFu, "--random"), 0xFFFFFFFFu);
  EXPECT_THROW(parse_uint("-1", 10, "x"), input_error);
}

TEST(Names, FormatsModesAliases) {
  EXPECT_EQ(parse_format("bfloat16"), format_id::bf16);
  EXPECT_EQ(parse_format("BINARY32"), format_id::fp32);
  EXPECT_EQ(parse_format("half"), format_id::fp16);
  EXPECT_EQ(parse_format("float8_e4m3fn"), format_id::e4m3);
  EXPECT_EQ(parse_format("float8_e5m2"), format_id::e5m2);
  EXPECT_EQ(parse_mode("rne"), round_mode::nearest_even);
  EXPECT_EQ(parse_mode("rna"), round_mode::nearest_away);
  EXPECT_EQ(parse_mode("rz"), round_mode::toward_zero);
  EXPECT_EQ(parse_mode("ru"), round_mode::upward);
  EXPECT_EQ(parse_mode("rd"), round_mode::downward);
  EXPECT_EQ(parse_mode("ro"), round_mode::to_odd);
  EXPECT_EQ(parse_mode("sr"), round_mode::stochastic);
  EXPECT_THROW(parse_mode("sideways"), input_error);
  EXPECT_THROW(parse_format("fp8"), input_error);
  EXPECT_EQ(describe(format_id::tf32).width, 19);
  EXPECT_STREQ(name(format_id::e4m3), "e4m3");
}

// The one spelling rule (issue 46), shared by the CLI and the Python module: surrounding
// whitespace dropped, ASCII letters lower-cased, nothing else changed.
TEST(Names, OneSpellingRule) {
  EXPECT_EQ(normalize_name(" BF16 "), "bf16");
  EXPECT_EQ(normalize_name("\tFA2:SM90\n"), "fa2:sm90");
  EXPECT_EQ(normalize_name("row_sum=fp32"), "row_sum=fp32");
  EXPECT_EQ(normalize_name("b f"), "b f");
  EXPECT_EQ(normalize_name("   "), "");
  EXPECT_EQ(parse_format(" BF16 "), format_id::bf16);
  EXPECT_EQ(parse_mode(" rne "), round_mode::nearest_even);
  EXPECT_EQ(parse_mode("RNE"), round_mode::nearest_even);
  EXPECT_EQ(parse_tininess(" Before"), tininess::before_rounding);
  EXPECT_EQ(parse_nan_policy("CUDA "), nan_policy::cuda);
  EXPECT_THROW(parse_format("b f16"), input_error);
}

TEST(Names, ArchAndInstrFollowTheRule) {
  tc::arch a = tc::arch::sm70;
  EXPECT_TRUE(parse_arch_name(" SM90 ", a));
  EXPECT_EQ(a, tc::arch::sm90);
  EXPECT_TRUE(parse_arch_name("Ampere", a));
  EXPECT_EQ(a, tc::arch::sm80);
  EXPECT_FALSE(parse_arch_name("sm 90", a));
  EXPECT_EQ(a, tc::arch::sm80); // unchanged on failure
  tc::instr_kind k = tc::instr_kind::mma;
  EXPECT_TRUE(parse_instr_name("WGMMA", k));
  EXPECT_EQ(k, tc::instr_kind::wgmma);
  EXPECT_FALSE(parse_instr_name("wg mma", k));
}

TEST(Names, AttentionChoicesFollowTheRule) {
  namespace at = bf16emu::attention;
  const at::kernel_policy p = parse_policy_name(" FA2:SM90 ", "--policy", true);
  EXPECT_EQ(p.kind, at::policy_kind::fa2);
  EXPECT_EQ(p.arch, tc::arch::sm90);
  EXPECT_EQ(parse_policy_name("Paper:AutoCast", "--policy", true).paper_arith, at::paper_dtypes::autocast);
  EXPECT_EQ(parse_variant(" Stabilized"), at::variant::stabilized);
  EXPECT_EQ(parse_backward_kind("TILED"), at::backward_kind::tiled);
  // the message quotes the token as given
  try {
    parse_variant(" Flash ", "argument 'variant'");
    ADD_FAILURE() << "no throw";
  } catch (const input_error &e) {
    EXPECT_NE(std::string(e.what()).find("argument 'variant': unknown value ' Flash '"), std::string::npos)
        << e.what();
  }
}

TEST(Print, FieldsHexFlags) {
  EXPECT_EQ(hex_bits(format_id::fp32, 0xC0968717), "0xC0968717");
  EXPECT_EQ(hex_bits(format_id::e4m3, 0x7E), "0x7E");
  EXPECT_EQ(hex_bits(format_id::tf32, 0x7FFFF), "0x7FFFF");
  EXPECT_EQ(binary_fields(format_id::fp32, 0xC0968717), "1 | 10000001 | 00101101000011100010111");
  EXPECT_EQ(binary_fields(format_id::bf16, 0xC097), "1 | 10000001 | 0010111");
  EXPECT_EQ(binary_fields(format_id::e4m3, 0x7E), "0 | 1111 | 110");
  EXPECT_EQ(value_decimal(format_id::bf16, 0xC097), "-4.71875");
  EXPECT_EQ(value_exact(format_id::fp32, 0xC01A0E2E), "-2.407115459442138671875");
  EXPECT_EQ(value_decimal(format_id::e4m3, 0x7E), "448");
  EXPECT_EQ(value_decimal(format_id::fp32, 0xFFC00000), "-nan");
  EXPECT_EQ(significand_binary(0x96, 8), "1.0010110");
  EXPECT_EQ(flag_names(flag::inexact | flag::overflow), "overflow inexact");
  EXPECT_EQ(flag_names(0), "none");
}

TEST(Json, EscapingAndNesting) {
  std::ostringstream s;
  json_writer w(s, false);
  w.begin_object().kv("a", "x\"y\\\n\x01").kv("n", -3).kv("d", 0.5).kv("t", true);
  w.key("arr").begin_array().value(1).null().begin_object().end_object().end_array();
  w.kv("inf", 1.0 / 0.0);
  w.end_object();
  EXPECT_EQ(
      s.str(),
      "{\"a\":\"x\\\"y\\\\\\n\\u0001\",\"n\":-3,\"d\":0.5,\"t\":true,\"arr\":[1,null,{}],\"inf\":null}\n");
}

TEST(TestFloat, FlagsMapping) {
  // TestFloat: inexact 1, underflow 2, overflow 4, infinite 8, invalid 16.
  EXPECT_EQ(testfloat::from_bf16emu_flags(flag::inexact), 1u);
  EXPECT_EQ(testfloat::from_bf16emu_flags(flag::underflow), 2u);
  EXPECT_EQ(testfloat::from_bf16emu_flags(flag::overflow | flag::inexact), 5u);
  EXPECT_EQ(testfloat::from_bf16emu_flags(flag::divbyzero), 8u);
  EXPECT_EQ(testfloat::from_bf16emu_flags(flag::invalid), 16u);
  for (unsigned f = 0; f < 32; ++f)
    EXPECT_EQ(testfloat::from_bf16emu_flags(testfloat::to_bf16emu_flags(f)), f);
}

TEST(TestFloat, Lines) {
  const auto &add = testfloat::parse_function("f32_add");
  auto l = testfloat::parse_line("  C01A0E2E C0130000   C0968717 00\r", add, 7);
  EXPECT_EQ(l.ops[0], 0xC01A0E2Eu);
  EXPECT_EQ(l.ops[1], 0xC0130000u);
  EXPECT_EQ(l.result, 0xC0968717u);
  EXPECT_EQ(l.flags, 0u);
  EXPECT_EQ(testfloat::format_line(add, l), "C01A0E2E C0130000 C0968717 00");
  const auto &cvt = testfloat::parse_function("f32_to_bf16");
  EXPECT_EQ(testfloat::format_line(cvt, testfloat::parse_line("C0968717 c097 1", cvt, 1)),
            "C0968717 C097 01");
  auto msg = [&](std::string_view text, const testfloat::function &f) -> std::string {
    try {
      testfloat::parse_line(text, f, 12);
    } catch (const input_error &e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(msg("C01A0E2E C01300X0 C0968717 00", add).find("line 12: bad token 'C01300X0'"),
            std::string::npos);
  EXPECT_NE(msg("C01A0E2E C0130000 C0968717", add).find("line 12"), std::string::npos);
  EXPECT_NE(msg("C01A0E2E C0130000 C0968717 00 7", add).find("'7'"), std::string::npos);
  EXPECT_NE(msg("C0968717 1C097 01", cvt).find("'1C097'"), std::string::npos);
  EXPECT_NE(msg("C0968717 C097 20", cvt).find("'20'"), std::string::npos);
  EXPECT_THROW(testfloat::parse_function("f64_add"), input_error);
  round_mode m{};
  EXPECT_TRUE(testfloat::rounding_option("-rminMag", m));
  EXPECT_EQ(m, round_mode::toward_zero);
  EXPECT_TRUE(testfloat::rounding_option("-rnear_maxMag", m));
  EXPECT_EQ(m, round_mode::nearest_away);
  EXPECT_FALSE(testfloat::rounding_option("-rbogus", m));
}

TEST(ArithReport, PaperCase) {
  arith_request rq;
  rq.op = op_kind::add;
  rq.to = format_id::bf16;
  rq.operands = {parse_operand("-2.4071154594421387", format_id::fp32),
                 parse_operand("-2.296875", format_id::fp32)};
  arith_report r = run_arith(rq);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].bits, 0xC0968717u);
  EXPECT_EQ(r.steps[0].flags, 0);
  ASSERT_EQ(r.steps[1].events.size(), 1u);
  const rounding_event &ev = r.steps[1].events[0];
  EXPECT_TRUE(ev.guard);
  EXPECT_TRUE(ev.sticky);
  EXPECT_EQ(ev.dec, decision::up);
  EXPECT_EQ(exact_error_text(ev), "-0.014759540557861328125");
  EXPECT_EQ(r.result_bits, 0xC097u);
  rq.operands.pop_back();
  EXPECT_THROW(run_arith(rq), input_error);
}
