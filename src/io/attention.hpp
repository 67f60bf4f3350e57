// bf16emu io: the attention layer's I/O ring. The names of the attention knobs (parse and
// to_string, one table each), the JSON ledger (on io::json_writer), the text report, the
// element-trace CSV and plot, .npy tensors in and out, and the memory the run will need (for
// the size guard, io/memory.hpp). The numerics are in include/bf16emu/attention/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <bf16emu/attention.hpp>

#include "io/memory.hpp"
#include "io/plot.hpp"

namespace bf16emu::io {

namespace at = bf16emu::attention;

// ---------------------------------------------------------------------------
// Names. Every parser throws io::input_error naming `option`, the bad token (at most ~80
// characters of it) and the accepted names.

// exact, fp32, paper:bf16 (alias paper), fa2_twin, and fa2:ARCH for every GPU generation with a
// bf16 tensor-core preset (attention::parse_policy); with `autocast` also paper:autocast (the
// attention forward models it; the pitfall models of cp and bwd-order do not). policy_names()
// lists them for --help and errors.
at::kernel_policy parse_policy_name(std::string_view s, const char *option = "--policy",
                                    bool autocast = false);
std::string policy_names(bool autocast = false);
at::kv_order parse_kv_order(std::string_view s, const char *option = "--kv-order");   // forward reverse
at::exp_impl parse_exp_impl(std::string_view s, const char *option = "--exp");        // rn poly
at::reduce_order parse_row_sum(std::string_view s, const char *option = "--row-sum"); // sequential quad
bool parse_on_off(std::string_view s, const char *option);                            // on off
at::normalize_mode parse_normalize(std::string_view s,
                                   const char *option = "--normalize");          // reciprocal divide
at::variant parse_variant(std::string_view s, const char *option = "--variant"); // standard fa2 stabilized
// reference tiled authors authors:promote
at::backward_kind parse_backward_kind(std::string_view s, const char *option = "--bwd");
at::delta_order parse_delta_order(std::string_view s, const char *option = "--delta"); // fa2 sequential
at::block_order parse_block_order(std::string_view s, const char *option);             // ascending descending

// The per-site precision override: a comma-separated list of SITE=PREC, SITE one of the
// ledger's site names (attention::to_string(site)), PREC fp32, exact or policy, e.g.
// "row_sum=fp32,pv=exact"; sets p.site_precision. "" sets nothing. A bad token, an unknown site
// or precision, or a site given twice throws io::input_error naming the token.
void parse_site_precision(std::string_view spec, at::kernel_policy &p,
                          const char *option = "--site-precision");
// The canonical spec of p's override (sites in ledger order, `policy` sites left out); "" when
// no site is overridden.
std::string site_precision_text(const at::kernel_policy &p);

// The names the JSON ledger uses (kv_order "forward", exp "poly_exp2", row_sum "quad").
const char *to_string(at::kv_order k) noexcept;
const char *to_string(at::exp_impl e) noexcept;
const char *to_string(at::reduce_order r) noexcept;
const char *to_string(at::normalize_mode m) noexcept;

// ---------------------------------------------------------------------------
// Reports.

// Where the inputs came from, for the JSON ledger.
struct attention_origin {
  std::string scenario; // "random", "sink" or "files"
  std::uint64_t seed = 1;
  at::sink_params sink;
};

// The JSON ledger of a run as one line (no trailing newline). Non-finite numbers are null.
std::string attention_json(const at::run_report &r, const attention_origin *origin = nullptr);

// The text report on stdout; warnings about NaN/Inf outputs on stderr.
void print_attention_text(const at::run_report &r);

// The element trace as CSV, and its gnuplot PNG (CSV beside it, see plot.hpp).
void write_trace_csv(const std::string &path, const at::run_report &r);
void plot_trace(const plot_paths &p, const std::string &title);

// ---------------------------------------------------------------------------
// Tensors.

// Reads a Q/K/V/dO file: [n, d], [heads, n, d] or [batch, heads, n, d]; float32, float64 or
// bfloat16 bits stored as uint16. `option` ("--q") names the input in messages.
std::vector<double> read_attention_tensor(const std::string &path, const char *option,
                                          std::vector<std::size_t> &shape);

// Writes x as float32 .npy of shape [batch, heads, n, d] ([batch, heads, n] when rows).
void write_attention_tensor(const std::string &path, const std::vector<double> &x,
                            const at::attention_inputs &in, bool rows);

// ---------------------------------------------------------------------------
// The size guard: every vector run_attention allocates for batch x heads heads of n x d
// (report, exact baseline, backward), the per-worker scratch of forward_head and the backward
// (the reference backward holds two n x n matrices per worker), and, when `inputs`, the Q, K,
// V and dO tensors that a built-in scenario generates.
memory_need attention_memory_need(std::uint64_t batch, std::uint64_t heads, std::uint64_t n, std::uint64_t d,
                                  const at::run_options &opt, bool inputs);

} // namespace bf16emu::io
