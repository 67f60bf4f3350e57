// io::parse_ptx_cvt / io::run_ptx_cvt (src/io/ptx_cvt.hpp): real PTX cvt strings (PTX ISA 9.0,
// 9.7.9.21) give the fields read off the ISA by hand; other strings are refused naming the bad
// token and what was expected; a few runs with bit patterns derived by hand in the comments.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/error.hpp"
#include "io/ptx_cvt.hpp"

namespace {

using namespace bf16emu;
using io::cvt_round;
using io::cvt_type;

struct good_case {
  const char *text;
  cvt_round round;
  bool relu, satfinite, ftz;
  cvt_type d, a;
};

TEST(PtxCvt, IsaStringsParse) {
  const good_case cases[] = {
      {"cvt.rn.f16.f32", cvt_round::rn, false, false, false, cvt_type::f16, cvt_type::f32},
      {"cvt.rm.ftz.f16.f32", cvt_round::rm, false, false, true, cvt_type::f16, cvt_type::f32},
      {"cvt.f32.bf16", cvt_round::none, false, false, false, cvt_type::f32, cvt_type::bf16},
      {"cvt.ftz.f32.f16;", cvt_round::none, false, false, true, cvt_type::f32, cvt_type::f16},
      {"cvt.rn.relu.bf16x2.f32", cvt_round::rn, true, false, false, cvt_type::bf16x2, cvt_type::f32},
      {"cvt.rz.relu.satfinite.f16x2.f32", cvt_round::rz, true, true, false, cvt_type::f16x2, cvt_type::f32},
      {"cvt.rna.satfinite.tf32.f32", cvt_round::rna, false, true, false, cvt_type::tf32, cvt_type::f32},
      {"cvt.rn.satfinite.relu.tf32.f32", cvt_round::rn, true, true, false, cvt_type::tf32, cvt_type::f32},
      {"cvt.rn.satfinite.e4m3x2.f32", cvt_round::rn, false, true, false, cvt_type::e4m3x2, cvt_type::f32},
      {"cvt.rn.satfinite.relu.e5m2x2.f16x2", cvt_round::rn, true, true, false, cvt_type::e5m2x2,
       cvt_type::f16x2},
      {"cvt.rn.relu.f16x2.e4m3x2", cvt_round::rn, true, false, false, cvt_type::f16x2, cvt_type::e4m3x2},
      {"cvt.rn.satfinite.e2m1x2.f32", cvt_round::rn, false, true, false, cvt_type::e2m1x2, cvt_type::f32},
      {"cvt.rn.f16x2.e3m2x2", cvt_round::rn, false, false, false, cvt_type::f16x2, cvt_type::e3m2x2},
      {"cvt.rz.satfinite.ue8m0x2.f32", cvt_round::rz, false, true, false, cvt_type::ue8m0x2, cvt_type::f32},
      {"cvt.rp.ue8m0x2.bf16x2", cvt_round::rp, false, false, false, cvt_type::ue8m0x2, cvt_type::bf16x2},
      {"cvt.rn.bf16x2.ue8m0x2", cvt_round::rn, false, false, false, cvt_type::bf16x2, cvt_type::ue8m0x2},
      {"cvt.rs.relu.satfinite.bf16x2.f32", cvt_round::rs, true, true, false, cvt_type::bf16x2, cvt_type::f32},
      {"cvt.rs.satfinite.e4m3x4.f32", cvt_round::rs, false, true, false, cvt_type::e4m3x4, cvt_type::f32},
      {"  cvt.rn.bf16.f32 ;", cvt_round::rn, false, false, false, cvt_type::bf16, cvt_type::f32},
  };
  for (const good_case &c : cases) {
    SCOPED_TRACE(c.text);
    const io::ptx_cvt p = io::parse_ptx_cvt(c.text);
    EXPECT_EQ(p.round, c.round);
    EXPECT_EQ(p.relu, c.relu);
    EXPECT_EQ(p.satfinite, c.satfinite);
    EXPECT_EQ(p.ftz, c.ftz);
    EXPECT_EQ(p.d, c.d);
    EXPECT_EQ(p.a, c.a);
    EXPECT_NE(io::form_of(p), nullptr);
  }
}

// Each refused string and two fragments its message must hold: the bad token, quoted, and what
// the position wanted.
TEST(PtxCvt, RefusalsNameTheToken) {
  struct bad {
    const char *text, *token, *wanted;
  };
  const bad cases[] = {
      {"mov.rn.f16.f32", "'mov'", "expected cvt."},
      {"cvt.rn.f16.s32", "'s32'", "floating-point source type"},
      {"cvt.rn.s8.f32", "'s8'", "a floating-point destination type"},
      {"cvt.rn.rz.f16.f32", "'rz'", "second rounding"},
      {"cvt.rn.relu.relu.bf16.f32", "'relu'", "twice"},
      {"cvt.rn.e4m3x2.f32", "'e4m3x2'", "needs .satfinite"},
      {"cvt.rz.satfinite.e4m3x2.f32", "'rz'", "expected .rn"},
      {"cvt.rn.satfinite.ue8m0x2.f32", "'rn'", "expected .rz, .rp"},
      {"cvt.rna.relu.tf32.f32", "'relu'", "only with .rn, .rz"},
      {"cvt.rz.relu.ue8m0x2.f32", "'relu'", "is not taken by cvt.ue8m0x2.f32"},
      {"cvt.bf16x2.f32", "'bf16x2'", "needs a rounding before it: .rn, .rz, .rs"},
      {"cvt.rn.f32.bf16", "'rn'", "takes no rounding"},
      {"cvt.rn.ftz.bf16x2.f32", "'ftz'", "is not taken by cvt.bf16x2.f32"},
      {"cvt.rn.satfinite.e4m3x2.bf16", "'bf16'", "source type cvt.e4m3x2 takes (f32, f16x2, bf16x2)"},
      {"cvt.rm.relu.f16.f32", "'relu'", "only with .rn, .rz"},
      {"cvt.rn.f16.f32.f32", "'f32'", "follows a complete instruction"},
      {"cvt.rn.sat.f16.f32", "'sat'", "not modelled"},
      {"cvt.rn.f16", "ends after 'f16'", "the source type"},
  };
  for (const bad &c : cases) {
    SCOPED_TRACE(c.text);
    try {
      (void)io::parse_ptx_cvt(c.text);
      ADD_FAILURE() << "accepted";
    } catch (const io::input_error &e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(c.token), std::string::npos) << m;
      EXPECT_NE(m.find(c.wanted), std::string::npos) << m;
    }
  }
}

