// bf16emu::bulk kernels: one copy per SIMD target (Highway's foreach_target re-includes this
// file once per target), chosen at run time by HWY_DYNAMIC_DISPATCH. See bulk.hpp for the
// contract and docs/performance-bulk.md for the design and the measurements.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bulk/bulk.cpp"
#include <hwy/foreach_target.h> // must come before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <type_traits>
#if defined(__SSE2__) || defined(_M_X64)
#include <xmmintrin.h> // _mm_getcsr
#endif

#include "bf16emu/core/bulk.hpp"
#include "bulk/bulk.hpp"

// Target-independent helpers (compiled once).
#ifndef BF16EMU_BULK_SHARED
#define BF16EMU_BULK_SHARED
namespace bf16emu::bulk::detail {

// What a kernel needs besides the arrays.
struct args {
  env e;
  bool stream = false; // stochastic with a random_stream: random = counter_random(seed, offset + i)
  // The host's float arithmetic is IEEE default (nearest-even, no FTZ/DAZ, exceptions masked),
  // read once per call: the round-to-odd kernels use native fp32 add and mul only then.
  bool host_fp = false;
  std::uint64_t seed = 0, offset = 0;
};

inline env element_env(const args &a, std::size_t i) noexcept {
  env e = a.e;
  if (a.stream) e.random = counter_random(a.seed, a.offset + i);
  return e;
}

// The scalar reference for one element of each kernel.
template <class Out>
inline result<Out> scalar_convert(std::uint32_t x, const args &a, std::size_t i) noexcept {
  return convert<Out>(f32{x}, element_env(a, i));
}

enum class arith_op : std::uint8_t { add, sub, mul, fma };
inline result<bfloat16> scalar_arith(arith_op op, std::uint16_t x, std::uint16_t y, const args &a,
                                     std::size_t i, std::uint16_t z = 0) noexcept {
  const env e = element_env(a, i);
  switch (op) {
  case arith_op::add: return add(bf16{x}, bf16{y}, e);
  case arith_op::sub: return sub(bf16{x}, bf16{y}, e);
  case arith_op::mul: return mul(bf16{x}, bf16{y}, e);
  default: return fma(bf16{x}, bf16{y}, bf16{z}, e);
  }
}

inline result<binary16> scalar_arith16(arith_op op, std::uint16_t x, std::uint16_t y, const args &a,
                                       std::size_t i) noexcept {
  const env e = element_env(a, i);
  switch (op) {
  case arith_op::add: return add(f16{x}, f16{y}, e);
  case arith_op::sub: return sub(f16{x}, f16{y}, e);
  default: return mul(f16{x}, f16{y}, e);
  }
}

} // namespace bf16emu::bulk::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace bf16emu::bulk::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using detail::args;
using rm = round_mode;

// fn(std::integral_constant<round_mode, M>{}) for the run-time mode m (core/bulk.hpp).
using bf16emu::detail::with_fixed_mode;

// The random words of a stream, Lanes at a time: lowbias32(counter ^ key) with the counter
// kept in a vector (the caller keeps offset .. offset + n within one block of 2^32 elements,
// so the key is the same for every lane).
template <class D> struct random_lanes {
  using V = hn::Vec<D>;
  V counter, key, step;
  random_lanes(D d, const args &a)
      : counter(hn::Iota(d, std::uint32_t(a.offset))), key(hn::Set(d, stream_key(a.seed, a.offset >> 32))),
        step(hn::Set(d, std::uint32_t(hn::Lanes(d)))) {}
  // The words of the next Lanes elements.
  HWY_INLINE V next(D d) {
    V x = hn::Xor(counter, key);
    counter = hn::Add(counter, step);
    x = hn::Xor(x, hn::ShiftRight<16>(x));
    x = hn::Mul(x, hn::Set(d, 0x7FEB352Du));
    x = hn::Xor(x, hn::ShiftRight<15>(x));
    x = hn::Mul(x, hn::Set(d, 0x846CA68Bu));
    return hn::Xor(x, hn::ShiftRight<16>(x));
  }
};

// The modes of issue 44 (nearest_zero, stochastic_equal, stochastic_k) have no lane rule here:
// the exported kernels run the scalar core per element for them (with the stream's random word).
template <rm Mode>
inline constexpr bool lane_mode =
    !(Mode == rm::nearest_zero || Mode == rm::stochastic_equal || Mode == rm::stochastic_k);

// The rounding rule of round.hpp `rounds_up<Mode>` on 0/1 lanes (guard, round, sticky, the
// last kept bit, the sign), for the kernels that build a cut window (add, mul). The answer
// still has to be masked with inexact = guard | round | sticky.
template <rm Mode, class V> HWY_INLINE V rounds_up_lanes(V kept, V g, V r, V s, V sign, V frac32, V random) {
  const auto d = hn::DFromV<V>();
  const V one = hn::Set(d, 1u);
  const V lsb = hn::And(kept, one);
  if constexpr (Mode == rm::nearest_even)
    return hn::And(g, hn::Or(hn::Or(r, s), lsb));
  else if constexpr (Mode == rm::nearest_away)
    return g;
  else if constexpr (Mode == rm::toward_zero)
    return hn::Zero(d);
  else if constexpr (Mode == rm::upward)
    return hn::Xor(sign, one);
  else if constexpr (Mode == rm::downward)
    return sign;
  else if constexpr (Mode == rm::to_odd)
    return hn::Xor(lsb, one);
  else
    return hn::And(hn::VecFromMask(d, hn::Gt(frac32, hn::Not(random))), one);
}

// The elements i .. n-1 left after the whole vectors of a narrowing: the scalar core.
template <class Out>
std::uint8_t narrow_tail(const std::uint32_t *in, typename Out::storage *out, std::size_t i, std::size_t n,
                         const args &a) {
  std::uint8_t flags = 0;
  for (; i < n; ++i) {
    const result<Out> s = detail::scalar_convert<Out>(in[i], a, i);
    out[i] = s.value.bits;
    flags |= s.flags;
  }
  return flags;
}

