// bf16emu io: tracing runner and report for single operations. See arith_report.hpp.
#include "io/arith_report.hpp"

#include <bf16emu/core.hpp>

#include <cmath>
#include <cstring>

#include "io/decimal.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/names.hpp"
#include "io/print.hpp"

namespace bf16emu::io {

namespace {

template <class F> fp<F> as(const operand &o) { return fp<F>::from_bits(o.bits); }

// Steps of the operation proper, in format F.
template <class F> arith_step op_step(const arith_request &rq) {
  arith_step s;
  s.op = rq.op;
  s.from = rq.format;
  s.to = named(rq.format);
  auto tr = make_tracer([&s](const rounding_event &ev) { s.events.push_back(ev); });
  const auto &o = rq.operands;
  result<F> r{};
  switch (rq.op) {
  case op_kind::add: r = add(as<F>(o[0]), as<F>(o[1]), rq.e, tr); break;
  case op_kind::sub: r = sub(as<F>(o[0]), as<F>(o[1]), rq.e, tr); break;
  case op_kind::mul: r = mul(as<F>(o[0]), as<F>(o[1]), rq.e, tr); break;
  case op_kind::fma: r = fma(as<F>(o[0]), as<F>(o[1]), as<F>(o[2]), rq.e, tr); break;
  case op_kind::div: r = div(as<F>(o[0]), as<F>(o[1]), rq.e, tr); break;
  case op_kind::sqrt: r = sqrt(as<F>(o[0]), rq.e, tr); break;
  case op_kind::convert: break;
  }
  s.bits = r.bits();
  s.flags = r.flags;
  return s;
}

// Into a format named at run time: core/spec.hpp's convert (the same round-and-pack).
arith_step convert_step(format_id from, const named_format &to, std::uint64_t bits, const env &e) {
  arith_step s;
  s.op = op_kind::convert;
  s.from = from;
  s.to = to;
  s.input_bits = bits;
  auto tr = make_tracer([&s](const rounding_event &ev) { s.events.push_back(ev); });
  const spec_result r = convert(to.spec, named(from).spec, bits, e, tr);
  s.bits = r.bits;
  s.flags = r.flags;
  return s;
}

arith_step convert_step(format_id from, format_id to, std::uint64_t bits, const env &e) {
  arith_step s;
  s.op = op_kind::convert;
  s.from = from;
  s.to = named(to);
  s.input_bits = bits;
  visit_format(from, [&](auto f) {
    using F = decltype(f);
    visit_format(to, [&](auto g) {
      using G = decltype(g);
      auto tr = make_tracer([&s](const rounding_event &ev) { s.events.push_back(ev); });
      result<G> r = convert<G>(fp<F>::from_bits(bits), e, tr);
      s.bits = r.bits();
      s.flags = r.flags;
    });
  });
  return s;
}

std::string kept_binary(const rounding_event &ev) {
  return significand_binary(ev.kept, int(ev.exponent - ev.lsb_exp + 1));
}

// Exact value before rounding = result - error (when both are known exactly).
std::string exact_input(const rounding_event &ev, const named_format &to) {
  double res = value_double(to, ev.result_bits);
  if (!ev.err_exact || !std::isfinite(res)) return "";
  return exact_decimal_sum({res, -ev.err_hi, -ev.err_lo});
}

std::ostream &row(std::ostream &out, const char *indent, const char *label) {
  out << indent << label;
  for (std::size_t n = std::strlen(label); n < 14; ++n)
    out << ' ';
  return out;
}

std::string step_title(const arith_step &s, std::size_t n) {
  std::string t = "step " + std::to_string(n) + ": ";
  if (s.op == op_kind::convert) return t + "round " + name(s.from) + " -> " + s.to.name;
  return t + to_string(s.op) + " in " + s.to.name;
}

} // namespace

// The error as an exact decimal; "0" for an exact rounding whatever the zero's sign.
std::string exact_error_text(const rounding_event &ev) {
  if (ev.err_hi == 0 && ev.err_lo == 0) return "0";
  return exact_decimal_sum({ev.err_hi, ev.err_lo});
}

int arity(op_kind op) noexcept {
  switch (op) {
  case op_kind::fma: return 3;
  case op_kind::sqrt:
  case op_kind::convert: return 1;
  default: return 2;
  }
}

const char *explain(decision d) noexcept {
  switch (d) {
  case decision::exact: return "nothing discarded, the result is exact";
  case decision::down: return "magnitude truncated (discarded bits dropped)";
  case decision::up: return "magnitude rounded up by one unit in the last place";
  case decision::tie_down: return "exactly halfway; kept the even neighbour below";
  case decision::tie_up: return "exactly halfway; rounded to the neighbour above";
  case decision::overflow_inf: return "beyond the largest finite value: infinity (NaN in e4m3)";
  case decision::overflow_max: return "beyond the largest finite value: saturated to the largest finite";
  default: return "tiny result flushed to zero";
  }
}

arith_report run_arith(const arith_request &rq) {
  const int n = arity(rq.op);
  if (int(rq.operands.size()) != n) {
    std::string got;
    for (std::size_t i = 0; i < rq.operands.size(); ++i)
      got += (i ? " '" : "'") + shorten(rq.operands[i].text) + "'" + (int(i) == n ? " <- extra" : "");
    throw input_error(std::string(to_string(rq.op)) + " takes " + std::to_string(n) + " operand" +
                      (n > 1 ? "s" : "") + ", got " + std::to_string(rq.operands.size()) +
                      (got.empty() ? "" : ": " + got));
  }
  for (const auto &o : rq.operands)
    if (o.format != rq.format)
      throw input_error("operand '" + shorten(o.text) + "' was read in another format");
  arith_report r;
  r.request = rq;
  if (rq.op == op_kind::convert) {
    if (rq.to_runtime)
      r.steps.push_back(convert_step(rq.format, *rq.to_runtime, rq.operands[0].bits, rq.e));
    else
      r.steps.push_back(convert_step(rq.format, rq.to.value_or(rq.format), rq.operands[0].bits, rq.e));
  } else {
    const format_desc d = describe(rq.format);
    if (d.precision > 24)
      throw input_error(std::string("arithmetic in '") + d.name +
                        "' is not supported (up to 24 significant bits: fp32, tf32, bf16, fp16, e4m3, e5m2; "
                        "fp64 is a conversion source only)");
    visit_format(rq.format, [&](auto f) {
      using F = decltype(f);
      if constexpr (F::precision <= 24) r.steps.push_back(op_step<F>(rq));
    });
    if (rq.to_runtime)
      r.steps.push_back(convert_step(rq.format, *rq.to_runtime, r.steps.back().bits, rq.e));
    else if (rq.to)
      r.steps.push_back(convert_step(rq.format, *rq.to, r.steps.back().bits, rq.e));
  }
  r.result_format = r.steps.back().to;
  r.result_bits = r.steps.back().bits;
  for (const auto &s : r.steps)
    r.flags |= s.flags;
  return r;
}

void print_event(std::ostream &out, const rounding_event &ev, const named_format &to, const char *in) {
  std::string exact = exact_input(ev, to);
  if (!exact.empty()) row(out, in, "exact value") << exact << "\n";
  row(out, in, "binade") << "2^" << ev.exponent << ", last kept bit 2^" << ev.lsb_exp
                         << (ev.tiny ? " (tiny)" : "") << "\n";
  row(out, in, "kept") << kept_binary(ev) << "  (" << (ev.sign ? "-" : "+") << "0x" << std::hex
                       << std::uppercase << ev.kept << std::dec << std::nouppercase << " x 2^" << ev.lsb_exp
                       << ")\n";
  row(out, in, "bits") << "guard " << ev.guard << "  round " << ev.round << "  sticky " << ev.sticky << "\n";
  row(out, in, "decision") << to_string(ev.dec) << " (" << to_string(ev.mode) << "): " << explain(ev.dec)
                           << "\n";
  row(out, in, "error") << exact_error_text(ev)
                        << (ev.err_exact ? " (exact; error = result - exact value)"
                                         : " (approximate: the exact error has no finite binary form)")
                        << "\n";
}

void write_event_json(json_writer &w, const rounding_event &ev, const named_format &to) {
  w.begin_object();
  w.kv("op", to_string(ev.op)).kv("mode", to_string(ev.mode)).kv("sign", ev.sign);
  w.kv("exact_value", exact_input(ev, to));
  w.kv("exponent", int(ev.exponent)).kv("lsb_exponent", int(ev.lsb_exp));
  w.kv("kept", hex_bits(format_id::fp64, ev.kept)).kv("kept_binary", kept_binary(ev));
  w.kv("guard", int(ev.guard)).kv("round", int(ev.round)).kv("sticky", int(ev.sticky)).kv("tiny", ev.tiny);
  w.kv("decision", to_string(ev.dec)).kv("result_bits", hex_bits(to, ev.result_bits));
  w.kv("error", exact_error_text(ev)).kv("error_exact", ev.err_exact);
  w.key("flags").begin_array();
  for (const auto &f : flag_list(ev.flags))
    w.value(f);
  w.end_array();
  w.end_object();
}

namespace {

void value_lines(std::ostream &out, format_id f, std::uint64_t bits, const char *label, const char *in,
                 const std::string &note) {
  row(out, in, label) << name(f) << " " << hex_bits(f, bits) << " = " << value_decimal(f, bits) << note
                      << "\n";
  std::string exact = value_exact(f, bits);
  if (!is_nan(f, bits) && exact != value_decimal(f, bits)) row(out, in, "  exactly") << exact << "\n";
  row(out, in, "  fields") << binary_fields(f, bits) << "\n";
}

void value_lines(std::ostream &out, const named_format &f, std::uint64_t bits, const char *label,
                 const char *in, const std::string &note) {
  if (f.id) return value_lines(out, *f.id, bits, label, in, note);
  row(out, in, label) << f.name << " " << hex_bits(f, bits) << " = " << value_decimal(f, bits) << note
                      << "\n";
  const std::string exact = value_exact(f, bits);
  if (!is_nan(f, bits) && exact != value_decimal(f, bits)) row(out, in, "  exactly") << exact << "\n";
  row(out, in, "  fields") << binary_fields(f, bits) << "\n";
}

void value_json(json_writer &w, const named_format &f, std::uint64_t bits) {
  w.kv("format", f.name).kv("bits", hex_bits(f, bits)).kv("value", value_decimal(f, bits));
  w.kv("exact_value", value_exact(f, bits))
      .kv("fields", binary_fields(f, bits))
      .kv("class", value_class(f, bits));
}

void value_json(json_writer &w, format_id f, std::uint64_t bits) {
  w.kv("format", name(f)).kv("bits", hex_bits(f, bits)).kv("value", value_decimal(f, bits));
  w.kv("exact_value", value_exact(f, bits))
      .kv("fields", binary_fields(f, bits))
      .kv("class", value_class(f, bits));
}

const char *syntax_name(operand::syntax s) {
  switch (s) {
  case operand::syntax::bits: return "bits";
  case operand::syntax::decimal: return "decimal";
  case operand::syntax::hexfloat: return "hexfloat";
  default: return "special";
  }
}

} // namespace

void print_text(std::ostream &out, const arith_report &r, bool trace) {
  const auto &rq = r.request;
  out << "bf16emu " << to_string(rq.op) << ": operands in " << name(rq.format);
  if (rq.to_runtime)
    out << ", result rounded into " << rq.to_runtime->name;
  else if (rq.to)
    out << ", result rounded into " << name(*rq.to);
  out << "; " << to_string(rq.e.mode);
  if (rq.e.mode == round_mode::stochastic_k) out << " (k = " << int(rq.e.sr_bits) << " random bits)";
  out << ", tininess " << name(rq.e.tiny) << ", NaN " << name(rq.e.nan);
  if (rq.e.subnormal != subnormals::ieee) {
    unsigned sub = unsigned(rq.e.subnormal);
    out << ((sub & 1) ? ", ftz" : "") << ((sub & 2) ? ", daz" : "");
  }
  if (rq.e.saturate) out << ", saturate";
  if (is_stochastic(rq.e.mode))
    out << ", random 0x" << std::hex << std::uppercase << rq.e.random << std::dec << std::nouppercase;
  out << "\n";
  static const char *labels[] = {"a", "b", "c"};
  for (std::size_t i = 0; i < rq.operands.size(); ++i) {
    const operand &o = rq.operands[i];
    std::string note;
    if (o.how == operand::syntax::decimal || o.how == operand::syntax::hexfloat)
      note = std::string("  (from \"") + o.text + "\": " +
             (o.exact      ? "exact"
              : o.overflow ? "overflow, rounded to nearest even"
                           : "rounded to nearest even") +
             ")";
    value_lines(out, o.format, o.bits, labels[i], "  ", note);
  }
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    const arith_step &s = r.steps[k];
    out << step_title(s, k + 1) << "\n";
    if (s.op == op_kind::convert && !(k == 0 && rq.op == op_kind::convert))
      row(out, "  ", "input") << name(s.from) << " " << describe_value(s.from, s.input_bits) << "\n";
    const bool inexact = (s.flags & flag::inexact) != 0;
    value_lines(out, s.to, s.bits, "result", "  ",
                is_nan(s.to, s.bits) ? ""
                : inexact            ? " (rounded)"
                                     : " (exact)");
    if (trace) {
      if (s.events.empty())
        row(out, "  ", "rounding") << "none (NaN, infinity or exact zero result: no finite rounding)\n";
      for (const auto &ev : s.events)
        print_event(out, ev, s.to, "  ");
    }
    row(out, "  ", "flags") << flag_names(s.flags) << "\n";
  }
  out << "result: " << r.result_format.name << " " << describe_value(r.result_format, r.result_bits)
      << "  flags: " << flag_names(r.flags) << "\n";
}

