// bf16emu bias: the accumulation methods and one trial's signed error.
//
// Every rounding goes through the core (add/sub/convert with a per-call env); this file
// only decides the order of operations. Methods:
//   fp32_seq  s = s0; s = fl32(s + x_i) for i = 0..n-1; result = round_out(s)   (the paper's case)
//   bf16_seq  s = fl16(s0); s = flbf16(s + x_i) (FP32 addend, one rounding into BF16 per step)
//   pairwise  FP32 pairwise (recursive halving) over [s0, x_0, ..., x_{n-1}], then round_out
//   kahan     FP32 Kahan-compensated summation, same rounding mode for every operation
//   tc        tensor-core model: blocks of L products v_i*w_i fused into the FP32 accumulator
//             (alignment to the block's max exponent keeping F bits, truncated FP32 output),
//             starting from c = s0; then round_out. The rounding mode applies only to round_out.
// round_out is the final conversion to the output format (BF16 by default, or none: FP32).
// Stochastic rounding draws env.random from the counter-based generator keyed by
// (seed, trial): results do not depend on threads or shards.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bf16emu/bias/generate.hpp"
#include "bf16emu/bias/rng.hpp"
#include "bf16emu/bias/wide.hpp"
#include "bf16emu/core.hpp"

#include "bf16emu/tc.hpp"

