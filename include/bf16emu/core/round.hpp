// bf16emu: the one rounding routine. Every finite result of every operation is
// rounded and packed here, and only here; the tracer hooks in here.
//
// Input: an exact magnitude  |x| = sig * 2^exp + tail,  |tail| < 2^exp.
// Operations hand over a 64-bit window `sig` and summarise what fell below it
// by tail_sign (-1, 0, +1); the exact `tail` value itself is read only when tracing.
//
// Example, fp32 -> bf16 (M = 7), the paper's sum -4.703990459442139 = 0xC0968717:
//
//      sig = 1.0010110 | 1 | 0 | 000011100010111      (24 bits, exp = 2 - 23)
//            kept (8)    G   R   sticky bits -> S = 1
//
//   nearest-even: G = 1 and (R or S) -> round up in magnitude -> 1.0010111 * 2^2 = -4.71875.
#pragma once

#include <cstdint>

#include "bf16emu/core/env.hpp"
#include "bf16emu/core/exact_error.hpp"
#include "bf16emu/core/unpack.hpp"

namespace bf16emu::detail {

struct unrounded {
  bool sign = false;
  std::int32_t exp = 0;
  std::uint64_t sig = 0;
  std::int8_t tail_sign = 0; // sign of the part below the window
  double tail = 0;           // its exact value (trace only), same sign convention
  bool tail_exact = true;    // false when tail is only an approximation (div, sqrt)
};

// Step 1: split the significand at the quantum 2^(exp + sh).
template <class U> struct cut_bits {
  U kept;
  std::uint8_t guard, round, sticky; // 0/1; not bool: GCC 12 will not vectorise loops over bool members
  std::uint32_t frac32;              // floor(discarded fraction * 2^32), for stochastic rounding
};

template <class U> BF16EMU_CXHD cut_bits<U> cut(U sig, int sh, bool sticky_in) noexcept {
  constexpr int W = int(sizeof(U) * 8);
  // Scalars and one aggregate return: GCC then keeps it all in registers and
  // vectorises the bulk loops that call this.
  U kept = 0;
  bool guard = false, round = false, sticky = sticky_in;
  std::uint32_t frac32 = 0;
  if (sh <= 0) {
    kept = U(sig << -sh);
  } else if (sh < W) {
    // Bitwise, not short-circuit: G, R and S of random data are coin flips for a branch.
    const U rem = sig & U((U{1} << sh) - 1);
    const U half = U(U{1} << (sh - 1));
    const U below_round = sh >= 2 ? U((half >> 1) - 1) : U{0};
    kept = U(sig >> sh);
    guard = (rem & half) != 0;
    round = (rem & U(half >> 1)) != 0;
    sticky = sticky_in | ((rem & below_round) != 0);
    // rem < 2^sh, so for sh < 32 the left shift stays within 32 bits.
    frac32 = sh >= 32 ? std::uint32_t(rem >> (sh >= 32 ? sh - 32 : 0)) : std::uint32_t(rem << (32 - sh));
  } else { // everything is below the last kept bit
    const U below_round = sh == W       ? U(sig & ((U{1} << (W - 2)) - 1))
                          : sh == W + 1 ? U(sig & ((U{1} << (W - 1)) - 1))
                                        : sig;
    guard = sh == W && (sig >> (W - 1));
    round = (sh == W && ((sig >> (W - 2)) & 1)) || (sh == W + 1 && (sig >> (W - 1)));
    sticky = sticky_in || below_round != 0;
    frac32 = (sh - 32) < W ? std::uint32_t(std::uint64_t(sig) >> (sh - 32)) : 0u;
  }
  return cut_bits<U>{kept, std::uint8_t(guard), std::uint8_t(round), std::uint8_t(sticky), frac32};
}

// Step 2: the rounding decision. One rule per mode, in sign-magnitude: does the
// magnitude go up by one ulp? Only asked when something was discarded.
// Both answers are 0/1 integers built from integer operations only (no `x != 0` on a
// value already known to be 0 or 1): GCC 12 folds that into a conversion to bool,
// which it cannot vectorise, and the bulk loops (core/bulk.hpp) call these per lane.
template <class U> BF16EMU_CXHD unsigned inexact_bit(const cut_bits<U> &c) noexcept {
  return unsigned(c.guard | c.round | c.sticky);
}

// k of stochastic_k, clamped to 1..32 (env::sr_bits).
BF16EMU_CXHD unsigned sr_bits_of(unsigned k) noexcept { return k < 1 ? 1u : k > 32 ? 32u : k; }

template <round_mode Mode, class U>
BF16EMU_CXHD unsigned rounds_up(const cut_bits<U> &c, bool sign, std::uint32_t random,
                                unsigned sr_bits = 32) noexcept {
  const unsigned lsb = unsigned(c.kept & 1u);
  if constexpr (Mode == round_mode::nearest_even)
    return unsigned(c.guard) & (unsigned(c.round | c.sticky) | lsb);
  else if constexpr (Mode == round_mode::nearest_away)
    return unsigned(c.guard);
  else if constexpr (Mode == round_mode::nearest_zero)
    return unsigned(c.guard) & unsigned(c.round | c.sticky);
  else if constexpr (Mode == round_mode::toward_zero)
    return 0u;
  else if constexpr (Mode == round_mode::upward)
    return unsigned(!sign);
  else if constexpr (Mode == round_mode::downward)
    return unsigned(sign);
  else if constexpr (Mode == round_mode::to_odd)
    return lsb ^ 1u; // setting the last bit of an even k
  else if constexpr (Mode == round_mode::stochastic_equal)
    return unsigned(random >> 31);
  else if constexpr (Mode == round_mode::stochastic_k) {
    // D = the top k discarded bits, R = the low k bits of random; up on the carry out of D + R.
    const unsigned k = sr_bits_of(sr_bits);
    const std::uint64_t d = std::uint64_t(c.frac32) >> (32 - k);
    const std::uint64_t r = std::uint64_t(random) & ((std::uint64_t{1} << k) - 1);
    return unsigned((d + r) >> k);
  } else
    return unsigned(c.frac32 > ~random); // stochastic: frac32 + random carries out of 32 bits
}

// The modes that read cut_bits::frac32 (the 32 discarded bits), not only guard, round, sticky.
template <round_mode Mode>
inline constexpr bool reads_frac32 = Mode == round_mode::stochastic || Mode == round_mode::stochastic_k;

// The decision recorded in the trace, from the cut and the two answers above (up already
// masked by inexact).
template <class U>
BF16EMU_CXHD decision decision_of(const cut_bits<U> &c, bool inexact, bool up, round_mode mode) noexcept {
  const bool tie = c.guard && !c.round && !c.sticky;
  const bool nearest = mode == round_mode::nearest_even || mode == round_mode::nearest_away ||
                       mode == round_mode::nearest_zero;
  return !inexact           ? decision::exact
         : (tie && nearest) ? (up ? decision::tie_up : decision::tie_down)
                            : (up ? decision::up : decision::down);
}

struct decided {
  std::uint64_t kept; // rounded significand (may equal 2^precision after a carry)
  decision dec;
};

BF16EMU_CXHD decided decide(const cut_bits<std::uint64_t> &c, bool sign, const env &e) noexcept {
  const bool inexact = inexact_bit(c) != 0;
  bool up = false;
  switch (e.mode) {
  case round_mode::nearest_even:
    up = rounds_up<round_mode::nearest_even>(c, sign, e.random, e.sr_bits);
    break;
  case round_mode::nearest_away:
    up = rounds_up<round_mode::nearest_away>(c, sign, e.random, e.sr_bits);
    break;
  case round_mode::toward_zero: up = rounds_up<round_mode::toward_zero>(c, sign, e.random, e.sr_bits); break;
  case round_mode::upward: up = rounds_up<round_mode::upward>(c, sign, e.random, e.sr_bits); break;
  case round_mode::downward: up = rounds_up<round_mode::downward>(c, sign, e.random, e.sr_bits); break;
  case round_mode::to_odd: up = rounds_up<round_mode::to_odd>(c, sign, e.random, e.sr_bits); break;
  case round_mode::stochastic: up = rounds_up<round_mode::stochastic>(c, sign, e.random, e.sr_bits); break;
  case round_mode::nearest_zero:
    up = rounds_up<round_mode::nearest_zero>(c, sign, e.random, e.sr_bits);
    break;
  case round_mode::stochastic_equal:
    up = rounds_up<round_mode::stochastic_equal>(c, sign, e.random, e.sr_bits);
    break;
  case round_mode::stochastic_k:
    up = rounds_up<round_mode::stochastic_k>(c, sign, e.random, e.sr_bits);
    break;
  }
  up &= inexact;
  return {c.kept + (up ? 1u : 0u), decision_of(c, inexact, up, e.mode)};
}

// Result of an overflow: Inf (NaN in fn formats) or the largest finite value (always in
// finite formats: round_pack asks only formats with a NaN).
BF16EMU_CXHD bool overflow_to_inf(bool sign, const env &e) noexcept {
  if (e.saturate) return false;
  switch (e.mode) {
  case round_mode::toward_zero:
  case round_mode::to_odd: return false;
  case round_mode::upward: return !sign;
  case round_mode::downward: return sign;
  default: return true;
  }
}

// The magnitude of an overflowed result of F and whether it is Inf (NaN in fn formats).
// F is a trait or a run-time format_spec (its fields read through the object: constants for a
// trait, data for a spec); a saturating format (finite, or a spec with saturates) never gives Inf.
template <class F> BF16EMU_CXHD bool overflows_to_inf(const F &f, bool sign, const env &e) noexcept {
  return f.has_nan && !f.saturates && overflow_to_inf(sign, e);
}
template <class F> BF16EMU_CXHD bool overflows_to_inf(bool sign, const env &e) noexcept {
  return overflows_to_inf(F{}, sign, e);
}
template <class F> BF16EMU_CXHD std::uint64_t overflow_magnitude(const F &f, bool to_inf) noexcept {
  return to_inf ? f.inf_bits : f.max_finite_bits;
}
template <class F> BF16EMU_CXHD std::uint64_t overflow_magnitude(bool to_inf) noexcept {
  return overflow_magnitude(F{}, to_inf);
}

BF16EMU_CXHD bool flushes_outputs(const env &e) noexcept {
  return (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::flush_outputs)) != 0;
}

