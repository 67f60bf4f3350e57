// bf16emu-gpu: runs the CUDA twin's kernels and compares them bit for bit with the CPU model.
//
//   bf16emu-gpu probe     [--instr mma|wgmma|tcgen05] [--format F] [--b-format F] [--out fp32|fp16|fp64]
//                         [--c-format F] [--shape-k 4|8|16|32] [--kind f8f6f4|mxf8f6f4|mxf4|mxf4nvf4]
//                         [--scale-format ue8m0|ue4m3] [--scale-vec 32|16] [--k K] [--arch A]
//                         [--input FILE | --random probes|normal|bits|cancel --count N --seed S]
//                         [--print] [--no-compare] [--save DIR --name NAME --save-lines N] [--self-test]
//                         [--kernel NAME (instead of the formats)] [--names (the kernels this device runs)]
//   bf16emu-gpu probe --list [kernel options]   (no GPU: the kernel table and its checks)
//   bf16emu-gpu gemm      [--m M --n N --k K] [--seed S] [--repeats R] [--save DIR] [--save-lines N]
//   bf16emu-gpu attention [--n N --d 64|128 --heads H] [--causal] [--stabilized --beta B]
//                         [--scenario random|sink | --q Q.npy --k K.npy --v V.npy] [--seed S]
//                         [--fast-exp] [--repeats R]
//                         [--no-compare] [--save DIR]
//   bf16emu-gpu delta     [--n N --d 64|128 --heads H] [--seed S] [--save DIR]
//   bf16emu-gpu dense     [--size N] [--repeats R]        (cuBLAS bf16 rate of the device)
//   bf16emu-gpu info
//
// Every subcommand ends with one line "RESULT <what> compared=<n> mismatches=<m> ..." on stdout
// (probe with --print: on stderr, stdout then holds only the D lines, as `bf16emu mma` prints).
// Exit status: 0 all equal, 1 mismatches, 2 bad usage or input, 3 CUDA error,
// 77 no CUDA device (CTest: SKIP_RETURN_CODE 77).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bf16emu/attention/scenario.hpp"
#include "bf16emu/core.hpp"
#include "host_model.hpp"
#include "io/arch_name.hpp"
#include "io/files.hpp"
#include "io/names.hpp"
#include "io/npy.hpp"
#include "kernels.hpp"
#include "lines.hpp"
#include "probe_table.hpp"
#include "vectors.hpp"

namespace {

using namespace bf16emu;
using namespace bf16emu::gpu;

constexpr int kExitMismatch = 1, kExitUsage = 2, kExitCuda = 3, kExitSkip = 77;

struct options {
  std::map<std::string, std::string> kv;
  std::set<std::string> flags;
  std::string get(const std::string &k, const std::string &def = "") const {
    const auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  long long num(const std::string &k, long long def) const {
    const auto it = kv.find(k);
    return it == kv.end() ? def : std::strtoll(it->second.c_str(), nullptr, 0);
  }
  double real(const std::string &k, double def) const {
    const auto it = kv.find(k);
    return it == kv.end() ? def : std::strtod(it->second.c_str(), nullptr);
  }
  bool has(const std::string &f) const { return flags.count(f) != 0; }
};

const std::set<std::string> kFlags = {"--causal",    "--stabilized", "--fast-exp", "--print", "--no-compare",
                                      "--self-test", "--no-notes",   "--list",     "--names"};

[[noreturn]] void usage_error(const std::string &msg) {
  std::fprintf(stderr, "bf16emu-gpu: %s (see the header of cuda/runner.cpp or cuda/README.md)\n",
               msg.c_str());
  std::exit(kExitUsage);
}

options parse(int argc, char **argv) {
  options o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0) usage_error("unexpected argument '" + a + "'");
    if (kFlags.count(a))
      o.flags.insert(a);
    else if (i + 1 < argc)
      o.kv[a] = argv[++i];
    else
      usage_error(a + " needs a value");
  }
  return o;
}

[[noreturn]] void cuda_fail(const char *what, int err) {
  std::fprintf(stderr, "bf16emu-gpu: %s: CUDA error %d (%s)\n", what, err, error_string(err));
  std::exit(kExitCuda);
}

void ensure_dir(const std::string &dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) usage_error("cannot create directory " + dir + ": " + ec.message());
}

// The model's arch as printed in RESULT lines and .vec headers; empty when there is none.
const char *arch_name(const std::optional<tc::arch> &arch) { return arch ? tc::to_string(*arch) : ""; }

std::vector<std::uint16_t> bf16_bits(const std::vector<double> &x) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = std::uint16_t(attention::as_bf16(x[i]).bits);
  return out;
}

// ------------------------------------------------------------------------------------------------
// probe

