// bf16emu CLI: `bf16emu mma`, the tensor-core model on dot-product lines (one output element
// of an MMA per line). The line format is specified in docs/tensor-cores.md; the CUDA probes
// read and write the same lines.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <bf16emu/cpu.hpp>
#include <bf16emu/tc.hpp>

#include "command.hpp"
#include "io/arch_name.hpp"
#include "io/cpu.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/mma_amd.hpp"
#include "io/mma_scaled.hpp"
#include "io/names.hpp"
#include "io/number.hpp"
#include "io/packed.hpp"
#include "io/preset_lookup.hpp"
#include "io/ptx.hpp"
#include "io/tc_trace.hpp"
#include "io/tokens.hpp"
#include "options.hpp"

namespace bf16emu::cli {

namespace {

struct mma_cli {
  std::string arch, instr, a_format, b_format, c_format, out, in_file; // out "": fp32, or --ptx's
  std::string ptx;                                                     // --ptx: the instruction string
  std::string zero_exp;                                                // --zero-exp
  unsigned k = 0, shape_k = 0;
  bool list = false, trace = false, json = false, packed = false;
  io::scaled_mma_options scaled; // --kind, --scale-format, --scale-vec (io/mma_scaled); B: b_format
};

using io::hexfloat;
std::string hex_of(format_id f, std::uint64_t bits) { return io::mma_hex(f, bits); }

// "cdna1|cdna2|cdna3 (mi100 mi200 mi300, gfx908 gfx90a gfx942)": the AMD names --arch takes.
std::string amd_arch_names() {
  std::string names, parts, targets;
  for (const tc::amd_arch a : tc::all_amd_archs) {
    names += std::string(names.empty() ? "" : "|") + tc::to_string(a);
    parts += std::string(parts.empty() ? "" : " ") + tc::amd_part(a);
    targets += std::string(targets.empty() ? "" : " ") + tc::amd_target(a);
  }
  return names + " (" + parts + ", " + targets + ")";
}

// "volta sm70, turing sm75, ..., rtx-blackwell sm120", a line break after the fourth.
std::string alias_list() {
  std::string r;
  int n = 0;
  for (const tc::arch a : tc::all_archs)
    if (const char *g = tc::generation_name(a))
      r += std::string(n == 0 ? "" : n == 4 ? ",\n" : ", ") + g + " " + tc::to_string(a), ++n;
  return r;
}

const char *rounding_name(tc::out_round r) {
  return r == tc::out_round::truncate ? "truncate" : "nearest_even";
}

// The rounding column of --list-arch: the block's output rounding, or the f64 fma chain.
const char *rounding_name(const tc::preset &p) {
  if (p.accum == tc::accum_kind::two_block_add)
    return p.block.rounding == tc::out_round::truncate ? "truncate+add" : "nearest_even+add";
  return p.accum == tc::accum_kind::fma_chain ? "fma_chain" : rounding_name(p.block.rounding);
}

// The members of one preset's JSON object (--list-arch --json, the --ptx mapping).
void write_preset(io::json_writer &w, const tc::preset &p) {
  w.kv("arch", tc::to_string(p.arch)).kv("gpu", p.gpu).kv("instr", tc::to_string(p.kind));
  w.kv("a_format", io::name(p.in)).kv("b_format", io::name(p.b)).kv("c_format", io::name(p.c));
  w.kv("out", io::name(p.out)).kv("accum", tc::to_string(p.accum));
  w.kv("ptx", p.ptx);
  w.kv("m", p.m).kv("n", p.n).kv("k", p.k);
  w.kv("L", p.block.L).kv("F", p.block.F).kv("e_zero", p.block.e_zero);
  w.kv("e_zero_matters", p.e_zero_matters).kv("out_frac", p.block.out_frac);
  w.kv("rounding", rounding_name(p)).kv("source", p.source);
}

void list_presets(bool json) {
  if (json) {
    io::json_writer w(std::cout);
    w.begin_array();
    for (const tc::preset &p : tc::presets) {
      w.begin_object();
      write_preset(w, p);
      w.end_object();
    }
    io::write_scaled_presets(w);
    io::write_cpu_models(w);
    io::write_amd_presets(w);
    w.end_array();
    return;
  }
  std::printf("%-6s %-8s %-5s %-5s %3s %3s %3s %7s %4s %-13s %s\n", "arch", "instr", "in", "out", "k", "L",
              "F", "e_zero", "frac", "rounding", "gpu / instruction / sources");
  for (const tc::preset &p : tc::presets) {
    char ez[16];
    std::snprintf(ez, sizeof ez, p.e_zero_matters ? "%d" : "(%d)", p.block.e_zero);
    std::printf("%-6s %-8s %-5s %-5s %3d %3d %3d %7s %4d %-13s %s\n", tc::to_string(p.arch),
                tc::to_string(p.kind), io::in_column(p).c_str(), io::out_column(p).c_str(), p.k, p.block.L,
                p.block.F, ez, p.block.out_frac, rounding_name(p), p.gpu);
    std::printf("%51s %s\n%51s %s\n", "", p.ptx, "", p.source);
  }
  std::printf(
      "\nk: instruction k (a multiple of L); L: products per block; F: fraction bits kept at alignment;\n"
      "e_zero: exponent of zero terms, in parentheses where it cannot change any result for these formats;\n"
      "frac: fraction bits of the output. Aliases: %s. No preset where the sources leave a parameter open.\n"
      "in AxB: B has its own format (--b-format); out D<C: C has its own format (--c-format), converted to "
      "D's\n"
      "before the first block; fma_chain: one IEEE fma per product in k order (f64; L, F, e_zero unused);\n"
      "x+add (fp8 mma.sync on sm90, sm100): a block of the products with k mod 4 < 2, one of the rest, each\n"
      "rounded as x, then C added by one IEEE addition (nearest even).\n"
      "Details and full references: docs/tensor-cores.md.\n",
      alias_list().c_str());
  std::fflush(stdout);
  io::print_scaled_presets(std::cout);
  std::cout.flush();
  std::printf("\nCPU BF16 instructions (--a-format bf16, --out fp32, one FP32 lane per line; "
              "docs/cpu-bf16.md):\n");
  io::print_cpu_models();
  io::print_amd_presets();
}

// A tf32 operand as the 32-bit register holds it (0x3f7aa000: 6 to 8 hex digits): the tf32
// pattern is bits 31..13; the low 13 bits are dropped (a prediction, docs/tensor-cores.md:
// PTX leaves them unused, no GPU has confirmed what the tensor core does with them).
bool tf32_container(const std::string &tok, std::uint64_t &bits) {
  if (tok.size() < 8 || tok.size() > 10 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X')) return false;
  if (tok.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) return false;
  bits = std::stoull(tok.substr(2), nullptr, 16) >> 13;
  return true;
}

std::uint64_t parse_value(const std::string &tok, format_id f, int line, const char *what) {
  std::uint64_t container = 0;
  if (f == format_id::tf32 && tf32_container(tok, container)) return container;
  io::operand op;
  try {
    op = io::parse_operand(tok, f);
  } catch (const io::input_error &e) {
    throw bad_input("line " + std::to_string(line) + ": " + what + ": " + e.what());
  }
  if (!op.exact)
    throw bad_input("line " + std::to_string(line) + ": " + what + " '" + tok +
                    "' is not exactly representable in " + io::name(f) + " (nearest: " + hex_of(f, op.bits) +
                    "); give its bit pattern");
  return op.bits;
}

// Calls fn(tokens, lineno) for every line of K values of A, K of B, then C; skips empty and #
// lines; a line with another count is bad input naming it. Packed e2m1 operands (--packed) are
// expanded to one code per token before fn sees them.
template <class Fn> void for_each_line(std::istream &is, int K, Fn fn, io::fp4_packing pk = {}) {
  std::string line;
  int lineno = 0;
  const std::size_t want = std::size_t(io::operand_tokens(K, pk.a) + io::operand_tokens(K, pk.b) + 1);
  while (io::rethrow_as<bad_input>(
      [&] { return io::read_line(is, line, io::max_mma_line, "mma input", lineno + 1); })) {
    ++lineno;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<std::string> tok = io::split_tokens(line);
    if (tok.size() != want)
      throw bad_input("line " + std::to_string(lineno) + ": expected " + std::to_string(want) + " values (" +
                      io::operand_counts(K, pk) + ", then C), got " + std::to_string(tok.size()));
    io::rethrow_as<bad_input>([&] { io::unpack_fp4(tok, K, pk, lineno); });
    fn(tok, lineno);
  }
}

template <class In, class Out, class InB = In, class InC = Out>
void run_lines(const mma_cli &o, const tc::preset &P, std::istream &is) {
  const int K = o.k > 0 ? int(o.k) : P.k;
  std::vector<fp<In>> a(K);
  std::vector<fp<InB>> b(K);
  std::vector<tc::block_trace> blocks;
  auto tracer = tc::make_block_tracer([&](const tc::block_trace &t) { blocks.push_back(t); });
  const io::fp4_packing pk = io::rethrow_as<bad_input>([&] { return io::packing_for(o.packed, P.in, P.b); });
  for_each_line(
      is, K,
      [&](const std::vector<std::string> &tok, int lineno) {
        for (int i = 0; i < K; ++i) {
          a[i] = fp<In>::from_bits(parse_value(tok[i], P.in, lineno, "A value"));
          b[i] = fp<InB>::from_bits(parse_value(tok[K + i], P.b, lineno, "B value"));
        }
        const fp<InC> c = fp<InC>::from_bits(parse_value(tok[2 * K], P.c, lineno, "C value"));
        blocks.clear();
        fp<Out> d;
        if (o.trace)
          d = tc::preset_dot<In, Out>(P, a.data(), 1, b.data(), 1, K, c, tracer);
        else
          d = tc::preset_dot<In, Out>(P, a.data(), 1, b.data(), 1, K, c);
        const std::string dhex = hex_of(P.out, d.bits);
        if (o.json) {
          io::json_writer w(std::cout, false);
          w.begin_object().kv("line", lineno).kv("d", dhex);
          if (o.trace) {
            w.key("blocks").begin_array();
            for (const tc::block_trace &t : blocks) {
              w.begin_object();
              io::write_block_members(w, t, P.out);
              w.end_object();
            }
            w.end_array();
          }
          w.end_object();
          return;
        }
        if (o.trace) {
          for (const tc::block_trace &t : blocks) {
            std::printf("# block %d k=%d..%d c=%s d=%s", t.block, t.k0, t.k0 + t.n_products - 1,
                        hex_of(P.out, t.c_bits).c_str(), hex_of(P.out, t.d_bits).c_str());
            if (t.special) {
              std::printf(" special (NaN/Inf path)\n");
              continue;
            }
            std::printf(" max_exp=%d lsb_exp=%d aligned_sum=%lld sum=%s trunc_err=%s\n", t.max_exp, t.lsb_exp,
                        static_cast<long long>(t.aligned_sum), hexfloat(t.sum_value).c_str(),
                        hexfloat(t.trunc_err).c_str());
            std::string lost;
            for (int i = 0; i <= t.n_products; ++i)
              if (t.terms[i].lost != 0)
                lost += (i < t.n_products ? " k" + std::to_string(t.k0 + i) : std::string(" c")) + "=" +
                        hexfloat(t.terms[i].lost);
            std::printf("#   lost to alignment:%s\n", lost.empty() ? " none" : lost.c_str());
          }
        }
        std::printf("%s\n", dhex.c_str());
      },
      pk);
  std::fflush(stdout);
}

// A CPU BF16 instruction model (cpu/models.hpp, docs/cpu-bf16.md): one FP32 lane per line,
// a[0..k-1] b[0..k-1] in memory order (a[0] the even element), then c.
void run_cpu_lines(const mma_cli &o, const cpu::model_info &m, std::istream &is) {
  const format_id in = o.a_format.empty()
                           ? format_id::bf16
                           : io::rethrow_as<bad_input>([&] { return io::parse_format(o.a_format); });
  const format_id out = io::rethrow_as<bad_input>([&] { return io::parse_format(o.out); });
  if (in != format_id::bf16 || out != format_id::fp32)
    throw bad_input(std::string("--arch ") + m.name + " takes --a-format bf16 and --out fp32");
  const int K = o.k > 0 ? int(o.k) : (m.k > 0 ? m.k : 2);
  if (!cpu::accepts_k(m, K))
    throw bad_input(std::string("--arch ") + m.name + " takes --k " +
                    (m.k > 0 ? std::to_string(m.k) : std::string("2, 4, 6, ... (an even number)")));
  std::vector<std::uint16_t> a(K), b(K);
  for_each_line(is, K, [&](const std::vector<std::string> &tok, int lineno) {
    for (int i = 0; i < K; ++i) {
      a[i] = static_cast<std::uint16_t>(parse_value(tok[i], in, lineno, "A value"));
      b[i] = static_cast<std::uint16_t>(parse_value(tok[K + i], in, lineno, "B value"));
    }
    const auto c = static_cast<std::uint32_t>(parse_value(tok[2 * K], out, lineno, "C value"));
    cpu::step_log log;
    const std::uint32_t d = o.trace ? cpu::run_lane(m.id, a.data(), b.data(), K, c, log)
                                    : cpu::run_lane(m.id, a.data(), b.data(), K, c);
    const std::string dhex = hex_of(out, d);
    if (o.json) {
      io::json_writer w(std::cout, false);
      w.begin_object().kv("line", lineno).kv("arch", m.name).kv("d", dhex);
      if (o.trace) {
        w.key("steps").begin_array();
        for (int i = 0; i < std::min(log.count, cpu::step_log::capacity); ++i) {
          const rounding_event &e = log.steps[i];
          w.begin_object().kv("guard", int(e.guard)).kv("round", int(e.round)).kv("sticky", int(e.sticky));
          w.kv("decision", to_string(e.dec)).kv("error", e.err_hi + e.err_lo).end_object();
        }
        w.end_array();
      }
      w.end_object();
      return;
    }
    if (o.trace)
      for (int i = 0; i < std::min(log.count, cpu::step_log::capacity); ++i) {
        const rounding_event &e = log.steps[i];
        std::printf("# step %d: guard %d round %d sticky %d, %s, error %s\n", i + 1, int(e.guard),
                    int(e.round), int(e.sticky), to_string(e.dec), hexfloat(e.err_hi + e.err_lo).c_str());
      }
    std::printf("%s\n", dhex.c_str());
  });
  std::fflush(stdout);
}

// One line naming a preset: "mma e4m3xe5m2 -> fp32 k32: mma.sync.aligned... (H100 / H200)".
std::string preset_summary(const tc::preset &p) {
  return std::string(tc::to_string(p.kind)) + " " + io::in_column(p) + " -> " + io::out_column(p) + " k" +
         std::to_string(p.k) + ": " + p.ptx + " (" + p.gpu + ")";
}

// --ptx: the instruction string sets --instr, the formats, --shape-k and the --kind options (an
// explicit option that says otherwise is refused; io/ptx.hpp). Needs an NVIDIA --arch.
io::ptx_mma apply_ptx(mma_cli &o) {
  tc::arch arch{};
  if (o.arch.empty())
    throw bad_input("mma --ptx needs --arch: a PTX string names no GPU generation (" + io::arch_names(", ") +
                    ")");
  if (!io::parse_arch_name(o.arch, arch))
    throw bad_input("--ptx takes an NVIDIA --arch (" + io::arch_names(", ") + "), not '" +
                    io::shorten(o.arch) + "'");
  return io::rethrow_as<bad_input>([&] {
    io::ptx_mma p;
    try {
      p = io::parse_ptx(o.ptx);
    } catch (const io::input_error &e) {
      throw io::input_error(std::string("--ptx ") + e.what());
    }
    io::mma_selection sel{
        o.instr,   o.a_format,  o.b_format, o.c_format, o.out, o.scaled.kind, o.scaled.scale_format,
        o.shape_k, o.scaled.vec};
    io::apply_ptx(p, o.ptx, sel);
    o.instr = sel.instr, o.a_format = sel.a_format, o.b_format = sel.b_format, o.c_format = sel.c_format;
    o.out = sel.out, o.scaled.kind = sel.kind, o.scaled.scale_format = sel.scale_format;
    o.shape_k = sel.shape_k, o.scaled.vec = sel.scale_vec;
    return p;
  });
}

// The line runner for P's formats: same-format presets as before; the fp8 and f8f6f4 mixes;
// the fp16 m8n8k4 C/D mixes; the f64 fma chain.
void run_preset(const mma_cli &o, const tc::preset &P, std::istream &is) {
  if (P.accum == tc::accum_kind::fma_chain) {
    if (P.in == format_id::fp64 && P.b == format_id::fp64 && P.c == format_id::fp64 &&
        P.out == format_id::fp64)
      run_lines<binary64, binary64>(o, P, is);
    return;
  }
  auto half_single = [](format_id f, auto fn) {
    if (f == format_id::fp16)
      fn(binary16{});
    else
      fn(binary32{});
  };
  if (P.b != P.in) { // fp8 mixes, sm120 kind::f8f6f4 mixes with fp6/fp4, tcgen05 fp16 x bf16
    tc::visit_mixed_operands(P.in, P.b, [&](auto fa, auto fb) {
      half_single(P.out, [&](auto fo) {
        using Out = decltype(fo);
        run_lines<decltype(fa), Out, decltype(fb), Out>(o, P, is);
      });
    });
    return;
  }
  if (P.c != P.out) {
    half_single(P.c, [&](auto fc) {
      half_single(P.out,
                  [&](auto fo) { run_lines<binary16, decltype(fo), binary16, decltype(fc)>(o, P, is); });
    });
    return;
  }
  visit_format(P.in, [&](auto fin) {
    using In = decltype(fin);
    if constexpr (In::width <= 19) {
      if (P.out == format_id::fp16)
        run_lines<In, binary16>(o, P, is);
      else
        run_lines<In, binary32>(o, P, is);
    }
  });
}

void run(const mma_cli &given) {
  if (given.list) {
    list_presets(given.json);
    return;
  }
  mma_cli o = given;
  io::ptx_mma ptx; // m = 0: no --ptx
  if (!o.ptx.empty()) ptx = apply_ptx(o);
  if (o.out.empty()) o.out = "fp32";
  if (o.arch.empty()) throw bad_input("mma needs --arch (or --list-arch)");
  std::ifstream file;
  if (!o.in_file.empty()) file = io::rethrow_as<bad_input>([&] { return io::open_input(o.in_file, "--in"); });
  std::istream &is = o.in_file.empty() ? std::cin : file;
  if (o.in_file.empty()) io::rethrow_as<bad_input>([] { io::check_stdin("mma"); });
  tc::zero_exp zeros = tc::zero_exp::e_zero;
  if (!o.zero_exp.empty() && !tc::parse_zero_exp(o.zero_exp.c_str(), zeros))
    throw bad_input("unknown --zero-exp '" + io::shorten(o.zero_exp) + "' (e_zero or default, mmasim)");
  if (io::scaled_requested(o.scaled)) {
    io::scaled_mma_options sc = o.scaled;
    sc.b_format = o.b_format; // the one --b-format option serves both the block model and --kind
    sc.packed = o.packed;
    io::rethrow_as<bad_input>([&] {
      io::run_scaled_lines(sc, {o.arch, o.instr, o.a_format, o.out, o.k, o.json, o.ptx, zeros}, is,
                           std::cout);
    });
    return;
  }
  if (tc::arch nv{}; !o.zero_exp.empty() && !io::parse_arch_name(o.arch, nv))
    throw bad_input("--zero-exp applies to the NVIDIA presets, not to --arch " + io::shorten(o.arch));
  if (const cpu::model_info *m = cpu::find_model(o.arch.c_str())) {
    if (o.packed) throw bad_input(std::string("--packed: --arch ") + m->name + " takes bf16, not e2m1 (fp4)");
    run_cpu_lines(o, *m, is);
    return;
  }
  if (const tc::amd_preset *amd = io::resolve_amd(o.arch, o.instr, o.a_format, o.out)) { // AMD CDNA MFMA
    if (o.trace) throw bad_input("--trace is not available for the AMD models");
    if (o.packed) throw bad_input("--packed: the AMD models take no e2m1 (fp4) operands");
    const int K = o.k > 0 ? int(o.k) : amd->k;
    for_each_line(is, K, [&](const std::vector<std::string> &tok, int lineno) {
      const std::string d = io::amd_line(*amd, tok, K, lineno);
      if (!o.json) return void(std::printf("%s\n", d.c_str()));
      io::json_writer w(std::cout, false);
      w.begin_object().kv("line", lineno).kv("instr", amd->name).kv("d", d).end_object();
    });
    return std::fflush(stdout), void();
  }
  if (o.a_format.empty()) throw bad_input("mma needs --a-format");
  tc::arch arch{};
  if (!io::parse_arch_name(o.arch, arch))
    throw bad_input("unknown --arch '" + io::shorten(o.arch) + "' (" + io::arch_names(", ") + "; AMD " +
                    amd_arch_names() + "; CPU models: see --list-arch)");
  const format_id in = io::rethrow_as<bad_input>([&] { return io::parse_format(o.a_format); });
  const format_id out = io::rethrow_as<bad_input>([&] { return io::parse_format(o.out); });
  const format_id b =
      o.b_format.empty() ? in : io::rethrow_as<bad_input>([&] { return io::parse_format(o.b_format); });
  const format_id c =
      o.c_format.empty() ? out : io::rethrow_as<bad_input>([&] { return io::parse_format(o.c_format); });
  tc::instr_kind kind = tc::default_kind(arch);
  if (!o.instr.empty() && !io::parse_instr_name(o.instr, kind))
    throw bad_input("unknown --instr '" + io::shorten(o.instr) + "' (mma, wgmma, tcgen05)");
  const tc::preset *P = io::same_shape(tc::find_preset(arch, kind, in, b, c, out, int(o.shape_k)), ptx);
  if (!P)
    throw bad_input(io::no_preset_message({arch, kind, in, b, c, out, !o.c_format.empty(), int(o.shape_k)},
                                          io::front_end::cli));
  if (!o.ptx.empty())
    io::write_ptx_mapping(std::cout, o.json, o.ptx, tc::to_string(arch), preset_summary(*P),
                          [&](io::json_writer &w) { write_preset(w, *P); });
  tc::preset Q = *P;
  Q.block.zeros = zeros; // per call (no effect on the f64 fma chain)
  run_preset(o, Q, is);
}

void register_mma(CLI::App &app) {
  auto o = std::make_shared<mma_cli>();
  CLI::App *sub =
      app.add_subcommand("mma", "NVIDIA tensor-core MMA model: D = A*B + C per output element, bit-exact");
  sub->add_option("--arch", o->arch,
                  io::arch_names(" or ") + ", AMD " + amd_arch_names() +
                      ", or a CPU BF16 model (avx512bf16, amx-bf16, arm-bfdot, ...; --list-arch)");
  sub->add_option("--instr", o->instr, "mma (mma.sync, default), wgmma (sm90), tcgen05 (sm100, its default)");
  sub->add_option("--a-format", o->a_format,
                  "format of A (and of B unless --b-format): bf16 fp16 tf32 e4m3 e5m2 e3m2 e2m3 e2m1 fp64 "
                  "(AMD: fp32 xf32 fp16 bf16 fp8 bf8 fp64)");
  sub->add_option("--b-format", o->b_format,
                  "format of B when it differs from A's (fp8 mixes; sm120 kind::f8f6f4)");
  sub->add_option(
      "--c-format", o->c_format,
      "format of C when it differs from D's (m8n8k4 f16/f32 mixes; C is converted to D's format)");
  add_count(sub, "--shape-k", o->shape_k,
            "the instruction's k where an arch has two shapes for the same formats (m16n8k8 vs m16n8k16: 8); "
            "default the first listed",
            1, 256);
  add_count(sub, "--k", o->k,
            "values of A (and of B) per line; default the instruction's k; padded with zeros to "
            "a multiple of it, instructions chained in increasing k",
            1, 1u << 20);
  sub->add_option(
      "--kind", o->scaled.kind,
      "mixed-format / block-scaled kind: f8f6f4, mxf8f6f4, mxf4, mxf4nvf4 (sm100 tcgen05, sm120 mma)");
  sub->add_option(
      "--scale-format", o->scaled.scale_format,
      "with --kind: ue8m0 or ue4m3; scale factors follow B on each line as bit patterns 0x00..0xff");
  add_count(sub, "--scale-vec", o->scaled.vec, "with --kind: k-elements per scale factor, 16 or 32", 1, 64);
  sub->add_option("--zero-exp", o->zero_exp,
                  "exponent of zero terms in the max search: e_zero (default: the preset's e_zero) or "
                  "mmasim (MMA-Sim: a zero factor, a zero C and a zero ue4m3 scale count as 2^-126)");
  sub->add_option("--out", o->out, "format of D (and of C unless --c-format): fp32 (default), fp16, fp64");
  sub->add_option(
      "--ptx", o->ptx,
      "the PTX instruction as written (mma.sync..., wgmma.mma_async..., tcgen05.mma...): sets "
      "--instr, the formats, --shape-k, --kind; needs --arch; prints the preset it maps to first");
  sub->add_flag("--packed", o->packed,
                "e2m1 (fp4) operands as bytes of two codes, element 2i in the low nibble (MMA-Sim, CUTLASS, "
                "PyTorch float4_e2m1fn_x2); an odd count pads the last high nibble with 0");
  sub->add_option("--in", o->in_file, "read lines from FILE instead of stdin");
  sub->add_flag("--list-arch", o->list, "print the presets with their parameters and sources");
  sub->add_flag("--trace", o->trace,
                "per block: max exponent, bits lost by each term, final truncation error");
  sub->add_flag("--json", o->json, "one JSON object per line (with --list-arch: a JSON array)");
  sub->footer(
      "Each input line: K values of a row of A, K values of a column of B, then C. Values are bit patterns\n"
      "(0x..., of the A/B format; C in the --c-format, D in the --out format; tf32 as its 19-bit pattern or "
      "as the 32-bit\n"
      "register, 0x3f7aa000, whose low 13 bits are dropped) or decimals,\n"
      "hex-floats, inf, nan that must be exact in their format. Lines that are empty or start with #\n"
      "are skipped. Output: D as a hex bit pattern, one per line. Bad input: 'line N: ...', exit 2.\n\n"
      "Example (VDPBF16PS, one FP32 lane: a0 a1 b0 b1 c):\n"
      "  echo '0x3f80 0x3f80 0x3f80 0x3f80 0' | bf16emu mma --arch avx512bf16 --a-format bf16 --k 2   # "
      "0x40000000\n"
      "Example (the PTX string; its preset is printed first, as a # line):\n"
      "  echo \"0x38 $(printf '0 %.0s' {1..31})0x3c $(printf '0 %.0s' {1..31})0\" |\n"
      "    bf16emu mma --arch sm90 --ptx 'mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32'   # "
      "0x3f800000\n"
      "  bf16emu mma --arch sm100 --ptx 'tcgen05.mma.cta_group::1.kind::f16' --a-format bf16 </dev/null\n"
      "  (tcgen05 strings carry no types: give --a-format, and --b-format/--out where they differ)\n"
      "Example (fp4 packed: bytes 0x21 = codes 1, 2; A = 0.5 1, B = 1 1; 0.5 + 1 = 1.5):\n"
      "  echo '0x21 0x22 0' | bf16emu mma --arch sm120 --a-format e2m1 --k 2 --packed   # 0x3fc00000\n"
      "Example (A100 F probe):\n"
      "  echo \"0x3f80 $(printf '0 %.0s' {1..15})0x3f80 $(printf '0 %.0s' {1..15})0xbf7fffff\" |\n"
      "    bf16emu mma --arch sm80 --a-format bf16          # prints 0x33800000");
  sub->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(30, register_mma);

} // namespace bf16emu::cli
