// bf16emu: correctly rounded add, sub, mul, fma, div, sqrt and conversion.
//
// Each operation computes its exact result into a 64-bit window (plus the sign of
// whatever fell below it) and hands it to detail::round_pack. Operands and result
// may be of different formats; arithmetic supports up to 24 significant bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "bf16emu/core/round.hpp"
#include "bf16emu/core/special.hpp"

// The general routines are kept out of line, so that the fast paths that run first (below)
// compile to small leaf code with no stack frame of their own. Not `cold`: GCC optimises a cold
// function for size and inlines nothing into it, so cut, decide, split_u64, expansion::grow
// became calls (perf) and the traced general path, which every traced div and sqrt takes, went
// from 62 to 80 ns per add (issue 14's unexplained regression); without it, in one run,
// BM_f32_div<true> 86-91 -> 55-58 ns and BM_f32_sqrt<true> 103-113 -> 81-87 ns, trace-off
// unchanged within the noise.
#if defined(__CUDACC__)
#define BF16EMU_GENERAL_PATH __noinline__
#elif defined(__GNUC__)
#define BF16EMU_GENERAL_PATH __attribute__((noinline))
#else
#define BF16EMU_GENERAL_PATH
#endif

namespace bf16emu {

namespace detail {

template <class F> inline constexpr bool arith_ok = F::precision <= 24;

// Exact sum of two nonzero finite terms |a| = sa*2^ea, |b| = sb*2^eb (signs given), both
// significands with their leading bit at 61 and at most 48 significant bits, in a 64-bit
// window with leading bit at 61 or 62; bits of the smaller term that fall below the window
// become the tail (and then the leading bit is at 60 or above).
template <bool Trace>
BF16EMU_CXHD unrounded sum_normalized(bool sign_a, std::int32_t ea, std::uint64_t sa, bool sign_b,
                                      std::int32_t eb, std::uint64_t sb, const env &e,
                                      bool &exact_zero) noexcept {
  // Order by magnitude without branches (random data makes this a coin flip). Selects by
  // masks: GCC 12 turns the ?: form of these selects into a branch.
  const bool swap = (ea < eb) | ((ea == eb) & (sa < sb));
  const std::uint64_t m = std::uint64_t{0} - std::uint64_t(swap);
  const std::uint64_t big = sa ^ ((sa ^ sb) & m), small = sb ^ ((sa ^ sb) & m);
  const std::int32_t e_big = ea ^ ((ea ^ eb) & std::int32_t(m)), e_small = eb ^ ((ea ^ eb) & std::int32_t(m));
  const bool sign_big = sign_a ^ ((sign_a ^ sign_b) & swap);
  const std::uint32_t d = std::uint32_t(e_big - e_small);
  const std::uint32_t dc = d > 63 ? 63 : d; // small < 2^62, so a shift by 63 drops it all
  const std::uint64_t aligned = small >> dc;
  const std::uint64_t lost = small & ((std::uint64_t{1} << dc) - 1);
  const bool subtract = sign_a != sign_b;
  const std::uint64_t neg_mask = std::uint64_t{0} - std::uint64_t(subtract);
  unrounded u;
  u.sign = sign_big;
  u.exp = e_big;
  u.sig = big + ((aligned ^ neg_mask) - neg_mask); // big - aligned when subtracting
  const int has_tail = int(lost != 0);
  u.tail_sign = std::int8_t(has_tail - 2 * (has_tail & int(subtract))); // 0, or -1 when subtracting, else +1
  if constexpr (Trace) {
    if (lost != 0) {
      const double t = scale(double(lost), e_small);
      u.tail = subtract ? -t : t;
    }
  }
  exact_zero = u.sig == 0 && lost == 0;
  if (exact_zero) u.sign = zero_sum_sign(sign_a, sign_b, e);
  return u;
}

// The same for any nonzero significands of at most 48 bits.
template <bool Trace>
BF16EMU_CXHD unrounded sum_terms(bool sign_a, std::int32_t ea, std::uint64_t sa, bool sign_b, std::int32_t eb,
                                 std::uint64_t sb, const env &e, bool &exact_zero) noexcept {
  normalize_to(sa, ea, 61);
  normalize_to(sb, eb, 61);
  return sum_normalized<Trace>(sign_a, ea, sa, sign_b, eb, sb, e, exact_zero);
}

template <class Out, class FA, class FB, class Tr>
BF16EMU_GENERAL_PATH BF16EMU_CXHD result<Out> add_general(fp<FA> a, fp<FB> b, bool negate_b, const env &e,
                                                          Tr &tr, op_kind op) noexcept {
  static_assert(arith_ok<FA> && arith_ok<FB>, "arithmetic supports formats of up to 24 significant bits");
  const unpacked ua = unpack(a, e);
  unpacked ub = unpack(b, e);
  ub.sign ^= negate_b;
  if (ua.k == kind::nan || ub.k == kind::nan) return nan_result<Out>(e, 0, a, b);
  if (ua.k == kind::inf || ub.k == kind::inf) {
    if (ua.k == kind::inf && ub.k == kind::inf && ua.sign != ub.sign)
      return default_nan<Out>(e, flag::invalid);
    return infinity<Out>(ua.k == kind::inf ? ua.sign : ub.sign, e);
  }
  if (ua.k == kind::zero && ub.k == kind::zero) return zero<Out>(zero_sum_sign(ua.sign, ub.sign, e));
  unrounded u;
  if (ua.k == kind::zero || ub.k == kind::zero) {
    const unpacked &nz = ua.k == kind::zero ? ub : ua;
    u.sign = nz.sign;
    u.exp = nz.exp;
    u.sig = nz.sig;
  } else {
    bool exact_zero = false;
    u = sum_terms<Tr::enabled>(ua.sign, ua.exp, ua.sig, ub.sign, ub.exp, ub.sig, e, exact_zero);
    if (exact_zero) return zero<Out>(u.sign);
  }
  return round_pack<Out>(u, e, tr, op);
}

template <class Out, class FA, class FB, class Tr>
BF16EMU_GENERAL_PATH BF16EMU_CXHD result<Out> mul_general(fp<FA> a, fp<FB> b, const env &e, Tr &tr) noexcept {
  static_assert(arith_ok<FA> && arith_ok<FB>, "arithmetic supports formats of up to 24 significant bits");
  const unpacked ua = unpack(a, e), ub = unpack(b, e);
  const bool sign = ua.sign != ub.sign;
  if (ua.k == kind::nan || ub.k == kind::nan) return nan_result<Out>(e, 0, a, b);
  if (ua.k == kind::inf || ub.k == kind::inf) {
    if (ua.k == kind::zero || ub.k == kind::zero) return default_nan<Out>(e, flag::invalid);
    return infinity<Out>(sign, e);
  }
  if (ua.k == kind::zero || ub.k == kind::zero) return zero<Out>(sign);
  unrounded u;
  u.sign = sign;
  u.exp = ua.exp + ub.exp;
  u.sig = ua.sig * ub.sig; // <= 48 bits: exact
  return round_pack<Out>(u, e, tr, op_kind::mul);
}

template <class Out, class FA, class FB, class FC, class Tr>
BF16EMU_GENERAL_PATH BF16EMU_CXHD result<Out> fma_general(fp<FA> a, fp<FB> b, fp<FC> c, const env &e,
                                                          Tr &tr) noexcept {
  static_assert(arith_ok<FA> && arith_ok<FB> && arith_ok<FC>,
                "arithmetic supports formats of up to 24 significant bits");
  const unpacked ua = unpack(a, e), ub = unpack(b, e), uc = unpack(c, e);
  const bool ps = ua.sign != ub.sign;
  const bool inf_times_zero =
      (ua.k == kind::inf && ub.k == kind::zero) || (ua.k == kind::zero && ub.k == kind::inf);
  if (ua.k == kind::nan || ub.k == kind::nan || uc.k == kind::nan)
    return nan_result<Out>(e, inf_times_zero ? flag::invalid : 0, a, b, c, true);
  if (inf_times_zero) return default_nan<Out>(e, flag::invalid);
  const bool prod_inf = ua.k == kind::inf || ub.k == kind::inf;
  if (prod_inf || uc.k == kind::inf) {
    if (prod_inf && uc.k == kind::inf && ps != uc.sign) return default_nan<Out>(e, flag::invalid);
    return infinity<Out>(prod_inf ? ps : uc.sign, e);
  }
  const bool prod_zero = ua.k == kind::zero || ub.k == kind::zero;
  if (prod_zero && uc.k == kind::zero) return zero<Out>(zero_sum_sign(ps, uc.sign, e));
  unrounded u;
  if (prod_zero) {
    u.sign = uc.sign;
    u.exp = uc.exp;
    u.sig = uc.sig;
  } else if (uc.k == kind::zero) {
    u.sign = ps;
    u.exp = ua.exp + ub.exp;
    u.sig = ua.sig * ub.sig;
  } else {
    bool exact_zero = false;
    u = sum_terms<Tr::enabled>(ps, ua.exp + ub.exp, ua.sig * ub.sig, uc.sign, uc.exp, uc.sig, e, exact_zero);
    if (exact_zero) return zero<Out>(u.sign);
  }
  return round_pack<Out>(u, e, tr, op_kind::fma);
}

// Long division in two 32-bit steps, significands normalised to [2^31, 2^32):
// a 63- or 64-bit quotient, so even stochastic rounding (32 bits below the last
// kept bit of a 24-bit result) sees exact discarded bits; the remainder is the sticky.
template <bool Trace>
BF16EMU_CXHD unrounded long_div(bool sign, const unpacked &ua, const unpacked &ub) noexcept {
  std::uint64_t sa = ua.sig, sb = ub.sig;
  std::int32_t ea = ua.exp, eb = ub.exp;
  normalize_to(sa, ea, 31);
  normalize_to(sb, eb, 31);
  const std::uint64_t hi_num = sa << 31;
  const std::uint64_t q1 = hi_num / sb, r1 = hi_num % sb;
  const std::uint64_t lo_num = r1 << 32;
  const std::uint64_t q2 = lo_num / sb, r2 = lo_num % sb;
  unrounded u;
  u.sign = sign;
  u.sig = (q1 << 32) | q2;
  u.exp = ea - eb - 63;
  u.tail_sign = r2 != 0;
  if constexpr (Trace) {
    u.tail = scale(double(r2) / double(sb), u.exp);
    u.tail_exact = r2 == 0;
  }
  return u;
}

template <class Out, class FA, class FB, class Tr>
BF16EMU_GENERAL_PATH BF16EMU_CXHD result<Out> div_general(fp<FA> a, fp<FB> b, const env &e, Tr &tr) noexcept {
  static_assert(arith_ok<FA> && arith_ok<FB>, "arithmetic supports formats of up to 24 significant bits");
  const unpacked ua = unpack(a, e), ub = unpack(b, e);
  const bool sign = ua.sign != ub.sign;
  if (ua.k == kind::nan || ub.k == kind::nan) return nan_result<Out>(e, 0, a, b);
  if (ua.k == kind::inf) {
    if (ub.k == kind::inf) return default_nan<Out>(e, flag::invalid);
    return infinity<Out>(sign, e);
  }
  if (ub.k == kind::inf) return zero<Out>(sign);
  if (ub.k == kind::zero) {
    if (ua.k == kind::zero) return default_nan<Out>(e, flag::invalid);
    return infinity<Out>(sign, e, flag::divbyzero);
  }
  if (ua.k == kind::zero) return zero<Out>(sign);
  return round_pack<Out>(long_div<Tr::enabled>(sign, ua, ub), e, tr, op_kind::div);
}

// ---------------------------------------------------------------------------
// Fast paths (issue 14): same-format add, sub, mul, fma, div and sqrt on normal operands
// whose result is not tiny, with no tracer. The rounding mode becomes a template argument
// (one switch per call, in fast_dispatch); the exact result is formed in binary64 (add, sub,
// mul, fma, sqrt: further below) or in 64-bit integers as in the general routines (div, and
// the stochastic add and fma sums that binary64 cannot hold exactly) and rounded by round_normalized, i.e.
// by the same cut, inexact_bit, rounds_up<Mode> and overflow rule as round_pack. Each run()
// returns false, writing nothing, for anything else (zeros, subnormals, Inf/NaN, an
// exact-zero sum, a tiny result but div's): the general routine then computes it, flags and all.

// Add on the packed bits (stochastic rounding of the sums the binary64 engine cannot hold).
// The smaller operand's bits shifted out of the 64-bit window are jammed into its last bit (a sticky bit)
// instead of being carried as a tail: the larger significand has 61 - M zero bits below it, so the jammed bit
// changes no bit of the exact sum's floor above bit 0 (an exact sum R + f, 0 < f < 1, is computed as R or R +
// 1 with bit 0 set), and bit 0 lies below the guard, round and 32 fraction bits that the rounding reads.
template <round_mode Mode> struct fast_add_int {
  template <class F>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, bool negate_b, const env &e, result<F> &r) noexcept {
    if (!is_normal(a) || !is_normal(b)) return false;
    constexpr int M = F::frac_bits, s = 61 - M; // significands with their leading bit at 61
    const std::uint64_t xa = a.bits, xb = b.bits ^ (negate_b ? F::sign_mask : 0);
    // Normal magnitudes order as their bit patterns; select by masks (no branch).
    const std::uint64_t m = std::uint64_t{0} - std::uint64_t((xb & F::abs_mask) > (xa & F::abs_mask));
    const std::uint64_t hi = xa ^ ((xa ^ xb) & m), lo = xb ^ ((xa ^ xb) & m);
    const int eh = int((hi & F::exp_mask) >> M), el = int((lo & F::exp_mask) >> M);
    const std::uint64_t big = ((hi & F::frac_mask) | (std::uint64_t{1} << M)) << s;
    const std::uint64_t small = ((lo & F::frac_mask) | (std::uint64_t{1} << M)) << s;
    const unsigned d = unsigned(eh - el), dc = d > 63 ? 63 : d;
    const std::uint64_t aligned =
        (small >> dc) | std::uint64_t((small & ((std::uint64_t{1} << dc) - 1)) != 0);
    const std::uint64_t neg = std::uint64_t{0} - std::uint64_t(((xa ^ xb) & F::sign_mask) != 0);
    const std::uint64_t sum = big + ((aligned ^ neg) - neg); // big - aligned when the signs differ
    if (sum == 0) return false;                              // an exact zero: its sign depends on the mode
    const int n = clz64(sum);
    return round_normalized<F, Mode>((hi & F::sign_mask) != 0, eh - F::bias - M - s + 63 - n, sum << n, false,
                                     e, r);
  }
};

template <round_mode Mode> struct fast_fma_int {
  template <class F>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, fp<F> c, const env &e, result<F> &r) noexcept {
    if (!is_normal(a) || !is_normal(b) || !is_normal(c)) return false;
    const unpacked ua = unpack_normal(a), ub = unpack_normal(b), uc = unpack_normal(c);
    bool exact_zero = false;
    const unrounded u = sum_terms<false>(ua.sign != ub.sign, ua.exp + ub.exp, ua.sig * ub.sig, uc.sign,
                                         uc.exp, uc.sig, e, exact_zero);
    return !exact_zero && round_pack_normal<F, Mode>(u, e, r);
  }
};

