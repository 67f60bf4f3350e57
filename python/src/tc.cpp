// bf16emu Python module: the tensor-core model (tc/mma.hpp) on NumPy bit patterns.
// gemm runs in chunks of rows on bf16emu::parallel_for with the GIL released; one output element's
// blocks can be traced (the block_trace records of tc/block.hpp as dicts).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include <bf16emu/parallel.hpp>
#include <bf16emu/tc.hpp>
#include <bf16emu/tc/gemm_family.hpp>

#include "io/arch_name.hpp"
#include "io/mma_amd.hpp"
#include "io/mma_scaled.hpp"
#include "io/names.hpp"
#include "io/preset_lookup.hpp"
#include "module.hpp"

namespace bf16emu::py {

namespace {

tc::zero_exp zero_rule(const std::string &name) {
  tc::zero_exp z = tc::zero_exp::e_zero;
  if (!name.empty() && !tc::parse_zero_exp(name.c_str(), z))
    throw pybind11::value_error("argument 'zero_exp': unknown rule '" + name.substr(0, 80) +
                                "' (e_zero or default, mmasim)");
  return z;
}

const tc::preset &lookup(const std::string &arch, const std::string &kind, format_id in, format_id out) {
  tc::arch a{};
  if (!io::parse_arch_name(arch, a))
    throw pybind11::value_error("argument 'arch': unknown architecture '" + arch.substr(0, 80) + "' (" +
                                io::arch_names(" or ") + ")");
  tc::instr_kind k = tc::default_kind(a);
  if (!kind.empty() && !io::parse_instr_name(kind, k))
    throw pybind11::value_error("argument 'kind': unknown instruction family '" + kind.substr(0, 80) +
                                "' (mma, wgmma, tcgen05)");
  const tc::preset *p = tc::find_preset(a, k, in, out);
  if (!p) throw pybind11::value_error(io::no_preset_message({a, k, in, in, out, out}, io::front_end::python));
  return *p;
}

pybind11::dict block_dict(const tc::block_trace &t) {
  pybind11::dict d;
  d["block"] = t.block;
  d["k0"] = t.k0;
  d["n_products"] = t.n_products;
  d["n_real"] = t.n_real;
  d["special"] = t.special;
  d["max_exp"] = int(t.max_exp);
  d["lsb_exp"] = int(t.lsb_exp);
  d["aligned_sum"] = t.aligned_sum;
  d["sum_value"] = t.sum_value;
  d["trunc_err"] = t.trunc_err;
  d["c_bits"] = t.c_bits;
  d["d_bits"] = t.d_bits;
  pybind11::list terms;
  for (int i = 0; i <= t.n_products; ++i) {
    pybind11::dict term;
    term["zero"] = t.terms[i].zero;
    term["exp"] = int(t.terms[i].exp);
    term["shift"] = int(t.terms[i].shift);
    term["lost"] = t.terms[i].lost;
    terms.append(term);
  }
  d["terms"] = terms; // products, then c
  return d;
}

// ---------------------------------------------------------------------------
// The GEMM family (tc/gemm_family.hpp): one member's GEMM, and the search.

// Member <-> dict. The dict: engine ("preset", "ieee-fma", "ieee-mul-add"), arch, kind (the
// preset's), split_k, slice, order, partial_format, c_entry; to C++ also "accumulator" (the
// preset's D format, fp32 or fp16).
tc::gemm_member member_from(const pybind11::dict &d, format_id in) {
  tc::gemm_member m;
  const std::string engine = d["engine"].cast<std::string>();
  if (!tc::parse_engine(engine, m.engine))
    throw pybind11::value_error("unknown engine '" + engine.substr(0, 80) +
                                "' (preset, ieee-fma, ieee-mul-add)");
  if (m.engine == tc::dot_engine::preset)
    m.p = &lookup(d["arch"].cast<std::string>(), d["kind"].cast<std::string>(), in,
                  io::parse_format(d["accumulator"].cast<std::string>()));
  m.split_k = d["split_k"].cast<int>();
  m.slice = d["slice"].cast<int>();
  const std::string order = d["order"].cast<std::string>(), c = d["c_entry"].cast<std::string>();
  if (!tc::parse_order(order, m.order))
    throw pybind11::value_error("argument 'order': unknown order '" + order.substr(0, 80) +
                                "' (sequential, pairwise)");
  if (!tc::parse_c_entry(c, m.c))
    throw pybind11::value_error("argument 'c_entry': unknown entry '" + c.substr(0, 80) + "' (first, end)");
  m.partial = io::parse_format(d["partial_format"].cast<std::string>());
  return m;
}

pybind11::dict member_dict(const tc::gemm_member &m) {
  pybind11::dict d;
  d["name"] = tc::member_name(m);
  d["engine"] = tc::to_string(m.engine);
  if (m.p) {
    d["arch"] = tc::to_string(m.p->arch);
    d["kind"] = tc::to_string(m.p->kind);
    d["ptx"] = m.p->ptx;
    d["gpu"] = m.p->gpu;
    pybind11::list same;
    for (const tc::preset *q : tc::preset_aliases(m.p))
      same.append(std::string(tc::to_string(q->arch)) + " " + q->ptx);
    d["same_arithmetic"] = same; // presets a GEMM cannot tell apart from this one
  }
  d["accumulator"] = io::name(tc::accumulator_format(m));
  d["split_k"] = m.split_k;
  d["slice"] = m.slice;
  d["order"] = tc::to_string(m.order);
  d["partial_format"] = io::name(m.partial);
  d["c_entry"] = tc::to_string(m.c);
  return d;
}

// C (any of fp32, fp16, bf16) as binary32 containers (exact); empty for None.
std::vector<fp<binary32>> widen_c(const pybind11::object &c, const std::string &c_name, long M, long N) {
  std::vector<fp<binary32>> v;
  if (c.is_none()) return v;
  const pybind11::array arr = c.cast<pybind11::array>();
  if (arr.ndim() != 2 || arr.shape(0) != M || arr.shape(1) != N)
    throw pybind11::value_error("argument 'c': shape " + shape_text(arr) + " is not (" + std::to_string(M) +
                                ", " + std::to_string(N) + ")");
  const format_id fc = io::parse_format(c_name);
  v.resize(std::size_t(M * N));
  visit_format(fc, [&](auto f) {
    using F = decltype(f);
    if constexpr (F::precision <= 24) {
      const auto *src = reinterpret_cast<const fp<F> *>(arr.data());
      for (long i = 0; i < M * N; ++i)
        v[std::size_t(i)] = convert<binary32>(src[i]).value;
    } else {
      throw pybind11::value_error("argument 'c': fp64 is not a C format of the GEMM family");
    }
  });
  return v;
}

void check_ab(const pybind11::array &a, const pybind11::array &b) {
  if (a.ndim() != 2 || b.ndim() != 2)
    throw pybind11::value_error("arguments 'a' and 'b' must be 2-d (M x K, K x N)");
  if (b.shape(0) != a.shape(1))
    throw pybind11::value_error("argument 'b': " + std::to_string(b.shape(0)) + " rows, but 'a' has " +
                                std::to_string(a.shape(1)) + " columns");
}

// Visits the (A/B format, D format) pair the family takes: inputs bf16, fp16, tf32, e4m3, e5m2
// or fp32; D fp32, fp16 or bf16.
template <class Fn> void visit_family(format_id in, format_id out, Fn &&fn) {
  if (out != format_id::fp32 && out != format_id::fp16 && out != format_id::bf16)
    throw pybind11::value_error(std::string("the GEMM family has D in fp32, fp16 or bf16, not ") +
                                io::name(out));
  if (in != format_id::bf16 && in != format_id::fp16 && in != format_id::tf32 && in != format_id::e4m3 &&
      in != format_id::e5m2 && in != format_id::fp32)
    throw pybind11::value_error(
        std::string("the GEMM family takes A and B in bf16, fp16, tf32, e4m3, e5m2 or "
                    "fp32, not ") +
        io::name(in));
  visit_format(in, [&](auto fi) {
    visit_format(out, [&](auto fo) {
      using In = decltype(fi);
      using Out = decltype(fo);
      if constexpr (In::precision <= 24 && In::width <= 32 &&
                    (std::is_same_v<Out, binary32> || std::is_same_v<Out, binary16> ||
                     std::is_same_v<Out, bfloat16>))
        fn(In{}, Out{});
    });
  });
}

// D = A B + C with one member; with trace_i/j >= 0 also that element's blocks (each with its
// slice) and its slices' partials (as bits of the partial format, held in fp32 bits).
pybind11::tuple gemm_member_bits(const pybind11::array &a, const pybind11::array &b,
                                 const pybind11::object &c, const std::string &in_name,
                                 const std::string &c_name, const std::string &out_name,
                                 const pybind11::dict &member, long trace_i, long trace_j, unsigned threads) {
  check_ab(a, b);
  const format_id in = io::parse_format(in_name), out = io::parse_format(out_name);
  const long M = long(a.shape(0)), K = long(a.shape(1)), N = long(b.shape(1));
  const tc::gemm_member m = member_from(member, in);
  if (!tc::valid(m, int(K), out))
    throw pybind11::value_error("the member is not one of the family: " + tc::member_name(m) + " (at most " +
                                std::to_string(tc::max_split) +
                                " slices; partials in fp32 or in D's format " + io::name(out) + ")");
  if (trace_i >= M || trace_j >= N)
    throw pybind11::value_error("argument 'trace': element outside the output");
  const std::vector<fp<binary32>> cv = widen_c(c, c_name, M, N);
  pybind11::array d;
  pybind11::list blocks, partials;
  visit_family(in, out, [&](auto fi, auto fo) {
    using In = decltype(fi);
    using Out = decltype(fo);
    d = pybind11::array(pybind11::dtype(Out::width == 32 ? "uint32" : "uint16"),
                        std::vector<pybind11::ssize_t>{M, N});
    const auto *A = reinterpret_cast<const fp<In> *>(a.data());
    const auto *B = reinterpret_cast<const fp<In> *>(b.data());
    auto *D = reinterpret_cast<fp<Out> *>(d.mutable_data());
    {
      const progress_fn check = signal_checker(); // Ctrl-C between rows
      pybind11::gil_scoped_release release;
      tc::member_gemm<In, Out>(m, int(M), int(N), int(K), A, K, B, N, cv.empty() ? nullptr : cv.data(), N, D,
                               N, out, threads, check);
    }
    if (trace_i >= 0) {
      std::vector<std::pair<int, tc::block_trace>> rec;
      auto fn = [&](int slice, const tc::block_trace &t) { rec.emplace_back(slice, t); };
      fp<binary32> part[tc::max_split];
      const fp<binary32> cij =
          cv.empty() ? fp<binary32>::from_bits(0) : cv[std::size_t(trace_i * N + trace_j)];
      tc::member_dot<In>(m, A + trace_i * K, 1, B + trace_j, N, int(K), cij, out, part, &fn);
      for (const auto &[slice, t] : rec) {
        pybind11::dict bd = block_dict(t);
        bd["slice"] = slice;
        blocks.append(bd);
      }
      for (int s = 0; s < tc::slice_count(m, int(K)); ++s)
        partials.append(part[s].bits);
    }
  });
  return pybind11::make_tuple(d, blocks, partials, member_dict(m));
}

// The search: the family for these formats (opts: max_split, presets, ieee, c_at_end, arch,
// sample), every member scored against r (M x N in D's format). Returns a dict: members (the
// family's size), sample, first_unexplained, matches, ranking (member dicts with checked,
// mismatches, first_mismatch, all).
pybind11::dict explain_gemm_bits(const pybind11::array &a, const pybind11::array &b,
                                 const pybind11::object &c, const pybind11::array &r,
                                 const std::string &in_name, const std::string &c_name,
                                 const std::string &out_name, const pybind11::dict &opts, unsigned threads) {
  check_ab(a, b);
  const format_id in = io::parse_format(in_name), out = io::parse_format(out_name);
  const long M = long(a.shape(0)), K = long(a.shape(1)), N = long(b.shape(1));
  if (r.ndim() != 2 || r.shape(0) != M || r.shape(1) != N)
    throw pybind11::value_error("argument 'result': shape " + shape_text(r) + " is not (" +
                                std::to_string(M) + ", " + std::to_string(N) + ")");
  const std::vector<fp<binary32>> cv = widen_c(c, c_name, M, N);
  tc::family_options o;
  o.max_split = opts["max_split"].cast<int>();
  o.presets = opts["presets"].cast<bool>();
  o.ieee = opts["ieee"].cast<bool>();
  o.c_at_end = opts["c_at_end"].cast<bool>();
  const std::string arch = opts["arch"].cast<std::string>();
  if (!arch.empty()) {
    o.arch_only = true;
    if (!io::parse_arch_name(arch, o.arch))
      throw pybind11::value_error("argument 'arch': unknown architecture '" + arch.substr(0, 80) + "'");
  }
  const long sample = opts["sample"].cast<long>();
  if (o.max_split < 1 || o.max_split > tc::max_split)
    throw pybind11::value_error("argument 'max_split' must be in [1, " + std::to_string(tc::max_split) + "]");
  const std::vector<tc::gemm_member> family = tc::enumerate_family(in, out, int(K), !cv.empty(), o);
  tc::search_result res;
  const progress_fn check = signal_checker(); // Ctrl-C between members
  visit_family(in, out, [&](auto fi, auto fo) {
    using In = decltype(fi);
    using Out = decltype(fo);
    pybind11::gil_scoped_release release;
    res = tc::search_family<In, Out>(
        family, int(M), int(N), int(K), reinterpret_cast<const fp<In> *>(a.data()), K,
        reinterpret_cast<const fp<In> *>(b.data()), N, cv.empty() ? nullptr : cv.data(), N,
        reinterpret_cast<const fp<Out> *>(r.data()), N, out, sample, threads, check);
  });
  pybind11::dict d;
  d["members"] = family.size();
  d["sample"] = res.sample;
  d["first_unexplained"] = res.first_unexplained;
  d["matches"] = res.matches;
  pybind11::list ranking;
  for (const tc::member_score &s : res.ranking) {
    pybind11::dict e = member_dict(s.member);
    e["checked"] = s.checked;
    e["mismatches"] = s.mismatches;
    e["first_mismatch"] = s.first_mismatch;
    e["all"] = s.all;
    ranking.append(e);
  }
  d["ranking"] = ranking;
  return d;
}

// (M, K, N) of A (M x K), B (K x N), C (M x N); a ValueError names a wrong shape. With single (an
// mma call), the shapes must be the instruction's m x k, k x n (ptx names it in the message).
struct dims {
  long M, K, N;
};
dims gemm_dims(const pybind11::array &a, const pybind11::array &b, const pybind11::array &c, bool single,
               int m, int n, int k, const char *ptx) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2)
    throw pybind11::value_error("arguments 'a', 'b', 'c' must be 2-d (M x K, K x N, M x N)");
  const long M = long(a.shape(0)), K = long(a.shape(1)), N = long(b.shape(1));
  if (b.shape(0) != K)
    throw pybind11::value_error("argument 'b': " + std::to_string(b.shape(0)) + " rows, but 'a' has " +
                                std::to_string(K) + " columns");
  if (c.shape(0) != M || c.shape(1) != N)
    throw pybind11::value_error("argument 'c': shape " + shape_text(c) + " is not (" + std::to_string(M) +
                                ", " + std::to_string(N) + ")");
  if (single && (M != m || N != n || K != k))
    throw pybind11::value_error(std::string("mma on ") + ptx + " takes a " + std::to_string(m) + "x" +
                                std::to_string(k) + ", b " + std::to_string(k) + "x" + std::to_string(n) +
                                "; got a " + shape_text(a) + ", b " + shape_text(b));
  return {M, K, N};
}

