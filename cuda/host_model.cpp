// bf16emu CUDA twin: CPU side of the comparisons (see host_model.hpp).
#include "host_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <ostream>

#include "bf16emu/attention/forward.hpp"
#include "bf16emu/attention/policy.hpp"
#include "bf16emu/core.hpp"
#include "bf16emu/parallel.hpp"
#include "bf16emu/tc.hpp"
#include "io/names.hpp"
#include "io/preset_lookup.hpp"

namespace bf16emu::gpu {
namespace {

// parallel_for's thread count: threads <= 0 means every hardware thread.
unsigned thread_count(int threads) { return threads > 0 ? unsigned(threads) : 0u; }

// Calls fn(In{}, InB{}, Out{}) for the format triples the probe kernels issue: one input format
// (bf16 fp16 tf32 e4m3 e5m2) with an fp32 or fp16 accumulator, the fp8 mixes e4m3 x e5m2 and
// e5m2 x e4m3, and f64 (DMMA). False for any other triple.
template <class Fn> bool with_formats(format_id in, format_id b, format_id out, Fn &&fn) {
  auto with_out = [&](auto fa, auto fb) {
    if (out == format_id::fp32) return fn(fa, fb, binary32{}), true;
    if (out == format_id::fp16) return fn(fa, fb, binary16{}), true;
    return false;
  };
  if (in == format_id::fp64 || b == format_id::fp64 || out == format_id::fp64) {
    if (in != b || in != out) return false;
    return fn(binary64{}, binary64{}, binary64{}), true;
  }
  // The fp8 mixes and the sm120 kind::f8f6f4 operands (fp6, fp4 and their mixes with fp8).
  const auto f8f6f4 = [](format_id f) {
    return std::find(std::begin(tc::f8f6f4_formats), std::end(tc::f8f6f4_formats), f) !=
           std::end(tc::f8f6f4_formats);
  };
  if (f8f6f4(in) && f8f6f4(b) && (in != b || (in != format_id::e4m3 && in != format_id::e5m2)))
    return tc::visit_f8f6f4(
        in, [&](auto fa) { return tc::visit_f8f6f4(b, [&](auto fb) { return with_out(fa, fb); }); });
  if (in != b) return false;
  switch (in) {
  case format_id::bf16: return with_out(bfloat16{}, bfloat16{});
  case format_id::fp16: return with_out(binary16{}, binary16{});
  case format_id::tf32: return with_out(tensorfloat32{}, tensorfloat32{});
  case format_id::e4m3: return with_out(float8_e4m3{}, float8_e4m3{});
  case format_id::e5m2: return with_out(float8_e5m2{}, float8_e5m2{});
  default: return false;
  }
}

} // namespace

std::optional<tc::arch> arch_of(int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  if (cc == 75) return tc::arch::sm75; // the m8n8k4 probes (sm_75 code); no bf16 preset
  if (cc == 80) return tc::arch::sm80;
  if (cc == 86 || cc == 87) return tc::arch::sm86;
  if (cc == 89) return tc::arch::sm89;
  if (cc == 90) return tc::arch::sm90;
  if (cc == 100) return tc::arch::sm100;
  if (cc == 120) return tc::arch::sm120;
  return std::nullopt;
}

const tc::preset *model_preset(tc::arch arch, tc::instr_kind kind, format_id in, format_id b, format_id c,
                               format_id out, int k, std::string &why) {
  const tc::preset *p = tc::find_preset(arch, kind, in, b, c, out, k);
  if (!p)
    why = "the model has " +
          io::no_preset_message({arch, kind, in, b, c, out, c != out, k}, io::front_end::cli);
  return p;
}

const tc::preset *model_preset(tc::arch arch, bool wgmma, format_id in, format_id out, std::string &why) {
  return model_preset(arch, wgmma ? tc::instr_kind::wgmma : tc::instr_kind::mma, in, in, out, out, 0, why);
}

namespace {
// Line n's C, read in its own format (vec_set::c_format) and given as the D format, as the presets
// take it (tc::c_as_out: C becomes the D format before the first block).
template <class Out> fp<Out> c_of(const vec_set &v, std::size_t n) {
  switch (v.c_format()) {
  case format_id::fp16: return tc::c_as_out<Out>(fp<binary16>::from_bits(v.c[n]));
  case format_id::fp32: return tc::c_as_out<Out>(fp<binary32>::from_bits(v.c[n]));
  default: return tc::c_as_out<Out>(fp<binary64>::from_bits(v.c[n]));
  }
}

// d[n] = dot(a, b, c) for every line n of v, in parallel: a and b are line n's rows of A and B as
// fp<A> / fp<B> (per-worker scratch rows), c its C as fp<Out> (c_of).
template <class A, class B, class Out, class Dot>
void each_line(const vec_set &v, std::vector<std::uint64_t> &d, int threads, Dot dot) {
  const std::size_t K = std::size_t(v.k);
  const unsigned nt = thread_count(threads);
  const std::size_t workers = resolve_threads(nt, v.lines());
  std::vector<std::vector<fp<A>>> a(workers, std::vector<fp<A>>(K));
  std::vector<std::vector<fp<B>>> b(workers, std::vector<fp<B>>(K));
  parallel_for(v.lines(), nt, [&](std::uint64_t n, unsigned w) {
    for (std::size_t i = 0; i < K; ++i)
      a[w][i] = fp<A>::from_bits(v.a[n * K + i]), b[w][i] = fp<B>::from_bits(v.b[n * K + i]);
    d[n] = std::uint64_t(dot(a[w].data(), b[w].data(), c_of<Out>(v, n)).bits);
  });
}
} // namespace

void model_lines(const vec_set &v, const tc::preset &p, std::vector<std::uint64_t> &d, int threads) {
  d.assign(v.lines(), 0);
  with_formats(v.in, v.b_format(), v.out, [&](auto fa, auto fb, auto fo) {
    using In = decltype(fa);
    using InB = decltype(fb);
    using Out = decltype(fo);
    each_line<In, InB, Out>(v, d, threads, [&](const fp<In> *a, const fp<InB> *b, fp<Out> c) {
      return tc::preset_dot<In, Out, InB, Out>(p, a, 1, b, 1, v.k, c);
    });
  });
}

void model_lines(const vec_set &v, const tc::scaled_preset &p, std::vector<std::uint64_t> &d, int threads) {
  d.assign(v.lines(), 0);
  tc::visit_f8f6f4(v.in, [&](auto fa) {
    tc::visit_f8f6f4(v.b_format(), [&](auto fb) {
      auto run = [&](auto fo) {
        using A = decltype(fa);
        using B = decltype(fb);
        using Out = decltype(fo);
        if (v.scales() == 0) {
          each_line<A, B, Out>(v, d, threads, [&](const fp<A> *a, const fp<B> *b, fp<Out> c) {
            return tc::scaled_dot<A, B, Out>(p.params, a, b, v.k, nullptr, nullptr, c);
          });
          return;
        }
        // Block-scaled: line n's scale factors sa[n*S ..), sb[n*S ..) (v.k a multiple of p.params.k).
        const std::size_t K = std::size_t(v.k), S = std::size_t(v.scales());
        parallel_for(v.lines(), thread_count(threads), [&](std::uint64_t n, unsigned) {
          std::vector<fp<A>> a(K);
          std::vector<fp<B>> b(K);
          for (std::size_t i = 0; i < K; ++i)
            a[i] = fp<A>::from_bits(v.a[n * K + i]), b[i] = fp<B>::from_bits(v.b[n * K + i]);
          d[n] = std::uint64_t(tc::scaled_dot<A, B, Out>(p.params, a.data(), b.data(), v.k, &v.sa[n * S],
                                                         &v.sb[n * S], c_of<Out>(v, n))
                                   .bits);
        });
      };
      if (v.out == format_id::fp16)
        run(binary16{});
      else
        run(binary32{});
    });
  });
}

void model_lines(const vec_set &v, const tc::preset &p, std::vector<std::uint32_t> &d, int threads) {
  std::vector<std::uint64_t> wide;
  model_lines(v, p, wide, threads);
  d.assign(wide.begin(), wide.end());
}

namespace {
void print_block(std::ostream &os, const tc::block_trace &t, format_id out) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "#   block %d (k %d..%d, %d real products)%s: max_exp %d, lsb 2^%d, aligned sum %lld, c %s -> d %s\n",
      t.block, t.k0, t.k0 + t.n_products - 1, t.n_real, t.special ? " [NaN/Inf path]" : "", int(t.max_exp),
      int(t.lsb_exp), static_cast<long long>(t.aligned_sum), hex(out, t.c_bits).c_str(),
      hex(out, t.d_bits).c_str());
  os << buf;
  if (t.special) return;
  for (int i = 0; i <= t.n_products; ++i) {
    const tc::term_trace &term = t.terms[i];
    if (term.zero) continue;
    char label[16];
    if (i == t.n_products)
      std::snprintf(label, sizeof label, "c");
    else
      std::snprintf(label, sizeof label, "p%d", t.k0 + i);
    std::snprintf(buf, sizeof buf, "#     %-4s exp %5d  bits below lsb %3d  lost %.17g\n", label,
                  int(term.exp), int(term.shift), term.lost);
    os << buf;
  }
}
} // namespace

