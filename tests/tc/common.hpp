// Helpers shared by the tensor-core tests: dispatch from a preset's runtime format ids to
// the model's templates, and random generators of bit patterns.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <bf16emu/tc.hpp>

#include "tc_reference.hpp"

namespace tctest {

using namespace bf16emu;
using namespace bf16emu::tc;

inline tcref::fmt ref_fmt(format_id id) {
  switch (id) {
  case format_id::fp32: return tcref::fp32;
  case format_id::fp16: return tcref::fp16;
  case format_id::bf16: return tcref::bf16;
  case format_id::tf32: return tcref::tf32;
  case format_id::e4m3: return tcref::e4m3;
  case format_id::fp64: return tcref::fp64;
  case format_id::e3m2: return tcref::e3m2;
  case format_id::e2m3: return tcref::e2m3;
  case format_id::e2m1: return tcref::e2m1;
  default: return tcref::e5m2;
  }
}

inline tcref::params ref_params(const block_params &p) {
  return {p.L, p.F, p.e_zero, p.out_frac, p.rounding == out_round::nearest_even, p.zeros == zero_exp::mmasim};
}

// The model on bit patterns: D of a K-long dot product issued with the preset's k.
template <class In, class Out>
std::uint64_t model_dot_t(const block_params &p, int instr_k, const std::uint64_t *a, const std::uint64_t *b,
                          int K, std::uint64_t c) {
  fp<In> va[256], vb[256];
  for (int i = 0; i < K; ++i)
    va[i] = fp<In>::from_bits(a[i]), vb[i] = fp<In>::from_bits(b[i]);
  return dot<In, Out>(p, instr_k, va, 1, vb, 1, K, fp<Out>::from_bits(c)).bits;
}

// The same through preset_dot, with B and C in their own formats and the preset's
// accumulation (fused blocks or the f64 fma chain); p replaces the preset's block parameters.
template <class In, class InB, class InC, class Out>
std::uint64_t preset_dot_t(const preset &P, const block_params &p, const std::uint64_t *a,
                           const std::uint64_t *b, int K, std::uint64_t c) {
  fp<In> va[256];
  fp<InB> vb[256];
  for (int i = 0; i < K; ++i)
    va[i] = fp<In>::from_bits(a[i]), vb[i] = fp<InB>::from_bits(b[i]);
  preset Q = P;
  Q.block = p;
  return preset_dot<In, Out>(Q, va, 1, vb, 1, K, fp<InC>::from_bits(c)).bits;
}

// fp16 or fp32 (the C and D formats of the fused presets).
template <class Fn> std::uint64_t visit_half_single(format_id f, Fn fn) {
  if (f == format_id::fp16) return fn(binary16{});
  return fn(binary32{});
}

inline std::uint64_t model_dot(format_id in, format_id out, const block_params &p, int instr_k,
                               const std::uint64_t *a, const std::uint64_t *b, int K, std::uint64_t c) {
  return visit_format(in, [&](auto fin) -> std::uint64_t {
    using In = decltype(fin);
    if constexpr (In::width > 24)
      return 0; // not an input format
    else if (out == format_id::fp16)
      return model_dot_t<In, binary16>(p, instr_k, a, b, K, c);
    else
      return model_dot_t<In, binary32>(p, instr_k, a, b, K, c);
  });
}

// A preset on bit patterns (A in P.in, B in P.b, C in P.c, D in P.out), with block parameters p.
inline std::uint64_t model_dot(const preset &P, const block_params &p, const std::uint64_t *a,
                               const std::uint64_t *b, int K, std::uint64_t c) {
  if (P.b == P.in && P.c == P.out && P.accum == accum_kind::fused)
    return model_dot(P.in, P.out, p, P.k, a, b, K, c); // the plain dot, as before
  if (P.accum == accum_kind::fma_chain)                // f64 DMMA
    return preset_dot_t<binary64, binary64, binary64, binary64>(P, p, a, b, K, c);
  if (P.accum == accum_kind::two_block_add) // sm90/sm100 fp8 mma.sync
    return visit_f8f6f4(P.in, [&](auto fa) {
      return visit_half_single(P.out, [&](auto fo) {
        using Out = decltype(fo);
        return preset_dot_t<decltype(fa), decltype(fa), Out, Out>(P, p, a, b, K, c);
      });
    });
  if (P.b != P.in) // fp8 mixes, sm120 kind::f8f6f4 mixes (fp6, fp4), tcgen05 fp16 x bf16; C as D
    return tc::visit_mixed_operands(P.in, P.b, [&](auto fa, auto fb) {
      return visit_half_single(P.out, [&](auto fo) {
        using Out = decltype(fo);
        return preset_dot_t<decltype(fa), decltype(fb), Out, Out>(P, p, a, b, K, c);
      });
    });
  return visit_half_single(P.c, [&](auto fc) { // fp16 m8n8k4 C/D mixes
    return visit_half_single(P.out, [&](auto fo) {
      return preset_dot_t<binary16, binary16, decltype(fc), decltype(fo)>(P, p, a, b, K, c);
    });
  });
}

inline std::uint64_t model_dot(const preset &P, const std::uint64_t *a, const std::uint64_t *b, int K,
                               std::uint64_t c) {
  return model_dot(P, P.block, a, b, K, c);
}

// accum_kind::two_block_add from the reference's pieces: per instruction of P.k products
// (K padded with zeros), the products at index i with (i mod 4) < 2 are one tcref::block with
// c = +0, those with (i mod 4) >= 2 a second block on its result, and the instruction's C is
// added by tcref::fma(t, 1, C) (one IEEE rounding to nearest even in the D format).
inline std::uint64_t ref_two_block_add(const preset &P, const block_params &bp, const std::uint64_t *a,
                                       const std::uint64_t *b, int K, std::uint64_t c) {
  const tcref::fmt in = ref_fmt(P.in), inb = ref_fmt(P.b), out = ref_fmt(P.out);
  const tcref::params rp = ref_params(bp);
  c = tcref::c_to_out(ref_fmt(P.c), out, c);
  if (K <= 0) return c;
  const std::uint64_t one = std::uint64_t(out.bias()) << out.mbits;
  const int padded = (K + P.k - 1) / P.k * P.k;
  for (int k0 = 0; k0 < padded; k0 += P.k) {
    std::uint64_t t = 0;
    for (int g = 0; g < 2; ++g) {
      std::vector<std::uint64_t> ga, gb;
      for (int i = 0; i < P.k; ++i)
        if ((i % 4 >= 2) == (g == 1)) {
          ga.push_back(k0 + i < K ? a[k0 + i] : 0);
          gb.push_back(k0 + i < K ? b[k0 + i] : 0);
        }
      for (std::size_t j = 0; j < ga.size(); j += std::size_t(rp.L))
        t = tcref::block(in, inb, out, rp, ga.data() + j, gb.data() + j,
                         int(std::min<std::size_t>(std::size_t(rp.L), ga.size() - j)), t);
    }
    c = tcref::fma(out, t, one, c);
  }
  return c;
}

inline std::uint64_t ref_dot(const preset &P, const std::uint64_t *a, const std::uint64_t *b, int K,
                             std::uint64_t c) {
  if (P.accum == accum_kind::fma_chain) return tcref::fma_chain(ref_fmt(P.out), P.k, a, b, K, c);
  if (P.accum == accum_kind::two_block_add) return ref_two_block_add(P, P.block, a, b, K, c);
  return tcref::dot(ref_fmt(P.in), ref_fmt(P.b), ref_fmt(P.c), ref_fmt(P.out), ref_params(P.block), P.k, a, b,
                    K, c);
}

inline std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline const char *format_name_of(format_id id) {
  return visit_format(id, [](auto f) { return format_name<decltype(f)>(); });
}

// "sm90 wgmma bf16->fp32" (sep " ", "->") or "sm90_wgmma_bf16_fp32" (sep "_", "_"); a B format
// other than A's adds "xe5m2", a C format other than D's "_cfp16", and an instruction k other
// than the first preset's of the same formats "_k8" (the same k in another shape "_m16n8k4").
inline std::string describe(const preset &P, const char *sep = " ", const char *arrow = "->") {
  char buf[160];
  std::string extra;
  if (P.b != P.in) extra += std::string("x") + format_name_of(P.b);
  std::string tail;
  if (P.c != P.out) tail += std::string("_c") + format_name_of(P.c);
  const preset *first = find_preset(P.arch, P.kind, P.in, P.b, P.c, P.out);
  if (first != nullptr && first->k != P.k) tail += "_k" + std::to_string(P.k);
  if (first != nullptr && first != &P && first->k == P.k) // same k, another shape (f64 m16n8k4)
    tail += "_m" + std::to_string(P.m) + "n" + std::to_string(P.n) + "k" + std::to_string(P.k);
  std::snprintf(buf, sizeof buf, "%s%s%s%s%s%s%s%s%s", to_string(P.arch), sep, to_string(P.kind), sep,
                format_name_of(P.in), extra.c_str(), arrow, format_name_of(P.out), tail.c_str());
  return buf;
}

// Random bit patterns of a format described by tcref::fmt.
struct gen {
  std::mt19937_64 rng;
  explicit gen(std::uint64_t seed) : rng(seed) {}
  std::uint64_t bits(int n) { return n >= 64 ? rng() : rng() & ((std::uint64_t{1} << n) - 1); }
  int uniform(int lo, int hi) { return lo + int(rng() % std::uint64_t(hi - lo + 1)); }
  bool coin(int one_in) { return rng() % std::uint64_t(one_in) == 0; }

  // A finite nonzero normal value with unbiased exponent in [lo, hi] (clipped to the format).
  std::uint64_t normal(const tcref::fmt &f, int lo, int hi) {
    lo = std::max(lo, f.emin()), hi = std::min(hi, f.emax());
    if (lo > hi) lo = hi;
    for (;;) {
      const int e = uniform(lo, hi);
      const std::uint64_t v =
          (bits(1) << (f.ebits + f.mbits)) | (std::uint64_t(e + f.bias()) << f.mbits) | bits(f.mbits);
      if (tcref::decode(f, v).k == tcref::kind::finite) return v;
    }
  }
  std::uint64_t any(const tcref::fmt &f) { return bits(f.width()); }
  // Subnormal, zero or one of the smallest normals.
  std::uint64_t tiny(const tcref::fmt &f) {
    return (bits(1) << (f.ebits + f.mbits)) | (std::uint64_t(uniform(0, 2)) << f.mbits) | bits(f.mbits);
  }
};

} // namespace tctest
