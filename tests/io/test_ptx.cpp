// io::parse_ptx / io::apply_ptx (src/io/ptx.hpp): every instruction string the preset tables
// cover, generated from the tables, maps back to its row; a hand-written list of real PTX strings
// (PTX ISA 9.7.14.5 mma, 9.7.15 wgmma, tcgen05.mma) gives the fields read off the ISA by hand;
// other strings are refused naming the bad token; explicit options that disagree are refused.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <bf16emu/tc.hpp>

#include "io/error.hpp"
#include "io/names.hpp"
#include "io/ptx.hpp"

namespace {

using namespace bf16emu;

// The instruction of a preset row's ptx text: up to the first blank or comma (the tcgen05 rows
// follow it with "(bf16 in, f32 acc), k16").
std::string instruction_of(const char *ptx) {
  const std::string s(ptx);
  return s.substr(0, s.find_first_of(" ,"));
}

format_id fmt(const std::string &name) { return io::parse_format(name); }

// The plain preset a selection picks on `arch` (what `mma` does with it).
const tc::preset *plain_preset(tc::arch arch, const io::mma_selection &s) {
  tc::instr_kind k{};
  if (!tc::parse_instr(s.instr, k)) return nullptr;
  const format_id out = fmt(s.out.empty() ? "fp32" : s.out);
  return tc::find_preset(arch, k, fmt(s.a_format), fmt(s.b_format.empty() ? s.a_format : s.b_format),
                         s.c_format.empty() ? out : fmt(s.c_format), out, int(s.shape_k));
}

TEST(Ptx, EveryPresetStringMapsToItsRow) {
  int checked = 0;
  for (const tc::preset &p : tc::presets) {
    const std::string text = instruction_of(p.ptx);
    SCOPED_TRACE(text + " on " + tc::to_string(p.arch));
    const io::ptx_mma x = io::parse_ptx(text);
    EXPECT_EQ(x.instr, p.kind);
    io::mma_selection s;
    if (p.kind == tc::instr_kind::tcgen05) // the types live in the instruction descriptor
      s.a_format = io::name(p.in), s.b_format = io::name(p.b), s.out = io::name(p.out);
    io::apply_ptx(x, text, s);
    EXPECT_TRUE(s.kind.empty());
    EXPECT_EQ(s.shape_k, unsigned(p.k));
    EXPECT_EQ(io::same_shape(plain_preset(p.arch, s), x), &p);
    ++checked;
  }
  EXPECT_EQ(checked, tc::preset_count);
  std::printf("%d preset strings map to their rows\n", checked);
}

TEST(Ptx, EveryScaledPresetStringMapsToItsRow) {
  int checked = 0;
  for (const tc::scaled_preset &P : tc::scaled_presets) {
    const std::string row = instruction_of(P.ptx);
    const bool tcgen05 = P.instr == tc::instr_kind::tcgen05;
    std::vector<std::pair<format_id, format_id>> ab;
    for (const format_id fa : tc::f8f6f4_formats)
      for (const format_id fb : tc::f8f6f4_formats)
        if (tc::takes_formats(P, fa, fb)) ab.emplace_back(fa, fb);
    for (const auto &[fa, fb] : ab) {
      std::string text = row; // the sm120 rows write A's and B's types as '*'
      for (const format_id f : {fa, fb})
        if (const auto star = text.find('*'); star != std::string::npos) text.replace(star, 1, io::name(f));
      SCOPED_TRACE(text + " on " + tc::to_string(P.arch));
      const io::ptx_mma x = io::parse_ptx(text);
      EXPECT_EQ(x.instr, P.instr);
      EXPECT_EQ(x.kind, P.kind);
      io::mma_selection s;
      if (tcgen05) {
        s.out = io::name(P.out);
        if (P.any_f8f6f4) s.a_format = io::name(fa), s.b_format = io::name(fb);
        if (P.params.scale != tc::scale_kind::none) s.scale_format = tc::to_string(P.params.scale);
      }
      io::apply_ptx(x, text, s);
      EXPECT_EQ(fmt(s.a_format), fa);
      EXPECT_EQ(fmt(s.b_format), fb);
      if (!tcgen05 && P.params.scale == tc::scale_kind::none) {
        // mma.sync kind::f8f6f4 is a row of the plain table (same arithmetic as this one)
        EXPECT_TRUE(s.kind.empty());
        const tc::preset *p = plain_preset(P.arch, s);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->block.F, P.params.F);
        EXPECT_EQ(p->block.L, P.params.k);
      } else {
        EXPECT_EQ(s.kind, P.kind);
        const tc::scale_kind sk = s.scale_format.empty()      ? tc::scale_kind::none
                                  : s.scale_format == "ue4m3" ? tc::scale_kind::ue4m3
                                                              : tc::scale_kind::ue8m0;
        tc::instr_kind k{};
        ASSERT_TRUE(tc::parse_instr(s.instr, k));
        EXPECT_EQ(tc::find_scaled_preset(P.arch, k, s.kind.c_str(), sk, int(s.scale_vec), fmt(s.out)), &P);
      }
      ++checked;
    }
  }
  std::printf("%d scaled-preset strings (the '*' types expanded) map to their rows\n", checked);
  EXPECT_GT(checked, tc::scaled_preset_count);
}

