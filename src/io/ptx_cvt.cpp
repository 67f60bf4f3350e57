// bf16emu io: PTX cvt strings -> form, and the model of one cvt. See ptx_cvt.hpp.
#include "io/ptx_cvt.hpp"

#include <algorithm>
#include <cstddef>

#include <bf16emu/core/cvt_options.hpp>
#include <bf16emu/core/scale.hpp>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/number.hpp"

namespace bf16emu::io {

namespace {

constexpr cvt_type all_types[] = {cvt_type::f32,    cvt_type::f16,    cvt_type::bf16,   cvt_type::tf32,
                                  cvt_type::f16x2,  cvt_type::bf16x2, cvt_type::e4m3x2, cvt_type::e5m2x2,
                                  cvt_type::e2m3x2, cvt_type::e3m2x2, cvt_type::e2m1x2, cvt_type::ue8m0x2,
                                  cvt_type::e4m3x4, cvt_type::e5m2x4, cvt_type::e2m3x4, cvt_type::e3m2x4,
                                  cvt_type::e2m1x4};
constexpr cvt_round all_rounds[] = {cvt_round::rn, cvt_round::rz, cvt_round::rna,
                                    cvt_round::rm, cvt_round::rp, cvt_round::rs};

using R = cvt_round;
using T = cvt_type;

// PTX ISA 9.1, 9.7.9.21 (cvt): the forms with a floating-point destination, with the targets its
// "PTX ISA notes" and "Target ISA notes" give.
std::vector<cvt_form> make_forms() {
  const std::vector<R> rn{R::rn}, rnrz{R::rn, R::rz}, frnd{R::rn, R::rz, R::rm, R::rp}, none{};
  const std::vector<R> x2{R::rn, R::rz, R::rs}, rs{R::rs}, rzrp{R::rz, R::rp}, tf{R::rna, R::rn, R::rz};
  const char *fam = "sm_100a, sm_110a, sm_120a (PTX 8.6); sm_100f/110f/120f families (PTX 8.8)";
  const char *fam91 = "sm_100f/110f/120f families (PTX 9.1)";
  const char *rs_target = "sm_100a, sm_103a (PTX 8.7)";
  const char *f8 = "sm_89 (PTX 8.1), sm_90 (PTX 7.8)";
  std::vector<cvt_form> f;
  auto add = [&f](T d, T a, const std::vector<R> &r, const std::vector<R> &relu, const std::vector<R> &sat,
                  bool sat_required, bool ftz, const char *target, const char *syntax) {
    f.push_back({d, a, r, relu, sat, sat_required, ftz, target, syntax});
  };
  add(T::f16, T::f32, frnd, rnrz, rnrz, false, true, "all targets; .relu sm_80 (PTX 7.0); .satfinite PTX 8.1",
      "cvt.frnd{.ftz}.f16.f32 | cvt.frnd2{.relu}{.satfinite}.f16.f32");
  add(T::bf16, T::f32, frnd, rnrz, rnrz, false, true,
      ".rn/.rz sm_80 (PTX 7.0), .satfinite PTX 8.1; .rm/.rp: no target note (sm_90, PTX 7.8 assumed)",
      "cvt.frnd.bf16.f32 | cvt.frnd2{.relu}{.satfinite}.bf16.f32");
  add(T::f16x2, T::f32, x2, x2, x2, false, false,
      ".rn/.rz sm_80 (PTX 7.0), .satfinite PTX 8.1; .rs sm_100a, sm_103a (PTX 8.7)",
      "cvt.frnd2{.relu}{.satfinite}.f16x2.f32 d, a, b | cvt.rs{.relu}{.satfinite}.f16x2.f32 d, a, b, rbits");
  add(T::bf16x2, T::f32, x2, x2, x2, false, false,
      ".rn/.rz sm_80 (PTX 7.0), .satfinite PTX 8.1; .rs sm_100a, sm_103a (PTX 8.7)",
      "cvt.frnd2{.relu}{.satfinite}.bf16x2.f32 d, a, b | cvt.rs{.relu}{.satfinite}.bf16x2.f32 d, a, b, "
      "rbits");
  add(T::tf32, T::f32, tf, rnrz, tf, false, false,
      ".rna sm_80 (PTX 7.0), .satfinite PTX 8.1; .rn/.rz sm_90 (PTX 7.8); .rn/.rz.satfinite sm_100 (PTX 8.6)",
      "cvt.rna{.satfinite}.tf32.f32 | cvt.frnd2{.satfinite}{.relu}.tf32.f32");
  for (T d : {T::e4m3x2, T::e5m2x2}) {
    add(d, T::f32, rn, rn, rn, true, false, f8, "cvt.rn.satfinite{.relu}.f8x2type.f32 d, a, b");
    add(d, T::f16x2, rn, rn, rn, true, false, f8, "cvt.rn.satfinite{.relu}.f8x2type.f16x2 d, a");
    add(d, T::bf16x2, rn, rn, rn, true, false, fam91, "cvt.rn.satfinite{.relu}.f8x2type.bf16x2 d, a");
    add(T::f16x2, d, rn, rn, none, false, false, f8, "cvt.rn{.relu}.f16x2.f8x2type d, a");
  }
  for (T d : {T::e2m3x2, T::e3m2x2, T::e2m1x2}) {
    const bool f4 = d == T::e2m1x2;
    add(d, T::f32, rn, rn, rn, true, false, fam,
        f4 ? "cvt.rn.satfinite{.relu}.f4x2type.f32 d, a, b" : "cvt.rn.satfinite{.relu}.f6x2type.f32 d, a, b");
    for (T src : {T::f16x2, T::bf16x2})
      add(d, src, rn, rn, rn, true, false, fam91,
          f4 ? "cvt.rn.satfinite{.relu}.f4x2type.fp16x2type d, a"
             : "cvt.rn.satfinite{.relu}.f6x2type.fp16x2type d, a");
    add(T::f16x2, d, rn, rn, none, false, false, fam,
        f4 ? "cvt.rn{.relu}.f16x2.f4x2type d, a" : "cvt.rn{.relu}.f16x2.f6x2type d, a");
  }
  add(T::ue8m0x2, T::f32, rzrp, none, rzrp, false, false, fam, "cvt.frnd3{.satfinite}.ue8m0x2.f32 d, a, b");
  add(T::ue8m0x2, T::bf16x2, rzrp, none, rzrp, false, false, fam,
      "cvt.frnd3{.satfinite}.ue8m0x2.bf16x2 d, a");
  add(T::bf16x2, T::ue8m0x2, rn, none, none, false, false, fam, "cvt.rn.bf16x2.ue8m0x2 d, a");
  for (T d : {T::e4m3x4, T::e5m2x4})
    add(d, T::f32, rs, rs, rs, true, false, rs_target,
        "cvt.rs{.relu}.satfinite.f8x4type.f32 d, {a, b, e, f}, rbits");
  for (T d : {T::e2m3x4, T::e3m2x4})
    add(d, T::f32, rs, rs, rs, true, false, rs_target,
        "cvt.rs{.relu}.satfinite.f6x4type.f32 d, {a, b, e, f}, rbits");
  add(T::e2m1x4, T::f32, rs, rs, rs, true, false, rs_target,
      "cvt.rs{.relu}.satfinite.f4x4type.f32 d, {a, b, e, f}, rbits");
  add(T::f32, T::f16, none, none, none, false, true, "all targets", "cvt{.ftz}.f32.f16");
  add(T::f32, T::bf16, none, none, none, false, true, "sm_80 (PTX 7.1); .ftz sm_90 (PTX 7.8)",
      "cvt{.ftz}.f32.bf16");
  return f;
}

bool has(const std::vector<R> &v, R r) { return std::find(v.begin(), v.end(), r) != v.end(); }

std::string round_list(const std::vector<R> &v) {
  std::string s;
  for (R r : v)
    s += (s.empty() ? "." : ", .") + std::string(name(r));
  return s;
}

std::string type_list() {
  std::string s;
  for (T t : all_types)
    s += (s.empty() ? "" : ", ") + std::string(name(t));
  return s;
}

std::string spelled(const ptx_cvt &p) {
  std::string s = "cvt";
  if (p.round != R::none) s += "." + std::string(name(p.round));
  if (p.relu) s += ".relu";
  if (p.satfinite) s += ".satfinite";
  if (p.ftz) s += ".ftz";
  return s + "." + name(p.d) + "." + name(p.a);
}

[[noreturn]] void fail_at(std::string_view text, std::string_view token, const std::string &why) {
  throw input_error("'" + shorten(std::string(text)) + "': '" + shorten(std::string(token)) + "' " + why);
}

} // namespace

const char *name(cvt_type t) noexcept {
  switch (t) {
  case T::f32: return "f32";
  case T::f16: return "f16";
  case T::bf16: return "bf16";
  case T::tf32: return "tf32";
  case T::f16x2: return "f16x2";
  case T::bf16x2: return "bf16x2";
  case T::e4m3x2: return "e4m3x2";
  case T::e5m2x2: return "e5m2x2";
  case T::e2m3x2: return "e2m3x2";
  case T::e3m2x2: return "e3m2x2";
  case T::e2m1x2: return "e2m1x2";
  case T::ue8m0x2: return "ue8m0x2";
  case T::e4m3x4: return "e4m3x4";
  case T::e5m2x4: return "e5m2x4";
  case T::e2m3x4: return "e2m3x4";
  case T::e3m2x4: return "e3m2x4";
  default: return "e2m1x4";
  }
}

const char *name(cvt_round r) noexcept {
  switch (r) {
  case R::rn: return "rn";
  case R::rz: return "rz";
  case R::rna: return "rna";
  case R::rm: return "rm";
  case R::rp: return "rp";
  case R::rs: return "rs";
  default: return "";
  }
}

int lanes(cvt_type t) noexcept {
  switch (t) {
  case T::f32:
  case T::f16:
  case T::bf16:
  case T::tf32: return 1;
  case T::e4m3x4:
  case T::e5m2x4:
  case T::e2m3x4:
  case T::e3m2x4:
  case T::e2m1x4: return 4;
  default: return 2;
  }
}

// PTX ISA 9.1, cvt: f6 elements sit in 8-bit containers (upper two bits 0); f4 in 4 bits.
int element_bits(cvt_type t) noexcept {
  switch (t) {
  case T::f32:
  case T::tf32: return 32;
  case T::f16:
  case T::bf16:
  case T::f16x2:
  case T::bf16x2: return 16;
  case T::e2m1x2:
  case T::e2m1x4: return 4;
  default: return 8;
  }
}

int register_bits(cvt_type t) noexcept { return lanes(t) * element_bits(t); }

const std::vector<cvt_form> &cvt_forms() {
  static const std::vector<cvt_form> forms = make_forms();
  return forms;
}

const cvt_form *form_of(const ptx_cvt &p) noexcept {
  for (const cvt_form &f : cvt_forms())
    if (f.d == p.d && f.a == p.a) return &f;
  return nullptr;
}

ptx_cvt parse_ptx_cvt(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ';'))
    s.remove_suffix(1);
  std::vector<std::string_view> tok;
  for (std::size_t start = 0;;) {
    const std::size_t dot = s.find('.', start);
    tok.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (tok[0] != "cvt")
    fail_at(text, tok[0], "is not cvt (expected cvt.[ROUND.][relu.][satfinite.]DTYPE.ATYPE)");
  ptx_cvt p;
  std::size_t i = 1;
  std::string_view round_tok, relu_tok, sat_tok, ftz_tok;
  const std::string qualifiers = "a rounding (.rn, .rz, .rna, .rm, .rp, .rs), .relu, .satfinite, .ftz";
  for (; i < tok.size(); ++i) {
    const std::string_view t = tok[i];
    bool is_round = false;
    for (R r : all_rounds)
      if (t == name(r)) {
        if (p.round != R::none)
          fail_at(text, t, "is a second rounding (one of .rn, .rz, .rna, .rm, .rp, .rs)");
        p.round = r, round_tok = t, is_round = true;
      }
    if (is_round) continue;
    auto flag = [&](const char *word, bool &field, std::string_view &at) {
      if (t != word) return false;
      if (field) fail_at(text, t, "is given twice");
      field = true, at = t;
      return true;
    };
    if (flag("relu", p.relu, relu_tok) || flag("satfinite", p.satfinite, sat_tok) ||
        flag("ftz", p.ftz, ftz_tok))
      continue;
    break;
  }
  auto type_at = [&](const char *who) {
    if (i >= tok.size())
      throw input_error("'" + shorten(std::string(text)) + "': ends after '" +
                        shorten(std::string(tok.back())) + "'; expected the " + who + " type (" +
                        type_list() + ")");
    const std::string_view t = tok[i];
    if (t.empty()) fail_at(text, t, std::string("is empty; expected the ") + who + " type");
    for (T x : all_types)
      if (t == name(x)) return ++i, x;
    if (t == "sat")
      fail_at(text, t, "(clamp to [0, 1]) is not modelled; expected " + qualifiers + " or a type");
    fail_at(text, t,
            std::string("is not ") + (std::string(who) == "destination" ? qualifiers + ", or " : "") +
                "a floating-point " + who + " type cvt takes (" + type_list() + ")");
  };
  const std::size_t d_at = i;
  p.d = type_at("destination");
  const std::size_t a_at = i;
  p.a = type_at("source");
  if (i < tok.size()) fail_at(text, tok[i], "follows a complete instruction (cvt...DTYPE.ATYPE)");
  const cvt_form *f = form_of(p);
  if (f == nullptr) {
    std::string srcs;
    for (const cvt_form &g : cvt_forms())
      if (g.d == p.d) srcs += (srcs.empty() ? "" : ", ") + std::string(name(g.a));
    fail_at(text, tok[a_at], "is not a source type cvt." + std::string(name(p.d)) + " takes (" + srcs + ")");
  }
  if (p.round == R::none && !f->rounds.empty())
    fail_at(text, tok[d_at], "needs a rounding before it: " + round_list(f->rounds) + " (" + f->syntax + ")");
  if (p.round != R::none && f->rounds.empty())
    fail_at(text, round_tok,
            std::string("is not taken: cvt.") + name(p.d) + "." + name(p.a) +
                " is exact and takes no rounding (" + f->syntax + ")");
  if (p.round != R::none && !has(f->rounds, p.round))
    fail_at(text, round_tok,
            std::string("is not a rounding cvt.") + name(p.d) + "." + name(p.a) + " takes (expected " +
                round_list(f->rounds) + ")");
  if (p.relu && !has(f->relu_rounds, p.round))
    fail_at(text, relu_tok,
            f->relu_rounds.empty()
                ? std::string("is not taken by cvt.") + name(p.d) + "." + name(p.a) + " (" + f->syntax + ")"
                : "is taken only with " + round_list(f->relu_rounds) + " (" + f->syntax + ")");
  if (p.satfinite && !has(f->sat_rounds, p.round))
    fail_at(text, sat_tok,
            f->sat_rounds.empty()
                ? std::string("is not taken by cvt.") + name(p.d) + "." + name(p.a) + " (" + f->syntax + ")"
                : "is taken only with " + round_list(f->sat_rounds) + " (" + f->syntax + ")");
  if (f->sat_required && !p.satfinite)
    fail_at(text, tok[d_at], "needs .satfinite before it (" + std::string(f->syntax) + ")");
  if (p.ftz && !f->ftz)
    fail_at(text, ftz_tok,
            std::string("is not taken by cvt.") + name(p.d) + "." + name(p.a) +
                " (.ftz applies to the f32 forms cvt.frnd.f16.f32, cvt.frnd.bf16.f32, "
                "cvt.f32.f16, cvt.f32.bf16)");
  if (p.ftz && (p.relu || p.satfinite))
    fail_at(text, ftz_tok, "is not taken together with .relu or .satfinite (" + std::string(f->syntax) + ")");
  return p;
}

