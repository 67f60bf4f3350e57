// Bulk paths (core/bulk.hpp) against the scalar routines they stand for: add_loop / sub_loop must
// equal element-wise add / sub, and convert_loop element-wise convert, bit for bit in every value
// and in the OR of the flags, for every rounding mode and many environments (tininess, NaN
// policies, subnormal policies, saturation, stochastic random words including 0 and all ones).
// Inputs mix random bit patterns with edge classes: zeros, subnormals, min normal, max finite,
// Inf, quiet and signaling NaN, ties and near-ties at every alignment, exact cancellation,
// cancellation to tiny results, overflow boundaries. Lengths include 0, 1, odd lengths and
// lengths around the bulk loop's 256-element chunk. (The scalar routines are checked against
// the independent oracle in the other tiers; equality with them is the criterion here.)
#include <gtest/gtest.h>

#include <vector>

#include "common.hpp"

namespace {

using namespace coretest;

constexpr std::size_t kLengths[] = {0, 1, 2, 3, 7, 31, 255, 256, 257, 511, 1001, 2053};

// An encoding of F from one of the edge classes, or a random one.
template <class F> std::uint64_t pick(rng &r) {
  const std::uint64_t sign = r.coin() ? F::sign_mask : 0;
  const std::uint64_t frac = r.next() & F::frac_mask;
  switch (r.below(14)) {
  case 0: return sign;                                                    // zero
  case 1: return sign | (frac == 0 ? 1 : frac);                           // subnormal
  case 2: return sign | (r.coin() ? 1 : F::frac_mask);                    // smallest / largest subnormal
  case 3: return sign | F::min_normal_bits | (r.coin() ? 0 : r.below(4)); // min normal and neighbours
  case 4: return sign | (F::max_finite_bits - std::uint64_t(r.below(3))); // max finite and neighbours
  case 5: return sign | F::exp_mask;                                      // infinity
  case 6: return sign | F::exp_mask | F::quiet_bit | (frac & (F::quiet_bit - 1));         // quiet NaN
  case 7: return sign | F::exp_mask | ((frac & (F::quiet_bit - 1)) | 1);                  // signaling NaN
  case 8: return sign | (std::uint64_t(F::max_finite_biased_exp) << F::frac_bits) | frac; // top binade
  case 9: return sign | (std::uint64_t(1 + r.below(3)) << F::frac_bits) | frac;           // low binades
  default: return r.next() & (F::sign_mask | F::abs_mask);                                // random
  }
}

// A second operand related to the first: random, the same binade (cancellation), exactly -a,
// one ulp off -a, or the first shifted down by d binades with a chosen significand (ties,
// near-ties, alignment boundaries of the bulk window, pure sticky).
template <class F> std::uint64_t partner(rng &r, std::uint64_t a) {
  const std::uint64_t sign_flip = r.coin() ? F::sign_mask : 0;
  const int ea = int((a & F::exp_mask) >> F::frac_bits);
  switch (r.below(8)) {
  case 0: return pick<F>(r);
  case 1: return a ^ F::sign_mask;                                            // exact cancellation (add)
  case 2: return (a ^ F::sign_mask) + (r.coin() ? 1 : std::uint64_t(-1));     // one ulp away
  case 3: return (a & ~F::frac_mask) ^ sign_flip ^ (r.next() & F::frac_mask); // same binade
  default: {
    const int d = r.below(F::precision + 40);
    const int eb = ea - d;
    if (eb < 1) return pick<F>(r);
    std::uint64_t frac = r.next() & F::frac_mask;
    switch (r.below(4)) {
    case 0: frac = 0; break;                         // a power of two: ties when d = P
    case 1: frac = std::uint64_t(r.below(4)); break; // just above a power of two
    case 2: frac = F::frac_mask - std::uint64_t(r.below(4)); break;
    default: break;
    }
    return ((a & F::sign_mask) ^ sign_flip) | (std::uint64_t(eb) << F::frac_bits) | frac;
  }
  }
}

template <class F> fp<F> as(std::uint64_t bits) {
  return fp<F>::from_bits(bits & (F::sign_mask | F::abs_mask));
}

// Compares out[0..n) and the returned flags of one bulk call with element-wise scalar results
// (scalar(i) returns the result<F> for element i; operands(i) describes its inputs), and checks
// that the sentinel at out[n] is untouched.
template <class F, class Scalar, class Operands>
void expect_matches_scalar(const std::string &what, const env &e, const std::vector<fp<F>> &out,
                           std::size_t n, std::uint8_t got_flags, Scalar scalar, Operands operands) {
  std::uint8_t want_flags = 0;
  int shown = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const result<F> w = scalar(i);
    want_flags |= w.flags;
    if (out[i].bits != w.value.bits && shown++ < 3)
      ADD_FAILURE() << what << " n=" << n << " i=" << i << " " << env_string(e) << " " << operands(i)
                    << ": bulk " << hex(out[i].bits) << " scalar " << hex(w.value.bits);
  }
  ASSERT_EQ(out[n].bits, fp<F>::from_bits(0x5A).bits) << what << " wrote past the end, n=" << n;
  EXPECT_EQ(unsigned(got_flags), unsigned(want_flags)) << what << " flags, n=" << n << " " << env_string(e);
}