// Real PTX strings, fields by hand from the PTX ISA's syntax (mma: .dtype.atype.btype.ctype;
// wgmma: .dtype.atype.btype with C = D; tcgen05: the kind, K from the kind's table).
struct hand_case {
  const char *text;
  tc::instr_kind instr;
  int m, n, k;
  const char *kind, *a, *b, *c, *d; // "" where the string has none
  int scale_vec;
  const char *scale_format;
};

TEST(Ptx, HandWrittenStrings) {
  using tc::instr_kind;
  const hand_case cases[] = {
      {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", instr_kind::mma, 16, 8, 16, "", "bf16", "bf16",
       "fp32", "fp32", 0, ""},
      {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", instr_kind::mma, 16, 8, 32, "", "e4m3", "e5m2",
       "fp32", "fp32", 0, ""},
      {"mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f16;", instr_kind::mma, 8, 8, 4, "", "fp16", "fp16",
       "fp16", "fp32", 0, ""},
      {"  mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 ", instr_kind::mma, 8, 8, 4, "", "fp64", "fp64",
       "fp64", "fp64", 0, ""},
      {"mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", instr_kind::mma, 16, 8, 4, "", "tf32", "tf32",
       "fp32", "fp32", 0, ""},
      {"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", instr_kind::mma, 16, 8, 8, "", "fp16", "fp16",
       "fp16", "fp16", 0, ""},
      {"mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32", instr_kind::mma, 16, 8, 32,
       "f8f6f4", "e3m2", "e2m1", "fp32", "fp32", 0, ""},
      {"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e2m3.f32.ue8m0",
       instr_kind::mma, 16, 8, 32, "mxf8f6f4", "e4m3", "e2m3", "fp32", "fp32", 32, "ue8m0"},
      {"mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
       instr_kind::mma, 16, 8, 64, "mxf4nvf4", "e2m1", "e2m1", "fp32", "fp32", 16, "ue4m3"},
      {"mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0", instr_kind::mma,
       16, 8, 64, "mxf4", "e2m1", "e2m1", "fp32", "fp32", 0, "ue8m0"},
      {"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", instr_kind::wgmma, 64, 128, 16, "", "bf16",
       "bf16", "fp32", "fp32", 0, ""},
      {"wgmma.mma_async.sync.aligned.m64n256k32.f16.e4m3.e5m2", instr_kind::wgmma, 64, 256, 32, "", "e4m3",
       "e5m2", "fp16", "fp16", 0, ""},
      {"wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32", instr_kind::wgmma, 64, 64, 8, "", "tf32",
       "tf32", "fp32", "fp32", 0, ""},
      {"tcgen05.mma.cta_group::1.kind::f16", instr_kind::tcgen05, 0, 0, 16, "f16", "", "", "", "", 0, ""},
      {"tcgen05.mma.cta_group::1.kind::tf32", instr_kind::tcgen05, 0, 0, 8, "tf32", "tf32", "tf32", "fp32",
       "fp32", 0, ""},
      {"tcgen05.mma.cta_group::1.kind::f8f6f4.collector::a::fill", instr_kind::tcgen05, 0, 0, 32, "f8f6f4",
       "", "", "", "", 0, ""},
      {"tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale", instr_kind::tcgen05, 0, 0, 32, "mxf8f6f4", "",
       "", "fp32", "fp32", 0, ""},
      {"tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X", instr_kind::tcgen05, 0, 0, 64, "mxf4",
       "e2m1", "e2m1", "fp32", "fp32", 32, ""},
      {"tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16", instr_kind::tcgen05, 0, 0, 64,
       "mxf4nvf4", "e2m1", "e2m1", "fp32", "fp32", 16, ""},
  };
  auto same = [](const std::optional<format_id> &got, const char *want) {
    return *want == '\0' ? !got.has_value() : got.has_value() && *got == fmt(want);
  };
  for (const hand_case &h : cases) {
    SCOPED_TRACE(h.text);
    const io::ptx_mma p = io::parse_ptx(h.text);
    EXPECT_EQ(p.instr, h.instr);
    EXPECT_EQ(p.m, h.m);
    EXPECT_EQ(p.n, h.n);
    EXPECT_EQ(p.k, h.k);
    EXPECT_EQ(p.kind, h.kind);
    EXPECT_TRUE(same(p.a, h.a));
    EXPECT_TRUE(same(p.b, h.b));
    EXPECT_TRUE(same(p.c, h.c));
    EXPECT_TRUE(same(p.d, h.d));
    EXPECT_EQ(p.scale_vec, h.scale_vec);
    EXPECT_EQ(p.scale_format, h.scale_format);
  }
}

