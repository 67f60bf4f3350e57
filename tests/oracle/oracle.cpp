// Independent exact oracle: see oracle.hpp. Everything here follows docs/semantics.md; the
// comments quote the table rows they implement.
#include "oracle.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <vector>

namespace oracle {

using boost::multiprecision::cpp_int;

std::string name(format f) {
  if (f == fp64) return "fp64";
  if (f == fp32) return "fp32";
  if (f == bf16) return "bf16";
  if (f == fp16) return "fp16";
  if (f == tf32) return "tf32";
  if (f == e4m3) return "e4m3";
  if (f == e5m2) return "e5m2";
  if (f == e2m3) return "e2m3";
  if (f == e3m2) return "e3m2";
  if (f == e2m1) return "e2m1";
  return "E" + std::to_string(f.exp_bits) + "M" + std::to_string(f.frac_bits) + (f.fn ? "fn" : "") +
         (f.fnuz ? "fnuz" : "") + (f.p3109 ? "p3109" : "") + "b" + std::to_string(f.bias());
}

// The names are spelled as docs/semantics.md spells them: the "mode" column of the Rounding
// table and the "decision" column of the Trace table (core/env.hpp's to_string has its own
// spelling; tests/core/test_names.cpp checks both against that page and against each other).
const char *name(rounding m) {
  switch (m) {
  case rounding::nearest_even: return "nearest_even";         // k+1 if f > 1/2, or f = 1/2 and k odd
  case rounding::nearest_away: return "nearest_away";         // k+1 if f >= 1/2
  case rounding::toward_zero: return "toward_zero";           // k
  case rounding::upward: return "upward";                     // k+1 if f > 0 and x > 0
  case rounding::downward: return "downward";                 // k+1 if f > 0 and x < 0
  case rounding::to_odd: return "to_odd";                     // k with its last bit set
  case rounding::stochastic: return "stochastic";             // k+1 if floor(f * 2^32) + r >= 2^32
  case rounding::nearest_zero: return "nearest_zero";         // k+1 if f > 1/2
  case rounding::stochastic_equal: return "stochastic_equal"; // k+1 if f > 0 and r >= 2^31
  case rounding::stochastic_k: return "stochastic_k";         // k+1 if floor(f * 2^K) + (r mod 2^K) >= 2^K
  }
  return "?";
}

const char *name(decision d) {
  switch (d) {
  case decision::none: return "none";                 // no finite rounding (oracle only)
  case decision::flush_zero: return "flush_zero";     // tiny, flushed by flush_outputs
  case decision::overflow_inf: return "overflow_inf"; // overflow to +-Inf
  case decision::overflow_max: return "overflow_max"; // overflow to +-max finite
  case decision::exact: return "exact";               // f = 0
  case decision::tie_down: return "tie_down";         // f = 1/2 in a nearest mode, result k
  case decision::tie_up: return "tie_up";             // f = 1/2 in a nearest mode, result k+1
  case decision::down: return "down";                 // other f > 0, result k
  case decision::up: return "up";                     // other f > 0, result k+1
  }
  return "?";
}

std::string flags_string(std::uint8_t f) {
  std::string s;
  if (f & flags::invalid) s += "V";
  if (f & flags::divbyzero) s += "Z";
  if (f & flags::overflow) s += "O";
  if (f & flags::underflow) s += "U";
  if (f & flags::inexact) s += "X";
  return s.empty() ? "-" : s;
}

namespace {

cpp_int pow2(int n) {
  assert(n >= 0);
  return cpp_int(1) << n;
}

int msb_of(const cpp_int &x) { return static_cast<int>(boost::multiprecision::msb(x)); }

// ---------------------------------------------------------------------------------------------
// Decoding.
enum class cls { zero, finite, inf, nan };

struct num {
  cls c = cls::zero;
  bool sign = false;
  cpp_int mag = 0; // finite: value = mag * 2^exp, mag > 0
  int exp = 0;
  bool snan = false;
  std::uint64_t frac = 0; // raw fraction field (NaN payload)
  format fmt{};
};

num decode(operand a, bool inputs_as_zero) {
  const format f = a.fmt;
  const std::uint64_t bits = a.bits & f.all_bits_mask();
  num n;
  n.fmt = f;
  n.sign = (bits & f.sign_mask()) != 0;
  const std::uint64_t ef = (bits >> f.frac_bits) & f.exp_field_max();
  const std::uint64_t fr = bits & f.frac_mask();
  n.frac = fr;
  if (f.fnuz || f.p3109) {
    if (bits == f.sign_mask()) { // the one NaN, unsigned (quiet)
      n.c = cls::nan;
      n.sign = false;
      return n;
    }
    if (f.p3109 && (bits & ~f.sign_mask()) == (f.all_bits_mask() & ~f.sign_mask())) {
      n.c = cls::inf;
      return n;
    }
  } else if (f.finite) {
    // finite: no special patterns; the top exponent code holds normal numbers.
  } else if (f.fn) {
    // fn: only S.1111.111 is NaN (treated as quiet); no infinities.
    if (ef == f.exp_field_max() && fr == f.frac_mask()) {
      n.c = cls::nan;
      return n;
    }
  } else if (ef == f.exp_field_max()) {
    if (fr == 0) {
      n.c = cls::inf;
    } else {
      n.c = cls::nan;
      n.snan = (fr & (std::uint64_t{1} << (f.frac_bits - 1))) == 0; // quiet bit clear
    }
    return n;
  }
  if (ef == 0) {
    if (fr == 0 || inputs_as_zero) { // subnormal read as zero of the same sign, no flag
      n.c = cls::zero;
      return n;
    }
    n.c = cls::finite;
    n.mag = fr;
    n.exp = f.emin() - f.frac_bits;
    return n;
  }
  n.c = cls::finite;
  n.mag = cpp_int(fr) + pow2(f.frac_bits);
  n.exp = static_cast<int>(ef) - f.bias() - f.frac_bits;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Special results.

std::uint64_t exp_all_ones(format out) { return out.exp_field_max() << out.frac_bits; }
std::uint64_t quiet_bit(format out) { return std::uint64_t{1} << (out.frac_bits - 1); }
std::uint64_t fn_nan(format out) { return exp_all_ones(out) | out.frac_mask(); }
std::uint64_t max_finite(format out) {
  // p3109: the all-ones magnitude is Inf, so max is the pattern below it.
  if (out.p3109) return (out.all_bits_mask() & ~out.sign_mask()) - 1;
  if (out.fnuz) return out.all_bits_mask() & ~out.sign_mask(); // every pattern but 1.000..0
  // fn: the all-ones fraction at the top exponent is the NaN, so max has fraction 1..10.
  if (out.fn) return exp_all_ones(out) | (out.frac_mask() - 1);
  if (out.finite) return exp_all_ones(out) | out.frac_mask(); // every pattern is a number
  return ((out.exp_field_max() - 1) << out.frac_bits) | out.frac_mask();
}
std::uint64_t sign_bit(format out, bool s) { return s ? out.sign_mask() : 0; }

// "invalid without NaN operand" column.
std::uint64_t default_nan(format out, nan_policy p) {
  if (out.fnuz || out.p3109) return out.sign_mask(); // the one NaN, under every policy
  if (out.finite) return max_finite(out);            // formats.md: no NaN, so +max finite (invalid raised)
  if (out.fn) return fn_nan(out); // S.1111.111 with sign 0 ("0 for default NaN", "else 0x7F")
  switch (p) {
  case nan_policy::ieee:
  case nan_policy::pytorch: return exp_all_ones(out) | quiet_bit(out);  // +qNaN
  case nan_policy::cuda: return out.all_bits_mask() & ~out.sign_mask(); // all ones
  }
  return 0;
}

// "NaN operand present" column.
std::uint64_t nan_result(const num &n, format out, nan_policy p) {
  if (p != nan_policy::ieee || out.finite || out.fnuz || out.p3109) return default_nan(out, p);
  // ieee: the first NaN operand converted: sign kept, fraction aligned at its top, quiet bit set.
  if (out.fn) return sign_bit(out, n.sign) | fn_nan(out);
  const int ms = n.fmt.frac_bits, md = out.frac_bits;
  std::uint64_t fr = md >= ms ? (n.frac << (md - ms)) : (n.frac >> (ms - md));
  fr = (fr & out.frac_mask()) | quiet_bit(out);
  return sign_bit(out, n.sign) | exp_all_ones(out) | fr;
}

result make_nan_from(const std::vector<const num *> &ops, format out, const environment &env,
                     std::uint8_t extra_flags) {
  result r;
  r.flags = extra_flags;
  const num *first = nullptr;
  for (const num *n : ops) {
    if (n->c == cls::nan) {
      if (!first) first = n;
      if (n->snan) r.flags |= flags::invalid;
    }
  }
  assert(first);
  r.bits = nan_result(*first, out, env.nan);
  if (out.finite) r.flags |= flags::invalid; // formats.md: a NaN that cannot be represented
  return r;
}

result make_invalid(format out, const environment &env) {
  result r;
  r.bits = default_nan(out, env.nan);
  r.flags = flags::invalid;
  return r;
}

// An infinite result. In fn formats: NaN of the result's sign with invalid raised, or +-max
// with no flag under saturate.
result make_inf(bool s, format out, const environment &env, std::uint8_t fl) {
  result r;
  r.flags = fl;
  if (out.p3109) {
    r.bits = sign_bit(out, s) | (out.all_bits_mask() & ~out.sign_mask());
  } else if (out.fnuz) { // no infinity: the NaN (invalid), or +-max under saturate
    if (env.saturate) {
      r.bits = sign_bit(out, s) | max_finite(out);
    } else {
      r.bits = out.sign_mask();
      r.flags |= flags::invalid;
    }
  } else if (out.finite) {
    // formats.md: no infinity, no NaN: +-max finite, flagged as an overflow.
    r.bits = sign_bit(out, s) | max_finite(out);
    r.flags |= flags::overflow | flags::inexact;
  } else if (!out.fn) {
    r.bits = sign_bit(out, s) | exp_all_ones(out);
  } else if (env.saturate) {
    r.bits = sign_bit(out, s) | max_finite(out);
  } else {
    r.bits = sign_bit(out, s) | fn_nan(out);
    r.flags |= flags::invalid;
  }
  return r;
}

result make_zero(bool s, format out) {
  result r;
  r.bits = out.has_neg_zero() ? sign_bit(out, s) : 0;
  return r;
}

// x + (-x) = +0, except downward: -0.
bool exact_zero_sign(const environment &env) { return env.mode == rounding::downward; }

// ---------------------------------------------------------------------------------------------
// The rounding routine.
//
// Exact value: (-1)^sign * (mag + t) * 2^exp with t = 0 when !tail, 0 < t < 1 when tail.
struct exact {
  bool sign = false;
  cpp_int mag = 0;
  int exp = 0;
  bool tail = false;
};

struct cut {
  cpp_int k = 0;         // |x| truncated to the quantum 2^q, in quanta
  bool guard = false;    // first discarded bit: f >= 1/2
  bool round = false;    // second discarded bit
  bool sticky = false;   // OR of all further bits
  std::uint64_t f32 = 0; // floor(f * 2^32)
  cpp_int rem = 0;       // the discarded bits of mag, as an integer
  int s = 0;             // their number: f = (rem + t) / 2^s
};

cut cut_at(const exact &x, int q) {
  cut c;
  const int s = q - x.exp; // number of discarded bits of mag
  if (s <= 0) {
    assert(!x.tail);
    c.k = x.mag << (-s);
    return c;
  }
  c.k = x.mag >> s;
  const cpp_int rem = x.mag - (c.k << s);
  c.guard = boost::multiprecision::bit_test(rem, static_cast<unsigned>(s - 1));
  c.round = s >= 2 && boost::multiprecision::bit_test(rem, static_cast<unsigned>(s - 2));
  c.sticky = x.tail || (s >= 3 && (rem & (pow2(s - 2) - 1)) != 0);
  // floor(f * 2^32) with f = (rem + t) / 2^s; t < 1 does not change the floor when s >= 32,
  // and the callers guarantee s >= 34 whenever tail is set.
  c.f32 = static_cast<std::uint64_t>((rem << 32) >> s);
  c.rem = rem;
  c.s = s;
  return c;
}

// The mode table: does the magnitude become k+1?
bool increments(rounding m, bool sign, const cut &c, std::uint32_t random, int sr_bits) {
  const bool f_pos = c.guard || c.round || c.sticky;          // f > 0
  const bool f_half = c.guard && !c.round && !c.sticky;       // f = 1/2
  const bool f_above_half = c.guard && (c.round || c.sticky); // f > 1/2
  const bool k_odd = boost::multiprecision::bit_test(c.k, 0);
  switch (m) {
  case rounding::nearest_even: return f_above_half || (f_half && k_odd);
  case rounding::nearest_away: return f_above_half || f_half;
  case rounding::toward_zero: return false;
  case rounding::upward: return f_pos && !sign;
  case rounding::downward: return f_pos && sign;
  case rounding::to_odd: return f_pos && !k_odd; // k with its last bit set
  case rounding::stochastic: return c.f32 + std::uint64_t{random} >= (std::uint64_t{1} << 32);
  case rounding::nearest_zero: return f_above_half; // a tie stays at k
  case rounding::stochastic_equal: return f_pos && random >= (std::uint32_t{1} << 31);
  case rounding::stochastic_k: {
    // floor(f * 2^k) + (random mod 2^k) >= 2^k; with no discarded bits f = 0.
    const int k = sr_bits;
    const cpp_int d = c.s > 0 ? cpp_int((c.rem << k) >> c.s) : cpp_int(0);
    const cpp_int r = cpp_int(random) % pow2(k);
    return d + r >= pow2(k);
  }
  }
  return false;
}

result round_pack(const exact &x, format out, const environment &env) {
  assert(x.mag > 0);
  const int M = out.frac_bits;
  const int emin = out.emin(), emax = out.emax();
  const int E = msb_of(x.mag) + x.exp;         // floor(log2 |x|) (a tail never reaches the next bit)
  if (x.tail) assert(msb_of(x.mag) - M >= 34); // enough exact bits for every quantity below
  int q = std::max(E, emin) - M;
  const cut c = cut_at(x, q);
  const bool up = increments(env.mode, x.sign, c, env.random, env.sr_bits);
  cpp_int m = c.k + (up ? 1 : 0);
  const bool inexact = c.guard || c.round || c.sticky;

  // Tininess.
  bool tiny;
  if (env.tiny == tininess::before_rounding) {
    tiny = E < emin; // 0 < |x| < 2^emin
  } else {
    // Round with unbounded exponent range (quantum 2^(E-M)), same mode and random.
    const int q2 = E - M;
    const cut c2 = cut_at(x, q2);
    const cpp_int m2 = c2.k + (increments(env.mode, x.sign, c2, env.random, env.sr_bits) ? 1 : 0);
    // m2 * 2^q2 < 2^emin ?
    tiny = emin - q2 >= 0 ? (m2 < pow2(emin - q2)) : false;
  }

  result r;
  r.rounded = true;
  r.sign = x.sign;
  r.exponent = std::max(E, emin);
  r.lsb_exp = q;
  r.kept = static_cast<std::uint64_t>(c.k);
  r.guard = c.guard;
  r.round = c.round;
  r.sticky = c.sticky;
  r.tiny = tiny;

  if (env.flush_outputs && tiny) {
    r.bits = out.has_neg_zero() ? sign_bit(out, x.sign) : 0;
    r.flags = flags::underflow | flags::inexact;
    r.dec = decision::flush_zero;
    return r;
  }

  if (m == pow2(M + 1)) { // carry into the next binade
    m >>= 1;
    q += 1;
  }
  // The largest significand at emax: max_finite's fraction field with the hidden bit.
  const cpp_int maxsig = pow2(M) + cpp_int(max_finite(out) & out.frac_mask());
  const bool overflow = q > emax - M || (q == emax - M && m > maxsig);
  if (overflow) {
    r.flags = flags::overflow | flags::inexact;
    bool to_inf = false;
    switch (env.mode) {
    case rounding::nearest_even:
    case rounding::nearest_away:
    case rounding::nearest_zero:
    case rounding::stochastic:
    case rounding::stochastic_equal:
    case rounding::stochastic_k: to_inf = true; break;
    case rounding::toward_zero:
    case rounding::to_odd: to_inf = false; break;
    case rounding::upward: to_inf = !x.sign; break;
    case rounding::downward: to_inf = x.sign; break;
    }
    if (env.saturate || out.finite) to_inf = false; // finite: formats.md, always max finite
    if (to_inf) {
      // In fn formats "Inf" means the NaN of the result's sign; in fnuz the one NaN.
      r.bits = out.fnuz    ? out.sign_mask()
               : out.p3109 ? sign_bit(out, x.sign) | (out.all_bits_mask() & ~out.sign_mask())
                           : sign_bit(out, x.sign) | (out.fn ? fn_nan(out) : exp_all_ones(out));
      r.dec = decision::overflow_inf;
    } else {
      r.bits = sign_bit(out, x.sign) | max_finite(out);
      r.dec = decision::overflow_max;
    }
    return r;
  }

  if (inexact) r.flags |= flags::inexact;
  if (tiny && inexact) r.flags |= flags::underflow;

  std::uint64_t mag_bits;
  if (m >= pow2(M)) {
    const int biased = q + M + out.bias();
    mag_bits = (std::uint64_t(biased) << M) | static_cast<std::uint64_t>(m - pow2(M));
  } else {
    assert(q == emin - M);
    mag_bits = static_cast<std::uint64_t>(m); // subnormal or zero
  }
  r.bits = mag_bits == 0 && !out.has_neg_zero() ? 0 : sign_bit(out, x.sign) | mag_bits;

  const bool nearest = env.mode == rounding::nearest_even || env.mode == rounding::nearest_away ||
                       env.mode == rounding::nearest_zero;
  const bool f_half = c.guard && !c.round && !c.sticky;
  if (!inexact)
    r.dec = decision::exact;
  else if (nearest && f_half)
    r.dec = up ? decision::tie_up : decision::tie_down;
  else
    r.dec = up ? decision::up : decision::down;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Exact arithmetic on finite values.

struct term {
  bool sign;
  cpp_int mag;
  int exp;
};

// Signed exact sum; returns sign and magnitude at the common (minimum) exponent.
exact sum_terms(const std::vector<term> &ts) {
  int e = 0;
  bool first = true;
  for (const term &t : ts) {
    if (first || t.exp < e) e = t.exp;
    first = false;
  }
  cpp_int s = 0;
  for (const term &t : ts) {
    cpp_int v = t.mag << (t.exp - e);
    s += t.sign ? cpp_int(-v) : v;
  }
  exact x;
  x.sign = s < 0;
  x.mag = s < 0 ? cpp_int(-s) : s;
  x.exp = e;
  return x;
}

exact product(const num &a, const num &b) {
  exact x;
  x.sign = a.sign != b.sign;
  x.mag = a.mag * b.mag;
  x.exp = a.exp + b.exp;
  return x;
}

exact quotient(const num &a, const num &b) {
  // a.mag*2^a.exp / (b.mag*2^b.exp) = (a.mag << t) / b.mag * 2^(a.exp - b.exp - t)
  const int t = std::max(0, 130 + msb_of(b.mag) - msb_of(a.mag) + 2);
  const cpp_int num_ = a.mag << t;
  exact x;
  x.sign = a.sign != b.sign;
  x.mag = num_ / b.mag;
  x.tail = (num_ % b.mag) != 0;
  x.exp = a.exp - b.exp - t;
  return x;
}

exact root(const num &a) {
  cpp_int n = a.mag;
  int e = a.exp;
  if (e % 2 != 0) { // make the exponent even
    n <<= 1;
    e -= 1;
  }
  const int t = std::max(0, (262 - msb_of(n)) / 2 + 1);
  n <<= 2 * t;
  e -= 2 * t;
  cpp_int rem;
  exact x;
  x.mag = boost::multiprecision::sqrt(n, rem);
  x.tail = rem != 0;
  x.exp = e / 2;
  x.sign = false;
  return x;
}

result finish_sum(const std::vector<term> &ts, format out, const environment &env) {
  exact x = sum_terms(ts);
  if (x.mag == 0) return make_zero(exact_zero_sign(env), out);
  return round_pack(x, out, env);
}

result add_impl(operand ao, operand bo, bool negate_b, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero), b = decode(bo, env.inputs_as_zero);
  if (a.c == cls::nan || b.c == cls::nan) return make_nan_from({&a, &b}, out, env, 0);
  const bool sb = b.sign != negate_b; // effective sign of the second addend
  if (a.c == cls::inf && b.c == cls::inf) {
    if (a.sign != sb) return make_invalid(out, env); // inf - inf
    return make_inf(a.sign, out, env, 0);
  }
  if (a.c == cls::inf) return make_inf(a.sign, out, env, 0);
  if (b.c == cls::inf) return make_inf(sb, out, env, 0);
  if (a.c == cls::zero && b.c == cls::zero)
    return make_zero(a.sign == sb ? a.sign : exact_zero_sign(env), out);
  std::vector<term> ts;
  if (a.c == cls::finite) ts.push_back({a.sign, a.mag, a.exp});
  if (b.c == cls::finite) ts.push_back({sb, b.mag, b.exp});
  return finish_sum(ts, out, env);
}

} // namespace

result add(operand a, operand b, format out, const environment &env) {
  return add_impl(a, b, false, out, env);
}
result sub(operand a, operand b, format out, const environment &env) {
  return add_impl(a, b, true, out, env);
}

result mul(operand ao, operand bo, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero), b = decode(bo, env.inputs_as_zero);
  if (a.c == cls::nan || b.c == cls::nan) return make_nan_from({&a, &b}, out, env, 0);
  const bool s = a.sign != b.sign;
  if (a.c == cls::inf || b.c == cls::inf) {
    if (a.c == cls::zero || b.c == cls::zero) return make_invalid(out, env); // 0 * inf
    return make_inf(s, out, env, 0);
  }
  if (a.c == cls::zero || b.c == cls::zero) return make_zero(s, out);
  return round_pack(product(a, b), out, env);
}

result fma(operand ao, operand bo, operand co, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero), b = decode(bo, env.inputs_as_zero),
            c = decode(co, env.inputs_as_zero);
  const bool zero_times_inf = (a.c == cls::zero && b.c == cls::inf) || (a.c == cls::inf && b.c == cls::zero);
  if (a.c == cls::nan || b.c == cls::nan || c.c == cls::nan) {
    // invalid for any sNaN, and for (0 x inf) + qNaN.
    const std::uint8_t extra = (zero_times_inf && a.c != cls::nan && b.c != cls::nan) ? flags::invalid : 0;
    return make_nan_from({&a, &b, &c}, out, env, extra);
  }
  if (zero_times_inf) return make_invalid(out, env);
  const bool ps = a.sign != b.sign;
  if (a.c == cls::inf || b.c == cls::inf) {
    if (c.c == cls::inf && c.sign != ps) return make_invalid(out, env); // inf - inf
    return make_inf(ps, out, env, 0);
  }
  if (c.c == cls::inf) return make_inf(c.sign, out, env, 0);
  const bool prod_zero = a.c == cls::zero || b.c == cls::zero;
  if (prod_zero && c.c == cls::zero) return make_zero(ps == c.sign ? ps : exact_zero_sign(env), out);
  std::vector<term> ts;
  if (!prod_zero) {
    exact p = product(a, b);
    ts.push_back({p.sign, p.mag, p.exp});
  }
  if (c.c == cls::finite) ts.push_back({c.sign, c.mag, c.exp});
  return finish_sum(ts, out, env);
}

