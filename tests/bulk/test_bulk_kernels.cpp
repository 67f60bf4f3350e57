// bf16emu::bulk vs the element-wise scalar core: every kernel, every mode, the env variants,
// random and special-value arrays, odd lengths and misaligned pointers, each compiled SIMD
// target forced in turn (hwy::SetSupportedTargetsForTest). The reference for element i is the
// scalar call with env.random = counter_random(seed, offset + i) when a stream is given.
#include <gtest/gtest.h>

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bulk/bulk.hpp"

namespace bf = bf16emu;
namespace bk = bf16emu::bulk;
using bf::env;
using bf::round_mode;

namespace {

// Runs body() once per SIMD target that is compiled and supported here, forcing it.
template <class Fn> void for_each_target(Fn &&body) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    const std::string name = hwy::TargetName(t);
    ASSERT_EQ(name, bk::target_name());
    SCOPED_TRACE("target " + name);
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

// The environments: all 7 modes under each of these policies.
std::vector<env> envs() {
  std::vector<env> out;
  for (int m = 0; m < bf::round_mode_count; ++m) {
    env e;
    e.mode = round_mode(m);
    e.random = 0x9E3779B9u;
    out.push_back(e); // IEEE
    env f = e;
    f.tiny = bf::tininess::before_rounding;
    f.subnormal = bf::subnormals::flush_both;
    f.random = 0;
    out.push_back(f);
    env g = e;
    g.saturate = true;
    g.nan = bf::nan_policy::cuda;
    g.random = 0xFFFFFFFFu;
    out.push_back(g);
    env h = e;
    h.subnormal = bf::subnormals::inputs_as_zero;
    h.nan = bf::nan_policy::pytorch;
    out.push_back(h);
    env k = e;
    k.subnormal = bf::subnormals::flush_outputs;
    k.random = 0x80000000u;
    out.push_back(k);
    env t = e;
    t.tiny = bf::tininess::before_rounding;
    out.push_back(t);
  }
  return out;
}

const std::vector<std::size_t> lengths = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 255, 1001};

// fp32 values that exercise every class: zeros, subnormals, normals near the cut (ties,
// ties +- 1), the overflow edge of bf16/tf32, Inf, quiet and signaling NaNs, both signs.
std::vector<std::uint32_t> f32_specials() {
  std::vector<std::uint32_t> v = {0x00000000, 0x00000001, 0x00007FFF, 0x00008000, 0x00008001, 0x00018000,
                                  0x003FFFFF, 0x00400000, 0x007F7FFF, 0x007F8000, 0x007FFFFF, 0x00800000,
                                  0x00807FFF, 0x00808000, 0x00818000, 0x3F800000, 0x3F808000, 0x3F818000,
                                  0x3F80FFFF, 0x3F801000, 0x3F800FFF, 0x3F801001, 0x7F7F0000, 0x7F7F7FFF,
                                  0x7F7F8000, 0x7F7FEFFF, 0x7F7FF000, 0x7F7FFFFF, 0x7F800000, 0x7F800001,
                                  0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF, 0x7FA00000, 0x38800000, 0x387FFFFF};
  const std::size_t k = v.size();
  for (std::size_t i = 0; i < k; ++i)
    v.push_back(v[i] | 0x80000000u);
  return v;
}

// Mixed arrays: random bit patterns with specials sprinkled in (1 in 4).
std::vector<std::uint32_t> f32_array(std::size_t n, std::mt19937_64 &rng) {
  const std::vector<std::uint32_t> sp = f32_specials();
  std::vector<std::uint32_t> v(n);
  for (auto &x : v) {
    const std::uint64_t r = rng();
    x = (r & 3) == 0 ? sp[(r >> 2) % sp.size()] : std::uint32_t(r >> 32);
  }
  return v;
}

