// bf16emu::tc_lanes FP32 FMA chains across columns (attention::hw_f32::fma_cols_hook): one copy
// per SIMD target (Highway's foreach_target re-includes this file once per target), chosen at
// run time. Each lane owns one column; the chains advance together, one fused multiply-add per
// step, so every column gets the bits of its chain of scalar FP32 FMAs. A target without a
// native FMA (SSE4, SSSE3, the portable ones) runs the scalar loop instead, because Highway's
// MulAdd there is a product and a sum, two roundings.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tc_lanes/fma_cols.cpp"
#include <hwy/foreach_target.h> // must come before highway.h

#include <hwy/highway.h>

#include <cstddef>

#include "bf16emu/attention/arith.hpp"
#include "tc_lanes/tc_lanes.hpp"

HWY_BEFORE_NAMESPACE();
namespace bf16emu::tc_lanes::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void fma_cols_t(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k, long ncols,
                float *c) {
  long j = 0;
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> df;
  const long N = long(hn::Lanes(df));
  // four vectors of columns at a time: four independent FMA chains in flight per step
  for (; j + 4 * N <= ncols; j += 4 * N) {
    auto c0 = hn::LoadU(df, c + j), c1 = hn::LoadU(df, c + j + N), c2 = hn::LoadU(df, c + j + 2 * N),
         c3 = hn::LoadU(df, c + j + 3 * N);
    const float *bt = b + j;
    for (long t = 0; t < k; ++t, bt += sb) {
      const auto at = hn::Set(df, a[t * sa]);
      c0 = hn::MulAdd(at, hn::LoadU(df, bt), c0);
      c1 = hn::MulAdd(at, hn::LoadU(df, bt + N), c1);
      c2 = hn::MulAdd(at, hn::LoadU(df, bt + 2 * N), c2);
      c3 = hn::MulAdd(at, hn::LoadU(df, bt + 3 * N), c3);
    }
    hn::StoreU(c0, df, c + j), hn::StoreU(c1, df, c + j + N), hn::StoreU(c2, df, c + j + 2 * N);
    hn::StoreU(c3, df, c + j + 3 * N);
  }
  for (; j + N <= ncols; j += N) {
    auto c0 = hn::LoadU(df, c + j);
    const float *bt = b + j;
    for (long t = 0; t < k; ++t, bt += sb)
      c0 = hn::MulAdd(hn::Set(df, a[t * sa]), hn::LoadU(df, bt), c0);
    hn::StoreU(c0, df, c + j);
  }
#endif
  if (j < ncols) attention::hw_f32::fma_cols_loop(a, sa, b + j, sb, k, ncols - j, c + j);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
} // namespace bf16emu::tc_lanes::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace bf16emu::tc_lanes {
HWY_EXPORT(fma_cols_t);

void fma_cols(const float *a, std::ptrdiff_t sa, const float *b, std::ptrdiff_t sb, long k, long ncols,
              float *c) noexcept {
  HWY_DYNAMIC_DISPATCH(fma_cols_t)(a, sa, b, sb, k, ncols, c);
}

void install_fma_cols() noexcept {
  attention::hw_f32::fma_cols_hook.store(&fma_cols, std::memory_order_relaxed);
}
} // namespace bf16emu::tc_lanes
#endif