// D[i][j] = dot(i, j) for every element, rows in parallel with the GIL released; column j of B
// (and of sb, S entries) gathered into contiguous buffers. Bit patterns as uint64.
template <class Dot>
pybind11::array_t<std::uint64_t> gemm_elements(const dims &d, const std::uint64_t *B, const std::uint8_t *sb,
                                               long S, unsigned threads, Dot dot) {
  pybind11::array_t<std::uint64_t> out({d.M, d.N});
  std::uint64_t *D = out.mutable_data();
  pybind11::gil_scoped_release release;
  parallel_for(
      std::uint64_t(d.M), threads,
      [&](std::uint64_t i, unsigned) {
        std::vector<std::uint64_t> col(std::size_t(d.K));
        std::vector<std::uint8_t> scol(static_cast<std::size_t>(S));
        for (long j = 0; j < d.N; ++j) {
          for (long k = 0; k < d.K; ++k)
            col[std::size_t(k)] = B[k * d.N + j];
          for (long s = 0; s < S; ++s)
            scol[std::size_t(s)] = sb[s * d.N + j];
          D[long(i) * d.N + j] = dot(long(i), j, col.data(), scol.data());
        }
      },
      signal_checker());
  return out;
}

// D = A B + C on a mixed-format or block-scaled kind (tc/scaled.hpp, resolved as `bf16emu mma
// --kind` does): A, B, C bit patterns (uint64; C in the D format), scale factors sa (M x K/vec)
// and sb (K/vec x N) as bytes (ignored by the unscaled kind::f8f6f4). Returns D's bit patterns.
pybind11::array_t<std::uint64_t>
gemm_scaled_bits(const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &a,
                 const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &b,
                 const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &c,
                 const pybind11::array_t<std::uint8_t, pybind11::array::c_style> &sa,
                 const pybind11::array_t<std::uint8_t, pybind11::array::c_style> &sb,
                 const std::string &a_format, const std::string &b_format, const std::string &out,
                 const std::string &arch, const std::string &kind, const std::string &scale_format,
                 unsigned vec, const std::string &zero_exp, bool single, unsigned threads) {
  format_id fa{}, fb{}, fo{};
  io::scaled_mma_options so;
  so.kind = kind, so.b_format = b_format, so.scale_format = scale_format, so.vec = vec;
  io::mma_common mc;
  mc.arch = arch, mc.a_format = a_format, mc.out = out;
  const tc::scaled_preset &P = io::resolve_scaled(so, mc, fa, fb, fo);
  tc::scaled_params p = P.params;
  p.zeros = zero_rule(zero_exp);
  const dims d = gemm_dims(a, b, c, single, P.m, P.n, p.k, P.ptx);
  const bool scaled = p.scale != tc::scale_kind::none;
  const long S = scaled ? d.K / p.vec : 0;
  if (scaled && d.K % p.k != 0)
    throw pybind11::value_error("kind::" + std::string(P.kind) + " takes whole instructions: K = " +
                                std::to_string(d.K) + " is not a multiple of " + std::to_string(p.k));
  if (scaled && (sa.ndim() != 2 || sa.shape(0) != d.M || sa.shape(1) != S))
    throw pybind11::value_error("argument 'scale_a': shape " + shape_text(sa) + " is not (" +
                                std::to_string(d.M) + ", " + std::to_string(S) + "): one factor per " +
                                std::to_string(p.vec) + " k-elements of each row of a");
  if (scaled && (sb.ndim() != 2 || sb.shape(0) != S || sb.shape(1) != d.N))
    throw pybind11::value_error("argument 'scale_b': shape " + shape_text(sb) + " is not (" +
                                std::to_string(S) + ", " + std::to_string(d.N) + "): one factor per " +
                                std::to_string(p.vec) + " k-elements of each column of b");
  const std::uint64_t *A = a.data(), *C = c.data();
  const std::uint8_t *SA = scaled ? sa.data() : nullptr;
  return gemm_elements(d, b.data(), scaled ? sb.data() : nullptr, S, threads,
                       [&](long i, long j, const std::uint64_t *bcol, const std::uint8_t *scol) {
                         return io::scaled_dot_bits(p, fa, fb, fo, A + i * d.K, bcol, int(d.K),
                                                    scaled ? SA + i * S : nullptr, scaled ? scol : nullptr,
                                                    C[i * d.N + j]);
                       });
}

