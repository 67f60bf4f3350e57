// bf16emu tensor-core model: the fast paths of the block FDPA (tc/block_reference.hpp), for
// finite blocks of narrow formats: a portable instance the compiler vectorises and, on x86-64
// hosts with AVX2, an instance with per-lane shifts; single blocks, chains and several chains
// sharing A. Each gives the reference's bits (tests/tc/test_fast.cpp); a block with an Inf or
// NaN operand goes to the reference. tc/block.hpp chooses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bf16emu/tc/block_reference.hpp"

#if defined(BF16EMU_HOST_AVX2_DISPATCH)
#include <immintrin.h>
#endif

namespace bf16emu::tc {
namespace detail {

// The fast path of block_fdpa, for finite blocks of inputs of at most 32 bits whose exact
// significand products fit 24 bits (bf16, fp16, tf32, fp8) and parameters whose aligned
// product sum fits an int32 (L * 2^(F+2) <= 2^31, F >= 2 * frac bits). Same arithmetic,
// reorganised for SIMD: pass 1 forms the integer significand products and the biased
// exponent sums without branches; pass 2 aligns them in 32-bit lanes and sums them. Returns
// false (having computed nothing the caller uses) for blocks with an Inf or NaN operand: the
// caller takes the general path. Two instances: the portable one (fast_block, vectorised by
// the compiler at the x86-64 baseline) and, on x86-64 hosts with AVX2, fast_block_avx2
// (per-lane shifts), chosen at run time (fast_any, fast_chain); tests/tc/test_fast.cpp checks
// that both give the general path's bits.
template <class In, class Out>
inline constexpr bool fast_formats = 2 * In::precision <= 24 && In::width <= 32;

template <class In> BF16EMU_CXHD bool fast_params(const block_params &p) noexcept {
  return p.zeros == zero_exp::e_zero && p.F >= 2 * In::frac_bits && p.F <= 28 &&
         (std::int64_t{p.L} << (p.F + 2)) <= (std::int64_t{1} << 31);
}

// The block's max exponent emax from pass 1 and c: emaxb is the largest biased exponent sum
// (exponent + 2 bias) of a nonzero product (0: none), zero says whether a product is zero or
// pads the block. False: every term is zero (the exact zero sum gives +0).
template <class In>
BF16EMU_HD inline bool fast_emax(const block_params &p, int emaxb, bool zero, const unpacked &uc,
                                 int &emax) noexcept {
  constexpr int none = -(1 << 30);
  emax = emaxb != 0 ? emaxb - 2 * In::bias : none;
  if (uc.sig == 0)
    zero = true;
  else if (uc.exp > emax)
    emax = uc.exp;
  if (emax == none) return false;
  if (zero && p.e_zero > emax) emax = p.e_zero;
  return true;
}

// A product's alignment loss: its exact value mag * 2^scale minus its kept part t * 2^base
// (unit = 2^base), negated for a negative product. Both parts and the difference (the bits
// below the block lsb) are exact in binary64.
BF16EMU_HD inline double fast_lost(std::uint32_t mag, int scale, std::int32_t t, double unit,
                                   bool neg) noexcept {
  const double l = double(mag) * pow2(scale) - double(t) * unit;
  return neg ? -l : l;
}

// A block's result and ledger fields without default initialisers (the multi-column paths
// keep arrays of them; block_summary would be zero-filled each time).
struct held_summary {
  std::uint64_t d_bits;
  double trunc_err, lost;
  bool special;
};

// Adds c to the aligned product sum, rounds, and (Lost) completes the summary (S:
// block_summary or held_summary).
template <class Out, bool Lost, class S>
BF16EMU_HD inline void fast_finish(const block_params &p, std::int32_t sum32, int base, const unpacked &uc,
                                   double lost, S &s) noexcept {
  double lost_c = 0;
  const std::int64_t sum = std::int64_t(sum32) + c_term<Out>(uc, base, Lost ? &lost_c : nullptr);
  s.d_bits = sum == 0 ? 0
                      : round_out<Out>(sum < 0, sum < 0 ? std::uint64_t(-sum) : std::uint64_t(sum), base,
                                       p.out_frac, p.rounding);
  if constexpr (Lost) {
    s.lost = lost + lost_c;
    const fp<Out> dv = fp<Out>::from_bits(s.d_bits);
    const double sum_value = double(sum) * pow2(base);
    if (dv.is_inf()) {
      s.trunc_err = dv.sign() ? -__builtin_huge_val() : __builtin_huge_val();
    } else {
      const unpacked ud = unpack<Out>(s.d_bits);
      const double dval = double(ud.sig) * pow2(ud.exp - Out::frac_bits);
      s.trunc_err = (ud.neg ? -dval : dval) - sum_value;
    }
  }
}

// The portable instance. Pass 1 runs in 16-bit lanes where the significand products fit
// (bf16, fp8), else 32-bit. Pass 2 aligns each product by a float multiplication with
// 2^(its exponent - the block lsb), exact because the product has at most 22 significant
// bits and the scale is clamped to >= 2^-126 (a product that far below the lsb truncates to 0
// either way), and truncates it toward zero with the float -> int32 conversion. That
// conversion raises the host's inexact flag: callers save and restore the host status around
// a run of blocks (fast_status). NL: the number of products when fixed at compile time (a
// full block, the common case; 0: n). Unit: both strides are 1.
template <class In, class Out, bool Lost, int NL, bool Unit>
BF16EMU_HD inline bool fast_block(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                                  std::ptrdiff_t sb, int n_, fp<Out> c, block_summary &s) noexcept {
  if (is_special<Out>(c.bits)) return false;
  const int n = NL ? NL : n_;
  if constexpr (Unit) sa = 1, sb = 1;
  constexpr int m2 = 2 * In::frac_bits;
  using lane = std::conditional_t<2 * In::precision <= 16 && In::width <= 16, std::uint16_t, std::uint32_t>;
  using slane = std::make_signed_t<lane>;
  constexpr lane fmask = lane(In::frac_mask), emask = lane(In::exp_field_max),
                 hidden = lane(1u << In::frac_bits);
  lane ps[max_block];
  slane pe[max_block], ng[max_block];
  lane spec = 0, zero = lane(n < p.L);
  slane emaxb = 0; // largest biased exponent sum of a nonzero product (0: none)
  for (int i = 0; i < n; ++i) {
    const lane xa = lane(a[i * sa].bits), xb = lane(b[i * sb].bits);
    spec |= lane(is_special<In>(xa)) | lane(is_special<In>(xb));
    const lane ba = lane(xa >> In::frac_bits) & emask, bb = lane(xb >> In::frac_bits) & emask;
    const lane ma = lane((xa & fmask) | (ba != 0 ? hidden : lane(0)));
    const lane mb = lane((xb & fmask) | (bb != 0 ? hidden : lane(0)));
    const lane prod = lane(ma * mb);
    const slane e = slane((ba > 1 ? ba : lane(1)) + (bb > 1 ? bb : lane(1))); // exponent + 2 bias
    ps[i] = prod, pe[i] = e;
    ng[i] = slane(-slane(lane(xa ^ xb) >> (In::width - 1))); // 0 or -1
    zero |= lane(prod == 0);
    const slane ee = prod != 0 ? e : slane(0);
    emaxb = ee > emaxb ? ee : emaxb;
  }
  if (spec) return false;
  const unpacked uc = unpack<Out>(c.bits);
  int emax;
  if (!fast_emax<In>(p, emaxb, zero != 0, uc, emax)) {
    s.d_bits = 0, s.trunc_err = 0, s.lost = 0;
    return true;
  }
  const int base = emax - p.F;
  // A product's term is trunc(prod * 2^k), k = e - eoff (clamped to [-126, 31]).
  const int eoff = emax + 2 * In::bias + m2 - p.F;
  const slane lo = slane(eoff - 126 < -30000 ? -30000 : eoff - 126),
              hi = slane(eoff + 31 > 30000 ? 30000 : eoff + 31);
  std::int32_t ts[Lost ? max_block : 1];
  std::int32_t sum32 = 0;
  for (int i = 0; i < n; ++i) {
    const slane ec = pe[i] < lo ? lo : pe[i] > hi ? hi : pe[i];
    const std::int32_t k = std::int32_t(ec) - eoff;
    const float x =
        float(std::int32_t(ps[i])) * bf16emu::detail::bit_cast<float>(std::uint32_t(k + 127) << 23);
    const std::int32_t t = std::int32_t(x);
    if constexpr (Lost) ts[i] = t;
    const std::int32_t g = ng[i];
    sum32 += (t ^ g) - g;
  }
  double lost = 0;
  if constexpr (Lost) {
    const double unit = pow2(base);
    for (int i = 0; i < n; ++i) // in term order, as the general path's trace
      lost += fast_lost(ps[i], pe[i] - 2 * In::bias - m2, ts[i], unit, ng[i] != 0);
  }
  fast_finish<Out, Lost>(p, sum32, base, uc, lost, s);
  return true;
}

// One block on the portable fast path, dispatched to its fixed-size instances.
template <class In, class Out, bool Lost>
BF16EMU_HD inline bool fast_any_portable(const block_params &p, const fp<In> *a, std::ptrdiff_t sa,
                                         const fp<In> *b, std::ptrdiff_t sb, int n, fp<Out> c,
                                         block_summary &s) noexcept {
  const bool unit = sa == 1 && sb == 1;
  if (n == 16 && unit) return fast_block<In, Out, Lost, 16, true>(p, a, sa, b, sb, n, c, s);
  if (n == 8 && unit) return fast_block<In, Out, Lost, 8, true>(p, a, sa, b, sb, n, c, s);
  if (n == 16) return fast_block<In, Out, Lost, 16, false>(p, a, sa, b, sb, n, c, s);
  return fast_block<In, Out, Lost, 0, false>(p, a, sa, b, sb, n, c, s);
}

#if defined(BF16EMU_HOST_AVX2_DISPATCH)
// The AVX2 instance, for full blocks of 8, 16 or 32 products with unit strides: 8 products
// per 256-bit vector in 32-bit lanes. Pass 2 aligns with per-lane shifts, integers only
// (no host flags): term = ((prod << (F - 2m)) >> (emax + 2 bias - e)), the general path's
// shift pair (a shift by 32 or more gives 0, as its clamped shift by 63 does; a zero
// product's possibly negative count shifts 0).
template <class In> BF16EMU_TARGET_AVX2 inline __m256i avx2_load8(const fp<In> *p) noexcept {
  static_assert(sizeof(fp<In>) == sizeof(typename In::storage));
  if constexpr (sizeof(fp<In>) == 1)
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
  else if constexpr (sizeof(fp<In>) == 2)
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  else
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
}

template <class In> BF16EMU_TARGET_AVX2 inline __m256i avx2_special(__m256i x) noexcept {
  if constexpr (In::has_inf) {
    const __m256i m = _mm256_set1_epi32(int(In::exp_mask));
    return _mm256_cmpeq_epi32(_mm256_and_si256(x, m), m);
  } else {
    const __m256i nan = _mm256_set1_epi32(int(In::exp_mask | In::frac_mask));
    return _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(int(In::abs_mask))), nan);
  }
}

