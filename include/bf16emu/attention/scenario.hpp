// bf16emu attention: built-in input scenarios. Every value is a BF16 number (so every
// policy sees the same inputs) and the generator is portable (xoshiro-style splitmix +
// Box-Muller written out), so a seed gives the same tensors on every platform.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "bf16emu/attention/arith.hpp"

namespace bf16emu::attention {

struct rng {
  std::uint64_t s;
  explicit rng(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
  std::uint64_t next() { // splitmix64
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1p-53; } // [0, 1)
  double normal() {
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

inline double round_bf16(double x) { return to_double(as_bf16(x)); }

// [batch, heads, n, d] tensors, row-major, values exact in binary64.
struct attention_inputs {
  long batch = 1, heads = 1, n = 0, d = 0;
  std::vector<double> q, k, v, dout;
  long head_size() const { return n * d; }
};

// batch * heads * n * d (any number of factors) in checked arithmetic: std::length_error when
// a factor is negative or the product does not fit a long, before anything is allocated. (The
// CLI's size guard, src/io/attention.hpp, stops such sizes earlier with a message.)
inline std::size_t checked_elements(std::initializer_list<long> factors) {
  long p = 1;
  for (long f : factors)
    if (f < 0 || __builtin_mul_overflow(p, f, &p))
      throw std::length_error("attention: tensor size overflows (batch x heads x n x d)");
  return static_cast<std::size_t>(p);
}

struct sink_params {
  double tie_share = 0.5; // share of query rows aimed at the repeated key (their max repeats)
  int multiplicity = 4;   // identical copies of that key (positions drawn at random)
  double v_skew = 0.9;    // in skewed V columns, probability that an entry is negative
  double skew_cols = 0.5; // share of V columns that are skewed (the first ones)
  double strength = 6.0;  // score gap (in scaled-logit units) of the repeated key
  double do_bias = 1.0;   // dO: added to the skewed columns (correlation with O's error)
};

// random: Q, K, V, dO standard normal, rounded to BF16.
inline attention_inputs scenario_random(long batch, long heads, long n, long d, std::uint64_t seed) {
  attention_inputs in;
  in.batch = batch, in.heads = heads, in.n = n, in.d = d;
  const std::size_t size = checked_elements({batch, heads, n, d});
  rng g(seed);
  for (auto *a : {&in.q, &in.k, &in.v, &in.dout}) {
    a->resize(size);
    for (double &x : *a)
      x = round_bf16(g.normal());
  }
  return in;
}

// sink: the paper's trigger. Per head, one random key k* is copied to `multiplicity`
// random positions; a `tie_share` of the query rows is q = lambda*k* + noise with
// lambda = strength/sqrt(d), so their maximum score is repeated exactly; the first
// `skew_cols` of V's columns are negative with probability v_skew.
inline attention_inputs scenario_sink(long batch, long heads, long n, long d, std::uint64_t seed,
                                      const sink_params &sp) {
  attention_inputs in = scenario_random(batch, heads, n, d, seed);
  rng g(seed ^ 0x5151515151515151ull);
  const long skew = long(std::lround(sp.skew_cols * double(d)));
  const double lambda = sp.strength / std::sqrt(double(d));
  for (long bh = 0; bh < batch * heads; ++bh) {
    double *q = &in.q[bh * n * d], *k = &in.k[bh * n * d], *v = &in.v[bh * n * d],
           *dout = &in.dout[bh * n * d];
    std::vector<double> ks(d);
    for (long i = 0; i < d; ++i)
      ks[i] = round_bf16(g.normal());
    for (int c = 0; c < sp.multiplicity && c < n; ++c) {
      const long pos = long(g.next() % std::uint64_t(n));
      for (long i = 0; i < d; ++i)
        k[pos * d + i] = ks[i];
    }
    for (long r = 0; r < n; ++r) {
      if (g.uniform() >= sp.tie_share) continue;
      for (long i = 0; i < d; ++i)
        q[r * d + i] = round_bf16(lambda * ks[i] + 0.3 * g.normal());
    }
    for (long t = 0; t < n; ++t)
      for (long i = 0; i < skew; ++i) {
        const double a = std::fabs(v[t * d + i]);
        v[t * d + i] = g.uniform() < sp.v_skew ? -a : a;
      }
    for (long r = 0; r < n; ++r)
      for (long i = 0; i < skew; ++i)
        dout[r * d + i] = round_bf16(dout[r * d + i] + sp.do_bias);
  }
  return in;
}

// One head of a built-in scenario by name ("random", or "sink" with default knobs);
// nullopt for an unknown name, so that each tool reports it in its own words.
inline std::optional<attention_inputs> scenario_by_name(std::string_view name, long n, long d,
                                                        std::uint64_t seed) {
  if (name == "random") return scenario_random(1, 1, n, d, seed);
  if (name == "sink") return scenario_sink(1, 1, n, d, seed, sink_params{});
  return std::nullopt;
}

} // namespace bf16emu::attention