std::string not_modelled(const ptx_cvt &p) {
  if (lanes(p.d) == 4)
    return std::string("cvt.rs ... .") + name(p.d) + "." + name(p.a) +
           " is not modelled yet: the lane order of rbits in the x4 forms is given only as a figure "
           "(docs/formats.md)";
  return "";
}

namespace {

bool is_ue8m0(T t) { return t == T::ue8m0x2; }

format_id element_format(T t) {
  switch (t) {
  case T::f32: return format_id::fp32;
  case T::f16:
  case T::f16x2: return format_id::fp16;
  case T::bf16:
  case T::bf16x2: return format_id::bf16;
  case T::tf32: return format_id::tf32;
  case T::e4m3x2: return format_id::e4m3;
  case T::e5m2x2: return format_id::e5m2;
  case T::e2m3x2: return format_id::e2m3;
  case T::e3m2x2: return format_id::e3m2;
  default: return format_id::e2m1;
  }
}

template <class F> fp<F> as(std::uint64_t bits) { return fp<F>::from_bits(typename F::storage(bits)); }

// One element: in bits of format `in` (or a ue8m0 byte) -> out bits, flags.
void convert_lane(cvt_lane &l, const ptx_cvt &p, const env &e) {
  if (l.ue8m0_in) { // cvt.rn.bf16x2.ue8m0x2: 2^(bits - 127) or NaN, exact in bf16
    const f32 v = to_binary32(ue8m0::from_bits(l.in_bits));
    const result<bfloat16> r = convert<bfloat16>(v, e);
    l.out_bits = r.bits(), l.flags = r.flags;
    return;
  }
  visit_format(l.in_format, [&](auto in_tag) {
    using In = decltype(in_tag);
    const fp<In> x = as<In>(l.in_bits);
    if (l.ue8m0_out) {
      env ee = e;
      ee.saturate = p.satfinite;
      // PTX ISA cvt, .satfinite: |x| above MAX_NORM gives a positive MAX_NORM in ue8m0x2 (no
      // sign); an infinite input of either sign is above it.
      const ue8m0_result r = p.satfinite && x.is_inf() ? ue8m0_result{ue8m0{0xFE}, 0} : to_ue8m0(x, ee);
      l.out_bits = r.value.bits, l.flags = r.flags;
      return;
    }
    visit_format(l.out_format, [&](auto out_tag) {
      using Out = decltype(out_tag);
      if constexpr (In::precision <= 24 && Out::precision <= 24) {
        result<Out> r = convert_satfinite<Out>(x, e, p.satfinite);
        if (p.relu) r.value = relu(r.value);
        l.out_bits = r.bits(), l.flags = r.flags;
      }
    });
  });
}

} // namespace