namespace bf16emu::bias {

enum class method : std::uint8_t { fp32_seq, bf16_seq, pairwise, kahan, tc };
inline constexpr int method_count = 5;

inline const char *to_string(method m) noexcept {
  switch (m) {
  case method::fp32_seq: return "fp32_seq";
  case method::bf16_seq: return "bf16_seq";
  case method::pairwise: return "pairwise";
  case method::kahan: return "kahan";
  default: return "tc";
  }
}

enum class out_format : std::uint8_t { bf16, fp32 };
inline const char *to_string(out_format o) noexcept { return o == out_format::bf16 ? "bf16" : "fp32"; }

// Block parameters of the tensor-core method (include/bf16emu/tc/block.hpp); the default is
// the A100 (sm80) bf16 -> fp32 preset. instr_k pads K to a multiple of the instruction's k.
struct tc_params {
  int L = 8;         // products per block
  int F = 24;        // fraction bits kept below the block's max exponent
  int e_zero = -132; // exponent of a zero term in the max search
  int instr_k = 16;  // the instruction's k (zero padding), >= L
};

// The tc_params of a preset (bf16 inputs, fp32 accumulator), e.g. "sm80", "hopper";
// false when the architecture has no bf16 -> fp32 preset.
inline bool tc_preset(const char *arch, tc_params &out) noexcept {
  tc::arch a{};
  if (!tc::parse_arch(arch, a)) return false;
  const tc::preset *p = tc::bf16_preset(a);
  if (!p) return false;
  out.L = p->block.L;
  out.F = p->block.F;
  out.e_zero = p->block.e_zero;
  out.instr_k = p->k;
  return true;
}

struct accumulation {
  method m = method::fp32_seq;
  round_mode mode = round_mode::nearest_even;
  out_format out = out_format::bf16;
  tc_params tc{};
};

// Counts of the per-step roundings (the final conversion excluded), by direction.
struct step_counts {
  std::uint64_t inexact = 0, away = 0;
};

// One trial's outcome.
struct trial_result {
  bool finite = true;        // false: the result overflowed (Inf/NaN); no error recorded
  std::uint64_t result_bits; // in the output format
  double exact = 0;          // exact sum, rounded to binary64 (for display)
  double err = 0;            // result - exact, rounded to binary64 once
  double err_ulp = 0;        // err / ulp of the output format at |exact| (exact scaling)
  double rel = 0;            // err / |exact| (0 when exact == 0)
  bool rel_defined = true;   // false when exact == 0
  int direction = 0;         // +1: |result| > |exact| (away from zero), -1: toward, 0: exact
  step_counts steps{};
};

namespace detail_acc {

// The per-operation environment: the mode, and for stochastic rounding fresh bits.
struct env_source {
  env base;
  counter_rng g;
  env next() noexcept {
    env e = base;
    e.random = static_cast<std::uint32_t>(g.next() >> 32);
    return e;
  }
};

struct counting_tracer {
  static constexpr bool enabled = true;
  step_counts *c;
  void operator()(const rounding_event &ev) const noexcept {
    if (ev.dec == decision::exact) return;
    ++c->inexact;
    if (ev.dec == decision::up || ev.dec == decision::tie_up || ev.dec == decision::overflow_inf ||
        ev.dec == decision::overflow_max)
      ++c->away;
  }
};

inline f32 pairwise(const f32 *x, std::size_t n, env_source &es, counting_tracer &tr) {
  if (n == 1) return x[0];
  const std::size_t h = n / 2;
  const f32 a = pairwise(x, h, es, tr);
  const f32 b = pairwise(x + h, n - h, es, tr);
  return add(a, b, es.next(), tr).value;
}

// Exponent of the ulp of format F at the exact value: the ulp of the correctly rounded
// result (binade of |exact|, at least emin). It depends on the inputs only, never on the
// rounding under test, so means in these units are unbiased (normalising by the computed
// result's own ulp would correlate the unit with the error, e.g. under stochastic rounding).
// An exact zero takes the ulp of the computed result (or of emin).
template <class F> int ulp_exp(fp<F> r, const exact_sum &exact) noexcept {
  int e;
  if (!exact.is_zero()) {
    e = exact.ilogb();
  } else if (!r.is_zero()) {
    const int be = r.biased_exp();
    e = be == 0 ? F::emin : be - F::bias;
  } else {
    e = F::emin;
  }
  return (e < F::emin ? F::emin : e) - F::frac_bits;
}

template <class F> trial_result finish(fp<F> r, const exact_sum &exact) {
  trial_result t;
  t.result_bits = r.bits;
  t.exact = exact.to_double();
  if (!r.is_finite()) {
    t.finite = false;
    return t;
  }
  exact_sum d = exact;
  d.negate();
  d.add(r); // result - exact, exactly
  t.err = d.to_double();
  t.err_ulp = std::ldexp(t.err, -ulp_exp(r, exact));
  if (t.exact == 0 && exact.is_zero()) {
    t.rel_defined = false;
  } else {
    t.rel = t.err / std::fabs(t.exact);
  }
  const int es = d.sign(), xs = exact.sign();
  t.direction = es == 0 ? 0 : (xs == 0 ? 1 : (es == xs ? 1 : -1));
  return t;
}

} // namespace detail_acc

// Runs one accumulation of `in` and measures its signed error against the exact sum.
inline trial_result accumulate(const accumulation &a, const trial_input &in, std::uint64_t seed,
                               std::uint64_t trial) {
  using namespace detail_acc;
  env_source es{with_mode(a.mode), counter_rng{key(seed, stream::rounding, trial)}};
  step_counts steps;
  counting_tracer tr{&steps};
  const std::size_t n = in.x.size();

  exact_sum exact;
  exact.add(in.start);
  for (const f32 &x : in.x)
    exact.add(x);

  if (a.m == method::bf16_seq) {
    bf16 s = convert<bfloat16>(in.start, es.next(), tr).value;
    for (std::size_t i = 0; i < n; ++i)
      s = add_to<bfloat16>(s, in.x[i], es.next(), tr).value;
    trial_result t = finish(s, exact);
    t.steps = steps;
    return t;
  }

  f32 s = in.start;
  switch (a.m) {
  case method::fp32_seq:
    for (std::size_t i = 0; i < n; ++i)
      s = add(s, in.x[i], es.next(), tr).value;
    break;
  case method::pairwise: {
    std::vector<f32> all;
    all.reserve(n + 1);
    all.push_back(in.start);
    all.insert(all.end(), in.x.begin(), in.x.end());
    s = pairwise(all.data(), all.size(), es, tr);
    break;
  }
  case method::kahan: {
    f32 c{};
    for (std::size_t i = 0; i < n; ++i) {
      const f32 y = sub(in.x[i], c, es.next(), tr).value;
      const f32 t = add(s, y, es.next(), tr).value;
      c = sub(sub(t, s, es.next(), tr).value, y, es.next(), tr).value;
      s = t;
    }
    break;
  }
  case method::tc: {
    tc::block_params p;
    p.L = a.tc.L;
    p.F = a.tc.F;
    p.e_zero = a.tc.e_zero;
    p.out_frac = binary32::frac_bits;
    p.rounding = tc::out_round::truncate;
    s = tc::dot<bfloat16, binary32>(p, a.tc.instr_k, in.v.data(), 1, in.w.data(), 1, static_cast<int>(n), s);
    break;
  }
  default: break;
  }

  trial_result t;
  if (a.out == out_format::bf16) {
    t = finish(convert<bfloat16>(s, es.next()).value, exact);
  } else {
    t = finish(s, exact);
  }
  t.steps = steps;
  return t;
}

// The classic a-priori bound of recursive summation, n * u * sum |x_i| (n addends including
// the start value, u the unit roundoff of the accumulator: 2^-p for round-to-nearest,
// 2^(1-p) otherwise), plus u_out * |exact| for the final conversion when there is one.
inline double classic_bound(const accumulation &a, const trial_input &in) {
  const bool nearest = a.mode == round_mode::nearest_even || a.mode == round_mode::nearest_away;
  const int p_acc = a.m == method::bf16_seq ? 8 : 24;
  const double u = std::ldexp(1.0, nearest ? -p_acc : 1 - p_acc);
  exact_sum abs_sum, exact;
  abs_sum.add(abs(in.start));
  exact.add(in.start);
  for (const f32 &x : in.x) {
    abs_sum.add(abs(x));
    exact.add(x);
  }
  const double n = static_cast<double>(in.x.size() + (in.start.is_zero() ? 0 : 1));
  double bound = n * u * abs_sum.to_double();
  if (a.out == out_format::bf16 && a.m != method::bf16_seq)
    bound += std::ldexp(1.0, nearest ? -8 : -7) * std::fabs(exact.to_double());
  return bound;
}

} // namespace bf16emu::bias