struct probe_state {
  device_info dev;
  std::optional<tc::arch> arch;
  const probe_kernel *kernel = nullptr;
  bool compare = true, print = false;
  kernel_model model;
  std::size_t compared = 0, mismatches = 0, total = 0;
  bool traced = false;
  std::ostream *report = &std::cout;
  // What --save keeps: the first `save_lines` lines and every mismatching line (up to 65536).
  bool save = false;
  std::size_t save_lines = 0;
  vec_set saved;
  std::vector<std::uint64_t> saved_gpu;
};

void keep_line(probe_state &st, const vec_set &v, std::size_t n, std::uint64_t gpu) {
  const std::size_t K = std::size_t(v.k);
  st.saved.a.insert(st.saved.a.end(), v.a.begin() + std::ptrdiff_t(n * K),
                    v.a.begin() + std::ptrdiff_t((n + 1) * K));
  st.saved.b.insert(st.saved.b.end(), v.b.begin() + std::ptrdiff_t(n * K),
                    v.b.begin() + std::ptrdiff_t((n + 1) * K));
  st.saved.c.push_back(v.c[n]);
  const std::size_t S = std::size_t(v.scales()); // block-scaled: the line's scale factors
  st.saved.sa.insert(st.saved.sa.end(), v.sa.begin() + std::ptrdiff_t(n * S),
                     v.sa.begin() + std::ptrdiff_t((n + 1) * S));
  st.saved.sb.insert(st.saved.sb.end(), v.sb.begin() + std::ptrdiff_t(n * S),
                     v.sb.begin() + std::ptrdiff_t((n + 1) * S));
  st.saved.notes.push_back(n < v.notes.size() ? v.notes[n] : std::string());
  st.saved_gpu.push_back(gpu);
}

std::string cc_name(const device_info &dev) {
  return "sm_" + std::to_string(dev.cc_major * 10 + dev.cc_minor);
}

void run_probe_chunk(probe_state &st, const vec_set &v) {
  if (v.lines() == 0) return;
  const probe_kernel &p = *st.kernel;
  if (!kernel_supported(p, v.k, st.dev.cc_major, st.dev.cc_minor))
    usage_error("this device (" + cc_name(st.dev) + ") or this build cannot run " + p.ptx + " (" +
                kernel_ccs(p) + ") with k " + std::to_string(v.k) + " (a multiple of " + std::to_string(p.k) +
                ")");
  std::vector<std::uint64_t> d;
  if (const int err = run_kernel(p, v, d)) cuda_fail("probe kernel", err);
  if (st.print)
    for (std::uint64_t x : d)
      std::cout << hex(v.out, x) << '\n';
  std::vector<std::uint64_t> ref;
  if (st.compare) model_kernel_lines(st.model, v, ref);
  for (std::size_t n = 0; n < v.lines(); ++n) {
    const bool bad = st.compare && ref[n] != d[n];
    if (st.compare) ++st.compared;
    if (bad && ++st.mismatches && !st.traced) {
      st.traced = true;
      std::ostream &os = *st.report;
      os << "# first mismatch: line " << st.total + n + 1
         << (v.notes.size() > n && !v.notes[n].empty() ? " (" + v.notes[n] + ")" : "") << "\n#   input: ";
      vec_set one = v;
      one.a.assign(v.a.begin() + std::ptrdiff_t(n * v.k), v.a.begin() + std::ptrdiff_t((n + 1) * v.k));
      one.b.assign(v.b.begin() + std::ptrdiff_t(n * v.k), v.b.begin() + std::ptrdiff_t((n + 1) * v.k));
      one.c.assign(1, v.c[n]), one.notes.assign(1, "");
      const std::size_t S = std::size_t(v.scales());
      one.sa.assign(v.sa.begin() + std::ptrdiff_t(n * S), v.sa.begin() + std::ptrdiff_t((n + 1) * S));
      one.sb.assign(v.sb.begin() + std::ptrdiff_t(n * S), v.sb.begin() + std::ptrdiff_t((n + 1) * S));
      write_lines(os, one, false);
      os << "#   GPU " << hex(v.out, d[n]) << "  CPU model " << hex(v.out, ref[n]) << '\n';
      trace_kernel_line(os, st.model, one, 0);
    }
    if (st.save && ((st.total + n < st.save_lines) || (bad && st.saved.lines() < st.save_lines + 65536)))
      keep_line(st, v, n, d[n]);
  }
  st.total += v.lines();
}

void save_probe(const probe_state &st, const std::string &dir, const std::string &name,
                const vec_set &proto) {
  ensure_dir(dir);
  const std::string base = dir + "/" + name;
  std::ofstream vec(base + ".vec"), out(base + ".out");
  vec << "# bf16emu-gpu probe on " << st.dev.name << " (sm_" << st.dev.cc_major << st.dev.cc_minor
      << ", driver " << st.dev.driver_version << ", runtime " << st.dev.runtime_version
      << "): " << st.kernel->ptx << '\n';
  vec << probe_header(*st.kernel, arch_name(st.arch), proto.k) << '\n';
  vec_set s = st.saved;
  s.in = proto.in, s.in_b = proto.in_b, s.out = proto.out, s.k = proto.k;
  s.scale = proto.scale, s.vec = proto.vec;
  write_lines(vec, s, true);
  out << "# GPU D, one per line of " << name << ".vec\n";
  for (std::uint64_t x : st.saved_gpu)
    out << hex(proto.out, x) << '\n';
  if (!vec || !out) usage_error("cannot write " + base + ".vec/.out");
}