// D = A B + C on an AMD CDNA MFMA instruction (tc/amd.hpp, resolved as `bf16emu mma --arch cdnaN`
// does: instr names it, or a_format picks the first of that type). Bit patterns as uint64.
pybind11::array_t<std::uint64_t>
gemm_amd_bits(const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &a,
              const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &b,
              const pybind11::array_t<std::uint64_t, pybind11::array::c_style> &c, const std::string &arch,
              const std::string &instr, const std::string &a_format, const std::string &out, bool single,
              unsigned threads) {
  const tc::amd_preset *P = io::resolve_amd(arch, instr, a_format, out);
  if (!P)
    throw pybind11::value_error("argument 'arch': '" + arch.substr(0, 80) + "' is not an AMD CDNA arch");
  const dims d = gemm_dims(a, b, c, single, P->m, P->n, P->k, P->name);
  const std::uint64_t *A = a.data(), *C = c.data();
  return gemm_elements(d, b.data(), nullptr, 0, threads,
                       [&](long i, long j, const std::uint64_t *bcol, const std::uint8_t *) {
                         return tc::amd_dot(*P, A + i * d.K, bcol, int(d.K), C[i * d.N + j]);
                       });
}

// The formats an AMD instruction takes and writes, for the Python side's conversions:
// (a, b, out) as `bf16emu mma` format names (fp8/bf8: the FNUZ bytes).
pybind11::tuple amd_formats(const std::string &arch, const std::string &instr, const std::string &a_format,
                            const std::string &out) {
  const tc::amd_preset *P = io::resolve_amd(arch, instr, a_format, out);
  if (!P) return pybind11::make_tuple();
  return pybind11::make_tuple(to_string(P->a), to_string(P->b), to_string(P->out), P->name);
}

