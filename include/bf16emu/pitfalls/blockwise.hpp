// bf16emu pitfalls: the attention backward as a sum over (query block, KV block) pairs, with the
// order of that sum as a parameter.
//
// The sequence is cut into nb blocks of b rows. For every pair (i, j) that the mask allows
// (all pairs, or j <= i when causal) the reference backward of the attention library
// (attention::backward_head) runs on Q_i against K_j, V_j with the *global* O_i and L_i (the
// forward's output and log-sum-exp of those rows), giving the pair's partial gradients
//
//   dQ_ij = dS_ij K_j,   dK_ij = dS_ij^T Q_i,   dV_ij = P_ij^T dO_i.
//
// dQ_i = sum_j dQ_ij and dK_j = sum_i dK_ij (dV_j likewise) are then formed in the order a
// `schedule` fixes, each addition one FP32 rounding (binary64 under the exact policy), into a
// zero-initialised accumulator: the model of FlashAttention's dQ accumulation buffer
// (FP32 atomics, serialised in a fixed order in the deterministic mode). A real kernel keeps
// dK_j, dV_j in its MMA accumulators across query tiles; here they are summed the same way as
// dQ, which has the same kind of order dependence. Partials are computed in parallel, each into
// its own slot, and summed afterwards, so the bits depend on the schedule only, not on the
// thread count.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bf16emu/attention/backward.hpp"
#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/ledger.hpp"
#include "bf16emu/attention/scenario.hpp"
#include "bf16emu/parallel.hpp"

