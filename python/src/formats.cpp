// bf16emu Python module: format facts (bf16emu.finfo, and the package's storage widths and NaN
// encodings) read from the C++ description of each format (io/finfo.cpp), so Python keeps no
// table of its own (issue 42).
#include "io/finfo.hpp"
#include "io/names.hpp"
#include "module.hpp"

namespace bf16emu::py {

void bind_formats(pybind11::module_ &m) {
  m.def(
      "format_info",
      [](const std::string &name) {
        const io::format_facts f = io::facts(io::parse_format_spec(name));
        pybind11::dict d;
        d["name"] = f.name;
        d["fields"] = f.fields;
        d["encoding"] = f.encoding;
        d["bits"] = f.width;
        d["storage_bits"] = f.storage_bits;
        d["exponent_bits"] = f.exp_bits;
        d["mantissa_bits"] = f.frac_bits;
        d["precision"] = f.precision;
        d["bias"] = f.bias;
        d["emin"] = f.emin;
        d["emax"] = f.emax;
        d["max"] = f.max;
        d["min_normal"] = f.min_normal;
        d["min_subnormal"] = f.min_subnormal;
        d["eps"] = f.eps;
        d["max_bits"] = f.max_bits;
        d["min_normal_bits"] = f.min_normal_bits;
        d["min_subnormal_bits"] = f.min_subnormal_bits;
        d["inf_bits"] = f.inf_bits ? pybind11::object(pybind11::int_(*f.inf_bits)) : pybind11::none();
        d["nan_bits"] = f.nan_bits ? pybind11::object(pybind11::int_(*f.nan_bits)) : pybind11::none();
        d["nan_count"] = f.nan_count;
        d["has_inf"] = f.has_inf;
        d["has_nan"] = f.has_nan;
        d["has_neg_zero"] = f.has_neg_zero;
        d["signed"] = f.is_signed;
        d["subnormals"] = f.has_subnormals;
        d["saturates"] = f.saturates;
        d["compile_time"] = f.compile_time;
        d["bulk_kernel"] = f.bulk;
        return d;
      },
      pybind11::arg("name"),
      "The facts of a format (a name, alias or fp:e=..,m=.. field list) as a dict, from the C++ "
      "description of it (the same as `bf16emu finfo --json`); ValueError for an unknown one.");
}

} // namespace bf16emu::py
