// Slow reference of the AMD CDNA MFMA models, written from the description in
// docs/tensor-cores.md ("AMD CDNA matrix cores") with exact big integers (boost cpp_int, fixed width).
// It deliberately includes nothing from bf16emu: operands are decoded here into exact dyadic
// values m * 2^e, every sum and product is exact, exponents are read off the values (floor of
// log2), and the only rounding is this file's own round-half-even into a field layout.
#pragma once

#include <cstdint>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

namespace amdref {

// Exact signed integers: fixed 4608 bits, `checked` (an overflow throws instead of wrapping), no
// allocation, no expression templates. The widest quantity is an exact binary64 fma sum aligned to
// its lowest bit (products down to 2^-2148, c up to 2^1024: under 3400 bits).
using big = boost::multiprecision::number<
    boost::multiprecision::cpp_int_backend<4608, 4608, boost::multiprecision::signed_magnitude,
                                           boost::multiprecision::checked, void>,
    boost::multiprecision::et_off>;

// A field layout. fnuz: no Inf, no -0, the pattern 0x80 is the only NaN, bias 2^(ebits-1).
struct layout {
  int ebits, mbits;
  bool fnuz;
  int bias() const { return fnuz ? 1 << (ebits - 1) : (1 << (ebits - 1)) - 1; }
  int emin() const { return 1 - bias(); }
};

inline constexpr layout L64{11, 52, false}, L32{8, 23, false}, L16{5, 10, false}, Lbf16{8, 7, false},
    Lfp8{4, 3, true}, Lbf8{5, 2, true};

enum class cls { nan, inf, fin };

// A datum: class, sign, and for finite values the exact value m * 2^e (m >= 0; zero: m = 0).
struct num {
  cls c = cls::fin;
  bool neg = false;
  big m = 0;
  int e = 0;
  bool zero() const { return c == cls::fin && m == 0; }
};

inline num decode(const layout &L, std::uint64_t bits) {
  const std::uint64_t fr = bits & ((std::uint64_t{1} << L.mbits) - 1);
  const int be = int((bits >> L.mbits) & ((std::uint64_t{1} << L.ebits) - 1));
  const bool neg = (bits >> (L.ebits + L.mbits)) & 1;
  num x;
  x.neg = neg;
  if (L.fnuz && neg && be == 0 && fr == 0) return x.c = cls::nan, x;
  if (!L.fnuz && be == (1 << L.ebits) - 1) return x.c = fr ? cls::nan : cls::inf, x;
  if (be == 0)
    x.m = fr, x.e = L.emin() - L.mbits;
  else
    x.m = big(fr) + (big(1) << L.mbits), x.e = be - L.bias() - L.mbits;
  return x;
}

inline int msb(const big &m) { return int(boost::multiprecision::msb(m)); }

// floor(log2 |x|) of a nonzero finite value.
inline int ilog2(const num &x) { return msb(x.m) + x.e; }

// Signed integer v * 2^e as a num (finite).
inline num from_signed(const big &v, int e) {
  num x;
  x.neg = v < 0;
  x.m = v < 0 ? big(-v) : v;
  x.e = e;
  return x;
}

inline big signed_m(const num &x) { return x.neg ? big(-x.m) : x.m; }

// 2^n (n >= 0): signed values are scaled by multiplying with it (no shifts of negatives).
inline big pow2(int n) { return big(1) << n; }

// Exact finite sum and product.
inline num exact_add(const num &a, const num &b) {
  const int e = a.e < b.e ? a.e : b.e;
  return from_signed(signed_m(a) * pow2(a.e - e) + signed_m(b) * pow2(b.e - e), e);
}
inline num exact_mul(const num &a, const num &b) {
  num x;
  x.neg = a.neg != b.neg, x.m = a.m * b.m, x.e = a.e + b.e;
  return x;
}

inline std::uint64_t nan_bits(const layout &L) {
  return L.ebits == 11 ? 0x7ff8000000000000ull : 0x7fc00000ull;
}

// Round a finite value to nearest, ties to even, into L (ieee layouts); the sign of a zero
// result is zero_neg when the value is exactly zero, else the value's sign.
inline std::uint64_t round_rne(const layout &L, const num &x, bool zero_neg) {
  const std::uint64_t sbit = std::uint64_t{1} << (L.ebits + L.mbits);
  if (x.m == 0) return zero_neg ? sbit : 0;
  const int lead = ilog2(x);
  const int q = (lead > L.emin() ? lead : L.emin()) - L.mbits; // lsb exponent
  big kept;
  if (x.e >= q) {
    kept = x.m << (x.e - q);
  } else {
    const int sh = q - x.e;
    kept = x.m >> sh;
    const big rem = x.m - (kept << sh), half = big(1) << (sh - 1);
    if (rem > half || (rem == half && (kept & 1) != 0)) ++kept;
  }
  const std::uint64_t s = x.neg ? sbit : 0;
  if (kept == 0) return s;
  int qq = q;
  if ((kept >> (L.mbits + 1)) != 0) kept >>= 1, ++qq;
  const int biased = (kept >> L.mbits) != 0 ? qq + L.mbits + L.bias() : 0;
  if (biased >= (1 << L.ebits) - 1) return s | (std::uint64_t((1 << L.ebits) - 1) << L.mbits); // Inf
  const std::uint64_t frac = std::uint64_t(kept & ((big(1) << L.mbits) - 1));
  return s | (std::uint64_t(biased) << L.mbits) | frac;
}

inline std::uint64_t inf_bits(const layout &L, bool neg) {
  return (neg ? std::uint64_t{1} << (L.ebits + L.mbits) : 0) | (std::uint64_t((1 << L.ebits) - 1) << L.mbits);
}

// IEEE a*b + c (c_from_zero: c is +0 as in an FMA with +0) rounded to L, RNE; NaN canonical.
inline std::uint64_t ieee_fma(const layout &L, const num &a, const num &b, const num &c) {
  if (a.c == cls::nan || b.c == cls::nan || c.c == cls::nan) return nan_bits(L);
  const bool pneg = a.neg != b.neg;
  const bool pinf = a.c == cls::inf || b.c == cls::inf;
  if (pinf && (a.zero() || b.zero())) return nan_bits(L);
  if (pinf && c.c == cls::inf && pneg != c.neg) return nan_bits(L);
  if (pinf) return inf_bits(L, pneg);
  if (c.c == cls::inf) return inf_bits(L, c.neg);
  const num p = exact_mul(a, b);
  const num s = exact_add(p, c);
  // Exact zero: -0 only when both addends are zeros of negative sign.
  return round_rne(L, s, p.m == 0 && c.m == 0 && pneg && c.neg);
}

inline std::uint64_t ieee_add(const layout &L, const num &a, const num &b) {
  num one;
  one.m = 1;
  return ieee_fma(L, a, one, b);
}

// |x| < 2^-126 (binary32 bits) -> a zero of its sign.
inline std::uint64_t flush32(std::uint64_t bits) {
  return ((bits >> 23) & 0xff) == 0 ? bits & 0x80000000u : bits;
}

// --------------------------------------------------------------------------------------------
// The operation types (docs/tensor-cores.md, "AMD CDNA matrix cores").

enum class op { fma_chain, pairwise, fused_rd, fused_rd_two_stage };

struct instr {
  layout a, b, out; // xf32 is L32 with xf32 = true
  bool xf32;
  int k, group;
  op o;
  bool flush;
};

// MMA-Sim's exponent of a finite factor: floor(log2|x|), at least the layout's emin; -126 for zero.
inline int factor_exp(const layout &L, const num &x) {
  if (x.m == 0) return -126;
  const int l = ilog2(x);
  return l < L.emin() ? L.emin() : l;
}

// floor(v / 2^u) and trunc(v / 2^u) for a finite value v, as integers.
inline big floor_units(const num &v, int u) {
  const big s = signed_m(v);
  if (v.e >= u) return s * pow2(v.e - u);
  const int sh = u - v.e;
  const big d = pow2(sh);
  big q = s / d; // truncates toward zero
  if (s < 0 && q * d != s) --q;
  return q;
}
inline big trunc_units(const num &v, int u) {
  const big s = signed_m(v);
  return v.e >= u ? big(s * pow2(v.e - u)) : big(s / pow2(u - v.e));
}

// One fused group: products x[i]*y[i] with exponents ex[i] (finite), accumulator c (binary32 bits).
inline std::uint64_t fused_group(const instr &I, const std::vector<num> &x, const std::vector<num> &y,
                                 std::uint64_t cbits) {
  const num c = decode(L32, cbits);
  bool nan = c.c == cls::nan, pi = c.c == cls::inf && !c.neg, ni = c.c == cls::inf && c.neg;
  const int n = int(x.size());
  for (int i = 0; i < n; ++i) {
    if (x[i].c == cls::nan || y[i].c == cls::nan)
      nan = true;
    else if (x[i].c == cls::inf || y[i].c == cls::inf) {
      if (x[i].zero() || y[i].zero())
        nan = true;
      else
        (x[i].neg != y[i].neg ? ni : pi) = true;
    }
  }
  if (nan || (pi && ni)) return nan_bits(L32);
  if (pi || ni) return inf_bits(L32, ni);
  std::vector<num> p(n);
  std::vector<int> pe(n);
  for (int i = 0; i < n; ++i) {
    p[i] = exact_mul(x[i], y[i]);
    pe[i] = factor_exp(I.a, x[i]) + factor_exp(I.b, y[i]);
    if (p[i].m != 0 && ilog2(p[i]) >= 128) (p[i].neg ? ni : pi) = true;
  }
  if (pi && ni) return nan_bits(L32);
  if (pi || ni) return inf_bits(L32, ni);
  // Sum of the products in `idx`, each truncated to units 2^(emax - 24); returns (sum, emax).
  auto part = [&](const std::vector<int> &idx, int &emax) {
    emax = pe[idx[0]];
    for (int i : idx)
      emax = pe[i] > emax ? pe[i] : emax;
    big s = 0;
    for (int i : idx)
      s += trunc_units(p[i], emax - 24);
    return s;
  };
  const int ec = factor_exp(L32, c);
  big s;
  int e;
  bool keep_c = true;
  if (I.o == op::fused_rd_two_stage) {
    std::vector<int> ev, od;
    for (int i = 0; i < n; ++i)
      (i % 2 ? od : ev).push_back(i);
    int e0, e1;
    const big s0 = part(ev, e0), s1 = part(od, e1);
    e = e0 > e1 ? e0 : e1;
    s = floor_units(from_signed(s0, e0 - 24), e - 24) + floor_units(from_signed(s1, e1 - 24), e - 24);
    const int E = e > ec ? e : ec;
    keep_c = ec >= E - 25;
  } else {
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i)
      all[i] = i;
    s = part(all, e);
  }
  const int E = e > ec ? e : ec;
  const big sr = floor_units(from_signed(s, e - 24), E - 31);
  const big cr = keep_c ? floor_units(c, E - 24) : big(0);
  const num total = exact_add(from_signed(sr, E - 31), from_signed(cr, E - 24));
  return round_rne(L32, total, false);
}

