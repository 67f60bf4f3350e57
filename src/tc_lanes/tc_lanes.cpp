// bf16emu::tc_lanes kernel: one copy per SIMD target (Highway's foreach_target re-includes this
// file once per target), chosen at run time by HWY_DYNAMIC_DISPATCH. See tc_lanes.hpp for the
// contract and docs/tensor-cores.md for the design.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tc_lanes/tc_lanes.cpp"
#include <hwy/foreach_target.h> // must come before highway.h

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bf16emu/tc.hpp"
#include "tc_lanes/tc_lanes.hpp"

// Target-independent helpers (compiled once).
#ifndef BF16EMU_TC_LANES_SHARED
#define BF16EMU_TC_LANES_SHARED
namespace bf16emu::tc_lanes::detail {

// Exponent of a zero operand: far below every real one (biased exponents are >= 1), so a zero
// product or a zero C never wins the max search and its shift count exceeds 31 (its significand
// is 0 anyway); two of them still leave emax - e inside int32.
inline constexpr std::int32_t zero_exp = -(1 << 24);

// A block's parameters in the kernel's units. Exponents are "product-biased": a product's is the
// sum of its operands' biased exponents max(field, 1), i.e. its exponent + 2 bias; C's and
// e_zero are moved to the same scale.
struct shape {
  int L = 0;                 // products per block
  int nblk = 0;              // blocks per chain (K padded to the instruction, then to L)
  std::int32_t ez = 0;       // e_zero + 2 bias
  std::int32_t c_off = 0;    // C's biased FP32 exponent max(field, 1) + c_off: product-biased
  std::int32_t base_off = 0; // product-biased emax - base_off = the block lsb's exponent emax - F
  int c_shift = 0;           // F - 23: C's 24-bit significand in units of the block lsb at emax
};

template <class In> bool takes(const tc::block_params &p) noexcept {
  constexpr std::int64_t pmax = (std::int64_t{1} << In::precision) - 1;
  if (!p.valid() || p.out_frac != 23 || p.rounding != tc::out_round::truncate) return false;
  if (p.zeros != tc::zero_exp::e_zero) return false; // MMA-Sim's zero rule: the model's chains
  if (p.F < 2 * In::frac_bits || p.F < 23 || p.F > 30) return false;
  // The products' aligned terms (each < pmax^2 * 2^(F - 2m)) sum inside int32.
  return std::int64_t(p.L) * pmax * pmax * (std::int64_t{1} << (p.F - 2 * In::frac_bits)) <= INT32_MAX;
}

// One operand: product-biased exponent part max(field, 1) (zero_exp for a zero), significand
// with its hidden bit shifted left by `shift`, sign 0 or -1. special: an Inf or NaN.
struct operand {
  std::int32_t e, m, s;
};
template <class In> inline operand decode(std::uint64_t bits, int shift, bool &special) noexcept {
  const int field = int((bits & In::exp_mask) >> In::frac_bits);
  special |= field == In::exp_field_max; // bf16, fp16, tf32: IEEE Inf and NaN
  const std::int32_t s = (bits & In::sign_mask) != 0 ? -1 : 0;
  if ((bits & In::abs_mask) == 0) return {zero_exp, 0, s};
  const std::uint32_t sig = std::uint32_t(bits & In::frac_mask) | (field != 0 ? 1u << In::frac_bits : 0u);
  return {field > 1 ? field : 1, std::int32_t(sig << shift), s};
}

} // namespace bf16emu::tc_lanes::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace bf16emu::tc_lanes::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DI = hn::ScalableTag<std::int32_t>;
using VI = hn::Vec<DI>;
using detail::shape;

// A right-shift count d >= 0 where the shift must give 0 for d > 31: x86's variable shifts do
// (AVX2 and AVX-512 vpsravd fill with the sign, 0 here); elsewhere clamp to 31 (every shifted
// value is below 2^31).
HWY_INLINE VI shift_count(DI di, VI d) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  (void)di;
  return d;
