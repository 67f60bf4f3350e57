// bf16emu io: the reports of bf16emu bias and merge: one row per configuration, built from its
// serialized identity and its statistics (so `merge` prints exactly what an unsharded run
// prints), as JSON, CSV or text; the bias map plot (CSV beside the PNG, via plot.hpp); and the
// adversarial search's result.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <bf16emu/bias/search.hpp>
#include <bf16emu/bias/stats.hpp>
#include <bf16emu/bias/sweep.hpp>

#include "io/plot.hpp"

namespace bf16emu::io {

struct bias_row {
  std::map<std::string, std::string> cfg; // key=value of io::bias_config_text()
  std::vector<std::pair<std::string, std::string>> cfg_order;
  bias::summary s;
};

bias_row make_bias_row(const std::string &cfg_line, const bias::stats &st);

struct bias_header {
  std::uint64_t seed = 0, trials = 0, chunk = 0;
};

enum class report_format { text, json, csv };

void print_bias_report(std::ostream &out, report_format f, const bias_header &h,
                       const std::vector<bias_row> &rows);

// Whether --map-value names a statistic the map can draw (a CSV statistics column).
bool bias_map_value_known(const std::string &name);

// Writes the map's CSV (p.csv) and renders p.png with gnuplot, drawing map_value over the x and
// y knobs.
void plot_bias_map(const plot_paths &p, const std::string &map_value, const bias::axis &x,
                   const bias::axis &y, const std::vector<bias_row> &rows, const bias_header &h);

struct search_report {
  std::uint64_t seed = 0, iters = 0;
  unsigned restarts = 0;
  std::string config; // serialized configuration searched
  double seconds = 0;
};

void print_search(std::ostream &out, bool json, const search_report &r, const bias::search_spec &s,
                  const bias::search_result &res);

} // namespace bf16emu::io
