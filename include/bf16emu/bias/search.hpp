// bf16emu bias: seeded adversarial search for addend sequences with a large error.
//
// Hill climbing with sideways moves and restarts. A candidate is a trial input (start value
// and n pairs v_i, w_i of BF16 values); its fitness is |error| / classic_bound, the ratio of
// the error actually made to the a-priori bound n*u*sum|x| (+ u_out*|sum| for a final
// conversion). Every random choice comes from the counter-based generator keyed by
// (seed, restart), so a search is reproducible, and restarts run in parallel without
// changing the outcome (the best restart wins; ties go to the lowest index).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "bf16emu/bias/accumulate.hpp"
#include "bf16emu/bias/generate.hpp"
#include "bf16emu/bias/rng.hpp"
#include "bf16emu/parallel.hpp"

namespace bf16emu::bias {

struct search_spec {
  accumulation acc{};
  knobs k{}; // the starting distribution (and n)
  std::uint64_t seed = 1;
  std::uint64_t iters = 20000; // per restart
  unsigned restarts = 4;
  unsigned threads = 1;
};

struct search_result {
  unsigned restart = 0;
  std::uint64_t evaluations = 0;
  trial_input best;
  trial_result outcome;
  double bound = 0, ratio = 0, sum_abs = 0;
  double start_ratio = 0; // fitness of the random starting point of the winning restart
};

namespace detail_search {

inline double fitness(const accumulation &a, const trial_input &in, std::uint64_t seed, trial_result &out,
                      double &bound) {
  out = accumulate(a, in, seed, 0);
  bound = classic_bound(a, in);
  if (!out.finite) return 0; // overflow is not the kind of error sought here
  return bound > 0 ? std::fabs(out.err) / bound : 0;
}

inline void mutate(counter_rng &g, const knobs &k, trial_input &in) {
  const std::size_t n = in.v.size();
  const int what = static_cast<int>(g.below(7));
  const std::size_t i = g.below(n);
  std::uint32_t vb = in.v[i].bits;
  switch (what) {
  case 0: in.v[i] = draw_value(g, k); break;
  case 1: in.v[i] = bf16::from_bits(vb ^ (1u << g.below(7))); break;
  case 2: in.v[i] = bf16::from_bits(vb ^ 0x8000u); break;
  case 3: {
    const int be = static_cast<int>((vb >> 7) & 0xff) + (g.chance(0.5) ? 1 : -1);
    if (be >= 100 && be <= 140) in.v[i] = bf16::from_bits((vb & 0x807fu) | (std::uint32_t(be) << 7));
    break;
  }
  case 4: in.w[i] = g.chance(0.5) ? bf16::from_bits(0x3f80) : draw_weight(g, k); break;
  case 5: {
    const std::size_t j = g.below(n);
    std::swap(in.v[i], in.v[j]);
    std::swap(in.w[i], in.w[j]);
    break;
  }
  default:
    if (!in.start.is_zero())
      in.start = f32::from_bits(in.start.bits ^ (1u << g.below(16)));
    else
      in.v[i] = bf16::from_bits(vb ^ 1u);
    break;
  }
  in.x[i] = mul_to<binary32>(in.v[i], in.w[i]).value;
  for (std::size_t j = 0; j < n; ++j)
    in.x[j] = mul_to<binary32>(in.v[j], in.w[j]).value;
}

inline search_result climb(const search_spec &s, unsigned restart) {
  search_result r;
  r.restart = restart;
  generate(s.k, s.seed ^ 0x5ea7c4ull, restart, r.best);
  double bound = 0;
  double fit = fitness(s.acc, r.best, s.seed, r.outcome, bound);
  r.bound = bound;
  r.start_ratio = fit;
  counter_rng g{key(s.seed, stream::search, restart)};
  trial_input cand;
  trial_result out;
  for (std::uint64_t it = 0; it < s.iters; ++it) {
    cand = r.best;
    const int moves = 1 + static_cast<int>(g.below(3));
    for (int m = 0; m < moves; ++m)
      mutate(g, s.k, cand);
    double b = 0;
    const double f = fitness(s.acc, cand, s.seed, out, b);
    ++r.evaluations;
    if (f >= fit) {
      fit = f;
      r.best = cand;
      r.outcome = out;
      r.bound = b;
    }
  }
  r.ratio = fit;
  return r;
}

} // namespace detail_search

inline search_result search(const search_spec &s) {
  std::vector<search_result> res(s.restarts);
  parallel_for(s.restarts, s.threads < 1 ? 1 : s.threads, [&](std::uint64_t r, unsigned) {
    res[r] = detail_search::climb(s, static_cast<unsigned>(r));
  });
  search_result best = res.empty() ? search_result{} : res[0];
  for (const auto &r : res)
    if (r.ratio > best.ratio) best = r;
  exact_sum a;
  a.add(abs(best.best.start));
  for (const f32 &x : best.best.x)
    a.add(abs(x));
  best.sum_abs = a.to_double();
  std::uint64_t evals = 0;
  for (const auto &r : res)
    evals += r.evaluations;
  best.evaluations = evals;
  return best;
}

} // namespace bf16emu::bias