// ---------------------------------------------------------------------------
// fp32 -> bf16 / tf32 (same exponent range). Per lane the rounding is an addition below the
// cut and a shift: r = (x + inc) >> sh, inc being the mode's increment (nearest-even
// half - 1 + last kept bit; nearest-away half; upward/downward all ones below the cut for
// positive/negative x; stochastic the top sh bits of the random word, which carries out of
// the cut exactly when rounds_up's frac32 > ~random does; to-odd ORs in "anything below").
// The carry runs into the exponent field as in round_pack. NaN lanes take the policy's NaN;
// subnormal inputs are exact under the ieee and inputs-as-zero policies. Lanes left to the
// scalar core: subnormal inputs under flush_outputs, and inexact subnormal inputs under
// after-rounding tininess until one of them has raised underflow (from then on such a lane
// cannot add a flag: its result is the vector's, its flags underflow | inexact).
template <class Out, rm Mode> struct narrow_lanes {
  using D = hn::ScalableTag<std::uint32_t>;
  using DI = hn::RebindToSigned<D>;
  using V = hn::Vec<D>;
  static constexpr int sh = binary32::frac_bits - Out::frac_bits;
  static constexpr std::uint32_t low = (1u << sh) - 1, half = 1u << (sh - 1);
  // Lanes with 2^-126 <= |x| < max_finite + half an ulp of Out rounded down to Out's grid.
  static constexpr std::uint32_t edge = std::uint32_t(Out::max_finite_bits) << sh;
  D d;
  DI di;
  const args &a;
  std::uint32_t sat_pos, sat_neg, nan_const;
  bool nan_ieee, daz, ftz_only, tiny_before;
  std::uint8_t flags = 0;
  V acc_inexact, acc_over, acc_snan, acc_under, acc_fast;
  random_lanes<D> rnd;
  V fixed_random;

  explicit narrow_lanes(const args &args_)
      : a(args_), acc_inexact(hn::Zero(d)), acc_over(hn::Zero(d)), acc_snan(hn::Zero(d)),
        acc_under(hn::Zero(d)), acc_fast(hn::Zero(d)), rnd(d, args_),
        fixed_random(hn::Set(d, args_.e.random)) {
    const env &e = a.e;
    sat_pos =
        std::uint32_t(bf16emu::detail::overflow_to_inf(false, e) ? Out::inf_bits : Out::max_finite_bits);
    sat_neg = std::uint32_t(Out::sign_mask) |
              std::uint32_t(bf16emu::detail::overflow_to_inf(true, e) ? Out::inf_bits : Out::max_finite_bits);
    nan_const = std::uint32_t(bf16emu::detail::default_nan<Out>(e, 0).value.bits);
    nan_ieee = e.nan == nan_policy::ieee;
    const unsigned subn = static_cast<unsigned>(e.subnormal);
    daz = (subn & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
    ftz_only = !daz && (subn & static_cast<unsigned>(subnormals::flush_outputs)) != 0;
    tiny_before = e.tiny == tininess::before_rounding;
  }

  // The rounded lanes of x (Out's bits in the low lanes' bits), for elements i .. i + N - 1.
  // Lanes the scalar core must redo call scalar(j, tmp_r[j]) (an element this vector holds).
  template <class Scalar> HWY_INLINE V round(V x, Scalar &&scalar) {
    const auto abs = hn::Set(d, 0x7FFFFFFFu);
    const auto lowv = hn::Set(d, low);
    const auto one = hn::Set(d, 1u);
    const auto mag = hn::And(x, abs);
    const auto lowbits = hn::And(x, lowv);
    V r;
    if constexpr (Mode == rm::to_odd) {
      r = hn::Or(hn::ShiftRight<sh>(x), hn::ShiftRight<sh>(hn::Add(lowbits, lowv)));
    } else {
      V inc;
      const auto negm = hn::BitCast(d, hn::BroadcastSignBit(hn::BitCast(di, x)));
      if constexpr (Mode == rm::nearest_even)
        inc = hn::Add(hn::Set(d, half - 1), hn::And(hn::ShiftRight<sh>(x), one));
      else if constexpr (Mode == rm::nearest_away)
        inc = hn::Set(d, half);
      else if constexpr (Mode == rm::toward_zero)
        inc = hn::Zero(d);
      else if constexpr (Mode == rm::upward)
        inc = hn::AndNot(negm, lowv);
      else if constexpr (Mode == rm::downward)
        inc = hn::And(negm, lowv);
      else
        inc = hn::ShiftRight<32 - sh>(a.stream ? rnd.next(d) : fixed_random);
      r = hn::ShiftRight<sh>(hn::Add(x, inc));
    }
    // Fast vector: every lane normal and below `edge` (max_finite of Out, shifted to fp32), so
    // r cannot overflow and the only flag is inexact. One signed compare: mag + 2^31 - 2^23
    // lies in [INT32_MIN, edge + 2^31 - 2^23) exactly for those lanes.
    const auto fast_bias = hn::Set(d, 0x80000000u - 0x00800000u);
    const auto fast_limit = hn::Set(di, std::int32_t(edge + 0x80000000u - 0x00800000u));
    if (HWY_LIKELY(hn::AllTrue(di, hn::Lt(hn::BitCast(di, hn::Add(mag, fast_bias)), fast_limit)))) {
      acc_fast = hn::Or(acc_fast, x);
      return r;
    }
    // Classes (mag < 2^31, so signed compares are exact).
    const auto inf32 = hn::Set(d, 0x7F800000u);
    const auto magi = hn::BitCast(di, mag);
    const auto nan = hn::RebindMask(d, hn::Gt(magi, hn::BitCast(di, inf32)));
    const auto finite = hn::RebindMask(d, hn::Lt(magi, hn::BitCast(di, inf32)));
    const auto sub = hn::Lt(hn::Sub(mag, one), hn::Set(d, 0x007FFFFFu));
    const auto rmag = hn::And(r, hn::Set(d, std::uint32_t(Out::abs_mask)));
    const auto over = hn::And(finite, hn::Gt(rmag, hn::Set(d, std::uint32_t(Out::max_finite_bits))));
    const auto sat = hn::IfThenElse(hn::RebindMask(d, hn::Lt(hn::BitCast(di, x), hn::Zero(di))),
                                    hn::Set(d, sat_neg), hn::Set(d, sat_pos));
    r = hn::IfThenElse(over, sat, r);
    const auto nanres = nan_ieee ? hn::Or(hn::ShiftRight<sh>(x), hn::Set(d, std::uint32_t(Out::quiet_bit)))
                                 : hn::Set(d, nan_const);
    r = hn::IfThenElse(nan, nanres, r);
    acc_over = hn::Or(acc_over, hn::VecFromMask(d, over));
    acc_snan = hn::Or(acc_snan, hn::AndNot(x, hn::VecFromMask(d, nan)));
    auto settled_low = hn::IfThenZeroElse(nan, lowbits);
    auto need = hn::FirstN(d, 0);
    if (daz) {
      r = hn::IfThenElse(sub, hn::ShiftRight<sh>(hn::AndNot(abs, x)), r);
      settled_low = hn::IfThenZeroElse(sub, settled_low);
    } else if (ftz_only) {
      need = sub;
    } else if (tiny_before) {
      acc_under = hn::Or(acc_under, hn::IfThenElseZero(sub, lowbits));
    } else if (!(flags & flag::underflow)) {
      need = hn::And(sub, hn::Ne(lowbits, hn::Zero(d)));
    }
    acc_inexact = hn::Or(acc_inexact, settled_low);
    if (HWY_UNLIKELY(!hn::AllFalse(d, need))) {
      HWY_ALIGN std::uint32_t tmp_r[hn::MaxLanes(D())], tmp_need[hn::MaxLanes(D())];
      hn::Store(r, d, tmp_r);
      hn::Store(hn::VecFromMask(d, need), d, tmp_need);
      for (std::size_t j = 0; j < hn::Lanes(d); ++j)
        if (tmp_need[j]) flags |= scalar(j, tmp_r[j]);
      r = hn::Load(d, tmp_r);
    }
    return r;
  }

  // The flags of every lane rounded so far (and of the scalar lanes).
  std::uint8_t finish() const {
    const auto any = [&](V v, std::uint32_t bits) {
      return !hn::AllTrue(d, hn::Eq(hn::And(v, hn::Set(d, bits)), hn::Zero(d)));
    };
    std::uint8_t f = flags;
    if (any(acc_inexact, low) || any(acc_fast, low)) f |= flag::inexact;
    if (any(acc_over, 1u)) f |= flag::overflow | flag::inexact;
    if (any(acc_snan, 0x00400000u)) f |= flag::invalid;
    if (any(acc_under, low)) f |= flag::underflow | flag::inexact;
    return f;
  }
};

template <class Out, rm Mode>
std::uint8_t narrow_same_range(const std::uint32_t *HWY_RESTRICT in, typename Out::storage *HWY_RESTRICT out,
                               std::size_t n, const args &a) {
  using S = typename Out::storage;
  narrow_lanes<Out, Mode> nl(a);
  const auto d = nl.d;
  const auto di = nl.di;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto r = nl.round(hn::LoadU(d, in + i), [&](std::size_t j, std::uint32_t &res) {
      const result<Out> s = detail::scalar_convert<Out>(in[i + j], a, i + j);
      res = s.value.bits;
      return s.flags;
    });
    if constexpr (sizeof(S) == 2) {
      const hn::Rebind<std::uint16_t, decltype(d)> d16;
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, r)), d16, out + i);
    } else {
      hn::StoreU(r, d, out + i);
    }
  }
  return nl.finish() | narrow_tail<Out>(in, out, i, n, a);
}

// The elements i .. n-1 left after the whole vectors of a widening: the scalar core.
template <class In>
std::uint8_t widen_tail(const typename In::storage *in, std::uint32_t *out, std::size_t i, std::size_t n,
                        const env &e) {
  std::uint8_t flags = 0;
  for (; i < n; ++i) {
    const result<binary32> r = convert<binary32>(fp<In>{in[i]}, e);
    out[i] = r.value.bits;
    flags |= r.flags;
  }
  return flags;
}