result div(operand ao, operand bo, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero), b = decode(bo, env.inputs_as_zero);
  if (a.c == cls::nan || b.c == cls::nan) return make_nan_from({&a, &b}, out, env, 0);
  const bool s = a.sign != b.sign;
  if (a.c == cls::inf) {
    if (b.c == cls::inf) return make_invalid(out, env); // inf / inf
    return make_inf(s, out, env, 0);
  }
  if (b.c == cls::inf) return make_zero(s, out);
  if (b.c == cls::zero) {
    if (a.c == cls::zero) return make_invalid(out, env); // 0 / 0
    return make_inf(s, out, env, flags::divbyzero);      // finite nonzero / 0
  }
  if (a.c == cls::zero) return make_zero(s, out);
  return round_pack(quotient(a, b), out, env);
}

result sqrt(operand ao, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero);
  if (a.c == cls::nan) return make_nan_from({&a}, out, env, 0);
  if (a.c == cls::zero) return make_zero(a.sign, out); // sqrt(-0) = -0
  if (a.sign) return make_invalid(out, env);           // sqrt(x < 0), including -inf
  if (a.c == cls::inf) return make_inf(false, out, env, 0);
  return round_pack(root(a), out, env);
}

result convert(operand ao, format out, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero);
  if (a.c == cls::nan) return make_nan_from({&a}, out, env, 0);
  if (a.c == cls::inf) return make_inf(a.sign, out, env, 0);
  if (a.c == cls::zero) return make_zero(a.sign, out);
  exact x;
  x.sign = a.sign;
  x.mag = a.mag;
  x.exp = a.exp;
  return round_pack(x, out, env);
}

