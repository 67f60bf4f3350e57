// bf16emu io: names and their parsers. See names.hpp.
#include "io/names.hpp"

#include <algorithm>
#include <cctype>

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
