// bf16emu bias: sufficient statistics of the signed errors of many trials.
//
// Sums are kept exactly (superacc), counts as integers, and the worst case with its trial
// index (ties go to the lower index), so merging statistics is exact, commutative and
// associative: the same trials give the same bits however they were split across threads,
// chunks or shards. Means, standard errors and confidence intervals are derived at the end.
// Their text form (the bias state file) is io::bias_stats_text / parse_bias_stats (src/io).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bf16emu/bias/accumulate.hpp"
#include "bf16emu/bias/wide.hpp"

namespace bf16emu::bias {

struct stats {
  std::uint64_t trials = 0;    // finite trials (the ones with an error)
  std::uint64_t nonfinite = 0; // results that overflowed
  std::uint64_t rel_trials = 0;
  superacc s_ulp, s_ulp2;             // sum of err/ulp and of its square (each square rounded to binary64)
  superacc s_rel, s_rel2;             // sum of err/|exact| and of its square
  superacc s_abs;                     // sum of err
  superacc s_mag;                     // sum of err/ulp * sign(exact): > 0 means away from zero
  std::uint64_t away = 0, toward = 0; // results above / below the exact value in magnitude
  std::uint64_t steps_inexact = 0, steps_away = 0;
  bool has_worst = false;
  std::uint64_t worst_trial = 0;
  double worst_ulp = 0, worst_err = 0, worst_rel = 0;

  void add(const trial_result &t, std::uint64_t trial) {
    steps_inexact += t.steps.inexact;
    steps_away += t.steps.away;
    if (!t.finite) {
      ++nonfinite;
      return;
    }
    ++trials;
    s_ulp.add(t.err_ulp);
    s_ulp2.add(t.err_ulp * t.err_ulp);
    s_abs.add(t.err);
    s_mag.add(t.exact < 0 ? -t.err_ulp : t.err_ulp);
    if (t.rel_defined) {
      ++rel_trials;
      s_rel.add(t.rel);
      s_rel2.add(t.rel * t.rel);
    }
    if (t.direction > 0) ++away;
    if (t.direction < 0) ++toward;
    consider_worst(trial, t.err_ulp, t.err, t.rel);
  }

  void consider_worst(std::uint64_t trial, double ulp, double err, double rel) {
    const double a = std::fabs(ulp), b = std::fabs(worst_ulp);
    if (!has_worst || a > b || (a == b && trial < worst_trial)) {
      has_worst = true;
      worst_trial = trial;
      worst_ulp = ulp;
      worst_err = err;
      worst_rel = rel;
    }
  }

  void merge(const stats &o) {
    trials += o.trials;
    nonfinite += o.nonfinite;
    rel_trials += o.rel_trials;
    s_ulp.add(o.s_ulp);
    s_ulp2.add(o.s_ulp2);
    s_rel.add(o.s_rel);
    s_rel2.add(o.s_rel2);
    s_abs.add(o.s_abs);
    s_mag.add(o.s_mag);
    away += o.away;
    toward += o.toward;
    steps_inexact += o.steps_inexact;
    steps_away += o.steps_away;
    if (o.has_worst) consider_worst(o.worst_trial, o.worst_ulp, o.worst_err, o.worst_rel);
  }

  friend bool operator==(const stats &, const stats &) = default;
};

// Derived numbers for reports and tests.
struct summary {
  std::uint64_t trials = 0, nonfinite = 0;
  double mean_ulp = 0, se_ulp = 0, ci99_lo_ulp = 0, ci99_hi_ulp = 0, z = 0;
  double mean_rel = 0, se_rel = 0, ci99_lo_rel = 0, ci99_hi_rel = 0;
  double mean_abs = 0;
  double mean_mag_ulp = 0, se_mag_ulp = 0, z_mag = 0; // > 0: away from zero on average
  double share_away = 0, share_toward = 0;            // of the trials
  double share_steps_away = 0;                        // of the inexact step roundings
  std::uint64_t steps_inexact = 0;
  std::uint64_t worst_trial = 0;
  double worst_ulp = 0, worst_err = 0, worst_rel = 0;
};

// 99% two-sided normal quantile.
inline constexpr double z99 = 2.5758293035489004;

inline void mean_se(const superacc &s1, const superacc &s2, std::uint64_t n, double &mean, double &se) {
  mean = se = 0;
  if (n == 0) return;
  const double dn = static_cast<double>(n);
  mean = s1.to_double() / dn;
  if (n < 2) return;
  // Sample variance (S2 - S1^2/n) / (n - 1); S1, S2 are exact sums.
  double var = (s2.to_double() - mean * s1.to_double()) / (dn - 1);
  if (var < 0) var = 0;
  se = std::sqrt(var / dn);
}

inline summary summarize(const stats &s) {
  summary r;
  r.trials = s.trials;
  r.nonfinite = s.nonfinite;
  mean_se(s.s_ulp, s.s_ulp2, s.trials, r.mean_ulp, r.se_ulp);
  mean_se(s.s_rel, s.s_rel2, s.rel_trials, r.mean_rel, r.se_rel);
  // |err * sign(exact)| = |err|: the same sum of squares.
  mean_se(s.s_mag, s.s_ulp2, s.trials, r.mean_mag_ulp, r.se_mag_ulp);
  r.ci99_lo_ulp = r.mean_ulp - z99 * r.se_ulp;
  r.ci99_hi_ulp = r.mean_ulp + z99 * r.se_ulp;
  r.ci99_lo_rel = r.mean_rel - z99 * r.se_rel;
  r.ci99_hi_rel = r.mean_rel + z99 * r.se_rel;
  r.z = r.se_ulp > 0 ? r.mean_ulp / r.se_ulp : 0;
  r.z_mag = r.se_mag_ulp > 0 ? r.mean_mag_ulp / r.se_mag_ulp : 0;
  r.mean_abs = s.trials ? s.s_abs.to_double() / static_cast<double>(s.trials) : 0;
  if (s.trials) {
    r.share_away = static_cast<double>(s.away) / static_cast<double>(s.trials);
    r.share_toward = static_cast<double>(s.toward) / static_cast<double>(s.trials);
  }
  r.steps_inexact = s.steps_inexact;
  r.share_steps_away =
      s.steps_inexact ? static_cast<double>(s.steps_away) / static_cast<double>(s.steps_inexact) : 0;
  r.worst_trial = s.worst_trial;
  r.worst_ulp = s.worst_ulp;
  r.worst_err = s.worst_err;
  r.worst_rel = s.worst_rel;
  return r;
}

} // namespace bf16emu::bias