// Every length, every mode, `envs` environments per mode; returns the number of elements checked.
template <class F> void check_add(std::uint64_t seed, int envs, long long &count) {
  rng r(seed);
  for (int m = 0; m < round_mode_count; ++m) {
    for (int k = 0; k < envs; ++k) {
      const env e = k == 0 ? with_mode(round_mode(m)) : random_env(r, round_mode(m));
      for (const std::size_t n : kLengths) {
        std::vector<fp<F>> a(n), b(n), out(n + 1, fp<F>::from_bits(0x5A));
        for (std::size_t i = 0; i < n; ++i) {
          a[i] = as<F>(pick<F>(r));
          b[i] = as<F>(partner<F>(r, a[i].bits));
          if (r.coin()) std::swap(a[i], b[i]);
        }
        for (const bool is_sub : {false, true}) {
          const std::uint8_t got_flags = is_sub ? sub_loop(a.data(), b.data(), out.data(), n, e)
                                                : add_loop(a.data(), b.data(), out.data(), n, e);
          expect_matches_scalar(
              std::string(is_sub ? "sub_loop<" : "add_loop<") + format_name<F>() + ">", e, out, n, got_flags,
              [&](std::size_t i) { return is_sub ? sub(a[i], b[i], e) : add(a[i], b[i], e); },
              [&](std::size_t i) { return "a=" + hex(a[i].bits) + " b=" + hex(b[i].bits); });
          count += std::int64_t(n);
        }
      }
    }
  }
}

TEST(Bulk, AddSubBf16) {
  long long n = 0;
  check_add<bfloat16>(1, 96, n);
  EXPECT_GT(n, 1000000);
}
TEST(Bulk, AddSubFp32) {
  long long n = 0;
  check_add<binary32>(2, 48, n);
}
TEST(Bulk, AddSubFp16) {
  long long n = 0;
  check_add<binary16>(3, 32, n);
}
TEST(Bulk, AddSubTf32) {
  long long n = 0;
  check_add<tensorfloat32>(4, 32, n);
}
TEST(Bulk, AddSubE5m2) {
  long long n = 0;
  check_add<float8_e5m2>(5, 32, n);
}

// Each lane alone: a lane's result must not depend on its neighbours (slow lanes amid fast ones).
TEST(Bulk, AddSingleLanesBf16) {
  rng r(6);
  for (int m = 0; m < round_mode_count; ++m) {
    for (int k = 0; k < 20000; ++k) {
      const env e = random_env(r, round_mode(m));
      const bf16 a = as<bfloat16>(pick<bfloat16>(r)), b = as<bfloat16>(partner<bfloat16>(r, a.bits));
      bf16 out{};
      const std::uint8_t f = add_loop(&a, &b, &out, 1, e);
      const result<bfloat16> w = add(a, b, e);
      ASSERT_EQ(out.bits, w.value.bits) << env_string(e) << " a=" << hex(a.bits) << " b=" << hex(b.bits);
      ASSERT_EQ(unsigned(f), unsigned(w.flags))
          << env_string(e) << " a=" << hex(a.bits) << " b=" << hex(b.bits);
    }
  }
}