// .rs is modelled on the x2 forms (k-bit SR with rbits); the x4 forms parse and are refused.
TEST(PtxCvt, RsX2ModelledX4Refused) {
  EXPECT_EQ(io::not_modelled(io::parse_ptx_cvt("cvt.rs.f16x2.f32")), "");
  // f16 from f32 drops 13 bits. a = 1 + 2^-11 (0x3F801000): discarded 0x1000 (half an f16 ulp),
  // random a = 0x1000 (rbits[28:16] = 0x1000): 0x2000 carries, up to 1 + 2^-10 = 0x3C01. b = 1.0
  // exact: 0x3C00 whatever the bits.
  const io::cvt_run r = io::run_ptx_cvt("cvt.rs.f16x2.f32", {"0x3F801000", "1", "0x10000000"});
  EXPECT_EQ(r.d, 0x3C013C00u);
  const io::cvt_run s = io::run_ptx_cvt("cvt.rs.f16x2.f32", {"0x3F801000", "1", "0x0FFF0000"});
  EXPECT_EQ(s.d, 0x3C003C00u); // 0x1000 + 0x0FFF = 0x1FFF: no carry
  const char *x4 = "cvt.rs.relu.satfinite.e2m1x4.f32";
  EXPECT_NE(io::not_modelled(io::parse_ptx_cvt(x4)).find("is not modelled yet"), std::string::npos);
  EXPECT_THROW((void)io::run_ptx_cvt(x4, {"1", "2"}), io::input_error);
}

