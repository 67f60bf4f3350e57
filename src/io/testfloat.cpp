// bf16emu io: TestFloat lines. See testfloat.hpp.
#include "io/testfloat.hpp"

#include <bf16emu/core.hpp>

#include <cctype>
#include <vector>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/names.hpp"
#include "io/print.hpp"

namespace bf16emu::testfloat {

namespace {

const function functions[] = {
    {fn_id::f32_add, "f32_add", 2, format_id::fp32, format_id::fp32},
    {fn_id::f32_sub, "f32_sub", 2, format_id::fp32, format_id::fp32},
    {fn_id::f32_mul, "f32_mul", 2, format_id::fp32, format_id::fp32},
    {fn_id::f32_mulAdd, "f32_mulAdd", 3, format_id::fp32, format_id::fp32},
    {fn_id::f32_div, "f32_div", 2, format_id::fp32, format_id::fp32},
    {fn_id::f32_sqrt, "f32_sqrt", 1, format_id::fp32, format_id::fp32},
    {fn_id::f32_to_bf16, "f32_to_bf16", 1, format_id::fp32, format_id::bf16},
    {fn_id::bf16_to_f32, "bf16_to_f32", 1, format_id::bf16, format_id::fp32},
    {fn_id::f32_to_f16, "f32_to_f16", 1, format_id::fp32, format_id::fp16},
    {fn_id::f16_to_f32, "f16_to_f32", 1, format_id::fp16, format_id::fp32},
};

struct flag_pair {
  std::uint8_t ours;
  unsigned theirs;
};
const flag_pair flag_map[] = {{flag::inexact, tf_flag::inexact},
                              {flag::underflow, tf_flag::underflow},
                              {flag::overflow, tf_flag::overflow},
                              {flag::divbyzero, tf_flag::infinite},
                              {flag::invalid, tf_flag::invalid}};

// Reads a hex token of at most max_digits digits whose value is below 2^bits.
bool read_hex(std::string_view tok, int max_digits, int bits, std::uint64_t &v) {
  if (tok.empty() || int(tok.size()) > max_digits) return false;
  v = 0;
  for (char c : tok) {
    int h = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                        : -1;
    if (h < 0) return false;
    v = v << 4 | unsigned(h);
  }
  return bits >= 64 || (v >> bits) == 0;
}

std::string hex_field(format_id f, std::uint64_t bits) { return io::hex_bits(f, bits).substr(2); }

} // namespace

unsigned from_bf16emu_flags(std::uint8_t flags) noexcept {
  unsigned r = 0;
  for (const auto &p : flag_map)
    if (flags & p.ours) r |= p.theirs;
  return r;
}

std::uint8_t to_bf16emu_flags(unsigned tf_flags) noexcept {
  std::uint8_t r = 0;
  for (const auto &p : flag_map)
    if (tf_flags & p.theirs) r |= p.ours;
  return r;
}

const function *find_function(std::string_view name) noexcept {
  for (const auto &f : functions)
    if (name == f.name) return &f;
  return nullptr;
}

std::string function_names() {
  std::string s;
  for (const auto &f : functions)
    s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

const function &parse_function(std::string_view name) {
  if (const function *f = find_function(name)) return *f;
  throw io::input_error("unknown TestFloat function '" + io::shorten(std::string(name)) +
                        "' (known: " + function_names() + ")");
}

bool rounding_option(std::string_view opt, round_mode &mode) noexcept {
  struct {
    const char *name;
    round_mode mode;
  } const table[] = {{"-rnear_even", round_mode::nearest_even},
                     {"-rminMag", round_mode::toward_zero},
                     {"-rmin", round_mode::downward},
                     {"-rmax", round_mode::upward},
                     {"-rnear_maxMag", round_mode::nearest_away},
                     {"-rodd", round_mode::to_odd}};
  for (const auto &t : table)
    if (opt == t.name) {
      mode = t.mode;
      return true;
    }
  return false;
}

line parse_line(std::string_view text, const function &f, std::size_t line_no) {
  std::vector<std::string_view> tok;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    if (i > start) tok.push_back(text.substr(start, i - start));
  }
  const std::string where = "line " + std::to_string(line_no) + ": ";
  const std::size_t want = std::size_t(f.arity) + 2;
  if (tok.size() < want)
    throw io::input_error(where + "expected " + std::to_string(want) + " hex fields for " + f.name +
                          " (operands, result, flags), found " + std::to_string(tok.size()) +
                          (tok.empty() ? "" : " ending at '" + io::shorten(std::string(tok.back())) + "'"));
  if (tok.size() > want)
    throw io::input_error(where + "unexpected extra token '" + io::shorten(std::string(tok[want])) + "' (" +
                          f.name + " lines have " + std::to_string(want) + " fields)");
  line l;
  auto field = [&](std::size_t k, format_id fmt, const std::string &what, std::uint64_t &out) {
    const auto d = io::describe(fmt);
    if (!read_hex(tok[k], (d.width + 3) / 4, d.width, out))
      throw io::input_error(where + "bad token '" + io::shorten(std::string(tok[k])) + "' (" + what + " of " +
                            f.name + ": expected at most " + std::to_string((d.width + 3) / 4) +
                            " hex digits of a " + d.name + ")");
  };
  for (int k = 0; k < f.arity; ++k)
    field(std::size_t(k), f.in, "operand " + std::to_string(k + 1), l.ops[k]);
  field(std::size_t(f.arity), f.out, "result", l.result);
  std::uint64_t fl = 0;
  if (!read_hex(tok[want - 1], 2, 5, fl))
    throw io::input_error(where + "bad token '" + io::shorten(std::string(tok[want - 1])) +
                          "' (flags: expected two hex digits below 20)");
  l.flags = unsigned(fl);
  return l;
}

std::string format_line(const function &f, const line &l) {
  std::string s;
  for (int k = 0; k < f.arity; ++k)
    s += hex_field(f.in, l.ops[k]) + " ";
  s += hex_field(f.out, l.result) + " ";
  static const char digits[] = "0123456789ABCDEF";
  s += digits[l.flags >> 4 & 15];
  s += digits[l.flags & 15];
  return s;
}

outcome evaluate(const function &f, const std::uint64_t *ops, const env &e) {
  auto a32 = [&](int k) { return f32::from_bits(ops[k]); };
  auto pack = [](auto r) { return outcome{std::uint64_t(r.bits()), r.flags}; };
  switch (f.id) {
  case fn_id::f32_add: return pack(add(a32(0), a32(1), e));
  case fn_id::f32_sub: return pack(sub(a32(0), a32(1), e));
  case fn_id::f32_mul: return pack(mul(a32(0), a32(1), e));
  case fn_id::f32_mulAdd: return pack(fma(a32(0), a32(1), a32(2), e));
  case fn_id::f32_div: return pack(div(a32(0), a32(1), e));
  case fn_id::f32_sqrt: return pack(sqrt(a32(0), e));
  case fn_id::f32_to_bf16: return pack(convert<bfloat16>(a32(0), e));
  case fn_id::bf16_to_f32: return pack(convert<binary32>(bf16::from_bits(ops[0]), e));
  case fn_id::f32_to_f16: return pack(convert<binary16>(a32(0), e));
  case fn_id::f16_to_f32: return pack(convert<binary32>(f16::from_bits(ops[0]), e));
  }
  return {0, 0};
}

bool same_result(const function &f, std::uint64_t a, std::uint64_t b) {
  return a == b || (io::is_nan(f.out, a) && io::is_nan(f.out, b));
}

} // namespace bf16emu::testfloat