// Rows per chunk of gemm: one chunk per worker, cut to ~2^28 MACs a chunk (tens of ms, so that
// Ctrl-C is seen soon) but never to fewer than 16 rows when M has them. Each chunk is one call of
// the lane kernel, which decodes all of B again: that costs what 10 to 20 rows of products cost,
// whatever N and K, so chunks of 16 rows (N K above 2^24) run at about half the kernel's rate;
// there Ctrl-C comes first. Four chunks per worker of at most 2^24 MACs (before) left the Python
// face at 87 % of bench_tc on 512^3 and one thread; one chunk per worker gives 97-99 %
// (docs/performance.md, "bf16emu.gemm from Python").
std::uint64_t gemm_chunk_rows(long M, long N, long K, unsigned threads) {
  if (M <= 0) return 1;
  const std::uint64_t workers = resolve_threads(threads, std::uint64_t(M));
  std::uint64_t rows = (std::uint64_t(M) + workers - 1) / workers;
  const std::uint64_t per_row = std::uint64_t(std::max(1L, N)) * std::uint64_t(std::max(1L, K));
  rows = std::min(rows, std::max<std::uint64_t>(16, (std::uint64_t(1) << 28) / per_row));
  return std::max<std::uint64_t>(rows, 1);
}

// D[b] = A[b] B[b] + C[b] for every b < batch on the preset: A (batch x M x K), B (batch x K x N), C
// and D (batch x M x N), dense row-major; C null: +0 (D is zeroed and used as C). Chunks of rows of
// every product share one parallel_for with the GIL released, each chunk one whole-matrix call (the
// lane kernel decodes B's columns once per call, not once per row); every element is its own chain,
// so the bits depend neither on the chunking nor on the thread count.
template <class In, class Out>
void gemm_chunks(const tc::preset &P, long batch, long M, long N, long K, const fp<In> *A, const fp<In> *B,
                 const fp<Out> *C, fp<Out> *D, unsigned threads) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const auto rows =
      long(std::min<std::uint64_t>(std::uint64_t(M), gemm_chunk_rows(batch * M, N, K, threads)));
  const long per = (M + rows - 1) / rows; // chunks per product
  pybind11::gil_scoped_release release;
  parallel_for(
      std::uint64_t(batch * per), threads,
      [&](std::uint64_t c, unsigned) {
        const long b = long(c) / per, i = (long(c) % per) * rows, r = std::min(rows, M - i);
        const long d = (b * M + i) * N;
        if (!C) std::fill(D + d, D + d + r * N, fp<Out>{});
        tc::gemm<In, Out>(P, int(r), int(N), int(K), A + (b * M + i) * K, K, B + b * K * N, N,
                          C ? C + d : D + d, N, D + d, N);
      },
      signal_checker()); // Ctrl-C between chunks
}

