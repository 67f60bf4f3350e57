// bf16emu tensor-core model: a family of ways a GEMM can be computed, and the search that names
// the member reproducing a given result bit for bit (`bf16emu explain-gemm`, bf16emu.explain_gemm;
// docs/explain-gemm.md).
//
// A member computes D[i][j] from row i of A (K products), column j of B and C[i][j] in five steps:
//   1. K is cut into slices of `slice` products (the last one shorter): split-k. With slice 0 the
//      slice is ceil(K / split_k).
//   2. Each slice is one dot product on the member's engine: a tensor-core preset (preset_dot,
//      mma.hpp: the slice padded to the instruction's k, blocks in increasing k), or plain IEEE
//      binary32 arithmetic in increasing k (ieee_fma: acc = fma(a, b, acc); ieee_mul_add:
//      acc = acc + round(a * b)), each rounding to nearest even. The accumulator starts at C
//      (converted to the engine's accumulator format, c_as_out) for slice 0 when C enters
//      first, at +0 otherwise.
//   3. Each slice's result is rounded (nearest even) to the partial format, fp32 or D's format.
//   4. The partials are added in the partial format, each addition one IEEE rounding to nearest
//      even (the core's add): sequential ((p0 + p1) + p2) + ...; or pairwise, level by level,
//      adjacent pairs (p0 + p1), (p2 + p3), ..., an odd last one carried up unchanged. When C
//      enters at the end, C rounded to the partial format is then added once more.
//   5. The sum is rounded (nearest even) to D's format.
// With one slice and C first, steps 3-5 round a value already in the accumulator format once
// into D's format; three slices sum the same way in both orders; two members that differ only
// there are one member, and enumerate_family lists it once (canonical: sequential, fp32 partials).
//
// Values between the steps are held in binary32 containers: every fp16 and bf16 value is exact
// there, and each rounding goes through the core's convert and add in the format itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bf16emu/core/arith.hpp"
#include "bf16emu/parallel.hpp"
#include "bf16emu/tc/mma.hpp"
#include "bf16emu/tc/presets.hpp"

