// Published real-GPU outputs (tests/gpu_data/published, README.md there) through the tensor-core
// presets: every vector of every set file must give the GPU's D bit for bit.
//
//   bf16emu_gpu_data_published DIR
//
// A set file holds a header line
//   #! inputs=NAME arch=sm90 instr=mma|wgmma in=e4m3 out=fp32|fp16 c=c|zero
// and one line per vector: C (the fp32 bits the program read, 8 hex digits) and the GPU's D in
// the D format (8 or 4 hex digits). DIR/inputs/NAME.txt holds the operands, vector i on its
// line i: K values of A, a space, K values of B, each value the bits of its format in a fixed
// number of hex digits. C enters as the program gave it to the GPU: the fp32 value (f32 D), that
// value rounded to fp16 to nearest even (f16 D, __float2half), or zero (c=zero: the accumulator
// was zeroed, the c file not read). The preset is tc::find_preset(arch, instr, in, out) (its
// first, widest k); a line with K below the preset's k is padded with zero products, as the
// programs padded the tile with zeros. Prints one line per set and a total; exit status 1 on
// any mismatch, a malformed file, or no set at all.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <bf16emu/core.hpp>
#include <bf16emu/tc.hpp>

namespace {

using namespace bf16emu;
namespace fs = std::filesystem;

struct operands {
  int K = 0;
  std::vector<std::vector<std::uint64_t>> a, b;
};

bool parse_format(const std::string &s, format_id &f) {
  static const std::map<std::string, format_id> names = {
      {"fp32", format_id::fp32}, {"fp16", format_id::fp16}, {"bf16", format_id::bf16},
      {"tf32", format_id::tf32}, {"e4m3", format_id::e4m3}, {"e5m2", format_id::e5m2}};
  const auto it = names.find(s);
  if (it == names.end()) return false;
  f = it->second;
  return true;
}

// Hex digits per value of an operand format.
int hex_width(format_id f) {
  switch (f) {
  case format_id::e4m3:
  case format_id::e5m2: return 2;
  case format_id::tf32: return 5;
  default: return 4;
  }
}

std::vector<std::uint64_t> split_hex(const std::string &s, int width) {
  std::vector<std::uint64_t> v;
  if (width <= 0 || s.size() % std::size_t(width) != 0) return v;
  for (std::size_t i = 0; i < s.size(); i += std::size_t(width))
    v.push_back(std::stoull(s.substr(i, std::size_t(width)), nullptr, 16));
  return v;
}

bool load_operands(const fs::path &file, format_id f, operands &o, std::string &err) {
  std::ifstream in(file);
  if (!in) return err = "cannot read " + file.string(), false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string sa, sb;
    ls >> sa >> sb;
    std::vector<std::uint64_t> a = split_hex(sa, hex_width(f)), b = split_hex(sb, hex_width(f));
    if (a.empty() || a.size() != b.size() || (o.K != 0 && int(a.size()) != o.K))
      return err = file.string() + ": bad operand line " + std::to_string(o.a.size() + 1), false;
    o.K = int(a.size());
    o.a.push_back(std::move(a));
    o.b.push_back(std::move(b));
  }
  if (o.a.empty()) return err = file.string() + ": no vectors", false;
  return true;
}

template <class In, class Out>
std::uint64_t model(const tc::preset &P, const std::vector<std::uint64_t> &a,
                    const std::vector<std::uint64_t> &b, std::uint32_t c32, bool c_zero) {
  std::vector<fp<In>> va, vb;
  for (std::size_t i = 0; i < a.size(); ++i)
    va.push_back(fp<In>::from_bits(typename In::storage(a[i]))),
        vb.push_back(fp<In>::from_bits(typename In::storage(b[i])));
  fp<Out> c = fp<Out>::from_bits(0);
  if (!c_zero) {
    if constexpr (std::is_same_v<Out, binary32>)
      c = fp<Out>::from_bits(c32);
    else
      c = convert<Out>(fp<binary32>::from_bits(c32)).value; // __float2half: nearest even
  }
  return tc::preset_dot<In, Out>(P, va.data(), 1, vb.data(), 1, int(a.size()), c).bits;
}

