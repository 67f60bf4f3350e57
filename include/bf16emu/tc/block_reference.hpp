// bf16emu tensor-core model: one block fused dot-product-add (FDPA), the reference.
//
// This header is the model as the sources describe it, one term at a time, for every format
// and tracer; it holds no fast path (tc/block_fast.hpp has the SIMD paths, tc/block.hpp picks
// between them; tests/tc/test_fast.cpp checks that both give these bits).
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
// the model take its fast path (tc/block_fast.hpp) for the block. The fields equal those derived from the
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

// Real products in the block at k0 of a chain over K (the rest are padding zeros).
BF16EMU_CXHD int chain_n(const block_params &p, int K, int k0) noexcept {
  return K - k0 >= p.L ? p.L : K - k0 > 0 ? K - k0 : 0;
}

} // namespace detail

// The reference block (the general path, any formats and tracer): d = sum_{i<n} a[i*sa]*b[i*sb] + c,
// with L - n zero products padding the block.
// `block_index` and `k0` only label the trace record. A and B may have different formats
// (InB, deduced from b: the fp8 e4m3 x e5m2 mixes); a product's significand then has
// In::frac_bits + InB::frac_bits fraction bits.
template <class In, class Out, class Tracer, class InB = In>
BF16EMU_CXHD fp<Out> block_fdpa_reference(const block_params &p, const fp<In> *a, std::ptrdiff_t sa,
                                          const fp<InB> *b, std::ptrdiff_t sb, int n, fp<Out> c,
                                          Tracer &tracer, int block_index = 0, int k0 = 0) noexcept {
  static_assert(In::precision + InB::precision + 2 <= 62, "input significands too wide for the 64-bit model");
  if (n > p.L) n = p.L;
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
BF16EMU_CXHD fp<Out> block_fdpa_reference(const block_params &p, const fp<In> *a, std::ptrdiff_t sa,
                                          const fp<InB> *b, std::ptrdiff_t sb, int n, fp<Out> c) noexcept {
  no_block_trace t;
  return block_fdpa_reference<In, Out>(p, a, sa, b, sb, n, c, t);
}

} // namespace bf16emu::tc
