// The rounding modes of issue 44: ties to zero, equal-probability stochastic rounding and k-bit
// stochastic rounding, each against probabilities counted from the input's own bits (not from the
// core) and against the exact oracle (tests/oracle) on random inputs and random k.
//
// Inputs: fp32 -> bf16 conversions, where the 16 discarded bits are the input's low 16 bits, so
// f = low16 / 2^16 and floor(f * 2^k) is low16 >> (16 - k) (k <= 16) or low16 << (k - 16).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common.hpp"

namespace {

using namespace bf16emu;
using coretest::hex;

// fp32 inputs whose bf16 rounding is a normal number: kept significand even and odd, discarded
// 16 bits at the edges (0, 1, half - 1, half, half + 1, max) and a spread of others, both signs.
std::vector<std::uint32_t> inputs() {
  std::vector<std::uint32_t> v;
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x0002, 0x1234, 0x4000, 0x7FFF, 0x8000, 0x8001,
                                0x9ABC, 0xC000, 0xE000, 0xFFFE, 0xFFFF, 0x0100, 0x00FF, 0x2000};
  for (const std::uint32_t hi : {0x3F80u, 0x3F81u, 0x4049u, 0x0080u, 0x7F00u})
    for (const std::uint32_t lo : lows)
      for (const std::uint32_t s : {0u, 0x80000000u})
        v.push_back(s | (hi << 16) | lo);
  return v;
}

bool rounded_up(std::uint32_t x, std::uint16_t bf) { return (bf & 0x7FFFu) != ((x >> 16) & 0x7FFFu); }

// k-bit stochastic rounding against all 2^k random words: the count of words that round up is
// floor(f * 2^k), and each word rounds up exactly when D + r carries out of k bits; bits of the
// word from bit k up are ignored.
TEST(SrModes, KBitAgainstAllRandomWords) {
  long long cases = 0;
  for (int k = 1; k <= 16; ++k) {
    for (const std::uint32_t x : inputs()) {
      const std::uint32_t low16 = x & 0xFFFFu;
      const std::uint64_t d = low16 >> (16 - k); // floor(f * 2^k), from the input's bits
      std::uint64_t ups = 0;
      for (std::uint32_t r = 0; r < (std::uint32_t{1} << k); ++r) {
        env e = with_mode(round_mode::stochastic_k);
        e.sr_bits = std::uint8_t(k);
        e.random = r;
        const std::uint16_t b = convert<bfloat16>(f32{x}, e).bits();
        const bool up = rounded_up(x, b);
        ups += up;
        ASSERT_EQ(up, d + r >= (std::uint64_t{1} << k)) << hex(x) << " k=" << k << " r=" << r;
        // The bits of the word above the low k are not read.
        e.random = r | (0xA5A5A5A5u << k);
        ASSERT_EQ(convert<bfloat16>(f32{x}, e).bits(), b) << hex(x) << " k=" << k << " r=" << r;
        ++cases;
      }
      EXPECT_EQ(ups, d) << hex(x) << " k=" << k;
    }
  }
  // k from 17 to 32: the discarded 16 bits then sit at the top of the k bits (zeros below them);
  // the up-count over all 2^k words is floor(f * 2^k) = low16 * 2^(k - 16), checked on the
  // threshold word and its neighbour (up exactly when r >= 2^k - D).
  for (int k = 17; k <= 32; ++k)
    for (const std::uint32_t x : inputs()) {
      const std::uint64_t d = std::uint64_t(x & 0xFFFFu) << (k - 16);
      const std::uint64_t lim = std::uint64_t{1} << k;
      for (const std::uint64_t r : {std::uint64_t{0}, lim - d - 1, lim - d, lim - 1}) {
        if (r >= lim) continue; // d = 0: lim - d is outside the range
        env e = with_mode(round_mode::stochastic_k);
        e.sr_bits = std::uint8_t(k);
        e.random = std::uint32_t(r);
        const bool up = rounded_up(x, convert<bfloat16>(f32{x}, e).bits());
        EXPECT_EQ(up, d != 0 && r >= lim - d) << hex(x) << " k=" << k << " r=" << r;
        ++cases;
      }
    }
  EXPECT_GT(cases, 1000000);
}

// k = 32 is the proportional rule of round_mode::stochastic, word for word.
TEST(SrModes, KBit32IsProportional) {
  coretest::rng g(44);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t x = g.u32(), r = g.u32();
    env a = with_mode(round_mode::stochastic), b = with_mode(round_mode::stochastic_k);
    a.random = b.random = r;
    ASSERT_EQ(convert<float8_e4m3>(f32{x}, a).bits(), convert<float8_e4m3>(f32{x}, b).bits()) << hex(x);
    ASSERT_EQ(convert<bfloat16>(f32{x}, a).bits(), convert<bfloat16>(f32{x}, b).bits()) << hex(x);
  }
}

