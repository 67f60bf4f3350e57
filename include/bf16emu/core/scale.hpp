// bf16emu: the block-scale formats of OCP MX (UE8M0) and NVFP4 (UE4M3), and the MX block
// quantizer. Policies and sources: docs/formats.md.
//
//   UE8M0: 8 exponent bits, bias 127, no sign, no fraction, no zero, no infinity:
//          bits 0..254 stand for 2^(bits - 127) (2^-127 .. 2^127), 0xFF is NaN.
//   UE4M3: an e4m3 pattern read with its sign bit ignored (NVFP4's block scale).
#pragma once

#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu {

struct ue8m0 {
  static constexpr int bias = 127;
  std::uint8_t bits = bias; // 1.0

  static BF16EMU_CXHD ue8m0 from_bits(std::uint64_t b) noexcept { return ue8m0{std::uint8_t(b)}; }
  BF16EMU_CXHD bool is_nan() const noexcept { return bits == 0xFF; }
  // The power of two it stands for (not meaningful for NaN).
  BF16EMU_CXHD int exponent() const noexcept { return int(bits) - bias; }
  friend BF16EMU_CXHD bool operator==(ue8m0 a, ue8m0 b) noexcept { return a.bits == b.bits; }
};

struct ue8m0_result {
  ue8m0 value{};
  std::uint8_t flags = 0;
};

// The exact binary32 value (2^-127 is the binary32 subnormal 0x00400000); NaN gives 0x7FC00000.
BF16EMU_CXHD f32 to_binary32(ue8m0 s) noexcept {
  if (s.is_nan()) return f32::from_bits(0x7FC00000u);
  if (s.bits == 0) return f32::from_bits(0x00400000u);
  return f32::from_bits(std::uint32_t(s.bits) << 23);
}

// x rounded to a power of two in e.mode (one significant bit, the rounding rules of every other
// format), with these UE8M0 rules for what it cannot represent (docs/formats.md):
//   NaN                      -> NaN (invalid for a signaling NaN)
//   negative, -0 excepted    -> NaN, invalid (no sign bit)
//   +-0, or below 2^-127     -> 0x00 = 2^-127, underflow + inexact (no zero)
//   above 2^127 after rounding -> NaN or 2^127 (0xFE) as an e4m3 overflow: NaN where an ieee
//                               format would give Inf, 2^127 under e.saturate; overflow + inexact
//   +Inf                     -> NaN with invalid, or 2^127 with no flag under e.saturate
template <class In> BF16EMU_CXHD ue8m0_result to_ue8m0(fp<In> x, const env &e = {}) noexcept {
  constexpr std::uint8_t nan = 0xFF, max_bits = 0xFE;
  const detail::unpacked u = detail::unpack(x, e);
  if (u.k == detail::kind::nan) return {ue8m0{nan}, x.is_signaling_nan() ? flag::invalid : std::uint8_t(0)};
  if (u.k == detail::kind::zero) return {ue8m0{0}, std::uint8_t(flag::underflow | flag::inexact)};
  if (u.sign) return {ue8m0{nan}, flag::invalid};
  if (u.k == detail::kind::inf)
    return e.saturate ? ue8m0_result{ue8m0{max_bits}, 0} : ue8m0_result{ue8m0{nan}, flag::invalid};
  const int lead_bit = detail::msb(u.sig);
  const detail::decided d = detail::decide(detail::cut(u.sig, lead_bit, false), false, e);
  const int exponent = u.exp + lead_bit + (d.kept == 2 ? 1 : 0); // kept is 1, or 2 after a carry
  const std::uint8_t inexact = d.dec == decision::exact ? 0 : flag::inexact;
  if (exponent > 127) {
    const bool to_nan = detail::overflow_to_inf(false, e);
    return {ue8m0{to_nan ? nan : max_bits}, std::uint8_t(flag::overflow | flag::inexact)};
  }
  if (exponent < -127) return {ue8m0{0}, std::uint8_t(flag::underflow | flag::inexact)};
  return {ue8m0{std::uint8_t(exponent + ue8m0::bias)}, inexact};
}

// NVFP4's block scale: an e4m3 byte whose sign bit is ignored ("interpreted as unsigned UE4M3
// values, i.e. the bit sign is ignored", nvmath-python MatmulQuantizationScales).
BF16EMU_CXHD e4m3 ue4m3_value(std::uint8_t bits) noexcept { return e4m3::from_bits(bits & 0x7Fu); }

// ---------------------------------------------------------------------------------------------
// The MX block quantizer (OCP MX v1.0 conversion of a block of k values to one UE8M0 scale X and
// k elements, as in the spec authors' reference code, microsoft/microxcaling mx/mx_ops.py):
//   e = floor(log2(max |v_i|)) - emax(Elem)      (max |v_i| = 0 counts as 2^-126)
//   X = NaN if e > 127, 2^-127 if e < -127, else 2^e
//   P_i = v_i / X rounded into Elem in e.mode, clamped to +-max normal (saturating)
// v_i / X is exact before the one rounding. A NaN or infinite v_i makes X NaN (the whole block
// reads as NaN) and every P_i +0. Returns X; flags collects the flags of the element roundings.
template <class Elem, class In>
BF16EMU_CXHD ue8m0 quantize_mx_block(const fp<In> *v, int k, fp<Elem> *out, const env &e,
                                     std::uint8_t &flags) noexcept {
  flags = 0;
  int lead = -126;
  bool any_nonzero = false, special = false;
  for (int i = 0; i < k; ++i) {
    const detail::unpacked u = detail::unpack(v[i], e);
    if (u.k == detail::kind::nan || u.k == detail::kind::inf) special = true;
    if (u.k != detail::kind::finite) continue;
    const int l = u.exp + detail::msb(u.sig);
    lead = any_nonzero && lead > l ? lead : l;
    any_nonzero = true;
  }
  const int shared = lead - Elem::emax;
  if (special || shared > 127) {
    for (int i = 0; i < k; ++i)
      out[i] = fp<Elem>{};
    return ue8m0{0xFF};
  }
  const int s = shared < -127 ? -127 : shared;
  env ee = e;
  ee.saturate = true;
  no_trace tr;
  for (int i = 0; i < k; ++i) {
    const detail::unpacked u = detail::unpack(v[i], e);
    if (u.k != detail::kind::finite) {
      out[i] = detail::zero<Elem>(u.sign).value;
      continue;
    }
    detail::unrounded r;
    r.sign = u.sign;
    r.exp = u.exp - s;
    r.sig = u.sig;
    const result<Elem> q = detail::round_pack<Elem>(r, ee, tr, op_kind::convert);
    out[i] = q.value;
    flags = std::uint8_t(flags | q.flags);
  }
  return ue8m0{std::uint8_t(s + ue8m0::bias)};
}

} // namespace bf16emu