// ---------------------------------------------------------------------------------------------
// Exact values and errors.

dyadic operator-(const dyadic &a) {
  dyadic r = a;
  r.neg = !r.neg;
  return r;
}

dyadic operator+(const dyadic &a, const dyadic &b) {
  const int e = std::min(a.exp, b.exp);
  cpp_int s = (a.neg ? cpp_int(-a.mag) : a.mag) << (a.exp - e);
  s += (b.neg ? cpp_int(-b.mag) : b.mag) << (b.exp - e);
  dyadic r;
  r.neg = s < 0;
  r.mag = s < 0 ? cpp_int(-s) : s;
  r.exp = e;
  return r;
}

bool operator==(const dyadic &a, const dyadic &b) {
  const dyadic d = a + (-b);
  return d.mag == 0;
}

std::string to_string(const dyadic &d) {
  return std::string(d.neg ? "-" : "+") + d.mag.str() + "*2^" + std::to_string(d.exp);
}

dyadic dyadic_from_double(double x) {
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof x);
  std::memcpy(&bits, &x, sizeof bits);
  const num n = decode({bits, fp64}, false);
  assert(n.c == cls::zero || n.c == cls::finite);
  dyadic d;
  d.neg = n.sign;
  d.mag = n.mag;
  d.exp = n.exp;
  return d;
}

