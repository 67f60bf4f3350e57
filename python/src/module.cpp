// bf16emu Python module `bf16emu._core`: the compiled half of the package. The Python half
// (python/bf16emu/__init__.py) turns NumPy arrays and torch tensors into contiguous bit
// patterns, checks dtypes and wraps the results; everything numeric happens here.
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include <bf16emu/bias/rng.hpp>

#include "io/error.hpp"
#include "io/fast_paths.hpp"
#include "io/names.hpp"
#include "module.hpp"

namespace bf16emu::py {

namespace {

template <class T> T get(const pybind11::dict &opts, const char *key, T fallback) {
  return opts.contains(key) ? opts[key].cast<T>() : fallback;
}

template <class Parse>
auto parse_named(const pybind11::dict &opts, const char *key, const char *fallback, Parse p) {
  const std::string v = get<std::string>(opts, key, fallback);
  try {
    return p(v);
  } catch (const io::input_error &e) {
    throw pybind11::value_error(std::string("argument '") + key + "': " + e.what());
  }
}

} // namespace

call_env make_env(const pybind11::dict &opts) {
  call_env ce;
  // "sr_k:3": k-bit stochastic rounding with 3 random bits (io::parse_rounding).
  const io::rounding rounding = parse_named(opts, "rounding", "nearest_even",
                                            [](const std::string &s) { return io::parse_rounding(s); });
  ce.e.mode = rounding.mode;
  ce.e.sr_bits = std::uint8_t(rounding.sr_bits);
  ce.e.tiny =
      parse_named(opts, "tininess", "after", [](const std::string &s) { return io::parse_tininess(s); });
  ce.e.nan = parse_named(opts, "nan", "ieee", [](const std::string &s) { return io::parse_nan_policy(s); });
  const bool ftz = get<bool>(opts, "ftz", false), daz = get<bool>(opts, "daz", false);
  ce.e.subnormal = subnormals((ftz ? unsigned(subnormals::flush_outputs) : 0u) |
                              (daz ? unsigned(subnormals::inputs_as_zero) : 0u));
  ce.e.saturate = get<bool>(opts, "saturate", false);
  const auto seed = get<std::uint64_t>(opts, "seed", 0);
  ce.key = bias::key(seed, bias::stream::rounding, 0);
  ce.index = get<std::size_t>(opts, "index", 0);
  ce.threads = get<unsigned>(opts, "threads", 0);
  return ce;
}

op_kind parse_op(const std::string &name) {
  for (op_kind k : {op_kind::add, op_kind::sub, op_kind::mul, op_kind::fma, op_kind::div, op_kind::sqrt,
                    op_kind::convert})
    if (name == to_string(k)) return k;
  throw pybind11::value_error("argument 'op': unknown operation '" + name.substr(0, 80) +
                              "' (add, sub, mul, fma, div, sqrt, convert)");
}

std::string shape_text(const pybind11::array &a) {
  std::string s = "(";
  for (pybind11::ssize_t i = 0; i < a.ndim(); ++i)
    s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string hex(std::uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%llX", static_cast<unsigned long long>(v));
  return b;
}

progress_fn signal_checker() {
  struct state {
    std::thread::id caller = std::this_thread::get_id();
    std::chrono::steady_clock::time_point next = std::chrono::steady_clock::now();
  };
  auto st = std::make_shared<state>();
  return [st](std::uint64_t, std::uint64_t) {
    if (std::this_thread::get_id() != st->caller) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < st->next) return;
    st->next = now + std::chrono::milliseconds(50);
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
  };
}

} // namespace bf16emu::py

PYBIND11_MODULE(_core, m) {
  m.doc() = "bf16emu: bit-exact soft-float, tensor-core model and attention ledger (compiled core)";
  m.attr("__version__") = BF16EMU_VERSION; // project(bf16emu VERSION ...) in the top CMakeLists.txt
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const bf16emu::io::input_error &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  bf16emu::io::install_fast_paths(); // BF16EMU_TC_LANES=0, BF16EMU_HW_F32=0: off (same bits)
  m.def("normalize_name", &bf16emu::io::normalize_name,
        "The one spelling rule for names, the CLI's too: surrounding whitespace dropped, lower case.");
  m.def(
      "format_name", [](const std::string &token) { return bf16emu::io::parse_format_spec(token).name; },
      "The canonical name (fp32, bf16, e2m1, e4m3fnuz, p3109:p4, fp:e=..,m=.., ...) of a format name, "
      "alias or field list, as the CLI reads it; ValueError for an unknown one.");
  m.def(
      "check_env", [](const pybind11::dict &opts) { bf16emu::py::make_env(opts); },
      "Checks the rounding settings of one call (names, bools, seed, threads) as every call reads them.");
  bf16emu::py::bind_elementwise(m);
  bf16emu::py::bind_formats(m);
  bf16emu::py::bind_tc(m);
  bf16emu::py::bind_attention(m);
}