// The probe options of `bf16emu mma` (--format is --a-format there).
probe_request probe_options(const options &o) {
  probe_request r;
  r.name = o.get("--kernel");
  r.instr = o.get("--instr"), r.kind = o.get("--kind"), r.a = o.get("--format"), r.b = o.get("--b-format");
  r.c = o.get("--c-format"), r.out = o.get("--out"), r.scale_format = o.get("--scale-format");
  r.scale_vec = unsigned(o.num("--scale-vec", 0));
  r.shape_k = int(o.num("--shape-k", 0));
  if (r.shape_k < 0) usage_error("bad --shape-k");
  return r;
}

bool selects_kernel(const options &o) {
  for (const char *k : {"--kernel", "--instr", "--kind", "--format", "--b-format", "--c-format", "--out",
                        "--scale-format", "--scale-vec", "--shape-k"})
    if (o.kv.count(k)) return true;
  return false;
}

const std::set<std::string> kProbeOptions = {
    "--kernel",       "--instr",     "--kind",    "--format", "--b-format",  "--c-format", "--out",
    "--scale-format", "--scale-vec", "--shape-k", "--k",      "--arch",      "--input",    "--random",
    "--count",        "--seed",      "--save",    "--name",   "--save-lines"};

void check_probe_options(const options &o) {
  for (const auto &kv : o.kv)
    if (!kProbeOptions.count(kv.first)) usage_error("probe: unknown option " + io::shorten(kv.first));
  for (const std::string &f : o.flags)
    if (f != "--print" && f != "--no-compare" && f != "--self-test" && f != "--list" && f != "--names")
      usage_error("probe: unknown flag " + f);
  if (o.kv.count("--k") && o.num("--k", 0) <= 0) usage_error("bad --k '" + io::shorten(o.get("--k")) + "'");
}

// The compute capabilities --list checks each kernel's device rule against.
constexpr int kListCcs[] = {75, 80, 86, 89, 90, 100, 103, 110, 120, 121};

// --list: the kernel table (or the kernel the options select) and, for each kernel, checks that
// need no GPU: the options that name it select it; the kernel code's k and device rule agree
// with the table; the library has a preset for it on each device it runs on whose instruction
// (and k) is the kernel's; the probe and random vectors of its formats run through that model.
int cmd_probe_list(const options &o) {
  std::vector<const probe_kernel *> sel;
  std::string why;
  if (selects_kernel(o)) {
    const probe_kernel *p = find_probe_kernel(probe_options(o), why);
    if (!p) usage_error(why);
    sel.push_back(p);
  } else {
    for (const probe_kernel &p : probe_kernels())
      sel.push_back(&p);
  }
  std::size_t errors = 0, checked = 0, model_lines_run = 0;
  auto fail = [&](const probe_kernel &p, const std::string &msg) {
    ++errors;
    std::printf("ERROR %s: %s\n", p.name, msg.c_str());
  };
  std::printf("%-28s %-6s %-7s %-10s %-5s %3s %-8s %-28s %s\n", "kernel", "instr", "kind", "in", "out", "k",
              "runs on", "model presets", "instruction");
  for (const probe_kernel *pp : sel) {
    const probe_kernel &p = *pp;
    // 1. The options naming the kernel select it.
    const probe_kernel *back = find_probe_kernel(kernel_request(p), why);
    if (back != &p) fail(p, "its options select " + std::string(back ? back->name : why));
    // 2. The kernel's instruction k.
    const int kk = kernel_instr_k(p);
    if (p.sop != scaled_op::none && scaled_vec(p.sop) != kernel_vec(p))
      fail(p, "kernel vec " + std::to_string(scaled_vec(p.sop)) + ", table vec " +
                  std::to_string(kernel_vec(p)));
    if (kk != p.k) fail(p, "kernel k " + std::to_string(kk) + ", table k " + std::to_string(p.k));
    if (kernel_supported(p, p.k + 1, 9, 0) || kernel_supported(p, 0, 9, 0))
      fail(p, "accepts a K that is not a positive multiple of its k");
    // 3. Device rule; 4. model presets on the devices it runs on.
    std::string archs;
    for (int cc : kListCcs) {
      const bool want = kernel_runs_on(p, cc), have = kernel_supported(p, p.k, cc / 10, cc % 10);
      ++checked;
      if (want != have) fail(p, "device rule: cc " + std::to_string(cc) + (have ? " accepted" : " refused"));
      if (!have) continue;
      const std::optional<tc::arch> arch = arch_of(cc / 10, cc % 10);
      if (!arch) continue;
      const kernel_model pre = kernel_preset(p, *arch, why);
      if (!pre) continue; // the model leaves it open there: --list-arch says why
      archs += std::string(archs.empty() ? "" : ",") + tc::to_string(*arch);
      std::string want_ptx = p.ptx;
      if (p.kind == tc::instr_kind::wgmma) want_ptx.replace(want_ptx.find("m64n64"), 6, "m64n8");
      // The mixed-format presets name A and B as "*.*": the kernel's formats stand there.
      std::string pre_ptx = pre.ptx();
      if (const auto at = pre_ptx.find("*.*"); at != std::string::npos && p.sop != scaled_op::none)
        pre_ptx.replace(at, 3, std::string(io::name(p.a)) + "." + io::name(p.b));
      if (want_ptx != pre_ptx) fail(p, std::string("preset instruction ") + pre.ptx());
      // 5. The vectors of its formats through the model (no GPU): probes and 64 lines of each kind.
      for (gen_kind g : {gen_kind::probes, gen_kind::normal, gen_kind::bits, gen_kind::cancel}) {
        vec_set v = kernel_vectors(p, 2 * p.k);
        generate(v, g, 64, 1);
        if (v.lines() == 0) fail(p, "no vectors generated");
        std::vector<std::uint64_t> d;
        model_kernel_lines(pre, v, d, 1);
        if (d.size() != v.lines()) fail(p, "model returned " + std::to_string(d.size()) + " lines");
        model_lines_run += d.size();
      }
    }
    if (archs.empty() && p.cc_max >= 80) fail(p, "no model preset on any device that runs it");
    std::printf("%-28s %-6s %-7s %-10s %-5s %3d %-8s %-28s %s\n", p.name, tc::to_string(p.kind),
                *p.opt_kind ? p.opt_kind : "-", in_column(p).c_str(), io::name(p.out), p.k,
                kernel_ccs(p).c_str(), archs.c_str(), p.ptx);
  }
  std::printf("RESULT probe-list kernels=%zu device_rules_checked=%zu model_lines=%zu errors=%zu\n",
              sel.size(), checked, model_lines_run, errors);
  return errors ? kExitMismatch : 0;
}