// ---------------------------------------------------------------------------
// bf16 / tf32 -> fp32: a shift. NaN lanes take the policy's NaN (invalid for a signaling one);
// subnormal inputs stay (ieee), become signed zeros (inputs_as_zero), or are flushed with
// underflow | inexact (flush_outputs only: the exact fp32 value is tiny).
template <class In>
std::uint8_t widen_same_range(const typename In::storage *HWY_RESTRICT in, std::uint32_t *HWY_RESTRICT out,
                              std::size_t n, const env &e) {
  constexpr int sh = binary32::frac_bits - In::frac_bits;
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t N = hn::Lanes(d);
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto inf32 = hn::BitCast(di, hn::Set(d, 0x7F800000u));
  const bool nan_ieee = e.nan == nan_policy::ieee;
  const auto nan_const = hn::Set(d, std::uint32_t(bf16emu::detail::default_nan<binary32>(e, 0).value.bits));
  const unsigned subn = static_cast<unsigned>(e.subnormal);
  const bool daz = (subn & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const bool ftz = !daz && (subn & static_cast<unsigned>(subnormals::flush_outputs)) != 0;
  auto acc_snan = hn::Zero(d), acc_sub = hn::Zero(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::Vec<decltype(d)> v;
    if constexpr (sizeof(typename In::storage) == 2)
      v = hn::PromoteTo(d, hn::LoadU(hn::Rebind<std::uint16_t, decltype(d)>(), in + i));
    else
      v = hn::LoadU(d, in + i);
    auto x = hn::ShiftLeft<sh>(v);
    const auto mag = hn::And(x, abs);
    const auto nan = hn::RebindMask(d, hn::Gt(hn::BitCast(di, mag), inf32));
    acc_snan = hn::Or(acc_snan, hn::AndNot(x, hn::VecFromMask(d, nan)));
    x = hn::IfThenElse(nan, nan_ieee ? hn::Or(x, hn::Set(d, 0x00400000u)) : nan_const, x);
    if (daz || ftz) {
      const auto sub = hn::Lt(hn::Sub(mag, hn::Set(d, 1u)), hn::Set(d, 0x007FFFFFu));
      x = hn::IfThenElse(sub, hn::AndNot(abs, x), x);
      acc_sub = hn::Or(acc_sub, hn::VecFromMask(d, sub));
    }
    hn::StoreU(x, d, out + i);
  }
  std::uint8_t flags = 0;
  if (!hn::AllTrue(d, hn::Eq(hn::And(acc_snan, hn::Set(d, 0x00400000u)), hn::Zero(d))))
    flags |= flag::invalid;
  if (ftz && !hn::AllTrue(d, hn::Eq(acc_sub, hn::Zero(d)))) flags |= flag::underflow | flag::inexact;
  return flags | widen_tail<In>(in, out, i, n, e);
}

// ---------------------------------------------------------------------------
// fp32 -> fp16 / e5m2 / e4m3 (a narrower exponent range). A normal fp32 lane x = sig * 2^(E-150)
// (sig with its hidden bit, 24 bits) is cut at the quantum of Out's binade, or of 2^emin below
// it: sh = 23 - M + max(0, emin - lead) bits go, lead = E - 127. From the cut (kept, guard,
// round, sticky; frac32 = floor(discarded fraction * 2^32) as round.hpp's cut) the shared
// rule rounds, and the result packs as round_pack does: (max(lead, emin) + bias - 1) << M plus
// the rounded kept bits, so a carry runs into the exponent field; above max_finite the
// overflow result of the mode and saturation; below 2^emin tiny (underflow when inexact;
// flushed to a signed zero with underflow | inexact under flush_outputs). An fp32 subnormal
// (not read as zero) is cut the same way, exponent field 0 counting as 1 and no hidden bit.
// Zero lanes (and fp32 subnormal lanes read as zero) give the signed zero; NaN lanes the
// policy's NaN (invalid for a signaling one), Inf lanes special.hpp's infinity<Out>. Lanes
// left to the scalar core: under after-rounding tininess the binade just below 2^emin
// (lead = emin - 1), whose tininess depends on a second rounding.
template <class Out, rm Mode>
std::uint8_t narrow_small(const std::uint32_t *HWY_RESTRICT in, typename Out::storage *HWY_RESTRICT out,
                          std::size_t n, const args &a) {
  constexpr int M = Out::frac_bits;
  constexpr int base = binary32::frac_bits - M;
  constexpr int W = Out::width;
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<typename Out::storage, decltype(d)> dn;
  const std::size_t N = hn::Lanes(d);
  const env &e = a.e;
  const std::uint32_t sat_pos =
      std::uint32_t(bf16emu::detail::overflow_to_inf(false, e) ? Out::inf_bits : Out::max_finite_bits);
  const std::uint32_t sat_neg =
      std::uint32_t(Out::sign_mask) |
      std::uint32_t(bf16emu::detail::overflow_to_inf(true, e) ? Out::inf_bits : Out::max_finite_bits);
  const unsigned subn = static_cast<unsigned>(e.subnormal);
  const bool daz = (subn & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const bool ftz = bf16emu::detail::flushes_outputs(e);
  const bool after = e.tiny == tininess::after_rounding;
  const auto one = hn::Set(d, 1u);
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto min_normal = hn::Set(d, 0x00800000u);
  // Biased fp32 exponent of 2^emin, and of the binade below it (after-rounding tininess).
  const auto e_min = hn::Set(d, std::uint32_t(127 + Out::emin));
  const auto e_edge = hn::Set(d, after ? std::uint32_t(127 + Out::emin - 1) : 0u);
  random_lanes<decltype(d)> rnd(d, a);
  const auto fixed_random = hn::Set(d, e.random);
  auto acc_inexact = hn::Zero(d), acc_over = hn::Zero(d), acc_under = hn::Zero(d);
  auto acc_snan = hn::Zero(d), acc_inf = hn::Zero(d);
  const bool nan_ieee = e.nan == nan_policy::ieee;
  const std::uint32_t nan_const = std::uint32_t(bf16emu::detail::default_nan<Out>(e, 0).value.bits);
  const result<Out> inf_p = bf16emu::detail::infinity<Out>(false, e),
                    inf_n = bf16emu::detail::infinity<Out>(true, e);
  const std::uint32_t inf_pos = inf_p.value.bits, inf_neg = inf_n.value.bits;
  const std::uint8_t inf_flags = std::uint8_t(inf_p.flags | inf_n.flags);
  std::uint8_t flags = 0;
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto x = hn::LoadU(d, in + i);
    const auto mag = hn::And(x, abs);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
    if constexpr (Mode == rm::nearest_even && std::is_same_v<Out, binary16>) {
      // Every lane a normal fp16 number once rounded, no overflow: 2^-14 <= |x| < 65520 (which
      // rounds to 65504). The F16C conversion (vcvtps2ph, nearest-even) is then the result, and
      // the lane is inexact exactly when the result widened back differs from x.
      if (hn::AllTrue(d,
                      hn::Lt(hn::Sub(mag, hn::Set(d, 0x38800000u)), hn::Set(d, 0x477FF000u - 0x38800000u)))) {
        const hn::RebindToFloat<decltype(d)> df;
        const hn::Rebind<hwy::float16_t, decltype(d)> dh;
        const auto h = hn::DemoteTo(dh, hn::BitCast(df, x));
        acc_inexact = hn::Or(acc_inexact, hn::Xor(hn::BitCast(d, hn::PromoteTo(df, h)), x));
        hn::StoreU(hn::BitCast(dn, h), dn, out + i);
        continue;
      }
    }
#endif
    const auto E = hn::Max(hn::ShiftRight<23>(mag), one); // a subnormal's field 0 counts as 1
    const auto sig = hn::Sub(mag, hn::ShiftLeft<23>(hn::Sub(E, one)));
    // sh = base + max(0, emin - lead); kept, guard, round and sticky need sh only up to 31.
    const auto extra = hn::IfThenElseZero(hn::Lt(E, e_min), hn::Sub(e_min, E));
    const auto sh = hn::Add(extra, hn::Set(d, std::uint32_t(base)));
    const auto shc = hn::Min(sh, hn::Set(d, 31u));
    const auto kept = hn::Shr(sig, shc);
    const auto rem = hn::Sub(sig, hn::Shl(kept, shc));
    const auto g = hn::And(hn::Shr(sig, hn::Sub(shc, one)), one);
    const auto r = hn::And(hn::Shr(sig, hn::Sub(shc, hn::Set(d, 2u))), one);
    const auto below_round = hn::Sub(hn::Shl(one, hn::Sub(shc, hn::Set(d, 2u))), one);
    const auto st = hn::IfThenZeroElse(hn::Eq(hn::And(rem, below_round), hn::Zero(d)), one);
    hn::Vec<decltype(d)> frac32 = hn::Zero(d), random = fixed_random;
    if constexpr (Mode == rm::stochastic) {
      const auto wide = hn::Gt(sh, hn::Set(d, 32u));
      frac32 = hn::IfThenElse(wide, hn::Shr(sig, hn::Min(hn::Sub(sh, hn::Set(d, 32u)), hn::Set(d, 31u))),
                              hn::Shl(rem, hn::IfThenZeroElse(wide, hn::Sub(hn::Set(d, 32u), sh))));
      if (a.stream) random = rnd.next(d);
    }
    const auto sign = hn::ShiftRight<31>(x);
    const auto inexact = hn::Or(hn::Or(g, r), st);
    const auto up = hn::And(rounds_up_lanes<Mode>(kept, g, r, st, sign, frac32, random), inexact);
    // Exponent field of the quantum's binade, minus one (the hidden bit of kept adds it).
    const auto field =
        hn::IfThenZeroElse(hn::Lt(E, e_min), hn::Sub(E, hn::Set(d, std::uint32_t(127 + Out::emin))));
    const auto packed = hn::Add(hn::Add(hn::ShiftLeft<M>(field), kept), up);
    const auto over = hn::Gt(packed, hn::Set(d, std::uint32_t(Out::max_finite_bits)));
    const auto tiny = hn::Lt(E, e_min);
    const auto sneg = hn::Eq(sign, one);
    const auto osign = hn::ShiftLeft<W - 1>(sign);
    auto res = hn::IfThenElse(over, hn::IfThenElse(sneg, hn::Set(d, sat_neg), hn::Set(d, sat_pos)),
                              hn::Or(osign, ftz ? hn::IfThenZeroElse(tiny, packed) : packed));
    // Lanes settled here: finite nonzero fp32 lanes (not on the after-rounding edge), zeros.
    const auto normal = daz ? hn::Lt(hn::Sub(mag, min_normal), hn::Set(d, 0x7F000000u))
                            : hn::Lt(hn::Sub(mag, one), hn::Set(d, 0x7F7FFFFFu));
    const auto zero = daz ? hn::Lt(mag, min_normal) : hn::Eq(mag, hn::Zero(d));
    res = hn::IfThenElse(zero, osign, res);
    const auto ok_normal = hn::And(normal, hn::Ne(E, e_edge));
    const auto inex_lane = hn::IfThenElseZero(ok_normal, hn::Or(inexact, hn::VecFromMask(d, over)));
    const auto under_lane = hn::And(hn::And(ok_normal, tiny), ftz ? tiny : hn::Ne(inexact, hn::Zero(d)));
    acc_inexact = hn::Or(acc_inexact, hn::Or(inex_lane, hn::VecFromMask(d, under_lane)));
    acc_over = hn::Or(acc_over, hn::VecFromMask(d, hn::And(ok_normal, over)));
    acc_under = hn::Or(acc_under, hn::VecFromMask(d, under_lane));
    auto ok = hn::Or(ok_normal, zero);
    if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
      const auto inf32 = hn::Set(d, 0x7F800000u);
      const auto nan = hn::Gt(mag, inf32), inf = hn::Eq(mag, inf32);
      hn::Vec<decltype(d)> nanres = hn::Set(d, nan_const);
      if (nan_ieee) {
        if constexpr (Out::has_inf)
          nanres = hn::Or(hn::Or(osign, hn::Set(d, std::uint32_t(Out::exp_mask | Out::quiet_bit))),
                          hn::And(hn::ShiftRight<base>(mag), hn::Set(d, std::uint32_t(Out::frac_mask))));
        else
          nanres = hn::Or(osign, hn::Set(d, std::uint32_t(Out::inf_bits)));
      }
      res = hn::IfThenElse(
          nan, nanres,
          hn::IfThenElse(inf, hn::IfThenElse(sneg, hn::Set(d, inf_neg), hn::Set(d, inf_pos)), res));
      acc_snan = hn::Or(acc_snan, hn::IfThenElseZero(nan, hn::Not(x)));
      acc_inf = hn::Or(acc_inf, hn::VecFromMask(d, inf));
      ok = hn::Or(ok, hn::Or(nan, inf));
    }
    if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
      HWY_ALIGN std::uint32_t tr[hn::MaxLanes(d)], tok[hn::MaxLanes(d)];
      hn::Store(res, d, tr);
      hn::Store(hn::VecFromMask(d, ok), d, tok);
      for (std::size_t j = 0; j < N; ++j) {
        if (tok[j]) continue;
        const result<Out> s = detail::scalar_convert<Out>(in[i + j], a, i + j);
        tr[j] = s.value.bits;
        flags |= s.flags;
      }
      res = hn::Load(d, tr);
    }
    hn::StoreU(hn::DemoteTo(dn, hn::BitCast(di, res)), dn, out + i);
  }
  if (!hn::AllTrue(d, hn::Eq(acc_inexact, hn::Zero(d)))) flags |= flag::inexact;
  if (!hn::AllTrue(d, hn::Eq(acc_over, hn::Zero(d)))) flags |= flag::overflow | flag::inexact;
  if (!hn::AllTrue(d, hn::Eq(acc_under, hn::Zero(d)))) flags |= flag::underflow | flag::inexact;
  if (!hn::AllTrue(d, hn::Eq(hn::And(acc_snan, hn::Set(d, 0x00400000u)), hn::Zero(d))))
    flags |= flag::invalid;
  if (!hn::AllTrue(d, hn::Eq(acc_inf, hn::Zero(d)))) flags |= inf_flags;
  return flags | narrow_tail<Out>(in, out, i, n, a);
}

