// bf16emu io: operand parsing. See number.hpp for the method.
#include "io/number.hpp"

#include <bf16emu/core.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "io/bigint.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/names.hpp"

namespace bf16emu::io {

namespace {

using detail::big;
using detail::bitlen;

[[noreturn]] void bad(std::string_view text, const std::string &why) {
  throw input_error("cannot read '" + shorten(std::string(text)) + "': " + why);
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = char(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The exact value of a decimal or hex-float numeral: (-1)^sign * mant * base^exp10 * 2^exp2.
struct numeral {
  bool sign = false;
  big mant;
  long long exp10 = 0; // power of ten (decimal)
  long long exp2 = 0;  // power of two (hex-float)
  int digits = 0;      // significant digits in mant (for range estimates)
  bool hex = false;

  // About log2 of the magnitude (within a few units); the exact path is used when in range.
  long long log2_estimate() const { return hex ? 4LL * (digits - 1) + exp2 : (digits - 1 + exp10) * 10 / 3; }
};

// Beyond this, every format (binary64 included) overflows or rounds to zero.
constexpr long long far_log2 = 1200;

// Parses [+-]digits[.digits][(e|p)[+-]digits]; hex selects 0x...p syntax.
numeral scan(std::string_view text, std::string_view s, bool hex) {
  numeral n;
  n.hex = hex;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) n.sign = s[i++] == '-';
  if (hex) i += 2; // "0x", checked by the caller
  bool any = false, dot = false, leading = true;
  long long frac_digits = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (dot) bad(text, "two decimal points");
      dot = true;
      continue;
    }
    int v = hex ? hexval(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
    if (v < 0) break;
    any = true;
    if (dot) ++frac_digits;
    if (leading && v == 0) continue;
    leading = false;
    n.mant.mul_small(hex ? 16 : 10);
    n.mant.add(big::from(std::uint64_t(v)));
    ++n.digits;
    if (n.digits > 1000) bad(text, "more than 1000 significant digits");
  }
  if (!any) bad(text, hex ? "no hex digits after 0x" : "not a number");
  long long e = 0;
  if (i < s.size() && (hex ? (s[i] == 'p' || s[i] == 'P') : (s[i] == 'e' || s[i] == 'E'))) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i])))
      bad(text, "missing exponent digits");
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
      if (e < 100000000) e = e * 10 + (s[i] - '0');
    if (eneg) e = -e;
  } else if (hex && !dot) {
    bad(text, "hex-float needs '.' or 'p' (a bit pattern has no sign)");
  }
  if (i != s.size()) bad(text, std::string("unexpected character '") + s[i] + "'");
  if (hex)
    n.exp2 = e - 4 * frac_digits;
  else
    n.exp10 = e - frac_digits;
  return n;
}

// |value| = (q + t) * 2^exp with q in [2^63, 2^64), t in [0, 1); sticky = (t != 0).
struct window {
  std::uint64_t q = 0;
  long long exp = 0;
  bool sticky = false;
};

window to_window(const numeral &n) {
  // Value = num / den * 2^e2, all exact.
  big num = n.mant, den = big::from(1);
  long long e2 = n.exp2;
  if (n.exp10 > 0) {
    for (long long k = 0; k < n.exp10; ++k)
      num.mul_small(10);
  } else {
    for (long long k = 0; k < -n.exp10; ++k)
      den.mul_small(10);
  }
  // Choose s with num * 2^s / den in (2^63, 2^65).
  long long s = 64 - (bitlen(num) - bitlen(den));
  if (s > 0)
    num.shl(unsigned(s));
  else
    den.shl(unsigned(-s));
  // Quotient bits 64..0, one at a time (bit 64 kept apart: q has up to 65 bits).
  bool q64 = false;
  std::uint64_t q = 0;
  for (int i = 64; i >= 0; --i) {
    big t = den;
    t.shl(unsigned(i));
    if (cmp(num, t) >= 0) {
      num.sub(t);
      if (i == 64)
        q64 = true;
      else
        q |= std::uint64_t{1} << i;
    }
  }
  window w;
  w.sticky = !num.zero();
  w.exp = e2 - s;
  if (q64) {
    w.sticky |= (q & 1) != 0;
    q = q >> 1 | std::uint64_t{1} << 63;
    ++w.exp;
  }
  w.q = q;
  return w;
}

template <class F> std::uint64_t special_bits(std::string_view text, std::string_view word, bool sign) {
  std::uint64_t s = sign ? F::sign_mask : 0;
  if (word == "inf" || word == "infinity") {
    if (!F::has_inf) bad(text, std::string(format_name<F>()) + " has no infinity");
    return s | F::inf_bits;
  }
  if (!F::has_nan) bad(text, std::string(format_name<F>()) + " has no NaN");
  if (word == "nan" || word == "qnan") return s | (F::has_inf ? (F::exp_mask | F::quiet_bit) : F::inf_bits);
  if (!F::has_inf) bad(text, std::string(format_name<F>()) + " has no signaling NaN");
  return s | F::exp_mask | 1; // snan
}

