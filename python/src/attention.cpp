// bf16emu Python module: attention forward/backward through attention::run_attention
// (run_options in, run_report out), with O, LSE, the gradients, the error summaries and the
// ledger as NumPy arrays and plain dicts. The options are the CLI's request (io/attention_request.hpp).
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <bf16emu/attention/run.hpp>

#include "io/attention.hpp"
#include "io/attention_fields.hpp"
#include "io/attention_request.hpp"
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

// The request from the Python layer's keyword arguments (bf16emu._attention: types checked
// there), as the CLI fills it from its options; every rule is io::make_attention_options'.
io::attention_request request(const pybind11::dict &kw) {
  io::attention_request rq;
  for (const auto &[key, val] : kw) {
    const auto k = key.cast<std::string>();
    try {
      if (k == "policy")
        rq.policy = val.cast<std::string>();
      else if (k == "variant")
        rq.variant = val.cast<std::string>();
      else if (k == "beta")
        rq.beta = val.cast<double>();
      else if (k == "tie_tol")
        rq.tie_tol = val.cast<double>();
      else if (k == "block_m")
        rq.block_m = val.cast<long>();
      else if (k == "block_n")
        rq.block_n = val.cast<long>();
      else if (k == "sites")
        rq.sites = val.cast<std::string>();
      else if (k == "scale")
        rq.scale = val.cast<double>();
      else if (k == "causal")
        rq.causal = val.cast<bool>();
      else if (k == "backward")
        rq.bwd = val.cast<std::string>(), rq.backward = !rq.bwd.empty();
      else if (k == "bwd_block_m")
        rq.bwd_block_m = val.cast<long>();
      else if (k == "bwd_block_n")
        rq.bwd_block_n = val.cast<long>();
      else if (k == "ledger")
        rq.ledger = val.cast<bool>();
      else if (k == "reference")
        rq.reference = val.cast<bool>();
      else if (k == "threads")
        rq.threads = val.cast<unsigned>();
      else
        throw pybind11::value_error("unknown attention argument '" + k + "'");
    } catch (const pybind11::cast_error &) {
      throw pybind11::value_error("argument '" + k + "' is out of range or of the wrong type");
    }
  }
  if (rq.bwd.empty()) rq.bwd = "reference";
  return rq;
}

template <class Fn> auto in_python_words(Fn &&fn) {
  try {
    return fn();
  } catch (const io::input_error &e) {
    throw pybind11::value_error(e.what());
  }
}

// The backward bf16emu.torch takes for these arguments when none is named ("tiled" where
// modelled, else "reference"), after every rule: a bad argument fails here, before the work.
std::string check(const pybind11::dict &kw) {
  const io::attention_request rq = request(kw);
  return in_python_words([&] {
    if (kw.contains("backward")) {
      (void)io::make_attention_options(rq, io::front_end::python);
      return rq.bwd;
    }
    return io::modelled_backward(rq, io::front_end::python);
  });
}

pybind11::dict run(const pybind11::array_t<double> &q, const pybind11::array_t<double> &k,
                   const pybind11::array_t<double> &v, const pybind11::object &dout,
                   const pybind11::dict &kw) {
  at::run_options opt =
      in_python_words([&] { return io::make_attention_options(request(kw), io::front_end::python); });
  const bool causal = opt.cfg.causal, reference = opt.with_reference, ledger = opt.with_ledger;
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
  m.def("attention_check", &check, "Checks attention arguments; returns the backward they take");
}

} // namespace bf16emu::py