cvt_run run_ptx_cvt(std::string_view text, const std::vector<std::string> &operands) {
  cvt_run run;
  run.p = parse_ptx_cvt(text);
  const ptx_cvt &p = run.p;
  if (std::string why = not_modelled(p); !why.empty()) throw input_error(why);
  env &e = run.e;
  switch (p.round) {
  case R::rz: e.mode = round_mode::toward_zero; break;
  case R::rna: e.mode = round_mode::nearest_away; break;
  case R::rm: e.mode = round_mode::downward; break;
  case R::rp: e.mode = round_mode::upward; break;
  case R::rs: e.mode = round_mode::stochastic_k, e.sr_bits = p.d == T::bf16x2 ? 16 : 13; break;
  default: e.mode = round_mode::nearest_even; break;
  }
  e.nan = nan_policy::cuda;
  e.saturate = p.satfinite;
  if (p.ftz) e.subnormal = p.a == T::f32 ? subnormals::inputs_as_zero : subnormals::flush_outputs;

  const int n = lanes(p.d) > lanes(p.a) ? lanes(p.d) : lanes(p.a);
  const bool packed_in = lanes(p.a) > 1;
  // .rs (f32 -> bf16x2 / f16x2): k-bit stochastic rounding with the last operand, rbits. PTX ISA
  // 9.1 cvt: rbits[31:16] serve a (the upper half), rbits[15:0] b; f16x2 uses the low 13 bits of
  // each half. K = the bits f32 drops into the format (16 for bf16, 13 for f16): the random bits
  // are added to the discarded bits and the sum truncated (round_mode::stochastic_k).
  const bool rs = p.round == R::rs;
  std::uint32_t rbits = 0;
  std::vector<std::string> ops = operands;
  if (rs) {
    if (operands.empty() || operands.back().substr(0, 2) != "0x")
      throw input_error(spelled(p) + " takes rbits, a 0x 32-bit pattern, after its operands");
    rbits = std::uint32_t(parse_uint(operands.back(), 0xFFFFFFFFu, "rbits"));
    ops.pop_back();
  }
  const int sr_k = e.sr_bits;
  const std::size_t want = packed_in ? 1 : std::size_t(n);
  const std::string spell = spelled(p);
  if (ops.size() != want)
    throw input_error(spell + " takes " + std::to_string(want) +
                      (want == 1 ? " operand (a)" : " operands (a, b)") + ", not " +
                      std::to_string(ops.size()) +
                      (packed_in ? std::string("; a is one ") + std::to_string(register_bits(p.a)) + "-bit " +
                                       name(p.a) + " register as a 0x bit pattern"
                                 : std::string()));
  std::vector<std::uint64_t> in(std::size_t(n), 0);
  std::vector<std::string> who(static_cast<std::size_t>(n));
  const int ebits_in = element_bits(p.a), ebits_out = element_bits(p.d);
  if (packed_in) {
    const int rb = register_bits(p.a);
    const std::string_view t = operands[0];
    if (t.substr(0, 2) != "0x" && t.substr(0, 2) != "0X")
      throw input_error("'" + shorten(operands[0]) + "': a packed " + std::string(name(p.a)) +
                        " operand is a 0x bit pattern of " + std::to_string(rb) + " bits");
    const std::string what = std::string("a (a ") + std::to_string(rb) + "-bit " + name(p.a) + " register)";
    const std::uint64_t reg = parse_uint(operands[0], (std::uint64_t{1} << rb) - 1, what.c_str());
    for (int i = 0; i < n; ++i) {
      const int lo = (n - 1 - i) * ebits_in;
      in[std::size_t(i)] = (reg >> lo) & ((std::uint64_t{1} << ebits_in) - 1);
      who[std::size_t(i)] = "a[" + std::to_string(lo + ebits_in - 1) + ":" + std::to_string(lo) + "]";
      const int width =
          is_ue8m0(p.a) ? 8 : visit_format(element_format(p.a), [](auto f) { return decltype(f)::width; });
      if (width < ebits_in && (in[std::size_t(i)] >> width) != 0)
        throw input_error("'" + shorten(operands[0]) + "': " + who[std::size_t(i)] + " holds an " +
                          std::string(name(p.a)) + " element in its low " + std::to_string(width) +
                          " bits; the upper " + std::to_string(ebits_in - width) + " must be 0");
    }
  } else {
    for (int i = 0; i < n; ++i) {
      const operand o = parse_operand(ops[std::size_t(i)], element_format(p.a));
      in[std::size_t(i)] = o.bits;
      who[std::size_t(i)] = i == 0 ? "a" : "b";
    }
  }
  run.d_bits = register_bits(p.d);
  for (int i = 0; i < n; ++i) {
    cvt_lane l;
    l.input = who[std::size_t(i)];
    l.in_bits = in[std::size_t(i)];
    l.ue8m0_in = is_ue8m0(p.a);
    if (!l.ue8m0_in) l.in_format = element_format(p.a);
    l.ue8m0_out = is_ue8m0(p.d);
    if (!l.ue8m0_out) l.out_format = element_format(p.d);
    if (p.d == T::bf16x2 && l.ue8m0_in) l.out_format = format_id::bf16;
    env le = e;
    if (rs) {
      le.mode = round_mode::stochastic_k, le.sr_bits = sr_k;
      le.random = (i == 0 ? rbits >> 16 : rbits) & ((1u << sr_k) - 1);
    }
    convert_lane(l, p, le);
    std::uint64_t reg_bits = l.out_bits;
    if (p.d == T::tf32) reg_bits <<= 13; // TF32 in a .b32: the f32 layout, low 13 bits zero
    l.out_bits = reg_bits;
    const int lo = (n - 1 - i) * ebits_out;
    l.d_lo = lo, l.d_hi = lo + ebits_out - 1;
    run.d |= reg_bits << lo;
    run.lanes.push_back(l);
  }
  return run;
}

} // namespace bf16emu::io
