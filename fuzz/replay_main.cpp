// A libFuzzer harness without libFuzzer: runs LLVMFuzzerTestOneInput once on every file named on
// the command line or found in a folder named there (not recursive), as `harness -runs=0 DIR`
// does. tests/fuzz_replay builds it with the harnesses whose code the Release and sanitizer
// builds already compile (the CLI option parser, the GPU vector files, the I/O parsers), so that
// every CI tier replays their committed corpora. A finding aborts, as under libFuzzer.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

namespace {

bool replay(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const fs::path arg(argv[i]);
    std::vector<fs::path> files;
    if (fs::is_directory(arg, ec)) {
      for (const auto &e : fs::directory_iterator(arg, ec))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(arg);
    }
    if (ec || files.empty()) {
      std::fprintf(stderr, "replay: nothing to read in '%s'\n", argv[i]);
      return 2;
    }
    for (const fs::path &f : files) {
      if (!replay(f)) {
        std::fprintf(stderr, "replay: cannot read '%s'\n", f.c_str());
        return 2;
      }
      ++n;
    }
  }
  std::printf("replayed %zu inputs\n", n);
  return n > 0 ? 0 : 2;
}