// div. A tiny quotient, which the fast rounding declines, goes to round_pack with the same
// window (tininess, flushing): one in eight quotients of random bit patterns is tiny, and the
// general routine would unpack the operands and divide again.
template <round_mode Mode> struct fast_div {
  static constexpr bool traces = false;
  template <class F, class Tr>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, const env &e, result<F> &r, Tr &) noexcept {
    if (!is_normal(a) || !is_normal(b)) return false;
    const unpacked ua = unpack_normal(a), ub = unpack_normal(b);
    const bool sign = ua.sign != ub.sign;
    unrounded u;
    if constexpr (reads_frac32<Mode>) {
      // 32 exact bits below the last kept bit: the two-step division of the general routine.
      u = long_div<false>(sign, ua, ub);
      if (round_pack_normal<F, Mode>(u, e, r)) return true;
    } else {
      // One 64-bit division: the quotient lies in (2^(k-1), 2^(k+1)), its leading bit at
      // k - 1 or k, so it has 63 - 2P or more bits below the last kept bit (15 for P = 24):
      // guard and round are exact (also those of a tiny result, cut higher, and of round_pack's
      // rounding at full precision for tininess after rounding) and the remainder is the sticky
      // bit. (cut's 32-bit fraction then has zeros where further quotient bits would be; only
      // stochastic rounding reads it, and it takes the branch above.)
      constexpr int k = 63 - F::precision;
      const std::uint64_t num = ua.sig << k;
      const std::uint64_t q = num / ub.sig;
      const int hi = int(q >> k);
      const int lead = ua.exp - ub.exp - 1 + hi;
      u.sign = sign;
      u.sig = q << (64 - k - hi);
      u.tail_sign = std::int8_t(num % ub.sig != 0);
      if (round_normalized<F, Mode>(sign, lead, u.sig, u.tail_sign != 0, e, r)) return true;
      u.exp = lead - 63;
    }
    no_trace off; // tiny
    r = round_pack<F>(u, e, off, op_kind::div);
    return true;
  }
};