// fp32 inputs for convert_loop: edge classes of binary32, plus encodings just around the
// destination's rounding points (ties, half-ulp +- 1) and its overflow threshold.
template <class Out> std::uint32_t pick_f32(rng &r) {
  constexpr int sh = binary32::frac_bits - Out::frac_bits;
  const std::uint32_t half = 1u << (sh - 1);
  switch (r.below(6)) {
  case 0: return std::uint32_t(pick<binary32>(r));
  case 1: { // ties and near-ties below the destination's last bit
    const std::uint32_t base = r.u32() & ~((1u << sh) - 1);
    const std::uint32_t low = r.coin() ? half : half + std::uint32_t(r.below(3)) - 1u;
    return base | low;
  }
  case 2: { // around the largest finite destination value and its rounding boundary
    const std::uint32_t top = std::uint32_t(Out::max_finite_bits << sh);
    return (r.coin() ? 0x80000000u : 0u) | (top + half + std::uint32_t(r.below(5)) - 2u);
  }
  case 3: return (r.u32() & 0x80000000u) | (0x7F7FFFFFu - std::uint32_t(r.below(1u << sh)));
  default: return r.u32();
  }
}

template <class Out> void check_convert(std::uint64_t seed, int envs, long long &count) {
  rng r(seed);
  for (int m = 0; m < round_mode_count; ++m) {
    for (int k = 0; k < envs; ++k) {
      const env e = k == 0 ? with_mode(round_mode(m)) : random_env(r, round_mode(m));
      for (const std::size_t n : kLengths) {
        std::vector<f32> in(n);
        std::vector<fp<Out>> out(n + 1, fp<Out>::from_bits(0x5A));
        for (auto &x : in)
          x = f32::from_bits(pick_f32<Out>(r));
        const std::uint8_t got_flags = convert_loop(in.data(), out.data(), n, e);
        expect_matches_scalar(
            std::string("convert_loop<") + format_name<Out>() + ">", e, out, n, got_flags,
            [&](std::size_t i) { return convert<Out>(in[i], e); },
            [&](std::size_t i) { return "x=" + hex(in[i].bits); });
        count += std::int64_t(n);
      }
    }
  }
}

// Length 0 with null pointers (an empty std::vector's data()): nothing is read or written and
// no flag is raised, in every mode. Under UBSan this fails if a bulk path touches element 0.
TEST(Bulk, EmptyNullPointers) {
  for (int m = 0; m < round_mode_count; ++m) {
    const env e = with_mode(round_mode(m));
    EXPECT_EQ(add_loop<bfloat16>(nullptr, nullptr, nullptr, 0, e), 0) << env_string(e);
    EXPECT_EQ(sub_loop<binary32>(nullptr, nullptr, nullptr, 0, e), 0) << env_string(e);
    EXPECT_EQ(convert_loop<bfloat16>(static_cast<const f32 *>(nullptr), nullptr, 0, e), 0) << env_string(e);
  }
}

TEST(Bulk, ConvertFp32ToBf16) {
  long long n = 0;
  check_convert<bfloat16>(7, 160, n);
  EXPECT_GT(n, 1000000);
}
TEST(Bulk, ConvertFp32ToTf32) {
  long long n = 0;
  check_convert<tensorfloat32>(8, 48, n);
}

// A strided sweep of all fp32 encodings (every 1021st) through convert_loop in every mode, in
// blocks of 4096 with a per-block random word, against element-wise convert.
TEST(Bulk, ConvertFp32SweepBf16) {
  constexpr std::uint64_t stride = 1021, block = 4096;
  std::vector<f32> in(block);
  std::vector<bf16> out(block);
  long long bad = 0;
  for (int m = 0; m < round_mode_count; ++m) {
    env e = with_mode(round_mode(m));
    for (std::uint64_t start = 0; start < (std::uint64_t{1} << 32); start += stride * block) {
      std::size_t n = 0;
      for (std::uint64_t x = start; x < (std::uint64_t{1} << 32) && n < block; x += stride)
        in[n++] = f32::from_bits(std::uint32_t(x));
      e.random = hash32(start ^ std::uint64_t(m) << 40);
      const std::uint8_t f = convert_loop(in.data(), out.data(), n, e);
      std::uint8_t want = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const result<bfloat16> w = convert<bfloat16>(in[i], e);
        want |= w.flags;
        if (out[i].bits != w.value.bits && bad++ < 5)
          ADD_FAILURE() << env_string(e) << " x=" << hex(in[i].bits) << ": bulk " << hex(out[i].bits)
                        << " scalar " << hex(w.value.bits);
      }
      ASSERT_EQ(unsigned(f), unsigned(want)) << env_string(e) << " block at " << hex(start);
    }
  }
  EXPECT_EQ(bad, 0);
}

} // namespace
