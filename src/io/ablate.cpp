// bf16emu io: bias over independent heads and the site ablation. See ablate.hpp.
#include "io/ablate.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/plot.hpp"

namespace bf16emu::io {

namespace {

at::head_view head_of(const at::attention_inputs &in, long h) {
  const long hs = in.head_size();
  return at::head_view{in.n, in.d, &in.q[h * hs], &in.k[h * hs], &in.v[h * hs]};
}

// delta = rowsum(dO o O) in binary64 (sequential over the columns).
std::vector<double> delta_binary64(const double *dout, const std::vector<double> &o, long n, long d) {
  std::vector<double> r(static_cast<std::size_t>(n), 0.0);
  for (long i = 0; i < n; ++i) {
    double s = 0;
    for (long t = 0; t < d; ++t)
      s += dout[i * d + t] * o[i * d + t];
    r[i] = s;
  }
  return r;
}

// Mean and standard error over the per-head values: attention::summarize_error against zeros is
// exactly that (mean of the values, sqrt(var / (H-1) / H), non-finite values counted apart).
void finish(over_heads &s) {
  const std::vector<double> zeros(s.per_head.size(), 0.0);
  const at::error_summary e = at::summarize_error(s.per_head, zeros, 52);
  s.heads = e.n, s.nonfinite_heads = e.nonfinite, s.negative_heads = e.negative;
  s.mean = e.mean_signed, s.se = e.stderr_signed;
}

// The head's mean signed error (NaN when no pair is finite).
double head_mean(const std::vector<double> &got, const std::vector<double> &want, int frac_bits) {
  const at::error_summary e = at::summarize_error(got, want, frac_bits);
  return e.n ? e.mean_signed : std::numeric_limits<double>::quiet_NaN();
}

} // namespace

std::vector<head_bias_row> run_head_bias(const at::attention_inputs &in, const head_bias_request &rq) {
  const long heads = static_cast<long>(at::checked_elements({in.batch, in.heads}));
  const auto H = static_cast<std::uint64_t>(heads), C = static_cast<std::uint64_t>(rq.configs.size());
  const std::size_t hs = static_cast<std::size_t>(in.head_size());
  const bool with_delta = !in.dout.empty();
  const std::uint64_t mine = shard_size(H, rq.split.part, rq.split.parts); // this process's heads
  const std::uint64_t total = mine * (C + 1);
  auto head_at = [&](std::uint64_t j) { return rq.split.part + j * rq.split.parts; };
  // Pass 1: the exact reference of every head.
  std::vector<double> o_ex(H * hs), d_ex(with_delta ? H * static_cast<std::size_t>(in.n) : 0);
  parallel_for(
      mine, rq.threads,
      [&](std::uint64_t j, unsigned) {
        const std::uint64_t h = head_at(j);
        at::null_observer none;
        const at::forward_result ex = at::forward_head(rq.reference, head_of(in, long(h)), none);
        std::copy(ex.o.begin(), ex.o.end(), o_ex.begin() + h * hs);
        if (with_delta) {
          const auto dl = delta_binary64(&in.dout[h * hs], ex.o, in.n, in.d);
          std::copy(dl.begin(), dl.end(), d_ex.begin() + h * std::size_t(in.n));
        }
      },
      rq.progress ? progress_fn([&](std::uint64_t done, std::uint64_t) { rq.progress(done, total); })
                  : progress_fn());
  // Pass 2: every (configuration, head).
  std::vector<head_bias_row> rows(C);
  for (std::uint64_t c = 0; c < C; ++c) {
    rows[c].config = rq.configs[c];
    rows[c].o.per_head.assign(H, 0.0);
    rows[c].delta.per_head.assign(with_delta ? H : 0, 0.0);
  }
  // The ledgers of the configurations that keep one: one per (configuration, head) item, merged
  // into the configuration's in head order below (the ledger's sums are not associative, so the
  // grouping must not depend on which thread ran which item).
  std::vector<std::unique_ptr<at::ledger>> item_leds(C * mine);
  parallel_for(
      C * mine, rq.threads,
      [&](std::uint64_t i, unsigned) {
        const std::uint64_t c = i / mine, h = head_at(i % mine);
        const at::forward_config &cfg = rq.configs[c].cfg;
        const at::head_view hv = head_of(in, long(h));
        at::null_observer none;
        at::forward_result lp;
        if (rq.configs[c].with_ledger) {
          item_leds[i] = std::make_unique<at::ledger>();
          lp = at::forward_head(cfg, hv, *item_leds[i]);
        } else {
          lp = at::forward_head(cfg, hv, none);
        }
        const std::vector<double> want(o_ex.begin() + h * hs, o_ex.begin() + (h + 1) * hs);
        rows[c].o.per_head[h] = head_mean(lp.o, want, lp.out_frac_bits);
        if (!with_delta) return;
        const double *dout = &in.dout[h * hs];
        const std::vector<double> dlp = rq.backward ? at::backward_any(cfg, rq.bwd, hv, dout, lp, none).delta
                                                    : delta_binary64(dout, lp.o, in.n, in.d);
        const std::vector<double> dwant(d_ex.begin() + h * std::size_t(in.n),
                                        d_ex.begin() + (h + 1) * std::size_t(in.n));
        rows[c].delta.per_head[h] = head_mean(dlp, dwant, 52);
      },
      rq.progress ? progress_fn([&](std::uint64_t done, std::uint64_t) { rq.progress(mine + done, total); })
                  : progress_fn());
  for (std::uint64_t i = 0; i < C * mine; ++i)
    if (item_leds[i]) rows[i / mine].led.merge(*item_leds[i]);
  if (rq.split.exchange) { // the other processes' heads
    std::vector<double> packed;
    for (const auto &r : rows)
      for (const auto *v : {&r.o.per_head, &r.delta.per_head})
        packed.insert(packed.end(), v->begin(), v->end());
    rq.split.exchange(packed);
    std::size_t k = 0;
    for (auto &r : rows)
      for (auto *v : {&r.o.per_head, &r.delta.per_head})
        for (double &x : *v)
          x = packed[k++];
  }
  for (auto &r : rows) {
    finish(r.o);
    if (with_delta) finish(r.delta);
  }
  return rows;
}

// ---------------------------------------------------------------------------
// Names.

at::site parse_site_name(std::string_view s, const char *option) {
  for (int i = 0; i < at::site_count; ++i)
    if (s == at::to_string(at::site(i))) return at::site(i);
  std::string names;
  for (int i = 0; i < at::site_count; ++i)
    names += std::string(i ? ", " : "") + at::to_string(at::site(i));
  throw input_error(std::string(option) + ": unknown site '" + shorten(std::string(s)) +
                    "' (sites: " + names + ")");
}

at::site_prec parse_promotion(std::string_view s, const char *option) {
  if (s == "fp32") return at::site_prec::fp32;
  if (s == "exact") return at::site_prec::exact;
  throw input_error(std::string(option) + ": '" + shorten(std::string(s)) +
                    "' is not a promotion (fp32 or exact)");
}

namespace {
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> r;
  for (;;) {
    const auto p = s.find(sep);
    r.push_back(s.substr(0, p));
    if (p == std::string_view::npos) return r;
    s.remove_prefix(p + 1);
  }
}
} // namespace