#else
  return hn::Min(d, hn::Set(di, 31));
#endif
}

// The block's output rounding, lane by lane: the FP32 bits of s * 2^base truncated to 23
// fraction bits, +0 for a result that truncates to zero, +-Inf past the range. It mirrors
// tc::detail::round_out<binary32>(s < 0, |s|, base, 23, out_round::truncate) step by step
// (tests/tc_lanes checks the two on every sum width and base range). |s| < 2^31.
HWY_INLINE VI round_fp32(DI di, VI s, VI base) {
  const hn::Rebind<float, DI> df;
  const hn::RebindToUnsigned<DI> du;
  const VI zero = hn::Zero(di);
  const VI mag = hn::Abs(s);
  // 1. top: the position of mag's leading one. The float conversion's exponent E is top, or
  //    top + 1 where it rounded up (in any host rounding mode); mag >> E is 0 exactly then.
  const VI E =
      hn::Max(hn::Sub(hn::ShiftRight<23>(hn::BitCast(di, hn::ConvertTo(df, mag))), hn::Set(di, 127)), zero);
  const VI top = hn::Add(E, hn::VecFromMask(di, hn::Eq((mag >> E), zero)));
  // 2. e = top + base, the exponent of the exact value; q = max(e, emin) - 23 that of the
  //    output's lsb; sh = q - base, the right shift of mag (a left shift when <= 0).
  const VI e = hn::Add(top, base);
  const VI emin = hn::Set(di, -126);
  const VI eq = hn::Max(e, emin);
  const VI sh = hn::Sub(eq, hn::Add(base, hn::Set(di, 23)));
  const VI right = mag >> hn::Min(hn::Max(sh, zero), hn::Set(di, 31));
  const VI left = mag << hn::Max(hn::Neg(sh), zero); // -sh <= 23 - top
  const VI kept = hn::IfThenElse(hn::Gt(sh, zero), right, left);
  // 3. Biased exponent minus one, then the significand with its hidden bit adds the one; a
  //    result past the largest finite value is Inf.
  const VI bem1 = hn::Min(hn::Add(eq, hn::Set(di, 126)), hn::Set(di, 255));
  const auto bits =
      hn::Min(hn::BitCast(du, hn::Add(hn::ShiftLeft<23>(bem1), kept)), hn::Set(du, 0x7f800000u));
  const VI sign = hn::And(s, hn::Set(di, INT32_MIN));
  // 4. A result that truncates to zero is +0.
  return hn::IfThenZeroElse(hn::Eq(kept, zero), hn::Or(hn::BitCast(di, bits), sign));
}