void trace_line(std::ostream &os, const vec_set &v, std::size_t line, const tc::preset &p) {
  os << "# model " << tc::to_string(p.arch) << ' ' << tc::to_string(p.kind) << ' ' << p.ptx << " (L "
     << p.block.L << ", F " << p.block.F << ", e_zero " << p.block.e_zero << ")\n";
  if (p.accum == tc::accum_kind::fma_chain) os << "#   fma chain: one IEEE fma per product in k order\n";
  with_formats(v.in, v.b_format(), v.out, [&](auto fa, auto fb, auto fo) {
    using In = decltype(fa);
    using InB = decltype(fb);
    using Out = decltype(fo);
    const std::size_t K = std::size_t(v.k);
    std::vector<fp<In>> a(K);
    std::vector<fp<InB>> b(K);
    for (std::size_t i = 0; i < K; ++i)
      a[i] = fp<In>::from_bits(v.a[line * K + i]), b[i] = fp<InB>::from_bits(v.b[line * K + i]);
    auto tr = tc::make_block_tracer([&](const tc::block_trace &t) { print_block(os, t, v.out); });
    tc::preset_dot<In, Out, decltype(tr), InB, Out>(p, a.data(), 1, b.data(), 1, v.k, c_of<Out>(v, line), tr);
  });
}