int cmd_probe(const options &o, const device_info &dev, const std::optional<tc::arch> &arch) {
  probe_state st;
  st.dev = dev, st.arch = arch;
  st.compare = !o.has("--no-compare");
  st.print = o.has("--print") || (!o.kv.count("--random") && !o.has("--self-test"));
  st.report = st.print ? &std::cerr : &std::cout;
  st.save = o.kv.count("--save") != 0;
  st.save_lines = std::size_t(o.num("--save-lines", 4096));

  std::vector<const probe_kernel *> kernels;
  if (o.has("--self-test") || o.has("--names")) {
    // Every kernel the device runs and the model has a preset for on its arch.
    for (const probe_kernel &p : probe_kernels()) {
      std::string why;
      if (kernel_supported(p, p.k, dev.cc_major, dev.cc_minor) && (!arch || kernel_preset(p, *arch, why)))
        kernels.push_back(&p);
    }
  } else {
    std::string why;
    const probe_kernel *p = find_probe_kernel(probe_options(o), why);
    if (!p) usage_error(why);
    kernels.push_back(p);
  }
  if (o.has("--names")) { // the kernels --self-test runs here, one name a line (cuda/validate.sh)
    for (const probe_kernel *p : kernels)
      std::printf("%s\n", p->name);
    return 0;
  }
  int status = 0;
  for (const probe_kernel *kp : kernels) {
    const probe_kernel &p = *kp;
    st.kernel = kp, st.compared = st.mismatches = st.total = 0, st.traced = false;
    st.saved.clear(), st.saved_gpu.clear();
    vec_set v = kernel_vectors(p, int(o.num("--k", p.k)));
    std::string why;
    st.model = arch ? kernel_preset(p, *arch, why) : kernel_model{};
    if (st.compare && !st.model) usage_error(why + " (use --arch or --no-compare)");
    const std::string name = o.get("--name", p.name);
    if (o.has("--self-test")) {
      const gen_kind kinds[] = {gen_kind::probes, gen_kind::normal, gen_kind::bits, gen_kind::cancel};
      for (gen_kind g : kinds) {
        v.clear();
        generate(v, g, 4096, 1);
        run_probe_chunk(st, v);
      }
    } else if (o.kv.count("--random")) {
      gen_kind g;
      if (!parse_gen_kind(o.get("--random"), g)) usage_error("bad --random");
      const std::size_t count = g == gen_kind::probes ? 1 : std::size_t(o.num("--count", 1000000));
      const std::uint64_t seed = std::uint64_t(o.num("--seed", 1));
      const std::size_t chunk = std::size_t(1) << 18;
      for (std::size_t done = 0, ci = 0; done < count; done += chunk, ++ci) {
        v.clear();
        generate(v, g, std::min(chunk, count - done), seed * 1000003u + ci);
        run_probe_chunk(st, v);
      }
    } else {
      std::ifstream file;
      std::istream *in = &std::cin;
      if (o.kv.count("--input")) {
        file.open(o.get("--input"));
        if (!file) usage_error("cannot read " + io::shorten(o.get("--input")));
        in = &file;
      }
      std::string err;
      if (!read_lines(*in, v, err)) usage_error(err);
      run_probe_chunk(st, v);
    }
    if (st.save && st.saved.lines()) save_probe(st, o.get("--save"), name, v); // nothing kept: no files
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "RESULT probe %s instr=%s in=%s out=%s k=%d arch=%s lines=%zu compared=%zu mismatches=%zu\n",
        name.c_str(), tc::to_string(p.kind), in_column(p).c_str(), io::name(p.out), v.k, arch_name(arch),
        st.total, st.compared, st.mismatches);
    *st.report << buf;
    if (st.mismatches) status = kExitMismatch;
  }
  return status;
}