// Blocks [blk0, blk1) of R rows x one vector of columns. apk: the rows' packed operands
// (row r at apk + r * astride; per k: e, m, s); bpk: the columns' (per k: a vector of e, of m,
// of s). cst, fst: per row a vector of C bit patterns (in: the accumulators, out: the results)
// and of fail flags (negative: the element goes to the scalar model).
template <int R>
HWY_INLINE void tile(const shape &sh, const std::int32_t *HWY_RESTRICT apk, std::size_t astride,
                     const std::int32_t *HWY_RESTRICT bpk, int blk0, int blk1, std::int32_t *HWY_RESTRICT cst,
                     std::int32_t *HWY_RESTRICT fst) {
  const DI di;
  const std::size_t NL = hn::Lanes(di);
  const VI zero = hn::Zero(di), one = hn::Set(di, 1), ez = hn::Set(di, sh.ez);
  const VI fmask = hn::Set(di, 0x7fffff), hidden = hn::Set(di, 0x800000), fieldm = hn::Set(di, 0xff);
  const VI absm = hn::Set(di, 0x7fffffff), infb = hn::Set(di, 0x7f800000), imin = hn::Set(di, INT32_MIN);
  const VI coff = hn::Set(di, sh.c_off), boff = hn::Set(di, sh.base_off),
           zexp = hn::Set(di, detail::zero_exp);
  const int L = sh.L;
  VI c[R], fl[R];
  for (int r = 0; r < R; ++r)
    c[r] = hn::Load(di, cst + r * NL), fl[r] = hn::Load(di, fst + r * NL);
  for (int blk = blk0; blk < blk1; ++blk) {
    const std::int32_t *HWY_RESTRICT bk = bpk + std::size_t(blk) * L * 3 * NL;
    const std::int32_t *HWY_RESTRICT ak = apk + std::size_t(blk) * L * 3;
    // C as a term: its significand, product-biased exponent (zero_exp for a zero C), and the
    // block's max exponent, which starts at e_zero: a block whose nonzero terms all lie below
    // e_zero has C = 0, a zero term, so the model takes e_zero there too.
    VI cm[R], ce[R], emax[R];
    for (int r = 0; r < R; ++r) {
      const VI field = hn::And(hn::ShiftRight<23>(c[r]), fieldm);
      cm[r] = hn::Or(hn::And(c[r], fmask), hn::IfThenElseZero(hn::Ne(field, zero), hidden));
      ce[r] = hn::IfThenElse(hn::Eq(hn::And(c[r], absm), zero), zexp, hn::Add(hn::Max(field, one), coff));
      emax[r] = hn::Max(ez, ce[r]);
    }
    // Pass 1: the max exponent over the block's products, per lane.
    for (int k = 0; k < L; ++k) {
      const VI eb = hn::Load(di, bk + std::size_t(k) * 3 * NL);
      for (int r = 0; r < R; ++r)
        emax[r] = hn::Max(emax[r], hn::Add(eb, hn::Set(di, ak[r * astride + k * 3])));
    }
    // Pass 2: each product (its significand already shifted left by F - 2m) shifted right by
    // emax - its exponent (truncation), signed, and summed exactly.
    VI sum[R];
    for (int r = 0; r < R; ++r)
      sum[r] = zero;
    for (int k = 0; k < L; ++k) {
      const std::int32_t *HWY_RESTRICT bv = bk + std::size_t(k) * 3 * NL;
      const VI eb = hn::Load(di, bv), mb = hn::Load(di, bv + NL), sb = hn::Load(di, bv + 2 * NL);
      for (int r = 0; r < R; ++r) {
        const std::int32_t *HWY_RESTRICT a = ak + r * astride + k * 3;
        const VI d = shift_count(di, hn::Sub(emax[r], hn::Add(eb, hn::Set(di, a[0]))));
        const VI t = (hn::Mul(mb, hn::Set(di, a[1])) >> d);
        const VI s = hn::Xor(sb, hn::Set(di, a[2]));
        sum[r] = hn::Add(sum[r], hn::Sub(hn::Xor(t, s), s));
      }
    }
    // C's term, the sum, the output rounding. A sum outside int32 (the products' sum always
    // fits; C can carry it past) or of -2^31, and an Inf result, fail the lane.
    for (int r = 0; r < R; ++r) {
      const VI cs = hn::ShiftRight<31>(c[r]);
      const VI ct0 = hn::ShiftLeftSame(cm[r], sh.c_shift) >> shift_count(di, hn::Sub(emax[r], ce[r]));
      const VI ct = hn::Sub(hn::Xor(ct0, cs), cs);
      const VI s = hn::Add(sum[r], ct);
      const VI ovf = hn::And(hn::Xor(sum[r], s), hn::Xor(ct, s));
      c[r] = round_fp32(di, s, hn::Sub(emax[r], boff));
      const VI inf = hn::VecFromMask(di, hn::Eq(hn::And(c[r], absm), infb));
      fl[r] = hn::Or(hn::Or(fl[r], ovf), hn::Or(inf, hn::VecFromMask(di, hn::Eq(s, imin))));
    }
  }
  for (int r = 0; r < R; ++r)
    hn::Store(c[r], di, cst + r * NL), hn::Store(fl[r], di, fst + r * NL);
}

