// bf16emu io: names and their parsers. See names.hpp.
#include "io/names.hpp"

#include <bf16emu/core/spec.hpp>

#include <algorithm>
#include <cctype>
#include <vector>

#include "io/error.hpp"
#include "io/files.hpp"

namespace bf16emu::io {

namespace {

template <class T> struct alias {
  const char *name;
  T value;
};

const alias<format_id> format_aliases[] = {
    {"fp64", format_id::fp64},          {"binary64", format_id::fp64},
    {"f64", format_id::fp64},           {"float64", format_id::fp64},
    {"double", format_id::fp64},        {"fp32", format_id::fp32},
    {"binary32", format_id::fp32},      {"f32", format_id::fp32},
    {"float32", format_id::fp32},       {"float", format_id::fp32},
    {"single", format_id::fp32},        {"bf16", format_id::bf16},
    {"bfloat16", format_id::bf16},      {"fp16", format_id::fp16},
    {"binary16", format_id::fp16},      {"f16", format_id::fp16},
    {"float16", format_id::fp16},       {"half", format_id::fp16},
    {"tf32", format_id::tf32},          {"tensorfloat32", format_id::tf32},
    {"e4m3", format_id::e4m3},          {"e4m3fn", format_id::e4m3},
    {"fp8_e4m3", format_id::e4m3},      {"float8_e4m3", format_id::e4m3},
    {"float8_e4m3fn", format_id::e4m3}, {"e5m2", format_id::e5m2},
    {"fp8_e5m2", format_id::e5m2},      {"float8_e5m2", format_id::e5m2},
    {"e2m3", format_id::e2m3},          {"fp6_e2m3", format_id::e2m3},
    {"float6_e2m3", format_id::e2m3},   {"float6_e2m3fn", format_id::e2m3},
    {"e3m2", format_id::e3m2},          {"fp6_e3m2", format_id::e3m2},
    {"float6_e3m2", format_id::e3m2},   {"float6_e3m2fn", format_id::e3m2},
    {"e2m1", format_id::e2m1},          {"fp4", format_id::e2m1},
    {"fp4_e2m1", format_id::e2m1},      {"float4_e2m1", format_id::e2m1},
    {"float4_e2m1fn", format_id::e2m1},
};

const alias<round_mode> mode_aliases[] = {
    {"nearest_even", round_mode::nearest_even},
    {"rne", round_mode::nearest_even},
    {"near_even", round_mode::nearest_even},
    {"nearest_away", round_mode::nearest_away},
    {"rna", round_mode::nearest_away},
    {"near_maxmag", round_mode::nearest_away},
    {"toward_zero", round_mode::toward_zero},
    {"rz", round_mode::toward_zero},
    {"minmag", round_mode::toward_zero},
    {"upward", round_mode::upward},
    {"ru", round_mode::upward},
    {"max", round_mode::upward},
    {"downward", round_mode::downward},
    {"rd", round_mode::downward},
    {"min", round_mode::downward},
    {"to_odd", round_mode::to_odd},
    {"ro", round_mode::to_odd},
    {"odd", round_mode::to_odd},
    {"stochastic", round_mode::stochastic},
    {"sr", round_mode::stochastic},
    {"nearest_zero", round_mode::nearest_zero},
    {"rnz", round_mode::nearest_zero},
    {"stochastic_equal", round_mode::stochastic_equal},
    {"sr_eq", round_mode::stochastic_equal},
    {"stochastic_k", round_mode::stochastic_k},
    {"sr_k", round_mode::stochastic_k},
};

template <class T, std::size_t N>
T lookup(const alias<T> (&table)[N], std::string_view token, const char *what, const std::string &known) {
  const std::string key = normalize_name(token);
  for (const auto &a : table)
    if (key == a.name) return a.value;
  throw input_error(std::string("unknown ") + what + " '" + shorten(std::string(token)) +
                    "' (known: " + known + ")");
}

} // namespace

std::string normalize_name(std::string_view s) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && space(s.back()))
    s.remove_suffix(1);
  std::string r(s);
  for (auto &c : r)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return r;
}