// Runs; expected registers derived by hand.
TEST(PtxCvt, RunsPackAIntoTheUpperHalf) {
  // f16: 1.0 = 0 01111 0000000000 = 0x3C00; -2.0 = 1 10000 0... = 0xC000. a upper: 0x3C00C000.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.f16x2.f32", {"1", "-2"}).d, 0x3C00C000u);
  // e5m2: 1.5 = 0 01111 10 = 0x3E; 0.5 = 0 01110 00 = 0x38. a upper: 0x3E38.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e5m2x2.f32", {"1.5", "0.5"}).d, 0x3E38u);
  // e5m2 satfinite: +inf -> max finite 57344 = 0 11110 11 = 0x7B; NaN -> canonical 0x7F.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e5m2x2.f32", {"inf", "nan"}).d, 0x7B7Fu);
  // e2m1: 6 = 0 11 1 = 0x7; -0.5 = 1 00 1 = 0x9 (subnormal 0.5); a in bits 7:4: 0x79.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e2m1x2.f32", {"6", "-0.5"}).d, 0x79u);
  // f16x2 source 0x3C00C000 (1.0 upper, -2.0 lower) -> e4m3: 1.0 = 0 0111 000 = 0x38,
  // -2.0 = 1 1000 000 = 0xC0; upper stays upper: 0x38C0.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e4m3x2.f16x2", {"0x3C00C000"}).d, 0x38C0u);
  // e3m2 (bias 3): 28 = 1.11b x 2^4 = 0 111 11 = 0x1F; -0.0625 = 2^-4, the least subnormal
  // (2^(1-3) x 0.01b) = 1 000 01 = 0x21; each in an 8-bit field: 0x1F21.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e3m2x2.f32", {"28", "-0.0625"}).d, 0x1F21u);
  // Back: e2m3 (bias 1) 0x3F = 1 11 111 = -1.875 x 2^2 = -7.5 -> f16 1 10001 1110000000 = 0xC780;
  // 0x01 = 0.001b x 2^0 = 0.125 -> f16 0 01100 0000000000 = 0x3000.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.f16x2.e2m3x2", {"0x3F01"}).d, 0xC7803000u);
  // bf16x2 source 0x40C0BF00: bf16 6.0 (upper) -> e2m1 0 11 1 = 0x7; -0.5 (lower) -> 1 00 1 = 0x9.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.satfinite.e2m1x2.bf16x2", {"0x40C0BF00"}).d, 0x79u);
  // bf16x2 from ue8m0x2 0x7F80: 0x7F = 2^0 -> bf16 0x3F80; 0x80 = 2^1 -> 0x4000.
  EXPECT_EQ(io::run_ptx_cvt("cvt.rn.bf16x2.ue8m0x2", {"0x7F80"}).d, 0x3F804000u);
}

TEST(PtxCvt, BadOperandsAreNamed) {
  auto message = [](const char *t, std::vector<std::string> ops) {
    try {
      (void)io::run_ptx_cvt(t, ops);
    } catch (const io::input_error &e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("cvt.rn.bf16x2.f32", {"1"}).find("takes 2 operands"), std::string::npos);
  EXPECT_NE(message("cvt.rn.bf16x2.f32", {"1", "zz"}).find("zz"), std::string::npos);
  EXPECT_NE(message("cvt.rn.f16x2.e4m3x2", {"1.5"}).find("0x bit pattern"), std::string::npos);
  EXPECT_NE(message("cvt.rn.f16x2.e4m3x2", {"0x12345"}).find("0x12345"), std::string::npos);
  // f6 elements sit in the low 6 bits of their byte (PTX ISA cvt): 0xFF in a[15:8] is refused.
  EXPECT_NE(
      message("cvt.rn.f16x2.e2m3x2", {"0xFF01"}).find("a[15:8] holds an e2m3x2 element in its low 6 bits"),
      std::string::npos);
}

} // namespace
