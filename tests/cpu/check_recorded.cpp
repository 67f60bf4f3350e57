// Outputs of the real instructions recorded on an AMD Zen 5 (tests/cpu/data/README.md) against
// the CPU models of include/bf16emu/cpu/, bit for bit, on any machine:
//
//   cpu_recorded_check DIR
//
// DIR/vdpbf16ps.txt: per line `a0 a1 b0 b1 c d1 d2 d3` (hex), the lane's bf16 pairs of the two
// sources (a0, b0 the lower element), the fp32 accumulator and the recorded results under
// MXCSR 0x1f80, 0x7f80 and 0x9fc0, "=" standing for the result before it; the model is
// cpu::vdpbf16ps(c, a0, a1, b0, b1). DIR/vcvtneps2bf16.txt: `x y1 y2 y3`, the model
// cpu::cvtneps2bf16(x). The models take no MXCSR (the instructions ignore it): each of the three
// results must equal the model's. Prints the counts; exit status 1 on any mismatch, a malformed
// line, or a missing or empty file.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <bf16emu/cpu.hpp>

namespace {

constexpr const char *kMxcsr[3] = {"0x1f80", "0x7f80", "0x9fc0"};

struct counts {
  long lines = 0, outputs = 0, mismatches[3] = {0, 0, 0}, bad = 0;
};

// Reads one file of n_in inputs and three results per line; model(inputs) gives the expected bits.
template <class Model> counts check(const std::string &path, int n_in, const char *name, Model model) {
  counts r;
  std::ifstream in(path);
  if (!in) {
    std::printf("%s: cannot read %s\n", name, path.c_str());
    r.bad = 1;
    return r;
  }
  std::string line;
  long shown = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;)
      f.push_back(w);
    if (int(f.size()) != n_in + 3 || f[std::size_t(n_in)] == "=") {
      if (r.bad++ < 3) std::printf("%s: line %ld malformed\n", name, r.lines + 1);
      ++r.lines;
      continue;
    }
    std::uint32_t v[6] = {};
    for (int i = 0; i < n_in; ++i)
      v[i] = std::uint32_t(std::stoul(f[std::size_t(i)], nullptr, 16));
    const std::uint32_t want_model = model(v);
    std::uint32_t prev = 0;
    for (int j = 0; j < 3; ++j) {
      const std::string &s = f[std::size_t(n_in + j)];
      const std::uint32_t got = s == "=" ? prev : std::uint32_t(std::stoul(s, nullptr, 16));
      prev = got;
      ++r.outputs;
      if (got != want_model) {
        ++r.mismatches[j];
        if (shown++ < 5)
          std::printf("%s: line %ld MXCSR %s: recorded 0x%x, model 0x%x\n", name, r.lines + 1, kMxcsr[j], got,
                      want_model);
      }
    }
    ++r.lines;
  }
  if (r.lines == 0) r.bad = 1;
  std::printf("%s (recorded on AMD Zen 5): %ld inputs x 3 MXCSR (0x1f80, 0x7f80, 0x9fc0) = %ld outputs, "
              "%ld / %ld / %ld mismatches, %ld malformed lines\n",
              name, r.lines, r.outputs, r.mismatches[0], r.mismatches[1], r.mismatches[2], r.bad);
  return r;
}

bool ok(const counts &c) { return c.bad == 0 && c.mismatches[0] + c.mismatches[1] + c.mismatches[2] == 0; }

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const counts dp = check(dir + "/vdpbf16ps.txt", 5, "VDPBF16PS", [](const std::uint32_t *v) {
    return bf16emu::cpu::vdpbf16ps(v[4], std::uint16_t(v[0]), std::uint16_t(v[1]), std::uint16_t(v[2]),
                                   std::uint16_t(v[3]));
  });
  const counts cv = check(dir + "/vcvtneps2bf16.txt", 1, "VCVTNEPS2BF16", [](const std::uint32_t *v) {
    return std::uint32_t(bf16emu::cpu::cvtneps2bf16(v[0]));
  });
  return ok(dp) && ok(cv) ? 0 : 1;
}
