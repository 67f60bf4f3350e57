// bf16emu CUDA twin: test-vector generators and the line writer (see vectors.hpp).
#include "vectors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

#include "bf16emu/core.hpp"
#include "io/error.hpp"
#include "io/names.hpp"

namespace bf16emu::gpu {
namespace {

// xoshiro256** seeded by splitmix64: the same seed gives the same vectors on every host.
struct rng {
  std::uint64_t s[4];
  explicit rng(std::uint64_t seed) {
    for (auto &x : s) {
      seed += 0x9e3779b97f4a7c15ull;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      x = z ^ (z >> 31);
    }
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return r;
  }
  int uniform(int lo, int hi) { return lo + int(next() % std::uint64_t(hi - lo + 1)); } // [lo, hi]
  bool coin(int one_in) { return next() % std::uint64_t(one_in) == 0; }
};

// Exact encoding of a double into format f; false when not representable exactly.
bool encode(format_id f, double x, std::uint64_t &bits) {
  return visit_format(f, [&](auto fmt) {
    using F = decltype(fmt);
    const auto r = convert<F>(from_double(x));
    if (r.flags & (flag::inexact | flag::overflow)) return false;
    if (std::isnan(x) != r.value.is_nan()) return false;
    bits = std::uint64_t(r.value.bits);
    return true;
  });
}

// Value of a finite bit pattern of format f as a double (exact: at most 24 significant bits).
double decode(format_id f, std::uint64_t bits) {
  return visit_format(f, [&](auto fmt) -> double {
    using F = decltype(fmt);
    const auto v = fp<F>::from_bits(bits);
    if (v.is_nan()) return NAN;
    if (v.is_inf()) return v.sign() ? -INFINITY : INFINITY;
    const int be = v.biased_exp();
    const double sig = double(v.frac()) + (be ? double(std::uint64_t{1} << F::frac_bits) : 0.0);
    const double mag = std::ldexp(sig, (be ? be : 1) - F::bias - F::frac_bits);
    return v.sign() ? -mag : mag;
  });
}

int width(format_id f) {
  return visit_format(f, [](auto fmt) { return decltype(fmt)::width; });
}

// A pair (a, b) of format f with a*b == p exactly, both representable; false if none found.
bool split(format_id fa, format_id fb, double p, std::uint64_t &a, std::uint64_t &b) {
  if (p == 0) return encode(fa, 0.0, a) && encode(fb, 0.0, b);
  for (int j = 0; j <= 160; ++j)
    for (int s : {1, -1}) {
      const double pb = std::ldexp(1.0, s * j);
      if (encode(fa, p / pb, a) && encode(fb, pb, b)) return true;
    }
  return false;
}

struct line_builder {
  vec_set &v;
  std::vector<std::uint64_t> a, b;
  std::uint64_t c = 0;
  bool ok = true;
  explicit line_builder(vec_set &vs) : v(vs), a(std::size_t(vs.k), 0), b(std::size_t(vs.k), 0) {}
  // Product p at index i (skipped when i is past K or p has no exact split).
  line_builder &prod(int i, double p) {
    if (i < 0 || i >= v.k || !split(v.in, v.b_format(), p, a[std::size_t(i)], b[std::size_t(i)])) ok = false;
    return *this;
  }
  line_builder &raw(int i, std::uint64_t ab, std::uint64_t bb) {
    if (i < 0 || i >= v.k)
      ok = false;
    else
      a[std::size_t(i)] = ab, b[std::size_t(i)] = bb;
    return *this;
  }
  line_builder &acc(double x) {
    if (!encode(v.out, x, c)) ok = false;
    return *this;
  }
  line_builder &acc_bits(std::uint64_t bits) {
    c = bits;
    return *this;
  }
  void emit(std::string note) {
    if (!ok) return;
    v.a.insert(v.a.end(), a.begin(), a.end());
    v.b.insert(v.b.end(), b.begin(), b.end());
    v.c.push_back(c);
    v.notes.push_back(std::move(note));
  }
};

std::uint64_t format_nan(format_id f) {
  std::uint64_t bits = 0;
  visit_format(f, [&](auto fmt) {
    using F = decltype(fmt);
    bits = F::has_inf ? std::uint64_t(F::exp_mask | F::quiet_bit) : std::uint64_t(F::exp_mask | F::frac_mask);
  });
  return bits;
}

void gen_probes(vec_set &v) {
  const double u23 = std::ldexp(1.0, -23), u24 = std::ldexp(1.0, -24);
  const int K = v.k;
  const auto L = [&] { return line_builder(v); };
  // 1. One extra alignment bit (V100 vs later).
  L().prod(0, 1).acc(-(1 - u24)).emit("F: 1*1 + c, c = -(1-2^-24): V100 0x34000000, A100/H100 0x33800000");
  // 2. F = 24 vs 25: c = -2^-25 is truncated too.
  L().prod(0, 1).acc(-std::ldexp(1.0, -25)).emit("F: 1*1 - 2^-25: A100 0x3f800000, H100 0x3f7fffff");
  // 3. Three small products against c = 1.
  L().prod(0, u24)
      .prod(1, u24 / 2)
      .prod(2, u24 / 2)
      .acc(1)
      .emit("F: c=1 + 2^-24 + 2^-25 + 2^-25: A100 0x3f800000, H100 0x3f800001");
  // 4. F scan: 1*1 - 2^-s.
  for (int s = 8; s <= 30; ++s)
    L().prod(0, 1).acc(-std::ldexp(1.0, -s)).emit("F scan: 1*1 - 2^-" + std::to_string(s));
  // 5. Block size: c = 1+u, 1*1 at index 0, u slid across indices 1..K-1; u = 2^-23 (FP32
  // output), and u = 2^-12 for the fp8 paths that keep 13 fraction bits.
  for (int s : {23, 12}) {
    if (s == 12 && v.in != format_id::e4m3 && v.in != format_id::e5m2) continue;
    const double u = std::ldexp(1.0, -s);
    for (int i = 1; i < K; ++i)
      L().prod(0, 1).prod(i, u).acc(1 + u).emit("L slide: c=1+2^-" + std::to_string(s) + ", 1*1 at 0, 2^-" +
                                                std::to_string(s) + " at " + std::to_string(i));
  }
  // 6. Output rounding: truncation.
  L().prod(0, 1)
      .prod(1, 1)
      .prod(2, 1)
      .acc(1 + u23 + 2 * u23)
      .emit("round: c=1+2^-23+2^-22 + three 1*1: 0x40800000 (truncate), nearest 0x40800001");
  // 7. No overflow inside a block: big*big - big*big + 1 with big*big past FP32.
  L().prod(0, std::ldexp(1.0, 200))
      .prod(1, -std::ldexp(1.0, 200))
      .acc(1)
      .emit("2^100*2^100 - 2^100*2^100 + 1: 0x00000000 (c lost to alignment)");
  // 8. Overflow to Inf.
  L().prod(0, std::ldexp(1.0, 127)).acc(std::ldexp(1.0, 127)).emit("2^127*1 + 2^127: 0x7f800000");
  // 9. Specials.
  std::uint64_t one_a = 0, one_b = 0, inf = 0, zero = 0;
  split(v.in, v.b_format(), 1, one_a, one_b);
  encode(v.b_format(), 0, zero);
  const std::uint64_t nan = format_nan(v.in);
  L().raw(0, nan, one_b).acc(0).emit("NaN*1: NaN");
  if (encode(v.in, INFINITY, inf)) {
    L().raw(0, inf, zero).acc(0).emit("Inf*0: NaN");
    L().raw(0, inf, one_b)
        .raw(1, inf | (std::uint64_t{1} << (width(v.in) - 1)), one_b)
        .acc(0)
        .emit("+Inf + -Inf: NaN");
    L().raw(0, inf, one_b).acc(1).emit("+Inf*1 + 1: +Inf");
    L().raw(0, inf, one_b).acc(-INFINITY).emit("+Inf*1 + c=-Inf: NaN");
  }
  L().prod(0, 1).acc(NAN).emit("1*1 + c=NaN: NaN");
  // 10. Order: +U at 0, -U at j, 1 at the next index (or the one before): which terms share a
  // block decides whether the 1 survives.
  const double U = std::ldexp(1.0, 40);
  for (int j = 1; j < K; ++j) {
    const int one_at = j + 1 < K ? j + 1 : j - 1;
    if (one_at == 0) continue;
    L().prod(0, U).prod(j, -U).prod(one_at, 1).acc(0).emit(
        "order: +2^40 at 0, -2^40 at " + std::to_string(j) + ", 1 at " + std::to_string(one_at));
  }
  // 11. Zero terms: e_zero against tiny products (bf16/tf32: exponents below -133 exist).
  L().prod(0, std::ldexp(1.0, -140)).acc(0).emit("e_zero: 2^-140 alone (zero terms at e_zero)");
  L().prod(0, std::ldexp(1.0, -140)).prod(1, std::ldexp(1.0, -160)).acc(0).emit("e_zero: 2^-140 + 2^-160");
  // 12. Subnormal inputs and results.
  L().prod(0, std::ldexp(1.0, -130)).acc(std::ldexp(1.0, -149)).emit("subnormal: 2^-130 + 2^-149");
  L().prod(0, -std::ldexp(1.0, -126))
      .acc(std::ldexp(1.0, -126) + std::ldexp(1.0, -149))
      .emit("subnormal result: -2^-126 + (2^-126 + 2^-149)");
  // 13. Signs of zero.
  L().prod(0, 1).prod(1, -1).acc(0).emit("1 - 1 + 0: +0");
  L().acc_bits(v.out == format_id::fp16 ? 0x8000u : 0x80000000u).emit("all-zero products, c = -0");
}

// Random finite normal value of format f with unbiased exponent in [elo, ehi] (clamped).
std::uint64_t random_normal(rng &r, format_id f, int elo, int ehi) {
  return visit_format(f, [&](auto fmt) -> std::uint64_t {
    using F = decltype(fmt);
    const int e = std::clamp(r.uniform(elo, ehi), F::emin, F::emax);
    std::uint64_t frac = r.next() & F::frac_mask;
    const std::uint64_t be = std::uint64_t(e + F::bias);
    if (!F::has_inf && be == std::uint64_t(F::exp_field_max) && frac == F::frac_mask) frac -= 1; // e4m3 NaN
    const std::uint64_t sign = (r.next() & 1) ? F::sign_mask : 0;
    return std::uint64_t(sign | (be << F::frac_bits) | frac);
  });
}

std::uint64_t random_bits(rng &r, format_id f) {
  return visit_format(f, [&](auto fmt) -> std::uint64_t {
    using F = decltype(fmt);
    const std::uint64_t sign = (r.next() & 1) ? F::sign_mask : 0;
    if (r.coin(8)) {
      const std::uint64_t specials[] = {0,
                                        1,
                                        F::frac_mask,
                                        F::min_normal_bits,
                                        F::max_finite_bits,
                                        F::inf_bits,
                                        F::has_inf ? (F::exp_mask | F::quiet_bit)
                                                   : (F::exp_mask | F::frac_mask),
                                        std::uint64_t(F::bias) << F::frac_bits};
      return std::uint64_t(sign | specials[r.next() % 8]);
    }
    if constexpr (F::width >= 64)
      return r.next();
    else
      return r.next() & ((std::uint64_t{1} << F::width) - 1);
  });
}

void gen_normal(vec_set &v, std::size_t count, rng &r) {
  const bool small = v.in == format_id::e4m3 || v.in == format_id::e5m2 || v.in == format_id::fp16;
  const int spread = small ? 4 : 8;
  for (std::size_t n = 0; n < count; ++n) {
    for (int i = 0; i < v.k; ++i)
      v.a.push_back(random_normal(r, v.in, -spread, spread));
    for (int i = 0; i < v.k; ++i)
      v.b.push_back(random_normal(r, v.b_format(), -spread, spread));
    v.c.push_back(random_normal(r, v.out, -2 * spread, 2 * spread));
    v.notes.emplace_back();
  }
}

void gen_bits(vec_set &v, std::size_t count, rng &r) {
  for (std::size_t n = 0; n < count; ++n) {
    for (int i = 0; i < v.k; ++i)
      v.a.push_back(random_bits(r, v.in));
    for (int i = 0; i < v.k; ++i)
      v.b.push_back(random_bits(r, v.b_format()));
    v.c.push_back(random_bits(r, v.out));
    v.notes.emplace_back();
  }
}

// Flips the last fraction bit of a finite normal pattern (stays finite and nonzero).
std::uint64_t nudge(std::uint64_t bits) { return bits ^ 1u; }

void gen_cancel(vec_set &v, std::size_t count, rng &r) {
  const bool small = v.in == format_id::e4m3 || v.in == format_id::e5m2;
  const int spread = small ? 3 : 6;
  std::vector<int> perm(std::size_t(v.k));
  for (std::size_t n = 0; n < count; ++n) {
    for (int i = 0; i < v.k; ++i)
      perm[std::size_t(i)] = i;
    for (int i = v.k - 1; i > 0; --i)
      std::swap(perm[std::size_t(i)], perm[std::size_t(r.uniform(0, i))]);
    std::vector<std::uint64_t> a(std::size_t(v.k)), b(std::size_t(v.k));
    double sum = 0;
    for (int p = 0; p + 1 < v.k; p += 2) {
      const std::uint64_t x = random_normal(r, v.in, -spread, spread),
                          y = random_normal(r, v.b_format(), -spread, spread);
      const std::uint64_t sign = std::uint64_t{1} << (width(v.in) - 1);
      const std::size_t i = std::size_t(perm[std::size_t(p)]), j = std::size_t(perm[std::size_t(p + 1)]);
      a[i] = x, b[i] = y;
      a[j] = x ^ sign, b[j] = r.coin(4) ? y : nudge(y);
      sum +=
          decode(v.in, a[i]) * decode(v.b_format(), b[i]) + decode(v.in, a[j]) * decode(v.b_format(), b[j]);
    }
    if (v.k % 2) {
      const std::size_t i = std::size_t(perm[std::size_t(v.k - 1)]);
      a[i] = random_normal(r, v.in, -spread, spread), b[i] = random_normal(r, v.b_format(), -spread, spread);
      sum += decode(v.in, a[i]) * decode(v.b_format(), b[i]);
    }
    // C: minus the sum, rounded to the output format, sometimes nudged; or a small random value.
    std::uint64_t c = 0;
    const double target = r.coin(3) ? -sum : -sum * (1 + std::ldexp(double(r.uniform(-8, 8)), -20));
    visit_format(v.out, [&](auto fmt) {
      using F = decltype(fmt);
      c = std::uint64_t(convert<F>(from_double(target)).value.bits);
    });
    if (r.coin(5)) c = random_normal(r, v.out, -spread, spread);
    v.a.insert(v.a.end(), a.begin(), a.end());
    v.b.insert(v.b.end(), b.begin(), b.end());
    v.c.push_back(c);
    v.notes.emplace_back();
  }
}

// ---- Scale factors of the block-scaled kinds (v.vec > 0) ----

// The scale factor 2^e (ue8m0 always; ue4m3 for -9 <= e <= 8, its normal and subnormal powers of 2).
std::uint8_t scale_pow2(tc::scale_kind s, int e) {
  if (s == tc::scale_kind::ue8m0) return std::uint8_t(std::clamp(127 + e, 0, 254));
  if (e >= -6) return std::uint8_t(std::min(e + 7, 15) << 3);
  return std::uint8_t(1u << std::clamp(e + 9, 0, 2)); // subnormal 2^-9 .. 2^-7
}

std::uint8_t scale_nan(tc::scale_kind s) { return s == tc::scale_kind::ue8m0 ? 0xff : 0x7f; }

// Unit factors for the lines that have none yet.
void unit_scales(vec_set &v) {
  const std::size_t n = v.lines() * std::size_t(v.scales());
  v.sa.resize(n, scale_pow2(v.scale, 0)), v.sb.resize(n, scale_pow2(v.scale, 0));
}

// Random factors for the lines that have none yet: near 1 (normal, cancel) or any pattern with
// one in eight from the special set (bits).
void random_scales(vec_set &v, gen_kind kind, rng &r) {
  const std::size_t n = v.lines() * std::size_t(v.scales());
  const bool e8 = v.scale == tc::scale_kind::ue8m0;
  const std::uint8_t specials[] = {0x00, 0x01, 0x7f, 0xff, 0xfe, 0x80, 0x38, 0xb8};
  for (std::vector<std::uint8_t> *s : {&v.sa, &v.sb})
    while (s->size() < n) {
      std::uint8_t x;
      if (kind != gen_kind::bits)
        x = e8 ? std::uint8_t(127 + r.uniform(-4, 4))
               : std::uint8_t(((r.uniform(-3, 3) + 7) << 3) | (r.next() & 7));
      else if (r.coin(8))
        x = specials[r.next() % 8];
      else
        x = e8 ? std::uint8_t(127 + r.uniform(-20, 20)) : std::uint8_t(r.next() & 0xff);
      s->push_back(x);
    }
}

// The scale probes: which factor scales which k-block, products of factors, NaN / zero / signed /
// subnormal / extreme factors, alignment of terms by their factors.
void gen_scale_probes(vec_set &v) {
  const int S = v.scales(), K = v.k;
  const tc::scale_kind sk = v.scale;
  const bool e8 = sk == tc::scale_kind::ue8m0;
  const std::uint8_t one = scale_pow2(sk, 0);
  auto emit = [&](line_builder &L, std::vector<std::uint8_t> sa, std::vector<std::uint8_t> sb,
                  std::string note) {
    const std::size_t before = v.lines();
    L.emit(std::move(note));
    if (v.lines() == before) return;
    v.sa.insert(v.sa.end(), sa.begin(), sa.end()), v.sb.insert(v.sb.end(), sb.begin(), sb.end());
  };
  const std::vector<std::uint8_t> unit(std::size_t(S), one);
  std::vector<std::uint8_t> ramp(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s)
    ramp[std::size_t(s)] = scale_pow2(sk, s + 1);
  // 1. Scale order: 1*1 at the first element of block j; block s's factor 2^(s+1): D = 2^(j+1).
  for (int j = 0; j < S; ++j) {
    const std::string at = std::to_string(j) + " (k " + std::to_string(j * v.vec) + ")";
    emit(line_builder(v).prod(j * v.vec, 1).acc(0), ramp, unit,
         "scale order: 1*1 in block " + at + ", A's factor of block s 2^(s+1): 2^" + std::to_string(j + 1));
    emit(line_builder(v).prod(j * v.vec, 1).acc(0), unit, ramp,
         "scale order: 1*1 in block " + at + ", B's factor of block s 2^(s+1): 2^" + std::to_string(j + 1));
  }
  // 2. Factors multiply: 2^3 * 2^-2.
  emit(line_builder(v).prod(0, 1).acc(0), std::vector<std::uint8_t>(std::size_t(S), scale_pow2(sk, 3)),
       std::vector<std::uint8_t>(std::size_t(S), scale_pow2(sk, -2)), "factors 2^3 (A) * 2^-2 (B), 1*1: 2");
  // 3. NaN factors, also where every product is zero.
  std::vector<std::uint8_t> nan_first = unit, nan_last = unit;
  nan_first[0] = scale_nan(sk), nan_last[std::size_t(S - 1)] = scale_nan(sk);
  emit(line_builder(v).prod(0, 1).acc(1), nan_first, unit, "NaN factor of A, block 0: NaN");
  emit(line_builder(v).acc(1), unit, nan_last, "NaN factor of B, last block, zero products: NaN");
  // 4. The smallest factors: ue8m0 0x00 = 2^-127; ue4m3 0x00 = 0 and 0x01 = 2^-9.
  std::vector<std::uint8_t> zero_first = unit;
  zero_first[0] = 0x00;
  emit(line_builder(v).prod(0, 1).acc(1), zero_first, unit,
       e8 ? "factor 0x00 (2^-127) on 1*1, c = 1" : "factor 0x00 (zero) on 1*1, c = 1: 1");
  emit(line_builder(v).prod(0, 1).acc(0), zero_first, unit,
       e8 ? "factor 0x00 (2^-127) on 1*1, c = 0: below fp32's subnormals" : "factor 0x00 (zero) on 1*1: +0");
  if (!e8) {
    std::vector<std::uint8_t> sub = unit, neg(std::size_t(S), std::uint8_t(one | 0x80));
    sub[0] = 0x01;
    emit(line_builder(v).prod(0, 1).acc(0), sub, unit, "ue4m3 subnormal factor 0x01 (2^-9) on 1*1: 2^-9");
    emit(line_builder(v).prod(0, 1).prod(1, 1).acc(0), neg, unit, "ue4m3 0xb8: the sign bit is ignored: 2");
  }
  // 5. Extreme factors: products past fp32's range, and far below c.
  const int big = e8 ? 127 : 8;
  emit(line_builder(v).prod(0, 1).acc(0), std::vector<std::uint8_t>(std::size_t(S), scale_pow2(sk, big)),
       std::vector<std::uint8_t>(std::size_t(S), scale_pow2(sk, big)),
       "largest factors on 1*1: " + std::string(e8 ? "2^254, past fp32" : "2^16"));
  const std::vector<int> shifts =
      e8 ? std::vector<int>{-20, -24, -25, -26, -30, -36} : std::vector<int>{-12, -14, -16, -18};
  for (int e : shifts) { // ue4m3: split between A's and B's factors (each at least 2^-9)
    std::vector<std::uint8_t> small = unit, smallb = unit;
    small[std::size_t(S - 1)] = scale_pow2(sk, e8 ? e : e / 2);
    if (!e8) smallb[std::size_t(S - 1)] = scale_pow2(sk, e - e / 2);
    emit(line_builder(v).prod(K - 1, 1).acc(1), small, smallb,
         "alignment: c = 1 + 1*1 in the last block scaled by 2^" + std::to_string(e));
  }
  // 6. The open rows of docs/tensor-cores.md (Blackwell section): e_zero with scales (both
  // factors 0x00, ue8m0), and a block of zero products whose large factor sets the max exponent.
  if (e8)
    emit(line_builder(v).prod(0, 1).acc(0), zero_first, zero_first,
         "e_zero with scales: 1*1, both factors 0x00 (2^-254), c = 0: +0 under e_zero -133");
  if (S > 1) {
    std::vector<std::uint8_t> big_last = unit;
    big_last[std::size_t(S - 1)] = scale_pow2(sk, e8 ? 60 : 8);
    emit(line_builder(v).prod(0, 1).acc(0), big_last, unit,
         "max exponent: 1*1 in block 0, zero products under factor 2^" + std::to_string(e8 ? 60 : 8) +
             " in the last block");
  }
  // 7. Inf c (docs/tensor-cores.md: MMA-Sim raises an overflow error for the k64 kinds; the model
  // gives +Inf), beside a finite product.
  emit(line_builder(v).prod(0, 1).acc(std::numeric_limits<double>::infinity()), unit, unit,
       "Inf c: 1*1 + Inf: +Inf in the model (MMA-Sim: an overflow error for the k64 kinds)");
  // 8. Cancellation across blocks: +2^8 (block 0) and -2^8 (last block), each scaled, + 1.
  if (S > 1) {
    std::vector<std::uint8_t> s = unit;
    s[0] = scale_pow2(sk, 4), s[std::size_t(S - 1)] = scale_pow2(sk, 4);
    emit(line_builder(v).prod(0, 4).prod(K - 1, -4).acc(1), s, unit,
         "cancel: 4*2^4 in block 0, -4*2^4 in the last block, c = 1: 1");
  }
}

} // namespace

bool parse_gen_kind(const std::string &s, gen_kind &g) {
  if (s == "probes")
    g = gen_kind::probes;
  else if (s == "normal")
    g = gen_kind::normal;
  else if (s == "bits")
    g = gen_kind::bits;
  else if (s == "cancel")
    g = gen_kind::cancel;
  else
    return false;
  return true;
}

namespace {
template <class Ok> bool parse_format_if(const std::string &s, format_id &f, Ok ok) {
  format_id g;
  try {
    g = io::parse_format(s);
  } catch (const io::input_error &) {
    return false;
  }
  if (!ok(g)) return false;
  f = g;
  return true;
}
} // namespace

bool parse_in_format(const std::string &s, format_id &f) {
  return parse_format_if(s, f, [](format_id g) { return g != format_id::fp32; });
}

bool parse_out_format(const std::string &s, format_id &f) {
  return parse_format_if(
      s, f, [](format_id g) { return g == format_id::fp32 || g == format_id::fp16 || g == format_id::fp64; });
}

void generate(vec_set &v, gen_kind kind, std::size_t count, std::uint64_t seed) {
  rng r(seed);
  // The generators write C in v.out; with a C format of its own they write it in that one.
  const format_id d_format = v.out;
  v.out = v.c_format();
  switch (kind) {
  case gen_kind::probes: gen_probes(v); break;
  case gen_kind::normal: gen_normal(v, count, r); break;
  case gen_kind::bits: gen_bits(v, count, r); break;
  case gen_kind::cancel: gen_cancel(v, count, r); break;
  }
  v.out = d_format;
  if (v.scales() == 0) return;
  if (kind == gen_kind::probes) {
    unit_scales(v);
    gen_scale_probes(v);
  } else {
    rng rs(seed ^ 0x5ca1ef0c7025ull); // the factors' own stream
    random_scales(v, kind, rs);
  }
}

std::string hex_scale(std::uint8_t bits) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", unsigned(bits));
  return buf;
}

