// bf16emu_io: `bf16emu mma` lines for the mixed-format and block-scaled kinds (tc/scaled.hpp).
#include "io/mma_scaled.hpp"

#include <cstdio>
#include <istream>
#include <ostream>
#include <vector>

#include <bf16emu/tc.hpp>

#include "io/arch_name.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/packed.hpp"
#include "io/ptx.hpp"
#include "io/tc_trace.hpp"
#include "io/tokens.hpp"

namespace bf16emu::io {

namespace {

[[noreturn]] void fail(int line, const std::string &what) {
  throw input_error("line " + std::to_string(line) + ": " + what);
}

std::uint64_t value_of(const std::string &tok, format_id f, int line, const std::string &what) {
  operand op;
  try {
    op = parse_operand(tok, f);
  } catch (const input_error &e) {
    fail(line, what + ": " + e.what());
  }
  if (!op.exact)
    fail(line, what + " '" + shorten(tok) + "' is not exactly representable in " + name(f) +
                   " (nearest: " + mma_hex(f, op.bits) + "); give its bit pattern");
  return op.bits;
}

// A scale factor: a bit pattern 0x00..0xff (ue8m0: 2^(bits-127), 0xff NaN; ue4m3: an e4m3
// byte whose sign bit the hardware ignores).
std::uint8_t scale_of(const std::string &tok, tc::scale_kind s, int line, const std::string &what) {
  std::uint8_t v = 0;
  if (!hex_byte(tok, v))
    fail(line, what + " '" + shorten(tok) + "' is not a " + tc::to_string(s) + " bit pattern (0x00..0xff)");
  return v;
}

bool is_f8f6f4(format_id f) {
  for (const format_id g : tc::f8f6f4_formats)
    if (g == f) return true;
  return false;
}

struct line_data {
  std::vector<std::uint64_t> a, b;
  std::vector<std::uint8_t> sa, sb;
  std::uint64_t c = 0;
};

const char *rounding_name(tc::out_round r) {
  return r == tc::out_round::truncate ? "truncate" : "nearest_even";
}

std::string operands(const tc::scaled_preset &P) { return P.any_f8f6f4 ? "f8f6f4" : "e2m1"; }

} // namespace

std::uint64_t scaled_dot_bits(const tc::scaled_params &p, format_id fa, format_id fb, format_id out,
                              const std::uint64_t *a, const std::uint64_t *b, int K, const std::uint8_t *sa,
                              const std::uint8_t *sb, std::uint64_t c) {
  return tc::visit_f8f6f4(fa, [&](auto ta) {
    return tc::visit_f8f6f4(fb, [&](auto tb) -> std::uint64_t {
      using A = decltype(ta);
      using B = decltype(tb);
      std::vector<fp<A>> va(std::size_t(K > 0 ? K : 0));
      std::vector<fp<B>> vb(va.size());
      for (int i = 0; i < K; ++i)
        va[std::size_t(i)] = fp<A>::from_bits(a[i]), vb[std::size_t(i)] = fp<B>::from_bits(b[i]);
      if (out == format_id::fp16)
        return tc::scaled_dot<A, B, binary16>(p, va.data(), vb.data(), K, sa, sb, f16::from_bits(c)).bits;
      return tc::scaled_dot<A, B, binary32>(p, va.data(), vb.data(), K, sa, sb, f32::from_bits(c)).bits;
    });
  });
}

bool scaled_requested(const scaled_mma_options &o) noexcept {
  return !o.kind.empty() || !o.scale_format.empty() || o.vec != 0;
}

const tc::scaled_preset &resolve_scaled(const scaled_mma_options &o, const mma_common &c, format_id &fa,
                                        format_id &fb, format_id &fo) {
  if (o.kind.empty())
    throw input_error("--scale-format and --scale-vec need --kind (f8f6f4, mxf8f6f4, mxf4, mxf4nvf4)");
  if (c.arch.empty()) throw input_error("mma needs --arch (or --list-arch)");
  if (c.a_format.empty()) throw input_error("mma needs --a-format");
  tc::arch arch{};
  if (!parse_arch_name(c.arch, arch)) throw input_error("unknown --arch '" + shorten(c.arch) + "'");
  tc::instr_kind instr = tc::default_kind(arch);
  if (!c.instr.empty() && !parse_instr_name(c.instr, instr))
    throw input_error("unknown --instr '" + shorten(c.instr) + "' (mma, wgmma, tcgen05)");
  fa = parse_format(c.a_format);
  fb = o.b_format.empty() ? fa : parse_format(o.b_format);
  fo = parse_format(c.out);
  tc::scale_kind sk = tc::scale_kind::none;
  if (o.kind != "f8f6f4")
    sk = o.kind == "mxf4nvf4" ? tc::scale_kind::ue4m3 : tc::scale_kind::ue8m0; // NVFP4, MX
  if (!o.scale_format.empty()) {
    if (o.scale_format == "ue8m0")
      sk = tc::scale_kind::ue8m0;
    else if (o.scale_format == "ue4m3")
      sk = tc::scale_kind::ue4m3;
    else
      throw input_error("unknown --scale-format '" + shorten(o.scale_format) + "' (ue8m0, ue4m3)");
  }
  if (o.vec != 0 && o.vec != 16 && o.vec != 32)
    throw input_error("--scale-vec " + std::to_string(o.vec) + ": takes 16 or 32");
  const tc::scaled_preset *P = tc::find_scaled_preset(arch, instr, o.kind.c_str(), sk, int(o.vec), fo);
  if (!P) {
    std::string have;
    for (const tc::scaled_preset &q : tc::scaled_presets)
      if (q.arch == arch && q.instr == instr)
        have += std::string(" ") + q.kind + ":" + tc::to_string(q.params.scale) + "/" +
                std::to_string(q.params.vec) + "->" + name(q.out);
    // Where this kind exists with this scale and output: the --arch/--instr that would work.
    std::string where;
    for (const tc::scaled_preset &q : tc::scaled_presets)
      if (tc::detail::name_is(o.kind, q.kind) && q.params.scale == sk && q.out == fo &&
          (o.vec == 0 || q.params.vec == int(o.vec)) && (q.arch != arch || q.instr != instr)) {
        const std::string opt =
            std::string(" --arch ") + tc::to_string(q.arch) + " --instr " + tc::to_string(q.instr);
        if (where.find(opt) == std::string::npos) where += (where.empty() ? "" : ",") + opt;
      }
    throw input_error(std::string("no scaled preset for ") + tc::to_string(arch) + " " +
                      tc::to_string(instr) + " kind::" + shorten(o.kind) + " scale " + tc::to_string(sk) +
                      " -> " + name(fo) + (where.empty() ? "" : "; it works with" + where) + "; " +
                      tc::to_string(arch) + " " + tc::to_string(instr) +
                      " has:" + (have.empty() ? " none" : have));
  }
  if (!tc::takes_formats(*P, fa, fb) || !is_f8f6f4(fa) || !is_f8f6f4(fb))
    throw input_error(std::string("kind::") + P->kind + " takes A and B in " +
                      (P->any_f8f6f4 ? "e4m3, e5m2, e3m2, e2m3, e2m1" : "e2m1") + ", not " + name(fa) +
                      " x " + name(fb));
  return *P;
}

void run_scaled_lines(const scaled_mma_options &o, const mma_common &c, std::istream &in, std::ostream &out) {
  format_id fa{}, fb{}, fo{};
  const tc::scaled_preset *P = &resolve_scaled(o, c, fa, fb, fo);
  const fp4_packing pk = packing_for(o.packed, fa, fb);
  if (!c.ptx.empty())
    write_ptx_mapping(out, c.json, c.ptx, tc::to_string(P->arch),
                      std::string(tc::to_string(P->instr)) + " kind::" + P->kind + " " + name(fa) +
                          (fb != fa ? std::string("x") + name(fb) : std::string()) + " -> " + name(P->out) +
                          " k" + std::to_string(P->params.k) + ": " + P->ptx + " (" + P->gpu + ")",
                      [&](json_writer &w) { write_scaled_preset(w, *P); });
  tc::scaled_params p = P->params;
  p.zeros = c.zeros;
  const int K = c.k > 0 ? int(c.k) : p.k;
  const bool scaled = p.scale != tc::scale_kind::none;
  if (scaled && K % p.k != 0)
    throw input_error("--k " + std::to_string(K) + ": kind::" + P->kind +
                      " takes whole instructions, a multiple of " + std::to_string(p.k));
  const int S = scaled ? K / p.vec : 0;
  const std::size_t want = std::size_t(operand_tokens(K, pk.a) + operand_tokens(K, pk.b) + 2 * S + 1);
  line_data d;
  d.a.resize(K), d.b.resize(K), d.sa.resize(S), d.sb.resize(S);
  std::string line;
  int lineno = 0;
  while (read_line(in, line, max_mma_line, "mma input", std::uint64_t(lineno) + 1)) {
    ++lineno;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<std::string> tok = split_tokens(line);
    if (tok.size() != want)
      fail(lineno, "expected " + std::to_string(want) + " values (" + operand_counts(K, pk) + ", " +
                       std::to_string(S) + " scales of A, " + std::to_string(S) +
                       " scales of B, then C), got " + std::to_string(tok.size()));
    unpack_fp4(tok, K, pk, lineno);
    for (int i = 0; i < K; ++i) {
      d.a[i] = value_of(tok[i], fa, lineno, "A value");
      d.b[i] = value_of(tok[K + i], fb, lineno, "B value");
    }
    for (int s = 0; s < S; ++s) {
      d.sa[s] = scale_of(tok[2 * K + s], p.scale, lineno, "scale of A #" + std::to_string(s));
      d.sb[s] = scale_of(tok[2 * K + S + s], p.scale, lineno, "scale of B #" + std::to_string(s));
    }
    d.c = value_of(tok[2 * K + 2 * S], fo, lineno, "C value");
    const std::string dhex = mma_hex(fo, scaled_dot_bits(p, fa, fb, fo, d.a.data(), d.b.data(), K,
                                                         d.sa.empty() ? nullptr : d.sa.data(),
                                                         d.sb.empty() ? nullptr : d.sb.data(), d.c));
    if (c.json) {
      json_writer w(out, false);
      w.begin_object().kv("line", lineno).kv("kind", P->kind).kv("d", dhex).end_object();
    } else {
      out << dhex << '\n';
    }
  }
  out.flush();
}

void print_scaled_presets(std::ostream &out) {
  out << "\nMixed-format and block-scaled kinds (--kind; A and B any of the listed operands, --b-format;\n"
         "scale factors on the line after B; docs/tensor-cores.md, Blackwell tcgen05 section):\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-6s %-8s %-9s %-7s %-5s %3s %5s %3s %3s %7s %4s %s\n", "arch", "instr",
                "kind", "a/b", "out", "k", "scale", "vec", "F", "e_zero", "frac", "rounding");
  out << buf;
  for (const tc::scaled_preset &P : tc::scaled_presets) {
    std::snprintf(buf, sizeof buf, "%-6s %-8s %-9s %-7s %-5s %3d %5s %3d %3d %7d %4d %s (%s)\n",
                  tc::to_string(P.arch), tc::to_string(P.instr), P.kind, operands(P).c_str(), name(P.out),
                  P.params.k, tc::to_string(P.params.scale), P.params.vec, P.params.F, P.params.e_zero,
                  P.params.out_frac, rounding_name(P.params.rounding),
                  P.params.group == 1 ? "per product" : "sums of 16");
    out << buf << "       " << P.gpu << ": " << P.ptx << "\n       " << P.source << "\n";
    if (P.open) out << "       open: " << P.open << "\n";
  }
}

void write_scaled_presets(json_writer &w) {
  for (const tc::scaled_preset &P : tc::scaled_presets) {
    w.begin_object();
    write_scaled_preset(w, P);
    w.end_object();
  }
}

void write_scaled_preset(json_writer &w, const tc::scaled_preset &P) {
  {
    w.kv("arch", tc::to_string(P.arch))
        .kv("gpu", P.gpu)
        .kv("instr", tc::to_string(P.instr))
        .kv("kind", P.kind);
    w.kv("a_format", operands(P)).kv("b_format", operands(P)).kv("out", name(P.out)).kv("ptx", P.ptx);
    w.kv("m", P.m).kv("n", P.n).kv("k", P.params.k).kv("group", P.params.group);
    w.kv("scale", tc::to_string(P.params.scale)).kv("scale_vec", P.params.vec);
    w.kv("F", P.params.F).kv("e_zero", P.params.e_zero).kv("out_frac", P.params.out_frac);
    w.kv("rounding", rounding_name(P.params.rounding))
        .kv("open", P.open ? P.open : "")
        .kv("source", P.source);
  }
}

} // namespace bf16emu::io
