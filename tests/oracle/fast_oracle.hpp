// A small, fast, independent oracle for the exhaustive tiers. No bf16emu header, no cpp_int.
//
//   * bf16 add/sub: s = a + b in binary64 and e = TwoSum error (exact: s + e = a + b). The pair is
//     collapsed to "a + b rounded to odd at 53 bits" (s if e == 0 or s is odd, else the binary64
//     neighbour of s on e's side, which is odd). Rounding to odd at 53 bits keeps the binade, the
//     kept bits, guard, round, sticky and floor(f * 2^32) of any target with at most 19 fraction
//     bits, so rounding that double once more gives the correctly rounded result in every mode.
//   * bf16 mul: the 8x8-bit product is exact in binary64.
//   * fp32 -> bf16 / fp16: integer decode of the fp32 pattern, then the same integer rounder.
//
// Environment covered: every rounding mode, both tininess settings, IEEE NaN policy, IEEE
// subnormals, no saturation (what the exhaustive tiers run).
#pragma once

#include <cstdint>
#include <cstring>

namespace fast_oracle {

enum mode : int {
  nearest_even,
  nearest_away,
  toward_zero,
  upward,
  downward,
  to_odd,
  stochastic,
  nearest_zero,
  stochastic_equal,
  stochastic_k // with 32 random bits here (the default of env::sr_bits): stochastic's rule
};

inline constexpr std::uint8_t F_INVALID = 1, F_DIVBYZERO = 2, F_OVERFLOW = 4, F_UNDERFLOW = 8, F_INEXACT = 16;

struct out_fmt {
  int ebits, mbits; // IEEE-style (has Inf), mbits <= 19
};
inline constexpr out_fmt BF16{8, 7}, FP16{5, 10};

struct res {
  std::uint32_t bits;
  std::uint8_t flags;
};

inline std::uint64_t dbits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}
inline double from_dbits(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, 8);
  return x;
}

// Round (-1)^sign * sig * 2^(E - p) to the target, where sig has its leading one at bit p
// (so E = floor(log2 |x|)), p <= 60. sig's bit 0 may be a rounded-to-odd sticky bit as long as
// the target keeps at most p - 34 significant bits.
inline res round_sig(bool sign, std::uint64_t sig, int p, int E, out_fmt o, int m, bool tiny_before,
                     std::uint32_t random) {
  const int M = o.mbits;
  const int bias = (1 << (o.ebits - 1)) - 1;
  const int emin = 1 - bias;
  const int emax = (1 << o.ebits) - 2 - bias;
  const std::uint64_t sbit = std::uint64_t(sign) << (o.ebits + M);

  // Round sig at a shift of sh bits (sh >= 1): returns the new magnitude in quanta and whether
  // anything was discarded.
  auto rnd = [&](int sh, bool &inexact) -> std::uint64_t {
    auto bit = [&](int i) -> bool { return i >= 0 && i < 64 && ((sig >> i) & 1); };
    const std::uint64_t k = sh >= 64 ? 0 : (sig >> sh);
    const std::uint64_t rem = sh >= 64 ? sig : (sig & ((std::uint64_t{1} << sh) - 1));
    const bool g = bit(sh - 1);
    const bool r = bit(sh - 2);
    const bool st =
        sh - 2 > 0 && (sh - 2 >= 64 ? sig != 0 : (sig & ((std::uint64_t{1} << (sh - 2)) - 1)) != 0);
    inexact = rem != 0;
    bool up = false;
    switch (m) {
    case nearest_even: up = g && (r || st || (k & 1)); break;
    case nearest_away: up = g; break;
    case toward_zero: up = false; break;
    case upward: up = inexact && !sign; break;
    case downward: up = inexact && sign; break;
    case to_odd: up = inexact && !(k & 1); break;
    case stochastic: {
      std::uint64_t f32; // floor(rem * 2^32 / 2^sh)
      if (sh <= 32)
        f32 = rem << (32 - sh);
      else if (sh - 32 < 64)
        f32 = rem >> (sh - 32);
      else
        f32 = 0;
      up = f32 + random >= (std::uint64_t{1} << 32);
      break;
    }
    case nearest_zero: up = g && (r || st); break;
    case stochastic_equal: up = inexact && (random >> 31) != 0; break;
    case stochastic_k: { // K = 32: floor(f * 2^32) + random >= 2^32
      const std::uint64_t f32 = sh <= 32 ? rem << (32 - sh) : sh - 32 < 64 ? rem >> (sh - 32) : 0;
      up = f32 + random >= (std::uint64_t{1} << 32);
      break;
    }
    }
    return k + (up ? 1 : 0);
  };

  int q = (E > emin ? E : emin) - M; // exponent of the quantum
  const int sh = q - (E - p);
  bool inexact;
  std::uint64_t mq = rnd(sh, inexact);

  bool tiny;
  if (tiny_before) {
    tiny = E < emin;
  } else {
    bool dummy;
    const std::uint64_t m2 = rnd(p - M, dummy); // quantum 2^(E - M)
    tiny = E < emin && !(E == emin - 1 && m2 == (std::uint64_t{1} << (M + 1)));
  }

  if (mq == (std::uint64_t{1} << (M + 1))) {
    mq >>= 1;
    ++q;
  }
  const std::uint64_t maxsig = (std::uint64_t{1} << (M + 1)) - 1;
  if (q > emax - M || (q == emax - M && mq > maxsig)) {
    bool inf;
    switch (m) {
    case toward_zero:
    case to_odd: inf = false; break;
    case upward: inf = !sign; break;
    case downward: inf = sign; break;
    default: inf = true; break; // the nearest and the stochastic modes
    }
    const std::uint64_t infb = std::uint64_t((1 << o.ebits) - 1) << M;
    return {std::uint32_t(sbit | (inf ? infb : infb - 1)), std::uint8_t(F_OVERFLOW | F_INEXACT)};
  }
  std::uint8_t fl = 0;
  if (inexact) fl |= F_INEXACT;
  if (inexact && tiny) fl |= F_UNDERFLOW;
  std::uint64_t mag;
  if (mq >> M)
    mag = (std::uint64_t(q + M + bias) << M) | (mq & ((std::uint64_t{1} << M) - 1));
  else
    mag = mq; // subnormal / zero: q == emin - M
  return {std::uint32_t(sbit | mag), fl};
}