// The hardware's correctly rounded binary64 square root (run time only).
BF16EMU_HD inline double sqrt_f64(double x) noexcept {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);
#else
  return __builtin_sqrt(x);
#endif
}

// The binary64 engine (issue 14). Operands of at most 24 significant bits are exact in
// binary64, and so are their products and their sums whose exponents differ by at most
// 52 - P; round_binary64 reads such a binary64 result's bits and rounds them with
// round_normalized: the same cut, inexact_bit and rounds_up<Mode> as round_pack, so the host
// rounds nothing that decides a result, and exact binary64 operations raise no host flag.
// A square root rounded to binary64 is not exact but decides every mode but stochastic (see
// round_binary64); it raises the host's inexact flag, which is put back (config.hpp).
// Measured and not kept: a binary64 quotient and a binary64 fma (TwoSum) would also decide
// their results, but keeping the host's status as found costs a read of MXCSR (stmxcsr,
// ~16 ns on this AMD VM) per call, more than the integer division or the integer fma take.

// Largest exponent difference of an exact binary64 sum of two P-bit normal numbers: the sum
// spans at most d + P + 1 bits.
template <class F> inline constexpr int exact_sum_gap = 52 - F::precision;

// add, sub. Beyond exact_sum_gap the smaller operand lies wholly below the round bit of the
// larger (gap >= P + 3) and only its sign and its being nonzero matter to every mode but
// stochastic (which reads 32 bits below the last kept bit): it is replaced by a number of
// that sign at exponent difference exact_sum_gap, which leaves guard, round, sticky and the
// inexact bit of the exact sum unchanged. Stochastic rounding of such a sum takes the exact
// 64-bit integer path (fast_add_int).
//
// Traced (issue 14): the same rounding; the event is filled by round_binary64, the exact sum
// given to it as TwoSum of the operands (hi + lo, exact). Stochastic sums beyond the gap go to
// the general routine.
template <round_mode Mode> struct fast_add {
  static constexpr bool traces = true;
  template <class F, class Tr>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, bool negate_b, const env &e, result<F> &r, Tr &tr) noexcept {
    static_assert(exact_sum_gap<F> >= F::precision + 3);
    if ((int(is_normal(a)) & int(is_normal(b))) == 0) return false; // one branch
    constexpr int M = F::frac_bits, G = exact_sum_gap<F>;
    using S = typename F::storage;
    const int ea = a.biased_exp(), eb = b.biased_exp();
    fp<F> x = a, y = fp<F>::from_bits(S(b.bits ^ (negate_b ? F::sign_mask : 0)));
    const fp<F> y_exact = y;
    if constexpr (reads_frac32<Mode>) {
      if (ea - eb > G || eb - ea > G) {
        if constexpr (Tr::enabled)
          return false;
        else
          return fast_add_int<Mode>::run(a, b, negate_b, e, r);
      }
    } else {
      // Selects by masks, not branches: random exponents make the gap test a coin flip (GCC 12
      // turns the ?: form into branches).
      const std::uint32_t clamp_y = 0u - std::uint32_t(ea - eb > G),
                          clamp_x = 0u - std::uint32_t(eb - ea > G);
      const std::uint32_t ya = std::uint32_t(y.bits & F::sign_mask) | (std::uint32_t(ea - G) << M);
      const std::uint32_t xb = std::uint32_t(x.bits & F::sign_mask) | (std::uint32_t(eb - G) << M);
      y.bits = S(y.bits ^ ((y.bits ^ ya) & clamp_y));
      x.bits = S(x.bits ^ ((x.bits ^ xb) & clamp_x));
    }
    const double sum = to_binary64(x) + to_binary64(y);
    if constexpr (Tr::enabled) {
      const sum_err exact = two_sum(to_binary64(a), to_binary64(y_exact));
      // The event's op: add_impl passes negate_b exactly for sub.
      return round_binary64<F, Mode>(sum, e, r, tr, negate_b ? op_kind::sub : op_kind::add, exact.sum,
                                     exact.err);
    } else {
      return round_binary64<F, Mode>(sum, e, r);
    }
  }
};

