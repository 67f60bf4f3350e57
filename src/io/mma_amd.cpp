#include "io/mma_amd.hpp"

#include <bit>
#include <cmath>
#include <cstdio>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/names.hpp"
#include "io/number.hpp"

namespace bf16emu::io {

namespace {

using tc::amd_type;

// --a-format names of the AMD operand types.
bool parse_amd_type(const std::string &s, amd_type &t) {
  const struct {
    const char *name;
    amd_type t;
  } names[] = {{"fp64", amd_type::f64},    {"f64", amd_type::f64},      {"fp32", amd_type::f32},
               {"f32", amd_type::f32},     {"xf32", amd_type::xf32},    {"tf32", amd_type::xf32},
               {"fp16", amd_type::f16},    {"f16", amd_type::f16},      {"bf16", amd_type::bf16},
               {"fp8", amd_type::fp8},     {"e4m3fnuz", amd_type::fp8}, {"bf8", amd_type::bf8},
               {"e5m2fnuz", amd_type::bf8}};
  for (const auto &n : names)
    if (s == n.name) return t = n.t, true;
  return false;
}

// The core format a value of type t is parsed in (xf32: its fp32 register).
format_id parse_format_of(amd_type t) {
  switch (t) {
  case amd_type::f64: return format_id::fp64;
  case amd_type::f16: return format_id::fp16;
  case amd_type::bf16: return format_id::bf16;
  default: return format_id::fp32;
  }
}

std::string hex_bits(std::uint64_t bits, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", width / 4, static_cast<unsigned long long>(bits));
  return buf;
}

std::uint64_t parse_amd_value(const std::string &tok, amd_type t, int line, const char *what) {
  const std::string where = "line " + std::to_string(line) + ": " + what + " '" + shorten(tok, 40) + "'";
  if (t == amd_type::fp8 || t == amd_type::bf8) {
    unsigned v = 0;
    int used = 0;
    if (tok.size() >= 3 && tok.size() <= 4 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X') &&
        std::sscanf(tok.c_str() + 2, "%x%n", &v, &used) == 1 && used == int(tok.size()) - 2)
      return v;
    // Else an exact decimal, hex-float or nan: the FNUZ pattern of the same value (zero: 0x00).
    operand op;
    try {
      op = parse_operand(tok, format_id::fp64);
    } catch (const input_error &) {
      throw input_error(where + ": not a number; give an FNUZ " + to_string(t) + " bit pattern 0x00..0xff");
    }
    const double x = std::bit_cast<double>(op.bits);
    if (x != x) return 0x80; // the only NaN
    for (unsigned p = 0; p < 256; ++p) {
      const tc::detail::amd_term v = tc::detail::amd_decode(t, p);
      if (p != 0x80 && (v.neg ? -1.0 : 1.0) * std::ldexp(double(v.sig), v.exp - v.frac) == x &&
          (x != 0 || p == 0))
        return p;
    }
    throw input_error(where + " is not exactly representable in FNUZ " + to_string(t) +
                      "; give its bit pattern");
  }
  operand op;
  try {
    op = parse_operand(tok, parse_format_of(t));
  } catch (const input_error &e) {
    throw input_error("line " + std::to_string(line) + ": " + what + ": " + e.what());
  }
  if (!op.exact)
    throw input_error(where + " is not exactly representable in " + to_string(t) + "; give its bit pattern");
  return op.bits;
}

} // namespace

const tc::amd_preset *resolve_amd(const std::string &arch, const std::string &instr,
                                  const std::string &a_format, const std::string &out) {
  tc::amd_arch a{};
  if (!tc::parse_amd_arch(arch, a)) return nullptr;
  const tc::amd_preset *P = nullptr;
  amd_type t{};
  if (!a_format.empty() && !parse_amd_type(a_format, t))
    throw input_error("unknown --a-format '" + shorten(a_format) + "' for " + tc::to_string(a) +
                      " (fp64 fp32 xf32 fp16 bf16 fp8 bf8)");
  if (!instr.empty()) {
    P = tc::find_amd_preset(a, instr);
    if (!P)
      throw input_error("unknown AMD instruction '" + shorten(instr) + "' for " + tc::to_string(a) +
                        " (--list-arch lists its v_mfma instructions)");
    if (!a_format.empty() && t != P->a)
      throw input_error(std::string(P->name) + " takes A in " + to_string(P->a) + ", not " + a_format);
  } else {
    if (a_format.empty())
      throw input_error(std::string("mma --arch ") + tc::to_string(a) + " needs --a-format or --instr");
    P = tc::find_amd_preset(a, t, t);
    if (!P)
      throw input_error(std::string(tc::to_string(a)) + " has no " + to_string(t) +
                        " MFMA instruction (--list-arch lists them)");
  }
  if (out != "fp32" && out != to_string(P->out))
    throw input_error(std::string(P->name) + " writes C and D in " + to_string(P->out) + ", not --out " +
                      shorten(out));
  return P;
}

std::string amd_line(const tc::amd_preset &P, const std::vector<std::string> &tok, int K, int lineno) {
  std::vector<std::uint64_t> a(static_cast<std::size_t>(K)), b(static_cast<std::size_t>(K));
  for (int i = 0; i < K; ++i) {
    a[std::size_t(i)] = parse_amd_value(tok[std::size_t(i)], P.a, lineno, "A value");
    b[std::size_t(i)] = parse_amd_value(tok[std::size_t(K + i)], P.b, lineno, "B value");
  }
  const std::uint64_t c = parse_amd_value(tok[std::size_t(2 * K)], P.out, lineno, "C value");
  return hex_bits(tc::amd_dot(P, a.data(), b.data(), K, c), tc::amd_width(P.out));
}

void print_amd_presets() {
  std::printf(
      "\nAMD CDNA MFMA instructions (--arch cdna1|cdna2|cdna3, aliases mi100 gfx908, mi200 gfx90a, "
      "mi300 gfx942;\n--instr NAME or --a-format TYPE for the first of its type; docs/tensor-cores.md):\n");
  std::printf("%-6s %-30s %-5s %-5s %-5s %3s %-15s %5s %s\n", "arch", "instruction", "a", "b", "out", "k",
              "operation", "group", "flush");
  for (const tc::amd_preset &p : tc::amd_presets)
    std::printf("%-6s %-30s %-5s %-5s %-5s %3d %-15s %5d %s\n", tc::to_string(p.arch), p.name, to_string(p.a),
                to_string(p.b), to_string(p.out), p.k, to_string(p.op), p.group, p.flush ? "yes" : "no");
  std::printf("Sources: MMA-Sim arXiv 2511.10909 (mmasim/simulator/amd.py, isa/amd.py); AMD CDNA1/2/3 ISA "
              "reference guides.\n");
}

void write_amd_presets(json_writer &w) {
  for (const tc::amd_preset &p : tc::amd_presets)
    w.begin_object()
        .kv("arch", tc::to_string(p.arch))
        .kv("family", "amd")
        .kv("gpu", tc::amd_gpu(p.arch))
        .kv("target", tc::amd_target(p.arch))
        .kv("instr", p.name)
        .kv("a_format", to_string(p.a))
        .kv("b_format", to_string(p.b))
        .kv("out", to_string(p.out))
        .kv("m", p.m)
        .kv("n", p.n)
        .kv("k", p.k)
        .kv("operation", to_string(p.op))
        .kv("group", p.group)
        .kv("flush", p.flush)
        .kv("source", p.source)
        .end_object();
}

} // namespace bf16emu::io