// D = A B + C on the preset, A (M x K), B (K x N), C (M x N) row-major bit patterns; with
// trace_i/j >= 0, the blocks of D[trace_i][trace_j].
pybind11::tuple gemm_bits(const pybind11::array &a, const pybind11::array &b, const pybind11::array &c,
                          const std::string &in_name, const std::string &out_name, const std::string &arch,
                          const std::string &kind, bool single_instruction, long trace_i, long trace_j,
                          unsigned threads, const std::string &zero_exp) {
  const format_id in = io::parse_format(in_name), out = io::parse_format(out_name);
  tc::preset P = lookup(arch, kind, in, out);
  P.block.zeros = zero_rule(zero_exp);
  const dims dd = gemm_dims(a, b, c, single_instruction, P.m, P.n, P.k, P.ptx);
  const long M = dd.M, K = dd.K, N = dd.N;
  if (trace_i >= M || trace_j >= N)
    throw pybind11::value_error("argument 'trace': element outside the output");
  pybind11::array d = pybind11::array(c.dtype(), std::vector<pybind11::ssize_t>{M, N});
  pybind11::list blocks;
  visit_format(in, [&](auto fi) {
    visit_format(out, [&](auto fo) {
      using In = decltype(fi);
      using Out = decltype(fo);
      // Only the pairs a preset can have: 8/16/19-bit inputs, fp32 or fp16 accumulators.
      if constexpr (In::precision <= 11 && (std::is_same_v<Out, binary32> || std::is_same_v<Out, binary16>)) {
        const auto *A = reinterpret_cast<const fp<In> *>(a.data());
        const auto *B = reinterpret_cast<const fp<In> *>(b.data());
        const auto *C = reinterpret_cast<const fp<Out> *>(c.data());
        auto *D = reinterpret_cast<fp<Out> *>(d.mutable_data());
        gemm_chunks<In, Out>(P, 1, M, N, K, A, B, C, D, threads);
        if (trace_i >= 0) {
          std::vector<tc::block_trace> rec;
          auto tr = tc::make_block_tracer([&](const tc::block_trace &t) { rec.push_back(t); });
          // The preset's own accumulation (fused blocks, or two blocks and an add), as the untraced D.
          tc::preset_dot<In, Out>(P, A + trace_i * K, 1, B + trace_j, N, int(K), C[trace_i * N + trace_j],
                                  tr);
          for (const auto &t : rec)
            blocks.append(block_dict(t));
        }
      }
    });
  });
  pybind11::dict info;
  info["arch"] = tc::to_string(P.arch);
  info["gpu"] = P.gpu;
  info["ptx"] = P.ptx;
  info["m"] = P.m;
  info["n"] = P.n;
  info["k"] = P.k;
  info["block_size"] = P.block.L;
  info["alignment_bits"] = P.block.F;
  info["output_fraction_bits"] = P.block.out_frac;
  info["source"] = P.source;
  return pybind11::make_tuple(d, blocks, info);
}

