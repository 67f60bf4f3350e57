// bf16emu tensor-core model: one block fused dot-product-add (FDPA).
//
// One block takes n <= L products a_i*b_i and the accumulator c and returns
//
//   d = round_out( sum_i trunc_F(a_i*b_i) + trunc_F(c) )
//
// where, with emax the largest exponent over the L products and c (a zero term, including
// the zero products that pad a short block, has exponent e_zero, or MMA-Sim's under
// zero_exp::mmasim),
//   - a product's exponent is ea + eb (its significand ma*mb lies in [0,4): not renormalised),
//     c's is its own exponent (format emin for subnormals);
//   - trunc_F cuts a term, in sign-magnitude, to a multiple of 2^(emax - F);
//   - the sum is exact (an int64: terms are below 2^(F+2), at most 33 of them);
//   - round_out normalises once and rounds to the output format: truncation to `out_frac`
//     fraction bits (FP32: 23; the fp8 paths keep 13), or nearest-even (FP16 output);
//     a result past the output's range is +-Inf; a zero result is +0.
// NaN in, Inf*0 or +Inf + -Inf give the output's all-ones NaN; otherwise an Inf propagates.
// docs/tensor-cores.md gives the sources for every step.
//
// Everything is constexpr, host+device, allocation- and exception-free, 64-bit integers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "bf16emu/core/config.hpp"
#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/arch.hpp"

#if defined(BF16EMU_HOST_AVX2_DISPATCH)
#include <immintrin.h>
#endif

namespace bf16emu::tc {

// Largest block the model supports (the widest published block is 32 fp8 products).
inline constexpr int max_block = 32;

enum class out_round : std::uint8_t {
  truncate,     // round toward zero (FP32 output on every NVIDIA generation modelled)
  nearest_even, // FP16 output
};

// The exponent a zero term takes in the max search, where the sources disagree
// (docs/tensor-cores.md, "The zero-term exponent"). A zero term adds nothing to the sum, but
// an exponent above every other term's raises emax and so cuts the other terms shorter.
enum class zero_exp : std::uint8_t {
  e_zero, // every zero term (zero product, padding product, zero c) takes block_params::e_zero
          // (the MATLAB models of Khattak & Mikaitis): the default
  mmasim, // MMA-Sim's reading: a zero operand counts as exponent -126 (mmasim_zero_exp) in
          // every format, so a zero product a*b takes -126 plus the other factor's exponent (and
          // the scale factors' exponents; 0*0 and padding: -252), a zero c -126, and a zero
          // UE4M3 scale factor -126 (scaled.hpp)
};

// The exponent MMA-Sim gives every zero value (mmasim/simulator/arithmetic.py,
// extract_significand_exponent).
inline constexpr int mmasim_zero_exp = -126;

BF16EMU_CXHD const char *to_string(zero_exp z) noexcept {
  return z == zero_exp::mmasim ? "mmasim" : "e_zero";
}

// "e_zero" (or "default"), "mmasim" -> z; false (z unchanged) for any other name.
BF16EMU_CXHD bool parse_zero_exp(std::string_view name, zero_exp &z) noexcept {
  if (detail::name_is(name, "e_zero") || detail::name_is(name, "default")) return z = zero_exp::e_zero, true;
  if (detail::name_is(name, "mmasim")) return z = zero_exp::mmasim, true;
  return false;
}

// The parameters of a block. The input and output formats are template parameters of the
// functions below (any format<>, typically bf16/fp16/tf32/e4m3/e5m2 in and fp32/fp16 out).
struct block_params {
  int L = 8;         // products per block, 1..max_block
  int F = 24;        // fraction bits kept below the block's max exponent at alignment
  int e_zero = -132; // exponent a zero term (zero product, zero c) takes in the max search
  int out_frac = 23; // fraction bits of the output significand (<= the output format's)
  out_round rounding = out_round::truncate;
  zero_exp zeros = zero_exp::e_zero; // which exponent zero terms take (per call, not global)