// ------------------------------------------------------------------------------------------------
// gemm

int cmd_gemm(const options &o, const device_info &dev, const std::optional<tc::arch> &arch) {
  const int M = int(o.num("--m", 256)), N = int(o.num("--n", 256)), K = int(o.num("--k", 1024));
  const std::uint64_t seed = std::uint64_t(o.num("--seed", 1));
  if (M <= 0 || N <= 0 || K <= 0 || M % 64 || N % 64 || K % 16)
    usage_error("gemm: M, N multiples of 64, K of 16");
  const auto ain = attention::scenario_random(1, 1, M, K, seed),
             bin = attention::scenario_random(1, 1, N, K, seed + 1);
  const std::vector<std::uint16_t> A = bf16_bits(ain.q), Bt = bf16_bits(bin.k);
  std::vector<float> D(std::size_t(M) * N);
  gemm_job job;
  job.m = M, job.n = N, job.k = K, job.a = A.data(), job.bt = Bt.data(), job.d = D.data();
  job.repeats = int(o.num("--repeats", 0));
  if (const int err = run_gemm(job)) cuda_fail("gemm kernel", err);
  std::size_t mismatches = 0, compared = 0;
  if (!o.has("--no-compare")) {
    std::vector<std::uint32_t> ref;
    std::string why;
    if (!model_gemm(*arch, M, N, K, A.data(), Bt.data(), ref, why)) usage_error(why);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ++compared;
      std::uint32_t g;
      std::memcpy(&g, &D[i], 4);
      if (g == ref[i]) continue;
      if (mismatches++ == 0) {
        const int m = int(i / N), n = int(i % N);
        std::cout << "# first mismatch: D[" << m << "][" << n << "]  GPU " << hex(format_id::fp32, g)
                  << "  CPU model " << hex(format_id::fp32, ref[i])
                  << "\n#   as a line (row of A, column of B, c = +0):\n# ";
        vec_set one;
        one.in = format_id::bf16, one.out = format_id::fp32, one.k = K;
        one.a.assign(A.begin() + std::ptrdiff_t(std::size_t(m) * K),
                     A.begin() + std::ptrdiff_t(std::size_t(m + 1) * K));
        one.b.assign(Bt.begin() + std::ptrdiff_t(std::size_t(n) * K),
                     Bt.begin() + std::ptrdiff_t(std::size_t(n + 1) * K));
        one.c.assign(1, 0);
        write_lines(std::cout, one, false);
        trace_gemm(std::cout, *arch, K, &A[std::size_t(m) * K], &Bt[std::size_t(n) * K]);
      }
    }
  }
  const std::string name = "gemm_" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  if (o.kv.count("--save")) {
    const std::string dir = o.get("--save");
    ensure_dir(dir);
    npy::write(dir + "/" + name + ".a.npy", npy::dtype::u16, {std::size_t(M), std::size_t(K)}, A.data());
    npy::write(dir + "/" + name + ".bt.npy", npy::dtype::u16, {std::size_t(N), std::size_t(K)}, Bt.data());
    npy::write(dir + "/" + name + ".d_gpu.npy", npy::dtype::f32, {std::size_t(M), std::size_t(N)}, D.data());
    // A compact set of elements as `bf16emu mma` lines (k = K) for tests/gpu_data.
    const std::size_t keep = std::min<std::size_t>(std::size_t(o.num("--save-lines", 0)), std::size_t(M) * N);
    if (keep) {
      std::ofstream vec(dir + "/" + name + ".vec"), out(dir + "/" + name + ".out");
      vec << "# bf16emu-gpu gemm on " << dev.name << ": elements D[m][n] of an " << M << "x" << N << "x" << K
          << " product (row of A, column of B, c = +0)\n";
      vec << "#! arch=" << arch_name(arch) << " instr=mma in=bf16 out=fp32 k=" << K << '\n';
      out << "# GPU D\n";
      vec_set v;
      v.in = format_id::bf16, v.out = format_id::fp32, v.k = K;
      for (std::size_t e = 0; e < keep; ++e) {
        const std::size_t i = (e * 7919) % (std::size_t(M) * N), m = i / N, n = i % N;
        v.a.insert(v.a.end(), A.begin() + std::ptrdiff_t(m * K), A.begin() + std::ptrdiff_t((m + 1) * K));
        v.b.insert(v.b.end(), Bt.begin() + std::ptrdiff_t(n * K), Bt.begin() + std::ptrdiff_t((n + 1) * K));
        v.c.push_back(0);
        std::uint32_t g;
        std::memcpy(&g, &D[i], 4);
        out << hex(format_id::fp32, g) << '\n';
      }
      write_lines(vec, v, false);
    }
  }
  std::printf("RESULT gemm %s arch=%s compared=%zu mismatches=%zu", name.c_str(), arch_name(arch), compared,
              mismatches);
  if (job.repeats > 0)
    std::printf(" ms=%.4f tflops=%.2f", job.ms, 2.0 * M * N * double(K) / (job.ms * 1e-3) / 1e12);
  std::printf("\n");
  return mismatches ? kExitMismatch : 0;
}