template <class F> std::string hex(std::uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

env element_env(const env &e, const bk::random_stream *rng, std::size_t i) {
  env x = e;
  if (rng && e.mode == round_mode::stochastic) x.random = bk::counter_random(rng->seed, rng->offset + i);
  return x;
}

// Checks one narrowing conversion fp32 -> Out against the scalar convert<Out>.
template <class Out>
void check_narrow(const std::vector<std::uint32_t> &src, const env &e, const bk::random_stream *rng) {
  using S = typename Out::storage;
  // Misaligned: the arrays start one element into their buffers.
  std::vector<bf::f32> in(src.size() + 1);
  for (std::size_t i = 0; i < src.size(); ++i)
    in[i + 1].bits = src[i];
  std::vector<bf::fp<Out>> out(src.size() + 2, bf::fp<Out>{S(0x5A)});
  const std::uint8_t flags = bk::convert_n(in.data() + 1, out.data() + 1, src.size(), e, rng);
  std::uint8_t want_flags = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const bf::result<Out> r = bf::convert<Out>(in[i + 1], element_env(e, rng, i));
    want_flags |= r.flags;
    ASSERT_EQ(out[i + 1].bits, r.value.bits)
        << bf::format_name<Out>() << " x=" << hex<Out>(src[i]) << " i=" << i << " n=" << src.size()
        << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal) << " nan=" << int(e.nan);
  }
  ASSERT_EQ(out[0].bits, S(0x5A));
  ASSERT_EQ(out[src.size() + 1].bits, S(0x5A));
  ASSERT_EQ(flags, want_flags) << bf::format_name<Out>() << " n=" << src.size()
                               << " mode=" << bf::to_string(e.mode) << " sub=" << int(e.subnormal)
                               << " tiny=" << int(e.tiny);
}

template <class Out> void narrow_suite() {
  std::mt19937_64 rng(0x5EED0001);
  const bk::random_stream stream{0xC0FFEEull, 12345};
  for_each_target([&] {
    for (const env &e : envs()) {
      for (const std::size_t n : lengths) {
        const auto src = f32_array(n, rng);
        check_narrow<Out>(src, e, nullptr);
        if (e.mode == round_mode::stochastic) check_narrow<Out>(src, e, &stream);
        if (::testing::Test::HasFatalFailure()) return;
      }
      check_narrow<Out>(f32_specials(), e, nullptr);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

} // namespace

TEST(Bulk, CounterRandomKnownAnswers) {
  // Computed independently (Python, from the definition in bulk.hpp).
  struct ka {
    std::uint64_t seed, index;
    std::uint32_t value;
  };
  const ka cases[] = {
      {0x0ull, 0x0ull, 0x0200b09cu},
      {0x0ull, 0x1ull, 0x084798aau},
      {0x1ull, 0x0ull, 0xaf3ab395u},
      {0x3039ull, 0x7ull, 0x422c4aa9u},
      {0xdeadbeefull, 0x100000000ull, 0x5fea1f8du},
      {0x2aull, 0x500000063ull, 0x485abbd5u},
  };
  for (const ka &c : cases)
    EXPECT_EQ(bk::counter_random(c.seed, c.index), c.value) << c.seed << " " << c.index;
}

TEST(Bulk, TargetsIncludeSse4AndAvx2WhereSupported) {
  const std::int64_t supported = hwy::SupportedTargets();
  std::int64_t forced = 0;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets())
    forced |= t;
  if (supported & HWY_AVX2) {
    EXPECT_TRUE(forced & HWY_AVX2);
  }
  if (supported & HWY_SSE4) {
    EXPECT_TRUE(forced & HWY_SSE4);
  }
}

TEST(Bulk, ConvertF32ToBf16) { narrow_suite<bf::bfloat16>(); }
TEST(Bulk, ConvertF32ToTf32) { narrow_suite<bf::tensorfloat32>(); }
TEST(Bulk, ConvertF32ToFp16) { narrow_suite<bf::binary16>(); }
TEST(Bulk, ConvertF32ToE4m3) { narrow_suite<bf::float8_e4m3>(); }
TEST(Bulk, ConvertF32ToE5m2) { narrow_suite<bf::float8_e5m2>(); }