// D for one output element: a, b, c bit patterns; K padded with zeros to a multiple of I.k.
inline std::uint64_t dot(const instr &I, const std::uint64_t *a, const std::uint64_t *b, int K,
                         std::uint64_t c) {
  if (K <= 0) return c;
  const int padded = (K + I.k - 1) / I.k * I.k;
  auto opa = [&](int i) {
    std::uint64_t v = i < K ? a[i] : 0;
    if (I.xf32) v &= ~std::uint64_t(0x1fff);
    return decode(I.a, v);
  };
  auto opb = [&](int i) {
    std::uint64_t v = i < K ? b[i] : 0;
    if (I.xf32) v &= ~std::uint64_t(0x1fff);
    return decode(I.b, v);
  };
  std::uint64_t acc = c;
  if (I.o == op::fma_chain) {
    for (int i = 0; i < padded; ++i)
      acc = ieee_fma(I.out, opa(i), opb(i), decode(I.out, acc));
  } else if (I.o == op::pairwise) {
    // CDNA2: inputs below 2^emin (zeros included) read as +0; results below 2^-126 flushed.
    auto in = [&](num x, const layout &L) {
      if (I.flush && x.c == cls::fin && (x.m == 0 || ilog2(x) < L.emin())) x = num{};
      return x;
    };
    auto fl = [&](std::uint64_t v) { return I.flush ? flush32(v) : v; };
    if (I.flush && in(decode(L32, acc), L32).zero()) acc = 0; // C too reads as +0
    for (int k0 = 0; k0 < padded; k0 += I.group) {
      std::vector<std::uint64_t> t;
      for (int i = 0; i < I.group; ++i)
        t.push_back(fl(ieee_fma(L32, in(opa(k0 + i), I.a), in(opb(k0 + i), I.b), num{})));
      while (t.size() > 1) { // pairs of neighbours, level by level
        std::vector<std::uint64_t> u;
        for (std::size_t i = 0; i < t.size(); i += 2)
          u.push_back(fl(ieee_add(L32, decode(L32, t[i]), decode(L32, t[i + 1]))));
        t = u;
      }
      acc = fl(ieee_add(L32, decode(L32, acc), decode(L32, t[0])));
    }
  } else {
    for (int k0 = 0; k0 < padded; k0 += I.group) {
      std::vector<num> x, y;
      for (int i = 0; i < I.group; ++i)
        x.push_back(opa(k0 + i)), y.push_back(opb(k0 + i));
      acc = fused_group(I, x, y, acc);
    }
  }
  const num r = decode(I.out, acc);
  return r.c == cls::nan ? nan_bits(I.out) : acc;
}

} // namespace amdref
