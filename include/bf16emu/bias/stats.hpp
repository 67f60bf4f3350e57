// bf16emu bias: sufficient statistics of the signed errors of many trials.
//
// Sums are kept exactly (superacc), counts as integers, and the worst case with its trial
// index (ties go to the lower index), so merging statistics is exact, commutative and
// associative: the same trials give the same bits however they were split across threads,
// chunks or shards. Means, standard errors and confidence intervals are derived at the end.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

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

  // One line of "key=value" tokens (doubles as %a hexfloats: exact).
  std::string serialize() const {
    std::ostringstream o;
    char b[64];
    auto hf = [&](double d) {
      std::snprintf(b, sizeof b, "%a", d);
      return std::string(b);
    };
    o << "trials=" << trials << " nonfinite=" << nonfinite << " rel_trials=" << rel_trials
      << " s_ulp=" << s_ulp.to_string() << " s_ulp2=" << s_ulp2.to_string() << " s_rel=" << s_rel.to_string()
      << " s_rel2=" << s_rel2.to_string() << " s_abs=" << s_abs.to_string() << " s_mag=" << s_mag.to_string()
      << " away=" << away << " toward=" << toward << " steps_inexact=" << steps_inexact
      << " steps_away=" << steps_away << " has_worst=" << (has_worst ? 1 : 0)
      << " worst_trial=" << worst_trial << " worst_ulp=" << hf(worst_ulp) << " worst_err=" << hf(worst_err)
      << " worst_rel=" << hf(worst_rel);
    return o.str();
  }

  // Parses serialize()'s output; returns an error message, empty on success.
  std::string parse(const std::string &line) {
    *this = stats{};
    std::istringstream in(line);
    std::string tok;
    std::map<std::string, std::string> kv;
    while (in >> tok) {
      const auto eq = tok.find('=');
      if (eq == std::string::npos) return "token without '=': " + tok;
      if (!kv.emplace(tok.substr(0, eq), tok.substr(eq + 1)).second) return "duplicate " + tok.substr(0, eq);
    }
    try {
      auto u = [&](const char *k, std::uint64_t &v) { // decimal digits only: no sign, no wrap
        if (!kv.count(k)) throw std::invalid_argument(std::string("missing ") + k);
        const std::string &t = kv[k];
        const auto r = std::from_chars(t.data(), t.data() + t.size(), v, 10);
        if (t.empty() || r.ec != std::errc{} || r.ptr != t.data() + t.size())
          throw std::invalid_argument(std::string("bad ") + k);
      };
      auto s = [&](const char *k, superacc &v) {
        if (!kv.count(k) || !v.from_string(kv[k])) throw std::invalid_argument(std::string("bad ") + k);
      };
      auto d = [&](const char *k, double &v) {
        if (!kv.count(k)) throw std::invalid_argument(std::string("missing ") + k);
        std::size_t used = 0;
        try {
          v = std::stod(kv[k], &used);
        } catch (const std::exception &) {
          used = 0;
        }
        if (used == 0 || used != kv[k].size()) throw std::invalid_argument(std::string("bad ") + k);
      };
      std::uint64_t hw = 0;
      u("trials", trials);
      u("nonfinite", nonfinite);
      u("rel_trials", rel_trials);
      s("s_ulp", s_ulp);
      s("s_ulp2", s_ulp2);
      s("s_rel", s_rel);
      s("s_rel2", s_rel2);
      s("s_abs", s_abs);
      s("s_mag", s_mag);
      u("away", away);
      u("toward", toward);
      u("steps_inexact", steps_inexact);
      u("steps_away", steps_away);
      u("has_worst", hw);
      has_worst = hw != 0;
      u("worst_trial", worst_trial);
      d("worst_ulp", worst_ulp);
      d("worst_err", worst_err);
      d("worst_rel", worst_rel);
    } catch (const std::exception &e) {
      return e.what();
    }
    return {};
  }
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
