// bf16emu CLI: cpu-probe, the bit-for-bit cross-check of the CPU BF16 models
// (include/bf16emu/cpu) against the real instructions of this CPU (src/cpu_probe).
// Runs the discriminating probe lanes and --count random lanes per instruction; prints counts
// and, for the first mismatch, the inputs, both results and the model's rounding trace.
// Exit: 0 all equal, 1 a mismatch, 77 this CPU lacks AVX512_BF16 (CTest: skipped), 2 bad input.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bf16emu/cpu.hpp"
#include "bf16emu/parallel.hpp"
#include "command.hpp"
#include "cpu_probe/x86.hpp"
#include "io/cpu.hpp"
#include "io/cpu_record.hpp"
#include "io/error.hpp"
#include "io/json.hpp"
#include "io/print.hpp"
#include "options.hpp"

namespace bf16emu::cli {

namespace {

using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

struct probe_cli {
  u64 count = 1000000; // with --save, 32768 unless --count is given
  u64 seed = 1;
  unsigned threads = 0;
  bool json = false, list = false;
  std::string save; // --save DIR
  bool force = false, count_given = false;
};

// The first mismatch of one instruction: its lane, inputs, both results and the model's trace.
struct mismatch {
  u64 lane = ~u64{0}; // ~0: none
  std::string inputs;
  u32 cpu = 0, model = 0;
  int width = 32; // result bits
  std::vector<std::string> trace;
};

struct instr_report {
  std::string name, isa;
  bool ran = false;
  std::string skipped; // the reason, when not run
  u64 probes = 0, lanes = 0, mismatches = 0;
  mismatch first;
};

// Bit patterns of FP32 (8 digits) and BF16 (4 digits) through io::hex_bits; other numbers plain.
std::string hex(u64 v, int digits) {
  if (digits == 8) return io::hex_bits(format_id::fp32, v);
  if (digits == 4) return io::hex_bits(format_id::bf16, v);
  std::ostringstream s;
  s << "0x" << std::uppercase << std::hex << v;
  return s.str();
}

std::vector<std::string> trace_lines(const cpu::step_log &log) {
  std::vector<std::string> out;
  for (int i = 0; i < std::min(log.count, cpu::step_log::capacity); ++i) {
    const rounding_event &e = log.steps[i];
    std::ostringstream s;
    s << "step " << i + 1 << ": " << to_string(e.op) << " into " << (e.dst_frac_bits == 23 ? "fp32" : "bf16")
      << " (" << to_string(e.mode) << "), kept " << hex(e.kept, 1) << " * 2^" << e.lsb_exp << ", G R S "
      << int(e.guard) << ' ' << int(e.round) << ' ' << int(e.sticky) << (e.tiny ? ", tiny" : "") << ", "
      << to_string(e.dec) << " -> " << hex(e.result_bits, e.dst_frac_bits == 23 ? 8 : 4);
    out.push_back(s.str());
  }
  if (log.count == 0) out.emplace_back("no rounding step (special operands or an exact zero)");
  return out;
}

// Counts and the first mismatch of a batch of lanes, merged in lane order.
struct tally {
  u64 mismatches = 0;
  mismatch first;
  void add(const tally &t) {
    mismatches += t.mismatches;
    if (t.first.lane < first.lane) first = t.first;
  }
};

// Runs `count` random lanes in chunks of `chunk` on the worker threads; run_chunk(begin, end, t).
template <class Fn> tally over_chunks(u64 count, u64 chunk, unsigned threads, Fn run_chunk) {
  const u64 chunks = (count + chunk - 1) / chunk;
  std::vector<tally> parts(chunks);
  parallel_for(chunks, threads,
               [&](u64 i, unsigned) { run_chunk(i * chunk, std::min(count, (i + 1) * chunk), parts[i]); });
  tally all;
  for (const tally &t : parts)
    all.add(t);
  return all;
}

constexpr u64 probe_lane_base = u64{1} << 62; // lane numbers of the probes, after the random ones

std::string dot_inputs(const u16 *a, const u16 *b, int k, u32 c) {
  std::string s = "a";
  for (int i = 0; i < k; ++i)
    s += ' ' + hex(a[i], 4);
  s += ", b";
  for (int i = 0; i < k; ++i)
    s += ' ' + hex(b[i], 4);
  return s + ", c " + hex(c, 8);
}

// ---- VDPBF16PS ----------------------------------------------------------------------------------
// Lanes [begin, end) of the stream (lane i: kind i % 4), or the probe lanes, through zmm batches.
// The real instruction's results for the lanes (the first in.size() of acc).
std::vector<u32> vdpbf16ps_cpu(const std::vector<cpu::lane_inputs> &in) {
  const std::size_t n = (in.size() + 15) / 16 * 16;
  std::vector<u16> a(2 * n), b(2 * n);
  std::vector<u32> acc(n);
  for (std::size_t i = 0; i < in.size(); ++i) {
    a[2 * i] = in[i].a[0];
    a[2 * i + 1] = in[i].a[1];
    b[2 * i] = in[i].b[0];
    b[2 * i + 1] = in[i].b[1];
    acc[i] = in[i].c;
  }
  cpu_probe::run_vdpbf16ps(a.data(), b.data(), acc.data(), n);
  return acc;
}

void vdpbf16ps_batch(const std::vector<cpu::lane_inputs> &in, u64 first_lane, tally &t) {
  const std::vector<u32> acc = vdpbf16ps_cpu(in);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const cpu::lane_inputs &l = in[i];
    const u32 model = cpu::vdpbf16ps(l.c, l.a[0], l.a[1], l.b[0], l.b[1]);
    if (model == acc[i]) continue;
    if (t.mismatches++ == 0) {
      cpu::step_log log;
      cpu::vdpbf16ps(l.c, l.a[0], l.a[1], l.b[0], l.b[1], log);
      t.first = {first_lane + i, dot_inputs(l.a, l.b, 2, l.c), acc[i], model, 32, trace_lines(log)};
    }
  }
}

std::vector<cpu::lane_inputs> probe_lanes() {
  std::vector<cpu::lane_inputs> v;
  for (const cpu::probe_lane &p : cpu::dot_probes) {
    cpu::lane_inputs l;
    l.a[0] = p.a0;
    l.a[1] = p.a1;
    l.b[0] = p.b0;
    l.b[1] = p.b1;
    l.c = p.c;
    v.push_back(l);
  }
  return v;
}

std::vector<cpu::lane_inputs> stream(u64 begin, u64 end, int k, u64 seed) {
  std::vector<cpu::lane_inputs> v;
  v.reserve(end - begin);
  for (u64 i = begin; i < end; ++i)
    v.push_back(cpu::make_lane(int(i % cpu::vector_kinds), k, seed, i));
  return v;
}

// ---- conversions --------------------------------------------------------------------------------
// FP32 inputs: the accumulator patterns of the stream; every third lane gets a rounding-boundary
// low half (0x7FFF, 0x8000, 0x8001) so ties are frequent.
u32 convert_input(u64 i, u64 seed) {
  u32 x = cpu::make_lane(int(i % cpu::vector_kinds), 0, seed, i).c;
  if (i % 3 == 0) x = (x & 0xFFFF0000u) | (0x7FFFu + u32((i / 3) % 3));
  return x;
}

void convert_check(const std::vector<u32> &x, const std::vector<u16> &cpu_out, u64 first_lane, tally &t) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const u16 model = cpu::cvtneps2bf16(x[i]);
    if (model == cpu_out[i]) continue;
    if (t.mismatches++ == 0) {
      cpu::step_log log;
      cpu::cvtneps2bf16(x[i], log);
      t.first = {first_lane + i, "x " + hex(x[i], 8), cpu_out[i], model, 16, trace_lines(log)};
    }
  }
}

