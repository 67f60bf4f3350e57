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

struct fmt {
  int ebits; // exponent field width
  int mbits; // fraction field width
  bool fn;   // OCP "fn" encoding: no Inf, only S.1..1.1..1 is NaN
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
  int width() const { return 1 + ebits + mbits; }
};

inline constexpr fmt fp32{8, 23, false}, fp16{5, 10, false}, bf16{8, 7, false}, tf32{8, 10, false},
    e4m3{4, 3, true}, e5m2{5, 2, false};

struct params {
  int L, F, e_zero, out_frac;
  bool nearest_even; // else truncation
};

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
  if (f.fn) {
    if (e == emaxfield && frac == ((std::uint64_t{1} << f.mbits) - 1)) return {kind::nan, neg, 0, 0};
  } else if (e == emaxfield) {
    return {frac ? kind::nan : kind::inf, neg, 0, 0};
  }
  if (e == 0) return {frac ? kind::finite : kind::zero, neg, big(frac), f.emin()};
  return {kind::finite, neg, big(frac + (std::uint64_t{1} << f.mbits)), e - f.bias()};
}

// Encode (-1)^neg * |v| where v = mag * 2^lsb exactly, rounding into `out` with out_frac
// fraction bits (truncate or nearest-even); past the range: Inf.
inline std::uint64_t encode(const fmt &out, int out_frac, bool nearest_even, bool neg, big mag, int lsb) {
  const std::uint64_t sign = std::uint64_t(neg) << (out.ebits + out.mbits);
  if (mag == 0) return 0; // zero results are +0
  // Exponent of the leading bit.
  const int lead = int(boost::multiprecision::msb(mag)) + lsb;
  const int q = std::max(lead, out.emin()) - out_frac; // weight of the last kept bit
  big kept;
  if (q <= lsb) {
    kept = mag << (lsb - q);
  } else {
    const unsigned sh = unsigned(q - lsb);
    kept = mag >> sh;
    if (nearest_even) {
      const big rem = mag - (kept << sh);
      const big half = big(1) << (sh - 1);
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
  std::uint64_t frac = std::uint64_t(kept & ((big(1) << out_frac) - 1)) << (out.mbits - out_frac);
  return sign | (field << out.mbits) | frac;
}

// One block: n products (n <= L; the rest of the L slots are zero products) and c.
inline std::uint64_t block(const fmt &in, const fmt &out, const params &p, const std::uint64_t *a,
                           const std::uint64_t *b, int n, std::uint64_t c) {
  const std::uint64_t nan_out = (std::uint64_t{1} << (out.ebits + out.mbits)) - 1; // all ones
  // Special values first.
  bool nan = false, pinf = false, ninf = false;
  const value vc = decode(out, c);
  if (vc.k == kind::nan) nan = true;
  if (vc.k == kind::inf) (vc.neg ? ninf : pinf) = true;
  value va[64], vb[64];
  for (int i = 0; i < n; ++i) {
    va[i] = decode(in, a[i]);
    vb[i] = decode(in, b[i]);
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
    if (i >= n || va[i].k == kind::zero || vb[i].k == kind::zero) {
      terms[nt++] = {0, false, p.e_zero, 0};
      continue;
    }
    const int e = va[i].exp + vb[i].exp;
    terms[nt++] = {va[i].sig * vb[i].sig, va[i].neg != vb[i].neg, e, e - 2 * in.mbits};
  }
  if (vc.k == kind::zero)
    terms[nt++] = {0, false, p.e_zero, 0};
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

// K products chained through blocks of L, padded with zero products to a multiple of instr_k.
inline std::uint64_t dot(const fmt &in, const fmt &out, const params &p, int instr_k, const std::uint64_t *a,
                         const std::uint64_t *b, int K, std::uint64_t c) {
  if (K <= 0) return c;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  for (int k0 = 0; k0 < padded; k0 += p.L) {
    const int n = std::clamp(K - k0, 0, p.L);
    c = block(in, out, p, a + std::min(k0, K), b + std::min(k0, K), n, c);
  }
  return c;
}

} // namespace tcref