// The event's fields but the error, as round_pack and the traced fast path fill them.
template <class F>
BF16EMU_CXHD rounding_event make_event(const F &f, op_kind op, round_mode mode, bool sign, int exponent,
                                       int lsb_exp, const cut_bits<std::uint64_t> &c, bool tiny, decision dec,
                                       std::uint64_t result_bits, std::uint8_t flags) noexcept {
  rounding_event ev;
  ev.op = op;
  ev.mode = mode;
  ev.dst_exp_bits = std::uint8_t(f.exp_bits);
  ev.dst_frac_bits = std::uint8_t(f.frac_bits);
  ev.sign = sign;
  ev.exponent = exponent;
  ev.lsb_exp = lsb_exp;
  ev.kept = c.kept;
  ev.guard = c.guard;
  ev.round = c.round;
  ev.sticky = c.sticky;
  ev.tiny = tiny;
  ev.dec = dec;
  ev.result_bits = result_bits;
  ev.flags = flags;
  return ev;
}
template <class F>
BF16EMU_CXHD rounding_event make_event(op_kind op, round_mode mode, bool sign, int exponent, int lsb_exp,
                                       const cut_bits<std::uint64_t> &c, bool tiny, decision dec,
                                       std::uint64_t result_bits, std::uint8_t flags) noexcept {
  return make_event(F{}, op, mode, sign, exponent, lsb_exp, c, tiny, dec, result_bits, flags);
}