// The exported narrowings: the kernel for the run-time mode.
template <class Out>
std::uint8_t narrow(const std::uint32_t *in, typename Out::storage *out, std::size_t n, const args &a) {
  return with_fixed_mode(a.e.mode, [&](auto m) -> std::uint8_t {
    if constexpr (!lane_mode<decltype(m)::value>)
      return narrow_tail<Out>(in, out, 0, n, a);
    else if constexpr (Out::exp_bits == binary32::exp_bits)
      return narrow_same_range<Out, decltype(m)::value>(in, out, n, a);
    else
      return narrow_small<Out, decltype(m)::value>(in, out, n, a);
  });
}
std::uint8_t f32_to_bf16(const std::uint32_t *in, std::uint16_t *out, std::size_t n, const args &a) {
  return narrow<bfloat16>(in, out, n, a);
}
std::uint8_t f32_to_tf32(const std::uint32_t *in, std::uint32_t *out, std::size_t n, const args &a) {
  return narrow<tensorfloat32>(in, out, n, a);
}
std::uint8_t f32_to_f16(const std::uint32_t *in, std::uint16_t *out, std::size_t n, const args &a) {
  return narrow<binary16>(in, out, n, a);
}
std::uint8_t f32_to_e5m2(const std::uint32_t *in, std::uint8_t *out, std::size_t n, const args &a) {
  return narrow<float8_e5m2>(in, out, n, a);
}
std::uint8_t f32_to_e4m3(const std::uint32_t *in, std::uint8_t *out, std::size_t n, const args &a) {
  return narrow<float8_e4m3>(in, out, n, a);
}

// ---------------------------------------------------------------------------
// fp16 / e5m2 / e4m3 -> fp32: exact. Normal lanes rebias the exponent; subnormal lanes
// convert the fraction to float and scale by 2^(emin - M) (both exact); zero and Inf keep
// their sign; NaN lanes take the policy's NaN (ieee: the payload shifted up, quiet bit set;
// invalid for a signaling one; the fn formats' one NaN has none). Subnormal inputs are read
// as signed zeros under inputs_as_zero; they are normal in fp32, so flush_outputs leaves them.
template <class In>
std::uint8_t widen_small(const typename In::storage *HWY_RESTRICT in, std::uint32_t *HWY_RESTRICT out,
                         std::size_t n, const env &e) {
  constexpr int M = In::frac_bits;
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToFloat<decltype(d)> df;
  const hn::Rebind<typename In::storage, decltype(d)> dn;
  const std::size_t N = hn::Lanes(d);
  const bool nan_ieee = e.nan == nan_policy::ieee;
  const auto nan_const = hn::Set(d, std::uint32_t(bf16emu::detail::default_nan<binary32>(e, 0).value.bits));
  const bool daz =
      (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const auto absn = hn::Set(d, std::uint32_t(In::abs_mask));
  const auto expn = hn::Set(d, std::uint32_t(In::exp_mask));
  const auto scale = hn::Set(df, 1.0f / float(1u << (M - In::emin)));
  auto acc_snan = hn::Zero(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::PromoteTo(d, hn::LoadU(dn, in + i));
    const auto mag = hn::And(v, absn);
    const auto sign = hn::ShiftLeft<31>(hn::ShiftRight<In::width - 1>(v));
    const auto normal = hn::ShiftLeft<23 - M>(hn::Add(mag, hn::Set(d, std::uint32_t(127 - In::bias) << M)));
    const auto sub_val = hn::BitCast(d, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), scale));
    const auto is_sub = hn::Lt(mag, hn::Set(d, 1u << M));
    auto res = hn::IfThenElse(is_sub, daz ? hn::Zero(d) : sub_val, normal);
    if constexpr (In::has_inf) {
      const auto special = hn::Not(hn::Lt(mag, expn));
      const auto nan = hn::Gt(mag, expn);
      const auto payload = hn::ShiftLeft<23 - M>(hn::And(mag, hn::Set(d, std::uint32_t(In::frac_mask))));
      const auto nanres = nan_ieee ? hn::Or(hn::Set(d, 0x7FC00000u), payload) : nan_const;
      res = hn::IfThenElse(special, hn::IfThenElse(nan, nanres, hn::Set(d, 0x7F800000u)), res);
      acc_snan =
          hn::Or(acc_snan, hn::IfThenElseZero(nan, hn::Xor(v, hn::Set(d, std::uint32_t(In::quiet_bit)))));
      const auto signed_res = hn::Or(res, sign);
      res = nan_ieee ? signed_res : hn::IfThenElse(nan, res, signed_res);
    } else {
      const auto nan = hn::Eq(mag, absn);
      const auto nanres =
          nan_ieee ? hn::Set(d, 0x7FC00000u | (std::uint32_t(In::frac_mask) << (23 - M))) : nan_const;
      res = hn::IfThenElse(nan, nanres, res);
      const auto signed_res = hn::Or(res, sign);
      res = nan_ieee ? signed_res : hn::IfThenElse(nan, res, signed_res);
    }
    hn::StoreU(res, d, out + i);
  }
  std::uint8_t flags = 0;
  if (!hn::AllTrue(d, hn::Eq(hn::And(acc_snan, hn::Set(d, std::uint32_t(In::quiet_bit))), hn::Zero(d))))
    flags |= flag::invalid;
  return flags | widen_tail<In>(in, out, i, n, e);
}

// The exported widenings.
template <class In>
std::uint8_t widen(const typename In::storage *in, std::uint32_t *out, std::size_t n, const env &e) {
  if constexpr (In::exp_bits == binary32::exp_bits)
    return widen_same_range<In>(in, out, n, e);
  else
    return widen_small<In>(in, out, n, e);
}
std::uint8_t bf16_to_f32(const std::uint16_t *in, std::uint32_t *out, std::size_t n, const env &e) {
  return widen<bfloat16>(in, out, n, e);
}
std::uint8_t tf32_to_f32(const std::uint32_t *in, std::uint32_t *out, std::size_t n, const env &e) {
  return widen<tensorfloat32>(in, out, n, e);
}
std::uint8_t f16_to_f32(const std::uint16_t *in, std::uint32_t *out, std::size_t n, const env &e) {
  return widen<binary16>(in, out, n, e);
}
std::uint8_t e5m2_to_f32(const std::uint8_t *in, std::uint32_t *out, std::size_t n, const env &e) {
  return widen<float8_e5m2>(in, out, n, e);
}
std::uint8_t e4m3_to_f32(const std::uint8_t *in, std::uint32_t *out, std::size_t n, const env &e) {
  return widen<float8_e4m3>(in, out, n, e);
}

// ---------------------------------------------------------------------------
// bf16 add / sub / mul. Per lane the exact result goes into a cut window at the bf16 quantum
// (kept, guard, round, sticky and, for stochastic rounding, the 32 bits below the cut), then
// the shared rule above rounds it and the carry runs into the exponent field:
//   mul: the product of two 8-bit significands has at most 16 bits, so the native fp32
//        product is exact whenever it is a normal number (or Inf: exact product >= 2^128,
//        an overflow in every mode); the window is that product.
//   add: with exponent difference d <= 15 the native fp32 sum is exact (d + 9 bits); the
//        window is that sum. With d >= 16 the smaller operand lies below 2^-15 bf16 ulps of
//        the larger: the window is the larger operand plus a sticky bit (same signs), or the
//        larger minus one unit with guard = round = sticky = 1 (opposite signs; the unit is the
//        one below, half as large when the larger is a power of two); the stochastic bits are
//        the smaller operand's significand shifted to that unit.
// Subnormal operands of add/sub are windowed too (exponent field 0 counts as 1, no hidden
// bit). Scalar lanes: a subnormal operand of mul (or of add/sub when inputs are read as zero:
// those, zeros, Inf and NaN operands of add/sub are settled by the special-operand block); a
// sum or product that is zero or below 2^-126 (tiny).
// Special operands of add/sub settled in vector form, as add_impl and special.hpp decide them:
// a NaN operand (the first NaN, by policy; invalid for a signaling one), an infinity
// (Inf - Inf: the default NaN, invalid), a zero with a zero or normal other operand (the
// zero-sum sign rule; x + 0 = x, exact). fa, fb: the widened operands (fb negated for sub),
// b16: b as stored (a NaN's payload); res and ok are updated for those lanes.
template <rm Mode, class V, class V16, class M>
HWY_INLINE void add_specials(V fa, V fb, V16 b16, bool daz, bool nan_ieee, V default_nan, V &acc_invalid,
                             V &res, M &ok) {
  const hn::DFromV<V> d;
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto one = hn::Set(d, 1u);
  const auto min_normal = hn::Set(d, 0x00800000u);
  const auto normal_span = hn::Set(d, 0x7F000000u);
  const auto ma = hn::And(fa, abs), mb = hn::And(fb, abs);
  const auto neg_lanes = [](V x, V y) { return hn::ShiftRight<31>(hn::Xor(x, y)); };
  const auto inf = hn::Set(d, 0x7F800000u);
  const auto nan_a = hn::Gt(ma, inf), nan_b = hn::Gt(mb, inf);
  const auto inf_a = hn::Eq(ma, inf), inf_b = hn::Eq(mb, inf);
  const auto zero_a = daz ? hn::Lt(ma, min_normal) : hn::Eq(ma, hn::Zero(d));
  const auto zero_b = daz ? hn::Lt(mb, min_normal) : hn::Eq(mb, hn::Zero(d));
  const auto normal_a = hn::Lt(hn::Sub(ma, min_normal), normal_span);
  const auto normal_b = hn::Lt(hn::Sub(mb, min_normal), normal_span);
  const auto quiet = hn::Set(d, 0x00400000u);
  acc_invalid = hn::Or(acc_invalid, hn::VecFromMask(d, hn::Or(hn::AndNot(hn::TestBit(fa, quiet), nan_a),
                                                              hn::AndNot(hn::TestBit(fb, quiet), nan_b))));
  const auto fb_orig = hn::ShiftLeft<16>(hn::PromoteTo(d, b16));
  const auto nan_res = nan_ieee
                           ? hn::Or(hn::ShiftRight<16>(hn::IfThenElse(nan_a, fa, fb_orig)), hn::Set(d, 0x40u))
                           : default_nan;
  const auto opposite = hn::Eq(neg_lanes(fa, fb), one);
  const auto inf_inf = hn::And(hn::And(inf_a, inf_b), opposite);
  acc_invalid = hn::Or(acc_invalid, hn::VecFromMask(d, hn::AndNot(hn::Or(nan_a, nan_b), inf_inf)));
  const auto inf_res =
      hn::IfThenElse(inf_inf, default_nan, hn::ShiftRight<16>(hn::IfThenElse(inf_a, fa, fb)));
  // Both zero: the common sign, or (opposite signs) -0 only when rounding downward.
  const auto zero_sign = hn::IfThenElse(opposite, hn::Set(d, Mode == rm::downward ? 0x8000u : 0u),
                                        hn::ShiftRight<16>(hn::And(fa, hn::Set(d, 0x80000000u))));
  const auto zero_res = hn::IfThenElse(zero_a, hn::IfThenElse(zero_b, zero_sign, hn::ShiftRight<16>(fb)),
                                       hn::ShiftRight<16>(fa));
  const auto any_nan = hn::Or(nan_a, nan_b), any_inf = hn::Or(inf_a, inf_b);
  const auto zero_ok = hn::Or(hn::And(zero_a, hn::Or(zero_b, normal_b)), hn::And(zero_b, normal_a));
  res = hn::IfThenElse(any_nan, nan_res,
                       hn::IfThenElse(any_inf, inf_res, hn::IfThenElse(zero_ok, zero_res, res)));
  ok = hn::Or(ok, hn::Or(any_nan, hn::Or(any_inf, zero_ok)));
}