// ------------------------------------------------------------------------------------------------
// attention

// Distance in units in the last place between two BF16 patterns of finite values.
long ulp_distance(std::uint16_t a, std::uint16_t b) {
  auto key = [](std::uint16_t x) { return (x & 0x8000) ? -long(x & 0x7fff) : long(x); };
  return std::labs(key(a) - key(b));
}

int cmd_attention(const options &o, const device_info &dev, const std::optional<tc::arch> &arch) {
  attention_case c;
  c.heads = int(o.num("--heads", 1)), c.n = int(o.num("--n", 128)), c.d = int(o.num("--d", 64));
  c.causal = o.has("--causal"), c.stabilized = o.has("--stabilized"), c.beta = o.real("--beta", 2.0);
  const std::uint64_t seed = std::uint64_t(o.num("--seed", 1));
  std::string scen = o.get("--scenario", "random");
  std::vector<std::uint16_t> q, k, v;
  if (o.kv.count("--q")) {
    // BF16 bit patterns from .npy ('<u2'), shape [heads, n, d] or [n, d]; K and V alike.
    if (!o.kv.count("--k") || !o.kv.count("--v")) usage_error("--q needs --k and --v");
    const npy::array aq = npy::read(o.get("--q"), npy::expect(npy::dtype::u16));
    const npy::array ak = npy::read(o.get("--k"), npy::expect(npy::dtype::u16));
    const npy::array av = npy::read(o.get("--v"), npy::expect(npy::dtype::u16));
    if (aq.shape != ak.shape || aq.shape != av.shape || (aq.shape.size() != 2 && aq.shape.size() != 3))
      usage_error("--q/--k/--v: equal shapes [heads, n, d] or [n, d] required");
    const std::size_t r = aq.shape.size();
    c.heads = r == 3 ? int(aq.shape[0]) : 1, c.n = int(aq.shape[r - 2]), c.d = int(aq.shape[r - 1]);
    q = aq.u16, k = ak.u16, v = av.u16;
    scen = "npy";
  }
  if (c.n <= 0 || c.n % 64 || (c.d != 64 && c.d != 128) || c.heads <= 0)
    usage_error("attention: n multiple of 64, d 64 or 128");
  if (float(c.beta) != c.beta) usage_error("--beta must be exact in FP32");
  if (scen != "npy") {
    attention::attention_inputs in;
    if (scen == "random")
      in = attention::scenario_random(1, c.heads, c.n, c.d, seed);
    else if (scen == "sink")
      in = attention::scenario_sink(1, c.heads, c.n, c.d, seed, attention::sink_params{});
    else
      usage_error("--scenario is random or sink");
    q = bf16_bits(in.q), k = bf16_bits(in.k), v = bf16_bits(in.v);
  }
  c.q = q.data(), c.k = k.data(), c.v = v.data();
  const std::size_t total = std::size_t(c.heads) * c.n * c.d, rows = std::size_t(c.heads) * c.n;
  std::vector<std::uint16_t> og(total);
  std::vector<float> mg(rows), lg(rows);
  attention_job job;
  job.heads = c.heads, job.n = c.n, job.d = c.d, job.causal = c.causal, job.stabilized = c.stabilized;
  job.beta = float(c.beta), job.fast_exp = o.has("--fast-exp");
  job.q = q.data(), job.k = k.data(), job.v = v.data(), job.o = og.data(), job.row_m = mg.data(),
  job.row_l = lg.data();
  job.repeats = int(o.num("--repeats", 0));
  if (const int err = run_attention(job)) cuda_fail("attention kernel", err);

  char name[160];
  std::snprintf(name, sizeof name, "attn_%s_n%d_d%d_h%d_%s_%s%s", scen.c_str(), c.n, c.d, c.heads,
                c.causal ? "causal" : "full", c.stabilized ? "stab" : "std", job.fast_exp ? "_fastexp" : "");
  std::size_t compared = 0, mismatches = 0;
  long max_ulp = 0;
  std::size_t within1 = 0;
  if (!o.has("--no-compare")) {
    std::vector<std::uint16_t> ref;
    std::string why;
    if (!model_attention(*arch, c, ref, why)) usage_error(why);
    for (std::size_t i = 0; i < total; ++i) {
      ++compared;
      if (og[i] == ref[i]) continue;
      ++mismatches;
      const long u = ulp_distance(og[i], ref[i]);
      max_ulp = std::max(max_ulp, u);
      within1 += u <= 1;
      if (mismatches == 1 && !job.fast_exp) {
        const int h = int(i / (std::size_t(c.n) * c.d)), r = int(i / c.d % c.n), col = int(i % c.d);
        const std::size_t rr = std::size_t(h) * c.n + r;
        std::printf("# first mismatch: head %d O[%d][%d]  GPU %s  CPU twin %s  (GPU row m %s, l %s)\n", h, r,
                    col, hex(format_id::bf16, og[i]).c_str(), hex(format_id::bf16, ref[i]).c_str(),
                    hex(format_id::fp32, bf16emu::from_float(mg[rr]).bits).c_str(),
                    hex(format_id::fp32, bf16emu::from_float(lg[rr]).bits).c_str());
        std::printf("#   Q[%d]:", r);
        for (int t = 0; t < c.d; ++t)
          std::printf(" %s", hex(format_id::bf16, q[rr * c.d + t]).c_str());
        std::printf("\n");
        std::ostringstream os;
        trace_attention(os, *arch, c, h, r, col);
        std::fputs(os.str().c_str(), stdout);
      }
    }
  }
  if (o.kv.count("--save")) {
    const std::string dir = o.get("--save");
    ensure_dir(dir);
    const std::vector<std::size_t> shape = {std::size_t(c.heads), std::size_t(c.n), std::size_t(c.d)};
    const std::string base = dir + "/" + name;
    npy::write(base + ".q.npy", npy::dtype::u16, shape, q.data());
    npy::write(base + ".k.npy", npy::dtype::u16, shape, k.data());
    npy::write(base + ".v.npy", npy::dtype::u16, shape, v.data());
    npy::write(base + ".o_gpu.npy", npy::dtype::u16, shape, og.data());
    npy::write(base + ".m_gpu.npy", npy::dtype::f32, {std::size_t(c.heads), std::size_t(c.n)}, mg.data());
    npy::write(base + ".l_gpu.npy", npy::dtype::f32, {std::size_t(c.heads), std::size_t(c.n)}, lg.data());
  }
  std::printf("RESULT attention %s arch=%s compared=%zu mismatches=%zu", name, arch_name(arch), compared,
              mismatches);
  if (job.fast_exp)
    std::printf(" max_ulp=%ld within_1ulp=%zu (fast exp: not bit-exact by design)", max_ulp, within1);
  if (job.repeats > 0) {
    const double flops = 4.0 * double(c.n) * c.n * c.d * c.heads * (c.causal ? 0.5 : 1.0);
    std::printf(" ms=%.4f tflops=%.2f", job.ms, flops / (job.ms * 1e-3) / 1e12);
  }
  std::printf("\n");
  (void)dev;
  if (job.fast_exp) return max_ulp <= 2 ? 0 : kExitMismatch; // tolerance: 2 BF16 ulps
  return mismatches ? kExitMismatch : 0;
}