// D[b] = A[b] B[b] for every b (C = +0): a (batch x M x K) and b (batch x K x N) C-contiguous bit
// patterns of in_name, D fp32 bit patterns (uint32, batch x M x N). One call for a whole batched
// product (bf16emu.torch's bmm/baddbmm, and its mm as a batch of one), so that its chunks share the
// workers; the preset's checks are gemm's.
pybind11::array gemm_batch_bits(const pybind11::array &a, const pybind11::array &b,
                                const std::string &in_name, const std::string &arch, unsigned threads) {
  const format_id in = io::parse_format(in_name);
  const tc::preset &P = lookup(arch, "", in, format_id::fp32);
  check_bits(a, in, "a");
  check_bits(b, in, "b");
  if (a.ndim() != 3 || b.ndim() != 3 || b.shape(0) != a.shape(0) || b.shape(1) != a.shape(2))
    throw pybind11::value_error("arguments 'a' and 'b' must be (batch, M, K) and (batch, K, N); got a " +
                                shape_text(a) + ", b " + shape_text(b));
  const long batch = long(a.shape(0)), M = long(a.shape(1)), K = long(a.shape(2)), N = long(b.shape(2));
  pybind11::array d = pybind11::array(pybind11::dtype("uint32"), std::vector<pybind11::ssize_t>{batch, M, N});
  auto *D = reinterpret_cast<fp<binary32> *>(d.mutable_data());
  visit_format(in, [&](auto fi) {
    using In = decltype(fi);
    if constexpr (In::precision <= 11)
      gemm_chunks<In, binary32>(P, batch, M, N, K, reinterpret_cast<const fp<In> *>(a.data()),
                                reinterpret_cast<const fp<In> *>(b.data()), nullptr, D, threads);
    else // (no preset takes such inputs with FP32 out: lookup refuses them first)
      throw pybind11::value_error("argument 'in_format': " + in_name.substr(0, 80) +
                                  " is not a tensor-core input");
  });
  return d;
}

} // namespace

