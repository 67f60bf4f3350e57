// Tier e: agreement with the host's IEEE binary32 arithmetic (SSE on x86-64) in round-to-nearest-
// even: add, sub, mul, div, sqrt and fmaf (std::fma), on random and structured operands. Values
// must match bit for bit (NaN results: both NaN; payloads are implementation-specific on the host).
// For add/sub/mul/div/sqrt the five host exception flags (fenv) must match too.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>

#include "common.hpp"

namespace {

using namespace coretest;

std::uint32_t as_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float as_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

std::uint32_t operand(rng &r) {
  const std::uint32_t s = r.coin() ? 0x80000000u : 0u;
  switch (r.below(5)) {
  case 0: return s | (r.u32() & 0x007FFFFF);                                            // subnormal
  case 1: return s | ((std::uint32_t(r.below(30)) + 225) << 23) | (r.u32() & 0x7FFFFF); // large
  case 2: return s | ((std::uint32_t(r.below(60)) + 97) << 23) | (r.u32() & 0x7FFFFF);  // moderate
  default: return r.u32();
  }
}

std::uint8_t host_flags() {
  const int f = std::fetestexcept(FE_ALL_EXCEPT);
  std::uint8_t o = 0;
  if (f & FE_INVALID) o |= flag::invalid;
  if (f & FE_DIVBYZERO) o |= flag::divbyzero;
  if (f & FE_OVERFLOW) o |= flag::overflow;
  if (f & FE_UNDERFLOW) o |= flag::underflow;
  if (f & FE_INEXACT) o |= flag::inexact;
  return o;
}

bool is_nan_bits(std::uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFF); }

TEST(HostHardware, NearestEvenAgreesWithBinary32) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  rng r(77);
  const env e; // nearest_even, tininess after rounding (what x86 SSE detects), ieee
  long long checked = 0, bad = 0, flag_checked = 0;
  std::string first;
  for (long long i = 0; i < 2000000; ++i) {
    const std::uint32_t a = operand(r), b = operand(r), c = operand(r);
    const f32 x = f32::from_bits(a), y = f32::from_bits(b), z = f32::from_bits(c);
    for (int op = 0; op < 6; ++op) {
      volatile float va = as_float(a), vb = as_float(b), vc = as_float(c);
      std::feclearexcept(FE_ALL_EXCEPT);
      float h = 0;
      result<binary32> s;
      switch (op) {
      case 0:
        h = va + vb;
        s = add(x, y, e);
        break;
      case 1:
        h = va - vb;
        s = sub(x, y, e);
        break;
      case 2:
        h = va * vb;
        s = mul(x, y, e);
        break;
      case 3:
        h = va / vb;
        s = div(x, y, e);
        break;
      case 4:
        h = std::sqrt(float(va));
        s = sqrt(x, e);
        break;
      case 5:
        h = std::fma(float(va), float(vb), float(vc));
        s = fma(x, y, z, e);
        break;
      }
      volatile float vh = h;
      const std::uint8_t hf = host_flags();
      const std::uint32_t hb = as_bits(vh);
      ++checked;
      bool ok = is_nan_bits(hb) ? is_nan_bits(s.value.bits) : hb == s.value.bits;
      // The host raises invalid for signaling NaN operands like the contract; payloads aside, the
      // flags of the IEEE basic operations must agree (fma via libm: values only).
      if (ok && op != 5) {
        ++flag_checked;
        ok = hf == s.flags;
      }
      if (!ok) {
        ++bad;
        if (first.empty())
          first = "op " + std::to_string(op) + " a=" + hex(a) + " b=" + hex(b) + " c=" + hex(c) + ": host " +
                  hex(hb) + " flags " + oracle::flags_string(hf) + ", core " + hex(s.value.bits) + " flags " +
                  oracle::flags_string(s.flags);
      }
    }
  }
  EXPECT_EQ(bad, 0) << first;
  std::printf("%lld host comparisons (%lld with flags), %lld mismatches\n", checked, flag_checked, bad);
}

} // namespace