// Round a finite nonzero double (exact value or already rounded to odd) to the target.
inline res round_double(double x, out_fmt o, int m, bool tiny_before, std::uint32_t random) {
  const std::uint64_t b = dbits(x);
  const bool sign = b >> 63;
  const int be = int((b >> 52) & 0x7FF);
  // Every value reaching here is a normal double (bf16 sums/products are >= 2^-266).
  const std::uint64_t sig = (b & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
  return round_sig(sign, sig, 52, be - 1023, o, m, tiny_before, random);
}

// ---- bf16 -----------------------------------------------------------------------------------
inline bool bf16_is_nan(std::uint32_t a) { return (a & 0x7F80) == 0x7F80 && (a & 0x7F); }
inline bool bf16_is_inf(std::uint32_t a) { return (a & 0x7FFF) == 0x7F80; }
inline bool bf16_is_snan(std::uint32_t a) { return bf16_is_nan(a) && !(a & 0x40); }
inline double bf16_to_double(std::uint32_t a) { // exact
  const std::uint32_t f = a << 16;
  float x;
  std::memcpy(&x, &f, 4);
  return double(x);
}

inline res bf16_nan(std::uint32_t a, std::uint32_t b) { // ieee policy: first NaN, quieted
  const std::uint8_t fl = (bf16_is_snan(a) || bf16_is_snan(b)) ? F_INVALID : 0;
  const std::uint32_t n = bf16_is_nan(a) ? a : b;
  return {std::uint32_t(n | 0x40), fl};
}

// The mode-independent part of an operation: either a fixed result (NaN, Inf, invalid, a zero with
// a known sign), an exact zero from opposite signs (+0, or -0 when downward), or a finite nonzero
// double (exact, or rounded to odd at 53 bits) still to be rounded.
struct prepared {
  enum kind_t { fixed, opposite_zero, round } kind;
  res fixed_res;
  double x;
};

inline res finish(const prepared &p, out_fmt o, int m, bool tiny_before, std::uint32_t random) {
  switch (p.kind) {
  case prepared::fixed: return p.fixed_res;
  case prepared::opposite_zero: return {m == downward ? 0x8000u : 0u, 0};
  default: return round_double(p.x, o, m, tiny_before, random);
  }
}

// a + (b with sign flipped when negate_b) in bfloat16.
inline prepared bf16_addsub_prepare(std::uint32_t a, std::uint32_t b, bool negate_b) {
  if (bf16_is_nan(a) || bf16_is_nan(b)) return {prepared::fixed, bf16_nan(a, b), 0};
  const std::uint32_t be = b ^ (negate_b ? 0x8000u : 0u);
  if (bf16_is_inf(a) && bf16_is_inf(be)) {
    if ((a ^ be) & 0x8000) return {prepared::fixed, {0x7FC0, F_INVALID}, 0};
    return {prepared::fixed, {a, 0}, 0};
  }
  if (bf16_is_inf(a)) return {prepared::fixed, {a, 0}, 0};
  if (bf16_is_inf(be)) return {prepared::fixed, {be, 0}, 0};
  const double x = bf16_to_double(a), y = bf16_to_double(be);
  const double s = x + y;
  // TwoSum (Knuth): s + e == x + y exactly.
  const double bb = s - x;
  const double e = (x - (s - bb)) + (y - bb);
  if (s == 0) {
    // Exact zero: same-signed zeros keep their sign; otherwise +0 (-0 when downward).
    if (x == 0 && y == 0 && ((a ^ be) & 0x8000) == 0) return {prepared::fixed, {a & 0x8000, 0}, 0};
    return {prepared::opposite_zero, {0, 0}, 0};
  }
  double ro = s;
  if (e != 0 && (dbits(s) & 1) == 0) {
    const bool same = (s > 0) == (e > 0);
    ro = from_dbits(same ? dbits(s) + 1 : dbits(s) - 1); // magnitude step towards s + e
  }
  return {prepared::round, {0, 0}, ro};
}

inline prepared bf16_mul_prepare(std::uint32_t a, std::uint32_t b) {
  if (bf16_is_nan(a) || bf16_is_nan(b)) return {prepared::fixed, bf16_nan(a, b), 0};
  const std::uint32_t s = (a ^ b) & 0x8000;
  const bool az = (a & 0x7FFF) == 0, bz = (b & 0x7FFF) == 0;
  if (bf16_is_inf(a) || bf16_is_inf(b)) {
    if (az || bz) return {prepared::fixed, {0x7FC0, F_INVALID}, 0};
    return {prepared::fixed, {s | 0x7F80, 0}, 0};
  }
  if (az || bz) return {prepared::fixed, {s, 0}, 0};
  return {prepared::round, {0, 0}, bf16_to_double(a) * bf16_to_double(b)}; // 16-bit product: exact
}

inline res bf16_addsub(std::uint32_t a, std::uint32_t b, bool negate_b, int m, bool tiny_before,
                       std::uint32_t random) {
  return finish(bf16_addsub_prepare(a, b, negate_b), BF16, m, tiny_before, random);
}

inline res bf16_mul(std::uint32_t a, std::uint32_t b, int m, bool tiny_before, std::uint32_t random) {
  return finish(bf16_mul_prepare(a, b), BF16, m, tiny_before, random);
}

// ---- fp32 -> bf16 / fp16 ----------------------------------------------------------------------
inline res f32_convert(std::uint32_t a, out_fmt o, int m, bool tiny_before, std::uint32_t random) {
  const bool sign = a >> 31;
  const int ef = int((a >> 23) & 0xFF);
  std::uint32_t fr = a & 0x7FFFFF;
  const int M = o.mbits;
  const std::uint32_t sbit = std::uint32_t(sign) << (o.ebits + M);
  const std::uint32_t inf = std::uint32_t((1 << o.ebits) - 1) << M;
  if (ef == 0xFF) {
    if (fr == 0) return {sbit | inf, 0};
    // NaN: sign kept, fraction's top M bits, quiet bit set; invalid for signaling.
    const std::uint8_t fl = (fr & 0x400000) ? 0 : F_INVALID;
    return {sbit | inf | (fr >> (23 - M)) | (1u << (M - 1)), fl};
  }
  if (ef == 0 && fr == 0) return {sbit, 0};
  std::uint64_t sig;
  int E;
  if (ef == 0) { // subnormal: value = fr * 2^-149; normalise so that the leading one is bit 23
    int lead = 31 - __builtin_clz(fr);
    sig = std::uint64_t(fr) << (23 - lead);
    E = -149 + lead;
  } else {
    sig = fr | 0x800000u;
    E = ef - 127;
  }
  // Shift the 24-bit significand to leading bit 52 (exact, no sticky needed).
  return round_sig(sign, sig << 29, 52, E, o, m, tiny_before, random);
}

} // namespace fast_oracle
