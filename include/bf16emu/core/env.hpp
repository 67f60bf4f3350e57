// bf16emu: per-call arithmetic environment, IEEE flags, results and the
// rounding trace. Nothing here is global: every operation takes an env by
// value or reference and returns its flags with its result.
#pragma once

#include <cstdint>

#include "bf16emu/core/format.hpp"

namespace bf16emu {

enum class round_mode : std::uint8_t {
  nearest_even, // IEEE roundTiesToEven
  nearest_away, // IEEE roundTiesToAway
  toward_zero,  // IEEE roundTowardZero
  upward,       // IEEE roundTowardPositive
  downward,     // IEEE roundTowardNegative
  to_odd,       // truncate, then set the last bit if anything was discarded
  stochastic,   // add env::random (32 bits) below the last kept bit, then truncate
  // The modes below were added after the seven above (issue 44); their numbers follow them.
  nearest_zero,     // round to nearest, ties toward zero (CPFloat's mode 0)
  stochastic_equal, // inexact: up or down with probability 1/2 each (bit 31 of env::random)
  stochastic_k,     // add the low env::sr_bits bits of env::random below the last kept bit, truncate
};
inline constexpr int round_mode_count = 10;

// The stochastic modes: they read env::random (a bulk call with a random_stream draws it per element).
BF16EMU_CXHD bool is_stochastic(round_mode m) noexcept {
  return m == round_mode::stochastic || m == round_mode::stochastic_equal || m == round_mode::stochastic_k;
}
// Largest k of round_mode::stochastic_k: the rounding sees 32 bits below the last kept bit.
inline constexpr int max_sr_bits = 32;

enum class tininess : std::uint8_t { after_rounding, before_rounding };

// What a NaN result looks like.
//   ieee    : propagate the first NaN operand (a, then b, then c), quieted; an invalid
//             operation without NaN operands gives the default NaN +qNaN (0x7FC00000 for fp32).
//   cuda    : every NaN result is the canonical all-ones pattern 0x7FFFFFFF / 0x7FFF / 0x7FFF.
//   pytorch : every NaN result is the positive default quiet NaN (bf16 0x7FC0, fp32 0x7FC00000).
// In fn formats (e4m3) the only NaNs are S.1111.111; ieee keeps the sign, others use +NaN.
enum class nan_policy : std::uint8_t { ieee, cuda, pytorch };

// Subnormal handling (bit set):
//   flush_outputs  : a result that is tiny (per env::tiny) becomes a signed zero
//                    (underflow and inexact are raised);
//   inputs_as_zero : subnormal operands are read as signed zeros (no flag).
enum class subnormals : std::uint8_t { ieee = 0, flush_outputs = 1, inputs_as_zero = 2, flush_both = 3 };

namespace flag {
inline constexpr std::uint8_t invalid = 1;
inline constexpr std::uint8_t divbyzero = 2;
inline constexpr std::uint8_t overflow = 4;
inline constexpr std::uint8_t underflow = 8;
inline constexpr std::uint8_t inexact = 16;
} // namespace flag

struct env {
  round_mode mode = round_mode::nearest_even;
  tininess tiny = tininess::after_rounding;
  nan_policy nan = nan_policy::ieee;
  subnormals subnormal = subnormals::ieee;
  // Overflow gives the largest finite value instead of Inf (or NaN in fn formats).
  bool saturate = false;
  // Random bits for round_mode::stochastic: P(round up in magnitude) = floor(f * 2^32) / 2^32,
  // f being the discarded fraction of an ulp.
  //   stochastic_equal: up (in magnitude) iff the result is inexact and bit 31 of random is set.
  //   stochastic_k: k = sr_bits (1..32). The k discarded bits just below the last kept bit,
  //     D = floor(f * 2^k), and the low k bits of random, R = random mod 2^k, are added as k-bit
  //     integers; a carry out (D + R >= 2^k) rounds the magnitude up. Bit k-1 of random is aligned
  //     with the guard bit (the first discarded bit), bit 0 with the k-th discarded bit; the bits
  //     of random from bit k up are ignored, and so are discarded bits below the k-th (truncated).
  //     P(up) = floor(f * 2^k) / 2^k. k = 32 is round_mode::stochastic. Outside 1..32 k is clamped.
  std::uint32_t random = 0;
  std::uint8_t sr_bits = 32;
};

BF16EMU_CXHD env with_mode(round_mode m) noexcept {
  env e{};
  e.mode = m;
  return e;
}

template <class F> struct result {
  fp<F> value{};
  std::uint8_t flags = 0;
  BF16EMU_CXHD typename F::storage bits() const noexcept { return value.bits; }
};

// ---------------------------------------------------------------------------
// Trace.

enum class op_kind : std::uint8_t { add, sub, mul, fma, div, sqrt, convert };

// What the rounding did to the magnitude of the exact value.
enum class decision : std::uint8_t {
  exact,        // nothing discarded
  down,         // magnitude truncated (discarded bits dropped)
  up,           // magnitude incremented by one ulp
  tie_down,     // exactly halfway; nearest-even kept the even neighbour below
  tie_up,       // exactly halfway; rounded to the neighbour above (even, or ties-away)
  overflow_inf, // rounded magnitude exceeds the largest finite value: Inf (or NaN in fn formats)
  overflow_max, // likewise, saturated to the largest finite value
  flush_zero,   // tiny result flushed to zero by the subnormal policy
};

// One rounding, as seen by the single round-and-pack routine.
// The exact value is  (-1)^sign * (kept + discarded fraction) * 2^lsb_exp,
// and error = result - exact = err_hi + err_lo (both binary64; their sum is the
// exact error when err_exact is true).
struct rounding_event {
  op_kind op = op_kind::add;
  round_mode mode = round_mode::nearest_even;
  std::uint8_t dst_exp_bits = 0, dst_frac_bits = 0;
  bool sign = false;
  std::int32_t exponent = 0; // unbiased exponent of the result's binade (emin for subnormals)
  std::int32_t lsb_exp = 0;  // exponent of the last kept bit
  std::uint64_t kept = 0;    // kept significand before rounding (hidden bit included)
  bool guard = false, round = false, sticky = false;
  bool tiny = false; // tininess as detected under env::tiny
  decision dec = decision::exact;
  std::uint64_t result_bits = 0;
  std::uint8_t flags = 0;
  double err_hi = 0, err_lo = 0;
  bool err_exact = true;
};

// A tracer is any type with `static constexpr bool enabled` and a call operator
// taking `const rounding_event&`. The default does nothing and costs nothing.
struct no_trace {
  static constexpr bool enabled = false;
  BF16EMU_CXHD void operator()(const rounding_event &) const noexcept {}
};

// Wraps a callable as an enabled tracer.
template <class Fn> struct trace_fn {
  static constexpr bool enabled = true;
  Fn fn;
  BF16EMU_CXHD void operator()(const rounding_event &e) { fn(e); }
};
template <class Fn> BF16EMU_CXHD trace_fn<Fn> make_tracer(Fn fn) { return trace_fn<Fn>{fn}; }

// Records the last event (handy for tests and single-step tools).
struct last_event {
  static constexpr bool enabled = true;
  rounding_event event{};
  int count = 0;
  BF16EMU_CXHD void operator()(const rounding_event &e) noexcept {
    event = e;
    ++count;
  }
};

BF16EMU_CXHD const char *to_string(round_mode m) noexcept {
  switch (m) {
  case round_mode::nearest_even: return "nearest_even";
  case round_mode::nearest_away: return "nearest_away";
  case round_mode::toward_zero: return "toward_zero";
  case round_mode::upward: return "upward";
  case round_mode::downward: return "downward";
  case round_mode::to_odd: return "to_odd";
  case round_mode::nearest_zero: return "nearest_zero";
  case round_mode::stochastic_equal: return "stochastic_equal";
  case round_mode::stochastic_k: return "stochastic_k";
  default: return "stochastic";
  }
}

BF16EMU_CXHD const char *to_string(decision d) noexcept {
  switch (d) {
  case decision::exact: return "exact";
  case decision::down: return "down";
  case decision::up: return "up";
  case decision::tie_down: return "tie_down";
  case decision::tie_up: return "tie_up";
  case decision::overflow_inf: return "overflow_inf";
  case decision::overflow_max: return "overflow_max";
  default: return "flush_zero";
  }
}

BF16EMU_CXHD const char *to_string(op_kind o) noexcept {
  switch (o) {
  case op_kind::add: return "add";
  case op_kind::sub: return "sub";
  case op_kind::mul: return "mul";
  case op_kind::fma: return "fma";
  case op_kind::div: return "div";
  case op_kind::sqrt: return "sqrt";
  default: return "convert";
  }
}

} // namespace bf16emu