enum class bop { add, sub, mul, fma };

template <bop Op, rm Mode>
std::uint8_t bf16_arith(const std::uint16_t *pa, const std::uint16_t *pb, std::uint16_t *out, std::size_t n,
                        const args &a) {
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToFloat<decltype(d)> df;
  const hn::Rebind<std::uint16_t, decltype(d)> d16;
  const std::size_t N = hn::Lanes(d);
  const env &e = a.e;
  const std::uint32_t sat_pos = std::uint32_t(
      bf16emu::detail::overflow_to_inf(false, e) ? bfloat16::inf_bits : bfloat16::max_finite_bits);
  const std::uint32_t sat_neg =
      0x8000u | std::uint32_t(bf16emu::detail::overflow_to_inf(true, e) ? bfloat16::inf_bits
                                                                        : bfloat16::max_finite_bits);
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto one = hn::Set(d, 1u);
  const auto min_normal = hn::Set(d, 0x00800000u);
  const auto normal_span = hn::Set(d, 0x7F000000u);
  const auto finite_span = hn::Set(d, 0x7F7FFFFFu);
  auto acc_inexact = hn::Zero(d), acc_over = hn::Zero(d);
  random_lanes<decltype(d)> rnd(d, a);
  const auto fixed_random = hn::Set(d, e.random);
  std::uint8_t flags = 0;
  const bool daz =
      (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const bool nan_ieee = e.nan == nan_policy::ieee;
  const auto default_nan = hn::Set(d, std::uint32_t(bf16emu::detail::default_nan<bfloat16>(e, 0).value.bits));
  auto acc_invalid = hn::Zero(d);
  const auto neg_lanes = [](auto x, auto y) {
    return hn::ShiftRight<31>(hn::Xor(x, y));
  }; // 1: opposite signs
  // The window of an exact fp32 magnitude m (normal, or Inf for an overflow) at the bf16 cut.
  const auto window = [&](auto m, auto &kept, auto &g, auto &r, auto &st, auto &frac32) {
    kept = hn::ShiftRight<16>(m);
    g = hn::And(hn::ShiftRight<15>(m), one);
    r = hn::And(hn::ShiftRight<14>(m), one);
    st = hn::ShiftRight<14>(hn::Add(hn::And(m, hn::Set(d, 0x3FFFu)), hn::Set(d, 0x3FFFu)));
    frac32 = hn::ShiftLeft<16>(m);
  };
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto a16 = hn::LoadU(d16, pa + i), b16 = hn::LoadU(d16, pb + i);
    const auto fa = hn::ShiftLeft<16>(hn::PromoteTo(d, a16));
    auto fb = hn::ShiftLeft<16>(hn::PromoteTo(d, b16));
    if constexpr (Op == bop::sub) fb = hn::Xor(fb, hn::Set(d, 0x80000000u));
    const auto ma = hn::And(fa, abs), mb = hn::And(fb, abs);
    // Operands the window handles: normal ones, and for add/sub also subnormal ones (unless
    // read as zero): a subnormal sits on the grid of 2^-126's binade, exactly as fp32 holds it.
    auto ok = Op != bop::mul && !daz
                  ? hn::And(hn::Lt(hn::Sub(ma, one), finite_span), hn::Lt(hn::Sub(mb, one), finite_span))
                  : hn::And(hn::Lt(hn::Sub(ma, min_normal), normal_span),
                            hn::Lt(hn::Sub(mb, min_normal), normal_span));
    hn::Vec<decltype(d)> kept, g, r, st, frac32, sign;
    if constexpr (Op == bop::mul) {
      const auto p = hn::BitCast(d, hn::Mul(hn::BitCast(df, fa), hn::BitCast(df, fb)));
      const auto mp = hn::And(p, abs);
      ok = hn::And(ok, hn::Not(hn::Lt(mp, min_normal)));
      window(mp, kept, g, r, st, frac32);
      sign = hn::ShiftRight<31>(p);
    } else {
      // Near: the exact native sum.
      const auto s = hn::BitCast(d, hn::Add(hn::BitCast(df, fa), hn::BitCast(df, fb)));
      const auto ms = hn::And(s, abs);
      window(ms, kept, g, r, st, frac32);
      sign = hn::ShiftRight<31>(s);
      // Exponent gap, a subnormal's exponent field 0 counting as 1 (its binade's scale).
      const auto ea = hn::Max(hn::ShiftRight<23>(ma), one), eb = hn::Max(hn::ShiftRight<23>(mb), one);
      const auto dexp = hn::BitCast(d, hn::Abs(hn::BitCast(di, hn::Sub(ea, eb))));
      const auto near = hn::Lt(dexp, hn::Set(d, 16u));
      ok = hn::And(ok, hn::Or(hn::Not(near), hn::Not(hn::Lt(ms, min_normal))));
      // Far: the larger operand and the sign of the tail.
      const auto b_big = hn::Lt(ma, mb);
      const auto big = hn::IfThenElse(b_big, fb, fa);
      const auto neg = neg_lanes(fa, fb);
      const auto kb = hn::ShiftRight<16>(hn::And(big, abs));
      kept = hn::IfThenElse(near, kept, hn::Sub(kb, neg));
      g = hn::IfThenElse(near, g, neg);
      r = hn::IfThenElse(near, r, neg);
      st = hn::IfThenElse(near, st, one);
      sign = hn::IfThenElse(near, sign, hn::ShiftRight<31>(big));
      if constexpr (Mode == rm::stochastic) {
        // t = small significand * 2^-d' units (d' = d, or d - 1 below a power of two); the
        // bits below the cut are floor(t * 2^32) (same signs) or 2^32 - ceil(t * 2^32).
        const auto small = hn::IfThenElse(b_big, fa, fb);
        const auto small_mag = hn::And(small, abs); // hidden bit only for a normal operand
        const auto ssig = hn::Or(hn::And(hn::ShiftRight<16>(small_mag), hn::Set(d, 0x7Fu)),
                                 hn::IfThenZeroElse(hn::Lt(small_mag, min_normal), hn::Set(d, 0x80u)));
        const auto pow2 = hn::VecFromMask(d, hn::Eq(hn::And(kb, hn::Set(d, 0x7Fu)), hn::Zero(d)));
        const auto dd = hn::Sub(dexp, hn::And(hn::And(pow2, neg), one));
        const auto left = hn::Lt(dd, hn::Set(d, 33u));
        // Shift counts stay below 32 in every lane (near lanes too, whose result is not used):
        // the SCALAR target shifts in C++, where a count of 32 is undefined.
        const auto lc = hn::IfThenElseZero(left, hn::Min(hn::Sub(hn::Set(d, 32u), dd), hn::Set(d, 31u)));
        const auto rc = hn::IfThenZeroElse(left, hn::Min(hn::Sub(dd, hn::Set(d, 32u)), hn::Set(d, 31u)));
        const auto t32 = hn::IfThenElse(left, hn::Shl(ssig, lc), hn::Shr(ssig, rc));
        const auto lost = hn::Sub(ssig, hn::Shl(hn::Shr(ssig, rc), rc)); // bits shifted out (0 when left)
        const auto ceil = hn::Add(t32, hn::IfThenZeroElse(hn::Eq(lost, hn::Zero(d)), one));
        const auto frac_far = hn::IfThenElse(hn::Eq(neg, one), hn::Sub(hn::Zero(d), ceil), t32);
        frac32 = hn::IfThenElse(near, frac32, frac_far);
      }
    }
    const auto random = Mode == rm::stochastic && a.stream ? rnd.next(d) : fixed_random;
    const auto inexact = hn::Or(hn::Or(g, r), st);
    const auto up = rounds_up_lanes<Mode>(kept, g, r, st, sign, frac32, random);
    const auto rounded = hn::Add(kept, hn::And(up, inexact));
    const auto over = hn::Gt(rounded, hn::Set(d, std::uint32_t(bfloat16::max_finite_bits)));
    const auto sneg = hn::Eq(sign, one);
    auto res = hn::IfThenElse(over, hn::IfThenElse(sneg, hn::Set(d, sat_neg), hn::Set(d, sat_pos)),
                              hn::Or(hn::ShiftLeft<15>(sign), rounded));
    acc_inexact = hn::Or(acc_inexact, hn::IfThenElseZero(ok, inexact));
    acc_over = hn::Or(acc_over, hn::VecFromMask(d, hn::And(ok, over)));
    if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
      if constexpr (Op != bop::mul) {
        add_specials<Mode>(fa, fb, b16, daz, nan_ieee, default_nan, acc_invalid, res, ok);
      }
    }
    if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
      HWY_ALIGN std::uint32_t tr[hn::MaxLanes(d)], tok[hn::MaxLanes(d)];
      HWY_ALIGN std::uint16_t ta[hn::MaxLanes(d)], tb[hn::MaxLanes(d)];
      hn::Store(res, d, tr);
      hn::Store(hn::VecFromMask(d, ok), d, tok);
      hn::Store(a16, d16, ta);
      hn::Store(b16, d16, tb);
      for (std::size_t j = 0; j < N; ++j) {
        if (tok[j]) continue;
        const result<bfloat16> s = detail::scalar_arith(detail::arith_op(Op), ta[j], tb[j], a, i + j);
        tr[j] = s.value.bits;
        flags |= s.flags;
      }
      res = hn::Load(d, tr);
    }
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, res)), d16, out + i);
  }
  if (!hn::AllTrue(d, hn::Eq(acc_inexact, hn::Zero(d)))) flags |= flag::inexact;
  if (!hn::AllTrue(d, hn::Eq(acc_over, hn::Zero(d)))) flags |= flag::overflow | flag::inexact;
  if (!hn::AllTrue(d, hn::Eq(acc_invalid, hn::Zero(d)))) flags |= flag::invalid;
  for (; i < n; ++i) {
    const result<bfloat16> s = detail::scalar_arith(detail::arith_op(Op), pa[i], pb[i], a, i);
    out[i] = s.value.bits;
    flags |= s.flags;
  }
  return flags;
}

