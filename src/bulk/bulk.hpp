// bf16emu::bulk: array kernels with run-time CPU dispatch (Google Highway).
//
// Every kernel equals the element-wise scalar core: out[i] is the scalar routine's result for
// element i under the same env, and the returned flags are the OR of the scalar flags. The SIMD
// path settles the lanes it can; the others (NaN under some policies, subnormal results, exact
// zero sums, ...) are redone by the scalar core. The compiled code lives in the library target
// bf16emu::bulk (src/bulk); the header-only core (include/bf16emu/core) does not depend on it.
//
// The results do not depend on the caller's float environment: on x86 each call reads MXCSR
// once and, when it is not the default (nearest-even, no FTZ/DAZ, exceptions masked), runs
// under the default and restores the caller's MXCSR on return.
//
// Stochastic rounding: with a stochastic env::mode (stochastic, stochastic_equal, stochastic_k:
// bf16emu::is_stochastic) and a random_stream, element i is rounded
// with env::random = counter_random(stream.seed, stream.offset + i): a fresh, reproducible
// number per element that depends neither on the thread count nor on the vector width (a
// caller that splits an array passes each piece its own offset). Without a stream every
// element uses env::random, as the scalar core and core/bulk.hpp do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bf16emu/core/arith.hpp"

namespace bf16emu::bulk {

// The counter-based generator. stream_key(seed, hi) is SplitMix64's output for
// seed + (hi + 1) * 0x9E3779B97F4A7C15 (hi = index >> 32, the block of 2^32 elements), folded to
// 32 bits; within a block, element index i gets lowbias32(uint32(i) ^ key), lowbias32 being
// C. Wellons' 32-bit integer hash (x ^= x >> 16; x *= 0x7FEB352D; x ^= x >> 15;
// x *= 0x846CA68B; x ^= x >> 16), a bijection of 32-bit words. docs/performance-bulk.md.
constexpr std::uint32_t stream_key(std::uint64_t seed, std::uint64_t hi) noexcept {
  std::uint64_t z = seed + (hi + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return std::uint32_t(z ^ (z >> 32));
}
constexpr std::uint32_t lowbias32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}
constexpr std::uint32_t counter_random(std::uint64_t seed, std::uint64_t index) noexcept {
  return lowbias32(std::uint32_t(index) ^ stream_key(seed, index >> 32));
}

struct random_stream {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0; // element i of this call is element offset + i of the stream
};

// Narrowing conversions from fp32 (every mode; flags as the scalar convert<Out>).
std::uint8_t convert_n(const f32 *in, bf16 *out, std::size_t n, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;
std::uint8_t convert_n(const f32 *in, tf32 *out, std::size_t n, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;
std::uint8_t convert_n(const f32 *in, f16 *out, std::size_t n, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;
std::uint8_t convert_n(const f32 *in, e4m3 *out, std::size_t n, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;
std::uint8_t convert_n(const f32 *in, e5m2 *out, std::size_t n, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;
// Widening to fp32: exact for numbers; NaN policy, signaling NaNs and the subnormal policy
// as the scalar convert<binary32>.
std::uint8_t convert_n(const bf16 *in, f32 *out, std::size_t n, const env &e = {}) noexcept;
std::uint8_t convert_n(const tf32 *in, f32 *out, std::size_t n, const env &e = {}) noexcept;
std::uint8_t convert_n(const f16 *in, f32 *out, std::size_t n, const env &e = {}) noexcept;
std::uint8_t convert_n(const e4m3 *in, f32 *out, std::size_t n, const env &e = {}) noexcept;
std::uint8_t convert_n(const e5m2 *in, f32 *out, std::size_t n, const env &e = {}) noexcept;

// bf16 element-wise arithmetic: out[i] = add/sub/mul(a[i], b[i], e), fma(a[i], b[i], c[i], e).
// out may equal an input array (element i is read before it is written) but must not
// overlap one otherwise.
std::uint8_t add_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;
std::uint8_t sub_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;
std::uint8_t mul_n(const bf16 *a, const bf16 *b, bf16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;
std::uint8_t fma_n(const bf16 *a, const bf16 *b, const bf16 *c, bf16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;

// fp16 element-wise arithmetic: out[i] = add/sub/mul(a[i], b[i], e), the same contract as bf16's.
// (The exact product, or the sum rounded to odd in fp32, rounded once more to fp16: exact
// rounding in every mode; add/sub under stochastic rounding run the scalar core per element.)
std::uint8_t add_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;
std::uint8_t sub_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;
std::uint8_t mul_n(const f16 *a, const f16 *b, f16 *out, std::size_t n, const env &e = {},
                   const random_stream *rng = nullptr) noexcept;

// Dot product of bf16 vectors with fp32 accumulation, every step one fused multiply-add
// fma_to<binary32>(a[i], b[i], acc, e) (the bf16 product is exact in fp32, so this is also
// "multiply exactly, add once"):
//   sequential: acc = init; for i in 0..n-1: acc = fma(a[i], b[i], acc).
//   blocked16:  16 partial sums p[j] = fma(a[i], b[i], p[j]) over i = j (mod 16), p[j]
//               starting at +0 (p[0] at init); then pairwise add_to<binary32>:
//               p[j] += p[j + 8], then p[j] += p[j + 4], p[j] += p[j + 2], p[0] += p[1].
//               The order is fixed (not the vector width's), so every target gives the same bits.
// Stochastic rounding with a stream: the step that reads element i uses random number i,
// the k-th of the 15 combining additions (in the order above) number n + k.
enum class dot_order : std::uint8_t { sequential, blocked16 };
result<binary32> dot_n(const bf16 *a, const bf16 *b, std::size_t n, f32 init = {},
                       dot_order order = dot_order::sequential, const env &e = {},
                       const random_stream *rng = nullptr) noexcept;

// Name of the SIMD target the dispatcher chose on this CPU (hwy::TargetName), e.g. "AVX2".
const char *target_name() noexcept;

} // namespace bf16emu::bulk