dyadic value_of(operand a) {
  const num n = decode(a, false);
  assert(n.c == cls::zero || n.c == cls::finite);
  dyadic d;
  d.neg = n.sign;
  d.mag = n.mag;
  d.exp = n.exp;
  return d;
}

std::optional<dyadic> exact_value(op o, operand ao, operand bo, operand co, const environment &env) {
  const num a = decode(ao, env.inputs_as_zero);
  const num b = (o == op::sqrt || o == op::convert) ? num{} : decode(bo, env.inputs_as_zero);
  const num c = o == op::fma ? decode(co, env.inputs_as_zero) : num{};
  for (const num *n : {&a, &b, &c})
    if (n->c == cls::nan || n->c == cls::inf) return std::nullopt;
  auto as_term = [](const num &n, bool flip) {
    return term{n.sign != flip, n.c == cls::zero ? cpp_int(0) : n.mag, n.exp};
  };
  exact x;
  switch (o) {
  case op::add: x = sum_terms({as_term(a, false), as_term(b, false)}); break;
  case op::sub: x = sum_terms({as_term(a, false), as_term(b, true)}); break;
  case op::mul:
    if (a.c == cls::zero || b.c == cls::zero)
      x = exact{};
    else
      x = product(a, b);
    break;
  case op::fma: {
    std::vector<term> ts{as_term(c, false)};
    if (a.c != cls::zero && b.c != cls::zero) {
      exact p = product(a, b);
      ts.push_back({p.sign, p.mag, p.exp});
    }
    x = sum_terms(ts);
    break;
  }
  case op::div:
    if (b.c == cls::zero) return std::nullopt;
    if (a.c == cls::zero)
      x = exact{};
    else
      x = quotient(a, b);
    if (x.tail) return std::nullopt;
    break;
  case op::sqrt:
    if (a.c == cls::zero)
      x = exact{};
    else if (a.sign)
      return std::nullopt;
    else
      x = root(a);
    if (x.tail) return std::nullopt;
    break;
  case op::convert:
    x = exact{};
    if (a.c == cls::finite) {
      x.sign = a.sign;
      x.mag = a.mag;
      x.exp = a.exp;
    }
    break;
  }
  dyadic d;
  d.neg = x.sign;
  d.mag = x.mag;
  d.exp = x.exp;
  return d;
}

std::optional<dyadic> exact_error(op o, operand a, operand b, operand c, format out,
                                  std::uint64_t result_bits, const environment &env) {
  const num r = decode({result_bits, out}, false);
  if (r.c == cls::nan || r.c == cls::inf) return std::nullopt;
  auto x = exact_value(o, a, b, c, env);
  if (!x) return std::nullopt;
  return value_of({result_bits, out}) + (-*x);
}

} // namespace oracle