  BF16EMU_CXHD bool valid() const noexcept {
    return L >= 1 && L <= max_block && F >= 1 && F <= 48 && out_frac >= 1 && out_frac <= 52;
  }
};

// ---------------------------------------------------------------------------
// Trace: one record per block, given to a tracer after the block is computed.

// One term of a block: products 0..L-1, then c.
struct term_trace {
  bool zero = false;      // a zero term: it took the exponent e_zero
  std::int32_t exp = 0;   // exponent used in the max search (ea+eb, ec, or e_zero)
  std::int32_t shift = 0; // how many low bits of the term's exact significand fell below
                          // the block lsb 2^lsb_exp (<= 0: none could)
  double lost = 0;        // signed value lost to alignment: exact term - aligned term
                          // (exact in binary64; 0 for zero terms)
};

// One block. Values are exact in binary64 (every field is a short integer times a power of
// two within binary64 range) except where stated. For the ledger:
//   exact block value = sum_value + sum of terms[i].lost
//   d                 = sum_value + trunc_err
struct block_trace {
  int block = 0;                     // index of the block in its chain (0 = first, lowest k)
  int k0 = 0;                        // k index of the block's first product
  int n_products = 0;                // L (padding zeros included)
  int n_real = 0;                    // products taken from the inputs (the rest are padding zeros)
  bool special = false;              // NaN/Inf path: no alignment took place, the fields below are 0
  std::int32_t max_exp = 0;          // emax: largest exponent over products, c and zero terms
  std::int32_t lsb_exp = 0;          // emax - F: weight of the last bit kept at alignment
  std::int64_t aligned_sum = 0;      // exact integer sum of the aligned terms, in units of 2^lsb_exp
  double sum_value = 0;              // aligned_sum * 2^lsb_exp
  double trunc_err = 0;              // d - sum_value: the output rounding error (+-inf on overflow)
  std::uint64_t c_bits = 0;          // accumulator in (bit pattern of the output format)
  std::uint64_t d_bits = 0;          // result (bit pattern of the output format)
  term_trace terms[max_block + 1]{}; // [0, n_products): products; [n_products]: c
};

// A block tracer: `static constexpr bool enabled` and `operator()(const block_trace&)`.
struct no_block_trace {
  static constexpr bool enabled = false;
  BF16EMU_CXHD void operator()(const block_trace &) const noexcept {}
};

template <class Fn> struct block_trace_fn {
  static constexpr bool enabled = true;
  Fn fn;
  BF16EMU_CXHD void operator()(const block_trace &t) { fn(t); }
};
template <class Fn> BF16EMU_CXHD block_trace_fn<Fn> make_block_tracer(Fn fn) {
  return block_trace_fn<Fn>{fn};
}

// A block's summary: what the attention ledger reads from a block (tc_adapter.hpp). A tracer
// with `static constexpr bool summary = true` receives this instead of block_trace, which lets
// the model take its fast path (below) for the block. The fields equal those derived from the
// full trace: lost = sum of terms[i].lost in term order (products, padding zeros, then c),
// trunc_err = block_trace::trunc_err; both are 0 for special blocks.
struct block_summary {
  int block = 0, k0 = 0, n_products = 0, n_real = 0;
  bool special = false;
  std::uint64_t d_bits = 0;
  double trunc_err = 0, lost = 0;
};

template <class Fn> struct block_summary_fn {
  static constexpr bool enabled = true;
  static constexpr bool summary = true;
  Fn fn;
  BF16EMU_CXHD void operator()(const block_summary &s) { fn(s); }
};
template <class Fn> BF16EMU_CXHD block_summary_fn<Fn> make_block_summary_tracer(Fn fn) {
  return block_summary_fn<Fn>{fn};
}

namespace detail {

// 2^e as a binary64 (e within the normal range), constexpr without <cmath>.
BF16EMU_CXHD double pow2(int e) noexcept {
  if (e < -1022) return pow2(e + 600) * pow2(-600);
  if (e > 1023) return pow2(e - 600) * pow2(600);
  return bf16emu::detail::bit_cast<double>(std::uint64_t(e + 1023) << 52);
}

// A finite value as sign, integer significand and the exponent of its leading position:
// value = (-1)^neg * sig * 2^(exp - F::frac_bits); exp = emin for subnormals and zeros.
struct unpacked {
  std::uint64_t sig;
  int exp;
  bool neg;
};

template <class Fmt> BF16EMU_CXHD unpacked unpack(std::uint64_t bits) noexcept {
  const int be = int((bits & Fmt::exp_mask) >> Fmt::frac_bits);
  const std::uint64_t frac = bits & Fmt::frac_mask;
  const bool neg = (bits & Fmt::sign_mask) != 0;
  if (be == 0) return {frac, Fmt::emin, neg};
  return {frac | (std::uint64_t{1} << Fmt::frac_bits), be - Fmt::bias, neg};
}

// Is the pattern an Inf or NaN (the special path)?
template <class Fmt> BF16EMU_CXHD bool is_special(std::uint64_t bits) noexcept {
  if constexpr (!Fmt::has_nan) // OCP MX fp6/fp4: every pattern is finite
    return (void)bits, false;
  else if constexpr (Fmt::has_inf)
    return (bits & Fmt::exp_mask) == Fmt::exp_mask;
  else
    return (bits & Fmt::abs_mask) == (Fmt::exp_mask | Fmt::frac_mask);
}

// A zero term's exponent in the max search under `rule`: e_zero, or MMA-Sim's `mmasim`, the
// exponent sum in which each zero factor counted as mmasim_zero_exp (zero_factor_exp).
BF16EMU_CXHD int zero_term_exp(zero_exp rule, int e_zero, int mmasim) noexcept {
  return rule == zero_exp::mmasim ? mmasim : e_zero;
}
BF16EMU_CXHD int zero_factor_exp(const unpacked &u) noexcept { return u.sig == 0 ? mmasim_zero_exp : u.exp; }

template <class Out> BF16EMU_CXHD std::uint64_t nan_bits() noexcept {
  // All-ones NaN (0x7fffffff, 0x7fff), as MMA-Sim emits; docs/tensor-cores.md.
  return Out::abs_mask;
}

// Round the nonzero value (-1)^neg * mag * 2^base into Out, keeping out_frac fraction bits.
// Returns the bit pattern; overflow gives +-Inf (NaN pattern in formats without Inf).
template <class Out>
BF16EMU_CXHD std::uint64_t round_out(bool neg, std::uint64_t mag, int base, int out_frac,
                                     out_round mode) noexcept {
  const int top = 63 - bf16emu::detail::clz64(mag);         // position of the leading one
  const int e = top + base;                                 // exponent of the exact value
  const int q = (e > Out::emin ? e : Out::emin) - out_frac; // exponent of the output lsb
  const int shift = q - base;
  std::uint64_t kept;
  if (shift <= 0) {
    kept = mag << -shift; // exact
  } else {
    kept = shift >= 64 ? 0 : mag >> shift;
    if (mode == out_round::nearest_even) {
      const std::uint64_t rem = shift >= 64 ? mag : mag & ((std::uint64_t{1} << shift) - 1);
      const std::uint64_t half = shift > 64 ? ~std::uint64_t{0} : std::uint64_t{1} << (shift - 1);
      if (shift <= 64 && (rem > half || (rem == half && (kept & 1)))) ++kept;
    }
  }
  if (kept == 0) return 0; // a result that truncates to zero is +0 (as an exact zero sum)
  // Biased exponent minus one, then the significand with its hidden bit adds the one.
  const std::int64_t bem1 = std::int64_t(q) + out_frac - Out::emin;
  if (bem1 >= Out::exp_field_max) return (neg ? Out::sign_mask : 0) | Out::inf_bits;
  std::uint64_t bits = (std::uint64_t(bem1) << Out::frac_bits) + (kept << (Out::frac_bits - out_frac));
  if ((bits & Out::abs_mask) >= Out::exp_mask || bits > Out::abs_mask)
    bits = Out::inf_bits; // rounded past the largest finite value
  if constexpr (!Out::has_inf) {
    if (bits >= Out::inf_bits) bits = Out::inf_bits;
  }
  return (neg ? Out::sign_mask : 0) | bits;
}

// The NaN/Inf path (taken when any input is Inf or NaN).
template <class In, class Out, class InB = In>
BF16EMU_CXHD std::uint64_t special_block(const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                         std::ptrdiff_t sb, int n, fp<Out> c) noexcept {
  bool nan = c.is_nan(), pinf = c.is_inf() && !c.sign(), ninf = c.is_inf() && c.sign();
  for (int i = 0; i < n; ++i) {
    const fp<In> x = a[i * sa];
    const fp<InB> y = b[i * sb];
    if (x.is_nan() || y.is_nan())
      nan = true;
    else if (x.is_inf() || y.is_inf()) {
      if (x.is_zero() || y.is_zero())
        nan = true; // Inf * 0
      else if (x.sign() != y.sign())
        ninf = true;
      else
        pinf = true;
    }
  }
  if (nan || (pinf && ninf)) return nan_bits<Out>();
  if (pinf || ninf) return (ninf ? Out::sign_mask : 0) | Out::inf_bits;
  return c.bits; // not reached: the caller saw a special operand
}

template <class Tracer, class = void> struct is_summary_tracer { static constexpr bool value = false; };
template <class Tracer> struct is_summary_tracer<Tracer, decltype(void(Tracer::summary))> {
  static constexpr bool value = Tracer::summary;
};

// Hands a finished block to the tracer: the full record, or its summary.
template <class Tracer> BF16EMU_CXHD void emit_trace(Tracer &tracer, const block_trace &t) {
  if constexpr (is_summary_tracer<Tracer>::value) {
    block_summary s;
    s.block = t.block, s.k0 = t.k0, s.n_products = t.n_products, s.n_real = t.n_real;
    s.special = t.special, s.d_bits = t.d_bits, s.trunc_err = t.trunc_err;
    if (!t.special)
      for (int i = 0; i <= t.n_products; ++i)
        s.lost += t.terms[i].lost;
    tracer(s);
  } else {
    tracer(t);
  }
}

// c's contribution in units of 2^base (truncated in sign-magnitude) and, with Lost, the value
// it loses to the truncation (exact in binary64).
template <class Out> BF16EMU_CXHD std::int64_t c_term(const unpacked &uc, int base, double *lost) noexcept {
  constexpr int mc = Out::frac_bits;
  const int sh = base - (uc.exp - mc); // (a zero c may sit far above or below emax)
  const std::uint64_t v = uc.sig == 0 ? 0 : sh <= 0 ? uc.sig << -sh : sh >= 64 ? 0 : uc.sig >> sh;
  if (lost && uc.sig != 0 && sh > 0) {
    const std::uint64_t l = sh >= 64 ? uc.sig : uc.sig & ((std::uint64_t{1} << sh) - 1);
    *lost = double(l) * pow2(uc.exp - mc);
    if (uc.neg) *lost = -*lost;
  }
  return uc.neg ? -std::int64_t(v) : std::int64_t(v);
}

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

} // namespace detail

// One block: d = sum_{i<n} a[i*sa]*b[i*sb] + c, with L - n zero products padding the block.
// `block_index` and `k0` only label the trace record. A and B may have different formats
// (InB, deduced from b: the fp8 e4m3 x e5m2 mixes); a product's significand then has
// In::frac_bits + InB::frac_bits fraction bits. Mixed blocks take the general path.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> block_fdpa(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c, Tracer &tracer, int block_index = 0,
                                int k0 = 0) noexcept {
  static_assert(In::precision + InB::precision + 2 <= 62, "input significands too wide for the 64-bit model");
  if (n > p.L) n = p.L;
  if constexpr (std::is_same_v<In, InB> && detail::fast_formats<In, Out> &&
                (!Tracer::enabled || detail::is_summary_tracer<Tracer>::value)) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      block_summary s;
      if (detail::fast_one<In, Out, Tracer::enabled>(p, a, sa, b, sb, n, c, s)) {
        if constexpr (Tracer::enabled) {
          s.block = block_index, s.k0 = k0, s.n_products = p.L, s.n_real = n;
          tracer(s);
        }
        return fp<Out>::from_bits(s.d_bits);
      }
    }
  }
  constexpr int m2 = In::frac_bits + InB::frac_bits; // products: value = sig * 2^(exp - m2)
  constexpr int mc = Out::frac_bits;                 // c:        value = sig * 2^(exp - mc)

  // Pass 1: specials, exact products, the max exponent.
  std::uint64_t psig[max_block];
  int pexp[max_block];
  bool pneg[max_block];
  bool special = detail::is_special<Out>(c.bits);
  constexpr int none = -(1 << 30);
  // Zero terms: the largest exponent among them (zero_exp; padding products are zero terms).
  const int pad_exp = detail::zero_term_exp(p.zeros, p.e_zero, 2 * mmasim_zero_exp);
  int zmax = n < p.L ? pad_exp : none;
  int emax = none; // over nonzero terms
  for (int i = 0; i < n; ++i) {
    const std::uint64_t xa = a[i * sa].bits, xb = b[i * sb].bits;
    special |= bool(unsigned(detail::is_special<In>(xa)) | unsigned(detail::is_special<InB>(xb)));
    const detail::unpacked ua = detail::unpack<In>(xa), ub = detail::unpack<InB>(xb);
    psig[i] = ua.sig * ub.sig;
    pexp[i] = ua.exp + ub.exp;
    pneg[i] = ua.neg != ub.neg;
    if (psig[i] == 0) {
      pexp[i] =
          detail::zero_term_exp(p.zeros, p.e_zero, detail::zero_factor_exp(ua) + detail::zero_factor_exp(ub));
      if (pexp[i] > zmax) zmax = pexp[i];
    } else if (pexp[i] > emax) {
      emax = pexp[i];
    }
  }
  std::uint64_t d;
  if (special) {
    d = detail::special_block<In, Out, InB>(a, sa, b, sb, n, c);
    if constexpr (Tracer::enabled) {
      block_trace t{};
      t.block = block_index, t.k0 = k0, t.n_products = p.L, t.n_real = n, t.special = true;
      t.c_bits = c.bits, t.d_bits = d;
      detail::emit_trace(tracer, t);
    }
    return fp<Out>::from_bits(d);
  }
  const detail::unpacked uc = detail::unpack<Out>(c.bits);
  const int c_zero_exp = detail::zero_term_exp(p.zeros, p.e_zero, mmasim_zero_exp);
  if (uc.sig == 0) {
    if (c_zero_exp > zmax) zmax = c_zero_exp;
  } else if (uc.exp > emax) {
    emax = uc.exp;
  }
  if (emax == none) { // every term is zero: the exact zero sum gives +0
    if constexpr (Tracer::enabled) {
      block_trace t{};
      t.block = block_index, t.k0 = k0, t.n_products = p.L, t.n_real = n;
      t.max_exp = zmax, t.lsb_exp = zmax - p.F, t.c_bits = c.bits;
      for (int i = 0; i < p.L; ++i)
        t.terms[i] = term_trace{true, i < n ? pexp[i] : pad_exp, 0, 0.0};
      t.terms[p.L] = term_trace{true, c_zero_exp, 0, 0.0};
      detail::emit_trace(tracer, t);
    }
    return fp<Out>::from_bits(0);
  }
  if (zmax > emax) emax = zmax;
  const int base = emax - p.F; // exponent of the accumulator's lsb

  // Pass 2: align (truncate in sign-magnitude) and add exactly.
  // A product's significand moves left by F - 2m (the block lsb relative to a product of
  // exponent emax), then right by emax - exponent (>= 0 for nonzero products; a zero
  // product's exponent may exceed emax, and the unsigned clamp turns that into a shift by 63
  // of zero, so no shift count is ever out of range).
  std::int64_t sum = 0;
  const int ls = p.F - m2;
  if (ls >= 0) { // every preset: one shift pair, no branches
    for (int i = 0; i < n; ++i) {
      const unsigned d = unsigned(emax - pexp[i]);
      const std::uint64_t v = (psig[i] << ls) >> (d > 63u ? 63u : d);
      const std::int64_t neg = -std::int64_t(pneg[i]); // 0 or -1
      sum += (std::int64_t(v) ^ neg) - neg;
    }
  } else {
    for (int i = 0; i < n; ++i) {
      const int sh = base - (pexp[i] - m2); // right shift of the significand
      const std::uint64_t v = psig[i] == 0 ? 0 : sh <= 0 ? psig[i] << -sh : sh >= 64 ? 0 : psig[i] >> sh;
      sum += pneg[i] ? -std::int64_t(v) : std::int64_t(v);
    }
  }
  sum += detail::c_term<Out>(uc, base, nullptr);

  // One normalisation and rounding into the output format.
  d = sum == 0 ? 0
               : detail::round_out<Out>(sum < 0, sum < 0 ? std::uint64_t(-sum) : std::uint64_t(sum), base,
                                        p.out_frac, p.rounding);

  if constexpr (Tracer::enabled) {
    block_trace t{};
    t.block = block_index, t.k0 = k0, t.n_products = p.L, t.n_real = n;
    t.max_exp = emax, t.lsb_exp = base, t.aligned_sum = sum;
    t.sum_value = double(sum) * detail::pow2(base);
    t.c_bits = c.bits, t.d_bits = d;
    auto term = [&](std::uint64_t sig, int exp, int scale, bool neg) {
      term_trace tt{};
      if (sig == 0) return term_trace{true, exp, 0, 0.0}; // exp: the zero term's (pexp, c_zero_exp)
      tt.exp = exp;
      tt.shift = base - (exp - scale);
      if (tt.shift > 0) {
        const std::uint64_t lost = tt.shift >= 64 ? sig : sig & ((std::uint64_t{1} << tt.shift) - 1);
        tt.lost = double(lost) * detail::pow2(exp - scale);
        if (neg) tt.lost = -tt.lost;
      }
      return tt;
    };
    for (int i = 0; i < n; ++i)
      t.terms[i] = term(psig[i], pexp[i], m2, pneg[i]);
    for (int i = n; i < p.L; ++i)
      t.terms[i] = term_trace{true, pad_exp, 0, 0.0};
    t.terms[p.L] = term(uc.sig, uc.sig == 0 ? c_zero_exp : uc.exp, mc, uc.neg);
    const fp<Out> dv = fp<Out>::from_bits(d);
    if (dv.is_inf())
      t.trunc_err = dv.sign() ? -__builtin_huge_val() : __builtin_huge_val();
    else {
      const detail::unpacked ud = detail::unpack<Out>(d);
      const double dval = double(ud.sig) * detail::pow2(ud.exp - mc);
      t.trunc_err = (ud.neg ? -dval : dval) - t.sum_value;
    }
    detail::emit_trace(tracer, t);
  }
  return fp<Out>::from_bits(d);
}