void bind_tc(pybind11::module_ &m) {
  m.def("gemm", &gemm_bits,
        "D = A B + C on the tensor-core model; returns (D bits, trace blocks, preset info)");
  m.def("gemm_batch", &gemm_batch_bits,
        "D[b] = A[b] B[b] on the tensor-core model, C = +0; D fp32 bits (uint32, batch x M x N)");
  m.def("gemm_scaled", &gemm_scaled_bits,
        "D = A B + C on a mixed-format / block-scaled kind; D bits (uint64)");
  m.def("gemm_amd", &gemm_amd_bits, "D = A B + C on an AMD CDNA MFMA instruction; D bits (uint64)");
  m.def(
      "is_amd_arch",
      [](const std::string &name) {
        tc::amd_arch a{};
        return tc::parse_amd_arch(name, a);
      },
      "whether arch names an AMD CDNA generation (cdna1..3, mi100.., gfx908..)");
  m.def("amd_formats", &amd_formats,
        "(a, b, out, instruction) of the AMD instruction that arch/instr/a_format/out name; () if arch is "
        "not AMD");
  m.def("gemm_member", &gemm_member_bits,
        "D = A B + C with one member of the GEMM family; returns (D bits, trace blocks, partials, member)");
  m.def("explain_gemm", &explain_gemm_bits, "search the GEMM family for the member reproducing a result");
}

} // namespace bf16emu::py
