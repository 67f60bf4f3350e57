// bf16emu io: bias reports. See bias_report.hpp.
#include "io/bias_report.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/plot.hpp"

namespace bf16emu::io {

namespace b = bf16emu::bias;

bias_row make_bias_row(const std::string &cfg_line, const b::stats &st) {
  bias_row r;
  std::istringstream in(cfg_line);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    r.cfg[tok.substr(0, eq)] = tok.substr(eq + 1);
    r.cfg_order.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
  }
  r.s = b::summarize(st);
  return r;
}

namespace {

std::string g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char *const csv_stats =
    "trials,nonfinite,mean_ulp,se_ulp,ci99_lo_ulp,ci99_hi_ulp,z,mean_rel,se_rel,ci99_lo_rel,ci99_hi_rel,"
    "mean_away_ulp,se_away_ulp,z_away,share_away,share_toward,share_steps_away,worst_trial,worst_ulp,worst_"
    "err,"
    "worst_rel";

std::vector<std::string> csv_stat_names() {
  std::vector<std::string> out;
  std::istringstream in(csv_stats);
  std::string name;
  while (std::getline(in, name, ','))
    out.push_back(name);
  return out;
}

std::string cfg_value(const bias_row &r, const char *k) {
  return r.cfg.count(k) ? r.cfg.at(k) : std::string("?");
}

void print_json(std::ostream &out, const bias_header &h, const std::vector<bias_row> &rows) {
  json_writer j(out);
  j.begin_object();
  j.kv("tool", "bf16emu bias").kv("seed", h.seed).kv("trials", h.trials).kv("chunk", h.chunk);
  j.key("configs").begin_array();
  for (const bias_row &r : rows) {
    const b::summary &s = r.s;
    j.begin_object();
    for (const auto &[k, v] : r.cfg_order) {
      char *end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end && *end == 0 && !v.empty())
        j.kv(k, d);
      else
        j.kv(k, v);
    }
    j.kv("trials", s.trials).kv("nonfinite", s.nonfinite);
    j.kv("mean_ulp", s.mean_ulp).kv("se_ulp", s.se_ulp);
    j.key("ci99_ulp").begin_array().value(s.ci99_lo_ulp).value(s.ci99_hi_ulp).end_array();
    j.kv("z", s.z).kv("significant", std::fabs(s.z) > b::z99);
    j.kv("mean_rel", s.mean_rel).kv("se_rel", s.se_rel);
    j.key("ci99_rel").begin_array().value(s.ci99_lo_rel).value(s.ci99_hi_rel).end_array();
    j.kv("mean_abs", s.mean_abs);
    j.kv("mean_away_ulp", s.mean_mag_ulp).kv("se_away_ulp", s.se_mag_ulp).kv("z_away", s.z_mag);
    j.kv("share_away", s.share_away).kv("share_toward", s.share_toward);
    j.kv("steps_inexact", s.steps_inexact).kv("share_steps_away", s.share_steps_away);
    j.key("worst").begin_object();
    j.kv("trial", s.worst_trial).kv("err_ulp", s.worst_ulp).kv("err", s.worst_err).kv("rel", s.worst_rel);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void print_csv(std::ostream &out, const std::vector<bias_row> &rows) {
  if (rows.empty()) return;
  for (const auto &kv : rows[0].cfg_order)
    out << kv.first << ',';
  out << csv_stats << '\n';
  for (const bias_row &r : rows) {
    const b::summary &s = r.s;
    for (const auto &kv : r.cfg_order)
      out << kv.second << ',';
    out << s.trials << ',' << s.nonfinite << ',' << g(s.mean_ulp) << ',' << g(s.se_ulp) << ','
        << g(s.ci99_lo_ulp) << ',' << g(s.ci99_hi_ulp) << ',' << g(s.z) << ',' << g(s.mean_rel) << ','
        << g(s.se_rel) << ',' << g(s.ci99_lo_rel) << ',' << g(s.ci99_hi_rel) << ',' << g(s.mean_mag_ulp)
        << ',' << g(s.se_mag_ulp) << ',' << g(s.z_mag) << ',' << g(s.share_away) << ',' << g(s.share_toward)
        << ',' << g(s.share_steps_away) << ',' << s.worst_trial << ',' << g(s.worst_ulp) << ','
        << g(s.worst_err) << ',' << g(s.worst_rel) << '\n';
  }
}

void print_text(std::ostream &out, const bias_header &h, const std::vector<bias_row> &rows) {
  out << "bf16emu bias: seed " << h.seed << ", " << h.trials << " trials per configuration\n";
  for (const bias_row &r : rows) {
    const b::summary &s = r.s;
    auto c = [&](const char *k) { return cfg_value(r, k); };
    out << "\n"
        << c("method") << " " << c("round") << " -> " << c("out") << "  (scenario " << c("scenario") << ", n "
        << c("n") << ", neg " << c("neg") << ", spread " << c("spread") << ", ones " << c("ones")
        << ", weights " << c("weights") << ", residual " << c("residual");
    if (c("method") == "tc") out << ", tc L " << c("tc_L") << " F " << c("tc_F");
    out << ")\n";
    out << "  mean signed error  " << g(s.mean_ulp) << " ulp  (SE " << g(s.se_ulp) << ", 99% CI ["
        << g(s.ci99_lo_ulp) << ", " << g(s.ci99_hi_ulp) << "], z " << g(s.z)
        << (std::fabs(s.z) > b::z99 ? ", significant" : "") << ")\n";
    out << "  relative           " << g(s.mean_rel) << "  (SE " << g(s.se_rel) << ", 99% CI ["
        << g(s.ci99_lo_rel) << ", " << g(s.ci99_hi_rel) << "])\n";
    out << "  away from zero     " << g(s.mean_mag_ulp) << " ulp  (SE " << g(s.se_mag_ulp) << ", z "
        << g(s.z_mag) << ")\n";
    out << "  results away/toward zero  " << g(s.share_away) << " / " << g(s.share_toward)
        << ";  step roundings away " << g(s.share_steps_away) << " of " << s.steps_inexact << "\n";
    out << "  worst              " << g(s.worst_ulp) << " ulp = " << g(s.worst_err) << " (rel "
        << g(s.worst_rel) << ") at trial " << s.worst_trial << "\n";
    if (s.nonfinite) out << "  nonfinite results  " << s.nonfinite << "\n";
  }
}

} // namespace

void print_bias_report(std::ostream &out, report_format f, const bias_header &h,
                       const std::vector<bias_row> &rows) {
  if (f == report_format::json)
    print_json(out, h, rows);
  else if (f == report_format::csv)
    print_csv(out, rows);
  else
    print_text(out, h, rows);
}

bool bias_map_value_known(const std::string &name) {
  for (const auto &n : csv_stat_names())
    if (n == name) return true;
  return false;
}

void plot_bias_map(const plot_paths &p, const std::string &map_value, const b::axis &x, const b::axis &y,
                   const std::vector<bias_row> &rows, const bias_header &h) {
  if (!bias_map_value_known(map_value))
    throw input_error("--map-value must be one of: " + std::string(csv_stats));
  {
    output_file f(p.csv, "--plot CSV");
    print_csv(f.stream(), rows);
    f.commit();
  }
  // Columns of the knobs and of the plotted statistic in the CSV.
  int col = 0, ix = 0, iy = 0, i = 1;
  for (const auto &kv : rows[0].cfg_order) {
    if (kv.first == x.knob) ix = i;
    if (kv.first == y.knob) iy = i;
    ++i;
  }
  for (const auto &name : csv_stat_names()) {
    if (name == map_value) col = i;
    ++i;
  }
  double vmax = 0;
  for (const bias_row &r : rows) {
    const b::summary &s = r.s;
    const double v = map_value == "z"               ? s.z
                     : map_value == "mean_rel"      ? s.mean_rel
                     : map_value == "mean_away_ulp" ? s.mean_mag_ulp
                                                    : s.mean_ulp;
    vmax = std::fmax(vmax, std::fabs(v));
  }
  if (vmax == 0) vmax = 1;
  const bias_row &r0 = rows[0];
  figure fig{"bf16emu bias: " + map_value + ", " + cfg_value(r0, "method") + " " + cfg_value(r0, "round") +
                 " -> " + cfg_value(r0, "out") + ", seed " + std::to_string(h.seed) + ", " +
                 std::to_string(h.trials) + " trials/cell",
             900, 700};
  auto half = [](const std::vector<double> &v) { return v.size() > 1 ? (v[1] - v[0]) / 2 : 0.5; };
  std::ostringstream gp;
  gp << "set xlabel " << gnuplot_quote(x.knob) << "\nset ylabel " << gnuplot_quote(y.knob) << "\n"
     << "set cblabel " << gnuplot_quote(map_value) << "\n"
     << "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\n"
     << "set cbrange [" << -vmax << ":" << vmax << "]\n"
     << "set xrange [" << x.values.front() - half(x.values) << ":" << x.values.back() + half(x.values)
     << "]\n"
     << "set yrange [" << y.values.front() - half(y.values) << ":" << y.values.back() + half(y.values)
     << "]\n"
     << "plot " << gnuplot_path(p.csv) << " skip 1 using " << ix << ":" << iy << ":" << col
     << " with image notitle\n";
  fig.body = gp.str();
  render_plot(p, fig);
}

void print_search(std::ostream &out, bool json, const search_report &r, const b::search_spec &s,
                  const b::search_result &res) {
  auto hex16 = [](std::uint32_t v, int w) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", w, v);
    return std::string(buf);
  };
  if (json) {
    json_writer j(out);
    j.begin_object();
    j.kv("tool", "bf16emu bias --search").kv("seed", r.seed).kv("iters", r.iters).kv("restarts", r.restarts);
    j.kv("config", r.config);
    j.kv("evaluations", res.evaluations).kv("best_restart", res.restart);
    j.kv("err", res.outcome.err).kv("err_ulp", res.outcome.err_ulp).kv("rel", res.outcome.rel);
    j.kv("exact", res.outcome.exact).kv("sum_abs", res.sum_abs).kv("bound", res.bound).kv("ratio", res.ratio);
    j.kv("start_ratio", res.start_ratio);
    j.kv("start", hex16(res.best.start.bits, 8));
    j.key("v").begin_array();
    for (const auto &v : res.best.v)
      j.value(hex16(v.bits, 4));
    j.end_array();
    j.key("w").begin_array();
    for (const auto &w : res.best.w)
      j.value(hex16(w.bits, 4));
    j.end_array();
    j.end_object();
    return;
  }
  out << "bf16emu bias --search: " << b::to_string(s.acc.m) << " " << to_string(s.acc.mode) << " -> "
      << b::to_string(s.acc.out) << ", n " << s.k.n << ", seed " << r.seed << ", " << r.restarts
      << " restarts x " << r.iters << " iterations (" << res.evaluations << " evaluations, " << g(r.seconds)
      << " s)\n";
  out << "  worst |error| found   " << g(std::fabs(res.outcome.err)) << "  (" << g(res.outcome.err_ulp)
      << " ulp at the exact sum, rel " << g(res.outcome.rel) << ")\n";
  out << "  classic bound         " << g(res.bound) << "  (n*u*sum|x|, sum|x| = " << g(res.sum_abs) << ")\n";
  out << "  ratio error/bound     " << g(res.ratio) << "  (random start: " << g(res.start_ratio) << ")\n";
  out << "  sequence: start " << hex16(res.best.start.bits, 8) << ", v*w:";
  for (std::size_t i = 0; i < res.best.v.size() && i < 16; ++i)
    out << " " << hex16(res.best.v[i].bits, 4) << "*" << hex16(res.best.w[i].bits, 4);
  if (res.best.v.size() > 16) out << " ... (--json for all)";
  out << "\n";
}

} // namespace bf16emu::io
