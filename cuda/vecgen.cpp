// bf16emu-vecgen: tensor-core test vectors in the `bf16emu mma` line format, without a GPU.
//
//   bf16emu-vecgen --format bf16 --kind probes                     > probes.vec
//   bf16emu-vecgen --format tf32 --kind bits --count 100000 --seed 7 > bits.vec
//   bf16emu mma --arch sm90 --a-format bf16 < probes.vec             # the model's answers
//   bf16emu-gpu probe --format bf16 < probes.vec                     # the GPU's answers
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "bf16emu/tc.hpp"
#include "vectors.hpp"

namespace {

void usage() {
  std::fputs("usage: bf16emu-vecgen [--format bf16|fp16|tf32|e4m3|e5m2|fp64] [--b-format F]\n"
             "                      [--out fp32|fp16|fp64] [--c-format fp32|fp16]\n"
             "                      [--kind probes|normal|bits|cancel] [--count N] [--seed S] [--k K]\n"
             "                      [--scale-format ue8m0|ue4m3 --scale-vec 32|16] [--no-notes]\n"
             "Writes one line per dot product: K values of A, K values of B, then C (hex bit\n"
             "patterns; tf32 as its 19-bit pattern). K defaults to the instruction's k (16 for\n"
             "bf16/fp16, 8 for tf32, 32 for fp8, 4 for fp64). --b-format: B's format (e4m3 x e5m2\n"
             "mixes). --c-format: C's format where it differs from --out (the m8n8k4 C/D mixes).\n"
             "--scale-format/--scale-vec (block-scaled kinds): K/vec scale factors of A, then of\n"
             "B, after B on each line (`bf16emu mma --kind`). probes: the discriminating probes of the\n"
             "tensor-core notes (commented); --count is ignored for them.\n",
             stderr);
}

} // namespace

int main(int argc, char **argv) {
  using namespace bf16emu;
  gpu::vec_set v;
  gpu::gen_kind kind = gpu::gen_kind::probes;
  std::size_t count = 1000;
  std::uint64_t seed = 1;
  int k = 0;
  bool notes = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bf16emu-vecgen: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    bool ok = true;
    if (arg == "--format")
      ok = gpu::parse_in_format(value(), v.in);
    else if (arg == "--b-format") {
      format_id b{};
      ok = gpu::parse_in_format(value(), b);
      v.in_b = b;
    } else if (arg == "--out")
      ok = gpu::parse_out_format(value(), v.out);
    else if (arg == "--c-format") {
      format_id c{};
      ok = gpu::parse_out_format(value(), c);
      v.in_c = c;
    } else if (arg == "--kind")
      ok = gpu::parse_gen_kind(value(), kind);
    else if (arg == "--count")
      count = std::strtoull(value().c_str(), nullptr, 0);
    else if (arg == "--seed")
      seed = std::strtoull(value().c_str(), nullptr, 0);
    else if (arg == "--k")
      k = std::atoi(value().c_str());
    else if (arg == "--scale-format") { // block-scaled kinds: k/vec scale factors of A and of B per line
      const std::string f = value();
      ok = f == "ue8m0" || f == "ue4m3";
      v.scale = f == "ue4m3" ? tc::scale_kind::ue4m3 : tc::scale_kind::ue8m0;
    } else if (arg == "--scale-vec") {
      v.vec = std::atoi(value().c_str());
      ok = v.vec == 16 || v.vec == 32;
    } else if (arg == "--no-notes")
      notes = false;
    else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "bf16emu-vecgen: bad argument near '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }
  // The probe kernels' instruction (mma.sync on sm90) has the k of its preset (tc/presets.hpp).
  // (f64: the DMMA preset; A x B mixes: theirs.)
  const tc::preset *p = tc::find_preset(tc::arch::sm90, tc::instr_kind::mma, v.in, v.b_format(),
                                        format_id::fp32, format_id::fp32);
  if (!p) p = tc::find_preset(tc::arch::sm90, tc::instr_kind::mma, v.in, v.b_format(), v.out, v.out);
  v.k = k > 0 ? k : p ? p->k : 16;
  if ((v.vec > 0) != (v.scale != tc::scale_kind::none) || (v.vec > 0 && v.k % v.vec != 0)) {
    std::fprintf(
        stderr,
        "bf16emu-vecgen: --scale-format and --scale-vec go together, with --k a multiple of the vec\n");
    return 2;
  }
  gpu::generate(v, kind, count, seed);
  std::ios::sync_with_stdio(false);
  gpu::write_lines(std::cout, v, notes);
  return std::cout.good() ? 0 : 1;
}