// A result's bit pattern and flags, for a format given by a description (trait or format_spec).
struct packed {
  std::uint64_t bits = 0;
  std::uint8_t flags = 0;
};

// Step 3: the round-and-pack routine, for a format F given as a description: a trait (its fields
// are constants: this compiles to what a routine written for that format would be) or a run-time
// format_spec. round_pack<F> below is this routine for a trait.
//
// The encodings beyond ieee/fn/finite (format.hpp): a zero result has no sign where the format has
// no negative zero (fnuz, p3109: 1.0000.000 is the NaN), an overflow to "Inf" gives the NaN in fnuz
// and e8m0 (no Inf), and a format without subnormals (format_spec::has_subnormals false) flushes a
// tiny result to zero as env's flush_outputs does. e8m0 (no zero) gives 2^emin for a result that
// rounds to zero, with underflow and inexact (as core/scale.hpp's to_ue8m0).
template <class F, class Tr>
BF16EMU_CXHD packed round_pack_spec(const F &f, const unrounded &x, const env &e, Tr &tr,
                                    op_kind op) noexcept {
  const int M = f.frac_bits;
  const int P = f.precision;
  const int emin = f.emin;
  const std::uint64_t sign_bit = x.sign ? f.sign_mask : 0;

  // The window minus one unit when the tail is negative: the exact value then lies
  // strictly between (sig - 1) and sig, so sig - 1 plus a sticky bit is exact enough.
  std::uint64_t sig = x.sig;
  if (x.tail_sign < 0) --sig;
  const bool sticky_in = x.tail_sign != 0;

  packed r;
  if (sig == 0 && !sticky_in) { // exact zero: the caller chose the sign
    r.bits = f.has_neg_zero ? sign_bit : 0;
    return r;
  }
  if (f.encoding == special_encoding::e8m0 && x.sign) { // no sign bit: a negative number is NaN
    r.bits = f.nan_bits;
    r.flags = flag::invalid;
    return r;
  }

  const int lead = x.exp + msb(sig);             // floor(log2 |x|)
  const int q = (lead < emin ? emin : lead) - M; // exponent of the last kept bit
  const cut_bits<std::uint64_t> c = cut(sig, q - x.exp, sticky_in);
  const decided d = decide(c, x.sign, e);
  const bool inexact = d.dec != decision::exact;

  bool tiny = lead < emin;
  if (tiny && e.tiny == tininess::after_rounding && lead == emin - 1) {
    // Round at full precision with unbounded exponent: tiny unless it carries to 2^emin.
    const decided wide = decide(cut(sig, lead - M - x.exp, sticky_in), x.sign, e);
    tiny = wide.kept < (std::uint64_t{1} << P);
  }

  // Pack: the hidden bit carries into the exponent field (subnormal -> normal, binade carry).
  // e8m0 has no zero: a result rounded to zero (kept 0, below 2^emin) is 2^emin, the code 0.
  const bool no_zero = f.encoding == special_encoding::e8m0 && d.kept == 0;
  std::uint64_t mag = no_zero ? 0 : (std::uint64_t(q + M + f.bias - 1) << M) + d.kept;
  decision dec = d.dec;
  std::uint8_t flags = inexact ? flag::inexact : 0;
  if (no_zero) {
    flags = flag::underflow | flag::inexact;
  } else if (mag > f.max_finite_bits) {
    const bool to_inf = overflows_to_inf(f, x.sign, e);
    mag = overflow_magnitude(f, to_inf);
    dec = to_inf ? decision::overflow_inf : decision::overflow_max;
    flags = flag::overflow | flag::inexact;
  } else if (tiny && (flushes_outputs(e) || !f.has_subnormals)) {
    mag = 0;
    dec = decision::flush_zero;
    flags = flag::underflow | flag::inexact;
  } else if (tiny && inexact) {
    flags |= flag::underflow;
  }
  // No sign on a zero where the format has no negative zero, nor on fnuz's NaN (its "Inf").
  r.bits = (mag == 0 && !f.has_neg_zero) || (dec == decision::overflow_inf && f.inf_bits == f.sign_mask)
               ? mag
               : sign_bit | mag;
  r.flags = flags;

  if constexpr (Tr::enabled) {
    rounding_event ev =
        make_event(f, op, e.mode, x.sign, lead < emin ? emin : lead, q, c,
                   lead < emin && (e.tiny == tininess::before_rounding || tiny), dec, r.bits, flags);
    // error = result - exact, in magnitude first: R - sig*2^exp - tail.
    expansion err;
    bool exact = x.tail_exact;
    if (dec == decision::overflow_inf) {
      err.grow(pow2(2000)); // +Inf: the error is unbounded
      exact = false;
    } else {
      std::uint64_t rounded_kept = dec == decision::flush_zero ? 0 : d.kept;
      int rounded_q = q;
      if (dec == decision::overflow_max) { // R = max finite
        rounded_kept = (f.max_finite_bits & f.frac_mask) | (std::uint64_t{1} << M);
        rounded_q = f.emax - M;
      } else if (no_zero) { // R = 2^emin
        rounded_kept = 1;
      }
      const two_terms rt = split_u64(rounded_kept, rounded_q);
      const two_terms st = split_u64(x.sig, x.exp);
      err.grow(rt.hi);
      err.grow(rt.lo);
      err.grow(-st.hi);
      err.grow(-st.lo);
      err.grow(-x.tail);
    }
    err.to_pair(ev.err_hi, ev.err_lo, ev.err_exact);
    ev.err_exact = ev.err_exact && exact;
    if (x.sign) {
      ev.err_hi = -ev.err_hi;
      ev.err_lo = -ev.err_lo;
    }
    tr(ev);
  }
  return r;
}