std::vector<u32> convert_probes() {
  return {0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0x7F7FFFFFu, 0x7F7F7FFFu, 0x00800000u,
          0x007FFFFFu, 0x807FFFFFu, 0x00000001u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F800001u,
          0x7FC00000u, 0xFF812345u, 0x7FBFFFFFu, 0xFFFFFFFFu, 0x00808000u, 0x80818000u};
}

// The real instructions' results for x, one per value.
std::vector<u16> vcvtneps2bf16_cpu(const std::vector<u32> &x) {
  std::vector<u32> in(x);
  in.resize((x.size() + 15) / 16 * 16);
  std::vector<u16> out(in.size());
  cpu_probe::run_vcvtneps2bf16(in.data(), out.data(), in.size());
  out.resize(x.size());
  return out;
}

// VCVTNE2PS2BF16: 32 values per instruction; word w < 16 converts src2[w], w >= 16 src1[w - 16].
std::vector<u16> vcvtne2ps2bf16_cpu(const std::vector<u32> &x) {
  std::vector<u32> in(x);
  in.resize((x.size() + 31) / 32 * 32);
  std::vector<u32> src1(16), src2(16);
  std::vector<u16> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += 32) {
    for (int w = 0; w < 32; ++w) {
      const cpu::ne2_source s = cpu::vcvtne2ps2bf16_source(w, 32);
      (s.from_src1 ? src1 : src2)[std::size_t(s.lane)] = in[base + std::size_t(w)];
    }
    cpu_probe::run_vcvtne2ps2bf16(src1.data(), src2.data(), out.data() + base);
  }
  out.resize(x.size());
  return out;
}