std::vector<at::site> parse_site_list(std::string_view spec, const char *option) {
  std::vector<at::site> r;
  for (auto tok : split(spec, ','))
    r.push_back(parse_site_name(tok, option));
  return r;
}

std::vector<std::vector<at::site>> parse_site_pairs(std::string_view spec, const char *option) {
  std::vector<std::vector<at::site>> r;
  for (auto tok : split(spec, ',')) {
    const auto parts = split(tok, '+');
    if (parts.size() != 2)
      throw input_error(std::string(option) + ": '" + shorten(std::string(tok)) +
                        "' is not a pair of sites a+b");
    const at::site a = parse_site_name(parts[0], option), b = parse_site_name(parts[1], option);
    if (a == b)
      throw input_error(std::string(option) + ": '" + shorten(std::string(tok)) + "' names one site twice");
    r.push_back({a, b});
  }
  return r;
}

// ---------------------------------------------------------------------------
// The ablation.

std::vector<at::site> rounding_sites(const at::attention_inputs &in, const at::forward_config &cfg,
                                     bool backward, const at::backward_config &bwd) {
  at::ledger led;
  const at::head_view hv = head_of(in, 0);
  const at::forward_result lp = at::forward_head(cfg, hv, led);
  if (backward && !in.dout.empty()) at::backward_any(cfg, bwd, hv, &in.dout[0], lp, led);
  std::vector<at::site> r;
  for (int i = 0; i < at::site_count; ++i) {
    // O depends on the forward sites before lse; delta on those and on its own rounding. The
    // lse and the gradient sites cannot move either statistic.
    const bool moves = i < int(at::site::lse) || at::site(i) == at::site::delta;
    if (moves && led.sites[i].all.pos + led.sites[i].all.neg > 0) r.push_back(at::site(i));
  }
  return r;
}