// The block's alignment losses summed in term order (as the general path's trace) from the
// vectors of fast_block_avx2: m0 the products' magnitudes before alignment, ex their biased
// exponent sums, t the aligned terms, sg their signs. Each term is fast_lost's, computed four
// lanes at a time (both products and their difference are exact in binary64, so the lanes equal
// fast_lost bit for bit); only the sum runs one term at a time, in term order. A scale outside
// binary64's normal range (no format the fast path takes reaches it) takes fast_lost itself.
template <class In, int NV>
BF16EMU_TARGET_AVX2 BF16EMU_INLINE double avx2_lost(const block_params &p, int base, const __m256i *m0,
                                                    const __m256i *ex, const __m256i *t,
                                                    const __m256i *sg) noexcept {
  static_assert(2 * (In::frac_bits + 1) <= 31, "a product's magnitude must convert as a signed int32");
  alignas(32) double lv[8 * NV];
  const double unit = pow2(base);
  const __m256i off = _mm256_set1_epi32(1023 - 2 * In::bias - p.F);
  const __m256d unitv = _mm256_set1_pd(unit);
  const __m256i signbit = _mm256_set1_epi64x(std::int64_t(std::uint64_t{1} << 63));
  bool normal = true;
  for (int v = 0; v < NV; ++v) {
    const __m256i be = _mm256_add_epi32(ex[v], off); // biased binary64 exponent of 2^scale
    normal &= _mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(1), be),
                                                   _mm256_cmpgt_epi32(be, _mm256_set1_epi32(2046)))) == 0;
    const __m256i neg = _mm256_srai_epi32(sg[v], 31);
    for (int h = 0; h < 2; ++h) {
      const __m128i m = h ? _mm256_extracti128_si256(m0[v], 1) : _mm256_castsi256_si128(m0[v]);
      const __m128i e = h ? _mm256_extracti128_si256(be, 1) : _mm256_castsi256_si128(be);
      const __m128i tt = h ? _mm256_extracti128_si256(t[v], 1) : _mm256_castsi256_si128(t[v]);
      const __m128i ng = h ? _mm256_extracti128_si256(neg, 1) : _mm256_castsi256_si128(neg);
      const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(e), 52));
      const __m256d l = _mm256_sub_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(m), scale),
                                      _mm256_mul_pd(_mm256_cvtepi32_pd(tt), unitv));
      const __m256d sgn = _mm256_castsi256_pd(_mm256_and_si256(_mm256_cvtepi32_epi64(ng), signbit));
      _mm256_store_pd(lv + 8 * v + 4 * h, _mm256_xor_pd(l, sgn));
    }
  }
  if (!normal) {
    alignas(32) std::uint32_t mv[8 * NV];
    alignas(32) std::int32_t ev[8 * NV], tv[8 * NV], gv[8 * NV];
    for (int v = 0; v < NV; ++v) {
      _mm256_store_si256(reinterpret_cast<__m256i *>(mv + 8 * v), m0[v]);
      _mm256_store_si256(reinterpret_cast<__m256i *>(ev + 8 * v), ex[v]);
      _mm256_store_si256(reinterpret_cast<__m256i *>(tv + 8 * v), t[v]);
      _mm256_store_si256(reinterpret_cast<__m256i *>(gv + 8 * v), sg[v]);
    }
    for (int i = 0; i < 8 * NV; ++i)
      lv[i] = fast_lost(mv[i], ev[i] - 2 * In::bias - p.F, tv[i], unit, gv[i] < 0);
  }
  double lost = 0;
  for (int i = 0; i < 8 * NV; ++i)
    lost += lv[i];
  return lost;
}

