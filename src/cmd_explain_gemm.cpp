// bf16emu CLI: `bf16emu explain-gemm`, which member of the GEMM family (tc/gemm_family.hpp,
// docs/explain-gemm.md) reproduces a GEMM result bit for bit. Reads A, B, the result and
// optionally C from .npy files (io/npy.hpp); the search is the library's (tc::search_family).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <bf16emu/tc/gemm_family.hpp>

#include "command.hpp"
#include "io/arch_name.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/npy.hpp"
#include "io/tc_trace.hpp"
#include "options.hpp"

namespace bf16emu::cli {

namespace {

struct explain_cli {
  std::string a, b, c, result, a_format, c_format, result_format, arch;
  unsigned max_split = 4, top = 10, threads = 0;
  std::uint64_t sample = 4096;
  bool no_ieee = false, no_presets = false, no_c_at_end = false, json = false;
};

using io::hexfloat;
using io::shorten; // control characters escaped, long tokens cut (issue 28)
std::string hex_of(format_id f, std::uint64_t bits) { return io::mma_hex(f, bits); }

npy::array read_2d(const std::string &path, const char *what) {
  npy::array a = io::rethrow_as<bad_input>([&] { return npy::read(path); });
  if (a.shape.size() != 2)
    throw bad_input(std::string(what) + " (" + shorten(path) + "): a 2-d array is needed, got " +
                    std::to_string(a.shape.size()) + " dimensions");
  return a;
}

// The format an array holds: float32 is fp32 unless `named` says otherwise (then its values must
// be exact in it); uint16 holds bit patterns of `named` (default fallback); float64 is refused.
format_id format_of(const npy::array &a, const std::string &named, format_id fallback, const char *what) {
  if (a.type == npy::dtype::f64)
    throw bad_input(std::string(what) +
                    ": float64 is not a format of the GEMM family (save float32 or uint16 bits)");
  if (named.empty()) return a.type == npy::dtype::f32 ? format_id::fp32 : fallback;
  const format_id f = io::rethrow_as<bad_input>([&] { return io::parse_format(named); });
  if (a.type == npy::dtype::u16 && io::describe(f).width != 16)
    throw bad_input(std::string(what) + ": uint16 holds 16-bit patterns, not " + io::name(f));
  return f;
}

// The array's elements as values of F: uint16 bit patterns as they are, float32 values converted
// exactly (an inexact one is bad input).
template <class F> std::vector<fp<F>> elements(const npy::array &a, const char *what) {
  std::vector<fp<F>> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (a.type == npy::dtype::u16) {
      v[i] = fp<F>::from_bits(a.u16[i]);
      continue;
    }
    const auto r = convert<F>(from_float(a.f32[i]));
    if (!convert<binary32>(r.value).value.is_nan() &&
        convert<binary32>(r.value).value.bits != from_float(a.f32[i]).bits)
      throw bad_input(std::string(what) + ": element " + std::to_string(i) + " (" + hexfloat(a.f32[i]) +
                      ") is not exact in the given format");
    v[i] = r.value;
  }
  return v;
}

void print_member_json(io::json_writer &w, const tc::gemm_member &m) {
  w.kv("name", tc::member_name(m)).kv("engine", tc::to_string(m.engine));
  if (m.p) {
    w.kv("arch", tc::to_string(m.p->arch)).kv("ptx", m.p->ptx);
    w.key("same_arithmetic").begin_array();
    for (const tc::preset *q : tc::preset_aliases(m.p))
      w.value(std::string(tc::to_string(q->arch)) + " " + q->ptx);
    w.end_array();
  }
  w.kv("split_k", m.split_k).kv("slice", m.slice).kv("order", tc::to_string(m.order));
  w.kv("partial_format", io::name(m.partial)).kv("c_entry", tc::to_string(m.c));
}

template <class In, class Out>
void run_typed(const explain_cli &o, const npy::array &an, const npy::array &bn, const npy::array *cn,
               const npy::array &rn, format_id in, format_id fc, format_id fd) {
  const int M = int(an.shape[0]), K = int(an.shape[1]), N = int(bn.shape[1]);
  const std::vector<fp<In>> A = elements<In>(an, "--a"), B = elements<In>(bn, "--b");
  const std::vector<fp<Out>> R = elements<Out>(rn, "--result");
  std::vector<fp<binary32>> C;
  if (cn)
    visit_format(fc, [&](auto f) {
      using F = decltype(f);
      if constexpr (F::precision <= 24 && F::width <= 32) {
        for (const fp<F> &x : elements<F>(*cn, "--c"))
          C.push_back(convert<binary32>(x).value);
      }
    });
  tc::family_options fo;
  fo.max_split = int(o.max_split);
  fo.ieee = !o.no_ieee;
  fo.presets = !o.no_presets;
  fo.c_at_end = !o.no_c_at_end;
  if (!o.arch.empty()) {
    fo.arch_only = true;
    if (!io::parse_arch_name(o.arch, fo.arch)) throw bad_input("unknown --arch '" + shorten(o.arch) + "'");
  }
  const std::vector<tc::gemm_member> family = tc::enumerate_family(in, fd, K, cn != nullptr, fo);
  if (family.empty())
    throw bad_input(std::string("no member of the family takes ") + io::name(in) +
                    " inputs with these options");
  const tc::search_result res =
      tc::search_family<In, Out>(family, M, N, K, A.data(), K, B.data(), N, C.empty() ? nullptr : C.data(), N,
                                 R.data(), N, fd, long(o.sample), o.threads);
  const bool matched = res.matches > 0;
  // With no match: the best member's first mismatch, its slices' partials and blocks.
  struct block_rec {
    int slice;
    tc::block_trace t;
  };
  std::vector<block_rec> blocks;
  fp<binary32> partials[tc::max_split];
  long fi = -1, fj = -1;
  fp<Out> got{};
  if (!matched && !res.ranking.empty()) {
    const tc::member_score &best = res.ranking.front();
    fi = best.first_mismatch / N;
    fj = best.first_mismatch % N;
    auto fn = [&](int slice, const tc::block_trace &t) { blocks.push_back({slice, t}); };
    const fp<binary32> c = C.empty() ? fp<binary32>::from_bits(0) : C[std::size_t(fi * N + fj)];
    got = convert<Out>(tc::member_dot<In>(best.member, A.data() + fi * K, 1, B.data() + fj, N, K, c, fd,
                                          partials, &fn))
              .value;
  }
  const std::size_t shown = o.top < res.ranking.size() ? o.top : res.ranking.size();
  const format_id acc_fmt = matched ? fd : tc::accumulator_format(res.ranking.front().member);
  if (o.json) {
    io::json_writer w(std::cout);
    w.begin_object().kv("members", std::uint64_t(family.size())).kv("sample", std::int64_t(res.sample));
    w.kv("elements", std::int64_t(M) * N).kv("matches", std::int64_t(res.matches));
    w.key("match");
    if (matched) {
      w.begin_object();
      print_member_json(w, res.ranking.front().member);
      w.end_object();
    } else {
      w.null();
    }
    w.key("first_unexplained");
    if (res.first_unexplained >= 0)
      w.begin_array()
          .value(std::int64_t(res.first_unexplained / N))
          .value(std::int64_t(res.first_unexplained % N))
          .end_array();
    else
      w.null();
    w.key("ranking").begin_array();
    for (std::size_t u = 0; u < shown; ++u) {
      const tc::member_score &s = res.ranking[u];
      w.begin_object();
      print_member_json(w, s.member);
      w.kv("checked", std::int64_t(s.checked)).kv("mismatches", std::int64_t(s.mismatches));
      w.kv("first_mismatch", std::int64_t(s.first_mismatch)).kv("all", s.all);
      w.end_object();
    }
    w.end_array();
    w.key("mismatch");
    if (fi >= 0) {
      w.begin_object().kv("member", tc::member_name(res.ranking.front().member));
      w.key("element").begin_array().value(std::int64_t(fi)).value(std::int64_t(fj)).end_array();
      w.kv("result", hex_of(fd, R[std::size_t(fi * N + fj)].bits)).kv("member_value", hex_of(fd, got.bits));
      w.key("partials").begin_array();
      for (int s = 0; s < tc::slice_count(res.ranking.front().member, K); ++s)
        w.value(hex_of(format_id::fp32, partials[s].bits));
      w.end_array();
      w.key("blocks").begin_array();
      for (const block_rec &b : blocks) {
        w.begin_object().kv("slice", b.slice);
        io::write_block_members(w, b.t, acc_fmt);
        w.end_object();
      }
      w.end_array();
      w.end_object();
    } else {
      w.null();
    }
    w.end_object();
    std::cout << "\n";
    return;
  }
  std::printf("searched %zu members, each on %ld of %ld elements\n", family.size(), res.sample, long(M) * N);
  if (matched) {
    const tc::gemm_member &m = res.ranking.front().member;
    std::printf("match: %s\n", tc::member_name(m).c_str());
    if (m.p)
      for (const tc::preset *q : tc::preset_aliases(m.p))
        if (q != m.p) std::printf("  same arithmetic: %s %s\n", tc::to_string(q->arch), q->ptx);
    if (res.matches > 1) std::printf("  %ld other member(s) also reproduce every element\n", res.matches - 1);
  } else {
    std::printf("no member reproduces the result\n");
    if (res.first_unexplained >= 0)
      std::printf("first element no member reproduces: (%ld, %ld)\n", res.first_unexplained / N,
                  res.first_unexplained % N);
  }
  std::printf("ranking (mismatching elements / compared):\n");
  for (std::size_t u = 0; u < shown; ++u)
    std::printf("  %6ld / %-6ld %s\n", res.ranking[u].mismatches, res.ranking[u].checked,
                tc::member_name(res.ranking[u].member).c_str());
  if (fi >= 0) {
    const tc::gemm_member &m = res.ranking.front().member;
    std::printf("best member's first mismatch at (%ld, %ld): result %s, member %s\n", fi, fj,
                hex_of(fd, R[std::size_t(fi * N + fj)].bits).c_str(), hex_of(fd, got.bits).c_str());
    std::printf("  partials (%s, as fp32 bits):", io::name(m.partial));
    for (int s = 0; s < tc::slice_count(m, K); ++s)
      std::printf(" %s", hex_of(format_id::fp32, partials[s].bits).c_str());
    std::printf("\n");
    for (const block_rec &b : blocks) {
      std::printf("  slice %d block %d k=%d..%d c=%s d=%s", b.slice, b.t.block, b.t.k0,
                  b.t.k0 + b.t.n_products - 1, hex_of(acc_fmt, b.t.c_bits).c_str(),
                  hex_of(acc_fmt, b.t.d_bits).c_str());
      if (b.t.special) {
        std::printf(" special (NaN/Inf path)\n");
        continue;
      }
      double lost = 0;
      for (int i = 0; i <= b.t.n_products; ++i)
        lost += b.t.terms[i].lost;
      std::printf(" max_exp=%d lsb_exp=%d lost=%s trunc_err=%s\n", b.t.max_exp, b.t.lsb_exp,
                  hexfloat(lost).c_str(), hexfloat(b.t.trunc_err).c_str());
    }
  }
}

void run(const explain_cli &o) {
  const npy::array an = read_2d(o.a, "--a"), bn = read_2d(o.b, "--b"), rn = read_2d(o.result, "--result");
  std::unique_ptr<npy::array> cn;
  if (!o.c.empty()) cn = std::make_unique<npy::array>(read_2d(o.c, "--c"));
  const std::size_t M = an.shape[0], K = an.shape[1], N = bn.shape[1];
  if (bn.shape[0] != K)
    throw bad_input("--b: " + std::to_string(bn.shape[0]) + " rows, but --a has " + std::to_string(K) +
                    " columns");
  if (rn.shape[0] != M || rn.shape[1] != N)
    throw bad_input("--result: shape is not " + std::to_string(M) + " x " + std::to_string(N));
  if (cn && (cn->shape[0] != M || cn->shape[1] != N))
    throw bad_input("--c: shape is not " + std::to_string(M) + " x " + std::to_string(N));
  if (K > (1u << 24) || M * N > (std::size_t(1) << 32))
    throw bad_input("the GEMM is too large for explain-gemm");
  const format_id in = format_of(an, o.a_format, format_id::bf16, "--a");
  if (format_of(bn, o.a_format, format_id::bf16, "--b") != in)
    throw bad_input("--b holds another format than --a");
  const format_id fd = format_of(rn, o.result_format, format_id::bf16, "--result");
  const format_id fc = cn ? format_of(*cn, o.c_format, format_id::bf16, "--c") : format_id::fp32;
  if (fd != format_id::fp32 && fd != format_id::fp16 && fd != format_id::bf16)
    throw bad_input(std::string("--result-format: the GEMM family has D in fp32, fp16 or bf16, not ") +
                    io::name(fd));
  if (fc != format_id::fp32 && fc != format_id::fp16 && fc != format_id::bf16)
    throw bad_input(std::string("--c-format: C is fp32, fp16 or bf16, not ") + io::name(fc));
  if (in != format_id::bf16 && in != format_id::fp16 && in != format_id::fp32)
    throw bad_input(std::string("--a-format: explain-gemm reads A and B in bf16, fp16 or fp32, not ") +
                    io::name(in));
  visit_format(in, [&](auto fi) {
    visit_format(fd, [&](auto fo) {
      using In = decltype(fi);
      using Out = decltype(fo);
      if constexpr ((std::is_same_v<In, bfloat16> || std::is_same_v<In, binary16> ||
                     std::is_same_v<In, binary32>)&&(std::is_same_v<Out, bfloat16> ||
                                                     std::is_same_v<Out, binary16> ||
                                                     std::is_same_v<Out, binary32>))
        run_typed<In, Out>(o, an, bn, cn.get(), rn, in, fc, fd);
    });
  });
}

void register_explain_gemm(CLI::App &app) {
  auto o = std::make_shared<explain_cli>();
  CLI::App *sub = app.add_subcommand(
      "explain-gemm",
      "which way of computing a GEMM (preset, split-k, order of the partial sums, C) reproduces "
      "a result bit for bit");
  sub->add_option("--a", o->a, "A (M x K) as .npy: uint16 bit patterns (--a-format, default bf16) or float32")
      ->required();
  sub->add_option("--b", o->b, "B (K x N) as .npy, in A's format")->required();
  sub->add_option(
         "--result", o->result,
         "the GEMM result D (M x N) as .npy: float32 (fp32) or uint16 bits (--result-format, default "
         "bf16)")
      ->required();
  sub->add_option("--c", o->c, "C (M x N) as .npy: float32 or uint16 bits (--c-format, default bf16)");
  sub->add_option("--a-format", o->a_format,
                  "format of A and B: bf16, fp16 (uint16 bits or exact float32) or fp32");
  sub->add_option("--c-format", o->c_format, "format of C: fp32, fp16, bf16");
  sub->add_option("--result-format", o->result_format, "format of the result: fp32, fp16, bf16");
  sub->add_option("--arch", o->arch, "only the presets of this architecture (sm80, hopper, ...)");
  add_count(sub, "--max-split", o->max_split, "split-k counts 1..N (default 4)", 1, unsigned(tc::max_split));
  add_count(sub, "--sample", o->sample, "elements every member is compared on (default 4096)", 1, 1u << 30);
  add_count(sub, "--top", o->top, "members shown in the ranking (default 10)", 0, 1u << 20);
  add_count(sub, "--threads", o->threads, "worker threads, 1..1024 (default: all cores)", 1, 1024);
  sub->add_flag("--no-ieee", o->no_ieee, "leave out the IEEE fp32 members");
  sub->add_flag("--no-presets", o->no_presets, "leave out the tensor-core members");
  sub->add_flag("--no-c-at-end", o->no_c_at_end, "C enters the first slice only");
  sub->add_flag("--json", o->json, "one JSON object: match, matches, ranking, first_unexplained, mismatch");
  sub->footer("The family, the search and its cost: docs/explain-gemm.md.\n"
              "Example:\n"
              "  bf16emu explain-gemm --a a.npy --b b.npy --result d.npy --c c.npy --c-format fp32\n"
              "Exit status 0 whether or not a member matches; 2 for bad input.");
  sub->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(31, register_explain_gemm);

} // namespace bf16emu::cli