format_desc describe(format_id id) noexcept {
  return visit_format(id, [id](auto f) {
    using F = decltype(f);
    return format_desc{id,
                       format_name<F>(),
                       F::exp_bits,
                       F::frac_bits,
                       F::width,
                       F::precision,
                       F::bias,
                       F::emin,
                       F::emax,
                       F::has_inf,
                       F::width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << F::width) - 1};
  });
}

const char *name(format_id id) noexcept { return describe(id).name; }

const char *name(tininess t) noexcept { return t == tininess::before_rounding ? "before" : "after"; }

const char *name(nan_policy p) noexcept {
  switch (p) {
  case nan_policy::ieee: return "ieee";
  case nan_policy::cuda: return "cuda";
  default: return "pytorch";
  }
}

std::string format_names() {
  return "fp64, fp32, bf16, fp16, tf32, e4m3, e5m2, e2m3 (fp6_e2m3), e3m2 (fp6_e3m2), e2m1 (fp4)";
}

std::string mode_names() {
  return "nearest_even (rne), nearest_away (rna), toward_zero (rz), upward (ru), downward (rd), "
         "to_odd (ro), stochastic (sr), nearest_zero (rnz), stochastic_equal (sr_eq), stochastic_k (sr_k, "
         "sr_k:K with K random bits, 1..32)";
}

format_id parse_format(std::string_view token) {
  return lookup(format_aliases, token, "format", format_names());
}

const char *encoding_name(special_encoding e) {
  switch (e) {
  case special_encoding::ieee: return "ieee";
  case special_encoding::fn: return "fn";
  case special_encoding::finite: return "finite";
  case special_encoding::fnuz: return "fnuz";
  case special_encoding::p3109: return "p3109";
  default: return "e8m0";
  }
}

namespace {

format_spec preset(int e, int m, int bias, special_encoding enc) {
  format_spec s;
  s.exp_bits = e;
  s.frac_bits = m;
  s.bias = bias;
  s.encoding = enc;
  return s.finish();
}

struct runtime_preset {
  const char *name;
  format_spec spec;
};

// The run-time presets and their aliases (first of each spec: the canonical name). Sources in
// docs/formats.md (ml_dtypes, OCP MX v1.0, IEEE P3109 interim report).
const std::vector<runtime_preset> &runtime_presets() {
  using E = special_encoding;
  static const std::vector<runtime_preset> v = [] {
    std::vector<runtime_preset> r = {
        {"e4m3fnuz", preset(4, 3, 8, E::fnuz)},
        {"float8_e4m3fnuz", preset(4, 3, 8, E::fnuz)},
        {"fp8_e4m3fnuz", preset(4, 3, 8, E::fnuz)},
        {"e5m2fnuz", preset(5, 2, 16, E::fnuz)},
        {"float8_e5m2fnuz", preset(5, 2, 16, E::fnuz)},
        {"fp8_e5m2fnuz", preset(5, 2, 16, E::fnuz)},
        {"e4m3b11fnuz", preset(4, 3, 11, E::fnuz)},
        {"float8_e4m3b11fnuz", preset(4, 3, 11, E::fnuz)},
        {"e3m4", preset(3, 4, 3, E::ieee)},
        {"float8_e3m4", preset(3, 4, 3, E::ieee)},
        {"e4m3ieee", preset(4, 3, 7, E::ieee)},
        {"e8m0", preset(8, 0, 127, E::e8m0)},
        {"e8m0fnu", preset(8, 0, 127, E::e8m0)},
        {"float8_e8m0fnu", preset(8, 0, 127, E::e8m0)},
        {"ue8m0", preset(8, 0, 127, E::e8m0)},
    };
    for (int p = 1; p <= 7; ++p) {
      const format_spec s = preset(8 - p, p - 1, 1 << (7 - p), E::p3109);
      static std::string names[8][3];
      names[p][0] = "p3109:p" + std::to_string(p);
      names[p][1] = "binary8p" + std::to_string(p);
      names[p][2] = "p3109_p" + std::to_string(p);
      for (const auto &n : names[p])
        r.push_back({n.c_str(), s});
    }
    return r;
  }();
  return v;
}

bool same_spec(const format_spec &a, const format_spec &b) {
  return a.exp_bits == b.exp_bits && a.frac_bits == b.frac_bits && a.bias == b.bias &&
         a.encoding == b.encoding && a.has_subnormals == b.has_subnormals && a.saturates == b.saturates;
}

[[noreturn]] void bad_fields(std::string_view token, const std::string &why) {
  throw input_error(
      "format '" + shorten(std::string(token)) + "': " + why +
      " (fields: fp:e=E,m=M[,bias=B][,enc=ieee|fn|fnuz|finite|p3109|e8m0][,sub=0|1][,sat=0|1])");
}

int field_int(std::string_view token, const std::string &key, const std::string &v) {
  std::size_t i = 0;
  const bool neg = !v.empty() && v[0] == '-';
  if (neg) i = 1;
  if (i >= v.size() || v.size() - i > 6)
    bad_fields(token, key + "='" + shorten(v) + "' is not an integer of at most 6 digits");
  int x = 0;
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') bad_fields(token, key + "='" + shorten(v) + "' is not an integer");
    x = x * 10 + (v[i] - '0');
  }
  return neg ? -x : x;
}

