// bf16emu io: value printing. See print.hpp.
#include "io/print.hpp"

#include <bf16emu/core.hpp>

#include <cmath>

#include "io/decimal.hpp"
#include "io/names.hpp"

namespace bf16emu::io {

std::string hex_bits(format_id f, std::uint64_t bits) {
  static const char digits[] = "0123456789ABCDEF";
  const int n = (describe(f).width + 3) / 4;
  std::string s = "0x";
  for (int i = n - 1; i >= 0; --i)
    s += digits[bits >> (4 * i) & 15];
  return s;
}

std::string binary_fields(format_id f, std::uint64_t bits) {
  const format_desc d = describe(f);
  std::string s;
  for (int i = d.width - 1; i >= 0; --i) {
    s += char('0' + (bits >> i & 1));
    if (i == d.width - 1 || i == d.frac_bits) s += " | ";
  }
  return s;
}

double value_double(format_id f, std::uint64_t bits) {
  return visit_format(f, [bits](auto fmt) {
    using F = decltype(fmt);
    fp<F> x = fp<F>::from_bits(bits);
    double d = to_double(x);
    return x.is_nan() && x.sign() ? -std::fabs(d) : d;
  });
}

bool is_nan(format_id f, std::uint64_t bits) {
  return visit_format(f, [bits](auto fmt) { return fp<decltype(fmt)>::from_bits(bits).is_nan(); });
}

const char *value_class(format_id f, std::uint64_t bits) {
  return visit_format(f, [bits](auto fmt) {
    auto x = fp<decltype(fmt)>::from_bits(bits);
    return x.is_nan()         ? "nan"
           : x.is_inf()       ? "inf"
           : x.is_zero()      ? "zero"
           : x.is_subnormal() ? "subnormal"
                              : "normal";
  });
}

std::string value_decimal(format_id f, std::uint64_t bits) {
  double d = value_double(f, bits);
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  return shortest_decimal(d);
}

std::string value_exact(format_id f, std::uint64_t bits) {
  double d = value_double(f, bits);
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  return exact_decimal(d);
}

std::string describe_value(format_id f, std::uint64_t bits) {
  std::string s = hex_bits(f, bits) + " = " + value_decimal(f, bits);
  if (is_nan(f, bits)) {
    bool signaling =
        visit_format(f, [bits](auto fmt) { return fp<decltype(fmt)>::from_bits(bits).is_signaling_nan(); });
    return s + (signaling ? " (signaling NaN)" : " (quiet NaN)");
  }
  std::string exact = value_exact(f, bits);
  if (exact != value_decimal(f, bits)) s += " (exactly " + exact + ")";
  return s;
}

std::string hex_bits(const named_format &f, std::uint64_t bits) {
  if (f.id) return hex_bits(*f.id, bits);
  static const char digits[] = "0123456789ABCDEF";
  const int n = (f.spec.width + 3) / 4;
  std::string s = "0x";
  for (int i = n - 1; i >= 0; --i)
    s += digits[bits >> (4 * i) & 15];
  return s;
}

std::string binary_fields(const named_format &f, std::uint64_t bits) {
  if (f.id) return binary_fields(*f.id, bits);
  const format_spec &d = f.spec;
  std::string s;
  for (int i = d.width - 1; i >= 0; --i) {
    s += char('0' + (bits >> i & 1));
    if ((i == d.width - 1 && d.is_signed && i > 0) || (i == d.frac_bits && i > 0)) s += " | ";
  }
  return s;
}

namespace {
// The spec's value as binary64 bits (exact: names.cpp accepts only formats whose numbers are
// binary64 numbers); a NaN keeps its sign bit where the encoding has a signed NaN.
std::uint64_t spec_double_bits(const format_spec &s, std::uint64_t bits) {
  env e;
  e.nan = nan_policy::ieee;
  return detail::convert_spec(make_spec<binary64>(), s, bits, e).bits;
}
} // namespace

double value_double(const named_format &f, std::uint64_t bits) {
  if (f.id) return value_double(*f.id, bits);
  const std::uint64_t b = spec_double_bits(f.spec, bits);
  double d;
  static_assert(sizeof d == sizeof b);
  __builtin_memcpy(&d, &b, sizeof d);
  return d;
}

bool is_nan(const named_format &f, std::uint64_t bits) {
  if (f.id) return is_nan(*f.id, bits);
  return std::isnan(value_double(f, bits));
}

const char *value_class(const named_format &f, std::uint64_t bits) {
  if (f.id) return value_class(*f.id, bits);
  const double d = value_double(f, bits);
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return "inf";
  if (d == 0) return "zero";
  return std::fabs(d) < std::ldexp(1.0, f.spec.emin) ? "subnormal" : "normal";
}

std::string value_decimal(const named_format &f, std::uint64_t bits) {
  if (f.id) return value_decimal(*f.id, bits);
  const double d = value_double(f, bits);
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  return shortest_decimal(d);
}

std::string value_exact(const named_format &f, std::uint64_t bits) {
  if (f.id) return value_exact(*f.id, bits);
  const double d = value_double(f, bits);
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  return exact_decimal(d);
}

std::string describe_value(const named_format &f, std::uint64_t bits) {
  if (f.id) return describe_value(*f.id, bits);
  std::string s = hex_bits(f, bits) + " = " + value_decimal(f, bits);
  if (is_nan(f, bits)) return s + " (NaN)";
  const std::string exact = value_exact(f, bits);
  if (exact != value_decimal(f, bits)) s += " (exactly " + exact + ")";
  return s;
}

std::string significand_binary(std::uint64_t sig, int nbits) {
  std::string s;
  for (int i = nbits - 1; i >= 0; --i) {
    s += char('0' + (sig >> i & 1));
    if (i == nbits - 1 && nbits > 1) s += '.';
  }
  return s;
}

std::vector<std::string> flag_list(std::uint8_t flags) {
  std::vector<std::string> r;
  if (flags & flag::invalid) r.push_back("invalid");
  if (flags & flag::divbyzero) r.push_back("divbyzero");
  if (flags & flag::overflow) r.push_back("overflow");
  if (flags & flag::underflow) r.push_back("underflow");
  if (flags & flag::inexact) r.push_back("inexact");
  return r;
}

std::string flag_names(std::uint8_t flags) {
  std::string s;
  for (const auto &n : flag_list(flags))
    s += (s.empty() ? "" : " ") + n;
  return s.empty() ? "none" : s;
}

} // namespace bf16emu::io