// Step 3 for a trait F: the routine above with F's constants.
template <class F, class Tr>
BF16EMU_CXHD result<F> round_pack(const unrounded &x, const env &e, Tr &tr, op_kind op) noexcept {
  const packed p = round_pack_spec(F{}, x, e, tr, op);
  result<F> r;
  r.value.bits = typename F::storage(p.bits);
  r.flags = p.flags;
  return r;
}

// Step 3, the fast variant (issue 14): the rounding of a result that is not tiny, the mode
// known at compile time, no tracer. The same rule as round_pack (cut at the last kept bit,
// inexact_bit, rounds_up<Mode>, and on overflow overflows_to_inf / overflow_magnitude), without
// its run-time mode switch and without tininess and flushing: a result that is tiny before
// rounding returns false with r untouched, and the caller then hands the operation to the
// general routine.
//
// Input: |x| = (sig + f) * 2^(lead - 63), 0 <= f < 1 with f != 0 exactly when sticky, the
// leading bit of sig at bit 63 (so the cut is at a fixed position: 63 - M bits below it,
// all exact, at least 32 of them for a format of up to 24 significant bits).
//
// Traced (Tr::enabled, issue 14): the exact magnitude is also given as two binary64 terms,
// |x| = exact_hi + exact_lo (round_binary64). A result that overflows also returns false with r
// untouched (its error is not two binary64 numbers: the general routine), and the event is filled
// here: every field as round_pack fills it (make_event, decision_of), the error as below.
template <class F, round_mode Mode, class Tr>
BF16EMU_CXHD bool round_normalized(bool sign, int lead, std::uint64_t sig, bool sticky, const env &e,
                                   result<F> &r, Tr &tr, op_kind op, double exact_hi,
                                   double exact_lo) noexcept {
  constexpr int M = F::frac_bits;
  static_assert(63 - M >= 33, "the fast rounding needs 32 exact bits below the last kept bit");
  if (lead < F::emin) return false; // tiny: the general routine decides tininess and flushing
  const cut_bits<std::uint64_t> c = cut(sig, 63 - M, sticky);
  const unsigned inexact = inexact_bit(c);
  const unsigned up = rounds_up<Mode>(c, sign, e.random, e.sr_bits) & inexact;
  // Pack: the hidden bit carries into the exponent field (binade carry).
  std::uint64_t mag = (std::uint64_t(lead + F::bias - 1) << M) + c.kept + up;
  std::uint8_t flags = std::uint8_t(inexact * flag::inexact);
  if (mag > F::max_finite_bits) {
    if constexpr (Tr::enabled) return false;
    mag = overflow_magnitude<F>(overflows_to_inf<F>(sign, e));
    flags = flag::overflow | flag::inexact;
  }
  r.value.bits = typename F::storage((sign ? F::sign_mask : 0) | mag);
  r.flags = flags;
  if constexpr (Tr::enabled) {
    rounding_event ev = make_event<F>(op, Mode, sign, lead, lead - M, c, false,
                                      decision_of(c, inexact != 0, up != 0, Mode), r.value.bits, flags);
    // The error R - exact_hi - exact_lo, R = (kept + up) * 2^(lead - M) (at most P <= 24 bits).
    // R - exact_hi is exact in binary64 (Sterbenz): R lies in [2^lead, 2^(lead + 1)] (normal,
    // not tiny; at most a carry into the next binade) and so does exact_hi = fl(exact)
    // (its callers: TwoSum, or the exact product), so exact_hi / 2 <= R <= 2 exact_hi: no rounding, no host
    // flag. TwoSum then gives the error as fl(error) + rest, exactly: that is the pair that
    // round_pack's compressed expansion reports (FastPath.* compare every field, bit for bit);
    // err_lo is a zero of the result's sign when the rest is zero, and both are negated for a
    // negative result, as there.
    const double rounded = double(c.kept + up) * pow2(lead - M);
    const sum_err err = inexact ? two_sum(rounded - exact_hi, -exact_lo) : sum_err{0.0, 0.0};
    const double lo = err.err == 0 ? 0.0 : err.err;
    ev.err_hi = sign ? -err.sum : err.sum;
    ev.err_lo = sign ? -lo : lo;
    ev.err_exact = true;
    tr(ev);
  }
  return true;
}
template <class F, round_mode Mode>
BF16EMU_CXHD bool round_normalized(bool sign, int lead, std::uint64_t sig, bool sticky, const env &e,
                                   result<F> &r) noexcept {
  no_trace off;
  return round_normalized<F, Mode>(sign, lead, sig, sticky, e, r, off, op_kind::add, 0.0, 0.0);
}