// ------------------------------------------------------------------------------------------------
// delta

int cmd_delta(const options &o) {
  const int heads = int(o.num("--heads", 1)), n = int(o.num("--n", 128)), d = int(o.num("--d", 64));
  if (n <= 0 || heads <= 0 || (d != 64 && d != 128)) usage_error("delta: d 64 or 128");
  const std::uint64_t seed = std::uint64_t(o.num("--seed", 1));
  const auto in = attention::scenario_random(1, heads, n, d, seed);
  const std::vector<std::uint16_t> ob = bf16_bits(in.v), dob = bf16_bits(in.dout);
  const int rows = heads * n;
  std::vector<float> delta(static_cast<std::size_t>(rows));
  delta_job job;
  job.rows = rows, job.d = d, job.o = ob.data(), job.dout = dob.data(), job.delta = delta.data();
  if (const int err = run_delta(job)) cuda_fail("delta kernel", err);
  std::vector<std::uint32_t> ref;
  model_delta(rows, d, ob.data(), dob.data(), ref);
  std::size_t mismatches = 0;
  for (int r = 0; r < rows; ++r) {
    const std::uint32_t g = bf16emu::from_float(delta[std::size_t(r)]).bits;
    if (g == ref[std::size_t(r)]) continue;
    if (mismatches++ == 0)
      std::printf("# first mismatch: row %d  GPU %s  CPU %s\n", r, hex(format_id::fp32, g).c_str(),
                  hex(format_id::fp32, ref[std::size_t(r)]).c_str());
  }
  const std::string name =
      "delta_n" + std::to_string(n) + "_d" + std::to_string(d) + "_h" + std::to_string(heads);
  if (o.kv.count("--save")) {
    const std::string dir = o.get("--save");
    ensure_dir(dir);
    const std::vector<std::size_t> shape = {std::size_t(heads), std::size_t(n), std::size_t(d)};
    npy::write(dir + "/" + name + ".o.npy", npy::dtype::u16, shape, ob.data());
    npy::write(dir + "/" + name + ".do.npy", npy::dtype::u16, shape, dob.data());
    npy::write(dir + "/" + name + ".delta_gpu.npy", npy::dtype::f32, {std::size_t(heads), std::size_t(n)},
               delta.data());
  }
  std::printf("RESULT delta %s compared=%d mismatches=%zu\n", name.c_str(), rows, mismatches);
  return mismatches ? kExitMismatch : 0;
}

