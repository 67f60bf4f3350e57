// bf16emu attention: the error ledger.
//
// A ledger counts every rounding of an attention run by *site* (where in the algorithm it
// happened): how many roundings, how many made the value larger / smaller / left it exact,
// how many were exact ties, and the sum of the signed errors (result - exact of that one
// operation) in binary64 with compensation. Events whose operand involved P-bar = 1 exactly
// are counted again apart. The ledger hooks into the core's tracer argument
// (`site_tracer`) and takes per-block records of the tensor-core model (`record`).
// With `null_observer` every hook compiles away.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bf16emu/attention/site.hpp"
#include "bf16emu/core.hpp"

namespace bf16emu::attention {

// Binary64 sum with Neumaier compensation.
struct comp_sum {
  double s = 0, c = 0;
  void add(double x) {
    const double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  double value() const { return s + c; }
  void merge(const comp_sum &o) {
    add(o.s);
    add(o.c);
  }
};

struct sign_counts {
  std::uint64_t count = 0, pos = 0, neg = 0, zero = 0, ties = 0;
  std::uint64_t away = 0, toward = 0; // inexact: magnitude increased / decreased
  comp_sum sum;                       // signed error
  comp_sum sum_abs;                   // |error|
  comp_sum sum_rel;                   // signed error / |exact value| (scale-free)
  void add(double err_hi, double err_lo, bool tie, bool value_negative, double magnitude) {
    ++count;
    const double e = err_hi + err_lo;
    const bool p = err_hi > 0 || (err_hi == 0 && err_lo > 0), n = err_hi < 0 || (err_hi == 0 && err_lo < 0);
    if (p)
      ++pos;
    else if (n)
      ++neg;
    else
      ++zero;
    if (p || n) ++((n == value_negative) ? away : toward);
    if (tie) ++ties;
    sum.add(err_hi);
    sum.add(err_lo);
    sum_abs.add(std::fabs(e));
    if (magnitude > 0) sum_rel.add(e / magnitude);
  }
  void merge(const sign_counts &o) {
    count += o.count, pos += o.pos, neg += o.neg, zero += o.zero, ties += o.ties;
    away += o.away, toward += o.toward;
    sum.merge(o.sum);
    sum_abs.merge(o.sum_abs);
    sum_rel.merge(o.sum_rel);
  }
  double mean() const { return count ? sum.value() / double(count) : 0.0; }
};

struct site_stats {
  sign_counts all;
  sign_counts p_one; // the subset whose operands involved P-bar = 1 exactly
  void merge(const site_stats &o) {
    all.merge(o.all);
    p_one.merge(o.p_one);
  }
};

class ledger {
public:
  static constexpr bool enabled = true;
  site_stats sites[site_count];
  std::uint64_t p_entries = 0;       // unmasked P-bar entries
  std::uint64_t p_one_entries = 0;   // ... equal to 1 exactly
  std::uint64_t rows_with_p_one = 0; // (row, KV block) pairs with P-bar = 1 at least once
  std::uint64_t rows_tied = 0;       // ... at least twice

