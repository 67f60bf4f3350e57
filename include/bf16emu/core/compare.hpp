// bf16emu: comparisons and exact host values.
#pragma once

#include <cstdint>

#include "bf16emu/core/exact_error.hpp"
#include "bf16emu/core/unpack.hpp"

namespace bf16emu {

enum class ordering : std::uint8_t { less, equal, greater, unordered };

struct cmp_result {
  ordering ord = ordering::unordered;
  std::uint8_t flags = 0;
};

namespace detail {
template <class F> BF16EMU_CXHD cmp_result compare_impl(fp<F> a, fp<F> b, bool signaling) noexcept {
  if (a.is_nan() || b.is_nan()) {
    const bool invalid = signaling || a.is_signaling_nan() || b.is_signaling_nan();
    return {ordering::unordered, invalid ? flag::invalid : std::uint8_t{0}};
  }
  if (a.is_zero() && b.is_zero()) return {ordering::equal, 0};
  // Sign-magnitude to a monotonic signed key.
  auto key = [](fp<F> x) -> std::int64_t {
    const std::int64_t m = std::int64_t(x.magnitude());
    return x.sign() ? -m : m;
  };
  const std::int64_t ka = key(a), kb = key(b);
  return {ka < kb ? ordering::less : ka > kb ? ordering::greater : ordering::equal, 0};
}
} // namespace detail

// Quiet comparison: invalid only for signaling NaNs.
template <class F> BF16EMU_CXHD cmp_result compare(fp<F> a, fp<F> b, const env & = {}) noexcept {
  return detail::compare_impl(a, b, false);
}
// Signaling comparison: invalid for any NaN.
template <class F> BF16EMU_CXHD cmp_result compare_signaling(fp<F> a, fp<F> b, const env & = {}) noexcept {
  return detail::compare_impl(a, b, true);
}

// Exact binary64 value of any format of up to 53 significant bits (NaN and Inf map to
// the binary64 NaN and Inf; subnormals are read as they are, whatever the env says).
template <class F> BF16EMU_CXHD double to_double(fp<F> x) noexcept {
  if constexpr (F::exp_bits == 11 && F::frac_bits == 52) {
    return detail::bit_cast<double>(std::uint64_t(x.bits));
  } else {
    const double sign = x.sign() ? -1.0 : 1.0;
    if (x.is_nan()) return detail::bit_cast<double>(std::uint64_t{0x7ff8000000000000});
    if (x.is_inf()) return sign * detail::pow2(2000);
    const detail::unpacked u = detail::unpack(x, env{});
    if (u.k == detail::kind::zero) return sign * 0.0;
    return sign * detail::scale(double(u.sig), u.exp);
  }
}

} // namespace bf16emu
