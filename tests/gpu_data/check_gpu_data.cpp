// bf16emu: re-checks the tensor-core model against outputs recorded on real GPUs.
//
//   bf16emu_gpu_data_check DIR
//   bf16emu_gpu_data_check --headers   (every probe kernel's header selects that kernel again)
//   bf16emu_gpu_data_check --cases     (per kernel: header, vecgen and `bf16emu mma` options)
//   bf16emu_gpu_data_check --coverage  (every NVIDIA preset has a probe kernel on its arch)
//
// For every DIR/NAME.vec (the `bf16emu mma` line format, written by `bf16emu-gpu probe --save`
// or `bf16emu-gpu gemm --save-lines`), reads the header line (gpu::probe_header writes it)
//   #! arch=sm90 instr=mma|wgmma|tcgen05 in=e4m3 out=fp32 k=32 [b=e5m2] [kind=f8f6f4] [shape_k=8]
//   (block-scaled kernels: kind=mxf8f6f4|mxf4|mxf4nvf4 scale=ue8m0|ue4m3 vec=32|16, and lines
//   that carry k/vec scale factors of A and of B after B)
// selects the probe kernel and its host model as the runner does (gpu::find_probe_kernel,
// gpu::kernel_preset: a tc::presets block preset or, for kind::f8f6f4 on tcgen05 and the
// block-scaled kinds, a scaled preset),
// runs each line through that model and compares it with the GPU's D in DIR/NAME.out (one value
// per line). Exit 0: all equal; 1: a mismatch or a bad file (a one-line message naming the file
// and the bad key or value); 77: no .vec files (nothing recorded yet: the test is reported as
// skipped).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "io/names.hpp"
#include "lines.hpp"
#include "probe_table.hpp"
#include "vectors.hpp"

namespace fs = std::filesystem;
using namespace bf16emu;

