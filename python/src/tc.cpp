// bf16emu Python module: the tensor-core model (tc/mma.hpp) on NumPy bit patterns.
// gemm runs row by row on bf16emu::parallel_for with the GIL released; one output element's
// blocks can be traced (the block_trace records of tc/block.hpp as dicts).
#include <string>
#include <type_traits>
#include <vector>

#include <bf16emu/parallel.hpp>
#include <bf16emu/tc.hpp>

#include "io/names.hpp"
#include "module.hpp"

namespace bf16emu::py {

namespace {

const tc::preset &lookup(const std::string &arch, const std::string &kind, format_id in, format_id out) {
  tc::arch a{};
  if (!tc::parse_arch(arch, a))
    throw pybind11::value_error("argument 'arch': unknown architecture '" + arch.substr(0, 80) +
                                "' (sm70, sm75, sm80, sm86, sm89, sm90, sm100 or volta, turing, ampere, ada, "
                                "hopper, blackwell)");
  tc::instr_kind k = tc::default_kind(a);
  if (!kind.empty() && !tc::parse_instr(kind, k))
    throw pybind11::value_error("argument 'kind': unknown instruction family '" + kind.substr(0, 80) +
                                "' (mma, wgmma, tcgen05)");
  const tc::preset *p = tc::find_preset(a, k, in, out);
  if (!p)
    throw pybind11::value_error(std::string("no tensor-core preset for ") + tc::to_string(a) + " " +
                                tc::to_string(k) + " " + io::name(in) + " x " + io::name(out) +
                                " (see docs/tensor-cores.md for the measured combinations)");
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

// D = A B + C on the preset, A (M x K), B (K x N), C (M x N) row-major bit patterns; with
// trace_i/j >= 0, the blocks of D[trace_i][trace_j].
pybind11::tuple gemm_bits(const pybind11::array &a, const pybind11::array &b, const pybind11::array &c,
                          const std::string &in_name, const std::string &out_name, const std::string &arch,
                          const std::string &kind, bool single_instruction, long trace_i, long trace_j,
                          unsigned threads) {
  const format_id in = io::parse_format(in_name), out = io::parse_format(out_name);
  const tc::preset &P = lookup(arch, kind, in, out);
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2)
    throw pybind11::value_error("arguments 'a', 'b', 'c' must be 2-d (M x K, K x N, M x N)");
  const long M = long(a.shape(0)), K = long(a.shape(1)), N = long(b.shape(1));
  if (b.shape(0) != K)
    throw pybind11::value_error("argument 'b': " + std::to_string(b.shape(0)) + " rows, but 'a' has " +
                                std::to_string(K) + " columns");
  if (c.shape(0) != M || c.shape(1) != N)
    throw pybind11::value_error("argument 'c': shape " + shape_text(c) + " is not (" + std::to_string(M) +
                                ", " + std::to_string(N) + ")");
  if (single_instruction && (M != P.m || N != P.n || K != P.k))
    throw pybind11::value_error(std::string("mma on ") + P.ptx + " takes a " + std::to_string(P.m) + "x" +
                                std::to_string(P.k) + ", b " + std::to_string(P.k) + "x" +
                                std::to_string(P.n) + "; got a " + shape_text(a) + ", b " + shape_text(b));
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
        {
          pybind11::gil_scoped_release release;
          parallel_for(std::uint64_t(M), threads, [&](std::uint64_t i, unsigned) {
            tc::gemm<In, Out>(P, 1, int(N), int(K), A + i * K, K, B, N, C + i * N, N, D + i * N, N);
          });
        }
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

} // namespace

void bind_tc(pybind11::module_ &m) {
  m.def("gemm", &gemm_bits,
        "D = A B + C on the tensor-core model; returns (D bits, trace blocks, preset info)");
}

} // namespace bf16emu::py