bool parse_scale(const std::string &tok, std::uint8_t &bits) {
  if (tok.size() < 3 || tok.size() > 4 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X') ||
      tok.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
    return false;
  bits = std::uint8_t(std::stoul(tok.substr(2), nullptr, 16));
  return true;
}

std::string hex(format_id f, std::uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", (width(f) + 3) / 4, static_cast<unsigned long long>(bits));
  return buf;
}

void write_lines(std::ostream &os, const vec_set &v, bool notes, std::size_t first, std::size_t count) {
  const std::size_t end = std::min(v.lines(), count == std::size_t(-1) ? v.lines() : first + count);
  std::string line;
  for (std::size_t n = first; n < end; ++n) {
    if (notes && n < v.notes.size() && !v.notes[n].empty()) os << "# " << v.notes[n] << '\n';
    line.clear();
    const std::size_t K = std::size_t(v.k);
    for (std::size_t i = 0; i < K; ++i)
      line += hex(v.in, v.a[n * K + i]) + ' ';
    line += ' ';
    for (std::size_t i = 0; i < K; ++i)
      line += hex(v.b_format(), v.b[n * K + i]) + ' ';
    const std::size_t S = std::size_t(v.scales());
    for (const std::vector<std::uint8_t> *sc : {&v.sa, &v.sb}) {
      if (S) line += ' ';
      for (std::size_t s = 0; s < S; ++s)
        line += hex_scale((*sc)[n * S + s]) + ' ';
    }
    line += ' ';
    line += hex(v.c_format(), v.c[n]);
    os << line << '\n';
  }
}

} // namespace bf16emu::gpu