// Refusals name the token that does not fit.
TEST(Ptx, Rejections) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "empty PTX string"},
      {"hmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "'hmma' is not a tensor-core instruction"},
      {"mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32", "'m16n8k16' after 'mma.sync': PTX requires .aligned"},
      {"mma.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "'aligned' after 'mma'"},
      {"mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32", "'s32' is not a type the presets cover for D"},
      {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16", "ends after 'bf16'; expected the type of C"},
      {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.f32", "'f32' follows a complete instruction"},
      {"mma.sync.aligned.m16n8k16.col.row.f32.bf16.bf16.f32", "'col.row' is not a layout of this shape"},
      {"mma.sync.aligned.m16n8k16.row.diag.f32.bf16.bf16.f32", "'diag' is not a layout of B (row, col)"},
      {"mma.sync.aligned.m16n16k16.row.col.f32.bf16.bf16.f32", "'m16n16k16' is not an mma.sync shape"},
      {"mma.sync.aligned.m16n8k32.row.col.kind::i8f6.f32.e4m3.e4m3.f32",
       "'kind::i8f6' is not an mma.sync kind"},
      {"mma.sync.aligned.m16n8k64.row.col.kind::mxf4.f32.e2m1.e2m1.f32.ue8m0",
       "'f32' kind::mxf4 needs .block_scale"},
      {"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32",
       "ends after 'f32'; expected the scale type"},
      {"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.e8m0",
       "'e8m0' is not a scale type"},
      {"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::8X.f32.e4m3.e4m3.f32.ue8m0",
       "'scale_vec::8X' is not a scale vector size"},
      {"mma.sync.aligned.m16n8k16.row.col.block_scale.f32.bf16.bf16.f32",
       "'block_scale' is not a type the presets cover for D"},
      {"mma.sync.aligned..m16n8k16.row.col.f32.bf16.bf16.f32", "has an empty qualifier"},
      {"mma.sync.aligned.m16n8k16.row.col.f32.half.half.f32", "'half' is not a type the presets cover for A"},
      {"wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16", "'sp' (sparse wgmma) is not modelled"},
      {"wgmma.mma_async.sync.aligned.m64n12k16.f32.bf16.bf16", "'m64n12k16' is not a wgmma shape"},
      {"wgmma.mma_async.sync.aligned.m64n264k16.f32.bf16.bf16", "'m64n264k16' is not a wgmma shape"},
      {"tcgen05.mma.cta_group::2.kind::f16", "'cta_group::2' is not modelled"},
      {"tcgen05.mma.ws.cta_group::1.kind::f16", "'ws' (weight-stationary"},
      {"tcgen05.mma.cta_group::1.kind::i8", "'kind::i8' is not a kind the presets cover"},
      {"tcgen05.mma.cta_group::1", "ends after 'cta_group::1'; expected kind::f16"},
      {"tcgen05.mma.cta_group::1.kind::f16.block_scale", "'block_scale' needs kind::mxf8f6f4"},
      {"tcgen05.mma.cta_group::1.kind::mxf4",
       "ends after 'kind::mxf4'; expected kind::mxf4 needs .block_scale"},
      {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, b, c;",
       "follows the instruction: give it without operands"},
  };
  for (const auto &[text, want] : cases) {
    SCOPED_TRACE(text);
    try {
      io::parse_ptx(text);
      ADD_FAILURE() << "accepted";
    } catch (const io::input_error &e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

// apply_ptx: options the string sets agree with explicit ones (aliases count as the same) or are
// refused naming both; tcgen05 takes its types from the options.
// A selection with one option given ("--a-format", "e5m2").
io::mma_selection given(const std::string &option, const std::string &value) {
  io::mma_selection s;
  if (option == "--instr") s.instr = value;
  if (option == "--a-format") s.a_format = value;
  if (option == "--out") s.out = value;
  if (option == "--kind") s.kind = value;
  if (option == "--scale-format") s.scale_format = value;
  if (option == "--shape-k") s.shape_k = unsigned(std::stoul(value));
  if (option == "--scale-vec") s.scale_vec = unsigned(std::stoul(value));
  return s;
}

TEST(Ptx, ExplicitOptions) {
  const std::string t = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32";
  io::mma_selection s = given("--a-format", "float8_e4m3fn"); // an alias of e4m3: agrees
  s.out = "fp32";
  io::apply_ptx(io::parse_ptx(t), t, s);
  EXPECT_EQ(s.instr, "mma");
  EXPECT_EQ(s.b_format, "e5m2");
  EXPECT_EQ(s.shape_k, 32u);
  auto refused = [](const std::string &text, const io::mma_selection &s, const std::string &want) {
    SCOPED_TRACE(text + " / " + want);
    io::mma_selection copy = s;
    try {
      io::apply_ptx(io::parse_ptx(text), text, copy);
      ADD_FAILURE() << "accepted";
    } catch (const io::input_error &e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  refused(t, given("--a-format", "e5m2"), "means --a-format e4m3, but --a-format e5m2 was given");
  refused(t, given("--instr", "wgmma"), "means --instr mma, but --instr wgmma was given");
  refused(t, given("--out", "fp16"), "means --out fp32, but --out fp16 was given");
  refused(t, given("--shape-k", "16"), "means --shape-k 32, but --shape-k 16 was given");
  refused(t, given("--kind", "f8f6f4"), "is no --kind instruction, but --kind f8f6f4 was given");
  const std::string sc =
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3";
  refused(sc, given("--scale-format", "ue8m0"),
          "means --scale-format ue4m3, but --scale-format ue8m0 was given");
  refused(sc, given("--scale-vec", "32"), "means --scale-vec 16, but --scale-vec 32 was given");
  refused(sc, given("--kind", "mxf4"), "means --kind mxf4nvf4, but --kind mxf4 was given");
  refused("tcgen05.mma.cta_group::1.kind::f16", {}, "carries no operand types");
  refused("tcgen05.mma.cta_group::1.kind::tf32", given("--a-format", "bf16"),
          "means --a-format tf32, but --a-format bf16");
  // tcgen05 with the types as options; kind::f8f6f4 runs through --kind
  io::mma_selection g = given("--a-format", "e4m3");
  g.b_format = "e2m1";
  g.out = "fp16";
  const std::string tg = "tcgen05.mma.cta_group::1.kind::f8f6f4";
  io::apply_ptx(io::parse_ptx(tg), tg, g);
  EXPECT_EQ(g.kind, "f8f6f4");
  EXPECT_EQ(g.instr, "tcgen05");
  EXPECT_EQ(g.out, "fp16");
  EXPECT_EQ(g.b_format, "e2m1");
}

} // namespace