void vcvtneps2bf16_batch(const std::vector<u32> &x, u64 first_lane, tally &t) {
  convert_check(x, vcvtneps2bf16_cpu(x), first_lane, t);
}

void vcvtne2ps2bf16_batch(const std::vector<u32> &x, u64 first_lane, tally &t) {
  convert_check(x, vcvtne2ps2bf16_cpu(x), first_lane, t);
}

// ---- TDPBF16PS ----------------------------------------------------------------------------------
// One 16 x 16 tile with 4 BF16 pairs: lane j of the tile is element (j / 16, j % 16). Row m of A
// comes from lane base + m, column n of B from lane base + 16 + n, C(m, n) from lane base + j.
constexpr int amx_pairs = 4;

struct amx_tile {
  u16 a[16][2 * amx_pairs];
  u16 b[amx_pairs][32];
  u32 c[16][16];
};

// Column n of B in k order (b[2k], b[2k+1] of pair k), as the model takes it.
void column(const u16 (&b)[amx_pairs][32], int n, u16 (&col)[2 * amx_pairs]) {
  for (int k = 0; k < amx_pairs; ++k) {
    col[2 * k] = b[k][2 * n];
    col[2 * k + 1] = b[k][2 * n + 1];
  }
}

void tdpbf16ps_tile(const u16 (&a)[16][2 * amx_pairs], const u16 (&b)[amx_pairs][32], u32 (&c)[16][16],
                    u64 first_lane, int used, tally &t) {
  u32 real[16][16];
  std::copy(&c[0][0], &c[0][0] + 256, &real[0][0]);
  cpu_probe::run_tdpbf16ps(&a[0][0], &b[0][0], &real[0][0]);
  for (int j = 0; j < used; ++j) {
    const int m = j / 16, n = j % 16;
    u16 col[2 * amx_pairs];
    column(b, n, col);
    const u32 model = cpu::tdpbf16ps(c[m][n], a[m], col, amx_pairs);
    if (model == real[m][n]) continue;
    if (t.mismatches++ == 0) {
      cpu::step_log log;
      cpu::tdpbf16ps(c[m][n], a[m], col, amx_pairs, log);
      t.first = {first_lane + u64(j), dot_inputs(a[m], col, 2 * amx_pairs, c[m][n]), real[m][n], model, 32,
                 trace_lines(log)};
    }
  }
}

// The tile of lanes [base, base + 256) of the random stream.
amx_tile make_tile(u64 base, u64 seed) {
  amx_tile x;
  for (int m = 0; m < 16; ++m) {
    const cpu::lane_inputs l =
        cpu::make_lane(int((base / 256 + u64(m)) % 4), 2 * amx_pairs, seed, base + u64(m));
    std::copy(l.a, l.a + 2 * amx_pairs, x.a[m]);
  }
  for (int n = 0; n < 16; ++n) {
    const cpu::lane_inputs l =
        cpu::make_lane(int((base / 256 + u64(n)) % 4), 2 * amx_pairs, seed, base + 16 + u64(n));
    for (int k = 0; k < amx_pairs; ++k) {
      x.b[k][2 * n] = l.b[2 * k];
      x.b[k][2 * n + 1] = l.b[2 * k + 1];
    }
  }
  for (int j = 0; j < 256; ++j)
    x.c[j / 16][j % 16] = cpu::make_lane(int((base + u64(j)) % 4), 0, seed ^ 0xA3, base + u64(j)).c;
  return x;
}

void tdpbf16ps_stream(u64 begin, u64 end, u64 seed, tally &t) {
  for (u64 base = begin; base < end; base += 256) {
    amx_tile x = make_tile(base, seed);
    tdpbf16ps_tile(x.a, x.b, x.c, base, int(std::min<u64>(256, end - base)), t);
  }
}

// A probe lane in element (0, 0) of an otherwise zero tile: pair 0 holds it.
void tdpbf16ps_probes(u64 first_lane, tally &t) {
  for (int p = 0; p < cpu::dot_probe_count; ++p) {
    const cpu::probe_lane &q = cpu::dot_probes[p];
    u16 a[16][2 * amx_pairs] = {}, b[amx_pairs][32] = {};
    u32 c[16][16] = {};
    a[0][0] = q.a0;
    a[0][1] = q.a1;
    b[0][0] = q.b0;
    b[0][1] = q.b1;
    c[0][0] = q.c;
    tdpbf16ps_tile(a, b, c, first_lane + u64(p), 1, t);
  }
}

