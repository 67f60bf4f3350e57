// Slow reference of the tensor-core block model, written from the description in
// docs/tensor-cores.md ("The model") with exact big integers (boost::multiprecision
// cpp_int, fixed 256-bit and overflow-checked). It deliberately includes nothing from bf16emu: formats
// are described by their field widths, values are decoded here, every step is done on
// exact big integers, and the output is encoded from (sign, exponent, significand).
#pragma once

#include <algorithm>
#include <cstdint>

#include <boost/multiprecision/cpp_int.hpp>

namespace tcref {

// Exact signed integers of the cpp_int family: 256-bit, `checked` (any overflow throws instead
// of wrapping), no allocation. Every quantity below is far smaller (aligned terms < 2^60); the
// width only has to be large enough never to lose a bit, and `checked` proves it on every run.
using big = boost::multiprecision::number<boost::multiprecision::cpp_int_backend<
    256, 256, boost::multiprecision::signed_magnitude, boost::multiprecision::checked, void>>;
// The f64 fma holds exact sums that span the whole binary64 range and its products (lsb 2^-2148,
// top below 2^1025): 4096 bits, checked as well.
using wide = boost::multiprecision::number<boost::multiprecision::cpp_int_backend<
    4096, 4096, boost::multiprecision::signed_magnitude, boost::multiprecision::checked, void>>;

struct fmt {
  int ebits;           // exponent field width
  int mbits;           // fraction field width
  bool fn;             // OCP "fn" encoding: no Inf, only S.1..1.1..1 is NaN
  bool finite = false; // OCP MX fp6/fp4: no Inf, no NaN (every pattern is a number)
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  int emax() const { return (1 << ebits) - 1 - bias() - (fn || finite ? 0 : 1); } // largest finite exponent
  int width() const { return 1 + ebits + mbits; }
};

inline constexpr fmt fp32{8, 23, false}, fp16{5, 10, false}, bf16{8, 7, false}, tf32{8, 10, false},
    e4m3{4, 3, true}, e5m2{5, 2, false}, fp64{11, 52, false}, e3m2{3, 2, false, true},
    e2m3{2, 3, false, true}, e2m1{2, 1, false, true};

struct params {
  int L, F, e_zero, out_frac;
  bool nearest_even;         // else truncation
  bool mmasim_zeros = false; // zero terms: MMA-Sim's exponents instead of e_zero (below)
};

// MMA-Sim's exponent of a zero value (docs/tensor-cores.md, "The zero-term exponent"): a zero
// operand counts as 2^-126 in the max search, so a zero product takes -126 plus the other
// factor's exponent, and a zero c -126.
inline constexpr int mmasim_zero = -126;

enum class kind { zero, finite, inf, nan };

struct value {
  kind k;
  bool neg;
  big sig; // integer significand (hidden bit included for normals)
  int exp; // exponent of the significand's unit position: value = sig * 2^(exp - mbits)
};

inline value decode(const fmt &f, std::uint64_t bits) {
  const std::uint64_t frac = bits & ((std::uint64_t{1} << f.mbits) - 1);
  const int e = int((bits >> f.mbits) & ((1u << f.ebits) - 1));
  const bool neg = (bits >> (f.ebits + f.mbits)) & 1;
  const int emaxfield = (1 << f.ebits) - 1;
  if (f.finite) {
    // every pattern is finite
  } else if (f.fn) {
    if (e == emaxfield && frac == ((std::uint64_t{1} << f.mbits) - 1)) return {kind::nan, neg, 0, 0};
  } else if (e == emaxfield) {
    return {frac ? kind::nan : kind::inf, neg, 0, 0};
  }
  if (e == 0) return {frac ? kind::finite : kind::zero, neg, big(frac), f.emin()};
  return {kind::finite, neg, big(frac + (std::uint64_t{1} << f.mbits)), e - f.bias()};
}

// Encode (-1)^neg * |v| where v = mag * 2^lsb exactly, rounding into `out` with out_frac
// fraction bits (truncate or nearest-even); past the range: Inf.
template <class Int>
std::uint64_t encode(const fmt &out, int out_frac, bool nearest_even, bool neg, Int mag, int lsb) {
  const std::uint64_t sign = std::uint64_t(neg) << (out.ebits + out.mbits);
  if (mag == 0) return 0; // zero results are +0
  // Exponent of the leading bit.
  const int lead = int(boost::multiprecision::msb(mag)) + lsb;
  const int q = std::max(lead, out.emin()) - out_frac; // weight of the last kept bit
  Int kept;
  if (q <= lsb) {
    kept = mag << (lsb - q);
  } else {
    const unsigned sh = unsigned(q - lsb);
    kept = mag >> sh;
    if (nearest_even) {
      const Int rem = mag - (kept << sh);
      const Int half = Int(1) << (sh - 1);
      if (rem > half || (rem == half && (kept & 1) != 0)) kept += 1;
    }
  }
  int qq = q;
  if (kept == 0) return 0;
  if ((kept >> (out_frac + 1)) != 0) { // the rounding carried into a new binade
    kept >>= 1;
    ++qq;
  }
  const int emax = (1 << out.ebits) - 2 - out.bias();
  const bool normal = (kept >> out_frac) != 0;
  const int e = qq + out_frac; // exponent of the result if normal
  if (normal && e > emax) return sign | (std::uint64_t((1 << out.ebits) - 1) << out.mbits); // Inf
  std::uint64_t field = normal ? std::uint64_t(e + out.bias()) : 0;
  std::uint64_t frac = std::uint64_t(kept & ((Int(1) << out_frac) - 1)) << (out.mbits - out_frac);
  return sign | (field << out.mbits) | frac;
}

// One block: n products (n <= L; the rest of the L slots are zero products) and c. A is in
// `in`, B in `inb` (they differ for the fp8 e4m3 x e5m2 mixes), c and the result in `out`.
inline std::uint64_t block(const fmt &in, const fmt &inb, const fmt &out, const params &p,
                           const std::uint64_t *a, const std::uint64_t *b, int n, std::uint64_t c) {
  const std::uint64_t nan_out = (std::uint64_t{1} << (out.ebits + out.mbits)) - 1; // all ones
  // Special values first.
  bool nan = false, pinf = false, ninf = false;
  const value vc = decode(out, c);
  if (vc.k == kind::nan) nan = true;
  if (vc.k == kind::inf) (vc.neg ? ninf : pinf) = true;
  value va[64], vb[64];
  for (int i = 0; i < n; ++i) {
    va[i] = decode(in, a[i]);
    vb[i] = decode(inb, b[i]);
    const value &x = va[i], &y = vb[i];
    if (x.k == kind::nan || y.k == kind::nan)
      nan = true;
    else if (x.k == kind::inf || y.k == kind::inf) {
      if (x.k == kind::zero || y.k == kind::zero)
        nan = true;
      else
        (x.neg != y.neg ? ninf : pinf) = true;
    }
  }
  if (nan || (pinf && ninf)) return nan_out;
  if (pinf || ninf)
    return (std::uint64_t(ninf) << (out.ebits + out.mbits)) |
           (std::uint64_t((1 << out.ebits) - 1) << out.mbits);

  // Terms: exact significand, sign, exponent of the [1,4) (products) / [1,2) (c) scale,
  // and the weight of the significand's last bit.
  struct term {
    big sig;
    bool neg;
    int exp;
    int lsb;
  };
  term terms[65];
  int nt = 0;
  for (int i = 0; i < p.L; ++i) {
    if (i >= n) { // padding: 0 * 0
      terms[nt++] = {0, false, p.mmasim_zeros ? 2 * mmasim_zero : p.e_zero, 0};
      continue;
    }
    if (va[i].k == kind::zero || vb[i].k == kind::zero) {
      const int ea = va[i].k == kind::zero ? mmasim_zero : va[i].exp;
      const int eb = vb[i].k == kind::zero ? mmasim_zero : vb[i].exp;
      terms[nt++] = {0, false, p.mmasim_zeros ? ea + eb : p.e_zero, 0};
      continue;
    }
    const int e = va[i].exp + vb[i].exp;
    terms[nt++] = {va[i].sig * vb[i].sig, va[i].neg != vb[i].neg, e, e - in.mbits - inb.mbits};
  }
  if (vc.k == kind::zero)
    terms[nt++] = {0, false, p.mmasim_zeros ? mmasim_zero : p.e_zero, 0};
  else
    terms[nt++] = {vc.sig, vc.neg, vc.exp, vc.exp - out.mbits};

  bool all_zero = true;
  for (int i = 0; i < nt; ++i)
    all_zero = all_zero && terms[i].sig == 0;
  if (all_zero) return 0;

  int emax = terms[0].exp;
  for (int i = 0; i < nt; ++i)
    emax = std::max(emax, terms[i].exp);
  const int unit = emax - p.F; // every term is cut to a multiple of 2^unit

  big sum = 0;
  for (int i = 0; i < nt; ++i) {
    const term &t = terms[i];
    if (t.sig == 0) continue;
    // |t| / 2^unit, truncated toward zero; then the sign.
    big m = t.lsb >= unit ? big(t.sig << (t.lsb - unit)) : big(t.sig >> (unit - t.lsb));
    sum += t.neg ? big(-m) : m;
  }
  if (sum == 0) return 0;
  const bool neg = sum < 0;
  return encode(out, p.out_frac, p.nearest_even, neg, neg ? big(-sum) : sum, unit);
}

// C given in format cf, as the D format `out` (docs/tensor-cores.md, mixed formats): the value
// rounded to nearest even with out's full precision (exact when out is wider); a NaN becomes
// the all-ones NaN, an Inf stays an Inf, a zero keeps its sign.
inline std::uint64_t c_to_out(const fmt &cf, const fmt &out, std::uint64_t c) {
  if (cf.ebits == out.ebits && cf.mbits == out.mbits && cf.fn == out.fn) return c;
  const value v = decode(cf, c);
  const std::uint64_t sign = std::uint64_t(v.neg) << (out.ebits + out.mbits);
  switch (v.k) {
  case kind::nan: return (std::uint64_t{1} << (out.ebits + out.mbits)) - 1;
  case kind::inf: return sign | (std::uint64_t((1 << out.ebits) - 1) << out.mbits);
  case kind::zero: return sign;
  default: {
    const std::uint64_t r = encode(out, out.mbits, true, v.neg, v.sig, v.exp - cf.mbits);
    return r == 0 ? sign : r; // an underflow to zero keeps the sign
  }
  }
}

// K products chained through blocks of L, padded with zero products to a multiple of instr_k;
// A in `in`, B in `inb`, C in `cf`, D in `out`.
inline std::uint64_t dot(const fmt &in, const fmt &inb, const fmt &cf, const fmt &out, const params &p,
                         int instr_k, const std::uint64_t *a, const std::uint64_t *b, int K,
                         std::uint64_t c) {
  c = c_to_out(cf, out, c);
  if (K <= 0) return c;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  for (int k0 = 0; k0 < padded; k0 += p.L) {
    const int n = std::clamp(K - k0, 0, p.L);
    c = block(in, inb, out, p, a + std::min(k0, K), b + std::min(k0, K), n, c);
  }
  return c;
}

inline std::uint64_t dot(const fmt &in, const fmt &out, const params &p, int instr_k, const std::uint64_t *a,
                         const std::uint64_t *b, int K, std::uint64_t c) {
  return dot(in, in, out, out, p, instr_k, a, b, K, c);
}

// One IEEE 754 fused multiply-add a*b + c in format f, rounded to nearest even, from the
// definition: special cases by the standard's table; otherwise the exact sum of the exact
// product and c on big integers, rounded once. An exact zero sum is +0 unless both addends are
// zeros of negative sign; a nonzero sum that rounds to zero keeps its sign. NaN results are the
// all-ones NaN.
inline std::uint64_t fma(const fmt &f, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  const int signpos = f.ebits + f.mbits;
  const std::uint64_t nan_out = (std::uint64_t{1} << signpos) - 1;
  const std::uint64_t inf_field = std::uint64_t((1 << f.ebits) - 1) << f.mbits;
  const value x = decode(f, a), y = decode(f, b), z = decode(f, c);
  if (x.k == kind::nan || y.k == kind::nan || z.k == kind::nan) return nan_out;
  const bool pneg = x.neg != y.neg;
  if (x.k == kind::inf || y.k == kind::inf) {
    if (x.k == kind::zero || y.k == kind::zero) return nan_out; // Inf * 0
    if (z.k == kind::inf && z.neg != pneg) return nan_out;      // Inf - Inf
    return (std::uint64_t(pneg) << signpos) | inf_field;
  }
  if (z.k == kind::inf) return c;
  const bool pzero = x.k == kind::zero || y.k == kind::zero;
  // Exact values: product p = sig * 2^plsb, addend z = sig * 2^zlsb.
  const wide psig = pzero ? wide(0) : wide(x.sig) * wide(y.sig);
  const int plsb = x.exp - f.mbits + y.exp - f.mbits;
  const wide zsig = z.k == kind::zero ? wide(0) : wide(z.sig);
  const int zlsb = z.exp - f.mbits;
  const int lsb = std::min(plsb, zlsb);
  const wide ps = psig << unsigned(plsb - lsb), zs = zsig << unsigned(zlsb - lsb);
  const wide sum = (pneg ? wide(-ps) : ps) + (z.neg ? wide(-zs) : zs);
  if (sum == 0) {
    const bool both_neg_zero = pzero && z.k == kind::zero && pneg && z.neg;
    return both_neg_zero ? std::uint64_t{1} << signpos : 0;
  }
  const bool neg = sum < 0;
  const std::uint64_t r = encode<wide>(f, f.mbits, true, neg, neg ? wide(-sum) : sum, lsb);
  return r == 0 && neg ? std::uint64_t{1} << signpos : r;
}

// The f64 DMMA accumulation: d = c, then d = fma(a_k, b_k, d) over K products padded with
// zero products to a multiple of instr_k, in increasing k.
inline std::uint64_t fma_chain(const fmt &f, int instr_k, const std::uint64_t *a, const std::uint64_t *b,
                               int K, std::uint64_t c) {
  if (K <= 0) return c;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  for (int k = 0; k < padded; ++k)
    c = fma(f, k < K ? a[k] : 0, k < K ? b[k] : 0, c);
  return c;
}

} // namespace tcref