void print_json(json_writer &w, const arith_report &r, bool trace) {
  const auto &rq = r.request;
  w.begin_object();
  w.kv("command", to_string(rq.op)).kv("format", name(rq.format));
  if (rq.to_runtime)
    w.kv("to", rq.to_runtime->name);
  else if (rq.to)
    w.kv("to", name(*rq.to));
  else
    w.key("to").null();
  w.key("env").begin_object();
  w.kv("mode", to_string(rq.e.mode)).kv("tininess", name(rq.e.tiny)).kv("nan", name(rq.e.nan));
  w.kv("ftz", (unsigned(rq.e.subnormal) & 1) != 0).kv("daz", (unsigned(rq.e.subnormal) & 2) != 0);
  w.kv("saturate", rq.e.saturate).kv("random", std::uint64_t(rq.e.random));
  if (rq.e.mode == round_mode::stochastic_k) w.kv("sr_bits", int(rq.e.sr_bits));
  w.end_object();
  w.key("operands").begin_array();
  for (const auto &o : rq.operands) {
    w.begin_object();
    w.kv("text", o.text).kv("syntax", syntax_name(o.how)).kv("exact", o.exact).kv("overflow", o.overflow);
    value_json(w, o.format, o.bits);
    w.end_object();
  }
  w.end_array();
  w.key("steps").begin_array();
  for (const auto &s : r.steps) {
    w.begin_object();
    w.kv("op", to_string(s.op)).kv("from", name(s.from));
    if (s.op == op_kind::convert) w.kv("input_bits", hex_bits(s.from, s.input_bits));
    w.key("result").begin_object();
    value_json(w, s.to, s.bits);
    w.end_object();
    w.key("flags").begin_array();
    for (const auto &f : flag_list(s.flags))
      w.value(f);
    w.end_array();
    if (trace) {
      w.key("rounding").begin_array();
      for (const auto &ev : s.events)
        write_event_json(w, ev, s.to);
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
  w.key("result").begin_object();
  value_json(w, r.result_format, r.result_bits);
  w.end_object();
  w.key("flags").begin_array();
  for (const auto &f : flag_list(r.flags))
    w.value(f);
  w.end_array();
  w.end_object();
}

} // namespace bf16emu::io