namespace bf16emu::tc {

enum class dot_engine : std::uint8_t { preset, ieee_fma, ieee_mul_add };
enum class partial_order : std::uint8_t { sequential, pairwise };
enum class c_entry : std::uint8_t { first_slice, end };

inline const char *to_string(dot_engine e) noexcept {
  return e == dot_engine::preset ? "preset" : e == dot_engine::ieee_fma ? "ieee-fma" : "ieee-mul-add";
}
inline const char *to_string(partial_order o) noexcept {
  return o == partial_order::sequential ? "sequential" : "pairwise";
}
inline const char *to_string(c_entry c) noexcept { return c == c_entry::first_slice ? "first" : "end"; }

inline bool parse_engine(std::string_view s, dot_engine &e) noexcept {
  for (dot_engine x : {dot_engine::preset, dot_engine::ieee_fma, dot_engine::ieee_mul_add})
    if (s == to_string(x)) return e = x, true;
  return false;
}
inline bool parse_order(std::string_view s, partial_order &o) noexcept {
  for (partial_order x : {partial_order::sequential, partial_order::pairwise})
    if (s == to_string(x)) return o = x, true;
  return false;
}
inline bool parse_c_entry(std::string_view s, c_entry &c) noexcept {
  for (c_entry x : {c_entry::first_slice, c_entry::end})
    if (s == to_string(x)) return c = x, true;
  return false;
}

// Most slices a member may have.
inline constexpr int max_split = 64;

struct gemm_member {
  dot_engine engine = dot_engine::preset;
  const preset *p = nullptr; // engine == preset: the preset (its accumulation, blocks and k)
  int split_k = 1;           // slice count when slice == 0
  int slice = 0;             // products per slice; 0: ceil(K / split_k)
  partial_order order = partial_order::sequential;
  format_id partial = format_id::fp32; // fp32 or D's format
  c_entry c = c_entry::first_slice;
};

// The format each slice accumulates in: the preset's D format, binary32 for the IEEE engines.
inline format_id accumulator_format(const gemm_member &m) noexcept {
  return m.engine == dot_engine::preset && m.p ? m.p->out : format_id::fp32;
}

// Products per slice and the number of slices for K products (K = 0: one empty slice).
inline int slice_length(const gemm_member &m, int K) noexcept {
  if (m.slice > 0) return m.slice;
  const int s = m.split_k > 0 ? m.split_k : 1;
  return K > 0 ? (K + s - 1) / s : 0;
}
inline int slice_count(const gemm_member &m, int K) noexcept {
  const int s = slice_length(m, K);
  return K > 0 && s > 0 ? (K + s - 1) / s : 1;
}

// Does the member describe a computation (preset set for the preset engine, slice count within
// max_split, partial format fp32 or D's format d)?
inline bool valid(const gemm_member &m, int K, format_id d) noexcept {
  if (m.engine == dot_engine::preset && !m.p) return false;
  if (m.split_k < 1 || m.slice < 0 || slice_count(m, K) > max_split) return false;
  return m.partial == format_id::fp32 || m.partial == d;
}

namespace detail {

// x, a value of a format of at most 24 bits held exactly in binary32, rounded to nearest even
// into f (fp32, fp16 or bf16) and held in binary32 again.
inline fp<binary32> round_into(format_id f, fp<binary32> x) noexcept {
  if (f == format_id::fp16) return convert<binary32>(convert<binary16>(x).value).value;
  if (f == format_id::bf16) return convert<binary32>(convert<bfloat16>(x).value).value;
  return x;
}

// x + y for values x, y of format f held in binary32: the core's add in f (one rounding).
inline fp<binary32> add_in(format_id f, fp<binary32> x, fp<binary32> y) noexcept {
  if (f == format_id::fp16)
    return convert<binary32>(add(convert<binary16>(x).value, convert<binary16>(y).value).value).value;
  if (f == format_id::bf16)
    return convert<binary32>(add(convert<bfloat16>(x).value, convert<bfloat16>(y).value).value).value;
  return add(x, y).value;
}

// A block tracer that hands each block to fn(slice, block) with k0 counted from the start of K.
template <class Fn> struct slice_block_tracer {
  static constexpr bool enabled = true;
  Fn *fn;
  int slice, k_offset;
  void operator()(const block_trace &t) {
    block_trace u = t;
    u.k0 += k_offset;
    (*fn)(slice, u);
  }
};

struct no_slice_trace {
  void operator()(int, const block_trace &) const noexcept {}
};

// One slice of n products on the member's engine, its accumulator starting at c; the result in
// the accumulator format Acc, held in binary32.
template <class In, class Acc, class Tracer>
fp<binary32> slice_dot(const gemm_member &m, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                       std::ptrdiff_t sb, int n, fp<binary32> c, Tracer &tracer) noexcept {
  if (m.engine == dot_engine::preset) {
    if constexpr (In::precision <= 11)
      return convert<binary32>(preset_dot<In, Acc>(*m.p, a, sa, b, sb, n, c, tracer)).value;
    else
      return fp<binary32>::from_bits(nan_bits<binary32>()); // no preset takes these inputs
  }
  fp<binary32> acc = c;
  for (int k = 0; k < n; ++k)
    acc = m.engine == dot_engine::ieee_fma ? fma_to<binary32>(a[k * sa], b[k * sb], acc).value
                                           : add(acc, mul_to<binary32>(a[k * sa], b[k * sb]).value).value;
  return acc;
}

template <class In, class Acc, class Fn>
fp<binary32> member_sum(const gemm_member &m, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                        std::ptrdiff_t sb, int K, fp<binary32> c, format_id d, fp<binary32> *partials,
                        Fn *trace_fn) {
  const int len = slice_length(m, K), count = slice_count(m, K);
  fp<binary32> p[max_split];
  const fp<binary32> zero = fp<binary32>::from_bits(0);
  for (int s = 0; s < count; ++s) {
    const int k0 = s * len, n = K - k0 < len ? K - k0 : len;
    const fp<binary32> c0 = (m.c == c_entry::first_slice && s == 0) ? c : zero;
    fp<binary32> r;
    if (trace_fn) {
      slice_block_tracer<Fn> t{trace_fn, s, k0};
      r = slice_dot<In, Acc>(m, a + k0 * sa, sa, b + k0 * sb, sb, n > 0 ? n : 0, c0, t);
    } else {
      no_block_trace t;
      r = slice_dot<In, Acc>(m, a + k0 * sa, sa, b + k0 * sb, sb, n > 0 ? n : 0, c0, t);
    }
    p[s] = round_into(m.partial, r);
    if (partials) partials[s] = p[s];
  }
  fp<binary32> sum;
  if (m.order == partial_order::sequential || count < 3) {
    sum = p[0];
    for (int s = 1; s < count; ++s)
      sum = add_in(m.partial, sum, p[s]);
  } else {
    for (int n = count; n > 1; n = (n + 1) / 2) // one level: adjacent pairs, an odd last carried
      for (int i = 0; i < n / 2 + n % 2; ++i)
        p[i] = 2 * i + 1 < n ? add_in(m.partial, p[2 * i], p[2 * i + 1]) : p[2 * i];
    sum = p[0];
  }
  if (m.c == c_entry::end) sum = add_in(m.partial, sum, round_into(m.partial, c));
  return round_into(d, sum);
}

} // namespace detail

// D[i][j] of the member for one output element: K products a[k*sa] * b[k*sb], C's value c (any
// format of at most 24 bits, held in binary32; +0 when there is none), D's format d (fp32, fp16
// or bf16). Returns D's value held in binary32. With partials (max_split slots): each slice's
// partial after step 3. trace(slice, block_trace) sees every tensor-core block of every slice,
// k0 counted from the start of K (the IEEE engines have none).
template <class In, class Trace = detail::no_slice_trace>
fp<binary32> member_dot(const gemm_member &m, const fp<In> *a, std::ptrdiff_t sa, const fp<In> *b,
                        std::ptrdiff_t sb, int K, fp<binary32> c, format_id d,
                        fp<binary32> *partials = nullptr, Trace *trace = nullptr) {
  if (accumulator_format(m) == format_id::fp16)
    return detail::member_sum<In, binary16>(m, a, sa, b, sb, K, c, d, partials, trace);
  return detail::member_sum<In, binary32>(m, a, sa, b, sb, K, c, d, partials, trace);
}

// The whole GEMM with one member: row-major A (M x K, lda), B (K x N, ldb), C (M x N, ldc;
// nullptr: +0), D (M x N, ldd) in the format Out (binary32, binary16 or bfloat16), rows on
// parallel_for (bits independent of the thread count). progress: parallel_for's, after each row
// (it may throw to stop the GEMM: the Python module's Ctrl-C check).
template <class In, class Out>
void member_gemm(const gemm_member &m, int M, int N, int K, const fp<In> *A, std::ptrdiff_t lda,
                 const fp<In> *B, std::ptrdiff_t ldb, const fp<binary32> *C, std::ptrdiff_t ldc, fp<Out> *D,
                 std::ptrdiff_t ldd, format_id d, unsigned threads = 1, const progress_fn &progress = {}) {
  parallel_for(
      std::uint64_t(M > 0 ? M : 0), threads,
      [&](std::uint64_t i, unsigned) {
        for (int j = 0; j < N; ++j) {
          const fp<binary32> c = C ? C[std::ptrdiff_t(i) * ldc + j] : fp<binary32>::from_bits(0);
          D[std::ptrdiff_t(i) * ldd + j] =
              convert<Out>(member_dot<In>(m, A + std::ptrdiff_t(i) * lda, 1, B + j, ldb, K, c, d)).value;
        }
      },
      progress);
}

// The member as one line: "<engine> split_k=S slice=L order=O partial=P c=E" where <engine> is
// "<arch> <ptx>" for a preset, or ieee-fma / ieee-mul-add (the names the front ends parse).
inline std::string member_name(const gemm_member &m) {
  auto fmt = [](format_id f) {
    return f == format_id::fp16 ? "fp16" : f == format_id::bf16 ? "bf16" : "fp32";
  };
  std::string s = m.engine == dot_engine::preset && m.p ? std::string(to_string(m.p->arch)) + " " + m.p->ptx
                                                        : std::string(to_string(m.engine));
  s += " split_k=" + std::to_string(m.split_k) + " slice=" + std::to_string(m.slice);
  s += std::string(" order=") + to_string(m.order) + " partial=" + fmt(m.partial) + " c=" + to_string(m.c);
  return s;
}

// ---------------------------------------------------------------------------
// The family and the search.

// Presets with the same arithmetic (input, accumulator format, accumulation, block parameters,
// instruction k): a GEMM cannot tell them apart. The family lists the first of each group.
inline bool same_arithmetic(const preset &x, const preset &y) noexcept {
  return x.in == y.in && x.b == y.b && x.c == y.c && x.out == y.out && x.accum == y.accum && x.k == y.k &&
         x.block.L == y.block.L && x.block.F == y.block.F && x.block.e_zero == y.block.e_zero &&
         x.block.out_frac == y.block.out_frac && x.block.rounding == y.block.rounding;
}

// Every preset with p's arithmetic, p first.
inline std::vector<const preset *> preset_aliases(const preset *p) {
  std::vector<const preset *> v{p};
  for (const preset &q : presets)
    if (&q != p && same_arithmetic(q, *p)) v.push_back(&q);
  return v;
}

struct family_options {
  int max_split = 4;      // split-k counts 1 .. max_split
  bool presets = true;    // tensor-core members
  bool ieee = true;       // IEEE binary32 members (ieee_fma, ieee_mul_add)
  bool c_at_end = true;   // members where C enters at the end (false: C always enters first)
  bool arch_only = false; // presets of `arch` only
  tc::arch arch{};
};

// The family for inputs of format in (A and B), D format d, K products, with or without a C.
// Engines: every preset group taking in x in with its own C format whose accumulator is fp32 or
// d (table order), then ieee_fma and ieee_mul_add. Per engine: split-k S = 1 .. max_split with
// slices of ceil(K / S) products and, where it differs, ceil(K / S) rounded up to a multiple of
// the instruction's k (a slice count other than S is skipped: another S lists it; with S = 1
// both are one slice, padded alike, listed once); C first, then
// at the end (only with a C); sequential, then pairwise (only with 4 or more slices); fp32
// partials, then d's (only if d is not fp32). One slice with C first: one member.
inline std::vector<gemm_member> enumerate_family(format_id in, format_id d, int K, bool has_c,
                                                 const family_options &o = {}) {
  std::vector<gemm_member> engines;
  if (o.presets && in != format_id::fp32)
    for (const preset &p : presets) {
      if (p.in != in || p.b != in || p.c != p.out || (p.out != format_id::fp32 && p.out != d)) continue;
      if (o.arch_only && p.arch != o.arch) continue;
      bool first = true;
      for (const preset &q : presets) {
        if (&q == &p) break;
        if (same_arithmetic(q, p) && !(o.arch_only && q.arch != o.arch)) first = false;
      }
      if (!first) continue;
      gemm_member m;
      m.p = &p;
      engines.push_back(m);
    }
  if (o.ieee)
    for (dot_engine e : {dot_engine::ieee_fma, dot_engine::ieee_mul_add}) {
      gemm_member m;
      m.engine = e;
      engines.push_back(m);
    }
  std::vector<gemm_member> out;
  for (const gemm_member &e : engines) {
    const int g = e.engine == dot_engine::preset ? e.p->k : 1;
    for (int S = 1; S <= (o.max_split < max_split ? o.max_split : max_split); ++S) {
      const int plain = K > 0 ? (K + S - 1) / S : 0;
      const int aligned = (plain + g - 1) / g * g;
      for (int len : {plain, aligned}) {
        gemm_member m = e;
        m.split_k = S;
        m.slice = len;
        if (slice_count(m, K) == S && !(S == 1 && len != plain)) // one slice: padded alike
          for (c_entry c : {c_entry::first_slice, c_entry::end}) {
            if (c == c_entry::end && (!has_c || !o.c_at_end)) continue;
            for (partial_order ord : {partial_order::sequential, partial_order::pairwise}) {
              if (ord == partial_order::pairwise && S < 4) continue;
              for (int q = 0; q < 2; ++q) {
                const format_id pf = q == 0 ? format_id::fp32 : d;
                if (q == 1 && (d == format_id::fp32 || (S == 1 && c == c_entry::first_slice))) continue;
                gemm_member x = m;
                x.c = c;
                x.order = ord;
                x.partial = pf;
                out.push_back(x);
              }
            }
          }
        if (aligned == plain) break;
      }
    }
  }
  return out;
}

// One member's score on a result.
struct member_score {
  gemm_member member;
  long checked = 0;         // elements compared
  long mismatches = 0;      // of those, how many differ (two NaNs of any payload agree)
  long first_mismatch = -1; // row-major index of the first, -1: none
  bool all = false;         // every element was compared
};

struct search_result {
  std::vector<member_score> ranking; // fewest mismatches first, then family order
  long sample = 0;                   // elements every member was compared on
  long first_unexplained = -1;       // row-major index of the first sampled element no member reproduces
  long matches = 0;                  // members reproducing every element
};

// Searches the family for the result R (M x N, format Out) of A (M x K, In) times B (K x N, In)
// plus C (binary32 containers; nullptr: none). Every member is compared on a sample of at most
// `sample` elements (all of them when M*N <= sample; otherwise elements f * M*N / sample, f <
// sample, row-major), then the members that reproduce the whole sample on every element. Cost:
// members x sample x K products, plus survivors x M x N x K. Members run on parallel_for, whose
// progress is `progress` (after each member; it may throw to stop the search).
template <class In, class Out>
search_result search_family(const std::vector<gemm_member> &members, int M, int N, int K, const fp<In> *A,
                            std::ptrdiff_t lda, const fp<In> *B, std::ptrdiff_t ldb, const fp<binary32> *C,
                            std::ptrdiff_t ldc, const fp<Out> *R, std::ptrdiff_t ldr, format_id d,
                            long sample = 4096, unsigned threads = 0, const progress_fn &progress = {}) {
  const long total = long(M) * long(N);
  std::vector<long> picks;
  if (total <= sample || sample <= 0) {
    for (long f = 0; f < total; ++f)
      picks.push_back(f);
  } else {
    for (long f = 0; f < sample; ++f)
      picks.push_back(long((long double)f * total / sample));
  }
  auto same = [](fp<Out> x, fp<Out> y) { return x.bits == y.bits || (x.is_nan() && y.is_nan()); };
  auto element = [&](const gemm_member &m, long f) {
    const long i = f / N, j = f % N;
    const fp<binary32> c = C ? C[i * ldc + j] : fp<binary32>::from_bits(0);
    return convert<Out>(member_dot<In>(m, A + i * lda, 1, B + j, ldb, K, c, d)).value;
  };
  search_result res;
  res.sample = long(picks.size());
  res.ranking.resize(members.size());
  std::vector<std::vector<std::uint8_t>> hit(members.size());
  parallel_for(
      members.size(), threads,
      [&](std::uint64_t u, unsigned) {
        member_score &s = res.ranking[u];
        s.member = members[u];
        hit[u].assign(picks.size(), 0);
        for (std::size_t q = 0; q < picks.size(); ++q) {
          const long f = picks[q];
          const bool ok = same(element(s.member, f), R[(f / N) * ldr + f % N]);
          hit[u][q] = ok;
          if (!ok && s.mismatches++ == 0) s.first_mismatch = f;
        }
        s.checked = long(picks.size());
        s.all = s.checked == total;
        if (s.mismatches == 0 && !s.all) { // the whole result
          s.checked = total;
          s.all = true;
          for (long f = 0; f < total; ++f)
            if (!same(element(s.member, f), R[(f / N) * ldr + f % N]) && s.mismatches++ == 0)
              s.first_mismatch = f;
        }
      },
      progress);
  for (std::size_t q = 0; q < picks.size() && res.first_unexplained < 0; ++q) {
    bool any = false;
    for (std::size_t u = 0; u < members.size() && !any; ++u)
      any = hit[u][q] != 0;
    if (!any) res.first_unexplained = picks[q];
  }
  // Stable: among equal counts, family order (the simplest member first).
  std::stable_sort(res.ranking.begin(), res.ranking.end(),
                   [](const member_score &x, const member_score &y) { return x.mismatches < y.mismatches; });
  for (const member_score &s : res.ranking)
    if (s.mismatches == 0 && s.all) ++res.matches;
  return res;
}

} // namespace bf16emu::tc
