// Outputs of the real instructions recorded on a CPU (tests/cpu/data/README.md: AMD Zen 5; or a
// folder written by `bf16emu cpu-probe --save DIR`) against the CPU models of
// include/bf16emu/cpu/, bit for bit, on any machine:
//
//   cpu_recorded_check DIR [FILE...]
//
// The FILEs named (e.g. vdpbf16ps.txt) must be there; every other file of io::record_layouts is
// checked when present, and at least one must be. The format, the reader and the model of each file
// are those of io/cpu_record.hpp (the writer of --save): per line the inputs, then the results
// under MXCSR 0x1f80, 0x7f80 and 0x9fc0, "=" standing for the result before it. The models take
// no MXCSR (the instructions ignore it): each of the three results must equal the model's. Prints
// where the data come from (the first line of DIR/README.md) and the counts; exit status 1 on any
// mismatch, a malformed line, or a missing or empty file.
#include <cstdio>
#include <fstream>
#include <string>

#include "io/cpu_record.hpp"
#include "io/error.hpp"

int main(int argc, char **argv) {
  namespace io = bf16emu::io;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [FILE...]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  auto required = [&](const char *file) {
    for (int i = 2; i < argc; ++i)
      if (std::string(argv[i]) == file) return true;
    return false;
  };
  std::string source;
  std::getline(std::ifstream(dir + "/README.md"), source);
  std::printf("%s: %s\n", dir.c_str(), source.empty() ? "(no README.md)" : source.c_str());
  bool ok = true;
  int files = 0;
  for (const io::record_layout &l : io::record_layouts) {
    if (!required(l.file) && !std::ifstream(dir + "/" + l.file)) continue;
    ++files;
    try {
      const io::record_check c = io::check_record(io::read_record(dir, l.what));
      std::printf(
          "%s: %ld inputs x 3 MXCSR (0x1f80, 0x7f80, 0x9fc0) = %ld outputs, %ld / %ld / %ld mismatches\n",
          l.instruction, c.lines, c.outputs, c.mismatches[0], c.mismatches[1], c.mismatches[2]);
      for (const std::string &f : c.first)
        std::printf("  %s\n", f.c_str());
      ok = ok && c.ok();
    } catch (const io::input_error &e) {
      std::printf("%s: %s\n", l.instruction, e.what());
      ok = false;
    }
  }
  if (files == 0) std::printf("%s: no recorded files\n", dir.c_str());
  return ok && files > 0 ? 0 : 1;
}
