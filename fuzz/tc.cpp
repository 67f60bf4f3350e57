// Differential harness: the tensor-core model (include/bf16emu/tc) against its slow exact
// cpp_int reference (tests/oracle/tc_reference.hpp), on whole dot products: a preset (its block
// parameters and instruction k) or free block parameters, K products and an accumulator.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <bf16emu/tc.hpp>

#include "common.hpp"
#include "tc_reference.hpp"

namespace {

template <class F> tcref::fmt ref_fmt() {
  return tcref::fmt{F::exp_bits, F::frac_bits, F::encoding == bf16emu::special_encoding::fn,
                    F::encoding == bf16emu::special_encoding::finite};
}

template <class F> std::uint64_t draw(fuzz::reader &r) { return std::uint64_t(fuzz::operand<F>(r).bits); }

template <class In, class Out>
void check(const bf16emu::tc::block_params &p, int instr_k, int K, fuzz::reader &r) {
  std::vector<bf16emu::fp<In>> a(K ? K : 1), b(K ? K : 1);
  std::vector<std::uint64_t> ra(a.size()), rb(b.size());
  for (int i = 0; i < K; ++i) {
    a[i] = bf16emu::fp<In>::from_bits(draw<In>(r));
    b[i] = bf16emu::fp<In>::from_bits(draw<In>(r));
    ra[i] = a[i].bits;
    rb[i] = b[i].bits;
  }
  const auto c = bf16emu::fp<Out>::from_bits(draw<Out>(r));
  const auto got = bf16emu::tc::dot<In, Out>(p, instr_k, a.data(), 1, b.data(), 1, K, c);
  const tcref::params rp{p.L, p.F, p.e_zero, p.out_frac, p.rounding == bf16emu::tc::out_round::nearest_even};
  const std::uint64_t want = tcref::dot(ref_fmt<In>(), ref_fmt<Out>(), rp, instr_k < p.L ? p.L : instr_k,
                                        ra.data(), rb.data(), K, c.bits);
  if (std::uint64_t(got.bits) != want) {
    std::fprintf(
        stderr, "MISMATCH tc model vs reference: in %s out %s L=%d F=%d e_zero=%d out_frac=%d %s k=%d K=%d\n",
        bf16emu::format_name<In>(), bf16emu::format_name<Out>(), p.L, p.F, p.e_zero, p.out_frac,
        p.rounding == bf16emu::tc::out_round::nearest_even ? "rne" : "rz", instr_k, K);
    for (int i = 0; i < K; ++i)
      std::fprintf(stderr, "  a[%d]=%s b[%d]=%s\n", i, fuzz::hex(ra[i]).c_str(), i, fuzz::hex(rb[i]).c_str());
    std::fprintf(stderr, "  c=%s model=%s reference=%s\n", fuzz::hex(c.bits).c_str(),
                 fuzz::hex(got.bits).c_str(), fuzz::hex(want).c_str());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace tc = bf16emu::tc;
  fuzz::reader r{data, size};
  const std::uint8_t sel = r.u8();
  const int K = r.u8() % 65;
  bf16emu::format_id in, out;
  tc::block_params p;
  int instr_k;
  if ((sel & 1) == 0) { // a preset
    const tc::preset &pr = tc::presets[(sel >> 1) % tc::preset_count];
    in = pr.in;
    out = pr.out;
    p = pr.block;
    instr_k = pr.k;
  } else { // free parameters
    static constexpr bf16emu::format_id ins[] = {bf16emu::format_id::bf16, bf16emu::format_id::fp16,
                                                 bf16emu::format_id::tf32, bf16emu::format_id::e4m3,
                                                 bf16emu::format_id::e5m2};
    in = ins[(sel >> 1) % 5];
    out = (sel >> 4) & 1 ? bf16emu::format_id::fp16 : bf16emu::format_id::fp32;
    p.L = 1 + r.u8() % tc::max_block;
    p.F = 1 + r.u8() % 48;
    p.e_zero = -140 + int(r.u8() % 24);
    const int out_max = out == bf16emu::format_id::fp16 ? 10 : 23;
    p.out_frac = 1 + r.u8() % out_max;
    p.rounding = (sel >> 5) & 1 ? tc::out_round::nearest_even : tc::out_round::truncate;
    instr_k = p.L * (1 + r.u8() % 4);
  }
  bf16emu::visit_format(in, [&](auto I) {
    using In = decltype(I);
    if constexpr (2 * In::precision + 2 <= 62) {
      bf16emu::visit_format(out, [&](auto O) {
        using Out = decltype(O);
        if constexpr (Out::precision <= 24) check<In, Out>(p, instr_k, K, r);
      });
    }
  });
  return 0;
}
