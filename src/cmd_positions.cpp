// bf16emu CLI: `bf16emu positions`: position ids built in BF16/FP16 (as torch.arange in that
// dtype), the RoPE phase errors they cause, ALiBi biases built in the dtype, and a plot of the
// share of exact ids against n. See docs/pitfalls.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bf16emu/pitfalls/positions.hpp"
#include "command.hpp"
#include "io/files.hpp"
#include "io/json.hpp"
#include "io/memory.hpp"
#include "io/plot.hpp"
#include "options.hpp"

namespace bf16emu::cli {

namespace {

namespace pit = bf16emu::pitfalls;

struct positions_cli {
  long n = 8192;
  std::string dtype = "bf16";
  bool rope = false, json = false;
  double base = 10000;
  int head_dim = 128;
  std::string inv_freq = "f32";
  int alibi_heads = 0;
  std::string plot;
  long plot_max = 131072;
  std::uint64_t max_memory = 0;
};

// n = 1 .. max on a grid of 16 points per octave (every n up to 64).
std::vector<long> share_grid(long max) {
  std::vector<long> ns;
  for (long n = 1; n <= std::min<long>(64, max); ++n)
    ns.push_back(n);
  for (int k = 0;; ++k) {
    const long n = std::lround(64.0 * std::exp2(k / 16.0));
    if (n > max) break;
    if (n > ns.back()) ns.push_back(n);
  }
  if (ns.back() != max) ns.push_back(max);
  return ns;
}

void write_plot(const io::plot_paths &p, long max) {
  const std::vector<long> ns = share_grid(max);
  const auto b = pit::exact_share_curve(pit::id_dtype::bf16, ns);
  const auto h = pit::exact_share_curve(pit::id_dtype::f16, ns);
  {
    io::output_file f(p.csv, "--plot CSV");
    f << "n,bf16_exact,bf16_share,f16_exact,f16_share\n";
    char line[160];
    for (std::size_t i = 0; i < ns.size(); ++i) {
      std::snprintf(line, sizeof line, "%ld,%ld,%.9f,%ld,%.9f\n", ns[i], b[i].exact, b[i].share, h[i].exact,
                    h[i].share);
      f << line;
    }
    f.commit();
  }
  io::figure fig{"Position ids 0..n-1 built in a low-precision dtype (torch.arange(n, dtype=...))", 900, 560};
  fig.enhanced = true; // the 2^{%L} tick labels
  fig.body = "set logscale x 2\n"
             "set format x '2^{%L}'\n"
             "set yrange [0:1.05]\n"
             "set grid\n"
             "set key bottom left\n"
             "set xlabel 'n (positions)'\n"
             "set ylabel 'share of ids that keep their own value'\n"
             "set arrow from 256, graph 0 to 256, graph 1 nohead dt 2 lc rgb '#1f77b4'\n"
             "set arrow from 2048, graph 0 to 2048, graph 1 nohead dt 2 lc rgb '#d62728'\n"
             "set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 3 lc rgb 'gray'\n"
             "set label 'BF16 at 8192: 896/8192 = 10.9 %' at 8192, 0.15 right offset -1,0\n"
             "plot " +
             io::gnuplot_path(p.csv) +
             " every ::1 using 1:3 with lines lw 2 lc rgb '#1f77b4' title 'BF16', \\\n"
             "     '' every ::1 using 1:5 with lines lw 2 lc rgb '#d62728' title 'FP16'\n";
  io::render_plot(p, fig);
}

void run(const positions_cli &o) {
  std::optional<io::plot_paths> plot;
  if (!o.plot.empty()) plot = io::plot_paths_for(o.plot, "--plot");
  pit::id_dtype t;
  if (o.dtype == "bf16")
    t = pit::id_dtype::bf16;
  else if (o.dtype == "f16" || o.dtype == "fp16")
    t = pit::id_dtype::f16;
  else
    throw bad_input("--dtype '" + io::shorten(o.dtype) + "': must be bf16 or f16");
  if (o.head_dim < 2 || o.head_dim % 2) throw bad_input("--head-dim must be even and >= 2");
  if (!(o.base > 1) || !std::isfinite(o.base)) throw bad_input("--base must be finite and > 1");
  if (o.inv_freq != "f32" && o.inv_freq != "bf16")
    throw bad_input("--inv-freq '" + io::shorten(o.inv_freq) + "': must be f32 or bf16");
  // The ids (in the dtype and in FP32) and the ALiBi biases, n values each.
  io::memory_need need;
  need.add({std::uint64_t(o.n), 8, 4}, "position ids and biases");
  io::check_memory(need, o.max_memory, "positions");

  const pit::id_stats s = pit::position_stats(t, o.n);
  pit::rope_report rope;
  if (o.rope) rope = pit::rope_errors(t, o.n, o.head_dim, o.base, o.inv_freq == "bf16");
  pit::alibi_report alibi;
  if (o.alibi_heads > 0) alibi = pit::alibi_errors(t, o.n, o.alibi_heads);

  if (o.json) {
    io::json_writer j(std::cout);
    j.begin_object();
    j.kv("dtype", pit::to_string(t)).kv("n", std::int64_t(o.n));
    j.kv("model", "value(i) = RN_dtype(RN32(start + RN32(step * i))), start 0, step 1");
    j.key("ids").begin_object();
    j.kv("exact", std::int64_t(s.exact)).kv("exact_share", s.exact_share());
    j.kv("distinct", std::int64_t(s.distinct)).kv("longest_run", std::int64_t(s.longest_run));
    j.kv("longest_run_first_id", std::int64_t(s.longest_run_first))
        .kv("longest_run_value", s.longest_run_value);
    j.kv("first_collision", std::int64_t(s.first_collision)).kv("max_abs_error", s.max_abs_error);
    j.kv("non_finite", std::int64_t(s.non_finite));
    j.end_object();
    if (o.rope) {
      j.key("rope").begin_object();
      j.kv("base", o.base).kv("head_dim", o.head_dim).kv("inv_freq", o.inv_freq);
      j.key("frequencies").begin_array();
      for (const auto &r : rope.rows) {
        j.begin_object();
        j.kv("k", r.k).kv("inv_freq", r.inv_freq).kv("inv_freq_used", r.inv_freq_used);
        j.kv("wavelength", r.wavelength);
        j.kv("phase_error_lowp_ids", r.phase_lowp).kv("worst_position", std::int64_t(r.worst_pos_lowp));
        j.kv("cos_error_lowp_ids", r.cos_lowp).kv("sin_error_lowp_ids", r.sin_lowp);
        j.kv("phase_error_f32_ids", r.phase_f32).kv("cos_error_f32_ids", r.cos_f32);
        j.kv("sin_error_f32_ids", r.sin_f32);
        j.end_object();
      }
      j.end_array().end_object();
    }
    if (o.alibi_heads > 0) {
      j.key("alibi").begin_array();
      for (const auto &a : alibi.rows) {
        j.begin_object();
        j.kv("head", a.head).kv("slope", a.slope).kv("slope_used", a.slope_used);
        j.kv("max_abs_error", a.max_abs_error)
            .kv("max_rel_error", a.max_rel_error)
            .kv("rms_error", a.rms_error);
        j.kv("distinct", std::int64_t(a.distinct))
            .kv("colliding_distances", std::int64_t(a.colliding_distances));
        j.kv("first_collision", std::int64_t(a.first_collision))
            .kv("colliding_entries_share", a.colliding_entries);
        j.end_object();
      }
      j.end_array();
    }
    j.end_object();
  } else {
    std::printf("position ids 0..%ld built in %s (torch.arange(n, dtype=%s): RN_%s(i))\n", o.n - 1,
                pit::to_string(t), pit::to_string(t), pit::to_string(t));
    std::printf("  keep their own value   %ld of %ld (%.4f %%)\n", s.exact, o.n, 100 * s.exact_share());
    std::printf("  distinct values        %ld\n", s.distinct);
    std::printf("  longest run            %ld ids (%ld..%ld -> %.17g)\n", s.longest_run, s.longest_run_first,
                s.longest_run_first + s.longest_run - 1, s.longest_run_value);
    if (s.first_collision >= 0)
      std::printf("  first colliding id     %ld (held as %.17g)\n", s.first_collision,
                  pit::arange_value(t, s.first_collision));
    else
      std::printf("  first colliding id     none\n");
    std::printf("  max |value - id|       %.17g\n", s.max_abs_error);
    if (s.non_finite) std::printf("  overflow to inf        %ld ids\n", s.non_finite);
    if (o.rope) {
      std::printf("\nRoPE base %g, head dim %d, inv_freq in %s; theta = RN32(p * inv_freq), cos/sin RN32; "
                  "max errors against binary64 over p < %ld\n",
                  o.base, o.head_dim, o.inv_freq.c_str(), o.n);
      std::printf("%4s %12s %12s | %12s %12s %12s %8s | %12s %12s %12s\n", "k", "inv_freq", "wavelength",
                  "phase(ids)", "cos(ids)", "sin(ids)", "worst p", "phase(f32)", "cos(f32)", "sin(f32)");
      for (const auto &r : rope.rows)
        std::printf("%4d %12.5e %12.5e | %12.5e %12.5e %12.5e %8ld | %12.5e %12.5e %12.5e\n", r.k, r.inv_freq,
                    r.wavelength, r.phase_lowp, r.cos_lowp, r.sin_lowp, r.worst_pos_lowp, r.phase_f32,
                    r.cos_f32, r.sin_f32);
    }
    if (o.alibi_heads > 0) {
      std::printf("\nALiBi, %d heads, bias = -RN_%s(RN(slope) * RN(i - j)), causal %ld x %ld\n",
                  o.alibi_heads, pit::to_string(t), o.n, o.n);
      std::printf("%4s %12s %12s %12s %12s %12s %9s %9s %12s\n", "head", "slope", "slope held", "max abs err",
                  "max rel err", "rms err", "distinct", "1st coll", "coll. share");
      for (const auto &a : alibi.rows)
        std::printf("%4d %12.6g %12.6g %12.5e %12.5e %12.5e %9ld %9ld %11.4f%%\n", a.head, a.slope,
                    a.slope_used, a.max_abs_error, a.max_rel_error, a.rms_error, a.distinct,
                    a.first_collision, 100 * a.colliding_entries);
    }
  }
  if (plot) {
    write_plot(*plot, o.plot_max);
    if (!o.json) std::printf("\nplot: %s (data: %s)\n", plot->png.c_str(), plot->csv.c_str());
  }
}

void register_positions(CLI::App &app) {
  auto o = std::make_shared<positions_cli>();
  auto *s = app.add_subcommand("positions", "Position ids, RoPE phases and ALiBi biases built in BF16/FP16");
  s->footer("Examples:\n"
            "  bf16emu positions --n 8192\n"
            "  bf16emu positions --n 65536 --dtype f16 --json\n"
            "  bf16emu positions --n 8192 --rope --head-dim 128\n"
            "  bf16emu positions --n 8192 --plot positions.png   (CSV written beside it)\n"
            "Details and numbers: docs/pitfalls.md");
  add_count(s, "--n", o->n, "positions 0..n-1 (default 8192; 1..2^24)", 1, 1u << 24);
  s->add_option("--dtype", o->dtype, "bf16 (default) or f16");
  s->add_flag("--rope", o->rope, "RoPE phase and cos/sin errors per frequency");
  s->add_option("--base", o->base, "RoPE base (default 10000)");
  add_count(s, "--head-dim", o->head_dim, "RoPE head dimension, even (default 128; 2..65536)", 2, 65536);
  s->add_option("--inv-freq", o->inv_freq, "RoPE inv_freq held in f32 (default) or bf16");
  add_count(s, "--alibi-heads", o->alibi_heads,
            "ALiBi bias errors for this many heads (default 0: off; 0..1024)", 0, 1024);
  s->add_option("--plot", o->plot, "gnuplot PNG of the exact share against n (CSV written beside it)");
  add_count(s, "--plot-max", o->plot_max, "largest n of the plot (default 131072; 2..2^24)", 2, 1u << 24);
  add_max_memory(s, o->max_memory);
  s->add_flag("--json", o->json, "JSON output");
  s->callback([o] { run(*o); });
}

} // namespace

BF16EMU_COMMAND(60, register_positions);

} // namespace bf16emu::cli
