// bf16emu Python module: attention forward/backward through attention::run_attention
// (run_options in, run_report out), with O, LSE, the gradients, the error summaries and the
// ledger as NumPy arrays and plain dicts. The policy is parsed at the string level
// (attention::parse_policy), as the CLI does.
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <bf16emu/attention/run.hpp>

#include "io/attention.hpp"
#include "io/attention_fields.hpp"
#include "io/error.hpp"
#include "io/memory.hpp"
#include "io/names.hpp"
#include "module.hpp"

namespace bf16emu::py {

namespace {

namespace at = attention;

// The Python side of the one field list (io/attention_fields.hpp): nested dicts, the JSON
// ledger's keys and values (ulp_hist keeps int keys).
class dict_fields final : public io::field_visitor {
public:
  explicit dict_fields(pybind11::dict root) { stack_.push_back(std::move(root)); }
  void begin(std::string_view name) override {
    pybind11::dict d;
    put(name, d);
    stack_.push_back(std::move(d));
  }
  void end() override { stack_.pop_back(); }
  void u64(std::string_view name, std::uint64_t v) override { put(name, pybind11::int_(v)); }
  void i64(std::string_view name, std::int64_t v) override { put(name, pybind11::int_(v)); }
  void real(std::string_view name, double v) override { put(name, pybind11::float_(v)); }
  void text(std::string_view name, std::string_view v) override {
    put(name, pybind11::str(v.data(), v.size()));
  }
  void entry(int key, std::uint64_t v) override { stack_.back()[pybind11::int_(key)] = pybind11::int_(v); }

private:
  void put(std::string_view name, pybind11::object v) {
    stack_.back()[pybind11::str(name.data(), name.size())] = v;
  }
  std::vector<pybind11::dict> stack_;
};

pybind11::dict summary_dict(const at::error_summary &e) {
  pybind11::dict d;
  dict_fields f(d);
  io::visit_summary(f, e);
  return d;
}

pybind11::dict ledger_dict(const at::ledger &led) {
  pybind11::dict d;
  dict_fields f(d);
  io::visit_ledger(f, led);
  return d;
}

pybind11::array_t<double> shaped(const std::vector<double> &x, std::vector<pybind11::ssize_t> shape) {
  pybind11::array_t<double> a(shape);
  std::copy(x.begin(), x.end(), a.mutable_data());
  return a;
}

std::vector<double> values(const pybind11::array_t<double> &a, const char *name) {
  std::vector<double> x(a.data(), a.data() + a.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      throw pybind11::value_error(std::string("argument '") + name + "': non-finite value at element " +
                                  std::to_string(i));
  return x;
}

pybind11::dict run(const pybind11::array_t<double> &q, const pybind11::array_t<double> &k,
                   const pybind11::array_t<double> &v, const pybind11::object &dout,
                   const std::string &policy, const std::string &variant, double beta, bool causal,
                   int block_m, int block_n, bool ledger, bool reference, const std::string &backward,
                   unsigned threads, const std::string &sites, double scale) {
  at::run_options opt;
  // Names through the CLI's parsers (src/io: the one table of policies, variants and backward
  // kinds, and the one spelling rule), their errors naming the Python argument.
  const auto named = [](const char *arg, auto parse) {
    try {
      return parse((std::string("argument '") + arg + "'").c_str());
    } catch (const io::input_error &e) {
      throw pybind11::value_error(e.what());
    }
  };
  opt.cfg.pol = named("policy", [&](const char *o) { return io::parse_policy_name(policy, o, true); });
  opt.cfg.var = named("variant", [&](const char *o) { return io::parse_variant(variant, o); });
  opt.cfg.pol.beta = beta;
  // The CLI's rule for beta, one function beside the numerics; its message names
  // the CLI's option, here the argument.
  if (const char *e = at::stabilized_params_error(opt.cfg.pol)) {
    const std::string msg = e;
    throw pybind11::value_error(msg.rfind("--beta", 0) == 0 ? "argument 'beta'" + msg.substr(6) : msg);
  }
  opt.cfg.causal = causal;
  // sites: the CLI's --site-precision spec ("row_sum=fp32,pv=exact"), parsed by the same parser
  try {
    io::parse_site_precision(sites, opt.cfg.pol);
  } catch (const io::input_error &e) {
    throw pybind11::value_error(std::string("argument 'sites': ") + e.what());
  }
  if (!(std::isfinite(scale) && scale >= 0))
    throw pybind11::value_error("argument 'scale' must be a positive finite number (0: 1/sqrt(dim))");
  opt.cfg.pol.softmax_scale = scale;
  if (block_m < 0 || block_n < 0)
    throw pybind11::value_error("arguments 'block_m', 'block_n' must be positive");
  if (block_m) opt.cfg.pol.block_m = block_m;
  if (block_n) opt.cfg.pol.block_n = block_n;
  if (opt.cfg.pol.kind == at::policy_kind::fa2 && opt.cfg.var != at::variant::standard &&
      opt.cfg.pol.block_n % 16)
    throw pybind11::value_error("argument 'block_n' must be a multiple of 16 under fa2 policies");
  opt.with_ledger = ledger;
  opt.with_reference = reference;
  opt.threads = int(threads);
  if (!backward.empty()) {
    opt.backward = true;
    opt.bwd.kind = named("backward", [&](const char *o) { return io::parse_backward_kind(backward, o); });
    if (const char *e = at::backward_policy_error(opt.bwd.kind, opt.cfg.pol))
      throw pybind11::value_error(std::string("argument 'backward': ") + e);
    // as the CLI: the tiled backward models neither overrides nor the authors' autocast dtypes
    if (opt.bwd.kind == at::backward_kind::tiled && at::has_site_override(opt.cfg.pol))
      throw pybind11::value_error("argument 'backward': 'tiled' does not model site overrides (argument "
                                  "'sites'); use 'reference'");
    if (opt.bwd.kind == at::backward_kind::tiled && opt.cfg.pol.kind == at::policy_kind::paper &&
        opt.cfg.pol.paper_arith == at::paper_dtypes::autocast)
      throw pybind11::value_error("argument 'backward': 'tiled' does not model policy paper:autocast; use "
                                  "'reference'");
  }
  if (q.ndim() != 4) throw pybind11::value_error("argument 'q' must be 4-d (batch, heads, seq, dim)");
  for (const auto *x : {&k, &v})
    if (x->ndim() != 4 || !std::equal(q.shape(), q.shape() + 4, x->shape()))
      throw pybind11::value_error(std::string("argument '") + (x == &k ? "k" : "v") + "': shape " +
                                  shape_text(*x) + " does not match argument 'q' " + shape_text(q));
  at::attention_inputs in;
  in.batch = long(q.shape(0)), in.heads = long(q.shape(1)), in.n = long(q.shape(2)), in.d = long(q.shape(3));
  if (in.batch < 1 || in.heads < 1 || in.n < 1 || in.d < 1)
    throw pybind11::value_error("argument 'q' is empty");
  // The CLI's size guard, before anything is allocated: the inputs' copies are counted too. A
  // need over the available memory (the least of MemAvailable, ulimit -v and the cgroup's limit)
  // is a ValueError naming it, never std::bad_alloc.
  try {
    io::check_memory(io::attention_memory_need(std::uint64_t(in.batch), std::uint64_t(in.heads),
                                               std::uint64_t(in.n), std::uint64_t(in.d), opt, true),
                     0, "attention", ""); // no --max-memory in Python
  } catch (const io::input_error &e) {
    throw pybind11::value_error(e.what());
  }
  in.q = values(q, "q"), in.k = values(k, "k"), in.v = values(v, "v");
  if (opt.backward) {
    const auto g = dout.cast<pybind11::array_t<double>>();
    if (g.ndim() != 4 || !std::equal(q.shape(), q.shape() + 4, g.shape()))
      throw pybind11::value_error("argument 'do': shape " + shape_text(g) + " does not match argument 'q' " +
                                  shape_text(q));
    in.dout = values(g, "do");
  }
  at::run_report r;
  opt.tick = signal_checker(); // Ctrl-C between the items of every phase
  {
    pybind11::gil_scoped_release release;
    r = at::run_attention(in, opt);
  }
  const std::vector<pybind11::ssize_t> full{in.batch, in.heads, in.n, in.d}, rows{in.batch, in.heads, in.n};
  pybind11::dict d;
  d["policy"] = at::policy_name(opt.cfg.pol);
  d["variant"] = at::to_string(opt.cfg.var);
  d["causal"] = causal;
  d["block_m"] = opt.cfg.pol.block_m;
  d["block_n"] = opt.cfg.pol.block_n;
  d["o"] = shaped(r.o, full);
  d["lse"] = shaped(r.lse, rows);
  d["out_frac_bits"] = r.out_frac_bits;
  d["seconds"] = r.seconds;
  if (reference) {
    d["o_exact"] = shaped(r.o_exact, full);
    d["output_error"] = summary_dict(r.o_err);
  }
  if (ledger) d["ledger"] = ledger_dict(r.led);
  if (opt.backward) {
    d["backward"] = at::to_string(opt.bwd.kind);
    d["dq"] = shaped(r.dq, full);
    d["dk"] = shaped(r.dk, full);
    d["dv"] = shaped(r.dv, full);
    d["delta"] = shaped(r.delta, rows);
    d["grad_frac_bits"] = r.grad_frac_bits;
    if (reference) {
      d["dq_exact"] = shaped(r.dq_exact, full);
      d["dk_exact"] = shaped(r.dk_exact, full);
      d["dv_exact"] = shaped(r.dv_exact, full);
      d["delta_error"] = summary_dict(r.delta_err);
      pybind11::dict g;
      g["dq"] = summary_dict(r.dq_err);
      g["dk"] = summary_dict(r.dk_err);
      g["dv"] = summary_dict(r.dv_err);
      d["grad_error"] = g;
    }
  }
  return d;
}

} // namespace

void bind_attention(pybind11::module_ &m) {
  m.def("attention", &run, "Attention forward (and backward) under a policy; returns a dict");
}

} // namespace bf16emu::py