// ---------------------------------------------------------------------------
// bf16 add / sub / mul / fma through a round-to-odd fp32 intermediate. The operands widen to
// fp32 exactly. mul: the product of two 8-bit significands is exact in fp32 when it is
// normal. add / sub / fma: s = x + y in native fp32 (x = a, or the exact product a * b for
// fma; y = b, -b or c), and its exact error t by TwoSum (no overflow: s is finite). When t != 0
// and s's last bit is 0, s moves one ulp toward the exact value (bits + 1 when t has s's sign,
// else - 1; below a power of two the - 1 lands on the odd top of the binade below): that is
// the exact sum rounded to odd at 24 bits. As 24 >= 2 * 8 + 2, rounding it once more to bf16
// gives the correctly rounded bf16 result in every deterministic mode, and it is inexact
// exactly when the exact sum is (the odd bit carries the sticky). Not in stochastic rounding,
// whose rule reads 32 bits below the cut: there only mul (an exact product) comes here. The
// second rounding is narrow_lanes, the fp32 -> bf16 kernel's own (so overflow, saturation
// and inexact are the narrowing's). Lanes settled here: s (and for fma the product) normal,
// and under inputs-as-zero no subnormal operand. Every other lane (a NaN, Inf, zero or tiny
// result, an inexact product) is the scalar core's. Only when args::host_fp.
template <bop Op, rm Mode>
std::uint8_t bf16_odd(const std::uint16_t *pa, const std::uint16_t *pb, const std::uint16_t *pc,
                      std::uint16_t *out, std::size_t n, const args &a) {
  static_assert(Op == bop::mul || Mode != rm::stochastic, "to-odd keeps 24 bits, stochastic reads 40");
  narrow_lanes<bfloat16, Mode> nl(a);
  const auto d = nl.d;
  const auto di = nl.di;
  const hn::RebindToFloat<decltype(d)> df;
  const hn::Rebind<std::uint16_t, decltype(d)> d16;
  const std::size_t N = hn::Lanes(d);
  const bool daz =
      (static_cast<unsigned>(a.e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto one = hn::Set(d, 1u);
  const auto min_normal = hn::Set(d, 0x00800000u);
  const auto normal_span = hn::Set(d, 0x7F000000u);
  const auto normal = [&](auto v) { return hn::Lt(hn::Sub(hn::And(v, abs), min_normal), normal_span); };
  const auto subnormal = [&](auto v) {
    return hn::Lt(hn::Sub(hn::And(v, abs), one), hn::Set(d, 0x007FFFFFu));
  };
  const auto widen = [&](const std::uint16_t *p) {
    return hn::ShiftLeft<16>(hn::PromoteTo(d, hn::LoadU(d16, p)));
  };
  const auto f = [&](auto v) { return hn::BitCast(df, v); };
  const bool nan_ieee = a.e.nan == nan_policy::ieee;
  const auto default_nan =
      hn::Set(d, std::uint32_t(bf16emu::detail::default_nan<bfloat16>(a.e, 0).value.bits));
  const auto inf = hn::Set(d, 0x7F800000u);
  auto acc_invalid = hn::Zero(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto fa = widen(pa + i);
    auto fb = widen(pb + i);
    if constexpr (Op == bop::sub) fb = hn::Xor(fb, hn::Set(d, 0x80000000u));
    hn::Vec<decltype(d)> s;
    hn::Mask<decltype(d)> ok, over = hn::FirstN(d, 0);
    if constexpr (Op == bop::mul) {
      s = hn::BitCast(d, hn::Mul(f(fa), f(fb)));
      ok = normal(s);
      // An Inf product of finite operands: the exact product is at least 2^128, an overflow in
      // every mode (the overflow result by narrow_lanes' saturation rule).
      over = hn::And(hn::Eq(hn::And(s, abs), inf),
                     hn::And(hn::Lt(hn::And(fa, abs), inf), hn::Lt(hn::And(fb, abs), inf)));
    } else {
      hn::Vec<decltype(d)> x = fa, y = fb;
      if constexpr (Op == bop::fma) {
        x = hn::BitCast(d, hn::Mul(f(fa), f(fb)));
        y = widen(pc + i);
      }
      const auto sf = hn::Add(f(x), f(y));
      const auto bb = hn::Sub(sf, f(x));
      const auto t = hn::Add(hn::Sub(f(x), hn::Sub(sf, bb)), hn::Sub(f(y), bb));
      s = hn::BitCast(d, sf);
      ok = normal(s);
      if constexpr (Op == bop::fma) ok = hn::And(ok, normal(x));
      const auto even = hn::Eq(hn::And(s, one), hn::Zero(d));
      const auto fix = hn::And(even, hn::RebindMask(d, hn::Ne(t, hn::Zero(df))));
      // +1 when t and s have the same sign, -1 (all ones) otherwise.
      const auto step =
          hn::Or(hn::BitCast(d, hn::BroadcastSignBit(hn::BitCast(di, hn::Xor(hn::BitCast(d, t), s)))), one);
      s = hn::Add(s, hn::IfThenElseZero(fix, step));
    }
    if (daz) {
      auto sub_in = hn::Or(subnormal(fa), subnormal(fb));
      if constexpr (Op == bop::fma) sub_in = hn::Or(sub_in, subnormal(widen(pc + i)));
      ok = hn::AndNot(sub_in, ok);
    }
    const bool all = hn::AllTrue(d, ok);
    const auto sneg = hn::RebindMask(d, hn::Lt(hn::BitCast(di, s), hn::Zero(di)));
    if (HWY_UNLIKELY(!all)) s = hn::IfThenElse(ok, s, hn::Set(d, 0x3F800000u)); // 1.0: exact, no flag
    auto r = nl.round(s, [](std::size_t, std::uint32_t &) { return std::uint8_t(0); });
    if (HWY_UNLIKELY(!all)) {
      if constexpr (Op == bop::mul) {
        r = hn::IfThenElse(over, hn::IfThenElse(sneg, hn::Set(d, nl.sat_neg), hn::Set(d, nl.sat_pos)), r);
        nl.acc_over = hn::Or(nl.acc_over, hn::VecFromMask(d, over));
        ok = hn::Or(ok, over);
      } else if constexpr (Op != bop::fma) {
        add_specials<Mode>(fa, fb, hn::LoadU(d16, pb + i), daz, nan_ieee, default_nan, acc_invalid, r, ok);
      }
    }
    if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
      HWY_ALIGN std::uint32_t tr[hn::MaxLanes(d)], tok[hn::MaxLanes(d)];
      hn::Store(r, d, tr);
      hn::Store(hn::VecFromMask(d, ok), d, tok);
      std::uint8_t flags = 0;
      for (std::size_t j = 0; j < N; ++j) {
        if (tok[j]) continue;
        const result<bfloat16> sr = detail::scalar_arith(detail::arith_op(Op), pa[i + j], pb[i + j], a, i + j,
                                                         Op == bop::fma ? pc[i + j] : std::uint16_t(0));
        tr[j] = sr.value.bits;
        flags |= sr.flags;
      }
      nl.flags |= flags;
      r = hn::Load(d, tr);
    }
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, r)), d16, out + i);
  }
  std::uint8_t flags = nl.finish();
  if (!hn::AllTrue(d, hn::Eq(acc_invalid, hn::Zero(d)))) flags |= flag::invalid;
  for (; i < n; ++i) {
    const result<bfloat16> sr = detail::scalar_arith(detail::arith_op(Op), pa[i], pb[i], a, i,
                                                     Op == bop::fma ? pc[i] : std::uint16_t(0));
    out[i] = sr.value.bits;
    flags |= sr.flags;
  }
  return flags;
}

// The exported bf16 kernels: round-to-odd (bf16_odd) where it applies, else the window kernel
// (bf16_arith) or, for fma, the scalar core per element.
template <bop Op>
std::uint8_t bf16_op(const std::uint16_t *x, const std::uint16_t *y, const std::uint16_t *z,
                     std::uint16_t *out, std::size_t n, const args &a) {
  return with_fixed_mode(a.e.mode, [&](auto m) -> std::uint8_t {
    constexpr rm Mode = decltype(m)::value;
    if constexpr (lane_mode<Mode> && (Op == bop::mul || Mode != rm::stochastic)) {
      if (a.host_fp) return bf16_odd<Op, Mode>(x, y, z, out, n, a);
    }
    if constexpr (Op == bop::fma || !lane_mode<Mode>) {
      std::uint8_t flags = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const result<bfloat16> sr = detail::scalar_arith(detail::arith_op(Op), x[i], y[i], a, i,
                                                         Op == bop::fma ? z[i] : std::uint16_t(0));
        out[i] = sr.value.bits;
        flags |= sr.flags;
      }
      return flags;
    } else {
      return bf16_arith<Op, Mode>(x, y, out, n, a);
    }
  });
}
std::uint8_t bf16_add(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                      const args &a) {
  return bf16_op<bop::add>(x, y, nullptr, out, n, a);
}
std::uint8_t bf16_sub(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                      const args &a) {
  return bf16_op<bop::sub>(x, y, nullptr, out, n, a);
}
std::uint8_t bf16_mul(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                      const args &a) {
  return bf16_op<bop::mul>(x, y, nullptr, out, n, a);
}
std::uint8_t bf16_fma(const std::uint16_t *x, const std::uint16_t *y, const std::uint16_t *z,
                      std::uint16_t *out, std::size_t n, const args &a) {
  return bf16_op<bop::fma>(x, y, z, out, n, a);
}