bool model_gemm(tc::arch arch, int M, int N, int K, const std::uint16_t *A, const std::uint16_t *Bt,
                std::vector<std::uint32_t> &D, std::string &why, int threads) {
  const tc::preset *p = model_preset(arch, false, format_id::bf16, format_id::fp32, why);
  if (!p) return false;
  // tc::gemm takes B as K x N row-major.
  std::vector<bf16> B(std::size_t(K) * N);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      B[std::size_t(k) * N + n] = bf16::from_bits(Bt[std::size_t(n) * K + k]);
  const auto *a = reinterpret_cast<const bf16 *>(A);
  static_assert(sizeof(bf16) == 2);
  std::vector<f32> zero(std::size_t(M) * N, f32::from_bits(0)), out(std::size_t(M) * N);
  // Row slabs of 16 (rows are independent: the slab size changes no bit).
  constexpr std::size_t slab = 16;
  parallel_for((std::size_t(M) + slab - 1) / slab, thread_count(threads), [&](std::uint64_t s, unsigned) {
    const std::size_t lo = s * slab, hi = std::min(std::size_t(M), lo + slab);
    tc::gemm<bfloat16, binary32>(*p, int(hi - lo), N, K, a + lo * K, K, B.data(), N, zero.data() + lo * N, N,
                                 out.data() + lo * N, N);
  });
  D.resize(out.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    D[i] = out[i].bits;
  return true;
}

void trace_gemm(std::ostream &os, tc::arch arch, int K, const std::uint16_t *arow,
                const std::uint16_t *btrow) {
  std::string why;
  const tc::preset *p = model_preset(arch, false, format_id::bf16, format_id::fp32, why);
  if (!p) {
    os << "# " << why << '\n';
    return;
  }
  vec_set v;
  v.in = format_id::bf16, v.out = format_id::fp32, v.k = K;
  v.a.assign(arow, arow + K), v.b.assign(btrow, btrow + K), v.c.push_back(0);
  trace_line(os, v, 0, *p);
}

float contract_c(int d) {
  attention::kernel_policy pol = attention::fa2_twin();
  const double scale = attention::softmax_scale(pol, d);
  return float(scale * 1.4426950408889634073599246810018921);
}

namespace {
// fa2_twin (block sizes, orders, exp) on the tensor-core model of `arch`; ok = false when the
// arch has no BF16 model.
attention::forward_config twin_config(tc::arch arch, const attention_case &c, bool &ok) {
  attention::forward_config cfg;
  cfg.pol = attention::fa2_twin();
  // The kernel runs mma.sync on the device it is given: the tensor-core model is that device's.
  cfg.pol.arch = arch;
  ok = attention::tc_for(arch).valid;
  cfg.pol.stabilized = c.stabilized;
  cfg.pol.beta = c.beta;
  cfg.var = c.stabilized ? attention::variant::stabilized : attention::variant::fa2;
  cfg.causal = c.causal;
  return cfg;
}

std::vector<double> head_values(const std::uint16_t *p, int head, int n, int d) {
  std::vector<double> x(std::size_t(n) * d);
  const std::uint16_t *h = p + std::size_t(head) * n * d;
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = to_double(bf16::from_bits(h[i]));
  return x;
}
} // namespace

bool model_attention(tc::arch arch, const attention_case &c, std::vector<std::uint16_t> &o, std::string &why,
                     int threads) {
  bool ok = false;
  const attention::forward_config base = twin_config(arch, c, ok);
  if (!ok) {
    why = std::string("the attention policy has no tensor-core model 'fa2:") + tc::to_string(arch) + "'";
    return false;
  }
  o.assign(std::size_t(c.heads) * c.n * c.d, 0);
  parallel_for(std::size_t(c.heads), thread_count(threads), [&](std::uint64_t h, unsigned) {
    const auto q = head_values(c.q, int(h), c.n, c.d), k = head_values(c.k, int(h), c.n, c.d),
               v = head_values(c.v, int(h), c.n, c.d);
    attention::head_view hv{c.n, c.d, q.data(), k.data(), v.data()};
    attention::null_observer obs;
    const attention::forward_result r = attention::forward_head(base, hv, obs);
    for (std::size_t i = 0; i < r.o.size(); ++i)
      o[h * std::size_t(c.n) * c.d + i] = std::uint16_t(attention::as_bf16(r.o[i]).bits);
  });
  return true;
}

void trace_attention(std::ostream &os, tc::arch arch, const attention_case &c, int head, int row, int col) {
  bool ok = false;
  attention::forward_config cfg = twin_config(arch, c, ok);
  if (!ok) return;
  cfg.trace_row = row, cfg.trace_col = col;
  const auto q = head_values(c.q, head, c.n, c.d), k = head_values(c.k, head, c.n, c.d),
             v = head_values(c.v, head, c.n, c.d);
  attention::head_view hv{c.n, c.d, q.data(), k.data(), v.data()};
  attention::null_observer obs;
  const attention::forward_result r = attention::forward_head(cfg, hv, obs);
  char buf[256];
  os << "# reference element trace of O[" << row << "][" << col << "] (head " << head
     << "): step, key t, P-bar, running accumulator (FP32), exact, cumulative error; * = block end\n";
  for (const auto &p : r.trace) {
    std::snprintf(buf, sizeof buf, "#   %5ld t=%5ld pbar=%.9g running=%.9g exact=%.17g err=%.3g%s\n", p.step,
                  p.t, p.pbar, p.running, p.exact, p.cum_error, p.boundary ? " *" : "");
    os << buf;
  }
  std::snprintf(buf, sizeof buf, "#   O (BF16) = %s, lse = %.9g\n",
                hex(format_id::bf16, attention::as_bf16(r.o[std::size_t(row) * c.d + col]).bits).c_str(),
                r.lse[std::size_t(row)]);
  os << buf;
}

void model_delta(int rows, int d, const std::uint16_t *o, const std::uint16_t *dout,
                 std::vector<std::uint32_t> &delta) {
  delta.assign(std::size_t(rows), 0);
  parallel_for(std::size_t(rows), 0, [&](std::uint64_t r, unsigned) {
    f32 s = f32::from_bits(0);
    for (int i = 0; i < d; ++i) {
      const bf16 x = bf16::from_bits(dout[r * d + i]), y = bf16::from_bits(o[r * d + i]);
      s = fma_to<binary32>(x, y, s).value;
    }
    delta[r] = s.bits;
  });
}

} // namespace bf16emu::gpu