template <class In> bool run_in(const tc::lanes_call &call) {
  const tc::block_params &p = call.p;
  if (!detail::takes<In>(p) || call.rows <= 0 || call.ncols <= 0 || call.K <= 0) return false;
  const DI di;
  const std::size_t NL = hn::Lanes(di);
  const int K = call.K, L = p.L;
  const int ik = call.instr_k < L ? L : call.instr_k;
  const long padded = (long(K) + ik - 1) / ik * ik;
  shape sh;
  sh.L = L, sh.nblk = int((padded + L - 1) / L);
  sh.ez = p.e_zero + 2 * In::bias, sh.c_off = 2 * In::bias - 127, sh.base_off = 2 * In::bias + p.F;
  sh.c_shift = p.F - 23;
  const std::size_t Kp = std::size_t(sh.nblk) * L, rows = std::size_t(call.rows);
  const fp<In> *A = static_cast<const fp<In> *>(call.a), *B = static_cast<const fp<In> *>(call.b);

  // The rows' operands, decoded once: per row, per k of the padded chain, (e, m, s).
  const std::size_t astride = Kp * 3;
  auto apk = hwy::AllocateAligned<std::int32_t>(rows * astride);
  std::vector<char> row_special(rows, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    bool spec = false;
    std::int32_t *o = apk.get() + i * astride;
    for (std::size_t k = 0; k < Kp; ++k) {
      const detail::operand x = k < std::size_t(K)
                                    ? detail::decode<In>(A[i * call.lda + k * call.sa].bits, 0, spec)
                                    : detail::operand{detail::zero_exp, 0, 0};
      o[3 * k] = x.e, o[3 * k + 1] = x.m, o[3 * k + 2] = x.s;
    }
    row_special[i] = spec;
  }

  // Per tile of NL columns: the columns' operands (per k: NL exponents, significands shifted
  // left by F - 2m, signs), then the rows R at a time, the blocks in chunks that keep the
  // columns' operands in L1.
  auto bpk = hwy::AllocateAligned<std::int32_t>(Kp * 3 * NL);
  auto cst = hwy::AllocateAligned<std::int32_t>(rows * NL);
  auto fst = hwy::AllocateAligned<std::int32_t>(rows * NL);
  std::vector<char> col_special(NL, 0);
  const int mshift = p.F - 2 * In::frac_bits;
  const int chunk = std::max<int>(1, int(12288 / (std::size_t(L) * 12 * NL)));
  constexpr int R = 4;
  for (int j0 = 0; j0 < call.ncols; j0 += int(NL)) {
    const int nc = std::min<int>(int(NL), call.ncols - j0);
    for (std::size_t j = 0; j < NL; ++j) {
      bool spec = false;
      for (std::size_t k = 0; k < Kp; ++k) {
        const detail::operand x =
            int(j) < nc && k < std::size_t(K)
                ? detail::decode<In>(B[(j0 + j) * call.bcol + k * call.sb].bits, mshift, spec)
                : detail::operand{detail::zero_exp, 0, 0};
        std::int32_t *o = bpk.get() + k * 3 * NL + j;
        o[0] = x.e, o[NL] = x.m, o[2 * NL] = x.s;
      }
      col_special[j] = spec;
    }
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < NL; ++j) {
        const std::uint32_t cb = int(j) < nc ? call.c[i * call.ldc + j0 + j] : 0u;
        cst[i * NL + j] = std::int32_t(cb);
        fst[i * NL + j] = row_special[i] || col_special[j] || (cb & 0x7f800000u) == 0x7f800000u ? -1 : 0;
      }
    for (int b0 = 0; b0 < sh.nblk; b0 += chunk) {
      const int b1 = std::min(sh.nblk, b0 + chunk);
      std::size_t i = 0;
      for (; i + R <= rows; i += R)
        tile<R>(sh, apk.get() + i * astride, astride, bpk.get(), b0, b1, cst.get() + i * NL,
                fst.get() + i * NL);
      for (; i < rows; ++i)
        tile<1>(sh, apk.get() + i * astride, astride, bpk.get(), b0, b1, cst.get() + i * NL,
                fst.get() + i * NL);
    }
    // The results; a failed element from the model itself (its C still in place).
    for (std::size_t i = 0; i < rows; ++i)
      for (int j = 0; j < nc; ++j) {
        std::uint32_t &out = call.c[i * call.ldc + j0 + j];
        if (fst[i * NL + std::size_t(j)] >= 0)
          out = std::uint32_t(cst[i * NL + std::size_t(j)]);
        else
          out = tc::dot<In, binary32>(p, call.instr_k, A + i * call.lda, call.sa, B + (j0 + j) * call.bcol,
                                      call.sb, K, f32::from_bits(out))
                    .bits;
      }
  }
  return true;
}