// ---------------------------------------------------------------------------
// fp16 add / sub / mul: an fp32 value that rounds as the exact result does, then the fp32 ->
// fp16 kernel (narrow_small) in the call's env. The operands widen to fp32 exactly.
//   mul: the product of two 11-bit significands has at most 22 bits and its magnitude lies in
//        [2^-48, 2^32), so the native fp32 product is the exact product.
//   add / sub: s = x + y in native fp32 and its exact error t by TwoSum; when t != 0 and s's
//        last bit is 0, s moves one ulp toward the exact sum (as in bf16_odd): the exact sum
//        rounded to odd at 24 bits. As 24 >= 11 + 2, that value rounds to fp16 as the exact sum
//        does in every deterministic mode, with the same flags: it is inexact at fp16's quantum
//        exactly when the exact sum is (the odd last bit lies below it), it is below 2^-14
//        exactly when the exact sum is (before-rounding tininess; 2^-14 is even), and rounded to
//        11 bits with an unbounded exponent it gives the exact sum's (after-rounding tininess).
//        Stochastic rounding reads 32 bits below the cut: add / sub under it run the scalar core.
// Lanes left to the scalar core: an operand that is zero, Inf or NaN, or subnormal when inputs
// are read as zero; an exact zero sum (its sign depends on the mode); the elements after the
// last whole vector of a block. narrow_small sees 1.0 (exact, no flag) in those lanes. Only
// when args::host_fp.
template <bop Op, rm Mode>
std::uint8_t f16_arith(const std::uint16_t *pa, const std::uint16_t *pb, std::uint16_t *out, std::size_t n,
                       const args &a) {
  static_assert(Op == bop::mul || Mode != rm::stochastic, "to-odd keeps 24 bits, stochastic reads 40");
  const hn::ScalableTag<std::uint32_t> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToFloat<decltype(d)> df;
  const hn::Rebind<std::uint16_t, decltype(d)> d16;
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t block = 1024; // a multiple of every vector's lane count
  const bool daz =
      (static_cast<unsigned>(a.e.subnormal) & static_cast<unsigned>(subnormals::inputs_as_zero)) != 0;
  const auto one = hn::Set(d, 1u);
  const auto abs16 = hn::Set(d, 0x7FFFu);
  // Operands settled here: 1 <= |x| <= max finite (0x7BFF), or 0x400 <= |x| under inputs-as-zero.
  const auto lowest = hn::Set(d, daz ? 0x400u : 1u);
  const auto span = hn::Set(d, 0x7C00u - (daz ? 0x400u : 1u));
  const auto rebias = hn::Set(d, std::uint32_t(127 - 15) << 10);
  const auto scale = hn::Set(df, 1.0f / 16777216.0f); // 2^-24, fp16's subnormal quantum
  const auto f = [&](auto v) { return hn::BitCast(df, v); };
  // fp16 bits (in 32-bit lanes) -> fp32 bits, exact for finite values.
  const auto widen = [&](auto v) {
    const auto mag = hn::And(v, abs16);
    const auto normal = hn::ShiftLeft<13>(hn::Add(mag, rebias));
    const auto sub = hn::BitCast(d, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), scale));
    return hn::Or(hn::IfThenElse(hn::Lt(mag, hn::Set(d, 0x400u)), sub, normal),
                  hn::ShiftLeft<31>(hn::ShiftRight<15>(v)));
  };
  const auto settled = [&](auto v) { return hn::Lt(hn::Sub(hn::And(v, abs16), lowest), span); };
  HWY_ALIGN std::uint32_t mid[block];
  HWY_ALIGN std::uint32_t ok_lanes[block];
  std::uint8_t flags = 0;
  for (std::size_t base = 0; base < n; base += block) {
    const std::size_t m = std::min(block, n - base);
    std::size_t j = 0;
    for (; j + N <= m; j += N) {
      const auto va = hn::PromoteTo(d, hn::LoadU(d16, pa + base + j));
      const auto vb = hn::PromoteTo(d, hn::LoadU(d16, pb + base + j));
      const auto fa = widen(va);
      auto fb = widen(vb);
      if constexpr (Op == bop::sub) fb = hn::Xor(fb, hn::Set(d, 0x80000000u));
      auto ok = hn::And(settled(va), settled(vb));
      hn::Vec<decltype(d)> s;
      if constexpr (Op == bop::mul) {
        s = hn::BitCast(d, hn::Mul(f(fa), f(fb)));
      } else {
        const auto sf = hn::Add(f(fa), f(fb));
        const auto bb = hn::Sub(sf, f(fa));
        const auto t = hn::Add(hn::Sub(f(fa), hn::Sub(sf, bb)), hn::Sub(f(fb), bb));
        s = hn::BitCast(d, sf);
        ok = hn::And(ok, hn::Ne(hn::And(s, hn::Set(d, 0x7FFFFFFFu)), hn::Zero(d)));
        const auto even = hn::Eq(hn::And(s, one), hn::Zero(d));
        const auto fix = hn::And(even, hn::RebindMask(d, hn::Ne(t, hn::Zero(df))));
        // +1 when t and s have the same sign, -1 (all ones) otherwise.
        const auto step =
            hn::Or(hn::BitCast(d, hn::BroadcastSignBit(hn::BitCast(di, hn::Xor(hn::BitCast(d, t), s)))), one);
        s = hn::Add(s, hn::IfThenElseZero(fix, step));
      }
      hn::Store(hn::IfThenElse(ok, s, hn::Set(d, 0x3F800000u)), d, mid + j);
      hn::Store(hn::VecFromMask(d, ok), d, ok_lanes + j);
    }
    for (; j < m; ++j) {
      mid[j] = 0x3F800000u;
      ok_lanes[j] = 0;
    }
    args piece = a;
    piece.offset = a.offset + base;
    flags |= narrow_small<binary16, Mode>(mid, out + base, m, piece);
    for (j = 0; j < m; ++j) {
      if (ok_lanes[j]) continue;
      const result<binary16> r =
          detail::scalar_arith16(detail::arith_op(Op), pa[base + j], pb[base + j], a, base + j);
      out[base + j] = r.value.bits;
      flags |= r.flags;
    }
  }
  return flags;
}

// The exported fp16 kernels: f16_arith where it applies, else the scalar core per element.
template <bop Op>
std::uint8_t f16_op(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                    const args &a) {
  return with_fixed_mode(a.e.mode, [&](auto m) -> std::uint8_t {
    constexpr rm Mode = decltype(m)::value;
    if constexpr (lane_mode<Mode> && (Op == bop::mul || Mode != rm::stochastic)) {
      if (a.host_fp) return f16_arith<Op, Mode>(x, y, out, n, a);
    }
    std::uint8_t flags = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const result<binary16> r = detail::scalar_arith16(detail::arith_op(Op), x[i], y[i], a, i);
      out[i] = r.value.bits;
      flags |= r.flags;
    }
    return flags;
  });
}
std::uint8_t f16_add(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                     const args &a) {
  return f16_op<bop::add>(x, y, out, n, a);
}
std::uint8_t f16_sub(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                     const args &a) {
  return f16_op<bop::sub>(x, y, out, n, a);
}
std::uint8_t f16_mul(const std::uint16_t *x, const std::uint16_t *y, std::uint16_t *out, std::size_t n,
                     const args &a) {
  return f16_op<bop::mul>(x, y, out, n, a);
}

// ---------------------------------------------------------------------------
// dot_n, nearest-even: the W partial sums p[j] (fp32 bit patterns, in and out; W = 16 for
// blocked16, 1 for sequential) take steps p[j] = fma_to<binary32>(a[i], b[i], p[j]) over
// whole chunks of W elements (n a multiple of W). The product of two bf16 significands has
// at most 16 bits, so the native fp32 product of normal operands is exact when it is normal;
// the native sum then rounds the exact p + acc once, to nearest-even: the scalar core's
// result. A lane is settled here when a and b are normal, the product is normal, the partial
// sum is normal or zero and the new sum is normal or zero (no overflow, no tiny result, no
// NaN or Inf: the only flag is inexact, from the exact TwoSum error of the addition). Other
// lanes take the scalar step.
template <std::size_t W>
std::uint8_t dot_even(const std::uint16_t *HWY_RESTRICT pa, const std::uint16_t *HWY_RESTRICT pb,
                      std::size_t n, std::uint32_t *HWY_RESTRICT p, const env &e) {
  const hn::CappedTag<std::uint32_t, W> d;
  const hn::RebindToFloat<decltype(d)> df;
  const hn::Rebind<std::uint16_t, decltype(d)> d16;
  const std::size_t N = hn::Lanes(d);
  const auto abs = hn::Set(d, 0x7FFFFFFFu);
  const auto min_normal = hn::Set(d, 0x00800000u);
  const auto normal_span = hn::Set(d, 0x7F000000u);
  const auto normal = [&](auto m) { return hn::Lt(hn::Sub(m, min_normal), normal_span); };
  const auto normal_or_zero = [&](auto m) { return hn::Or(normal(m), hn::Eq(m, hn::Zero(d))); };
  auto acc_inexact = hn::Zero(d);
  std::uint8_t flags = 0;
  for (std::size_t i = 0; i < n; i += W) {
    for (std::size_t j = 0; j < W; j += N) {
      const auto fa = hn::ShiftLeft<16>(hn::PromoteTo(d, hn::LoadU(d16, pa + i + j)));
      const auto fb = hn::ShiftLeft<16>(hn::PromoteTo(d, hn::LoadU(d16, pb + i + j)));
      const auto acc = hn::LoadU(d, p + j);
      const auto prod = hn::Mul(hn::BitCast(df, fa), hn::BitCast(df, fb));
      const auto facc = hn::BitCast(df, acc);
      const auto sum = hn::Add(prod, facc);
      // TwoSum: the exact error of the addition (no overflow in settled lanes).
      const auto bb = hn::Sub(sum, prod);
      const auto err = hn::Add(hn::Sub(prod, hn::Sub(sum, bb)), hn::Sub(facc, bb));
      const auto s = hn::BitCast(d, sum);
      const auto ok = hn::And(
          hn::And(normal(hn::And(fa, abs)), normal(hn::And(fb, abs))),
          hn::And(hn::And(normal(hn::And(hn::BitCast(d, prod), abs)), normal_or_zero(hn::And(acc, abs))),
                  normal_or_zero(hn::And(s, abs))));
      acc_inexact = hn::Or(acc_inexact, hn::IfThenElseZero(ok, hn::BitCast(d, err)));
      if (HWY_LIKELY(hn::AllTrue(d, ok))) {
        hn::StoreU(s, d, p + j);
        continue;
      }
      HWY_ALIGN std::uint32_t ts[hn::MaxLanes(d)], tok[hn::MaxLanes(d)];
      hn::Store(s, d, ts);
      hn::Store(hn::VecFromMask(d, ok), d, tok);
      for (std::size_t k = 0; k < N; ++k) {
        if (!tok[k]) {
          const result<binary32> r =
              fma_to<binary32>(bf16{pa[i + j + k]}, bf16{pb[i + j + k]}, f32{p[j + k]}, e);
          ts[k] = r.value.bits;
          flags |= r.flags;
        }
      }
      hn::StoreU(hn::Load(d, ts), d, p + j);
    }
  }
  if (!hn::AllTrue(d, hn::Eq(hn::And(acc_inexact, abs), hn::Zero(d)))) flags |= flag::inexact;
  return flags;
}