double bias_share(double base, double x) {
  return base != 0 ? (base - x) / base + 0.0 : std::numeric_limits<double>::quiet_NaN(); // + 0.0: no -0
}

ablation_report run_ablation(const at::attention_inputs &in, const ablation_request &rq) {
  ablation_report rep;
  rep.rq = rq;
  rep.heads = in.batch * in.heads, rep.n = in.n, rep.d = in.d;
  head_bias_request hr;
  hr.reference = rq.base;
  hr.reference.pol.kind = at::policy_kind::exact;
  for (auto &p : hr.reference.pol.site_precision)
    p = at::site_prec::policy;
  hr.backward = rq.backward, hr.bwd = rq.bwd, hr.threads = rq.threads, hr.progress = rq.progress;
  hr.split = rq.split;
  auto add = [&](std::vector<at::site> sites) {
    head_bias_config c;
    c.cfg = rq.base;
    for (std::size_t k = 0; k < sites.size(); ++k) {
      c.label += std::string(k ? "+" : "") + at::to_string(sites[k]);
      c.cfg.pol.site_precision[int(sites[k])] = rq.to;
    }
    if (sites.empty()) c.label = "baseline";
    c.promoted = std::move(sites);
    hr.configs.push_back(std::move(c));
  };
  add({});
  for (at::site s : rq.sites)
    add({s});
  for (const auto &p : rq.pairs)
    add(p);
  rep.rows = run_head_bias(in, hr);
  return rep;
}

// ---------------------------------------------------------------------------
// Reports.

namespace {

const char *promotion_name(at::site_prec p) { return p == at::site_prec::exact ? "exact" : "fp32"; }

std::string policy_text(const at::forward_config &cfg) {
  std::string s = at::policy_name(cfg.pol) + ", variant " + at::to_string(cfg.var);
  if (cfg.var == at::variant::stabilized) {
    char b[64];
    std::snprintf(b, sizeof b, " (beta %g, tie tol %g)", cfg.pol.beta, cfg.pol.tie_tol);
    s += b;
  }
  if (cfg.causal) s += ", causal";
  return s;
}

} // namespace

void print_ablation_text(std::ostream &out, const ablation_report &r, const ablation_origin &origin) {
  const auto &rq = r.rq;
  char b[512];
  std::snprintf(b, sizeof b,
                "bf16emu ablate: %s; %s scenario, %ld independent heads of n %ld, d %ld (seed %llu",
                policy_text(rq.base).c_str(), origin.scenario.c_str(), r.heads, r.n, r.d,
                (unsigned long long)origin.seed);
  out << b;
  if (origin.scenario == "sink") {
    std::snprintf(b, sizeof b, "; multiplicity %d, strength %g, tie share %g, V skew %g on %g of the columns",
                  origin.sink.multiplicity, origin.sink.strength, origin.sink.tie_share, origin.sink.v_skew,
                  origin.sink.skew_cols);
    out << b;
  }
  out << ")\nsites promoted to " << promotion_name(rq.to)
      << (rq.to == at::site_prec::exact ? " (binary64)" : "") << "; delta = rowsum(dO o O) "
      << (rq.backward ? "from the policy's backward" : "in binary64 from the policy's O") << "\n"
      << "bias = mean over heads of each head's mean signed error (vs the exact policy); se over heads;\n"
      << "z (heads) = bias / se; share = (bias_baseline - bias) / bias_baseline\n\n";
  std::snprintf(b, sizeof b, "%-24s %12s %10s %10s %8s   %12s %10s %10s %8s\n", "configuration", "O bias",
                "se", "z (heads)", "share", "delta bias", "se", "z (heads)", "share");
  out << b;
  const head_bias_row &base = r.rows.at(0);
  for (const auto &row : r.rows) {
    auto share = [&](double bv, double x, bool is_base) {
      if (is_base) return std::string("-");
      char s[32];
      std::snprintf(s, sizeof s, "%+.0f%%", 100 * bias_share(bv, x));
      return std::string(s);
    };
    const bool is_base = &row == &base;
    std::snprintf(b, sizeof b, "%-24s %+12.3e %10.2e %+10.1f %8s   %+12.3e %10.2e %+10.1f %8s\n",
                  row.config.label.c_str(), row.o.mean, row.o.se, row.o.z(),
                  share(base.o.mean, row.o.mean, is_base).c_str(), row.delta.mean, row.delta.se,
                  row.delta.z(), share(base.delta.mean, row.delta.mean, is_base).c_str());
    out << b;
  }
  std::uint64_t bad = 0;
  for (const auto &row : r.rows)
    bad += row.o.nonfinite_heads;
  if (bad)
    out << "warning: " << bad
        << " (configuration, head) pairs had no finite output and are left out of their rows\n";
}