  void record(site s, const rounding_event &e, bool p1 = false) {
    const bool tie = e.dec == decision::tie_down || e.dec == decision::tie_up;
    const double mag = std::ldexp(double(e.kept), e.lsb_exp); // |exact| to within one ulp
    sites[int(s)].all.add(e.err_hi, e.err_lo, tie, e.sign, mag);
    if (p1) sites[int(s)].p_one.add(e.err_hi, e.err_lo, tie, e.sign, mag);
  }
  // An event computed outside the core (tensor-core block, exp polynomial): err = result - exact;
  // value_negative: the sign of the result; magnitude: |exact value| (0: unknown).
  void record(site s, double err, bool tie, bool p1, bool value_negative = false, double magnitude = 0) {
    sites[int(s)].all.add(err, 0.0, tie, value_negative, magnitude);
    if (p1) sites[int(s)].p_one.add(err, 0.0, tie, value_negative, magnitude);
  }
  void count_p(std::uint64_t entries, std::uint64_t ones) {
    p_entries += entries;
    p_one_entries += ones;
    if (ones >= 1) ++rows_with_p_one;
    if (ones >= 2) ++rows_tied;
  }
  void merge(const ledger &o) {
    for (int i = 0; i < site_count; ++i)
      sites[i].merge(o.sites[i]);
    p_entries += o.p_entries, p_one_entries += o.p_one_entries;
    rows_with_p_one += o.rows_with_p_one, rows_tied += o.rows_tied;
  }
};

// The "ledger off" observer: every call is a no-op and every tracer is disabled.
struct null_observer {
  static constexpr bool enabled = false;
  void record(site, const rounding_event &, bool = false) {}
  void record(site, double, bool, bool, bool = false, double = 0) {}
  void count_p(std::uint64_t, std::uint64_t) {}
};

// A core tracer that files each event under one site.
template <class Obs> struct site_tracer {
  static constexpr bool enabled = Obs::enabled;
  Obs *obs;
  site s;
  bool p1;
  void operator()(const rounding_event &e) {
    if constexpr (Obs::enabled) obs->record(s, e, p1);
  }
};

// ---------------------------------------------------------------------------
// Output error against the exact policy.

// The statistics are over the pairs where both values are finite; `nonfinite` counts the
// others (a NaN or Inf output where the exact value is finite, e.g. a row whose every P-bar
// underflowed so that l = 0), and `first_nonfinite` is the first such index (or -1).
// stderr_signed treats the n errors as independent. stderr_rows groups them by row (`row_len`
// consecutive elements, one output row): the cluster-robust standard error of the mean,
// sqrt(G/(G-1) * sum_g (sum_{i in g} (e_i - mean))^2) / n over G rows, which stays honest when
// the errors of one row share a cause (one rounded weight scales the whole row). stderr_heads
// does the same per head (batch x heads independent draws of the inputs): for a fixed input
// the errors are deterministic, so only independent heads test whether an arithmetic is
// biased for a scenario rather than for one draw of it (docs/paper-reproduction.md, item 2).
struct error_summary {
  std::uint64_t n = 0, nonfinite = 0;
  long long first_nonfinite = -1;
  double mean_signed = 0, stderr_signed = 0, stderr_rows = 0, stderr_heads = 0, mean_abs = 0, max_abs = 0,
         rel_fro = 0;
  std::uint64_t positive = 0, negative = 0, zero = 0;
  std::map<int, std::uint64_t> ulp_hist; // signed error in ulps of the output format, clamped to +-8
  double z() const { return stderr_signed > 0 ? mean_signed / stderr_signed : 0.0; }
  double z_rows() const { return stderr_rows > 0 ? mean_signed / stderr_rows : 0.0; }
  double z_heads() const { return stderr_heads > 0 ? mean_signed / stderr_heads : 0.0; }
};

// ulp of a value in a format with `frac_bits` fraction bits and exponent range of FP32/BF16;
// 0 means no rounding (binary64 output): the histogram then holds only bin 0.
inline double ulp_of(double x, int frac_bits) {
  const double a = std::fabs(x);
  int e = a > 0 ? std::ilogb(a) : -126;
  if (e < -126) e = -126;
  return std::ldexp(1.0, e - frac_bits);
}

// got vs want (exact), elementwise; out_frac_bits: fraction bits of the output format
// (7 for BF16, 23 for FP32, 52 for binary64); row_len, head_len: elements per row and per
// head for stderr_rows and stderr_heads (0: not computed).
inline error_summary summarize_error(const std::vector<double> &got, const std::vector<double> &want,
                                     int out_frac_bits, std::size_t row_len = 0, std::size_t head_len = 0) {
  error_summary r;
  const std::size_t total = got.size();
  if (total == 0) return r;
  auto finite = [&](std::size_t i) { return std::isfinite(got[i]) && std::isfinite(want[i]); };
  comp_sum s, sa, num, den;
  for (std::size_t i = 0; i < total; ++i) {
    if (!finite(i)) {
      if (r.nonfinite++ == 0) r.first_nonfinite = static_cast<long long>(i);
      continue;
    }
    ++r.n;
    const double e = got[i] - want[i];
    s.add(e);
    sa.add(std::fabs(e));
    num.add(e * e);
    den.add(want[i] * want[i]);
    if (std::fabs(e) > r.max_abs) r.max_abs = std::fabs(e);
    if (e > 0)
      ++r.positive;
    else if (e < 0)
      ++r.negative;
    else
      ++r.zero;
    long u = std::lround(e / ulp_of(want[i], out_frac_bits));
    if (u > 8) u = 8;
    if (u < -8) u = -8;
    ++r.ulp_hist[int(u)];
  }
  if (r.n == 0) return r;
  r.mean_signed = s.value() / double(r.n);
  r.mean_abs = sa.value() / double(r.n);
  comp_sum var;
  for (std::size_t i = 0; i < total; ++i)
    if (finite(i)) {
      const double d = (got[i] - want[i]) - r.mean_signed;
      var.add(d * d);
    }
  if (r.n > 1) r.stderr_signed = std::sqrt(var.value() / double(r.n - 1) / double(r.n));
  // Cluster-robust standard error over groups of `len` consecutive elements (0 if < 2 groups).
  auto clustered = [&](std::size_t len) {
    if (len == 0) return 0.0;
    comp_sum sq;
    std::uint64_t groups = 0;
    for (std::size_t g0 = 0; g0 < total; g0 += len) {
      comp_sum dev; // sum over the group of (e_i - mean)
      bool any = false;
      for (std::size_t i = g0; i < std::min(total, g0 + len); ++i)
        if (finite(i)) dev.add((got[i] - want[i]) - r.mean_signed), any = true;
      if (!any) continue;
      ++groups;
      sq.add(dev.value() * dev.value());
    }
    return groups > 1 ? std::sqrt(double(groups) / double(groups - 1) * sq.value()) / double(r.n) : 0.0;
  };
  r.stderr_rows = clustered(row_len);
  r.stderr_heads = clustered(head_len);
  r.rel_fro = den.value() > 0 ? std::sqrt(num.value() / den.value()) : 0.0;
  return r;
}

// ---------------------------------------------------------------------------
// Element trace: O[T, i] through its accumulation (the paper's figure 6).

struct trace_point {
  long step = 0;         // processing order
  long t = 0;            // key position
  double pbar = 0;       // P-bar[T, t] as used by the policy
  bool boundary = false; // a rounding point of the accumulator (block end) follows this t
  double running = 0;    // the policy's unnormalised accumulator for O[T, i] after t
  double exact = 0;      // binary64 accumulator with the same running max
  double cum_error = 0;  // running - exact
  double exact_l = 0;    // binary64 running row sum with the same max
  double norm_error = 0; // cum_error / exact_l: the error on the scale of the output
};

struct trace_request {
  long row = -1, col = -1; // T, i; row < 0: off
  long batch = 0, head = 0;
  bool active() const { return row >= 0; }
};

} // namespace bf16emu::attention
