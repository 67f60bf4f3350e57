// Shared helpers for the differential harnesses: decoding formats, modes and environments
// from fuzzer bytes, and comparing one core operation with the independent oracle
// (tests/oracle). On any disagreement the harness prints both sides and aborts, which
// libFuzzer reports as a crash and saves the input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include <bf16emu/core.hpp>

#include "oracle.hpp"

namespace fuzz {

// Reads bytes from the fuzzer input; past the end it yields zeros.
struct reader {
  const std::uint8_t *data;
  std::size_t size, pos = 0;
  std::uint8_t u8() { return pos < size ? data[pos++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= std::uint32_t(u8()) << (8 * i);
    return v;
  }
  std::uint64_t u64() { return std::uint64_t(u32()) | (std::uint64_t(u32()) << 32); }
};

// The formats with arithmetic (<= 24 significant bits), by index 0..5.
inline constexpr int arith_format_count = 6;
template <class Fn> void visit_arith(unsigned id, Fn &&f) {
  switch (id % arith_format_count) {
  case 0: f(bf16emu::binary32{}); break;
  case 1: f(bf16emu::bfloat16{}); break;
  case 2: f(bf16emu::binary16{}); break;
  case 3: f(bf16emu::tensorfloat32{}); break;
  case 4: f(bf16emu::float8_e4m3{}); break;
  default: f(bf16emu::float8_e5m2{}); break;
  }
}

template <class F> oracle::format oracle_format() {
  return oracle::format{F::exp_bits, F::frac_bits, F::encoding == bf16emu::special_encoding::fn};
}

// Draws an operand bit pattern of format F. Half of the time the pattern is taken
// as is; otherwise it is steered toward the interesting classes (zeros, subnormals,
// extremes, NaN/Inf patterns) by the low bits of the selector byte.
template <class F> bf16emu::fp<F> operand(reader &r) {
  const std::uint8_t sel = r.u8();
  std::uint64_t bits = r.u64();
  const std::uint64_t width_mask = F::width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << F::width) - 1;
  bits &= width_mask;
  const std::uint64_t sign = bits & F::sign_mask;
  switch (sel & 7) {
  case 0: bits = sign; break;                                       // signed zero
  case 1: bits = sign | (bits & F::frac_mask); break;               // subnormal (or zero)
  case 2: bits = sign | F::max_finite_bits; break;                  // largest finite
  case 3: bits = sign | F::exp_mask | (bits & F::frac_mask); break; // Inf / NaN class
  default: break;
  }
  return bf16emu::fp<F>::from_bits(bits);
}

struct decoded_env {
  bf16emu::env core;
  oracle::environment ref;
};

inline decoded_env environment(reader &r) {
  const std::uint8_t m = r.u8();
  const std::uint8_t flags = r.u8();
  const std::uint32_t random = r.u32();
  decoded_env d;
  d.core.mode = static_cast<bf16emu::round_mode>(m % bf16emu::round_mode_count);
  d.core.tiny = (flags & 1) ? bf16emu::tininess::before_rounding : bf16emu::tininess::after_rounding;
  d.core.nan = static_cast<bf16emu::nan_policy>(((flags >> 1) & 3) % 3);
  d.core.subnormal = static_cast<bf16emu::subnormals>((flags >> 3) & 3);
  d.core.saturate = (flags >> 5) & 1;
  d.core.random = random;
  d.ref.mode = static_cast<oracle::rounding>(m % bf16emu::round_mode_count);
  d.ref.tiny = (flags & 1) ? oracle::tininess::before_rounding : oracle::tininess::after_rounding;
  d.ref.nan = static_cast<oracle::nan_policy>(((flags >> 1) & 3) % 3);
  d.ref.flush_outputs = (flags >> 3) & 1;
  d.ref.inputs_as_zero = (flags >> 4) & 1;
  d.ref.saturate = (flags >> 5) & 1;
  d.ref.random = random;
  return d;
}

[[noreturn]] inline void mismatch(const std::string &what) {
  std::fprintf(stderr, "MISMATCH core vs oracle: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string hex(std::uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

inline std::string describe_env(const bf16emu::env &e) {
  return std::string("mode=") + bf16emu::to_string(e.mode) +
         " tiny=" + (e.tiny == bf16emu::tininess::before_rounding ? "before" : "after") +
         " nan=" + std::to_string(int(e.nan)) + " subnormal=" + std::to_string(int(e.subnormal)) +
         " saturate=" + std::to_string(int(e.saturate)) + " random=" + hex(e.random);
}

// Compares one core result (with its trace) with the oracle's result. `what` names the
// operation and operands for the report. For exactly-known errors the traced error
// err_hi + err_lo is compared with the oracle's exact result - exact value.
template <class Out>
void compare(const std::string &what, const bf16emu::env &e, const bf16emu::result<Out> &got,
             const bf16emu::last_event &tr, const oracle::result &want,
             const std::optional<oracle::dyadic> &want_err) {
  const std::string ctx = what + " -> " + bf16emu::format_name<Out>() + " " + describe_env(e);
  if (std::uint64_t(got.value.bits) != want.bits || got.flags != want.flags)
    mismatch(ctx + ": core " + hex(got.value.bits) + " flags " + oracle::flags_string(got.flags) +
             ", oracle " + hex(want.bits) + " flags " + oracle::flags_string(want.flags));
  if (!want.rounded) return;
  if (tr.count != 1)
    mismatch(ctx + ": oracle rounded once, core traced " + std::to_string(tr.count) + " events");
  const bf16emu::rounding_event &ev = tr.event;
  if (ev.guard != want.guard || ev.round != want.round || ev.sticky != want.sticky || ev.kept != want.kept ||
      ev.lsb_exp != want.lsb_exp || ev.exponent != want.exponent || ev.sign != want.sign ||
      ev.tiny != want.tiny || std::string(bf16emu::to_string(ev.dec)) != oracle::name(want.dec))
    mismatch(ctx + ": trace differs: core kept " + hex(ev.kept) + " g/r/s " + std::to_string(ev.guard) +
             std::to_string(ev.round) + std::to_string(ev.sticky) + " dec " + bf16emu::to_string(ev.dec) +
             " lsb " + std::to_string(ev.lsb_exp) + " exp " + std::to_string(ev.exponent) + " tiny " +
             std::to_string(ev.tiny) + "; oracle kept " + hex(want.kept) + " g/r/s " +
             std::to_string(want.guard) + std::to_string(want.round) + std::to_string(want.sticky) + " dec " +
             oracle::name(want.dec) + " lsb " + std::to_string(want.lsb_exp) + " exp " +
             std::to_string(want.exponent) + " tiny " + std::to_string(want.tiny));
  if (want_err && ev.err_exact) {
    const oracle::dyadic got_err =
        oracle::dyadic_from_double(ev.err_hi) + oracle::dyadic_from_double(ev.err_lo);
    if (!(got_err == *want_err))
      mismatch(ctx + ": traced error " + oracle::to_string(got_err) + " != exact error " +
               oracle::to_string(*want_err));
  }
}

template <class F> oracle::operand ref(bf16emu::fp<F> x) {
  return {std::uint64_t(x.bits), oracle_format<F>()};
}

// "name fmt 0xbits" for an operand in a mismatch report.
template <class F> std::string describe(bf16emu::fp<F> x) {
  return std::string(bf16emu::format_name<F>()) + " " + hex(x.bits);
}

// The two-operand shape shared by add/sub, mul and div: decodes operand a in format
// fa, operand b in format fb (in that order from the input bytes), then calls
// fn(a, b, O{}) with the result format O chosen by fo.
template <class Fn> void with_binary(reader &r, unsigned fa, unsigned fb, unsigned fo, Fn &&fn) {
  visit_arith(fa, [&](auto A) {
    const auto a = operand<decltype(A)>(r);
    visit_arith(fb, [&](auto B) {
      const auto b = operand<decltype(B)>(r);
      visit_arith(fo, [&](auto O) { fn(a, b, O); });
    });
  });
}

} // namespace fuzz