namespace bf16emu::pitfalls {

namespace at = bf16emu::attention;

// Pair (i, j) of blocks of b rows: Q rows i*b.., K/V rows j*b... The pair sees the causal mask
// only on the diagonal (equal offsets); below it every key is visible.
inline at::head_view pair_view(const at::head_view &h, long b, long i, long j) {
  return {b, h.d, h.q + i * b * h.d, h.k + j * b * h.d, h.v + j * b * h.d};
}
inline at::forward_config pair_config(const at::forward_config &cfg, long i, long j) {
  at::forward_config c = cfg;
  c.causal = cfg.causal && i == j;
  c.trace_row = c.trace_col = -1;
  return c;
}
inline bool pair_allowed(bool causal, long i, long j) { return !causal || j <= i; }

// The worker count for parallel_for from the pitfalls' signed thread option (<= 0: every
// hardware thread).
inline unsigned worker_threads(int threads) { return threads > 0 ? static_cast<unsigned>(threads) : 0u; }

// Partial gradients of every allowed pair; slot i*nb + j (empty when the pair is masked).
struct pair_partials {
  long nb = 0, b = 0, d = 0;
  bool causal = false;
  std::vector<std::vector<double>> dq, dk, dv;
  std::vector<long> completion; // pair slots in the order their computation finished
};

// o, lse: the forward's O (n x d) and L (n) that the backward reads (global, not per pair).
inline pair_partials pair_backward(const at::forward_config &cfg, const at::head_view &h, const double *dout,
                                   const std::vector<double> &o, const std::vector<double> &lse, long b,
                                   int threads) {
  pair_partials p;
  p.b = b, p.d = h.d, p.nb = h.n / b, p.causal = cfg.causal;
  const long nb = p.nb, d = h.d;
  p.dq.resize(nb * nb), p.dk.resize(nb * nb), p.dv.resize(nb * nb);
  std::vector<long> tasks;
  for (long i = 0; i < nb; ++i)
    for (long j = 0; j < nb; ++j)
      if (pair_allowed(cfg.causal, i, j)) tasks.push_back(i * nb + j);
  // Each pair writes its own slots; the completion order is recorded on purpose (the
  // `arrival` schedule below shows what summing in that order does).
  std::vector<long> done;
  std::mutex done_mu;
  parallel_for(tasks.size(), worker_threads(threads), [&](std::uint64_t t, unsigned) {
    const long slot = tasks[t], i = slot / nb, j = slot % nb;
    at::forward_result f;
    f.o.assign(o.begin() + i * b * d, o.begin() + (i + 1) * b * d);
    f.lse.assign(lse.begin() + i * b, lse.begin() + (i + 1) * b);
    at::null_observer none;
    at::backward_result r =
        at::backward_head(pair_config(cfg, i, j), pair_view(h, b, i, j), dout + i * b * d, f, none);
    p.dq[slot] = std::move(r.dq), p.dk[slot] = std::move(r.dk), p.dv[slot] = std::move(r.dv);
    std::lock_guard<std::mutex> lock(done_mu);
    done.push_back(long(t));
  });
  for (long t : done)
    p.completion.push_back(tasks[t]);
  return p;
}

// ---------------------------------------------------------------------------
// Accumulation orders.

enum class schedule_kind : std::uint8_t {
  ascending,         // dQ_i over KV blocks j = 0, 1, ...; dK_j, dV_j over query blocks i = 0, 1, ...
                     // (FlashAttention-2/3 deterministic mode: KV-tile order of the dQ writes)
  descending,        // both reversed
  dash_descending_q, // DASH "Descending Q-Tile Iteration": each KV block walks its query blocks
                     // from the last (dK_j, dV_j over i = nb-1, ..., 0); dQ_i keeps the KV-tile
                     // order j = 0, 1, ...
  dash_shift,        // DASH "Shift Scheduling": KV block j visits query block (j + t) mod nb at step
                     // t, so dQ_i receives j = i, i-1, ..., i+1 (mod nb) in that order and dK_j,
                     // dV_j sum i = j, j+1, ..., j-1 (mod nb); masked pairs are skipped
  random,            // one fixed arbitrary order per block (seeded): what some atomics order gives
  arrival,           // the order the pair computations finished in (nondeterministic)
};

inline const char *to_string(schedule_kind k) {
  switch (k) {
  case schedule_kind::ascending: return "ascending";
  case schedule_kind::descending: return "descending";
  case schedule_kind::dash_descending_q: return "dash-descending-q";
  case schedule_kind::dash_shift: return "dash-shift";
  case schedule_kind::random: return "random";
  default: return "arrival";
  }
}

struct schedule {
  schedule_kind kind = schedule_kind::ascending;
  std::uint64_t seed = 0;
  std::vector<std::vector<long>> dq; // dq[i]: KV blocks j in the order they are added to dQ_i
  std::vector<std::vector<long>> kv; // kv[j]: query blocks i in the order they are added to dK_j, dV_j
};

// The schedule for nb blocks. `arrival` needs the pairs' completion order (slots i*nb + j).
inline schedule make_schedule(schedule_kind kind, long nb, bool causal, std::uint64_t seed = 0,
                              const std::vector<long> &completion = {}) {
  schedule s;
  s.kind = kind, s.seed = seed;
  s.dq.assign(nb, {}), s.kv.assign(nb, {});
  auto mod = [nb](long x) { return ((x % nb) + nb) % nb; };
  if (kind == schedule_kind::arrival) {
    for (long slot : completion)
      s.dq[slot / nb].push_back(slot % nb), s.kv[slot % nb].push_back(slot / nb);
    return s;
  }
  for (long a = 0; a < nb; ++a)
    for (long t = 0; t < nb; ++t) {
      long j = t, i = t; // dq[a] gets KV block j; kv[a] gets query block i
      switch (kind) {
      case schedule_kind::descending: j = nb - 1 - t, i = nb - 1 - t; break;
      case schedule_kind::dash_descending_q: i = nb - 1 - t; break;
      case schedule_kind::dash_shift: j = mod(a - t), i = mod(a + t); break;
      default: break;
      }
      if (pair_allowed(causal, a, j)) s.dq[a].push_back(j);
      if (pair_allowed(causal, i, a)) s.kv[a].push_back(i);
    }
  if (kind == schedule_kind::random) {
    at::rng g(seed);
    auto shuffle = [&](std::vector<long> &v) {
      for (long k = long(v.size()) - 1; k > 0; --k)
        std::swap(v[k], v[long(g.next() % std::uint64_t(k + 1))]);
    };
    for (auto &v : s.dq)
      shuffle(v);
    for (auto &v : s.kv)
      shuffle(v);
  }
  return s;
}

struct grads {
  std::vector<double> dq, dk, dv;
  int frac_bits = 23; // format the values are held in (23 FP32, 7 BF16, 52 binary64)
};

// Sums the partials in the schedule's order. Accumulator: FP32 (binary64 under the exact
// policy); the result is rounded to BF16 at the end when out_bf16 (a kernel writing BF16
// gradients) or under the paper policy.
inline grads accumulate(const pair_partials &p, const schedule &s, at::policy_kind kind,
                        bool out_bf16 = false) {
  const long nb = p.nb, b = p.b, d = p.d, bd = b * d;
  const bool exact = kind == at::policy_kind::exact;
  at::null_observer none;
  const at::f32_ops<at::null_observer> o{&none};
  const bool to16 = !exact && (out_bf16 || kind == at::policy_kind::paper);
  grads g;
  g.frac_bits = exact ? 52 : to16 ? 7 : 23;
  g.dq.assign(nb * bd, 0.0), g.dk.assign(nb * bd, 0.0), g.dv.assign(nb * bd, 0.0);
  auto add_into = [&](double *acc, const std::vector<double> &part) {
    for (long e = 0; e < bd; ++e)
      acc[e] = exact ? acc[e] + part[e] : o.add(acc[e], part[e], at::site::backward);
  };
  for (long a = 0; a < nb; ++a) {
    for (long j : s.dq[a])
      add_into(&g.dq[a * bd], p.dq[a * nb + j]);
    for (long i : s.kv[a]) {
      add_into(&g.dk[a * bd], p.dk[i * nb + a]);
      add_into(&g.dv[a * bd], p.dv[i * nb + a]);
    }
  }
  if (to16)
    for (auto *v : {&g.dq, &g.dk, &g.dv})
      for (double &x : *v)
        x = o.to16(x, at::site::backward);
  return g;
}

} // namespace bf16emu::pitfalls