void write_over_heads_json(json_writer &w, const over_heads &s) {
  w.begin_object();
  w.kv("heads", s.heads).kv("mean", s.mean).kv("se", s.se).kv("z_heads", s.z());
  w.kv("negative_heads", s.negative_heads).kv("nonfinite_heads", s.nonfinite_heads);
  w.end_object();
}

void write_ablation_json(json_writer &w, const ablation_report &r, const ablation_origin &origin) {
  const auto &rq = r.rq;
  w.begin_object();
  w.kv("command", "ablate");
  w.kv("policy", at::policy_name(rq.base.pol)).kv("variant", at::to_string(rq.base.var));
  if (rq.base.var == at::variant::stabilized)
    w.kv("beta", rq.base.pol.beta).kv("tie_tol", rq.base.pol.tie_tol);
  w.kv("causal", rq.base.causal);
  w.kv("scenario", origin.scenario).kv("seed", origin.seed);
  if (origin.scenario == "sink") {
    w.kv("multiplicity", origin.sink.multiplicity).kv("strength", origin.sink.strength);
    w.kv("tie_share", origin.sink.tie_share).kv("v_skew", origin.sink.v_skew);
    w.kv("skew_cols", origin.sink.skew_cols).kv("do_bias", origin.sink.do_bias);
  }
  w.kv("heads", std::int64_t(r.heads)).kv("n", std::int64_t(r.n)).kv("d", std::int64_t(r.d));
  w.kv("to", promotion_name(rq.to));
  w.kv("delta_from", rq.backward ? "backward" : "binary64_rowsum_of_o");
  w.key("configurations").begin_array();
  const head_bias_row &base = r.rows.at(0);
  for (const auto &row : r.rows) {
    w.begin_object();
    w.kv("name", row.config.label);
    w.key("sites").begin_array();
    for (at::site s : row.config.promoted)
      w.value(at::to_string(s));
    w.end_array();
    w.key("o");
    write_over_heads_json(w, row.o);
    w.key("delta");
    write_over_heads_json(w, row.delta);
    if (&row != &base) {
      w.kv("share_o", bias_share(base.o.mean, row.o.mean));
      w.kv("share_delta", bias_share(base.delta.mean, row.delta.mean));
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_ablation_csv(const std::string &path, const ablation_report &r) {
  output_file out(path, "--plot CSV");
  out << "configuration,o_bias,o_se,o_z_heads,o_share,delta_bias,delta_se,delta_z_heads,delta_share\n";
  const head_bias_row &base = r.rows.at(0);
  char b[512];
  for (const auto &row : r.rows) {
    std::snprintf(b, sizeof b, "%s,%.9g,%.9g,%.6g,%.6g,%.9g,%.9g,%.6g,%.6g\n", row.config.label.c_str(),
                  row.o.mean, row.o.se, row.o.z(), bias_share(base.o.mean, row.o.mean), row.delta.mean,
                  row.delta.se, row.delta.z(), bias_share(base.delta.mean, row.delta.mean));
    out << b;
  }
  out.commit();
}

void plot_ablation(const plot_paths &p, const std::string &title) {
  figure fig{title, 1100, 600};
  fig.keep_script = true;
  fig.body = "set style data histograms\n"
             "set style histogram errorbars gap 1 lw 1\n"
             "set style fill solid 0.6 border -1\n"
             "set xtics rotate by -35\n"
             "set grid ytics\n"
             "set key top left\n"
             "set ylabel 'bias of O: mean over heads of the mean signed error (+- se over heads)'\n"
             "plot " +
             gnuplot_path(p.csv) + " every ::1 using 2:3:xtic(1) title 'O bias'\n";
  render_plot(p, fig);
}

} // namespace bf16emu::io