// Same, without a trace.
template <class In, class Out, class InB = In>
BF16EMU_CXHD fp<Out> block_fdpa(const block_params &p, const fp<In> *a, std::ptrdiff_t sa, const fp<InB> *b,
                                std::ptrdiff_t sb, int n, fp<Out> c) noexcept {
  no_block_trace t;
  return block_fdpa<In, Out>(p, a, sa, b, sb, n, c, t);
}

namespace detail {
// Real products in the block at k0 of a chain over K (the rest are padding zeros).
BF16EMU_CXHD int chain_n(const block_params &p, int K, int k0) noexcept {
  return K - k0 >= p.L ? p.L : K - k0 > 0 ? K - k0 : 0;
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
  if (!done) return block_fdpa<In, Out>(p, a, sa, b, sb, n, c, tracer, block, k0);
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

// A chain of blocks over K products a[k*sa]*b[k*sb], padded to a multiple of instr_k with zero
// products, each block's result the next block's c (the k order of tc::dot, mma.hpp). On the
// fast path the host status is saved once for the whole chain. B may have its own format
// (InB, as in block_fdpa); mixed chains take the general path.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> chain_fdpa(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                                const fp<InB> *b, std::ptrdiff_t sb, int K, fp<Out> c,
                                Tracer &tracer) noexcept {
  if (K <= 0) return c;
  if (instr_k < p.L) instr_k = p.L;
  const int padded = (K + instr_k - 1) / instr_k * instr_k;
  if constexpr (detail::fast_chain_types<In, Out, Tracer, InB>) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      return detail::fast_chain<In, Out>(p, padded, a, sa, b, sb, K, c, tracer);
    }
  }
  int block = 0;
  for (int k0 = 0; k0 < padded; k0 += p.L, ++block) {
    const int n = detail::chain_n(p, K, k0);
    const std::ptrdiff_t off = n > 0 ? k0 : 0; // never form pointers past the data
    c = block_fdpa<In, Out>(p, a + off * sa, sa, b + off * sb, sb, n, c, tracer, block, k0);
  }
  return c;
}