// ---- driver -------------------------------------------------------------------------------------
instr_report finish(std::string name, std::string isa, u64 probes, u64 lanes, const tally &t) {
  instr_report r;
  r.name = std::move(name);
  r.isa = std::move(isa);
  r.ran = true;
  r.probes = probes;
  r.lanes = lanes;
  r.mismatches = t.mismatches;
  r.first = t.first;
  return r;
}

instr_report skipped(std::string name, std::string isa, std::string why) {
  instr_report r;
  r.name = std::move(name);
  r.isa = std::move(isa);
  r.skipped = std::move(why);
  return r;
}

std::vector<instr_report> run_all(const cpu_probe::cpu_info &info, const probe_cli &o) {
  std::vector<instr_report> out;
  const u64 chunk = 1 << 14;
  const bool avx512 = info.avx512_bf16 && info.avx512f && info.os_zmm;
  if (avx512) {
    tally t;
    vdpbf16ps_batch(probe_lanes(), probe_lane_base, t);
    t.add(over_chunks(o.count, chunk, o.threads,
                      [&](u64 b, u64 e, tally &p) { vdpbf16ps_batch(stream(b, e, 2, o.seed), b, p); }));
    out.push_back(finish("VDPBF16PS", "AVX512_BF16", u64(cpu::dot_probe_count), o.count, t));
    const std::vector<u32> cp = convert_probes();
    auto conv_stream = [&](u64 b, u64 e) {
      std::vector<u32> x;
      for (u64 i = b; i < e; ++i)
        x.push_back(convert_input(i, o.seed));
      return x;
    };
    tally c1, c2;
    vcvtneps2bf16_batch(cp, probe_lane_base, c1);
    c1.add(over_chunks(o.count, chunk, o.threads,
                       [&](u64 b, u64 e, tally &p) { vcvtneps2bf16_batch(conv_stream(b, e), b, p); }));
    out.push_back(finish("VCVTNEPS2BF16", "AVX512_BF16", cp.size(), o.count, c1));
    vcvtne2ps2bf16_batch(cp, probe_lane_base, c2);
    c2.add(over_chunks(o.count, chunk, o.threads,
                       [&](u64 b, u64 e, tally &p) { vcvtne2ps2bf16_batch(conv_stream(b, e), b, p); }));
    out.push_back(finish("VCVTNE2PS2BF16", "AVX512_BF16", cp.size(), o.count, c2));
  } else {
    for (const char *n : {"VDPBF16PS", "VCVTNEPS2BF16", "VCVTNE2PS2BF16"})
      out.push_back(
          skipped(n, "AVX512_BF16",
                  info.avx512_bf16 ? "the OS has not enabled the AVX-512 state (XCR0)" : "not on this CPU"));
  }
  if (info.amx_bf16 && info.amx_tile && info.os_amx && cpu_probe::request_amx()) {
    tally t;
    tdpbf16ps_probes(probe_lane_base, t);
    t.add(over_chunks(o.count, 256 * 64, o.threads,
                      [&](u64 b, u64 e, tally &p) { tdpbf16ps_stream(b, e, o.seed, p); }));
    out.push_back(finish("TDPBF16PS", "AMX-BF16", u64(cpu::dot_probe_count), o.count, t));
  } else {
    out.push_back(skipped("TDPBF16PS", "AMX-BF16",
                          info.amx_bf16 ? "the OS refused the AMX tile state" : "not on this CPU"));
  }
  out.push_back(skipped(
      "VCVTNEPS2BF16 (VEX), VBCSTNEBF162PS, VCVTNE[EO]BF162PS, VCVTNE[EO]PH2PS", "AVX-NE-CONVERT",
      info.avx_ne_convert ? "checked by --save DIR only (it records them and compares)" : "not on this CPU"));
  return out;
}

std::string cpu_line(const cpu_probe::cpu_info &c) {
  std::ostringstream s;
  s << c.vendor << " family " << hex(c.family, 2) << " model " << hex(c.model, 2) << " stepping "
    << c.stepping;
  if (!c.brand.empty()) s << " (" << c.brand << ')';
  return s.str();
}