format_spec parse_fields(std::string_view token, const std::string &fields) {
  format_spec s;
  bool have_e = false, have_m = false, have_bias = false;
  std::size_t pos = 0;
  std::vector<std::string> seen;
  while (pos <= fields.size()) {
    const std::size_t comma = std::min(fields.find(',', pos), fields.size());
    const std::string item = fields.substr(pos, comma - pos);
    pos = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) bad_fields(token, "'" + shorten(item) + "' is not key=value");
    const std::string key = item.substr(0, eq), v = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      bad_fields(token, "'" + key + "' given twice");
    seen.push_back(key);
    if (key == "e") {
      s.exp_bits = field_int(token, key, v);
      have_e = true;
    } else if (key == "m") {
      s.frac_bits = field_int(token, key, v);
      have_m = true;
    } else if (key == "bias") {
      s.bias = field_int(token, key, v);
      have_bias = true;
    } else if (key == "enc") {
      static const special_encoding all[] = {special_encoding::ieee,   special_encoding::fn,
                                             special_encoding::finite, special_encoding::fnuz,
                                             special_encoding::p3109,  special_encoding::e8m0};
      bool found = false;
      for (const auto e : all)
        if (v == encoding_name(e)) {
          s.encoding = e;
          found = true;
        }
      if (!found) bad_fields(token, "unknown encoding enc='" + shorten(v) + "'");
    } else if (key == "sub" || key == "sat") {
      if (v != "0" && v != "1") bad_fields(token, key + "='" + shorten(v) + "' must be 0 or 1");
      (key == "sub" ? s.has_subnormals : s.saturates) = v == "1";
    } else {
      bad_fields(token, "unknown field '" + shorten(key) + "'");
    }
  }
  if (!have_e || !have_m) bad_fields(token, "e= and m= are required");
  if (s.exp_bits < 1 || s.exp_bits > 11) bad_fields(token, "e must be 1..11");
  if (!have_bias) {
    const bool shifted = s.encoding == special_encoding::fnuz || s.encoding == special_encoding::p3109;
    s.bias = (1 << (s.exp_bits - 1)) - (shifted ? 0 : 1);
  }
  if (const char *why = make_format_spec(s)) bad_fields(token, why);
  // Every value a binary64 number: the printing and the Python decoding rely on it.
  if (s.precision > 53 || s.emax > 1023 || s.emin - s.frac_bits < -1074)
    bad_fields(token,
               "its numbers are not all binary64 numbers (precision <= 53, exponents within binary64's)");
  return s;
}

} // namespace

