// bf16emu tensor-core model: Blackwell's mixed-format and block-scaled fused dot products
// (tcgen05.mma kind::f8f6f4, kind::mxf8f6f4, kind::mxf4, kind::mxf4nvf4 on sm100, and the
// mma.sync kind::f8f6f4 / block_scale forms on sm120). docs/tensor-cores.md, section
// "Blackwell tcgen05: f16 accumulation, f8f6f4 and block-scaled kinds", gives the sources.
//
// One fused block takes p.k products a_i*b_i (A and B in different formats), one scale factor
// per p.vec k-elements for each of A and B (UE8M0 or UE4M3; none for the unscaled kinds), and c:
//
//   d = round_out( sum_t trunc_F(term_t) + trunc_F(c) )
//
//   - group == 1 (k32 kinds): every product is a term, a_i*b_i*sa*sb, with exponent
//     ea + eb + esa + esb in the max search (its significand lies in [0,4)); a zero product
//     takes e_zero (as in block.hpp);
//   - group == 16 (k64 fp4 kinds): each run of 16 products is first summed exactly; the term is
//     that sum times the two scales, and its exponent in the max search is esa + esb alone
//     (the scales' exponents; the sum's own magnitude does not enter, and a zero sum still
//     takes part);
//   - c takes its own exponent (format emin for subnormals), e_zero when zero;
//   - trunc_F cuts every term, in sign-magnitude, to a multiple of 2^(emax - F), the sum is
//     exact, and round_out (block.hpp) rounds once into the output format.
// A UE8M0 scale 2^(bits-127) has significand 1; a UE4M3 scale is an e4m3 byte with its sign bit
// ignored (significand 1.mmm, or 0.mmm at exponent -6 when subnormal, so a zero scale has
// exponent -6). A NaN scale (UE8M0 0xFF, UE4M3 0x7F or 0xFF) anywhere in the block, a NaN
// operand or c, Inf*0 (a zero operand or zero scale) or +Inf + -Inf give the output's
// all-ones NaN; otherwise an infinite operand or c gives that Inf. Under zero_exp::mmasim
// (scaled_params::zeros) zero terms and zero factors take MMA-Sim's exponents (block.hpp).
//
// Everything is constexpr, host+device, allocation- and exception-free, 64-bit integers only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bf16emu/core/format.hpp"
#include "bf16emu/tc/arch.hpp"
#include "bf16emu/tc/block.hpp"
#include "bf16emu/tc/presets.hpp"

namespace bf16emu::tc {

// Widest fused block of the scaled kinds (k64 fp4) and the most scale factors per block.
inline constexpr int max_scaled_k = 64;
inline constexpr int max_scales = 4;

enum class scale_kind : std::uint8_t {
  none,  // unscaled (kind::f8f6f4)
  ue8m0, // OCP MX E8M0: 2^(bits - 127), 0xFF NaN
  ue4m3, // NVFP4: e4m3 with the sign bit ignored
};

BF16EMU_CXHD const char *to_string(scale_kind s) noexcept {
  switch (s) {
  case scale_kind::none: return "none";
  case scale_kind::ue8m0: return "ue8m0";
  default: return "ue4m3";
  }
}

struct scaled_params {
  int k = 32;    // products per fused block (the instruction's k), 1..max_scaled_k
  int group = 1; // products summed exactly before alignment: 1 or 16
  int vec = 0;   // k-elements per scale factor (32 or 16); 0 when unscaled
  scale_kind scale = scale_kind::none;
  int F = 25;        // fraction bits kept below emax at alignment
  int e_zero = -133; // exponent of a zero product (group 1) and of a zero c
  int out_frac = 23; // fraction bits of the output significand
  out_round rounding = out_round::truncate;
  zero_exp zeros = zero_exp::e_zero; // zero terms and zero UE4M3 factors (block.hpp, zero_exp)