bool run_bf16(const tc::lanes_call &call) { return run_in<bfloat16>(call); }
bool run_fp16(const tc::lanes_call &call) { return run_in<binary16>(call); }
bool run_tf32(const tc::lanes_call &call) { return run_in<tensorfloat32>(call); }

void round_fp32_n(const std::int32_t *sum, const std::int32_t *base, std::uint32_t *out, std::size_t n) {
  const DI di;
  const std::size_t NL = hn::Lanes(di);
  auto s = hwy::AllocateAligned<std::int32_t>(NL), b = hwy::AllocateAligned<std::int32_t>(NL);
  auto o = hwy::AllocateAligned<std::int32_t>(NL);
  for (std::size_t i = 0; i < n; i += NL) {
    const std::size_t m = std::min(NL, n - i);
    for (std::size_t j = 0; j < NL; ++j)
      s[j] = j < m ? sum[i + j] : 0, b[j] = j < m ? base[i + j] : 0;
    hn::Store(round_fp32(di, hn::Load(di, s.get()), hn::Load(di, b.get())), di, o.get());
    for (std::size_t j = 0; j < m; ++j)
      out[i + j] = std::uint32_t(o[j]);
  }
}

} // namespace bf16emu::tc_lanes::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace bf16emu::tc_lanes {
HWY_EXPORT(run_bf16);
HWY_EXPORT(run_fp16);
HWY_EXPORT(run_tf32);
HWY_EXPORT(round_fp32_n);

bool covers(const tc::block_params &p, format_id in) noexcept {
  switch (in) {
  case format_id::bf16: return detail::takes<bfloat16>(p);
  case format_id::fp16: return detail::takes<binary16>(p);
  case format_id::tf32: return detail::takes<tensorfloat32>(p);
  default: return false;
  }
}

bool run(const tc::lanes_call &call) noexcept {
  // The float conversion in the rounding may raise the host's inexact flag: the host status is
  // left as found.
  const unsigned saved = bf16emu::detail::host_fp_status();
  bool done = false;
  switch (call.in) {
  case format_id::bf16: done = HWY_DYNAMIC_DISPATCH(run_bf16)(call); break;
  case format_id::fp16: done = HWY_DYNAMIC_DISPATCH(run_fp16)(call); break;
  case format_id::tf32: done = HWY_DYNAMIC_DISPATCH(run_tf32)(call); break;
  default: break;
  }
  bf16emu::detail::restore_host_fp_status(saved);
  return done;
}

void install() noexcept { tc::lanes_hook.store(&run, std::memory_order_relaxed); }

void round_fp32(const std::int32_t *sum, const std::int32_t *base, std::uint32_t *out,
                std::size_t n) noexcept {
  const unsigned saved = bf16emu::detail::host_fp_status();
  HWY_DYNAMIC_DISPATCH(round_fp32_n)(sum, base, out, n);
  bf16emu::detail::restore_host_fp_status(saved);
}

const char *target_name() noexcept {
  // The target HWY_DYNAMIC_DISPATCH uses: the best one both compiled and supported.
  const std::int64_t best = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(best & -best);
}

} // namespace bf16emu::tc_lanes
#endif