// mul: the product of two P-bit significands has at most 2P <= 48 bits: exact.
// Traced: the same, the event filled by round_binary64 from the exact product.
template <round_mode Mode> struct fast_mul {
  static constexpr bool traces = true;
  template <class F, class Tr>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, const env &e, result<F> &r, Tr &tr) noexcept {
    if ((int(is_normal(a)) & int(is_normal(b))) == 0) return false;
    const double product = to_binary64(a) * to_binary64(b);
    if constexpr (Tr::enabled)
      return round_binary64<F, Mode>(product, e, r, tr, op_kind::mul, product, 0.0);
    else
      return round_binary64<F, Mode>(product, e, r);
  }
};

// sqrt: the binary64 root (any host rounding direction: within one binary64 ulp of the exact
// root, which is a number of P + 1 bits or more than that away from all of them: round_binary64).
// Negative operands, and stochastic rounding (32 exact bits needed), go to the general routine.
template <round_mode Mode> struct fast_sqrt {
  static constexpr bool traces = false;
  template <class F, class Tr>
  BF16EMU_CXHD static bool run(fp<F> a, const env &e, result<F> &r, Tr &) noexcept {
    if constexpr (reads_frac32<Mode>) {
      return false;
    } else {
      if (!is_normal(a) || a.sign() || __builtin_is_constant_evaluated()) return false;
      const unsigned status = host_fp_status();
      const double root = fp_fence(sqrt_f64(fp_fence(to_binary64(a))));
      restore_host_inexact(status);
      return round_binary64<F, Mode>(root, e, r);
    }
  }
};