  BF16EMU_CXHD bool valid() const noexcept {
    const bool scaled = scale != scale_kind::none;
    return k >= 1 && k <= max_scaled_k && group >= 1 && group <= 16 && k % group == 0 &&
           (scaled ? vec >= group && vec % group == 0 && k % vec == 0 && k / vec <= max_scales : vec == 0) &&
           (group == 1 || scaled) && F >= 1 && F <= 48 && out_frac >= 1 && out_frac <= 52;
  }
  // Scale factors per block (0 when unscaled).
  BF16EMU_CXHD int scales_per_block() const noexcept { return scale == scale_kind::none ? 0 : k / vec; }
};

namespace detail {

// A scale factor as an integer significand with `frac` fraction bits at exponent `exp`.
struct scale_value {
  std::uint64_t sig = 1;
  int frac = 0;
  int exp = 0;
  bool nan = false;
};

BF16EMU_CXHD scale_value decode_scale(scale_kind kind, std::uint8_t bits) noexcept {
  if (kind == scale_kind::ue8m0) return {1, 0, int(bits) - 127, bits == 0xFF};
  if (kind == scale_kind::ue4m3) {
    const std::uint8_t m = std::uint8_t(bits & 0x7Fu); // the sign bit is ignored
    const unpacked u = unpack<float8_e4m3>(m);
    return {u.sig, float8_e4m3::frac_bits, u.exp, m == 0x7F};
  }
  return {};
}

// A scale factor's exponent in the max search: its own, except that a zero (UE4M3) factor
// takes mmasim_zero_exp under zero_exp::mmasim (-6, the e4m3 emin, under e_zero).
BF16EMU_CXHD int scale_exp(const scaled_params &p, const scale_value &x) noexcept {
  return x.sig == 0 ? zero_term_exp(p.zeros, x.exp, mmasim_zero_exp) : x.exp;
}

// Is the operand pattern an Inf or NaN? The OCP MX fp6/fp4 formats have neither (block.hpp's
// is_special reads their all-ones magnitude, a finite number, as special).
template <class F> BF16EMU_CXHD bool operand_special(std::uint64_t bits) noexcept {
  if constexpr (!F::has_nan)
    return false;
  else
    return is_special<F>(bits);
}

// Whether an exact sum of 16 products of A x B (in units of its smallest product) fits 40 bits.
template <class A, class B>
inline constexpr bool
    group_fits = (A::emax - A::emin) + (B::emax - B::emin) + A::precision + B::precision + 5 <= 40;

// The NaN/Inf path of a scaled block (taken when an operand, a scale or c is Inf or NaN).
template <class A, class B, class Out>
BF16EMU_CXHD std::uint64_t scaled_special(const scaled_params &p, const fp<A> *a, const fp<B> *b, int n,
                                          const std::uint8_t *sa, const std::uint8_t *sb,
                                          fp<Out> c) noexcept {
  bool nan = c.is_nan(), pinf = c.is_inf() && !c.sign(), ninf = c.is_inf() && c.sign();
  const int ns = p.scales_per_block();
  for (int s = 0; s < ns; ++s)
    nan |= decode_scale(p.scale, sa[s]).nan || decode_scale(p.scale, sb[s]).nan;
  for (int i = 0; i < n; ++i) {
    const fp<A> x = a[i];
    const fp<B> y = b[i];
    if (x.is_nan() || y.is_nan()) {
      nan = true;
    } else if (x.is_inf() || y.is_inf()) {
      const bool zero_scale = ns > 0 && (decode_scale(p.scale, sa[i / p.vec]).sig == 0 ||
                                         decode_scale(p.scale, sb[i / p.vec]).sig == 0);
      if (x.is_zero() || y.is_zero() || zero_scale)
        nan = true; // Inf * 0
      else
        (x.sign() != y.sign() ? ninf : pinf) = true;
    }
  }
  if (nan || (pinf && ninf)) return nan_bits<Out>();
  if (pinf || ninf) return (ninf ? Out::sign_mask : 0) | Out::inf_bits;
  return c.bits; // not reached: the caller saw a special operand
}

} // namespace detail

// One fused block: n <= p.k products a[i]*b[i] (the rest of the k slots are zero products),
// scale factors sa[0 .. k/vec), sb[0 .. k/vec) (unused when unscaled; may then be null), and c.
template <class A, class B, class Out>
BF16EMU_CXHD fp<Out> scaled_block_fdpa(const scaled_params &p, const fp<A> *a, const fp<B> *b, int n,
                                       const std::uint8_t *sa, const std::uint8_t *sb, fp<Out> c) noexcept {
  static_assert(A::precision + B::precision + 8 <= 40, "operand significands too wide for the model");
  if (!p.valid()) return fp<Out>::from_bits(detail::nan_bits<Out>());
  if (n > p.k) n = p.k;
  const int ns = p.scales_per_block();
  bool special = detail::is_special<Out>(c.bits);
  for (int s = 0; s < ns; ++s)
    special |= detail::decode_scale(p.scale, sa[s]).nan || detail::decode_scale(p.scale, sb[s]).nan;
  for (int i = 0; i < n; ++i)
    special |= detail::operand_special<A>(a[i].bits) || detail::operand_special<B>(b[i].bits);
  if (special) return fp<Out>::from_bits(detail::scaled_special<A, B, Out>(p, a, b, n, sa, sb, c));

  // Terms: magnitude T, sign, value T * 2^(x - fr), exponent me in the max search.
  struct term {
    std::uint64_t mag;
    bool neg;
    int x, fr, me;
  };
  term t[max_scaled_k];
  int nt = 0;
  constexpr int none = -(1 << 30);
  int emax = none; // over nonzero terms
  int zmax = none; // over zero terms (zero_exp)
  const detail::scale_value unit{};
  if (p.group == 1) {
    for (int i = 0; i < p.k; ++i) {
      const detail::scale_value xa = ns ? detail::decode_scale(p.scale, sa[i / p.vec]) : unit;
      const detail::scale_value xb = ns ? detail::decode_scale(p.scale, sb[i / p.vec]) : unit;
      const int es = detail::scale_exp(p, xa) + detail::scale_exp(p, xb);
      term &tt = t[nt++];
      if (i >= n) { // a padding product 0 * 0
        tt = {0, false, 0, 0, detail::zero_term_exp(p.zeros, p.e_zero, 2 * mmasim_zero_exp + es)};
        zmax = tt.me > zmax ? tt.me : zmax;
        continue;
      }
      const detail::unpacked ua = detail::unpack<A>(a[i].bits), ub = detail::unpack<B>(b[i].bits);
      const int e = ua.exp + ub.exp + xa.exp + xb.exp;
      tt = {ua.sig * ub.sig * xa.sig * xb.sig, ua.neg != ub.neg, e,
            A::frac_bits + B::frac_bits + xa.frac + xb.frac, e};
      if (tt.mag == 0) {
        tt.me = detail::zero_term_exp(p.zeros, p.e_zero,
                                      detail::zero_factor_exp(ua) + detail::zero_factor_exp(ub) + es);
        zmax = tt.me > zmax ? tt.me : zmax;
      } else if (e > emax) {
        emax = e;
      }
    }
  } else {
    if constexpr (!detail::group_fits<A, B>) {
      return fp<Out>::from_bits(detail::nan_bits<Out>()); // not a hardware combination
    } else {
      for (int g = 0; g < p.k; g += p.group) {
        const detail::scale_value xa = detail::decode_scale(p.scale, sa[g / p.vec]);
        const detail::scale_value xb = detail::decode_scale(p.scale, sb[g / p.vec]);
        std::int64_t s = 0; // in units of 2^(A::emin + B::emin - A::frac_bits - B::frac_bits)
        for (int i = g; i < g + p.group && i < n; ++i) {
          const detail::unpacked ua = detail::unpack<A>(a[i].bits), ub = detail::unpack<B>(b[i].bits);
          const std::int64_t v = std::int64_t((ua.sig * ub.sig) << ((ua.exp - A::emin) + (ub.exp - B::emin)));
          s += ua.neg != ub.neg ? -v : v;
        }
        const std::uint64_t m = s < 0 ? std::uint64_t(-s) : std::uint64_t(s);
        const int me = detail::scale_exp(p, xa) + detail::scale_exp(p, xb);
        t[nt++] = {m * xa.sig * xb.sig, s < 0, A::emin + B::emin + me,
                   A::frac_bits + B::frac_bits + xa.frac + xb.frac, me};
        if (me > emax) emax = me;
      }
    }
  }
  const detail::unpacked uc = detail::unpack<Out>(c.bits);
  if (uc.sig == 0) {
    const int ce = detail::zero_term_exp(p.zeros, p.e_zero, mmasim_zero_exp);
    zmax = ce > zmax ? ce : zmax;
  } else if (uc.exp > emax) {
    emax = uc.exp;
  }
  if (emax == none) return fp<Out>::from_bits(0); // every term is zero: +0
  if (zmax > emax) emax = zmax;
  const int base = emax - p.F;

  std::int64_t sum = 0;
  for (int i = 0; i < nt; ++i) {
    if (t[i].mag == 0) continue;
    const int sh = t[i].x - t[i].fr - base; // left shift of the magnitude onto the block lsb
    const std::uint64_t v = sh >= 0 ? t[i].mag << sh : -sh >= 64 ? 0 : t[i].mag >> -sh;
    sum += t[i].neg ? -std::int64_t(v) : std::int64_t(v);
  }
  sum += detail::c_term<Out>(uc, base, nullptr);
  if (sum == 0) return fp<Out>::from_bits(0);
  return fp<Out>::from_bits(detail::round_out<Out>(
      sum < 0, sum < 0 ? std::uint64_t(-sum) : std::uint64_t(sum), base, p.out_frac, p.rounding));
}

// A chain over K products: blocks of p.k in increasing k, each block's D the next block's C.
// K is padded with zero products to a multiple of p.k; for the scaled kinds the scale arrays
// hold one factor per p.vec elements of the padded K (sa[k / vec]).
template <class A, class B, class Out>
BF16EMU_CXHD fp<Out> scaled_dot(const scaled_params &p, const fp<A> *a, const fp<B> *b, int K,
                                const std::uint8_t *sa, const std::uint8_t *sb, fp<Out> c) noexcept {
  const int ns = p.scales_per_block();
  for (int k0 = 0; k0 < K; k0 += p.k) {
    const int n = K - k0 < p.k ? K - k0 : p.k;
    const std::ptrdiff_t so = ns ? k0 / p.vec : 0;
    c = scaled_block_fdpa<A, B, Out>(p, a + k0, b + k0, n, ns ? sa + so : sa, ns ? sb + so : sb, c);
  }
  return c;
}

// A preset of the mixed-format / block-scaled kinds. a_any / b_any: the f8f6f4 operand set
// (e4m3, e5m2, e3m2, e2m3, e2m1, each of A and B independently) instead of one format.
struct scaled_preset {
  tc::arch arch;
  const char *gpu;
  instr_kind instr;
  const char *kind; // "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"
  bool any_f8f6f4;  // A and B: any of the five f8f6f4 formats; else both e2m1
  format_id out;    // C and D
  const char *ptx;  // the instruction this models
  int m, n;         // shape (k = params.k)
  scaled_params params;
  const char *open; // what the sources leave undecided (nullptr: nothing)
  const char *source;
};

// The operand formats of kind::f8f6f4 / kind::mxf8f6f4 (PTX ISA, tcgen05.mma kinds).
inline constexpr format_id f8f6f4_formats[] = {format_id::e4m3, format_id::e5m2, format_id::e3m2,
                                               format_id::e2m3, format_id::e2m1};

// Calls f(format trait) for an f8f6f4 operand format id (e2m1 for any other id).
template <class Fn> BF16EMU_CXHD decltype(auto) visit_f8f6f4(format_id id, Fn &&f) {
  switch (id) {
  case format_id::e4m3: return f(float8_e4m3{});
  case format_id::e5m2: return f(float8_e5m2{});
  case format_id::e3m2: return f(float6_e3m2{});
  case format_id::e2m3: return f(float6_e2m3{});
  default: return f(float4_e2m1{});
  }
}

// Calls f(A trait, B trait) for the operands of a preset whose B format differs from A's: the
// tcgen05 kind::f16 mixes of fp16 and bf16, else the fp8 / f8f6f4 mixes (visit_f8f6f4).
template <class Fn> BF16EMU_CXHD decltype(auto) visit_mixed_operands(format_id a, format_id b, Fn &&f) {
  if (a == format_id::fp16 && b == format_id::bf16) return f(binary16{}, bfloat16{});
  if (a == format_id::bf16 && b == format_id::fp16) return f(bfloat16{}, binary16{});
  return visit_f8f6f4(a, [&](auto ta) -> decltype(auto) {
    return visit_f8f6f4(b, [&](auto tb) -> decltype(auto) { return f(ta, tb); });
  });
}

namespace detail {
inline constexpr scaled_params bw_f8f6f4{32, 1, 0, scale_kind::none, 25, -133, 23, out_round::truncate};
inline constexpr scaled_params bw_f8f6f4_h{32, 1, 0, scale_kind::none, 25, -133, 10, out_round::nearest_even};
inline constexpr scaled_params bw_mxf8f6f4{32, 1, 32, scale_kind::ue8m0, 25, -133, 23, out_round::truncate};
inline constexpr scaled_params bw_mxf4{64, 16, 32, scale_kind::ue8m0, 35, -133, 23, out_round::truncate};
inline constexpr scaled_params bw_nvf4_e8{64, 16, 16, scale_kind::ue8m0, 35, -133, 23, out_round::truncate};
inline constexpr scaled_params bw_nvf4_e4{64, 16, 16, scale_kind::ue4m3, 35, -133, 23, out_round::truncate};
inline constexpr scaled_params bw_nvf4_e4_v32{64, 16,   32, scale_kind::ue4m3,
                                              35, -133, 23, out_round::truncate};

inline constexpr const char *src_bw_f8f6f4 =
    "MMA-Sim arXiv 2511.10909 (simulator/nv_ptx.py tcgen05mma: 25 fraction bits, the whole k32 one fused "
    "block, f32 RZ / f16 RNE output; e3m2, e2m3 not modelled there: extrapolated); PTX ISA tcgen05.mma kinds";
inline constexpr const char *src_bw_scaled_k32 =
    "MMA-Sim arXiv 2511.10909 (simulator/arithmetic.py nv_fused_dot_add with scale: 25 bits, scale "
    "exponents add to the product exponent); PTX ISA tcgen05.mma block_scale, scale_vec::1X";
inline constexpr const char *src_bw_scaled_k64 =
    "MMA-Sim arXiv 2511.10909 (simulator/arithmetic.py nv_fused_dot_add_with_block_scale: 16-product exact "
    "sums aligned by scale exponents, 35 bits, f32 RZ); PTX ISA block_scale scale_vec::2X / 4X";
inline constexpr const char *src_rtx_nvf4_v32 =
    "MMA-Sim arXiv 2511.10909 (isa/nv_ptx/nv_mma.py: m16n8k64.block32 ue4m3 on RTX Blackwell; "
    "simulator/nv_ptx.py, arithmetic.py nv_fused_dot_add_with_block_scale: the k64 arithmetic of the "
    "other mxf4nvf4 rows, one UE4M3 factor per 32 k-elements)";
inline constexpr const char *open_nvf4_v32 =
    "zero c exponent (e_zero; MMA-Sim -126); zero scale exponent (-6; MMA-Sim -126); the PTX spelling "
    "(scale_vec::2X with ue4m3) is MMA-Sim's block32 and has not been assembled or run here";
inline constexpr const char *open_f8f6f4 =
    "F (25 per MMA-Sim; project notes: B200 fp8 looks like RN of >= 31 bits); e_zero; e3m2/e2m3 extrapolated";
inline constexpr const char *open_k32 = "F (as f8f6f4); e_zero below the scaled products";
inline constexpr const char *open_k64 = "zero c exponent (e_zero; MMA-Sim -126); Inf c (MMA-Sim undefined)";
} // namespace detail

// clang-format off
inline constexpr scaled_preset scaled_presets[] = {
  {arch::sm100, "B200", instr_kind::tcgen05, "f8f6f4", true, format_id::fp32, "tcgen05.mma.cta_group::1.kind::f8f6f4 (f32 acc), k32", 128, 16, detail::bw_f8f6f4, detail::open_f8f6f4, detail::src_bw_f8f6f4},
  {arch::sm100, "B200", instr_kind::tcgen05, "f8f6f4", true, format_id::fp16, "tcgen05.mma.cta_group::1.kind::f8f6f4 (f16 acc), k32", 128, 16, detail::bw_f8f6f4_h, detail::open_f8f6f4, detail::src_bw_f8f6f4},
  {arch::sm100, "B200", instr_kind::tcgen05, "mxf8f6f4", true, format_id::fp32, "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X, k32", 128, 16, detail::bw_mxf8f6f4, detail::open_k32, detail::src_bw_scaled_k32},
  {arch::sm100, "B200", instr_kind::tcgen05, "mxf4", false, format_id::fp32, "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X, k64", 128, 16, detail::bw_mxf4, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm100, "B200", instr_kind::tcgen05, "mxf4nvf4", false, format_id::fp32, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X (ue8m0), k64", 128, 16, detail::bw_nvf4_e8, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm100, "B200", instr_kind::tcgen05, "mxf4nvf4", false, format_id::fp32, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X (ue4m3), k64", 128, 16, detail::bw_nvf4_e4, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "f8f6f4", true, format_id::fp32, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.*.*.f32", 16, 8, detail::bw_f8f6f4, detail::open_f8f6f4, detail::src_bw_f8f6f4},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "f8f6f4", true, format_id::fp16, "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.*.*.f16", 16, 8, detail::bw_f8f6f4_h, detail::open_f8f6f4, detail::src_bw_f8f6f4},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "mxf8f6f4", true, format_id::fp32, "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.*.*.f32.ue8m0", 16, 8, detail::bw_mxf8f6f4, detail::open_k32, detail::src_bw_scaled_k32},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "mxf4", false, format_id::fp32, "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", 16, 8, detail::bw_mxf4, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "mxf4nvf4", false, format_id::fp32, "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0", 16, 8, detail::bw_nvf4_e8, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "mxf4nvf4", false, format_id::fp32, "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3", 16, 8, detail::bw_nvf4_e4, detail::open_k64, detail::src_bw_scaled_k64},
  {arch::sm120, "RTX 50 / RTX PRO", instr_kind::mma, "mxf4nvf4", false, format_id::fp32, "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue4m3", 16, 8, detail::bw_nvf4_e4_v32, detail::open_nvf4_v32, detail::src_rtx_nvf4_v32},
};
// clang-format on

inline constexpr int scaled_preset_count = int(sizeof(scaled_presets) / sizeof(scaled_presets[0]));

// Whether the preset takes (a, b) as its operand formats.
BF16EMU_CXHD bool takes_formats(const scaled_preset &P, format_id a, format_id b) noexcept {
  if (!P.any_f8f6f4) return a == format_id::e2m1 && b == format_id::e2m1;
  bool ia = false, ib = false;
  for (const format_id f : f8f6f4_formats)
    ia |= f == a, ib |= f == b;
  return ia && ib;
}

// The preset for (arch, instruction, kind name, scale kind, vec, output); nullptr if none.
// vec 0 picks the kind's only (or first) scale vector size.
BF16EMU_CXHD const scaled_preset *find_scaled_preset(arch a, instr_kind instr, const char *kind, scale_kind s,
                                                     int vec, format_id out) noexcept {
  for (const scaled_preset &P : scaled_presets)
    if (P.arch == a && P.instr == instr && detail::name_is(kind, P.kind) && P.params.scale == s &&
        (vec == 0 || P.params.vec == vec) && P.out == out)
      return &P;
  return nullptr;
}

} // namespace bf16emu::tc
