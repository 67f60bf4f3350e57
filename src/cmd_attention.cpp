// bf16emu CLI: `bf16emu attention`: reference attention under a rounding policy, with the
// error ledger per rounding site, output errors against the exact policy, the element trace
// (the paper's figure 6) and gnuplot plots. See docs/attention.md.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bf16emu/attention.hpp"
#include "command.hpp"
#include "io/error.hpp"
#include "io/npy.hpp"
#include "io/paper_sections.hpp"

namespace bf16emu::cli {

namespace {

namespace at = bf16emu::attention;

struct attention_cli {
  long n = 256, d = 64, heads = 1, batch = 1;
  bool causal = false, backward = false, json = false, no_ledger = false;
  std::string variant = "fa2", policy = "fa2:sm80", scenario = "sink";
  double beta = 2.0, tie_tol = 1e-3;
  int block_m = 0, block_n = 0, threads = 0;
  std::uint64_t seed = 1;
  std::string kv_order, exp, row_sum, fma, normalize;
  std::string bwd = "reference", delta, dq_order, bwd_q_order;
  int bwd_block_m = at::backward_config{}.block_m, bwd_block_n = at::backward_config{}.block_n;
  bool bwd_block_given = false;
  std::string ledger_file, trace_element, plot_file;
  std::string q_file, k_file, v_file, do_file;
  std::string out_o, out_lse, out_dq, out_dk, out_dv, trace_csv;
  at::sink_params sink;
};

at::kernel_policy make_policy(const attention_cli &o) {
  at::kernel_policy p;
  if (!at::parse_policy(o.policy, p))
    throw bad_input("unknown --policy '" + o.policy +
                    "' (exact, fp32, paper, fa2:sm80, fa2:sm89, fa2:sm90, "
                    "fa2:sm100, fa2_twin)");
  if (o.block_m < 0 || o.block_n < 0) throw bad_input("--block-m and --block-n must be positive");
  if (o.block_m) p.block_m = o.block_m;
  if (o.block_n) p.block_n = o.block_n;
  if (!o.kv_order.empty()) {
    if (o.kv_order == "forward")
      p.kv = at::kv_order::forward;
    else if (o.kv_order == "reverse")
      p.kv = at::kv_order::reverse;
    else
      throw bad_input("--kv-order must be forward or reverse");
  }
  if (!o.exp.empty()) {
    if (o.exp == "rn")
      p.exp = at::exp_impl::rn_f32;
    else if (o.exp == "poly")
      p.exp = at::exp_impl::poly_exp2;
    else
      throw bad_input("--exp must be rn or poly");
  }
  if (!o.row_sum.empty()) {
    if (o.row_sum == "sequential")
      p.sum_order = at::reduce_order::sequential;
    else if (o.row_sum == "quad")
      p.sum_order = at::reduce_order::quad_shuffle;
    else
      throw bad_input("--row-sum must be sequential or quad");
  }
  if (!o.fma.empty()) {
    if (o.fma == "on")
      p.fma_contract = true;
    else if (o.fma == "off")
      p.fma_contract = false;
    else
      throw bad_input("--fma must be on or off");
  }
  if (!o.normalize.empty()) {
    if (o.normalize == "reciprocal")
      p.normalize = at::normalize_mode::reciprocal;
    else if (o.normalize == "divide")
      p.normalize = at::normalize_mode::divide;
    else
      throw bad_input("--normalize must be reciprocal or divide");
  }
  if (!(o.beta > 0)) throw bad_input("--beta must be positive");
  p.beta = o.beta;
  p.tie_tol = o.tie_tol;
  return p;
}

// The backward: --bwd reference (default) or tiled, with the tiled path's block sizes and orders.
at::backward_config make_backward(const attention_cli &o, const at::kernel_policy &p) {
  at::backward_config b;
  if (o.bwd == "tiled")
    b.kind = at::backward_kind::tiled;
  else if (o.bwd != "reference")
    throw bad_input("unknown --bwd '" + o.bwd + "' (reference, tiled)");
  const bool tiled = b.kind == at::backward_kind::tiled;
  if (!tiled && (o.bwd_block_given || !o.delta.empty() || !o.dq_order.empty() || !o.bwd_q_order.empty()))
    throw bad_input("--bwd-block-m, --bwd-block-n, --delta, --dq-order and --bwd-q-order need --bwd tiled");
  for (const auto &[name, v] :
       {std::pair{"--bwd-block-m", o.bwd_block_m}, std::pair{"--bwd-block-n", o.bwd_block_n}}) {
    if (v < 1)
      throw bad_input(std::string(name) + " must be a positive integer (got " + std::to_string(v) + ")");
    if (p.kind == at::policy_kind::fa2 && v % 16)
      throw bad_input(std::string(name) +
                      " must be a multiple of 16 under fa2 policies (tensor-core k chunks; got " +
                      std::to_string(v) + ")");
  }
  b.block_m = o.bwd_block_m, b.block_n = o.bwd_block_n;
  if (!o.delta.empty()) {
    if (o.delta == "fa2")
      b.delta = at::delta_order::fa2_lanes;
    else if (o.delta == "sequential")
      b.delta = at::delta_order::sequential;
    else
      throw bad_input("--delta must be fa2 or sequential (got '" + o.delta + "')");
  }
  auto order = [](const std::string &s, const char *name, at::block_order &out) {
    if (s.empty()) return;
    if (s == "ascending")
      out = at::block_order::ascending;
    else if (s == "descending")
      out = at::block_order::descending;
    else
      throw bad_input(std::string(name) + " must be ascending or descending (got '" + s + "')");
  };
  order(o.dq_order, "--dq-order", b.dq_order);
  order(o.bwd_q_order, "--bwd-q-order", b.q_order);
  return b;
}

// Reads a Q/K/V/dO file: [n, d], [heads, n, d] or [batch, heads, n, d]; float32, float64 or
// bfloat16 bits stored as uint16.
std::vector<double> read_tensor(const std::string &path, std::vector<std::size_t> &shape) {
  npy::array a = io::rethrow_as<bad_input>([&] { return npy::read(path); });
  if (a.shape.size() < 2 || a.shape.size() > 4)
    throw bad_input(path + ": expected a 2-d [n, d], 3-d [heads, n, d] or 4-d [batch, heads, n, d] array");
  shape = a.shape;
  std::vector<double> x(a.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (a.type == npy::dtype::u16)
      x[i] = to_double(bf16::from_bits(a.u16[i]));
    else
      x[i] = a.value(i);
    if (!std::isfinite(x[i])) throw bad_input(path + ": non-finite value at element " + std::to_string(i));
  }
  return x;
}

at::attention_inputs load_inputs(const attention_cli &o) {
  if (!o.q_file.empty() || !o.k_file.empty() || !o.v_file.empty()) {
    if (o.q_file.empty() || o.k_file.empty() || o.v_file.empty())
      throw bad_input("--q, --k and --v must be given together");
    std::vector<std::size_t> sq, sk, sv, sd;
    at::attention_inputs in;
    in.q = read_tensor(o.q_file, sq);
    in.k = read_tensor(o.k_file, sk);
    in.v = read_tensor(o.v_file, sv);
    if (sk != sq || sv != sq) throw bad_input("--q, --k and --v must have the same shape");
    const std::size_t r = sq.size();
    in.d = long(sq[r - 1]), in.n = long(sq[r - 2]);
    in.heads = r >= 3 ? long(sq[r - 3]) : 1;
    in.batch = r == 4 ? long(sq[0]) : 1;
    if (in.n < 1 || in.d < 1 || in.heads < 1 || in.batch < 1) throw bad_input(o.q_file + ": empty tensor");
    if (!o.do_file.empty()) {
      in.dout = read_tensor(o.do_file, sd);
      if (sd != sq) throw bad_input("--do must have the shape of --q");
    } else if (o.backward) {
      throw bad_input("--backward with --q/--k/--v needs --do FILE.npy");
    }
    return in;
  }
  if (o.n < 1 || o.d < 1 || o.heads < 1 || o.batch < 1)
    throw bad_input("--n, --d, --heads, --batch must be >= 1");
  if (o.scenario == "random") return at::scenario_random(o.batch, o.heads, o.n, o.d, o.seed);
  if (o.scenario == "sink") {
    if (o.sink.multiplicity < 0 || o.sink.tie_share < 0 || o.sink.tie_share > 1 || o.sink.v_skew < 0 ||
        o.sink.v_skew > 1 || o.sink.skew_cols < 0 || o.sink.skew_cols > 1)
      throw bad_input("sink knobs: --tie-share, --v-skew, --skew-cols in [0, 1], --multiplicity >= 0");
    return at::scenario_sink(o.batch, o.heads, o.n, o.d, o.seed, o.sink);
  }
  throw bad_input("unknown --scenario '" + o.scenario + "' (random, sink)");
}

void write_npy(const std::string &path, const std::vector<double> &x, const at::attention_inputs &in,
               bool rows) {
  if (path.empty()) return;
  std::vector<float> f(x.begin(), x.end()); // every value is FP32 or BF16 (exact), or binary64 (rounded)
  std::vector<std::size_t> shape = {std::size_t(in.batch), std::size_t(in.heads), std::size_t(in.n)};
  if (!rows) shape.push_back(std::size_t(in.d));
  io::rethrow_as<bad_input>([&] { npy::write(path, npy::dtype::f32, shape, f.data()); });
}

std::string csv_path_for(const std::string &plot) {
  const auto dot = plot.rfind('.');
  return (dot == std::string::npos ? plot : plot.substr(0, dot)) + ".csv";
}

void write_trace_csv(const std::string &path, const at::run_report &r) {
  std::ofstream f(path);
  if (!f) throw bad_input("cannot write " + path);
  f << "step,t,pbar,p_is_one,boundary,running,exact,cum_error,exact_l,norm_error\n";
  char b[400];
  for (const auto &p : r.trace) {
    std::snprintf(b, sizeof b, "%ld,%ld,%.9g,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g\n", p.step, p.t, p.pbar,
                  p.pbar == 1.0 ? 1 : 0, p.boundary ? 1 : 0, p.running, p.exact, p.cum_error, p.exact_l,
                  p.norm_error);
    f << b;
  }
}

void plot_trace(const std::string &png, const std::string &csv, const std::string &title) {
  const std::string gp = csv + ".gp";
  {
    std::ofstream f(gp);
    f << "set terminal pngcairo size 1000,600\n"
      << "set output '" << png << "'\n"
      << "set datafile separator ','\n"
      << "set key top left\n"
      << "set title \"" << title << "\"\n"
      << "set xlabel 'accumulation step (keys in processing order)'\n"
      << "set ylabel 'cumulative error of the running O / running row sum'\n"
      << "set grid\n"
      << "plot '" << csv
      << "' every ::1 using 1:10 with steps lw 2 title 'cumulative error (normalised)', \\\n"
      << "     '' every ::1 using ($4==1 ? $1 : 1/0):10 with points pt 7 ps 1.2 lc rgb 'red' title 'P-bar = "
         "1'\n";
  }
  const std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) {
    // pngcairo may be missing: fall back to the png terminal
    std::ifstream in(gp);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    s.replace(s.find("pngcairo"), 8, "png");
    std::ofstream(gp) << s;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("gnuplot failed on " + gp);
  }
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

void print_text(const at::run_report &r) {
  const auto &c = r.opt.cfg;
  std::printf("attention %s, variant %s, batch %ld heads %ld n %ld d %ld%s, Br %d Bc %d, %.2f s\n",
              at::policy_name(c.pol).c_str(), at::to_string(c.var), r.batch, r.heads, r.n, r.d,
              c.causal ? " causal" : "", c.pol.block_m, c.pol.block_n, r.seconds);
  if (r.opt.with_reference) {
    const auto &e = r.o_err;
    std::printf("O vs exact: mean signed %.4e +- %.2e (z = %.1f; by rows +- %.2e, z = %.1f", e.mean_signed,
                e.stderr_signed, e.z(), e.stderr_rows, e.z_rows());
    if (e.stderr_heads > 0) std::printf("; by heads +- %.2e, z = %.1f", e.stderr_heads, e.z_heads());
    std::printf("), mean abs %.4e, max abs %.4e, rel fro %.4e\n", e.mean_abs, e.max_abs, e.rel_fro);
    warn_nonfinite("O", e, r.d);
    std::printf("  ulp histogram:");
    for (const auto &[k, v] : e.ulp_hist)
      std::printf(" %d:%llu", k, (unsigned long long)v);
    std::printf("\n");
    if (r.opt.backward) {
      const auto &t = r.delta_err;
      std::printf("delta_lp - delta_hp: mean %.4e +- %.2e (z = %.1f), positive %llu negative %llu\n",
                  t.mean_signed, t.stderr_signed, t.z(), (unsigned long long)t.positive,
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

void run(const attention_cli &o) {
  at::run_options opt;
  opt.cfg.pol = make_policy(o);
  if (o.variant == "standard")
    opt.cfg.var = at::variant::standard;
  else if (o.variant == "fa2")
    opt.cfg.var = at::variant::fa2;
  else if (o.variant == "stabilized")
    opt.cfg.var = at::variant::stabilized;
  else
    throw bad_input("unknown --variant '" + o.variant + "' (standard, fa2, stabilized)");
  opt.cfg.causal = o.causal;
  opt.bwd = make_backward(o, opt.cfg.pol);
  opt.backward = o.backward || opt.bwd.kind == at::backward_kind::tiled;
  opt.with_ledger = !o.no_ledger;
  opt.threads = o.threads;
  at::attention_inputs in = load_inputs(o);
  if (opt.backward && in.dout.empty()) throw bad_input("--backward needs dO");
  if (opt.cfg.pol.kind == at::policy_kind::fa2 && opt.cfg.var != at::variant::standard &&
      opt.cfg.pol.block_n % 16)
    throw bad_input("--block-n must be a multiple of 16 under fa2 policies (tensor-core k chunks)");
  if (!o.trace_element.empty()) {
    long t = -1, i = -1;
    char extra;
    if (std::sscanf(o.trace_element.c_str(), "%ld,%ld%c", &t, &i, &extra) != 2 || t < 0 || i < 0 ||
        t >= in.n || i >= in.d)
      throw bad_input("--trace-element T,i needs 0 <= T < n and 0 <= i < d");
    opt.cfg.trace_row = t, opt.cfg.trace_col = i;
  }
  if (!o.plot_file.empty() && o.trace_element.empty()) throw bad_input("--plot needs --trace-element T,i");
  opt.progress = in.n * in.n * in.d * in.heads * in.batch >= (1l << 26) || opt.backward;
  at::run_report r = at::run_attention(in, opt);
  char extra[512];
  std::snprintf(extra, sizeof extra,
                ",\"scenario\":\"%s\",\"seed\":%llu,\"tie_share\":%.17g,\"multiplicity\":%d,\"v_skew\":%.17g,"
                "\"skew_cols\":%.17g,\"strength\":%.17g,\"do_bias\":%.17g",
                o.q_file.empty() ? o.scenario.c_str() : "files", (unsigned long long)o.seed, o.sink.tie_share,
                o.sink.multiplicity, o.sink.v_skew, o.sink.skew_cols, o.sink.strength, o.sink.do_bias);
  const std::string js = at::to_json(r, extra);
  if (o.json)
    std::printf("%s\n", js.c_str());
  else
    print_text(r);
  if (!o.ledger_file.empty()) {
    std::ofstream f(o.ledger_file);
    if (!f) throw bad_input("cannot write " + o.ledger_file);
    f << js << "\n";
  }
  write_npy(o.out_o, r.o, in, false);
  write_npy(o.out_lse, r.lse, in, true);
  if (opt.backward) {
    write_npy(o.out_dq, r.dq, in, false);
    write_npy(o.out_dk, r.dk, in, false);
    write_npy(o.out_dv, r.dv, in, false);
  }
  if (!r.trace.empty()) {
    const std::string csv = !o.trace_csv.empty()   ? o.trace_csv
                            : !o.plot_file.empty() ? csv_path_for(o.plot_file)
                                                   : std::string();
    if (!csv.empty()) write_trace_csv(csv, r);
    if (!o.plot_file.empty()) {
      char title[256];
      std::snprintf(title, sizeof title, "O[%ld,%ld] under %s (%s), seed %llu", opt.cfg.trace_row,
                    opt.cfg.trace_col, at::policy_name(opt.cfg.pol).c_str(), at::to_string(opt.cfg.var),
                    (unsigned long long)o.seed);
      plot_trace(o.plot_file, csv, title);
    }
  }
}

void register_attention(CLI::App &app) {
  auto o = std::make_shared<attention_cli>();
  auto *s =
      app.add_subcommand("attention", "Reference attention under a rounding policy, with the error ledger");
  s->footer("Examples:\n"
            "  bf16emu attention --scenario sink --policy paper --json\n"
            "  bf16emu attention --scenario sink --policy paper --variant stabilized --beta 4\n"
            "  bf16emu attention --scenario sink --policy fa2:sm90 --backward --ledger ledger.json\n"
            "  bf16emu attention --scenario sink --policy fa2:sm80 --bwd tiled --bwd-block-m 64 --json\n"
            "  bf16emu attention --scenario sink --policy paper --trace-element 0,3 --plot trace.png\n"
            "Details and numbers: docs/attention.md, docs/paper-reproduction.md");
  s->add_option("--n", o->n, "sequence length (default 256)");
  s->add_option("--d", o->d, "head dimension (default 64)");
  s->add_option("--heads", o->heads, "heads (default 1; run in parallel)");
  s->add_option("--batch", o->batch, "batch (default 1)");
  s->add_flag("--causal", o->causal, "causal mask");
  s->add_option("--variant", o->variant, "standard, fa2 (default) or stabilized");
  s->add_option("--beta", o->beta, "stabilized: beta (default 2)");
  s->add_option("--tie-tol", o->tie_tol,
                "stabilized: scores within this of the max count as ties (default 1e-3)");
  s->add_option("--block-m", o->block_m, "Br (default 64)");
  s->add_option("--block-n", o->block_n, "Bc (default 64)");
  s->add_option("--policy", o->policy,
                "exact, fp32, paper, fa2:sm80 (default), fa2:sm89, fa2:sm90, fa2:sm100, fa2_twin");
  s->add_option("--kv-order", o->kv_order, "forward or reverse (fa2 default: reverse)");
  s->add_option("--exp", o->exp, "rn (binary64 exp rounded once to FP32) or poly (FMA-only exp2, default)");
  s->add_option("--row-sum", o->row_sum, "sequential or quad (default)");
  s->add_option("--fma", o->fma, "on (default) or off: FMA contraction of the exp2 argument and delta");
  s->add_option("--normalize", o->normalize, "reciprocal (default) or divide");
  s->add_option("--seed", o->seed, "scenario seed (default 1)");
  s->add_option("--scenario", o->scenario, "random or sink (default)");
  s->add_option("--tie-share", o->sink.tie_share, "sink: share of rows whose max repeats (default 0.5)");
  s->add_option("--multiplicity", o->sink.multiplicity, "sink: copies of the repeated key (default 4)");
  s->add_option("--v-skew", o->sink.v_skew, "sink: P(negative) in skewed V columns (default 0.9)");
  s->add_option("--skew-cols", o->sink.skew_cols, "sink: share of skewed V columns (default 0.5)");
  s->add_option("--strength", o->sink.strength, "sink: score gap of the repeated key (default 6)");
  s->add_option("--do-bias", o->sink.do_bias, "sink: added to dO in the skewed columns (default 1)");
  s->add_option("--q", o->q_file, "Q as .npy (float32, float64 or bf16 bits as uint16)");
  s->add_option("--k", o->k_file, "K as .npy");
  s->add_option("--v", o->v_file, "V as .npy");
  s->add_option("--do", o->do_file, "dO as .npy (for --backward)");
  s->add_flag("--backward", o->backward, "also run the backward (delta, dQ, dK, dV)");
  s->add_option("--bwd", o->bwd,
                "backward: reference (default; all keys of a row at once) or tiled (FlashAttention-2's "
                "Algorithm 2 with the CUDA kernel's rounding points; implies --backward)");
  s->add_option("--bwd-block-m", o->bwd_block_m, "tiled backward: Br query rows per block (default 128)")
      ->each([o](const std::string &) { o->bwd_block_given = true; });
  s->add_option("--bwd-block-n", o->bwd_block_n, "tiled backward: Bc keys per block (default 128)")
      ->each([o](const std::string &) { o->bwd_block_given = true; });
  s->add_option("--delta", o->delta,
                "tiled backward: delta order, fa2 (default: per-thread sums, 8- or 4-lane butterfly) or "
                "sequential");
  s->add_option("--dq-order", o->dq_order,
                "tiled backward: order of the FP32 dQ additions over KV blocks, ascending (default) or "
                "descending");
  s->add_option("--bwd-q-order", o->bwd_q_order,
                "tiled backward: order of the query blocks in the inner loop, descending (default, as the "
                "kernel) or ascending");
  s->add_flag("--json", o->json, "print the ledger as JSON");
  s->add_flag("--no-ledger", o->no_ledger, "ledger off (timing)");
  s->add_option("--ledger", o->ledger_file, "write the JSON ledger to FILE");
  s->add_option("--trace-element", o->trace_element,
                "follow O[T,i] (batch 0, head 0) through its accumulation");
  s->add_option("--trace-csv", o->trace_csv, "write the element trace as CSV");
  s->add_option("--plot", o->plot_file, "gnuplot PNG of the element trace (CSV written beside it)");
  s->add_option("--out-o", o->out_o, "write O as .npy (float32)");
  s->add_option("--out-lse", o->out_lse, "write L as .npy");
  s->add_option("--out-dq", o->out_dq, "write dQ as .npy");
  s->add_option("--out-dk", o->out_dk, "write dK as .npy");
  s->add_option("--out-dv", o->out_dv, "write dV as .npy");
  s->add_option("--threads", o->threads, "worker threads for heads (default: all cores)");
  s->callback([o] { run(*o); });
}

// ---------------------------------------------------------------------------
// `bf16emu paper` section: the attention ledger on the reproduction's sink scenario
// (docs/paper-reproduction.md, item 1-2 and 6): n 256, d 64, one head, seed 1, Br = Bc = 64,
// tie share 0.5, multiplicity 8, strength 10, V skew 0.9 on half the columns.

struct paper_row {
  const char *policy;
  at::variant var;
  double beta;
  at::run_report rep;
};

std::vector<paper_row> &paper_rows() {
  static std::vector<paper_row> rows = [] {
    at::sink_params sp;
    sp.multiplicity = 8, sp.strength = 10;
    const at::attention_inputs in = at::scenario_sink(1, 1, 256, 64, 1, sp);
    std::vector<paper_row> r = {{"paper", at::variant::fa2, 2, {}},
                                {"paper", at::variant::stabilized, 2, {}},
                                {"paper", at::variant::stabilized, 7, {}},
                                {"fa2:sm80", at::variant::fa2, 2, {}},
                                {"fa2:sm90", at::variant::fa2, 2, {}}};
    for (auto &x : r) {
      at::run_options o;
      at::parse_policy(x.policy, o.cfg.pol);
      o.cfg.var = x.var;
      o.cfg.pol.beta = x.beta;
      x.rep = at::run_attention(in, o);
    }
    return r;
  }();
  return rows;
}

// The site with the largest |sum of signed error| on P-bar = 1 events.
int top_p1_site(const at::run_report &r) {
  int best = -1;
  double b = 0;
  for (int i = 0; i < at::site_count; ++i) {
    const double v = std::fabs(r.led.sites[i].p_one.sum.value());
    if (v > b) b = v, best = i;
  }
  return best;
}

void paper_text(std::ostream &out) {
  out << "sink scenario: n 256, d 64, seed 1, multiplicity 8, strength 10, tie share 0.5, V skew 0.9\n"
      << "(bf16emu attention --n 256 --scenario sink --multiplicity 8 --strength 10 --seed 1 --policy P "
         "[--variant stabilized --beta B])\n";
  char b[256];
  for (const auto &x : paper_rows()) {
    const auto &e = x.rep.o_err;
    const int t = top_p1_site(x.rep);
    std::snprintf(
        b, sizeof b,
        "  %-9s %-10s %-6s O mean signed error %+.3e +- %.1e (z %+6.1f, by rows %+6.1f)  largest P=1 "
        "site: %s\n",
        x.policy, at::to_string(x.var),
        x.var == at::variant::stabilized ? (x.beta == 2 ? "beta 2" : "beta 7") : "", e.mean_signed,
        e.stderr_signed, e.z(), e.z_rows(), t >= 0 ? at::to_string(at::site(t)) : "-");
    out << b;
  }
  out << "(one head: z and z by rows describe this input. Whether an arithmetic is biased needs\n"
         " independent heads: add --heads 24 and read z by heads; docs/paper-reproduction.md, 2b)\n";
}

void paper_json(io::json_writer &w) {
  w.begin_array();
  for (const auto &x : paper_rows()) {
    const auto &e = x.rep.o_err;
    w.begin_object();
    w.kv("policy", x.policy).kv("variant", at::to_string(x.var)).kv("beta", x.beta);
    w.kv("mean_signed", e.mean_signed).kv("stderr_signed", e.stderr_signed).kv("z", e.z());
    w.kv("stderr_rows", e.stderr_rows).kv("z_rows", e.z_rows());
    const int t = top_p1_site(x.rep);
    w.kv("top_p_equals_one_site", t >= 0 ? at::to_string(at::site(t)) : "");
    w.end_object();
  }
  w.end_array();
}

BF16EMU_PAPER_SECTION(10, "attention_ledger", "Attention error ledger (bf16emu attention)", paper_text,
                      paper_json);

} // namespace

BF16EMU_COMMAND(40, register_attention);

} // namespace bf16emu::cli