// fma: the product p = a * b (2P <= 48 bits) is exact in binary64, and so is c. Of the two,
// x is the one with the larger binary64 exponent E (of its leading bit), y the other; the exact
// sum p + c is given to round_binary64 as x + odd(y), odd(y) = y rounded to odd at the quantum
// g = 2^(E - 51): y's bits at and above g kept, the bit at g set when any bit below it is.
//  1. x's bits lie at 2g and above (at most 2P <= 48 bits below its leading bit at E), so
//     x + odd(y) = odd(x + y), the exact sum rounded to odd at g: a multiple of g of magnitude
//     < 2^(E + 2) = 2^53 g, exact in binary64 (no host rounding, no host flag).
//  2. y loses bits only if its last bit lies below g, i.e. its leading bit at E - 5 or below:
//     then |p + c| > 2^E - 2^(E - 4) > 2^(E - 1), and every number of P + 1 significant bits
//     from 2^(E - 1) up is a multiple of 2^(E - 1 - P), an even multiple of g (P <= 49). odd(v)
//     and v lie strictly between the same two neighbouring multiples of 2g unless v is a
//     multiple of g (then they are equal), so odd(p + c) is what round_binary64 needs. Not the
//     32-bit fraction: stochastic rounding of a sum that lost bits keeps the 64-bit integer fma.
//  3. y below g altogether (its leading bit under E - 51) rounds to odd as the stand-in
//     sign(y) * g (from E - 51 = y's exponent on, the masks below would carry into the exponent).
//
//     x:  1xxx...xxx000                           (leading bit at E)
//     y:          1yyy...yy|yyyy                  (| at g = 2^(E - 51), 52 bits below E's next bit)
//     odd(y):     1yyy...yS                       (S = the bit at g, or any bit below it)
// Traced: p + c exactly as TwoSum's hi + lo, rounded from its binary64 round-to-odd (odd_binary64:
// guard, round, sticky and inexact are the exact sum's, not the 32-bit fraction: a stochastic sum
// that binary64 does not hold goes to the general routine); round_binary64 fills the event.
template <round_mode Mode> struct fast_fma {
  static constexpr bool traces = true;
  template <class F, class Tr>
  BF16EMU_CXHD static bool run(fp<F> a, fp<F> b, fp<F> c, const env &e, result<F> &r, Tr &tr) noexcept {
    if ((int(is_normal(a)) & int(is_normal(b)) & int(is_normal(c))) == 0) return false;
    if constexpr (Tr::enabled) {
      const sum_err x = two_sum(to_binary64(a) * to_binary64(b), to_binary64(c));
      if (reads_frac32<Mode> && x.err != 0) return false;
      return round_binary64<F, Mode>(odd_binary64(x), e, r, tr, op_kind::fma, x.sum, x.err);
    } else {
      return run_untraced(a, b, c, e, r);
    }
  }

  template <class F>
  BF16EMU_CXHD static bool run_untraced(fp<F> a, fp<F> b, fp<F> c, const env &e, result<F> &r) noexcept {
    static_assert(2 * F::precision <= 48, "the product and the bits above 2g need an exact binary64");
    constexpr std::uint64_t sign64 = std::uint64_t{1} << 63;
    const std::uint64_t pb = bit_cast<std::uint64_t>(to_binary64(a) * to_binary64(b));
    const std::uint64_t cb = bit_cast<std::uint64_t>(to_binary64(c));
    const int ep = int(pb >> 52) & 0x7FF, ec = int(cb >> 52) & 0x7FF;
    // x and y by masks (no branch: which term is larger is a coin flip on random data).
    const std::uint64_t swap = std::uint64_t{0} - std::uint64_t(ep < ec);
    const std::uint64_t xb = pb ^ ((pb ^ cb) & swap), yb = cb ^ ((pb ^ cb) & swap);
    const int d = ep < ec ? ec - ep : ep - ec; // E - y's exponent
    const int s = d < 51 ? d + 1 : 51;         // y's fraction bits below g (d + 1), at most 51
    const std::uint64_t below = (std::uint64_t{1} << s) - 1;
    const std::uint64_t lost = yb & below;
    std::uint64_t y_odd = (yb & ~below) | (std::uint64_t(lost != 0) << s);
    // y's leading bit at or below g (3.): the stand-in.
    const std::uint64_t wholly_below = std::uint64_t{0} - std::uint64_t(d >= 51);
    const std::uint64_t stand = (yb & sign64) | (std::uint64_t((xb >> 52) & 0x7FF) - 51) << 52;
    y_odd ^= (y_odd ^ stand) & wholly_below;
    if constexpr (reads_frac32<Mode>) {
      if ((lost | wholly_below) != 0) return fast_fma_int<Mode>::run(a, b, c, e, r);
    }
    return round_binary64<F, Mode>(bit_cast<double>(xb) + bit_cast<double>(y_odd), e, r);
  }
};

