// bf16emu io: format facts. See finfo.hpp.
#include "io/finfo.hpp"

#include <bf16emu/core/spec.hpp>

#include <cmath>

#include "io/decimal.hpp"
#include "io/print.hpp"

namespace bf16emu::io {

namespace {

// How many of the 2^width patterns are NaN (from the decoding, every pattern for <= 16 bits).
int count_nans(const named_format &f) {
  const format_spec &s = f.spec;
  if (!s.has_nan) return 0;
  if (s.width <= 16) {
    int n = 0;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << s.width); ++b)
      n += detail::unpack_spec(s, b, env{}).u.k == detail::kind::nan;
    return n;
  }
  // ieee: the all-ones exponent with a nonzero fraction, both signs.
  return int(std::min<std::uint64_t>(2 * s.frac_mask, 0x7FFFFFFF));
}

} // namespace

format_facts facts(const named_format &f) {
  const format_spec &s = f.spec;
  format_facts r;
  r.name = f.name;
  r.fields = spec_fields(s);
  r.encoding = encoding_name(s.encoding);
  r.width = s.width;
  r.storage_bits = s.width <= 8 ? 8 : s.width <= 16 ? 16 : s.width <= 32 ? 32 : 64;
  r.exp_bits = s.exp_bits;
  r.frac_bits = s.frac_bits;
  r.precision = s.precision;
  r.bias = s.bias;
  r.emin = s.emin;
  r.emax = s.emax;
  r.has_inf = s.has_inf;
  r.has_nan = s.has_nan;
  r.has_neg_zero = s.has_neg_zero;
  r.is_signed = s.is_signed;
  r.has_subnormals = s.has_subnormals && s.frac_bits > 0 && s.encoding != special_encoding::e8m0;
  r.saturates = s.saturates;
  r.compile_time = f.id.has_value();
  r.bulk = f.id && (*f.id == format_id::bf16 || *f.id == format_id::tf32 || *f.id == format_id::fp16 ||
                    *f.id == format_id::e4m3 || *f.id == format_id::e5m2 || *f.id == format_id::fp32);
  r.max_bits = s.max_finite_bits;
  r.min_normal_bits = s.encoding == special_encoding::e8m0 ? 0 : s.min_normal_bits;
  r.min_subnormal_bits = r.has_subnormals ? 1 : r.min_normal_bits;
  r.max = value_double(f, r.max_bits);
  r.min_normal = value_double(f, r.min_normal_bits);
  r.min_subnormal = value_double(f, r.min_subnormal_bits);
  r.eps = std::ldexp(1.0, -s.frac_bits);
  if (s.has_inf) r.inf_bits = s.inf_bits;
  if (s.has_nan) r.nan_bits = s.nan_bits;
  r.nan_count = count_nans(f);
  return r;
}

void print_facts(std::ostream &out, const format_facts &f) {
  const auto line = [&](const char *k) -> std::ostream & {
    out << "  " << k;
    for (std::size_t n = std::string(k).size(); n < 16; ++n)
      out << ' ';
    return out;
  };
  named_format nf = parse_format_spec(f.name);
  out << "format " << f.name << " (" << f.fields << ")\n";
  line("bits") << f.width << " (storage " << f.storage_bits << "): " << (f.is_signed ? "sign, " : "no sign, ")
               << f.exp_bits << " exponent, " << f.frac_bits << " fraction\n";
  line("encoding") << f.encoding << (f.compile_time ? " (compile-time format)" : " (run-time format)")
                   << "\n";
  line("precision") << f.precision << " bits, eps " << shortest_decimal(f.eps) << "\n";
  line("bias") << f.bias << ", emin " << f.emin << ", emax " << f.emax << "\n";
  line("max") << describe_value(nf, f.max_bits) << "\n";
  line("min normal") << describe_value(nf, f.min_normal_bits) << "\n";
  line("min subnormal") << (f.has_subnormals ? describe_value(nf, f.min_subnormal_bits) : std::string("none"))
                        << "\n";
  line("infinity") << (f.inf_bits ? hex_bits(nf, *f.inf_bits) + " = inf" : std::string("none")) << "\n";
  line("NaN") << (f.nan_bits ? hex_bits(nf, *f.nan_bits) + " (default), " + std::to_string(f.nan_count) +
                                   " NaN pattern" + (f.nan_count == 1 ? "" : "s")
                             : std::string("none"))
              << "\n";
  line("negative zero") << (f.has_neg_zero ? "yes" : "no") << "\n";
  line("overflow") << (f.saturates ? "saturates to +-max" : "by the rounding mode (Inf/NaN, or +-max)")
                   << "\n";
  line("bulk kernel") << (f.bulk ? "yes (src/bulk, fp32 <-> this format)"
                                 : "no: one scalar call per element (~10-20 ns)")
                      << "\n";
}

void write_facts_json(json_writer &w, const format_facts &f) {
  named_format nf = parse_format_spec(f.name);
  w.begin_object();
  w.kv("name", f.name).kv("fields", f.fields).kv("encoding", f.encoding);
  w.kv("bits", f.width).kv("storage_bits", f.storage_bits).kv("exponent_bits", f.exp_bits);
  w.kv("mantissa_bits", f.frac_bits).kv("precision", f.precision).kv("bias", f.bias);
  w.kv("emin", f.emin).kv("emax", f.emax);
  w.kv("max", value_exact(nf, f.max_bits)).kv("max_bits", hex_bits(nf, f.max_bits));
  w.kv("min_normal", value_exact(nf, f.min_normal_bits));
  w.kv("min_subnormal", value_exact(nf, f.min_subnormal_bits)).kv("eps", shortest_decimal(f.eps));
  w.kv("has_inf", f.has_inf).kv("has_nan", f.has_nan).kv("has_neg_zero", f.has_neg_zero);
  w.kv("signed", f.is_signed).kv("subnormals", f.has_subnormals).kv("saturates", f.saturates);
  if (f.inf_bits)
    w.kv("inf_bits", hex_bits(nf, *f.inf_bits));
  else
    w.key("inf_bits").null();
  if (f.nan_bits)
    w.kv("nan_bits", hex_bits(nf, *f.nan_bits));
  else
    w.key("nan_bits").null();
  w.kv("nan_count", f.nan_count).kv("compile_time", f.compile_time).kv("bulk_kernel", f.bulk);
  w.end_object();
}

} // namespace bf16emu::io
