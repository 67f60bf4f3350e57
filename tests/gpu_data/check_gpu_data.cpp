// bf16emu: re-checks the tensor-core model against outputs recorded on real GPUs.
//
//   bf16emu_gpu_data_check DIR
//
// For every DIR/NAME.vec (the `bf16emu mma` line format, written by `bf16emu-gpu probe --save`
// or `bf16emu-gpu gemm --save-lines`), reads the header line
//   #! arch=sm90 instr=mma|wgmma in=bf16 out=fp32 k=16
// runs each line through the model preset of (arch, instr, in, out) and compares it with the
// GPU's D in DIR/NAME.out (one value per line). Exit 0: all equal; 1: a mismatch or a bad file;
// 77: no .vec files (nothing recorded yet: the test is reported as skipped).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host_model.hpp"
#include "lines.hpp"
#include "vectors.hpp"

namespace fs = std::filesystem;
using namespace bf16emu;

namespace {

std::map<std::string, std::string> header(const fs::path &p) {
  std::ifstream is(p);
  std::string line;
  std::map<std::string, std::string> kv;
  while (std::getline(is, line)) {
    if (line.rfind("#!", 0) != 0) continue;
    std::istringstream ss(line.substr(2));
    std::string tok;
    while (ss >> tok) {
      const auto eq = tok.find('=');
      if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    break;
  }
  return kv;
}

int check(const fs::path &vec, std::size_t &lines, std::size_t &bad) {
  const auto h = header(vec);
  const std::string name = vec.filename().string();
  gpu::vec_set v;
  tc::arch arch{};
  if (!h.count("arch") || !h.count("instr") || !h.count("in") || !h.count("out") || !h.count("k") ||
      !gpu::parse_in_format(h.at("in"), v.in) || !gpu::parse_out_format(h.at("out"), v.out) ||
      !tc::parse_arch(h.at("arch"), arch)) {
    std::printf("%s: missing or bad '#! arch= instr= in= out= k=' header\n", name.c_str());
    return 1;
  }
  v.k = std::atoi(h.at("k").c_str());
  std::string err;
  std::ifstream vs(vec), os(fs::path(vec).replace_extension(".out"));
  if (!os) {
    std::printf("%s: no matching .out file\n", name.c_str());
    return 1;
  }
  std::vector<std::uint32_t> gpu_d;
  if (!gpu::read_lines(vs, v, err) || !gpu::read_outputs(os, v.out, gpu_d, err)) {
    std::printf("%s: %s\n", name.c_str(), err.c_str());
    return 1;
  }
  if (gpu_d.size() != v.lines()) {
    std::printf("%s: %zu lines but %zu outputs\n", name.c_str(), v.lines(), gpu_d.size());
    return 1;
  }
  const tc::preset *p = gpu::model_preset(arch, h.at("instr") == "wgmma", v.in, v.out, err);
  if (!p) {
    std::printf("%s: %s\n", name.c_str(), err.c_str());
    return 1;
  }
  std::vector<std::uint32_t> model;
  gpu::model_lines(v, *p, model);
  std::size_t mism = 0;
  for (std::size_t n = 0; n < v.lines(); ++n) {
    if (model[n] == gpu_d[n]) continue;
    if (mism++ == 0) {
      std::printf("%s: line %zu: GPU %s, model %s\n", name.c_str(), n + 1, gpu::hex(v.out, gpu_d[n]).c_str(),
                  gpu::hex(v.out, model[n]).c_str());
      std::ostringstream tr;
      gpu::trace_line(tr, v, n, *p);
      std::fputs(tr.str().c_str(), stdout);
    }
  }
  std::printf("%-40s %s %s %s->%s k=%d: %zu lines, %zu mismatches\n", name.c_str(), h.at("arch").c_str(),
              h.at("instr").c_str(), h.at("in").c_str(), h.at("out").c_str(), v.k, v.lines(), mism);
  lines += v.lines(), bad += mism;
  return mism ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
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