// Calls Op<m>::run(args...) with the run-time mode m as a template argument.
template <template <round_mode> class Op, class... A>
BF16EMU_CXHD bool fast_dispatch(round_mode m, A &&...args) noexcept {
  switch (m) {
  case round_mode::nearest_even: return Op<round_mode::nearest_even>::run(args...);
  case round_mode::nearest_away: return Op<round_mode::nearest_away>::run(args...);
  case round_mode::toward_zero: return Op<round_mode::toward_zero>::run(args...);
  case round_mode::upward: return Op<round_mode::upward>::run(args...);
  case round_mode::downward: return Op<round_mode::downward>::run(args...);
  case round_mode::to_odd: return Op<round_mode::to_odd>::run(args...);
  case round_mode::stochastic: return Op<round_mode::stochastic>::run(args...);
  case round_mode::nearest_zero: return Op<round_mode::nearest_zero>::run(args...);
  case round_mode::stochastic_equal: return Op<round_mode::stochastic_equal>::run(args...);
  case round_mode::stochastic_k: return Op<round_mode::stochastic_k>::run(args...);
  }
  return false;
}

// The fast paths apply when every format is the same; with a tracer, only those that fill
// the event themselves (Op::traces: add, sub, mul, fma).
template <class Out, class... In> inline constexpr bool same_format = (std::is_same_v<Out, In> && ...);

// Op<mode>::run(args..., r, tr) where it applies, else false (and Op is not instantiated).
template <template <round_mode> class Op, bool SameFormat, class R, class Tr, class... A>
BF16EMU_CXHD bool try_fast(round_mode m, R &r, Tr &tr, const A &...args) noexcept {
  if constexpr (SameFormat && (!Tr::enabled || Op<round_mode::nearest_even>::traces))
    return fast_dispatch<Op>(m, args..., r, tr);
  else
    return false;
}