// Proportional stochastic rounding: P(up) = floor(f * 2^32) / 2^32 exactly, i.e. the words that
// round up are those r >= 2^32 - F with F = low16 * 2^16; checked at the threshold, around it and
// on 64 words spread over the range.
TEST(SrModes, ProportionalProbabilityIsExact) {
  for (const std::uint32_t x : inputs()) {
    const std::uint64_t F = std::uint64_t(x & 0xFFFFu) << 16;
    const std::uint64_t T = (std::uint64_t{1} << 32) - F; // first word that rounds up
    std::vector<std::uint64_t> words = {0, 0xFFFFFFFFull, T - 1, T, T + 1};
    for (int j = 0; j < 64; ++j)
      words.push_back(std::uint64_t(j) * 0x4000000ull + 12345u);
    for (const std::uint64_t r : words) {
      if (r > 0xFFFFFFFFull) continue;
      env e = with_mode(round_mode::stochastic);
      e.random = std::uint32_t(r);
      EXPECT_EQ(rounded_up(x, convert<bfloat16>(f32{x}, e).bits()), F != 0 && r >= T)
          << hex(x) << " r=" << hex(r);
    }
  }
}

// Equal-probability stochastic rounding: an inexact result goes up for exactly half of all words
// (those with bit 31 set), whatever f is; an exact one never moves. The rule reads bit 31 only:
// every word agrees with the word's bit 31 on 1000 words per input.
TEST(SrModes, EqualProbabilityIsOneHalf) {
  coretest::rng g(4401);
  for (const std::uint32_t x : inputs()) {
    const bool inexact = (x & 0xFFFFu) != 0;
    int ups = 0;
    for (int j = 0; j < 1000; ++j) {
      const std::uint32_t r = j < 2 ? (j ? 0x80000000u : 0x7FFFFFFFu) : g.u32();
      env e = with_mode(round_mode::stochastic_equal);
      e.random = r;
      const bool up = rounded_up(x, convert<bfloat16>(f32{x}, e).bits());
      ASSERT_EQ(up, inexact && (r >> 31) != 0) << hex(x) << " r=" << hex(r);
      ups += up;
    }
    if (!inexact) {
      EXPECT_EQ(ups, 0);
    }
  }
}

// Ties to zero: a tie keeps the magnitude (even or odd kept bit), anything past it goes up.
TEST(SrModes, NearestTiesToZero) {
  for (const std::uint32_t x : inputs()) {
    const std::uint32_t low16 = x & 0xFFFFu;
    const bool up = rounded_up(x, convert<bfloat16>(f32{x}, with_mode(round_mode::nearest_zero)).bits());
    EXPECT_EQ(up, low16 > 0x8000u) << hex(x);
  }
  // Trace: a tie is recorded as tie_down.
  last_event ev;
  convert<bfloat16>(f32{0x3F818000u}, with_mode(round_mode::nearest_zero), ev);
  EXPECT_EQ(ev.event.dec, decision::tie_down);
}

// Against the exact oracle: every operation and format, random k, random words, random inputs.
template <class F> void against_oracle(int n, std::uint64_t seed) {
  coretest::rng g(seed);
  const round_mode modes[] = {round_mode::nearest_zero, round_mode::stochastic_equal,
                              round_mode::stochastic_k};
  for (int i = 0; i < n; ++i) {
    env e = with_mode(modes[g.below(3)]);
    e.sr_bits = std::uint8_t(1 + g.below(32));
    e.random = g.u32();
    e.tiny = g.coin() ? tininess::before_rounding : tininess::after_rounding;
    e.saturate = g.below(4) == 0;
    const oracle::environment oe = coretest::oenv(e);
    const std::uint32_t x = g.u32();
    const result<F> r = convert<F>(f32{x}, e);
    const oracle::result o = oracle::convert(oracle::operand{x, oracle::fp32}, coretest::ofmt<F>(), oe);
    ASSERT_EQ(std::uint64_t(r.bits()), o.bits) << "convert " << hex(x) << " " << coretest::env_string(e);
    ASSERT_EQ(r.flags, o.flags) << "convert " << hex(x) << " " << coretest::env_string(e);
    if constexpr (F::precision <= 24) {
      const std::uint64_t mask = (std::uint64_t{1} << F::width) - 1;
      const fp<F> a = fp<F>::from_bits(g.next() & mask), b = fp<F>::from_bits(g.next() & mask);
      const result<F> s = add(a, b, e), p = mul(a, b, e), q = div(a, b, e);
      const oracle::operand oa{a.bits, coretest::ofmt<F>()}, ob{b.bits, coretest::ofmt<F>()};
      ASSERT_EQ(std::uint64_t(s.bits()), oracle::add(oa, ob, coretest::ofmt<F>(), oe).bits)
          << "add " << hex(a.bits) << " " << hex(b.bits) << " " << coretest::env_string(e);
      ASSERT_EQ(std::uint64_t(p.bits()), oracle::mul(oa, ob, coretest::ofmt<F>(), oe).bits)
          << "mul " << hex(a.bits) << " " << hex(b.bits) << " " << coretest::env_string(e);
      ASSERT_EQ(std::uint64_t(q.bits()), oracle::div(oa, ob, coretest::ofmt<F>(), oe).bits)
          << "div " << hex(a.bits) << " " << hex(b.bits) << " " << coretest::env_string(e);
    }
  }
}

TEST(SrModes, AgainstOracle) {
  against_oracle<bfloat16>(20000, 1);
  against_oracle<binary16>(20000, 2);
  against_oracle<float8_e4m3>(20000, 3);
  against_oracle<float8_e5m2>(20000, 4);
  against_oracle<float6_e2m3>(10000, 5);
  against_oracle<binary32>(20000, 6);
}

} // namespace