std::uint64_t run_model(const tc::preset &P, const std::vector<std::uint64_t> &a,
                        const std::vector<std::uint64_t> &b, std::uint32_t c32, bool c_zero) {
  return visit_format(P.in, [&](auto fin) -> std::uint64_t {
    using In = decltype(fin);
    if constexpr (In::width > 19) {
      return ~std::uint64_t{0}; // not an operand format of these sets
    } else {
      if (P.out == format_id::fp16) return model<In, binary16>(P, a, b, c32, c_zero);
      return model<In, binary32>(P, a, b, c32, c_zero);
    }
  });
}

struct totals {
  long sets = 0, vectors = 0, mismatches = 0, errors = 0;
};

void check_set(const fs::path &dir, const fs::path &file, std::map<std::string, operands> &cache, totals &t) {
  std::ifstream in(file);
  std::string line, header;
  std::vector<std::string> body;
  while (std::getline(in, line)) {
    if (line.rfind("#!", 0) == 0)
      header = line.substr(2);
    else if (!line.empty() && line[0] != '#')
      body.push_back(line);
  }
  const std::string name = file.stem().string();
  auto fail = [&](const std::string &why) {
    std::printf("%s: %s\n", name.c_str(), why.c_str());
    ++t.errors;
  };
  std::map<std::string, std::string> kv;
  std::istringstream hs(header);
  for (std::string w; hs >> w;) {
    const auto eq = w.find('=');
    if (eq == std::string::npos) return fail("bad header word " + w);
    kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  tc::arch arch{};
  tc::instr_kind kind{};
  format_id fin{}, fout{};
  if (!tc::parse_arch(kv["arch"], arch) || !tc::parse_instr(kv["instr"], kind) ||
      !parse_format(kv["in"], fin) || !parse_format(kv["out"], fout) ||
      (kv["c"] != "c" && kv["c"] != "zero") || kv["inputs"].empty())
    return fail("bad or missing header keys (#! inputs= arch= instr= in= out= c=)");
  const tc::preset *P = tc::find_preset(arch, kind, fin, fout);
  if (!P)
    return fail("no preset for " + kv["arch"] + " " + kv["instr"] + " " + kv["in"] + " -> " + kv["out"]);
  auto it = cache.find(kv["inputs"]);
  if (it == cache.end()) {
    operands o;
    std::string err;
    if (!load_operands(dir / "inputs" / (kv["inputs"] + ".txt"), fin, o, err)) return fail(err);
    it = cache.emplace(kv["inputs"], std::move(o)).first;
  }
  const operands &ops = it->second;
  if (body.empty() || body.size() > ops.a.size()) return fail("vector count does not match the inputs file");
  long bad = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    std::istringstream ls(body[i]);
    std::string sc, sd;
    ls >> sc >> sd;
    if (sc.size() != 8 || sd.size() != (fout == format_id::fp16 ? 4u : 8u))
      return fail("bad line " + std::to_string(i + 1));
    const std::uint32_t c32 = std::uint32_t(std::stoul(sc, nullptr, 16));
    const std::uint64_t want = std::stoull(sd, nullptr, 16);
    const std::uint64_t got = run_model(*P, ops.a[i], ops.b[i], c32, kv["c"] == "zero");
    if (got != want && bad++ < 3)
      std::printf("  %s vector %zu: model 0x%llx, GPU 0x%llx\n", name.c_str(), i + 1,
                  static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
  }
  std::printf("%-26s %-6s %-6s %s x %s -> %s (C %s), K %d: %zu vectors, %ld mismatches\n", name.c_str(),
              kv["arch"].c_str(), kv["instr"].c_str(), kv["in"].c_str(), kv["in"].c_str(), kv["out"].c_str(),
              kv["c"] == "zero" ? "zero" : "from the file", ops.K, body.size(), bad);
  ++t.sets;
  t.vectors += long(body.size());
  t.mismatches += bad;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, operands> cache;
  totals t;
  for (const fs::path &f : files)
    check_set(dir, f, cache, t);
  std::printf("published GPU outputs: %ld sets, %ld vectors, %ld mismatches, %ld bad files\n", t.sets,
              t.vectors, t.mismatches, t.errors);
  return t.sets > 0 && t.mismatches == 0 && t.errors == 0 ? 0 : 1;
}