// What the public operations call: the fast path first, the general routine for the rest.
template <class Out, class FA, class FB, class Tr>
BF16EMU_CXHD result<Out> add_impl(fp<FA> a, fp<FB> b, bool negate_b, const env &e, Tr &tr,
                                  op_kind op) noexcept {
  result<Out> r;
  if (try_fast<fast_add, same_format<Out, FA, FB>>(e.mode, r, tr, a, b, negate_b, e)) return r;
  return add_general<Out>(a, b, negate_b, e, tr, op);
}
template <class Out, class FA, class FB, class Tr>
BF16EMU_CXHD result<Out> mul_impl(fp<FA> a, fp<FB> b, const env &e, Tr &tr) noexcept {
  result<Out> r;
  if (try_fast<fast_mul, same_format<Out, FA, FB>>(e.mode, r, tr, a, b, e)) return r;
  return mul_general<Out>(a, b, e, tr);
}
template <class Out, class FA, class FB, class FC, class Tr>
BF16EMU_CXHD result<Out> fma_impl(fp<FA> a, fp<FB> b, fp<FC> c, const env &e, Tr &tr) noexcept {
  result<Out> r;
  if (try_fast<fast_fma, same_format<Out, FA, FB, FC>>(e.mode, r, tr, a, b, c, e)) return r;
  return fma_general<Out>(a, b, c, e, tr);
}
template <class Out, class FA, class FB, class Tr>
BF16EMU_CXHD result<Out> div_impl(fp<FA> a, fp<FB> b, const env &e, Tr &tr) noexcept {
  result<Out> r;
  if (try_fast<fast_div, same_format<Out, FA, FB>>(e.mode, r, tr, a, b, e)) return r;
  return div_general<Out>(a, b, e, tr);
}