void print_text(const cpu_probe::cpu_info &c, const std::vector<instr_report> &rs, const probe_cli &o) {
  std::cout << "cpu: " << cpu_line(c) << '\n'
            << "cpuid: avx512f " << c.avx512f << ", avx512vl " << c.avx512vl << ", avx512_bf16 "
            << c.avx512_bf16 << ", amx_tile " << c.amx_tile << ", amx_bf16 " << c.amx_bf16
            << ", avx_ne_convert " << c.avx_ne_convert << "; os state: zmm " << c.os_zmm << ", amx "
            << c.os_amx << '\n'
            << "lanes per instruction: " << o.count << " random (seed " << o.seed << ") + the probes\n";
  for (const instr_report &r : rs) {
    if (!r.ran) {
      std::cout << r.name << " [" << r.isa << "]: skipped, " << r.skipped << '\n';
      continue;
    }
    std::cout << r.name << " [" << r.isa << "]: " << r.probes << " probes + " << r.lanes << " lanes, "
              << r.mismatches << " mismatches\n";
    if (r.mismatches == 0) continue;
    const mismatch &m = r.first;
    std::cout << "  first mismatch: "
              << (m.lane >= probe_lane_base ? "probe " + std::to_string(m.lane - probe_lane_base)
                                            : "lane " + std::to_string(m.lane))
              << ": " << m.inputs << "\n  cpu   " << hex(m.cpu, m.width / 4) << "\n  model "
              << hex(m.model, m.width / 4) << '\n';
    for (const std::string &l : m.trace)
      std::cout << "    " << l << '\n';
  }
}