template <class In, class Out, bool Lost, int NL>
BF16EMU_TARGET_AVX2 inline bool fast_block_avx2(const block_params &p, const fp<In> *a, const fp<In> *b,
                                                fp<Out> c, block_summary &s) noexcept {
  static_assert(NL % 8 == 0 && NL <= max_block);
  constexpr int NV = NL / 8;
  if (is_special<Out>(c.bits)) return false;
  const __m256i fmask = _mm256_set1_epi32(int(In::frac_mask)), emask = _mm256_set1_epi32(In::exp_field_max),
                hidden = _mm256_set1_epi32(1 << In::frac_bits), one = _mm256_set1_epi32(1),
                zero = _mm256_setzero_si256();
  const __m128i ls = _mm_cvtsi32_si128(p.F - 2 * In::frac_bits);
  __m256i mag[NV], ex[NV], sg[NV], m0[Lost ? NV : 1];
  __m256i spec = zero, zr = zero, emx = zero;
  for (int v = 0; v < NV; ++v) {
    const __m256i xa = avx2_load8<In>(a + 8 * v), xb = avx2_load8<In>(b + 8 * v);
    spec = _mm256_or_si256(spec, _mm256_or_si256(avx2_special<In>(xa), avx2_special<In>(xb)));
    const __m256i ba = _mm256_and_si256(_mm256_srli_epi32(xa, In::frac_bits), emask);
    const __m256i bb = _mm256_and_si256(_mm256_srli_epi32(xb, In::frac_bits), emask);
    const __m256i ma = _mm256_or_si256(_mm256_and_si256(xa, fmask),
                                       _mm256_andnot_si256(_mm256_cmpeq_epi32(ba, zero), hidden));
    const __m256i mb = _mm256_or_si256(_mm256_and_si256(xb, fmask),
                                       _mm256_andnot_si256(_mm256_cmpeq_epi32(bb, zero), hidden));
    const __m256i prod = _mm256_mullo_epi32(ma, mb);
    const __m256i e = _mm256_add_epi32(_mm256_max_epi32(ba, one), _mm256_max_epi32(bb, one)); // exp + 2 bias
    const __m256i isz = _mm256_cmpeq_epi32(prod, zero);
    zr = _mm256_or_si256(zr, isz);
    emx = _mm256_max_epi32(emx, _mm256_andnot_si256(isz, e));
    mag[v] = _mm256_sll_epi32(prod, ls), ex[v] = e;
    if constexpr (Lost) m0[v] = mag[v];
    // Sign for _mm256_sign_epi32: negative for a negative product, else positive (never 0).
    sg[v] = _mm256_or_si256(_mm256_slli_epi32(_mm256_xor_si256(xa, xb), 32 - In::width), one);
  }
  if (!_mm256_testz_si256(spec, spec)) return false;
  __m128i m4 = _mm_max_epi32(_mm256_castsi256_si128(emx), _mm256_extracti128_si256(emx, 1));
  m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, 0x4e));
  m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, 0xb1));
  const int emaxb = _mm_cvtsi128_si32(m4);
  // Pre-align to the products' own max emaxb (independent of c): u = mag >> (emaxb - e). The
  // block's emax >= that, and floor(floor(x / 2^i) / 2^j) = floor(x / 2^(i+j)), so the terms
  // are u >> (emax + 2 bias - emaxb): one uniform shift on c's path.
  const __m256i pb = _mm256_set1_epi32(emaxb);
  for (int v = 0; v < NV; ++v)
    mag[v] = _mm256_srlv_epi32(mag[v], _mm256_sub_epi32(pb, ex[v]));
  const unpacked uc = unpack<Out>(c.bits);
  int emax;
  if (!fast_emax<In>(p, emaxb, !_mm256_testz_si256(zr, zr), uc, emax)) {
    s.d_bits = 0, s.trunc_err = 0, s.lost = 0;
    return true;
  }
  // (With no nonzero product, emaxb = 0 and every u is 0; the count then is >= 32 or, as a
  // zero-extended negative, huge: 0 either way.)
  const __m128i sh = _mm_cvtsi32_si128(emax + 2 * In::bias - emaxb);
  __m256i t[NV], acc = zero;
  for (int v = 0; v < NV; ++v) {
    t[v] = _mm256_srl_epi32(mag[v], sh);
    acc = _mm256_add_epi32(acc, _mm256_sign_epi32(t[v], sg[v]));
  }
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  const int base = emax - p.F;
  double lost = 0;
  if constexpr (Lost) lost = avx2_lost<In, NV>(p, base, m0, ex, t, sg);
  fast_finish<Out, Lost>(p, _mm_cvtsi128_si32(s4), base, uc, lost, s);
  return true;
}

