// Reader harness: the CUDA twin's vector files (cuda/lines.cpp, cuda/probe_table.cpp), as
// tests/gpu_data and `bf16emu-gpu` read them: the "#! arch= instr= in= out= k=" probe header,
// the A/B/(scale)/C lines of the .vec file and the D values of its .out file. Every reader
// answers true or false with a one-line reason; nothing may throw, crash or leak. A header that
// selects a kernel is written back by probe_header and selects the same kernel again; lines that
// read write back (write_lines) and read again to the same bits; the model runs on them.
//
// Input: the .vec text, then optionally a NUL byte and the .out text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <bf16emu/tc.hpp>

#include "lines.hpp"
#include "probe_table.hpp"
#include "vectors.hpp"

namespace {

void require(bool ok, const char *what, const std::string &detail) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace gpu = bf16emu::gpu;
  const std::string input(reinterpret_cast<const char *>(data), size);
  const auto nul = input.find('\0');
  const std::string vec = input.substr(0, nul), out = nul == std::string::npos ? "" : input.substr(nul + 1);

  // The header: the first line that begins with "#!".
  std::istringstream lines(vec);
  std::string line, header;
  while (std::getline(lines, line))
    if (line.rfind("#!", 0) == 0) {
      header = line.substr(2);
      break;
    }
  std::string why;
  gpu::probe_header_fields h;
  if (!gpu::parse_probe_header(header, h, why)) {
    require(!why.empty() && why.find('\n') == std::string::npos, "header refused without one line", why);
    return 0;
  }
  const gpu::probe_kernel *kernel = gpu::find_probe_kernel(h.request, why);
  if (kernel == nullptr) {
    require(!why.empty(), "no kernel and no reason", header);
    return 0;
  }
  // The header as the runner writes it for this kernel selects it again.
  gpu::probe_header_fields back;
  const std::string written = gpu::probe_header(*kernel, bf16emu::tc::to_string(h.arch), h.k);
  require(written.rfind("#!", 0) == 0, "probe_header without #!", written);
  require(gpu::parse_probe_header(written.substr(2), back, why), "written header does not read",
          written + ": " + why);
  require(gpu::find_probe_kernel(back.request, why) == kernel && back.k == h.k && back.arch == h.arch,
          "written header selects another kernel", header + " -> " + written);
  const gpu::kernel_model model = gpu::kernel_preset(*kernel, h.arch, why);
  if (!model || h.k <= 0 || h.k > 1024) return 0;
  if (kernel->sop != gpu::scaled_op::none && h.k % kernel->k != 0) return 0;

  gpu::vec_set v = gpu::kernel_vectors(*kernel, h.k);
  std::istringstream vs(vec);
  if (!gpu::read_lines(vs, v, why)) {
    require(!why.empty(), "lines refused without a reason", header);
  } else {
    // Written back and read again: the same bits.
    std::ostringstream os;
    gpu::write_lines(os, v, false);
    gpu::vec_set again = gpu::kernel_vectors(*kernel, h.k);
    std::istringstream is(os.str());
    require(gpu::read_lines(is, again, why), "written lines do not read", why);
    require(again.a == v.a && again.b == v.b && again.c == v.c && again.sa == v.sa && again.sb == v.sb,
            "lines read back differently", os.str().substr(0, 400));
    if (v.lines() <= 64) {
      std::vector<std::uint64_t> d;
      gpu::model_kernel_lines(model, v, d, 1);
      require(d.size() == v.lines(), "model gave another number of D values", header);
    }
  }
  std::vector<std::uint64_t> d;
  std::istringstream os(out);
  if (!gpu::read_outputs(os, v.out, d, why))
    require(!why.empty(), "outputs refused without a reason", header);
  return 0;
}