// The same from round_pack's input (a nonzero window sig, exponent exp, tail sign).
template <class F, round_mode Mode>
BF16EMU_CXHD bool round_pack_normal(const unrounded &x, const env &e, result<F> &r) noexcept {
  const std::uint64_t sig = x.sig - std::uint64_t(x.tail_sign < 0); // as in round_pack
  const int n = clz64(sig);
  return round_normalized<F, Mode>(x.sign, x.exp + 63 - n, sig << n, x.tail_sign != 0, e, r);
}

// The same from a binary64 value v (issue 14's binary64 engine): its significand, normalised
// to bit 63, is the window, and nothing lies below it. v must be the exact result, or one
// that lies on the same side of every number with P + 1 significant bits as the exact result
// and equals none of them unless the exact result does (then guard, round, sticky and the
// inexact bit are the exact result's, but not the 32-bit fraction: not for stochastic
// rounding). A zero or subnormal v returns false (tiny).
// Traced: the exact result is exact_hi + exact_lo (signed, exact_hi = fl(exact result): v itself
// unless v is a sum with a stand-in); the event goes to tr (see round_normalized).
template <class F, round_mode Mode, class Tr>
BF16EMU_CXHD bool round_binary64(double v, const env &e, result<F> &r, Tr &tr, op_kind op, double exact_hi,
                                 double exact_lo) noexcept {
  const std::uint64_t b = bit_cast<std::uint64_t>(v);
  const double to_magnitude = (b >> 63) != 0 ? -1.0 : 1.0; // exact
  return round_normalized<F, Mode>((b >> 63) != 0, int((b >> 52) & 0x7FF) - 1023,
                                   (b << 11) | (std::uint64_t{1} << 63), false, e, r, tr, op,
                                   exact_hi * to_magnitude, exact_lo * to_magnitude);
}
template <class F, round_mode Mode>
BF16EMU_CXHD bool round_binary64(double v, const env &e, result<F> &r) noexcept {
  no_trace off;
  return round_binary64<F, Mode>(v, e, r, off, op_kind::add, v, 0.0);
}

} // namespace bf16emu::detail