void usage() {
  std::fputs("usage: bf16emu-gpu probe|gemm|attention|delta|dense|info [options]\n"
             "  Runs a CUDA twin kernel and compares it bit for bit with the CPU model.\n"
             "  See cuda/README.md. Exit: 0 equal, 1 mismatches, 2 usage, 3 CUDA error, 77 no device.\n",
             stderr);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    usage();
    return argc < 2 ? kExitUsage : 0;
  }
  const std::string cmd = argv[1];
  const options o = parse(argc, argv);
  if (cmd == "probe") {
    check_probe_options(o);
    if (o.has("--list")) return cmd_probe_list(o); // no GPU needed
    std::string why; // a combination no kernel issues is bad usage with or without a device
    if (!o.has("--self-test") && !o.has("--names") && !find_probe_kernel(probe_options(o), why))
      usage_error(why);
  }
  if (cmd != "probe" && cmd != "gemm" && cmd != "attention" && cmd != "delta" && cmd != "dense" &&
      cmd != "info")
    usage_error("unknown subcommand '" + cmd + "'");
  std::optional<tc::arch> given_arch; // --arch: sm80, hopper, sm90a, ... (tc::parse_arch)
  if (o.kv.count("--arch")) {
    const std::string name = o.get("--arch");
    tc::arch a{};
    if (!io::parse_arch_name(name, a)) usage_error("unknown --arch '" + io::shorten(name) + "'");
    given_arch = a;
  }
  device_info dev;
  if (!find_device(dev)) {
    std::fprintf(stderr, "bf16emu-gpu: no CUDA device found (no GPU or no driver); %s skipped\n",
                 cmd.c_str());
    return kExitSkip;
  }
  const std::optional<tc::arch> arch = given_arch ? given_arch : arch_of(dev.cc_major, dev.cc_minor);
  std::fprintf(stderr, "bf16emu-gpu: device %s (sm_%d%d, %d SMs, driver %d, runtime %d); model arch %s\n",
               dev.name, dev.cc_major, dev.cc_minor, dev.sms, dev.driver_version, dev.runtime_version,
               arch ? arch_name(arch) : "(none)");
  if (!arch && !o.has("--no-compare") && cmd != "info" && cmd != "dense")
    usage_error("the model has no preset for this device; give --arch");
  try {
    if (cmd == "info") {
      std::printf("RESULT info device=\"%s\" cc=%d.%d sms=%d driver=%d runtime=%d arch=%s\n", dev.name,
                  dev.cc_major, dev.cc_minor, dev.sms, dev.driver_version, dev.runtime_version,
                  arch_name(arch));
      return 0;
    }
    if (cmd == "dense") {
      const double t = cublas_bf16_tflops(int(o.num("--size", 8192)), int(o.num("--repeats", 20)));
      if (t < 0) {
        std::printf("RESULT dense cublas=unavailable\n");
        return t == -1 ? 0 : kExitCuda;
      }
      std::printf("RESULT dense cublas_bf16_tflops=%.1f size=%lld\n", t, o.num("--size", 8192));
      return 0;
    }
    if (cmd == "probe") return cmd_probe(o, dev, arch);
    if (cmd == "gemm") return cmd_gemm(o, dev, arch);
    if (cmd == "attention") return cmd_attention(o, dev, arch);
    return cmd_delta(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bf16emu-gpu: %s\n", e.what());
    return kExitUsage;
  }
}
