// Slow reference of the mixed-format and block-scaled tensor-core model (docs/tensor-cores.md,
// "Blackwell tcgen05: f16 accumulation, f8f6f4 and block-scaled kinds"), with exact big
// integers. Like tc_reference.hpp (whose checked 256-bit `big` and output encoder it reuses) it
// includes nothing from bf16emu: formats are field widths plus an encoding, values and scales
// are decoded here, and every step is exact.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tc_reference.hpp"

namespace tcref {

enum class enc { ieee, fn, finite }; // finite: no Inf, no NaN (OCP MX fp6/fp4)

struct sfmt {
  int ebits, mbits;
  enc e;
  fmt plain() const { return fmt{ebits, mbits, e == enc::fn, e == enc::finite}; }
};

inline constexpr sfmt s_fp32{8, 23, enc::ieee}, s_fp16{5, 10, enc::ieee}, s_e4m3{4, 3, enc::fn},
    s_e5m2{5, 2, enc::ieee}, s_e3m2{3, 2, enc::finite}, s_e2m3{2, 3, enc::finite}, s_e2m1{2, 1, enc::finite};

inline value sdecode(const sfmt &f, std::uint64_t bits) { return decode(f.plain(), bits); }

enum class scale_fmt { none, ue8m0, ue4m3 };

// A scale factor: sig * 2^(exp - frac) exactly, NaN flagged.
struct scale_val {
  big sig;
  int exp, frac;
  bool nan;
};

inline scale_val sdecode_scale(scale_fmt s, std::uint8_t bits) {
  if (s == scale_fmt::none) return {1, 0, 0, false};
  if (s == scale_fmt::ue8m0) return {1, int(bits) - 127, 0, bits == 0xFF};
  // ue4m3: the sign bit is ignored; the rest is an e4m3 pattern (bias 7, S.1111.111 NaN).
  const unsigned m = bits & 0x7Fu;
  const unsigned e = m >> 3, f = m & 7u;
  if (m == 0x7F) return {0, 0, 3, true};
  if (e == 0) return {big(f), -6, 3, false};
  return {big(f + 8), int(e) - 7, 3, false};
}

struct sparams {
  int k, group, vec;
  scale_fmt scale;
  int F, e_zero, out_frac;
  bool nearest_even;
  bool mmasim_zeros = false; // zero operands, c and scales count as 2^-126 (tc_reference.hpp)
};

// One block: n <= k products a*b (the rest zero products), scale factors per vec elements.
inline std::uint64_t scaled_block(const sfmt &fa, const sfmt &fb, const sfmt &out, const sparams &p,
                                  const std::uint64_t *a, const std::uint64_t *b, int n,
                                  const std::uint8_t *sa, const std::uint8_t *sb, std::uint64_t c) {
  const int sign_bit = out.ebits + out.mbits;
  const std::uint64_t nan_out = (std::uint64_t{1} << sign_bit) - 1;
  const std::uint64_t inf_out = std::uint64_t((1 << out.ebits) - 1) << out.mbits;
  const bool scaled = p.scale != scale_fmt::none;
  auto scale_of = [&](const std::uint8_t *s, int i) {
    return scaled ? sdecode_scale(p.scale, s[i / p.vec]) : scale_val{1, 0, 0, false};
  };
  bool nan = false, pinf = false, ninf = false;
  const value vc = sdecode(out, c);
  if (vc.k == kind::nan) nan = true;
  if (vc.k == kind::inf) (vc.neg ? ninf : pinf) = true;
  if (scaled)
    for (int s = 0; s < p.k / p.vec; ++s)
      nan = nan || sdecode_scale(p.scale, sa[s]).nan || sdecode_scale(p.scale, sb[s]).nan;
  value va[64], vb[64];
  for (int i = 0; i < n; ++i) {
    va[i] = sdecode(fa, a[i]);
    vb[i] = sdecode(fb, b[i]);
    if (va[i].k == kind::nan || vb[i].k == kind::nan) {
      nan = true;
    } else if (va[i].k == kind::inf || vb[i].k == kind::inf) {
      const bool zero = va[i].k == kind::zero || vb[i].k == kind::zero || scale_of(sa, i).sig == 0 ||
                        scale_of(sb, i).sig == 0;
      if (zero)
        nan = true;
      else
        (va[i].neg != vb[i].neg ? ninf : pinf) = true;
    }
  }
  if (nan || (pinf && ninf)) return nan_out;
  if (pinf || ninf) return (std::uint64_t(ninf) << sign_bit) | inf_out;

  // Terms: the exact value sig * 2^lsb (signed), and the exponent `me` the max search sees.
  struct term {
    big sig; // signed
    int lsb, me;
    bool zero;
  };
  term t[65];
  int nt = 0;
  // Under mmasim_zeros a zero scale factor's exponent is -126 (else its own, -6 for ue4m3).
  auto sexp = [&](const scale_val &x) { return p.mmasim_zeros && x.sig == 0 ? mmasim_zero : x.exp; };
  if (p.group == 1) {
    for (int i = 0; i < p.k; ++i) {
      const scale_val x = scale_of(sa, i), y = scale_of(sb, i);
      const bool za = i >= n || va[i].k == kind::zero, zb = i >= n || vb[i].k == kind::zero;
      const int ez = (za ? mmasim_zero : va[i].exp) + (zb ? mmasim_zero : vb[i].exp) + sexp(x) + sexp(y);
      if (za || zb) {
        t[nt++] = {0, 0, p.mmasim_zeros ? ez : p.e_zero, true};
        continue;
      }
      const int me = va[i].exp + vb[i].exp + x.exp + y.exp;
      big s = va[i].sig * vb[i].sig * x.sig * y.sig;
      if (va[i].neg != vb[i].neg) s = -s;
      if (s == 0) {
        t[nt++] = {0, 0, p.mmasim_zeros ? ez : p.e_zero, true}; // a zero scale
        continue;
      }
      t[nt++] = {s, me - fa.mbits - fb.mbits - x.frac - y.frac, me, false};
    }
  } else {
    // Each run of `group` products: its exact sum, times both scales; the max search sees
    // the scales' exponents only. Sum in units of 2^lo (the smallest product weight).
    const int lo = (2 - (1 << (fa.ebits - 1))) - fa.mbits + (2 - (1 << (fb.ebits - 1))) - fb.mbits;
    for (int g = 0; g < p.k; g += p.group) {
      big s = 0;
      for (int i = g; i < g + p.group && i < n; ++i) {
        if (va[i].k == kind::zero || vb[i].k == kind::zero) continue;
        const int w = va[i].exp - fa.mbits + vb[i].exp - fb.mbits; // weight of sig product
        big v = (va[i].sig * vb[i].sig) << unsigned(w - lo);
        s += va[i].neg != vb[i].neg ? big(-v) : v;
      }
      const scale_val x = scale_of(sa, g), y = scale_of(sb, g);
      const int me = sexp(x) + sexp(y);
      t[nt++] = {s * x.sig * y.sig, lo + me - x.frac - y.frac, me, false};
    }
  }
  if (vc.k == kind::zero)
    t[nt++] = {0, 0, p.mmasim_zeros ? mmasim_zero : p.e_zero, true};
  else
    t[nt++] = {vc.neg ? big(-vc.sig) : vc.sig, vc.exp - out.mbits, vc.exp, false};

  bool all_zero = true;
  for (int i = 0; i < nt; ++i)
    all_zero = all_zero && t[i].sig == 0;
  if (all_zero) return 0;
  // The max over nonzero terms (and over zero groups, which keep their scale exponent); zero
  // products and a zero c enter with e_zero.
  int emax = t[0].me;
  for (int i = 0; i < nt; ++i)
    emax = std::max(emax, t[i].me);
  const int unit = emax - p.F;
  big sum = 0;
  for (int i = 0; i < nt; ++i) {
    if (t[i].sig == 0) continue;
    const bool neg = t[i].sig < 0;
    const big m = neg ? big(-t[i].sig) : t[i].sig;
    const big q =
        t[i].lsb >= unit ? big(m << unsigned(t[i].lsb - unit)) : big(m >> unsigned(unit - t[i].lsb));
    sum += neg ? big(-q) : q;
  }
  if (sum == 0) return 0;
  const bool neg = sum < 0;
  return encode(out.plain(), p.out_frac, p.nearest_even, neg, neg ? big(-sum) : sum, unit);
}

// K products in blocks of k (zero-padded), each block's D the next block's C; scales per vec
// elements of the padded K.
inline std::uint64_t scaled_dot(const sfmt &fa, const sfmt &fb, const sfmt &out, const sparams &p,
                                const std::uint64_t *a, const std::uint64_t *b, int K, const std::uint8_t *sa,
                                const std::uint8_t *sb, std::uint64_t c) {
  const bool scaled = p.scale != scale_fmt::none;
  for (int k0 = 0; k0 < K; k0 += p.k) {
    const int n = std::min(p.k, K - k0);
    c = scaled_block(fa, fb, out, p, a + k0, b + k0, n, scaled ? sa + k0 / p.vec : sa,
                     scaled ? sb + k0 / p.vec : sb, c);
  }
  return c;
}

} // namespace tcref