template <class F> void round_into(operand &op, const numeral &n, std::string_view text) {
  env e; // nearest_even
  if (n.mant.zero()) {
    op.bits = n.sign ? F::sign_mask : 0;
    return;
  }
  if constexpr (F::precision > 24) {
    // binary64: strtod is correctly rounded (nearest-even); exactness from the window below.
    std::string t(text);
    double d = std::strtod(t.c_str(), nullptr);
    op.bits = from_double(d).bits;
    op.overflow = std::isinf(d);
  } else {
    // Round to odd at 53 bits: exact when nothing is dropped, else the last bit is set,
    // which makes the following single nearest-even rounding to <= 24 bits correct.
    // Formats of <= 24 bits live within [2^-160, 2^129]: anything beyond 2^+-300 is far out
    // of range, and inside it the round-to-odd double below is a normal binary64.
    const long long lg = n.log2_estimate();
    double d;
    if (lg > 300)
      d = std::ldexp(1.0 + 0x1p-52, 300); // far beyond any range: overflows
    else if (lg < -300)
      d = std::ldexp(1.0 + 0x1p-52, -300); // far below any subnormal: rounds to 0
    else {
      window w = to_window(n);
      std::uint64_t top = w.q >> 11;
      if ((w.q & 0x7FF) != 0 || w.sticky) top |= 1;
      d = std::ldexp(double(top), int(w.exp + 11));
    }
    auto r = convert<F>(from_double(n.sign ? -d : d), e);
    op.bits = r.bits();
    op.exact = (r.flags & flag::inexact) == 0;
    op.overflow = (r.flags & flag::overflow) != 0;
    return;
  }
  // binary64 exactness: the exact value must equal the double.
  double d = to_native_double(f64::from_bits(op.bits));
  const long long lg = n.log2_estimate();
  if (op.overflow || d == 0 || lg > far_log2 || lg < -far_log2) {
    op.exact = false;
    return;
  }
  window w = to_window(n);
  int de;
  double fr = std::frexp(std::fabs(d), &de);           // |d| = fr * 2^de, fr in [0.5, 1)
  std::uint64_t m = std::uint64_t(std::ldexp(fr, 64)); // fr * 2^64 < 2^64, exact (53 bits)
  op.exact = !w.sticky && m == w.q && (de - 64) == w.exp;
}

} // namespace

operand parse_operand(std::string_view text, format_id format) {
  operand op;
  op.format = format;
  op.text = std::string(text);
  if (text.empty()) bad(text, "empty operand");
  if (text.size() > 2000) bad(text, "operand longer than 2000 characters");
  std::string_view s = text;
  bool sign = false;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    sign = body[0] == '-';
    body.remove_prefix(1);
  }
  std::string lowered(body);
  for (auto &c : lowered)
    c = char(std::tolower(static_cast<unsigned char>(c)));

  visit_format(format, [&](auto f) {
    using F = decltype(f);
    if (lowered == "inf" || lowered == "infinity" || lowered == "nan" || lowered == "qnan" ||
        lowered == "snan") {
      op.how = operand::syntax::special;
      op.bits = special_bits<F>(text, lowered, sign);
      return;
    }
    bool hex = lowered.size() >= 2 && lowered[0] == '0' && lowered[1] == 'x';
    if (hex && lowered.find_first_of(".p") == std::string::npos) {
      // Bit pattern of the format.
      if (body.size() != s.size()) bad(text, "a bit pattern has no sign (write the sign bit)");
      std::string_view digits = body.substr(2);
      const int maxd = (F::width + 3) / 4;
      if (digits.empty()) bad(text, "no hex digits after 0x");
      if (int(digits.size()) > maxd)
        bad(text, "bit pattern wider than " + std::to_string(F::width) + "-bit " + format_name<F>() +
                      " (at most " + std::to_string(maxd) + " hex digits)");
      std::uint64_t v = 0;
      for (char c : digits) {
        int h = hexval(c);
        if (h < 0) bad(text, std::string("'") + c + "' is not a hex digit");
        v = v << 4 | unsigned(h);
      }
      if (F::width < 64 && (v >> (F::width % 64)) != 0)
        bad(text, "bit pattern does not fit " + std::to_string(F::width) + "-bit " + format_name<F>());
      op.how = operand::syntax::bits;
      op.bits = v;
      return;
    }
    op.how = hex ? operand::syntax::hexfloat : operand::syntax::decimal;
    numeral n = scan(text, s, hex);
    round_into<F>(op, n, text);
  });
  return op;
}

std::uint64_t parse_uint(std::string_view text, std::uint64_t max, const char *what) {
  std::string t(text);
  auto fail = [&]() -> std::uint64_t {
    throw input_error(std::string(what) + ": cannot read '" + shorten(t) + "' (expected an integer 0.." +
                      std::to_string(max) + ", decimal or 0x hex)");
  };
  if (t.empty() || t[0] == '-' || t[0] == '+' || std::isspace(static_cast<unsigned char>(t[0])))
    return fail();
  errno = 0;
  char *end = nullptr;
  bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  unsigned long long v = std::strtoull(t.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || end != t.c_str() + t.size() || v > max) return fail();
  return v;
}

} // namespace bf16emu::io