std::uint8_t dot16_even(const std::uint16_t *a, const std::uint16_t *b, std::size_t n, std::uint32_t *p,
                        const env &e) {
  return dot_even<16>(a, b, n, p, e);
}
std::uint8_t dot1_even(const std::uint16_t *a, const std::uint16_t *b, std::size_t n, std::uint32_t *p,
                       const env &e) {
  return dot_even<1>(a, b, n, p, e);
}

} // namespace bf16emu::bulk::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace bf16emu::bulk {
HWY_EXPORT(f32_to_bf16);
HWY_EXPORT(f32_to_tf32);
HWY_EXPORT(bf16_to_f32);
HWY_EXPORT(tf32_to_f32);
HWY_EXPORT(f32_to_f16);
HWY_EXPORT(f32_to_e5m2);
HWY_EXPORT(f32_to_e4m3);
HWY_EXPORT(f16_to_f32);
HWY_EXPORT(e5m2_to_f32);
HWY_EXPORT(e4m3_to_f32);
HWY_EXPORT(bf16_add);
HWY_EXPORT(bf16_sub);
HWY_EXPORT(bf16_mul);
HWY_EXPORT(bf16_fma);
HWY_EXPORT(f16_add);
HWY_EXPORT(f16_sub);
HWY_EXPORT(f16_mul);
HWY_EXPORT(dot16_even);
HWY_EXPORT(dot1_even);

namespace {

// The kernels run in the host's default float environment: nearest-even, no flush-to-zero,
// no denormals-are-zero, every exception masked (MXCSR 0x1F80 apart from the status bits).
// Several SIMD paths use native fp32 arithmetic (the round-to-odd add/sub/mul/fma, the window
// kernel's exact sums, dot_n, the subnormal widening), so each public entry reads MXCSR once
// and, when the caller's differs, sets the default for the call and restores the caller's
// whole MXCSR (status bits included) on return. Other architectures: the environment is not
// checked, so the round-to-odd kernels stay off (args::host_fp) and the window kernels run.
class host_float_scope {
public:
  host_float_scope() noexcept {
#if defined(__SSE2__) || defined(_M_X64)
    saved_ = _mm_getcsr();
    if ((saved_ & 0xFFC0u) != 0x1F80u) {
      _mm_setcsr(0x1F80u | (saved_ & 0x3Fu));
      changed_ = true;
    }
#endif
  }
  ~host_float_scope() {
#if defined(__SSE2__) || defined(_M_X64)
    if (changed_) _mm_setcsr(saved_);
#endif
  }
  host_float_scope(const host_float_scope &) = delete;
  host_float_scope &operator=(const host_float_scope &) = delete;
  static constexpr bool known_default() noexcept {
#if defined(__SSE2__) || defined(_M_X64)
    return true;
#else
    return false;
#endif
  }

private:
  unsigned saved_ = 0;
  bool changed_ = false;
};

detail::args make_args(const env &e, const random_stream *rng) {
  detail::args a;
  a.e = e;
  a.host_fp = host_float_scope::known_default();
  if (rng && is_stochastic(e.mode)) {
    a.stream = true;
    a.seed = rng->seed;
    a.offset = rng->offset;
  }
  return a;
}

// Runs kernel(first, count, args) over pieces of the array that stay within one block of 2^32
// stream elements (the SIMD random lanes share one key).
template <class Fn> std::uint8_t in_blocks(std::size_t n, const detail::args &a, Fn &&kernel) {
  if (!a.stream) return kernel(std::size_t{0}, n, a);
  std::uint8_t flags = 0;
  std::size_t done = 0;
  while (done < n) {
    detail::args piece = a;
    piece.offset = a.offset + done;
    const std::uint64_t room = (std::uint64_t{1} << 32) - (piece.offset & 0xFFFFFFFFull);
    const std::size_t count = std::size_t(std::min<std::uint64_t>(room, n - done));
    flags |= kernel(done, count, piece);
    done += count;
  }
  return flags;
}

} // namespace

// fp<F> is standard-layout with one member: its array is an array of bit patterns.
std::uint8_t convert_n(const f32 *in, bf16 *out, std::size_t n, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &a) {
    return HWY_DYNAMIC_DISPATCH(f32_to_bf16)(&in[first].bits, &out[first].bits, count, a);
  });
}
std::uint8_t convert_n(const f32 *in, tf32 *out, std::size_t n, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &a) {
    return HWY_DYNAMIC_DISPATCH(f32_to_tf32)(&in[first].bits, &out[first].bits, count, a);
  });
}
std::uint8_t convert_n(const f32 *in, f16 *out, std::size_t n, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &a) {
    return HWY_DYNAMIC_DISPATCH(f32_to_f16)(&in[first].bits, &out[first].bits, count, a);
  });
}
std::uint8_t convert_n(const f32 *in, e4m3 *out, std::size_t n, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &a) {
    return HWY_DYNAMIC_DISPATCH(f32_to_e4m3)(&in[first].bits, &out[first].bits, count, a);
  });
}
std::uint8_t convert_n(const f32 *in, e5m2 *out, std::size_t n, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &a) {
    return HWY_DYNAMIC_DISPATCH(f32_to_e5m2)(&in[first].bits, &out[first].bits, count, a);
  });
}

std::uint8_t convert_n(const bf16 *in, f32 *out, std::size_t n, const env &e) noexcept {
  const host_float_scope scope;
  return n == 0 ? 0 : HWY_DYNAMIC_DISPATCH(bf16_to_f32)(&in[0].bits, &out[0].bits, n, e);
}
std::uint8_t convert_n(const tf32 *in, f32 *out, std::size_t n, const env &e) noexcept {
  const host_float_scope scope;
  return n == 0 ? 0 : HWY_DYNAMIC_DISPATCH(tf32_to_f32)(&in[0].bits, &out[0].bits, n, e);
}
std::uint8_t convert_n(const f16 *in, f32 *out, std::size_t n, const env &e) noexcept {
  const host_float_scope scope;
  return n == 0 ? 0 : HWY_DYNAMIC_DISPATCH(f16_to_f32)(&in[0].bits, &out[0].bits, n, e);
}
std::uint8_t convert_n(const e4m3 *in, f32 *out, std::size_t n, const env &e) noexcept {
  const host_float_scope scope;
  return n == 0 ? 0 : HWY_DYNAMIC_DISPATCH(e4m3_to_f32)(&in[0].bits, &out[0].bits, n, e);
}
std::uint8_t convert_n(const e5m2 *in, f32 *out, std::size_t n, const env &e) noexcept {
  const host_float_scope scope;
  return n == 0 ? 0 : HWY_DYNAMIC_DISPATCH(e5m2_to_f32)(&in[0].bits, &out[0].bits, n, e);
}

std::uint8_t add_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(bf16_add)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}
std::uint8_t sub_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(bf16_sub)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}
std::uint8_t mul_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(bf16_mul)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}
std::uint8_t fma_n(const bf16 *a, const bf16 *b, const bf16 *c, bf16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(bf16_fma)(&a[first].bits, &b[first].bits, &c[first].bits, &out[first].bits,
                                          count, x);
  });
}

std::uint8_t add_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(f16_add)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}
std::uint8_t sub_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(f16_sub)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}
std::uint8_t mul_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e,
                   const random_stream *rng) noexcept {
  const host_float_scope scope;
  if (n == 0) return 0;
  return in_blocks(n, make_args(e, rng), [&](std::size_t first, std::size_t count, const detail::args &x) {
    return HWY_DYNAMIC_DISPATCH(f16_mul)(&a[first].bits, &b[first].bits, &out[first].bits, count, x);
  });
}

result<binary32> dot_n(const bf16 *a, const bf16 *b, std::size_t n, f32 init, dot_order order, const env &e,
                       const random_stream *rng) noexcept {
  const host_float_scope scope;
  const detail::args args = make_args(e, rng);
  std::uint8_t flags = 0;
  if (order == dot_order::sequential) {
    f32 acc = init;
    if (e.mode == round_mode::nearest_even && n) { // random words unused
      flags = HWY_DYNAMIC_DISPATCH(dot1_even)(&a[0].bits, &b[0].bits, n, &acc.bits, e);
      return {acc, flags};
    }
    for (std::size_t i = 0; i < n; ++i) {
      const result<binary32> r = fma_to<binary32>(a[i], b[i], acc, detail::element_env(args, i));
      acc = r.value;
      flags |= r.flags;
    }
    return {acc, flags};
  }
  f32 p[16] = {};
  p[0] = init;
  std::size_t i = 0;
  if (e.mode == round_mode::nearest_even) { // whole chunks of 16 in SIMD (random words unused)
    static_assert(sizeof(f32) == sizeof(std::uint32_t));
    const std::size_t whole = n / 16 * 16;
    if (whole) flags |= HWY_DYNAMIC_DISPATCH(dot16_even)(&a[0].bits, &b[0].bits, whole, &p[0].bits, e);
    i = whole;
  }
  for (; i < n; ++i) {
    const result<binary32> r = fma_to<binary32>(a[i], b[i], p[i % 16], detail::element_env(args, i));
    p[i % 16] = r.value;
    flags |= r.flags;
  }
  std::size_t k = 0;
  for (std::size_t w = 8; w >= 1; w /= 2) {
    for (std::size_t j = 0; j < w; ++j) {
      const result<binary32> r = add(p[j], p[j + w], detail::element_env(args, n + k++));
      p[j] = r.value;
      flags |= r.flags;
    }
  }
  return {p[0], flags};
}

const char *target_name() noexcept {
  // The target HWY_DYNAMIC_DISPATCH uses: the best one both compiled and supported.
  const std::int64_t best = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(best & -best);
}

} // namespace bf16emu::bulk
#endif