std::string spec_fields(const format_spec &s) {
  std::string r = "fp:e=" + std::to_string(s.exp_bits) + ",m=" + std::to_string(s.frac_bits) +
                  ",bias=" + std::to_string(s.bias) + ",enc=" + encoding_name(s.encoding);
  if (!s.has_subnormals) r += ",sub=0";
  if (s.saturates) r += ",sat=1";
  return r;
}

named_format named(format_id id) {
  named_format n;
  n.id = id;
  n.name = name(id);
  n.spec = visit_format(id, [](auto f) { return make_spec<decltype(f)>(); });
  return n;
}

named_format named(const format_spec &spec) {
  for (int i = 0; i < 10; ++i) {
    const named_format n = named(format_id(i));
    if (same_spec(n.spec, spec)) return n;
  }
  for (const auto &p : runtime_presets())
    if (same_spec(p.spec, spec)) return {p.name, spec, std::nullopt};
  return {spec_fields(spec), spec, std::nullopt};
}

std::string runtime_format_names() {
  return "e4m3fnuz, e5m2fnuz, e4m3b11fnuz, e3m4, e4m3ieee, e8m0, p3109:p1 .. p3109:p7, "
         "fp:e=E,m=M[,bias=B][,enc=ieee|fn|fnuz|finite|p3109|e8m0][,sub=0|1][,sat=0|1]";
}

named_format parse_format_spec(std::string_view token) {
  const std::string key = normalize_name(token);
  for (const auto &a : format_aliases)
    if (key == a.name) return named(a.value);
  for (const auto &p : runtime_presets())
    if (key == p.name) return named(p.spec);
  if (key.rfind("fp:", 0) == 0) return named(parse_fields(token, key.substr(3)));
  throw input_error("unknown format '" + shorten(std::string(token)) + "' (known: " + format_names() + ", " +
                    runtime_format_names() + ")");
}

round_mode parse_mode(std::string_view token) {
  return lookup(mode_aliases, token, "rounding mode", mode_names());
}

int parse_sr_bits(std::string_view token) {
  const std::string t = normalize_name(token);
  int k = 0;
  bool ok = !t.empty() && t.size() <= 2;
  for (char c : t) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) k = k * 10 + (c - '0');
  }
  if (!ok || k < 1 || k > max_sr_bits)
    throw input_error("k-bit stochastic rounding: the number of random bits '" + shorten(std::string(token)) +
                      "' is not an integer from 1 to " + std::to_string(max_sr_bits));
  return k;
}

rounding parse_rounding(std::string_view token) {
  const std::string t = normalize_name(token);
  const std::size_t colon = t.find(':');
  rounding r;
  r.mode = parse_mode(std::string_view(t).substr(0, colon));
  if (colon != std::string::npos) {
    if (r.mode != round_mode::stochastic_k)
      throw input_error("rounding mode '" + shorten(std::string(token)) +
                        "': only stochastic_k (sr_k) takes a bit count after ':'");
    r.sr_bits = parse_sr_bits(std::string_view(t).substr(colon + 1));
  }
  return r;
}

tininess parse_tininess(std::string_view token) {
  static const alias<tininess> t[] = {{"before", tininess::before_rounding},
                                      {"before_rounding", tininess::before_rounding},
                                      {"after", tininess::after_rounding},
                                      {"after_rounding", tininess::after_rounding}};
  return lookup(t, token, "tininess", "before, after");
}

nan_policy parse_nan_policy(std::string_view token) {
  static const alias<nan_policy> t[] = {
      {"ieee", nan_policy::ieee}, {"cuda", nan_policy::cuda}, {"pytorch", nan_policy::pytorch}};
  return lookup(t, token, "NaN policy", "ieee, cuda, pytorch");
}

} // namespace bf16emu::io