// ncols chains sharing A: c[j] = chain_fdpa(p, instr_k, a, sa, b + j*bcol, sb, K, c[j]) for
// j < ncols (c: in the accumulators, out the results), the tracer seeing the blocks of column
// 0, then column 1, ...: bit for bit ncols calls of chain_fdpa in order. On the fast path the
// columns advance together block by block (detail::fast_cols_loop), which lets the CPU overlap
// the chains.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD void chain_fdpa_cols(const block_params &p, int instr_k, const fp<In> *a, std::ptrdiff_t sa,
                                  const fp<InB> *b, std::ptrdiff_t sb, std::ptrdiff_t bcol, int ncols, int K,
                                  fp<Out> *c, Tracer &tracer) noexcept {
  if (K <= 0 || ncols <= 0) return;
  if constexpr (detail::fast_chain_types<In, Out, Tracer, InB>) {
    if (!__builtin_is_constant_evaluated() && detail::fast_params<In>(p)) {
      const int ik = instr_k < p.L ? p.L : instr_k;
      detail::fast_cols<In, Out>(p, (K + ik - 1) / ik * ik, a, sa, b, sb, bcol, ncols, K, c, tracer);
      return;
    }
  }
  for (int j = 0; j < ncols; ++j)
    c[j] = chain_fdpa<In, Out>(p, instr_k, a, sa, b + j * bcol, sb, K, c[j], tracer);
}

} // namespace bf16emu::tc
