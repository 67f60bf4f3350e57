// bf16emu: re-checks the tensor-core model against outputs recorded on real GPUs.
//
//   bf16emu_gpu_data_check DIR
//   bf16emu_gpu_data_check --headers   (every probe kernel's header selects that kernel again)
//   bf16emu_gpu_data_check --cases     (per kernel: header, vecgen and `bf16emu mma` options)
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
      if (cc < p.cc_min || cc > p.cc_max || !gpu::kernel_preset(p, a, why)) continue;
      const gpu::probe_request r = gpu::kernel_request(p);
      const std::string scales = r.scale_vec == 0 ? std::string()
                                                  : " --scale-format " + r.scale_format + " --scale-vec " +
                                                        std::to_string(r.scale_vec);
      const std::string formats =
          " --b-format " + r.b + " --out " + r.out + " --k " + std::to_string(K) + scales;
      std::printf("%s|%s|--format %s%s|--arch %s --instr %s --a-format %s%s --shape-k %d%s\n", p.name,
                  gpu::probe_header(p, arch, K).c_str(), r.a.c_str(), formats.c_str(), arch.c_str(),
                  r.instr.c_str(), r.a.c_str(), formats.c_str(), p.k,
                  r.kind.empty() ? "" : (" --kind " + r.kind).c_str());
      ++n;
      break;
    }
  return n == gpu::probe_kernels().size() ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--headers") return check_headers();
  if (argc > 1 && std::string(argv[1]) == "--cases") return print_cases();
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