// Lane j of the result: op over the 8 lanes of v[j] (j < 4), the 4-way reduction shared by the
// columns of fast_block_avx2_cols. Max: the signed maximum; else the sum.
template <bool Max> BF16EMU_TARGET_AVX2 BF16EMU_INLINE __m256i avx2_op(__m256i x, __m256i y) noexcept {
  if constexpr (Max)
    return _mm256_max_epi32(x, y);
  else
    return _mm256_add_epi32(x, y);
}

template <bool Max> BF16EMU_TARGET_AVX2 BF16EMU_INLINE __m128i avx2_reduce4(const __m256i *v) noexcept {
  constexpr auto op = avx2_op<Max>;
  const __m256i m01 = op(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
  const __m256i m23 = op(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
  const __m256i m = op(_mm256_unpacklo_epi64(m01, m23), _mm256_unpackhi_epi64(m01, m23));
  const __m128i lo = _mm256_castsi256_si128(m), hi = _mm256_extracti128_si256(m, 1);
  return Max ? _mm_max_epi32(lo, hi) : _mm_add_epi32(lo, hi);
}

// NC <= 4 full blocks of NL products with unit strides, one per column, sharing a: column j's
// b at b + j*bcol and its c in c[j], its summary in s[j]. The arithmetic of fast_block_avx2
// column by column (the same bits), with a's unpacking and the horizontal reductions shared.
// False (nothing written) where any column has an Inf or NaN operand: the caller then takes
// the columns one at a time.
template <class In, class Out, bool Lost, int NL, int NC>
BF16EMU_TARGET_AVX2 __attribute__((flatten)) inline bool
fast_block_avx2_cols(const block_params &p, const fp<In> *a, const fp<In> *b, std::ptrdiff_t bcol,
                     const fp<Out> *c, held_summary *s) noexcept {
  static_assert(NL % 8 == 0 && NL <= max_block && NC >= 1 && NC <= 4);
  constexpr int NV = NL / 8;
  bool cspec = false;
  for (int j = 0; j < NC; ++j)
    cspec |= is_special<Out>(c[j].bits);
  if (cspec) return false;
  const __m256i fmask = _mm256_set1_epi32(int(In::frac_mask)), emask = _mm256_set1_epi32(In::exp_field_max),
                hidden = _mm256_set1_epi32(1 << In::frac_bits), one = _mm256_set1_epi32(1),
                zero = _mm256_setzero_si256();
  const __m128i ls = _mm_cvtsi32_si128(p.F - 2 * In::frac_bits);
  __m256i xa[NV], ma[NV], ea[NV];
  __m256i spec = zero;
  for (int v = 0; v < NV; ++v) {
    xa[v] = avx2_load8<In>(a + 8 * v);
    spec = _mm256_or_si256(spec, avx2_special<In>(xa[v]));
    const __m256i ba = _mm256_and_si256(_mm256_srli_epi32(xa[v], In::frac_bits), emask);
    ma[v] = _mm256_or_si256(_mm256_and_si256(xa[v], fmask),
                            _mm256_andnot_si256(_mm256_cmpeq_epi32(ba, zero), hidden));
    ea[v] = _mm256_max_epi32(ba, one);
  }
  __m256i mag[NC][NV], ex[NC][NV], sg[NC][NV], m0[Lost ? NC : 1][Lost ? NV : 1];
  __m256i zr[NC], emx[4];
  for (int j = 0; j < 4; ++j)
    emx[j] = zero;
  for (int j = 0; j < NC; ++j) {
    zr[j] = zero;
    for (int v = 0; v < NV; ++v) {
      const __m256i xb = avx2_load8<In>(b + j * bcol + 8 * v);
      spec = _mm256_or_si256(spec, avx2_special<In>(xb));
      const __m256i bb = _mm256_and_si256(_mm256_srli_epi32(xb, In::frac_bits), emask);
      const __m256i mb = _mm256_or_si256(_mm256_and_si256(xb, fmask),
                                         _mm256_andnot_si256(_mm256_cmpeq_epi32(bb, zero), hidden));
      const __m256i prod = _mm256_mullo_epi32(ma[v], mb);
      const __m256i e = _mm256_add_epi32(ea[v], _mm256_max_epi32(bb, one)); // exp + 2 bias
      const __m256i isz = _mm256_cmpeq_epi32(prod, zero);
      zr[j] = _mm256_or_si256(zr[j], isz);
      emx[j] = _mm256_max_epi32(emx[j], _mm256_andnot_si256(isz, e));
      mag[j][v] = _mm256_sll_epi32(prod, ls), ex[j][v] = e;
      if constexpr (Lost) m0[j][v] = mag[j][v];
      sg[j][v] = _mm256_or_si256(_mm256_slli_epi32(_mm256_xor_si256(xa[v], xb), 32 - In::width), one);
    }
  }
  if (!_mm256_testz_si256(spec, spec)) return false;
  alignas(16) std::int32_t emaxb[4];
  _mm_store_si128(reinterpret_cast<__m128i *>(emaxb), avx2_reduce4<true>(emx));
  __m256i acc[4], t[NC][NV];
  int base[NC];
  unpacked uc[NC];
  bool live[NC];
  for (int j = 0; j < 4; ++j)
    acc[j] = zero;
  for (int j = 0; j < NC; ++j) {
    const __m256i pb = _mm256_set1_epi32(emaxb[j]);
    uc[j] = unpack<Out>(c[j].bits);
    int emax;
    live[j] = fast_emax<In>(p, emaxb[j], !_mm256_testz_si256(zr[j], zr[j]), uc[j], emax);
    base[j] = emax - p.F;
    const __m128i sh = _mm_cvtsi32_si128(live[j] ? emax + 2 * In::bias - emaxb[j] : 0);
    for (int v = 0; v < NV; ++v) {
      t[j][v] = _mm256_srl_epi32(_mm256_srlv_epi32(mag[j][v], _mm256_sub_epi32(pb, ex[j][v])), sh);
      acc[j] = _mm256_add_epi32(acc[j], _mm256_sign_epi32(t[j][v], sg[j][v]));
    }
  }
  alignas(16) std::int32_t sum[4];
  _mm_store_si128(reinterpret_cast<__m128i *>(sum), avx2_reduce4<false>(acc));
  for (int j = 0; j < NC; ++j) {
    s[j].special = false;
    if (!live[j]) {
      s[j].d_bits = 0, s[j].trunc_err = 0, s[j].lost = 0;
      continue;
    }
    double lost = 0;
    if constexpr (Lost) lost = avx2_lost<In, NV>(p, base[j], m0[j], ex[j], t[j], sg[j]);
    fast_finish<Out, Lost>(p, sum[j], base[j], uc[j], lost, s[j]);
  }
  return true;
}

// One block with AVX2 where the block is full and has unit strides, else the portable path.
template <class In, class Out, bool Lost>
BF16EMU_TARGET_AVX2 inline bool fast_any_avx2(const block_params &p, const fp<In> *a, std::ptrdiff_t sa,
                                              const fp<In> *b, std::ptrdiff_t sb, int n, fp<Out> c,
                                              block_summary &s) noexcept {
  if (sa == 1 && sb == 1) {
    if (n == 16) return fast_block_avx2<In, Out, Lost, 16>(p, a, b, c, s);
    if (n == 8) return fast_block_avx2<In, Out, Lost, 8>(p, a, b, c, s);
    if (n == 32) return fast_block_avx2<In, Out, Lost, 32>(p, a, b, c, s);
  }
  return fast_any_portable<In, Out, Lost>(p, a, sa, b, sb, n, c, s);
}
#endif

// One block on the fast path: the AVX2 instance where the host has AVX2, else the portable
// one; false: take the general path (a special operand). The caller holds the host status
// (fast_status).
template <class In, class Out, bool Lost>
BF16EMU_HD inline bool fast_any(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c, block_summary &s) noexcept {
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  if (bf16emu::detail::host_has_avx2()) return fast_any_avx2<In, Out, Lost>(p, a, sa, b, sb, n, c, s);
#endif
  return fast_any_portable<In, Out, Lost>(p, a, sa, b, sb, n, c, s);
}

// Saves the host floating-point status on construction and restores it on destruction.
struct fast_status {
  unsigned saved;
  BF16EMU_HD fast_status() noexcept : saved(bf16emu::detail::host_fp_status()) {}
  BF16EMU_HD ~fast_status() { bf16emu::detail::restore_host_fp_status(saved); }
  fast_status(const fast_status &) = delete;
  fast_status &operator=(const fast_status &) = delete;
};

// One block on the fast path with the host status saved and restored around it.
template <class In, class Out, bool Lost>
BF16EMU_HD inline bool fast_one(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c, block_summary &s) noexcept {
  fast_status st;
  const bool done = fast_any<In, Out, Lost>(p, a, sa, b, sb, n, c, s);
  s.d_bits = bf16emu::detail::fp_fence(s.d_bits);
  return done;
}

// One block of a chain on the fast path (Avx2: its AVX2 instance), the general path where an
// operand is special; an enabled tracer receives the block's summary.
template <class In, class Out, bool Avx2, class Tracer>
BF16EMU_HD BF16EMU_INLINE fp<Out> fast_chain_block(const block_params &p, const fp<In> *a, std::ptrdiff_t sa,
                                                   const fp<In> *b, std::ptrdiff_t sb, int n, fp<Out> c,
                                                   Tracer &tracer, int block, int k0) noexcept {
  block_summary s;
  bool done;
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  if constexpr (Avx2)
    done = fast_any_avx2<In, Out, Tracer::enabled>(p, a, sa, b, sb, n, c, s);
  else
#endif
    done = fast_any_portable<In, Out, Tracer::enabled>(p, a, sa, b, sb, n, c, s);
  if (!done) return block_fdpa_reference<In, Out>(p, a, sa, b, sb, n, c, tracer, block, k0);
  if constexpr (Tracer::enabled) {
    s.block = block, s.k0 = k0, s.n_products = p.L, s.n_real = n;
    tracer(s);
  }
  return fp<Out>::from_bits(s.d_bits);
}

// One chain on the fast path, block by block (each block waits on the last one's result).
template <class In, class Out, class Tracer, bool Avx2>
BF16EMU_HD BF16EMU_INLINE fp<Out> fast_chain_loop(const block_params &p, int padded, const fp<In> *a,
                                                  std::ptrdiff_t sa, const fp<In> *b, std::ptrdiff_t sb,
                                                  int K, fp<Out> c, Tracer &tracer) noexcept {
  int block = 0;
  for (int k0 = 0; k0 < padded; k0 += p.L, ++block) {
    const int n = chain_n(p, K, k0);
    const std::ptrdiff_t off = n > 0 ? k0 : 0; // never form pointers past the data
    c = fast_chain_block<In, Out, Avx2>(p, a + off * sa, sa, b + off * sb, sb, n, c, tracer, block, k0);
  }
  return c;
}

// Column j's tracer inside the multi-column loop: hands each block summary to keep(j, .).
template <class Keep> struct column_keep {
  static constexpr bool enabled = true;
  static constexpr bool summary = true;
  Keep &keep;
  int j;
  BF16EMU_HD void operator()(const block_summary &s) const { keep(j, s); }
};

// Most blocks per chain whose summaries the multi-column loop holds back (emitted in column
// order after the loop): longer traced chains run one column at a time.
inline constexpr int cols_max_blocks = 64;

// NC >= 2 chains advanced together block by block on the fast path (one chain:
// fast_chain_loop): column j is the chain of
// a[k*sa] * b[j*bcol + k*sb] from c[j] (in: the accumulators; out: the results). The chains
// are independent, so the CPU overlaps one column's block with the next column's (one chain
// alone waits on each block's result, its next block's c). Avx2: the AVX2 instance for every
// block. Blocks with a special operand take the general path. With an enabled tracer, Keep is
// called with (column, block summary) for every block in chain order per column (the caller
// stores them until every column is done).
template <class In, class Out, bool Lost, bool Avx2, int NC, class Keep>
BF16EMU_HD BF16EMU_INLINE void fast_cols_loop(const block_params &p, int padded, const fp<In> *a,
                                              std::ptrdiff_t sa, const fp<In> *b, std::ptrdiff_t sb,
                                              std::ptrdiff_t bcol, int K, fp<Out> *c, Keep &&keep) noexcept {
  static_assert(NC >= 2);
  fp<Out> cc[NC];
  for (int j = 0; j < NC; ++j)
    cc[j] = c[j];
  int block = 0;
  for (int k0 = 0; k0 < padded; k0 += p.L, ++block) {
    const int n = chain_n(p, K, k0);
    const std::ptrdiff_t off = n > 0 ? k0 : 0; // never form pointers past the data
    const fp<In> *ak = a + off * sa;
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
    if constexpr (Avx2) {
      held_summary s[NC];
      bool done = false;
      if (sa == 1 && sb == 1) {
        const fp<In> *bk = b + off;
        if (n == 16)
          done = fast_block_avx2_cols<In, Out, Lost, 16, NC>(p, ak, bk, bcol, cc, s);
        else if (n == 8)
          done = fast_block_avx2_cols<In, Out, Lost, 8, NC>(p, ak, bk, bcol, cc, s);
        else if (n == 32)
          done = fast_block_avx2_cols<In, Out, Lost, 32, NC>(p, ak, bk, bcol, cc, s);
      }
      if (done) {
        for (int j = 0; j < NC; ++j) {
          if constexpr (Lost) {
            block_summary t;
            t.block = block, t.k0 = k0, t.n_products = p.L, t.n_real = n;
            t.d_bits = s[j].d_bits, t.trunc_err = s[j].trunc_err, t.lost = s[j].lost;
            keep(j, t);
          }
          cc[j] = fp<Out>::from_bits(s[j].d_bits);
        }
        continue;
      }
    }
#endif
    for (int j = 0; j < NC; ++j) {
      const fp<In> *bk = b + j * bcol + off * sb;
      if constexpr (Lost) {
        column_keep<Keep> t{keep, j};
        cc[j] = fast_chain_block<In, Out, Avx2>(p, ak, sa, bk, sb, n, cc[j], t, block, k0);
      } else {
        no_block_trace t;
        cc[j] = fast_chain_block<In, Out, Avx2>(p, ak, sa, bk, sb, n, cc[j], t, block, k0);
      }
    }
  }
  for (int j = 0; j < NC; ++j)
    c[j] = cc[j];
}

// NC chains together (fast_cols_loop), the tracer then seeing every block of column 0, then of
// column 1, ...: the order of NC single chains. No lambdas on this path: they would not
// inherit the AVX2 target of the caller.
template <class In, class Out, class Tracer, bool Avx2, int NC>
BF16EMU_HD BF16EMU_INLINE void
fast_cols_group(const block_params &p, int padded, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                std::ptrdiff_t sb, std::ptrdiff_t bcol, int K, fp<Out> *c, Tracer &tracer) noexcept {
  if constexpr (NC == 1) {
    *c = fast_chain_loop<In, Out, Tracer, Avx2>(p, padded, a, sa, b, sb, K, *c, tracer);
  } else if constexpr (!Tracer::enabled) {
    struct drop {
      BF16EMU_HD void operator()(int, const block_summary &) const noexcept {}
    };
    fast_cols_loop<In, Out, false, Avx2, NC>(p, padded, a, sa, b, sb, bcol, K, c, drop{});
  } else {
    held_summary held[NC * cols_max_blocks];
    int count[NC] = {};
    struct hold {
      held_summary *h;
      int *n;
      BF16EMU_HD void operator()(int j, const block_summary &s) const noexcept {
        held_summary &x = h[j * cols_max_blocks + n[j]++];
        x.d_bits = s.d_bits, x.trunc_err = s.trunc_err, x.lost = s.lost, x.special = s.special;
      }
    };
    fast_cols_loop<In, Out, true, Avx2, NC>(p, padded, a, sa, b, sb, bcol, K, c, hold{held, count});
    for (int j = 0; j < NC; ++j)
      for (int i = 0; i < count[j]; ++i) {
        const held_summary &x = held[j * cols_max_blocks + i];
        block_summary s;
        s.block = i, s.k0 = i * p.L, s.n_products = p.L, s.n_real = chain_n(p, K, s.k0);
        s.special = x.special, s.d_bits = x.d_bits, s.trunc_err = x.trunc_err, s.lost = x.lost;
        tracer(s);
      }
  }
}

// The chains of ncols columns: in groups of 4, then 2, then 1 (traced chains of more than
// cols_max_blocks blocks: one at a time).
template <class In, class Out, class Tracer, bool Avx2>
BF16EMU_HD BF16EMU_INLINE void
fast_cols_run(const block_params &p, int padded, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
              std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K, fp<Out> *c, Tracer &tracer) noexcept {
  int j0 = 0;
  if (!Tracer::enabled || padded / p.L <= cols_max_blocks) {
    for (; j0 + 4 <= ncols; j0 += 4)
      fast_cols_group<In, Out, Tracer, Avx2, 4>(p, padded, a, sa, b + j0 * bcol, sb, bcol, K, c + j0, tracer);
    for (; j0 + 2 <= ncols; j0 += 2)
      fast_cols_group<In, Out, Tracer, Avx2, 2>(p, padded, a, sa, b + j0 * bcol, sb, bcol, K, c + j0, tracer);
  }
  for (; j0 < ncols; ++j0)
    fast_cols_group<In, Out, Tracer, Avx2, 1>(p, padded, a, sa, b + j0 * bcol, sb, bcol, K, c + j0, tracer);
}

#if defined(BF16EMU_HOST_AVX2_DISPATCH)
template <class In, class Out, class Tracer>
BF16EMU_TARGET_AVX2 inline fp<Out> fast_chain_avx2(const block_params &p, int padded, const fp<In> *a,
                                                   std::ptrdiff_t sa, const fp<In> *b, std::ptrdiff_t sb,
                                                   int K, fp<Out> c, Tracer &tracer) noexcept {
  return fast_chain_loop<In, Out, Tracer, true>(p, padded, a, sa, b, sb, K, c, tracer);
}
#endif

// One chain on the fast path (AVX2 where the host has it), the host status saved once.
template <class In, class Out, class Tracer>
BF16EMU_HD inline fp<Out> fast_chain(const block_params &p, int padded, const fp<In> *a, std::ptrdiff_t sa,
                                     const fp<In> *b, std::ptrdiff_t sb, int K, fp<Out> c,
                                     Tracer &tracer) noexcept {
  fast_status st;
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  if (bf16emu::detail::host_has_avx2())
    c = fast_chain_avx2<In, Out>(p, padded, a, sa, b, sb, K, c, tracer);
  else
#endif
    c = fast_chain_loop<In, Out, Tracer, false>(p, padded, a, sa, b, sb, K, c, tracer);
  c.bits = bf16emu::detail::fp_fence(c.bits);
  return c;
}

#if defined(BF16EMU_HOST_AVX2_DISPATCH)
template <class In, class Out, class Tracer>
BF16EMU_TARGET_AVX2 inline void fast_cols_avx2(const block_params &p, int padded, const fp<In> *a,
                                               std::ptrdiff_t sa, const fp<In> *b, std::ptrdiff_t sb,
                                               std::ptrdiff_t bcol, int ncols, int K, fp<Out> *c,
                                               Tracer &tracer) noexcept {
  fast_cols_run<In, Out, Tracer, true>(p, padded, a, sa, b, sb, bcol, ncols, K, c, tracer);
}

#endif

// The chains of ncols columns on the fast path (AVX2 where the host has it), the host status
// saved once.
template <class In, class Out, class Tracer>
BF16EMU_HD inline void fast_cols(const block_params &p, int padded, const fp<In> *a, std::ptrdiff_t sa,
                                 const fp<In> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K,
                                 fp<Out> *c, Tracer &tracer) noexcept {
  fast_status st;
#if defined(BF16EMU_HOST_AVX2_DISPATCH)
  if (bf16emu::detail::host_has_avx2())
    fast_cols_avx2<In, Out>(p, padded, a, sa, b, sb, bcol, ncols, K, c, tracer);
  else
#endif
    fast_cols_run<In, Out, Tracer, false>(p, padded, a, sa, b, sb, bcol, ncols, K, c, tracer);
  for (int j = 0; j < ncols; ++j)
    c[j].bits = bf16emu::detail::fp_fence(c[j].bits);
}

// Whether chains of these formats and tracer take the fast path (for parameters that pass
// fast_params, outside constant evaluation).
template <class In, class Out, class Tracer, class InB>
inline constexpr bool fast_chain_types = std::is_same_v<In, InB> &&fast_formats<In, Out> &&
                                         (!Tracer::enabled || is_summary_tracer<Tracer>::value);
} // namespace detail
} // namespace bf16emu::tc
