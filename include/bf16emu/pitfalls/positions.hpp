// bf16emu pitfalls: position ids, RoPE phases and ALiBi biases built in a low-precision dtype.
//
// Model of `torch.arange(start, end, step, dtype=bf16 or f16)`: PyTorch computes every element
// in the accumulate type of the dtype (float for BFloat16 and Half, acc_type<T>) as
// start + step * i and casts the result to the dtype once (round to nearest even):
//
//   value(i) = RN_dtype(RN32(start + RN32(step * RN32(i))))
//
// (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp, scalar path, and the CUDA kernel in
// aten/src/ATen/native/cuda/RangeFactories.cu). For integer start and step and i < 2^24 the
// FP32 part is exact, so value(i) = RN_dtype(start + i*step). The vectorised CPU path first
// rounds a vector's base to the dtype and adds i*step to it; it can differ from the scalar
// formula once the base itself is inexact (above 4096 in BF16 for 16-wide vectors); that path is
// not modelled. Every rounding below is the core's (convert, mul, mul_to): no local rounding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "bf16emu/core.hpp"

namespace bf16emu::pitfalls {

enum class id_dtype : std::uint8_t { bf16, f16 };

inline const char *to_string(id_dtype t) { return t == id_dtype::bf16 ? "bf16" : "f16"; }

// A binary64 value rounded once (RNE) to the dtype, back as the exact binary64 value.
inline double round_to(id_dtype t, double x) {
  if (t == id_dtype::bf16) return to_double(convert<bfloat16>(from_double(x)).value);
  return to_double(convert<binary16>(from_double(x)).value);
}
inline double round_to_f32(double x) { return to_double(convert<binary32>(from_double(x)).value); }

// Element i of torch.arange(start, ..., step, dtype=t) (see the header comment).
inline double arange_value(id_dtype t, long i, double start = 0, double step = 1) {
  const f32 fi = convert<binary32>(from_double(double(i))).value;
  const f32 prod = mul(convert<binary32>(from_double(step)).value, fi).value;
  const f32 sum = add(convert<binary32>(from_double(start)).value, prod).value;
  if (t == id_dtype::bf16) return to_double(convert<bfloat16>(sum).value);
  return to_double(convert<binary16>(sum).value);
}

// ---------------------------------------------------------------------------
// Position ids 0..n-1.

struct id_stats {
  id_dtype dtype = id_dtype::bf16;
  long n = 0;
  long exact = 0;       // ids whose value equals the id
  long distinct = 0;    // distinct values among the n ids
  long longest_run = 0; // most ids sharing one value
  double longest_run_value = 0;
  long longest_run_first = 0; // first id of that run
  long first_collision = -1;  // first id whose value equals an earlier id's value; -1: none
  long non_finite = 0;        // ids that overflow to infinity (f16: from 65520 on)
  double max_abs_error = 0;   // max |value - id| over the finite values
  double exact_share() const { return n ? double(exact) / double(n) : 0.0; }
};

// arange is non-decreasing, so equal values form runs of consecutive ids.
inline id_stats position_stats(id_dtype t, long n) {
  id_stats s;
  s.dtype = t, s.n = n;
  double prev = std::numeric_limits<double>::quiet_NaN();
  long run = 0, run_first = 0;
  for (long i = 0; i < n; ++i) {
    const double v = arange_value(t, i);
    if (v == double(i)) ++s.exact;
    if (!std::isfinite(v))
      ++s.non_finite;
    else if (std::fabs(v - double(i)) > s.max_abs_error)
      s.max_abs_error = std::fabs(v - double(i));
    if (i > 0 && v == prev) {
      ++run;
      if (s.first_collision < 0) s.first_collision = i;
    } else {
      ++s.distinct;
      run = 1, run_first = i;
    }
    if (run > s.longest_run) s.longest_run = run, s.longest_run_value = v, s.longest_run_first = run_first;
    prev = v;
  }
  return s;
}

// Share of exact ids for every n in `ns` (ascending), in one pass over the ids.
struct share_point {
  long n = 0, exact = 0;
  double share = 0;
};
inline std::vector<share_point> exact_share_curve(id_dtype t, const std::vector<long> &ns) {
  std::vector<share_point> out;
  long exact = 0, i = 0;
  for (long n : ns) {
    for (; i < n; ++i)
      exact += arange_value(t, i) == double(i);
    out.push_back({n, exact, n ? double(exact) / double(n) : 0.0});
  }
  return out;
}

// ---------------------------------------------------------------------------
// RoPE: theta[p, k] = p * inv_freq[k], inv_freq[k] = base^(-2k/d), k = 0 .. d/2 - 1.
//
// Low-precision pipeline (what a model computes): inv_freq held in FP32 (or BF16 with
// inv_freq_bf16), p the position id (built in the dtype, or FP32 = the exact integer),
// theta = RN32(p * inv_freq), cos/sin = RN32(cos/sin(theta)) (correctly rounded FP32
// cos/sin: binary64 cos rounded once). Reference: binary64 p * base^(-2k/d) and its cos/sin.

struct rope_row {
  int k = 0;
  double inv_freq = 0;      // binary64 base^(-2k/d)
  double inv_freq_used = 0; // as held (FP32 or BF16)
  double wavelength = 0;    // 2 pi / inv_freq, in positions
  // max over positions of |theta - theta_exact| and of the cos/sin errors
  double phase_lowp = 0, cos_lowp = 0, sin_lowp = 0; // ids in the dtype
  double phase_f32 = 0, cos_f32 = 0, sin_f32 = 0;    // ids in FP32
  long worst_pos_lowp = 0;                           // position of phase_lowp
};

struct rope_report {
  id_dtype dtype = id_dtype::bf16;
  long n = 0;
  int head_dim = 0;
  double base = 10000;
  bool inv_freq_bf16 = false;
  std::vector<rope_row> rows;
};

inline rope_report rope_errors(id_dtype t, long n, int head_dim, double base, bool inv_freq_bf16 = false) {
  rope_report r;
  r.dtype = t, r.n = n, r.head_dim = head_dim, r.base = base, r.inv_freq_bf16 = inv_freq_bf16;
  std::vector<double> ids(n);
  for (long p = 0; p < n; ++p)
    ids[p] = arange_value(t, p);
  for (int k = 0; k < head_dim / 2; ++k) {
    rope_row row;
    row.k = k;
    row.inv_freq = std::pow(base, -2.0 * k / double(head_dim));
    row.inv_freq_used = inv_freq_bf16 ? round_to(id_dtype::bf16, row.inv_freq) : round_to_f32(row.inv_freq);
    row.wavelength = 2 * 3.14159265358979323846 / row.inv_freq;
    const f32 w = convert<binary32>(from_double(row.inv_freq_used)).value; // exact
    for (long p = 0; p < n; ++p) {
      const double th_ex = double(p) * row.inv_freq;
      const double c_ex = std::cos(th_ex), s_ex = std::sin(th_ex);
      for (int lowp = 0; lowp < 2; ++lowp) {
        const double pos = lowp ? ids[p] : double(p);
        if (!std::isfinite(pos)) continue; // f16 overflow: no phase
        const double th = to_double(mul(convert<binary32>(from_double(pos)).value, w).value);
        const double pe = std::fabs(th - th_ex);
        const double ce = std::fabs(round_to_f32(std::cos(th)) - c_ex);
        const double se = std::fabs(round_to_f32(std::sin(th)) - s_ex);
        if (lowp) {
          if (pe > row.phase_lowp) row.phase_lowp = pe, row.worst_pos_lowp = p;
          row.cos_lowp = std::max(row.cos_lowp, ce);
          row.sin_lowp = std::max(row.sin_lowp, se);
        } else {
          row.phase_f32 = std::max(row.phase_f32, pe);
          row.cos_f32 = std::max(row.cos_f32, ce);
          row.sin_f32 = std::max(row.sin_f32, se);
        }
      }
    }
    r.rows.push_back(row);
  }
  return r;
}

// ---------------------------------------------------------------------------
// ALiBi: bias[h, i, j] = -m_h * (i - j) for j <= i (causal), slopes m_h of Press et al.
// (geometric 2^(-8/H') per head, with the interleaving for H not a power of two).
//
// Low-precision build: the distance (i - j) as a dtype arange value, the slope rounded to the
// dtype, the product rounded once to the dtype (mul_to). The bias depends only on the
// distance, so the matrix is summarised per distance, each weighted by its n - distance
// entries in the causal n x n matrix.

inline std::vector<double> alibi_slopes(int heads) {
  auto pow2_slopes = [](int h) {
    std::vector<double> s(h);
    const double start = std::exp2(-8.0 / h);
    for (int i = 0; i < h; ++i)
      s[i] = std::pow(start, i + 1);
    return s;
  };
  if (heads < 1) return {};
  int p = 1;
  while (p * 2 <= heads)
    p *= 2;
  std::vector<double> s = pow2_slopes(p);
  if (p != heads) {
    const std::vector<double> extra = pow2_slopes(2 * p);
    for (int i = 0; int(s.size()) < heads; i += 2)
      s.push_back(extra[i]);
  }
  return s;
}

struct alibi_head {
  int head = 0;
  double slope = 0, slope_used = 0;
  double max_abs_error = 0, max_rel_error = 0, rms_error = 0; // over the causal matrix entries
  long distinct = 0;                                          // distinct bias values over the n distances
  long colliding_distances = 0; // distances whose bias equals another distance's
  long first_collision = -1;    // first distance whose bias equals a smaller distance's
  double colliding_entries = 0; // share of the causal matrix entries with a colliding distance
};

struct alibi_report {
  id_dtype dtype = id_dtype::bf16;
  long n = 0;
  int heads = 0;
  std::vector<alibi_head> rows;
};

inline alibi_report alibi_errors(id_dtype t, long n, int heads) {
  alibi_report r;
  r.dtype = t, r.n = n, r.heads = heads;
  const std::vector<double> slopes = alibi_slopes(heads);
  std::vector<double> bias(n);
  for (int h = 0; h < heads; ++h) {
    alibi_head a;
    a.head = h, a.slope = slopes[h], a.slope_used = round_to(t, slopes[h]);
    double sq = 0, entries = 0, collide = 0;
    for (long dist = 0; dist < n; ++dist) {
      const double dv = arange_value(t, dist);
      double b;
      if (t == id_dtype::bf16)
        b = to_double(mul_to<bfloat16>(convert<bfloat16>(from_double(a.slope_used)).value,
                                       convert<bfloat16>(from_double(dv)).value)
                          .value);
      else
        b = to_double(mul_to<binary16>(convert<binary16>(from_double(a.slope_used)).value,
                                       convert<binary16>(from_double(dv)).value)
                          .value);
      bias[dist] = -b;
      const double ex = -a.slope * double(dist);
      const double e = std::fabs(bias[dist] - ex);
      const double w = double(n - dist);
      entries += w;
      if (std::isfinite(e)) {
        sq += w * e * e;
        a.max_abs_error = std::max(a.max_abs_error, e);
        if (dist > 0) a.max_rel_error = std::max(a.max_rel_error, e / std::fabs(ex));
      }
    }
    // bias is non-increasing in the distance: equal values are adjacent
    for (long dist = 0; dist < n; ++dist) {
      const bool eq_prev = dist > 0 && bias[dist] == bias[dist - 1];
      const bool eq_next = dist + 1 < n && bias[dist] == bias[dist + 1];
      if (!eq_prev) ++a.distinct;
      if (eq_prev && a.first_collision < 0) a.first_collision = dist;
      if (eq_prev || eq_next) ++a.colliding_distances, collide += double(n - dist);
    }
    a.rms_error = entries > 0 ? std::sqrt(sq / entries) : 0.0;
    a.colliding_entries = entries > 0 ? collide / entries : 0.0;
    r.rows.push_back(a);
  }
  return r;
}

} // namespace bf16emu::pitfalls