namespace {

// The text after "#!" of the first header line; false when there is none.
bool header(const fs::path &p, std::string &text) {
  std::ifstream is(p);
  std::string line;
  while (std::getline(is, line))
    if (line.rfind("#!", 0) == 0) return text = line.substr(2), true;
  return false;
}

int check(const fs::path &vec, std::size_t &lines, std::size_t &bad) {
  const std::string name = vec.filename().string();
  auto fail = [&](const std::string &msg) {
    std::printf("%s: %s\n", name.c_str(), msg.c_str());
    return 1;
  };
  std::string text, err;
  if (!header(vec, text)) return fail("no '#! arch= instr= in= out= k=' header line");
  gpu::probe_header_fields h;
  if (!gpu::parse_probe_header(text, h, err)) return fail(err);
  const gpu::probe_kernel *kernel = gpu::find_probe_kernel(h.request, err);
  if (!kernel) return fail("the header selects no probe kernel: " + err);
  const gpu::kernel_model model = gpu::kernel_preset(*kernel, h.arch, err);
  if (!model) return fail(err);
  if (kernel->sop != gpu::scaled_op::none && h.k % kernel->k != 0) // whole instructions, whole factors
    return fail("k=" + std::to_string(h.k) + " is not a multiple of " + kernel->name + "'s k " +
                std::to_string(kernel->k));
  gpu::vec_set v = gpu::kernel_vectors(*kernel, h.k);
  std::ifstream vs(vec), os(fs::path(vec).replace_extension(".out"));
  if (!os) return fail("no matching .out file");
  std::vector<std::uint64_t> gpu_d, d;
  if (!gpu::read_lines(vs, v, err) || !gpu::read_outputs(os, v.out, gpu_d, err)) return fail(err);
  if (gpu_d.size() != v.lines())
    return fail(std::to_string(v.lines()) + " lines but " + std::to_string(gpu_d.size()) + " outputs");
  gpu::model_kernel_lines(model, v, d);
  std::size_t mism = 0;
  for (std::size_t n = 0; n < v.lines(); ++n) {
    if (d[n] == gpu_d[n]) continue;
    if (mism++ == 0) {
      std::printf("%s: line %zu: GPU %s, model %s\n", name.c_str(), n + 1, gpu::hex(v.out, gpu_d[n]).c_str(),
                  gpu::hex(v.out, d[n]).c_str());
      std::ostringstream tr;
      gpu::trace_kernel_line(tr, model, v, n);
      std::fputs(tr.str().c_str(), stdout);
    }
  }
  const gpu::probe_request &r = h.request;
  const std::string extra =
      (r.kind.empty() ? "" : " kind=" + r.kind) +
      (v.vec ? std::string(" scale=") + tc::to_string(v.scale) + " vec=" + std::to_string(v.vec)
             : std::string()) +
      (r.shape_k ? " shape_k=" + std::to_string(r.shape_k) : std::string());
  std::printf("%-40s %s %s %s->%s k=%d%s: %zu lines, %zu mismatches\n", name.c_str(), tc::to_string(h.arch),
              tc::to_string(kernel->kind), gpu::in_column(*kernel).c_str(), io::name(v.out), v.k,
              extra.c_str(), v.lines(), mism);
  lines += v.lines(), bad += mism;
  return mism ? 1 : 0;
}

// --headers: the header gpu::probe_header writes for every probe kernel selects that kernel
// again (the runner's writer and this reader agree on every key and value).
int check_headers() {
  std::size_t ok = 0;
  for (const gpu::probe_kernel &p : gpu::probe_kernels()) {
    const std::string text = gpu::probe_header(p, "sm90", 2 * p.k);
    gpu::probe_header_fields h;
    std::string err;
    const gpu::probe_kernel *back =
        gpu::parse_probe_header(text.substr(2), h, err) ? gpu::find_probe_kernel(h.request, err) : nullptr;
    if (back == &p && h.k == 2 * p.k && h.arch == tc::arch::sm90)
      ++ok;
    else
      std::printf("%s: header '%s' selects %s\n", p.name, text.c_str(), back ? back->name : err.c_str());
  }
  std::printf("gpu_data headers: %zu kernels, %zu headers select their kernel\n", gpu::probe_kernels().size(),
              ok);
  return ok && ok == gpu::probe_kernels().size() ? 0 : 1;
}

// --cases: one line per probe kernel for roundtrip.sh, fields separated by '|': the kernel, the
// header gpu::probe_header writes on the first model arch of a device that runs it (K = two
// instructions), the bf16emu-vecgen options and the `bf16emu mma` options of the same lines.
int print_cases() {
  std::size_t n = 0;
  for (const gpu::probe_kernel &p : gpu::probe_kernels())
    for (tc::arch a : tc::all_archs) {
      const std::string arch = tc::to_string(a);
      const int cc = std::stoi(arch.substr(2)), K = 2 * p.k;
      std::string why;
      if (!gpu::kernel_runs_on(p, cc) || !gpu::kernel_preset(p, a, why)) continue;
      const gpu::probe_request r = gpu::kernel_request(p);
      const std::string scales = r.scale_vec == 0 ? std::string()
                                                  : " --scale-format " + r.scale_format + " --scale-vec " +
                                                        std::to_string(r.scale_vec);
      const std::string formats = " --b-format " + r.b + " --out " + r.out +
                                  (r.c.empty() ? std::string() : " --c-format " + r.c) + " --k " +
                                  std::to_string(K) + scales;
      std::printf("%s|%s|--format %s%s|--arch %s --instr %s --a-format %s%s --shape-k %d%s\n", p.name,
                  gpu::probe_header(p, arch, K).c_str(), r.a.c_str(), formats.c_str(), arch.c_str(),
                  r.instr.c_str(), r.a.c_str(), formats.c_str(), p.k,
                  r.kind.empty() ? "" : (" --kind " + r.kind).c_str());
      ++n;
      break;
    }
  return n == gpu::probe_kernels().size() ? 0 : 1;
}

// --coverage: every NVIDIA preset of the model (tc::presets, tc::scaled_presets; each A x B pair
// of the f8f6f4 kinds apart) is issued by a probe kernel that a device of the preset's
// architecture runs, and the runner compares that kernel with the preset itself or with another
// preset of the same architecture whose bits equal it on the kernel's vectors (probes and 3 x 64
// random lines, two instructions each: the sm120 kind::f8f6f4 rows that both tc::presets and
// tc::scaled_presets carry, and sm90 f64 m16n8k4, which the m8n8k4 kernel issues). The presets no
// kernel can issue with this toolkit are listed below with the reason; the check also fails if
// one of them gains a kernel (the list must then shrink).
struct no_kernel {
  tc::arch arch;
  const char *ptx, *why;
};
constexpr const char *kNoSm70 = "nvcc 13 has no sm_70 target";
constexpr const char *kCdRejected = "ptxas for sm_75 rejects D f16 with C f32";
constexpr const char *kNoSm100Fp8 =
    "the runner's fp8 mma.sync kernels carry sm_89/sm_90 code only; gpu_data.published checks the preset "
    "against published B200 outputs";
constexpr const char *kNoTcgen05Mix =
    "the runner's tcgen05 kind::f16 kernels take A and B of one type; the f16 x bf16 mixes (issue 33, "
    "from MMA-Sim) have no kernel yet";
constexpr no_kernel kNoKernel[] = {
    {tc::arch::sm70, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", kNoSm70},
    {tc::arch::sm70, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16", kNoSm70},
    {tc::arch::sm70, "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", kNoSm70},
    {tc::arch::sm70, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32", kNoSm70},
    {tc::arch::sm75, "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f32", kCdRejected},
    {tc::arch::sm100, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", kNoSm100Fp8},
    {tc::arch::sm100, "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16", kNoSm100Fp8},
    {tc::arch::sm100, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", kNoSm100Fp8},
    {tc::arch::sm100, "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16", kNoSm100Fp8},
    {tc::arch::sm120,
     "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0",
     "ptxas 13.0 refuses mma.sync scale_vec::4X with ue8m0 for sm_120a, sm_120f and sm_121a (Illegal "
     "modifier)"},
    {tc::arch::sm100, "tcgen05.mma.cta_group::1.kind::f16 (f16 x bf16 in, f32 acc), k16", kNoTcgen05Mix},
    {tc::arch::sm100, "tcgen05.mma.cta_group::1.kind::f16 (bf16 x f16 in, f32 acc), k16", kNoTcgen05Mix},
    {tc::arch::sm120,
     "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue4m3",
     "the runner issues mxf4nvf4 with ue4m3 factors at scale_vec::4X only; MMA-Sim's block32 ue4m3 form "
     "(issue 33) has no kernel yet"},
};

// The CUDA architecture number of a model arch ("sm89" -> 89).
int arch_cc(tc::arch a) { return std::stoi(std::string(tc::to_string(a)).substr(2)); }

// Whether two models give the same D on kernel k's vectors.
bool same_bits(const gpu::probe_kernel &k, const gpu::kernel_model &x, const gpu::kernel_model &y) {
  std::uint64_t seed = 1;
  for (gpu::gen_kind g :
       {gpu::gen_kind::probes, gpu::gen_kind::normal, gpu::gen_kind::bits, gpu::gen_kind::cancel}) {
    gpu::vec_set v = gpu::kernel_vectors(k, 2 * k.k);
    gpu::generate(v, g, 64, seed++);
    std::vector<std::uint64_t> dx, dy;
    gpu::model_kernel_lines(x, v, dx, 1);
    gpu::model_kernel_lines(y, v, dy, 1);
    if (dx.empty() || dx != dy) return false;
  }
  return true;
}

int check_coverage() {
  std::size_t own = 0, equal = 0, listed = 0, bad = 0;
  // One preset (`self`, as a kernel model) and the request naming it.
  auto one = [&](tc::arch arch, const char *ptx, const gpu::probe_request &r, const gpu::kernel_model &self) {
    std::string why;
    const gpu::probe_kernel *k = gpu::find_probe_kernel(r, why);
    int how = 0; // 1: compared with this preset; 2: with an equal one; 0: none
    if (k && gpu::kernel_runs_on(*k, arch_cc(arch))) {
      const gpu::kernel_model m = gpu::kernel_preset(*k, arch, why);
      how = m.block == self.block && m.scaled == self.scaled ? 1 : m && same_bits(*k, m, self) ? 2 : 0;
      if (!how)
        why =
            std::string(k->name) + " is compared with " + (m ? m.ptx() : "no preset") + ", whose bits differ";
    } else if (k) {
      why = std::string(k->name) + " does not run on " + tc::to_string(arch);
    }
    const bool excused = std::any_of(std::begin(kNoKernel), std::end(kNoKernel), [&](const no_kernel &e) {
      return e.arch == arch && std::string(e.ptx) == ptx;
    });
    if (how && !excused) return void(++(how == 1 ? own : equal));
    if (!how && excused) return void(++listed);
    ++bad;
    std::printf("%s %s (%s x %s -> %s): %s\n", tc::to_string(arch), ptx, r.a.c_str(), r.b.c_str(),
                r.out.c_str(), how ? "listed as having no kernel, but one issues it" : why.c_str());
  };
  for (const tc::preset &P : tc::presets) {
    gpu::probe_request r;
    r.instr = tc::to_string(P.kind), r.a = io::name(P.in), r.b = io::name(P.b), r.c = io::name(P.c);
    r.out = io::name(P.out), r.shape_k = P.kind == tc::instr_kind::mma ? P.k : 0;
    if (std::string(P.ptx).find("kind::f8f6f4") != std::string::npos) r.kind = "f8f6f4";
    gpu::kernel_model self;
    self.block = &P;
    one(P.arch, P.ptx, r, self);
  }
  for (const tc::scaled_preset &S : tc::scaled_presets)
    for (format_id a : tc::f8f6f4_formats)
      for (format_id b : tc::f8f6f4_formats) {
        if (!tc::takes_formats(S, a, b)) continue;
        gpu::probe_request r;
        r.instr = tc::to_string(S.instr), r.kind = S.kind, r.a = io::name(a), r.b = io::name(b);
        r.out = io::name(S.out);
        if (S.params.scale != tc::scale_kind::none)
          r.scale_format = tc::to_string(S.params.scale), r.scale_vec = unsigned(S.params.vec);
        gpu::kernel_model self;
        self.scaled = &S;
        one(S.arch, S.ptx, r, self);
      }
  std::printf(
      "preset coverage: %zu NVIDIA presets (A x B pairs of the f8f6f4 kinds apart) issued by a probe "
      "kernel on their architecture (%zu compared with the preset itself, %zu with an equal one), %zu "
      "listed without a kernel, %zu wrong\n",
      own + equal, own, equal, listed, bad);
  for (const no_kernel &e : kNoKernel)
    std::printf("  no kernel: %s %s: %s\n", tc::to_string(e.arch), e.ptx, e.why);
  return bad == 0 && listed == std::size(kNoKernel) ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--headers") return check_headers();
  if (argc > 1 && std::string(argv[1]) == "--cases") return print_cases();
  if (argc > 1 && std::string(argv[1]) == "--coverage") return check_coverage();
  const fs::path dir = argc > 1 ? argv[1] : ".";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".vec") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::printf("no GPU data in %s (no *.vec/*.out recorded on hardware yet; see tests/gpu_data/README.md): "
                "skipped\n",
                dir.string().c_str());
    return 77;
  }
  int status = 0;
  std::size_t lines = 0, bad = 0;
  for (const auto &f : files)
    status |= check(f, lines, bad);
  std::printf("gpu_data: %zu files, %zu lines compared, %zu mismatches\n", files.size(), lines, bad);
  return status ? 1 : 0;
}
