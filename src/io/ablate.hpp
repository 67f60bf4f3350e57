// bf16emu io: bias over independent heads, and the site ablation of `bf16emu ablate`.
//
// For one input draw (one head) the errors of an attention run are deterministic, so the z of
// a run's n*d element errors describes that input only. Whether an arithmetic is biased on a
// scenario is a question about independent draws: here every head of a scenario is one draw,
// its statistic is the mean signed error of O over its n*d elements (the ledger's
// output_error.mean_signed, attention::summarize_error) and of delta over its n rows, and the
// bias of a configuration is the mean of those per-head values with its standard error over
// heads and z = mean / se (heads - 1 degrees of freedom).
//
// The ablation runs a baseline policy and the same policy with rounding sites promoted to FP32
// or binary64 (kernel_policy::site_precision), alone or in pairs, on the same heads, and gives
// the share of the baseline bias each promotion removes, (bias_base - bias_site) / bias_base.
// Work is one parallel_for over (configuration, head); every result lands in its own slot, so
// the bits of every output are the same for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <bf16emu/attention.hpp>
#include <bf16emu/parallel.hpp>

#include "io/json.hpp"
#include "io/plot.hpp"

namespace bf16emu::io {

namespace at = bf16emu::attention;

// One configuration: a label and the forward it runs.
struct head_bias_config {
  std::string label;              // "baseline", "row_sum", "row_sum+pv", "paper:bf16 stabilized"...
  std::vector<at::site> promoted; // the sites promoted (empty for the baseline)
  at::forward_config cfg;
  // File every rounding of this configuration's forward in an error ledger (head_bias_row::led):
  // per head a ledger of its own, merged in head order, as attention::run_attention does for the
  // paper policies (one item per head), so that the ledger is the one a run_attention of this
  // configuration over the same heads gathers (`bf16emu paper` relies on it: its ledger section
  // reads the bias section's run). Under the fa2 policies run_attention groups a head's events
  // by row block, so its compensated sums may differ in the last bits. The forward's bits are the
  // same with or without a ledger. Under a split run the ledger holds this process's heads only.
  bool with_ledger = false;
};

// A statistic over heads. Heads whose statistic is not finite (a NaN row) are left out and
// counted in nonfinite_heads.
struct over_heads {
  std::vector<double> per_head; // NaN where the head had no finite pair
  std::uint64_t heads = 0, nonfinite_heads = 0, negative_heads = 0;
  double mean = 0, se = 0;
  double z() const { return se > 0 ? mean / se : 0.0; }
};

struct head_bias_row {
  head_bias_config config;
  over_heads o, delta;
  at::ledger led; // the forward's roundings over the heads (config.with_ledger), else empty
};

// A run split over processes (src/mpi): this process computes the heads part + j*parts; the
// others' per-head values stay 0 until `exchange` fills them in (every row's per_head values,
// O rows then delta rows, packed in configuration order), before the statistics over heads.
struct split_run {
  std::uint64_t part = 0, parts = 1;
  std::function<void(std::vector<double> &per_head)> exchange;
};

struct head_bias_request {
  std::vector<head_bias_config> configs;
  at::forward_config reference; // the exact run every configuration is compared with
  // delta = rowsum(dO o O): false: binary64 from the configuration's O (the part of delta's error
  // that O carries); true: the configuration's own backward (backward_any with `bwd`).
  bool backward = false;
  at::backward_config bwd;
  unsigned threads = 0;
  progress_fn progress; // (done, total) over heads x (configurations + 1)
  split_run split;
};

std::vector<head_bias_row> run_head_bias(const at::attention_inputs &in, const head_bias_request &rq);

// ---------------------------------------------------------------------------
// The ablation.

// A site by its ledger name (attention::to_string(site)); io::input_error naming `option` and the
// token otherwise.
at::site parse_site_name(std::string_view s, const char *option);
// "fp32" or "exact" (binary64).
at::site_prec parse_promotion(std::string_view s, const char *option = "--to");
// "a+b,c+d": pairs of distinct sites.
std::vector<std::vector<at::site>> parse_site_pairs(std::string_view spec, const char *option = "--pairs");
// "a,b,c": a list of sites.
std::vector<at::site> parse_site_list(std::string_view spec, const char *option = "--sites");

// The sites where `cfg` rounds inexactly on head 0 of `in` and that can move O or delta: the
// ledger's forward sites before lse and, with `backward`, the delta site, each with at least
// one inexact rounding.
std::vector<at::site> rounding_sites(const at::attention_inputs &in, const at::forward_config &cfg,
                                     bool backward, const at::backward_config &bwd);

struct ablation_request {
  at::forward_config base;
  at::site_prec to = at::site_prec::fp32;
  std::vector<at::site> sites; // each promoted alone
  std::vector<std::vector<at::site>> pairs;
  bool backward = false;
  at::backward_config bwd;
  unsigned threads = 0;
  progress_fn progress;
  split_run split;
};

struct ablation_report {
  ablation_request rq;
  long heads = 0, n = 0, d = 0;
  std::vector<head_bias_row> rows; // rows[0] is the baseline
};

ablation_report run_ablation(const at::attention_inputs &in, const ablation_request &rq);

// Share of the baseline bias a configuration removes: (base - x) / base (NaN when base is 0).
double bias_share(double base, double x);

// Where the inputs came from, for the headers.
struct ablation_origin {
  std::string scenario; // "sink" or "random"
  std::uint64_t seed = 1;
  at::sink_params sink;
};

void print_ablation_text(std::ostream &out, const ablation_report &r, const ablation_origin &origin);
void write_ablation_json(json_writer &w, const ablation_report &r, const ablation_origin &origin);
// The bar chart: CSV (one row per configuration) and its gnuplot PNG.
void write_ablation_csv(const std::string &path, const ablation_report &r);
void plot_ablation(const plot_paths &p, const std::string &title);

// The over-heads statistic as JSON: {"heads", "mean", "se", "z_heads", "negative_heads", ...}.
void write_over_heads_json(json_writer &w, const over_heads &s);

} // namespace bf16emu::io