void print_json(const cpu_probe::cpu_info &c, const std::vector<instr_report> &rs, const probe_cli &o,
                const char *verdict) {
  io::json_writer w(std::cout);
  w.begin_object();
  w.key("cpu").begin_object();
  w.kv("vendor", c.vendor)
      .kv("brand", c.brand)
      .kv("family", c.family)
      .kv("model", c.model)
      .kv("stepping", c.stepping);
  w.end_object();
  w.key("cpuid").begin_object();
  w.kv("avx512f", c.avx512f)
      .kv("avx512vl", c.avx512vl)
      .kv("avx512_bf16", c.avx512_bf16)
      .kv("amx_tile", c.amx_tile);
  w.kv("amx_bf16", c.amx_bf16)
      .kv("avx_ne_convert", c.avx_ne_convert)
      .kv("os_zmm", c.os_zmm)
      .kv("os_amx", c.os_amx);
  w.end_object();
  w.kv("count", o.count).kv("seed", o.seed);
  w.key("instructions").begin_array();
  for (const instr_report &r : rs) {
    w.begin_object().kv("name", r.name).kv("isa", r.isa).kv("ran", r.ran);
    if (!r.ran) {
      w.kv("skipped", r.skipped).end_object();
      continue;
    }
    w.kv("probes", r.probes).kv("lanes", r.lanes).kv("mismatches", r.mismatches);
    if (r.mismatches != 0) {
      const mismatch &m = r.first;
      w.key("first_mismatch").begin_object();
      w.kv("probe", m.lane >= probe_lane_base)
          .kv("index", m.lane >= probe_lane_base ? m.lane - probe_lane_base : m.lane);
      w.kv("inputs", m.inputs).kv("cpu", hex(m.cpu, m.width / 4)).kv("model", hex(m.model, m.width / 4));
      w.key("trace").begin_array();
      for (const std::string &l : m.trace)
        w.value(l);
      w.end_array().end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.kv("result", verdict);
  w.end_object();
}

// No AVX512_BF16 here: says so and exits 77 (CTest: skipped). `what` adds what was not done.
[[noreturn]] void exit_absent(const cpu_probe::cpu_info &info, const char *what) {
  std::fprintf(stderr,
               "bf16emu: this CPU lacks AVX512_BF16 (cpuid leaf 7 subleaf 1: EAX = %s, bit 5 = %d; %s%s)%s\n",
               hex(info.leaf7_1_eax, 0).c_str(), info.avx512_bf16 ? 1 : 0,
               info.x86_64 ? cpu_line(info).c_str() : "not an x86-64 CPU",
               info.avx512_bf16 ? "; the OS has not enabled the AVX-512 state" : "", what);
  std::exit(77);
}

// ---- --save: the real instructions' outputs under three MXCSR values (io/cpu_record.hpp) --------
// Runs fn() once under each MXCSR of io::record_mxcsr, giving the results of each run.
template <class Fn> auto under_each_mxcsr(Fn fn) {
  std::array<decltype(fn()), 3> r;
  for (int j = 0; j < 3; ++j) {
    const u32 old = cpu_probe::swap_mxcsr(io::record_mxcsr[j]);
    r[std::size_t(j)] = fn();
    cpu_probe::swap_mxcsr(old);
  }
  return r;
}

io::record_table record_vdpbf16ps(u64 n, u64 seed) {
  std::vector<cpu::lane_inputs> lanes = probe_lanes();
  const std::vector<cpu::lane_inputs> more = stream(0, n, 2, seed);
  lanes.insert(lanes.end(), more.begin(), more.end());
  const auto out = under_each_mxcsr([&] { return vdpbf16ps_cpu(lanes); });
  io::record_table t{io::recorded::vdpbf16ps, {}, {}};
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const cpu::lane_inputs &l = lanes[i];
    t.in.push_back({l.a[0], l.a[1], l.b[0], l.b[1], l.c});
    t.out.push_back({out[0][i], out[1][i], out[2][i]});
  }
  return t;
}

// VCVTNEPS2BF16 with a VEX encoding (AVX-NE-CONVERT), 8 values per instruction.
std::vector<u16> vcvtneps2bf16_vex_cpu(const std::vector<u32> &x) {
  std::vector<u32> in(x);
  in.resize((x.size() + 7) / 8 * 8);
  std::vector<u16> out(in.size());
  for (std::size_t i = 0; i < in.size(); i += 8)
    cpu_probe::run_vcvtneps2bf16_vex(in.data() + i, out.data() + i);
  out.resize(x.size());
  return out;
}

io::record_table record_convert(io::recorded what, u64 n, u64 seed) {
  std::vector<u32> x = convert_probes();
  for (u64 i = 0; i < n; ++i)
    x.push_back(convert_input(i, seed));
  const auto out = under_each_mxcsr([&] {
    if (what == io::recorded::vcvtneps2bf16) return vcvtneps2bf16_cpu(x);
    return what == io::recorded::vcvtne2ps2bf16 ? vcvtne2ps2bf16_cpu(x) : vcvtneps2bf16_vex_cpu(x);
  });
  io::record_table t{what, {}, {}};
  for (std::size_t i = 0; i < x.size(); ++i) {
    t.in.push_back({x[i]});
    t.out.push_back({out[0][i], out[1][i], out[2][i]});
  }
  return t;
}

// TDPBF16PS: the random tiles of lanes [0, n) (n rounded up to whole tiles), one line per element.
io::record_table record_tdpbf16ps(u64 n, u64 seed) {
  io::record_table t{io::recorded::tdpbf16ps, {}, {}};
  for (u64 base = 0; base < n; base += 256) {
    const amx_tile x = make_tile(base, seed);
    const auto real = under_each_mxcsr([&] {
      std::array<u32, 256> c;
      std::copy(&x.c[0][0], &x.c[0][0] + 256, c.begin());
      cpu_probe::run_tdpbf16ps(&x.a[0][0], &x.b[0][0], c.data());
      return c;
    });
    for (int j = 0; j < 256; ++j) {
      u16 col[2 * amx_pairs];
      column(x.b, j % 16, col);
      std::vector<u32> in(x.a[j / 16], x.a[j / 16] + 2 * amx_pairs);
      in.insert(in.end(), col, col + 2 * amx_pairs);
      in.push_back(x.c[j / 16][j % 16]);
      t.in.push_back(std::move(in));
      t.out.push_back({real[0][std::size_t(j)], real[1][std::size_t(j)], real[2][std::size_t(j)]});
    }
  }
  return t;
}

// An AVX-NE-CONVERT load on every 16-bit pattern, each once: the even (odd) loads convert
// elements 0, 2, ... (1, 3, ...) of 16 consecutive patterns, the broadcasts one pattern each.
io::record_table record_ne_load(io::recorded what, cpu_probe::ne_load op) {
  using cpu_probe::ne_load;
  const bool bcst = op == ne_load::bcst_bf16 || op == ne_load::bcst_fp16;
  const u32 odd = op == ne_load::odd_bf16 || op == ne_load::odd_fp16 ? 1 : 0;
  std::vector<u16> all(65536);
  for (u32 i = 0; i < 65536; ++i)
    all[i] = u16(i);
  std::vector<u32> converted; // the patterns, in the order of the results
  for (u32 i = 0; i < 65536; ++i)
    if (bcst || i % 2 == odd) converted.push_back(i);
  const auto out = under_each_mxcsr([&] {
    std::vector<u32> r;
    u32 o8[8];
    for (std::size_t base = 0; base < all.size(); base += bcst ? 1 : 16) {
      cpu_probe::run_ne_load(op, all.data() + base, o8);
      r.insert(r.end(), o8, o8 + (bcst ? 1 : 8));
    }
    return r;
  });
  io::record_table t{what, {}, {}};
  for (std::size_t i = 0; i < converted.size(); ++i) {
    t.in.push_back({converted[i]});
    t.out.push_back({out[0][i], out[1][i], out[2][i]});
  }
  return t;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string record_readme(const cpu_probe::cpu_info &c, const std::vector<io::record_table> &tables,
                          const probe_cli &o, u64 n, bool avx512, bool amx, bool ne) {
  std::ostringstream r;
  r << "# Real-CPU BF16 outputs (" << (c.brand.empty() ? c.vendor : c.brand)
    << "), recorded by bf16emu cpu-probe --save\n\n"
    << "- CPU: " << cpu_line(c) << "\n"
    << "- cpuid: avx512f " << c.avx512f << ", avx512vl " << c.avx512vl << ", avx512_bf16 " << c.avx512_bf16
    << ", amx_tile " << c.amx_tile << ", amx_bf16 " << c.amx_bf16 << ", avx_ne_convert " << c.avx_ne_convert
    << "; OS state: zmm " << c.os_zmm << ", amx " << c.os_amx << "\n"
    << "- Recorded " << utc_now() << " by bf16emu " << BF16EMU_VERSION
    << ": `bf16emu cpu-probe --save DIR --count " << n << " --seed " << o.seed << "`\n"
    << "- MXCSR: every input ran three times, under 0x1f80 (the default), 0x7f80 (round toward zero) and\n"
    << "  0x9fc0 (FTZ and DAZ), in that order; the result columns follow that order.\n\n"
    << "## Files\n\n"
    << "One input per line, hex without 0x (bf16 4 digits, fp32 8), then the three results; a result\n"
    << "equal to the one before it is written `=` (the format of bf16emu's tests/cpu/data/README.md).\n\n";
  for (const io::record_table &t : tables) {
    const io::record_layout &l = io::layout_of(t.what);
    r << "- `" << l.file << "`: " << l.instruction << "; " << t.in.size() << " lines: `" << l.columns
      << "` then the results.";
    if (t.what == io::recorded::vdpbf16ps)
      r << " The " << cpu::dot_probe_count << " probe lanes of bf16emu's cpu::dot_probes first, then " << n
        << " generated lanes.";
    if (t.what == io::recorded::vcvtneps2bf16 || t.what == io::recorded::vcvtne2ps2bf16 ||
        t.what == io::recorded::vcvtneps2bf16_vex)
      r << " Probe values first, then " << n << " generated values (frequent rounding ties).";
    if (io::layout_of(t.what).wide_from == 1)
      r << " Every 16-bit pattern this instruction converts, once (the even or odd elements of 16 in a row).";
    if (t.what == io::recorded::tdpbf16ps)
      r << " One 16 x 16 tile per 256 lines (A 16 x 8 bf16, B 8 x 16, 4 pairs), element by element:"
        << " a0..a7 the row of A, b0..b7 the column of B in k order, c the accumulator.";
    r << "\n";
  }
  std::string missing;
  if (!avx512) missing += " AVX512_BF16 (not on this CPU, or the OS has not enabled the AVX-512 state);";
  if (!amx)
    missing += std::string(" TDPBF16PS (") +
               (c.amx_bf16 ? "the OS refused the AMX tile state" : "no AMX-BF16") + ");";
  if (!ne) missing += " AVX-NE-CONVERT (not on this CPU);";
  if (!missing.empty()) r << "\nNot recorded here:" << missing << "\n";
  r << "\nCheck with bf16emu's `tests/cpu/check_recorded.cpp` (`cpu_recorded_check DIR`): every result\n"
    << "against the models, per MXCSR column. To contribute, see docs/cpu-bf16.md.\n";
  return r.str();
}

void save(const probe_cli &o) {
  io::rethrow_as<bad_input>([&] { io::check_record_dir(o.save, o.force); });
  const cpu_probe::cpu_info info = cpu_probe::detect();
  const bool avx512 = info.avx512_bf16 && info.avx512f && info.os_zmm;
  const bool amx = info.amx_bf16 && info.amx_tile && info.os_amx && cpu_probe::request_amx();
  const bool ne = info.avx_ne_convert && info.os_ymm;
  if (!avx512 && !amx && !ne)
    exit_absent(info, "; no AMX-BF16 or AVX-NE-CONVERT either: nothing recorded, nothing written");
  const u64 n = o.count_given ? o.count : 32768;
  std::vector<io::record_table> tables;
  if (avx512) {
    tables.push_back(record_vdpbf16ps(n, o.seed));
    tables.push_back(record_convert(io::recorded::vcvtneps2bf16, n, o.seed));
    tables.push_back(record_convert(io::recorded::vcvtne2ps2bf16, n, o.seed));
  }
  if (amx) tables.push_back(record_tdpbf16ps(n, o.seed));
  if (ne) {
    using cpu_probe::ne_load;
    tables.push_back(record_convert(io::recorded::vcvtneps2bf16_vex, n, o.seed));
    tables.push_back(record_ne_load(io::recorded::vcvtneebf162ps, ne_load::even_bf16));
    tables.push_back(record_ne_load(io::recorded::vcvtneobf162ps, ne_load::odd_bf16));
    tables.push_back(record_ne_load(io::recorded::vbcstnebf162ps, ne_load::bcst_bf16));
    tables.push_back(record_ne_load(io::recorded::vcvtneeph2ps, ne_load::even_fp16));
    tables.push_back(record_ne_load(io::recorded::vcvtneoph2ps, ne_load::odd_fp16));
    tables.push_back(record_ne_load(io::recorded::vbcstnesh2ps, ne_load::bcst_fp16));
  }
  const std::string readme = record_readme(info, tables, o, n, avx512, amx, ne);
  const std::vector<std::string> written =
      io::rethrow_as<bad_input>([&] { return io::save_records(o.save, tables, readme, o.force); });
  u64 mismatches = 0;
  std::cout << "cpu: " << cpu_line(info) << '\n';
  for (const io::record_table &t : tables) {
    const io::record_check c = io::check_record(t);
    mismatches += u64(c.mismatches[0] + c.mismatches[1] + c.mismatches[2]);
    std::cout << o.save << '/' << io::layout_of(t.what).file << ": " << c.lines << " lines x 3 MXCSR, "
              << c.mismatches[0] << " / " << c.mismatches[1] << " / " << c.mismatches[2]
              << " mismatches with the model\n";
    for (const std::string &f : c.first)
      std::cout << "  " << f << '\n';
  }
  std::cout << o.save << "/README.md: the CPU and how the data were recorded\n";
  std::cout.flush();
  if (mismatches != 0) std::exit(1);
}

void run(const probe_cli &o) {
  if (!o.save.empty()) return save(o);
  if (o.list) {
    io::print_cpu_models();
    return;
  }
  const cpu_probe::cpu_info info = cpu_probe::detect();
  const std::vector<instr_report> rs = run_all(info, o);
  u64 mismatches = 0;
  for (const instr_report &r : rs)
    mismatches += r.mismatches;
  const bool absent = !(info.avx512_bf16 && info.avx512f && info.os_zmm);
  const char *verdict = mismatches != 0 ? "mismatch" : absent ? "skipped" : "pass";
  if (o.json)
    print_json(info, rs, o, verdict);
  else
    print_text(info, rs, o);
  std::cout.flush();
  if (mismatches != 0) std::exit(1);
  if (absent) exit_absent(info, "");
}

void register_cpu_probe(CLI::App &app) {
  auto o = std::make_shared<probe_cli>();
  CLI::App *sub = app.add_subcommand(
      "cpu-probe", "check the CPU BF16 models bit for bit against this CPU's instructions (VDPBF16PS, ...)");
  add_count(sub, "--count", o->count, "random lanes per instruction (default 1000000)", 1, u64{1} << 40);
  add_count(sub, "--seed", o->seed, "seed of the random lanes (default 1)");
  add_count(sub, "--threads", o->threads, "worker threads, 1..1024 (default: all cores)", 1, 1024);
  sub->add_flag("--json", o->json, "machine-readable output");
  sub->add_flag("--list", o->list, "list the CPU models (names for mma --arch) and exit");
  sub->add_option(
      "--save", o->save,
      "record this CPU's outputs (VDPBF16PS, VCVTNEPS2BF16, VCVTNE2PS2BF16; TDPBF16PS where AMX; the "
      "AVX-NE-CONVERT conversions where present) "
      "under MXCSR 0x1f80, 0x7f80, 0x9fc0 into DIR, in the format of tests/cpu/data, with a "
      "README.md; --count lanes (default 32768 here)");
  sub->add_flag("--force", o->force, "with --save: write into a DIR that is not empty (same names replaced)");
  sub->footer(
      "Exit status: 0 all lanes equal, 1 a mismatch, 77 this CPU lacks AVX512_BF16 (skipped; --save writes\n"
      "nothing), 2 bad input (for --save also a DIR that is not empty, without --force).\n"
      "Examples:\n  bf16emu cpu-probe --count 1000000 --json\n"
      "  bf16emu cpu-probe --save zen4-data      # then send zen4-data/ (docs/cpu-bf16.md, contributing)");
  sub->callback([o, sub] {
    o->count_given = sub->count("--count") > 0;
    if (o->force && o->save.empty()) throw bad_input("--force goes with --save DIR");
    if (!o->save.empty() && (o->json || o->list))
      throw bad_input(std::string(o->json ? "--json" : "--list") + " does not go with --save");
    run(*o);
  });
}

} // namespace

BF16EMU_COMMAND(35, register_cpu_probe);

} // namespace bf16emu::cli