// floor(sqrt(m)) and m - root^2, bit by bit: the constant-evaluation path of sqrt_root.
struct isqrt_result {
  std::uint64_t root, rem;
};
BF16EMU_CXHD isqrt_result isqrt(std::uint64_t m) noexcept {
  std::uint64_t root = 0, rem = m;
  std::uint64_t bit = std::uint64_t{1} << 62;
  while (bit > m)
    bit >>= 2;
  while (bit != 0) {
    if (rem >= root + bit) {
      rem -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  return {root, rem};
}

// Number of root bits below the 31-bit integer root of m: 57 in all, enough for exact
// discarded bits of a 24-bit result under stochastic rounding (32 bits below its last bit).
inline constexpr int sqrt_extra_bits = 26;

// Exact R = floor(sqrt(m * 2^52)) and N - R^2 (N = m * 2^52) for m in [2^60, 2^62)
// whose set bits span at most 53 bits (a significand of <= 24 bits, shifted).
//  1. r = floor(sqrt(m)), 31 bits: the binary64 root (exact input, correctly rounded, so
//     floor(d) is r or r + 1; one step down fixes it), or bit by bit in constant evaluation.
//  2. R = r * 2^26 + t with t <= t0 = floor(rem * 2^25 / r) and t0 - t < 1 + 2^-5 (the
//     dropped t^2 term); t0 from a binary64 quotient may be one more than that floor.
//     So R0 = r * 2^26 + t0 is R, R + 1 or R + 2, and N - R0^2 is exact in wrapping
//     64-bit arithmetic (|N - R0^2| <= 3 * 2^58); at most two steps down fix it.
BF16EMU_CXHD isqrt_result sqrt_root(std::uint64_t m) noexcept {
  constexpr int x = sqrt_extra_bits;
  std::uint64_t r = 0, rem = 0, t0 = 0;
  if (__builtin_is_constant_evaluated()) {
    const isqrt_result s = isqrt(m);
    r = s.root;
    rem = s.rem;
    t0 = (rem << (x - 1)) / r;
  } else {
    const unsigned status = host_fp_status();
    r = std::uint64_t(sqrt_f64(fp_fence(double(m))));
    r -= std::uint64_t(r * r > m);
    rem = m - r * r; // <= 2r < 2^32
    t0 = fp_fence(std::uint64_t(double(rem << (x - 1)) / double(r)));
    restore_host_inexact(status);
  }
  std::uint64_t root = (r << x) + t0;
  // N - root^2 = rem * 2^52 - 2^27 * r * t0 - t0^2, modulo 2^64.
  std::uint64_t res = (rem << (2 * x)) - ((r * t0) << (x + 1)) - t0 * t0;
  for (int i = 0; i < 2; ++i) { // two branch-free steps down while the residual is negative
    const std::uint64_t neg = std::uint64_t(std::int64_t(res) >> 63); // all ones when < 0
    root -= neg & 1;
    res += neg & (2 * root + 1);
  }
  return {root, res};
}

template <class Out, class FA, class Tr>
BF16EMU_GENERAL_PATH BF16EMU_CXHD result<Out> sqrt_general(fp<FA> a, const env &e, Tr &tr) noexcept {
  const unpacked ua = unpack(a, e);
  if (ua.k == kind::nan) return nan_result<Out>(e, 0, a, a);
  if (ua.k == kind::zero) return zero<Out>(ua.sign);
  if (ua.sign) return default_nan<Out>(e, flag::invalid);
  if (ua.k == kind::inf) return infinity<Out>(false, e);
  // m * 2^ex with ex even and m in [2^60, 2^62): the integer root has 31 bits,
  // extended by sqrt_extra_bits more (the radicand continuing with zeros).
  std::uint64_t m = ua.sig;
  std::int32_t ex = ua.exp;
  normalize_to(m, ex, 60);
  if (ex & 1) {
    m <<= 1;
    ex -= 1;
  }
  const isqrt_result s = sqrt_root(m);
  constexpr int extra = sqrt_extra_bits;
  unrounded u;
  u.sig = s.root;
  u.exp = ex / 2 - extra;
  u.tail_sign = s.rem != 0;
  if constexpr (Tr::enabled) {
    // sqrt(m) - root = rem / (sqrt(m) + root), approximately rem / (2 root).
    u.tail = scale(double(s.rem) / (2.0 * double(s.root)), u.exp);
    u.tail_exact = s.rem == 0;
  }
  return round_pack<Out>(u, e, tr, op_kind::sqrt);
}

template <class Out, class FA, class Tr>
BF16EMU_CXHD result<Out> sqrt_impl(fp<FA> a, const env &e, Tr &tr) noexcept {
  static_assert(arith_ok<FA>, "arithmetic supports formats of up to 24 significant bits");
  if (result<Out> r; try_fast<fast_sqrt, same_format<Out, FA>>(e.mode, r, tr, a, e)) return r;
  return sqrt_general<Out>(a, e, tr);
}

template <class Out, class In, class Tr>
BF16EMU_CXHD result<Out> convert_impl(fp<In> x, const env &e, Tr &tr) noexcept {
  const unpacked u = unpack(x, e);
  if (u.k == kind::nan) return nan_result<Out>(e, 0, x, x);
  if (u.k == kind::inf) return infinity<Out>(u.sign, e);
  if (u.k == kind::zero) return zero<Out>(u.sign);
  unrounded r;
  r.sign = u.sign;
  r.exp = u.exp;
  r.sig = u.sig;
  return round_pack<Out>(r, e, tr, op_kind::convert);
}

} // namespace detail

// ---------------------------------------------------------------------------
// Public operations. The tracer is the last argument; the default costs nothing.

template <class Out, class FA, class FB, class T = no_trace>
BF16EMU_CXHD result<Out> add_to(fp<FA> a, fp<FB> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::add_impl<Out>(a, b, false, e, tr, op_kind::add);
}
template <class Out, class FA, class FB, class T = no_trace>
BF16EMU_CXHD result<Out> sub_to(fp<FA> a, fp<FB> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::add_impl<Out>(a, b, true, e, tr, op_kind::sub);
}
template <class Out, class FA, class FB, class T = no_trace>
BF16EMU_CXHD result<Out> mul_to(fp<FA> a, fp<FB> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::mul_impl<Out>(a, b, e, tr);
}
template <class Out, class FA, class FB, class FC, class T = no_trace>
BF16EMU_CXHD result<Out> fma_to(fp<FA> a, fp<FB> b, fp<FC> c, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::fma_impl<Out>(a, b, c, e, tr);
}
template <class Out, class FA, class FB, class T = no_trace>
BF16EMU_CXHD result<Out> div_to(fp<FA> a, fp<FB> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::div_impl<Out>(a, b, e, tr);
}
template <class Out, class FA, class T = no_trace>
BF16EMU_CXHD result<Out> sqrt_to(fp<FA> a, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::sqrt_impl<Out>(a, e, tr);
}
template <class Out, class In, class T = no_trace>
BF16EMU_CXHD result<Out> convert(fp<In> x, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::convert_impl<Out>(x, e, tr);
}

template <class F, class T = no_trace>
BF16EMU_CXHD result<F> add(fp<F> a, fp<F> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::add_impl<F>(a, b, false, e, tr, op_kind::add);
}
template <class F, class T = no_trace>
BF16EMU_CXHD result<F> sub(fp<F> a, fp<F> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::add_impl<F>(a, b, true, e, tr, op_kind::sub);
}
template <class F, class T = no_trace>
BF16EMU_CXHD result<F> mul(fp<F> a, fp<F> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::mul_impl<F>(a, b, e, tr);
}
template <class F, class T = no_trace>
BF16EMU_CXHD result<F> fma(fp<F> a, fp<F> b, fp<F> c, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::fma_impl<F>(a, b, c, e, tr);
}
template <class F, class T = no_trace>
BF16EMU_CXHD result<F> div(fp<F> a, fp<F> b, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::div_impl<F>(a, b, e, tr);
}
template <class F, class T = no_trace>
BF16EMU_CXHD result<F> sqrt(fp<F> a, const env &e = {}, T &&tr = T{}) noexcept {
  return detail::sqrt_impl<F>(a, e, tr);
}

// Sign-bit operations: exact, no flags, NaNs untouched but for the sign.
template <class F> BF16EMU_CXHD fp<F> neg(fp<F> x) noexcept {
  return fp<F>::from_bits(x.bits ^ F::sign_mask);
}
template <class F> BF16EMU_CXHD fp<F> abs(fp<F> x) noexcept { return fp<F>::from_bits(x.bits & F::abs_mask); }

} // namespace bf16emu
