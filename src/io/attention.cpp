// bf16emu io: the attention layer's I/O ring. See attention.hpp.
#include "io/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "io/attention_fields.hpp"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/names.hpp"
#include "io/npy.hpp"
#include "io/plot.hpp"

namespace bf16emu::io {

namespace {

// ---------------------------------------------------------------------------
// Name tables: the token the CLI reads, the name the JSON writes, the value.

template <class E> struct choice {
  const char *token;
  const char *name;
  E value;
};

const choice<at::kv_order> kv_orders[] = {{"forward", "forward", at::kv_order::forward},
                                          {"reverse", "reverse", at::kv_order::reverse}};
const choice<at::exp_impl> exp_impls[] = {{"rn", "rn_f32", at::exp_impl::rn_f32},
                                          {"poly", "poly_exp2", at::exp_impl::poly_exp2}};
const choice<at::reduce_order> row_sums[] = {{"sequential", "sequential", at::reduce_order::sequential},
                                             {"quad", "quad", at::reduce_order::quad_shuffle}};
const choice<bool> on_off[] = {{"on", "on", true}, {"off", "off", false}};
const choice<at::normalize_mode> normalize_modes[] = {
    {"reciprocal", "reciprocal", at::normalize_mode::reciprocal},
    {"divide", "divide", at::normalize_mode::divide}};
// The enums whose names the numerics headers define (to_string there): the table lists the values.
const at::variant variants[] = {at::variant::standard, at::variant::fa2, at::variant::stabilized};
const at::backward_kind backward_kinds[] = {at::backward_kind::reference, at::backward_kind::tiled,
                                            at::backward_kind::authors, at::backward_kind::authors_promote};
const at::delta_order delta_orders[] = {at::delta_order::fa2_lanes, at::delta_order::sequential};
const at::block_order block_orders[] = {at::block_order::ascending, at::block_order::descending};

template <class E> const char *token_of(const choice<E> &c) { return c.token; }
template <class E> const char *token_of(const E &v) { return at::to_string(v); }
template <class E> E value_of(const choice<E> &c) { return c.value; }
template <class E> E value_of(const E &v) { return v; }

// Finds s among the tokens of `table`; else input_error naming the option, the token and the
// accepted names.
template <class Table> auto parse_choice(const Table &table, std::string_view token, const char *option) {
  const std::string s = normalize_name(token);
  std::string accepted;
  for (const auto &c : table) {
    if (s == token_of(c)) return value_of(c);
    accepted += std::string(accepted.empty() ? "" : ", ") + token_of(c);
  }
  throw input_error(std::string(option) + ": unknown value '" + shorten(std::string(token)) +
                    "' (accepted: " + accepted + ")");
}

template <class E, std::size_t N> const char *name_of(const choice<E> (&table)[N], E v) noexcept {
  for (const auto &c : table)
    if (c.value == v) return c.name;
  return "?";
}

// ---------------------------------------------------------------------------
// JSON

// The JSON side of the one field list (io/attention_fields.hpp).
class json_fields final : public field_visitor {
public:
  explicit json_fields(json_writer &w) : w_(w) {}
  void begin(std::string_view name) override { w_.key(name).begin_object(); }
  void end() override { w_.end_object(); }
  void u64(std::string_view name, std::uint64_t v) override { w_.kv(name, v); }
  void i64(std::string_view name, std::int64_t v) override { w_.kv(name, v); }
  void real(std::string_view name, double v) override { w_.kv(name, v); }
  void text(std::string_view name, std::string_view v) override { w_.kv(name, v); }
  void entry(int key, std::uint64_t v) override { w_.kv(std::to_string(key), v); }

private:
  json_writer &w_;
};

void summary(json_writer &w, const at::error_summary &e) {
  w.begin_object();
  json_fields f(w);
  visit_summary(f, e);
  w.end_object();
}

// A NaN or Inf output where the exact result is finite is reported, never averaged in.
void warn_nonfinite(const char *what, const at::error_summary &e, long row_len) {
  if (e.nonfinite == 0) return;
  const long long i = e.first_nonfinite;
  std::fprintf(stderr,
               "warning: %llu %s elements are NaN or Inf where the exact result is finite (first: element "
               "%lld, row %lld); the statistics above leave them out\n",
               (unsigned long long)e.nonfinite, what, i, row_len > 0 ? i / row_len : i);
}

} // namespace

// Each parser looks its token up in its table.
#define BF16EMU_IO_ATTENTION_PARSER(type, fn, table)                                                         \
  type fn(std::string_view s, const char *option) { return parse_choice(table, s, option); }
BF16EMU_IO_ATTENTION_PARSER(at::kv_order, parse_kv_order, kv_orders)
BF16EMU_IO_ATTENTION_PARSER(at::exp_impl, parse_exp_impl, exp_impls)
BF16EMU_IO_ATTENTION_PARSER(at::reduce_order, parse_row_sum, row_sums)
BF16EMU_IO_ATTENTION_PARSER(bool, parse_on_off, on_off)
BF16EMU_IO_ATTENTION_PARSER(at::normalize_mode, parse_normalize, normalize_modes)
BF16EMU_IO_ATTENTION_PARSER(at::variant, parse_variant, variants)
BF16EMU_IO_ATTENTION_PARSER(at::backward_kind, parse_backward_kind, backward_kinds)
BF16EMU_IO_ATTENTION_PARSER(at::delta_order, parse_delta_order, delta_orders)
BF16EMU_IO_ATTENTION_PARSER(at::block_order, parse_block_order, block_orders)
#undef BF16EMU_IO_ATTENTION_PARSER

std::string policy_names(bool autocast) {
  std::string r = std::string("exact, fp32, paper:bf16 (alias paper)") + (autocast ? ", paper:autocast" : "");
  at::kernel_policy p;
  for (const tc::arch a : tc::all_archs) {
    const std::string name = std::string("fa2:") + tc::to_string(a);
    if (at::parse_policy(name, p)) r += ", " + name;
  }
  return r + ", fa2_twin";
}

at::kernel_policy parse_policy_name(std::string_view token, const char *option, bool autocast) {
  const std::string s = normalize_name(token);
  at::kernel_policy p;
  if (!at::parse_policy(s, p) ||
      (!autocast && p.kind == at::policy_kind::paper && p.paper_arith == at::paper_dtypes::autocast))
    throw input_error(std::string("unknown ") + option + " '" + shorten(std::string(token)) + "' (" +
                      policy_names(autocast) + ")");
  return p;
}

void parse_site_precision(std::string_view spec, at::kernel_policy &p, const char *option) {
  const std::string opt(option);
  const at::site_prec precs[] = {at::site_prec::fp32, at::site_prec::exact, at::site_prec::policy};
  bool given[at::site_count] = {};
  at::kernel_policy r = p;
  if (spec.empty()) return;
  for (std::size_t pos = 0, comma = 0; comma != std::string_view::npos; pos = comma + 1) {
    comma = spec.find(',', pos);
    const std::string_view tok = spec.substr(pos, comma == std::string_view::npos ? spec.npos : comma - pos);
    const std::string t(tok);
    const std::size_t eq = tok.find('=');
    if (eq == std::string_view::npos)
      throw input_error(opt + ": bad token '" + shorten(t) + "' (expected SITE=fp32|exact|policy)");
    const std::string_view name = tok.substr(0, eq);
    int found = -1;
    std::string sites;
    for (int i = 0; i < at::site_count; ++i) {
      if (name == at::to_string(at::site(i))) found = i;
      sites += std::string(i ? ", " : "") + at::to_string(at::site(i));
    }
    if (found < 0) throw input_error(opt + ": unknown site in '" + shorten(t) + "' (sites: " + sites + ")");
    if (given[found]) throw input_error(opt + ": site given twice in '" + shorten(t) + "'");
    given[found] = true;
    const std::string_view prec = tok.substr(eq + 1);
    bool ok = false;
    for (const at::site_prec sp : precs)
      if (prec == at::to_string(sp)) r.site_precision[found] = sp, ok = true;
    if (!ok)
      throw input_error(opt + ": unknown precision in '" + shorten(t) + "' (accepted: fp32, exact, policy)");
  }
  p = r;
}

std::string site_precision_text(const at::kernel_policy &p) {
  std::string r;
  for (int i = 0; i < at::site_count; ++i)
    if (p.site_precision[i] != at::site_prec::policy)
      r += std::string(r.empty() ? "" : ",") + at::to_string(at::site(i)) + "=" +
           at::to_string(p.site_precision[i]);
  return r;
}

const char *to_string(at::kv_order k) noexcept { return name_of(kv_orders, k); }
const char *to_string(at::exp_impl e) noexcept { return name_of(exp_impls, e); }
const char *to_string(at::reduce_order r) noexcept { return name_of(row_sums, r); }
const char *to_string(at::normalize_mode m) noexcept { return name_of(normalize_modes, m); }

std::string attention_json(const at::run_report &r, const attention_origin *origin) {
  std::ostringstream out;
  json_writer w(out, false);
  const at::forward_config &c = r.opt.cfg;
  w.begin_object();
  w.kv("policy", at::policy_name(c.pol)).kv("variant", at::to_string(c.var));
  w.kv("batch", std::int64_t(r.batch)).kv("heads", std::int64_t(r.heads)).kv("n", std::int64_t(r.n));
  w.kv("d", std::int64_t(r.d))
      .kv("causal", c.causal)
      .kv("block_m", c.pol.block_m)
      .kv("block_n", c.pol.block_n);
  w.kv("kv_order", to_string(c.pol.kv))
      .kv("exp", to_string(c.pol.exp))
      .kv("row_sum", to_string(c.pol.sum_order));
  w.kv("fma", c.pol.fma_contract);
  if (c.var == at::variant::stabilized) w.kv("beta", c.pol.beta);
  if (const std::string sp = site_precision_text(c.pol); !sp.empty()) w.kv("site_precision", sp);
  if (origin) {
    const at::sink_params &s = origin->sink;
    w.kv("scenario", origin->scenario).kv("seed", origin->seed).kv("tie_share", s.tie_share);
    w.kv("multiplicity", s.multiplicity).kv("v_skew", s.v_skew).kv("skew_cols", s.skew_cols);
    w.kv("strength", s.strength).kv("do_bias", s.do_bias);
  }
  w.kv("seconds", r.seconds);
  if (r.opt.with_reference) summary(w.key("output_error"), r.o_err);
  if (r.opt.with_ledger) {
    json_fields f(w);
    visit_ledger(f, r.led);
  }
  if (r.opt.backward) {
    const at::backward_config &b = r.opt.bwd;
    w.key("backward").begin_object().kv("kind", at::to_string(b.kind));
    if (b.kind == at::backward_kind::tiled) {
      w.kv("block_m", b.block_m).kv("block_n", b.block_n).kv("delta", at::to_string(b.delta));
      w.kv("q_order", at::to_string(b.q_order)).kv("dq_order", at::to_string(b.dq_order));
    }
    w.end_object();
  }
  if (r.opt.backward && r.opt.with_reference) {
    summary(w.key("delta_error"), r.delta_err);
    w.key("grad_error").begin_object();
    summary(w.key("dq"), r.dq_err);
    summary(w.key("dk"), r.dk_err);
    summary(w.key("dv"), r.dv_err);
    w.end_object();
  }
  if (!r.trace.empty()) {
    w.key("trace").begin_object().kv("points", std::uint64_t(r.trace.size()));
    w.kv("final_lp", r.trace_final_lp).kv("final_exact", r.trace_final_exact);
    w.kv("final_error", r.trace_final_lp - r.trace_final_exact).end_object();
  }
  w.end_object();
  std::string s = out.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void print_attention_text(const at::run_report &r) {
  const auto &c = r.opt.cfg;
  std::printf("attention %s, variant %s, batch %ld heads %ld n %ld d %ld%s, Br %d Bc %d, %.2f s\n",
              at::policy_name(c.pol).c_str(), at::to_string(c.var), r.batch, r.heads, r.n, r.d,
              c.causal ? " causal" : "", c.pol.block_m, c.pol.block_n, r.seconds);
  if (const std::string sp = site_precision_text(c.pol); !sp.empty())
    std::printf("site precision: %s\n", sp.c_str());
  if (r.opt.with_reference) {
    const auto &e = r.o_err;
    // z and z by rows describe this input only; z over independent heads tests the arithmetic
    // (docs/paper-reproduction.md, "The statistic")
    std::printf(
        "O vs exact: mean signed %.4e +- %.2e (z (one input) = %.1f; by rows +- %.2e, z (one input) = %.1f",
        e.mean_signed, e.stderr_signed, e.z(), e.stderr_rows, e.z_rows());
    if (e.stderr_heads > 0) std::printf("; by heads +- %.2e, z (heads) = %.1f", e.stderr_heads, e.z_heads());
    std::printf("), mean abs %.4e, max abs %.4e, rel fro %.4e\n", e.mean_abs, e.max_abs, e.rel_fro);
    warn_nonfinite("O", e, r.d);
    std::printf("  ulp histogram:");
    for (const auto &[k, v] : e.ulp_hist)
      std::printf(" %d:%llu", k, (unsigned long long)v);
    std::printf("\n");
    if (r.opt.backward) {
      const auto &t = r.delta_err;
      std::printf("delta_lp - delta_hp: mean %.4e +- %.2e (z (one input) = %.1f", t.mean_signed,
                  t.stderr_signed, t.z());
      if (t.stderr_heads > 0)
        std::printf("; by heads +- %.2e, z (heads) = %.1f", t.stderr_heads, t.z_heads());
      std::printf("), positive %llu negative %llu\n", (unsigned long long)t.positive,
                  (unsigned long long)t.negative);
      warn_nonfinite("delta", t, 1);
      warn_nonfinite("dQ", r.dq_err, r.d);
      warn_nonfinite("dK", r.dk_err, r.d);
      warn_nonfinite("dV", r.dv_err, r.d);
      const auto &b = r.opt.bwd;
      std::printf("backward %s", at::to_string(b.kind));
      if (b.kind == at::backward_kind::tiled)
        std::printf(" (Br %d Bc %d, delta %s, query blocks %s, dQ adds %s)", b.block_m, b.block_n,
                    at::to_string(b.delta), at::to_string(b.q_order), at::to_string(b.dq_order));
      std::printf(": rel fro vs exact dQ %.4e dK %.4e dV %.4e\n", r.dq_err.rel_fro, r.dk_err.rel_fro,
                  r.dv_err.rel_fro);
    }
  }
  if (r.opt.with_ledger) {
    std::printf("%-11s %11s %10s %10s %10s %8s %10s %10s %12s | %9s %12s\n", "site", "events", "positive",
                "negative", "zero", "ties", "away", "toward", "mean error", "P=1 evts", "P=1 mean");
    for (int i = 0; i < at::site_count; ++i) {
      const auto &s = r.led.sites[i];
      if (s.all.count == 0) continue;
      std::printf("%-11s %11llu %10llu %10llu %10llu %8llu %10llu %10llu %12.4e | %9llu %12.4e\n",
                  at::to_string(at::site(i)), (unsigned long long)s.all.count, (unsigned long long)s.all.pos,
                  (unsigned long long)s.all.neg, (unsigned long long)s.all.zero,
                  (unsigned long long)s.all.ties, (unsigned long long)s.all.away,
                  (unsigned long long)s.all.toward, s.all.mean(), (unsigned long long)s.p_one.count,
                  s.p_one.mean());
    }
    std::printf(
        "P-bar entries %llu, equal to 1: %llu; (row, block) pairs with a 1: %llu, tied (>= 2): %llu\n",
        (unsigned long long)r.led.p_entries, (unsigned long long)r.led.p_one_entries,
        (unsigned long long)r.led.rows_with_p_one, (unsigned long long)r.led.rows_tied);
  }
  if (!r.trace.empty())
    std::printf("trace O[%ld,%ld]: %zu points, final %.9g vs exact %.9g (error %.4e)\n", c.trace_row,
                c.trace_col, r.trace.size(), r.trace_final_lp, r.trace_final_exact,
                r.trace_final_lp - r.trace_final_exact);
}

void write_trace_csv(const std::string &path, const at::run_report &r) {
  output_file f(path, "trace CSV");
  f << "step,t,pbar,p_is_one,boundary,running,exact,cum_error,exact_l,norm_error\n";
  char b[400];
  for (const auto &p : r.trace) {
    std::snprintf(b, sizeof b, "%ld,%ld,%.9g,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g\n", p.step, p.t, p.pbar,
                  p.pbar == 1.0 ? 1 : 0, p.boundary ? 1 : 0, p.running, p.exact, p.cum_error, p.exact_l,
                  p.norm_error);
    f << b;
  }
  f.commit();
}

void plot_trace(const plot_paths &p, const std::string &title) {
  figure fig{title, 1000, 600};
  fig.keep_script = true;
  fig.body =
      "set key top left\n"
      "set xlabel 'accumulation step (keys in processing order)'\n"
      "set ylabel 'cumulative error of the running O / running row sum'\n"
      "set grid\n"
      "plot " +
      gnuplot_path(p.csv) +
      " every ::1 using 1:10 with steps lw 2 title 'cumulative error (normalised)', \\\n"
      "     '' every ::1 using ($4==1 ? $1 : 1/0):10 with points pt 7 ps 1.2 lc rgb 'red' title 'P-bar = "
      "1'\n";
  render_plot(p, fig);
}

std::vector<double> read_attention_tensor(const std::string &path, const char *option,
                                          std::vector<std::size_t> &shape) {
  std::ifstream in = open_input(path, option, true);
  const std::vector<std::uint8_t> bytes = npy::read_image(in, path);
  const npy::array a = npy::parse(bytes.data(), bytes.size(), path);
  if (a.shape.size() < 2 || a.shape.size() > 4)
    throw input_error(path + ": expected a 2-d [n, d], 3-d [heads, n, d] or 4-d [batch, heads, n, d] array");
  shape = a.shape;
  std::vector<double> x(a.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (a.type == npy::dtype::u16)
      x[i] = to_double(bf16::from_bits(a.u16[i]));
    else
      x[i] = a.value(i);
    if (!std::isfinite(x[i])) throw input_error(path + ": non-finite value at element " + std::to_string(i));
  }
  return x;
}

void write_attention_tensor(const std::string &path, const std::vector<double> &x,
                            const at::attention_inputs &in, bool rows) {
  if (path.empty()) return;
  std::vector<float> f(x.begin(), x.end()); // every value is FP32 or BF16 (exact), or binary64 (rounded)
  std::vector<std::size_t> shape = {std::size_t(in.batch), std::size_t(in.heads), std::size_t(in.n)};
  if (!rows) shape.push_back(std::size_t(in.d));
  npy::write(path, npy::dtype::f32, shape, f.data());
}

memory_need attention_memory_need(std::uint64_t batch, std::uint64_t heads, std::uint64_t n, std::uint64_t d,
                                  const at::run_options &opt, bool inputs) {
  const std::uint64_t items = saturating_product({batch, heads});
  const std::uint64_t workers = resolve_threads(opt.threads, items);
  const std::uint64_t f64 = sizeof(double), b16 = 2;
  memory_need need;
  if (inputs) need.add({4, items, n, d, f64}, "Q, K, V, dO");
  need.add({items, n, d, f64}, "O").add({items, n, f64}, "L");
  if (opt.with_reference) need.add({items, n, d, f64}, "exact O");
  if (opt.with_ledger) need.add({items, sizeof(at::ledger)}, "ledgers (one per head)");
  // forward_head per worker: Q, K, V copies (binary64 and BF16), O and L, twice with the exact run
  need.add({workers, n, d, 3 * (f64 + b16) + 2 * f64}, "forward scratch").add({workers, n, 2 * f64});
  if (opt.backward) {
    const std::uint64_t sets = opt.with_reference ? 2 : 1;
    need.add({sets, items, n, 3 * d + 1, f64}, "dQ, dK, dV");
    // per worker: Q, K, V, dO copies (binary64 and BF16) and dQ, dK, dV, twice with the exact run
    need.add({workers, n, d, 4 * (f64 + b16) + 6 * f64}, "backward scratch");
    // the reference backward (the exact baseline runs it too) keeps P and dS, n x n each
    if (opt.with_reference || opt.bwd.kind == at::backward_kind::reference)
      need.add({workers, n, n, 2 * f64}, "backward P and dS (n x n)");
    // the authors' backward: a tile's P and dS (binary64 and FP32), K and V transposed, FP32 copies
    if (at::is_authors(opt.bwd.kind)) {
      const std::uint64_t br = std::min<std::uint64_t>(n, std::uint64_t(std::max(1, opt.cfg.pol.block_m)));
      const std::uint64_t bc = std::min<std::uint64_t>(n, std::uint64_t(std::max(1, opt.cfg.pol.block_n)));
      need.add({workers, br, bc, 2 * (f64 + 4)}, "authors' backward tile P and dS");
      need.add({workers, n, d, 2 * f64 + 5 * 4}, "authors' backward copies");
    }
  }
  return need;
}

} // namespace bf16emu::io
