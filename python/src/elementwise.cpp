// bf16emu Python module: element-wise operations and the rounding trace.
//
// Arrays arrive as C-contiguous bit patterns (the Python layer views bfloat16/float16 tensors
// and float32/float64 arrays as unsigned integers of the format's width). The work is cut into
// chunks run by bf16emu::parallel_for with the GIL released; each chunk uses the Highway kernels
// of src/bulk where there is one (BF16EMU_PY_BULK: fp32 <-> bf16/tf32/fp16/e4m3/e5m2 and between
// two of those through fp32, bf16 add/sub/mul/fma, fp16 add/sub/mul), else the bulk paths of core/bulk.hpp
// where the format and mode have one, else the scalar routines. Each gives the scalar routine's bits and
// flags (tests/bulk, tests/python/test_bulk_path.py). Stochastic rounding stays scalar: its random bits per
// element (random_bits below) are not the kernels' stream. Flags are ORed per chunk slot, so the result is
// the same for any thread count. The caller may hand in the result array (out=) and a uint8 array for each
// element's own flags (return_flags=True); with the latter every element runs the scalar routine, which
// reports its flags.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <bf16emu/bias/rng.hpp>
#include <bf16emu/core.hpp>
#include <bf16emu/core/bulk.hpp>
#include <bf16emu/core/scale.hpp>
#include <bf16emu/parallel.hpp>

#ifdef BF16EMU_PY_BULK
#include "bulk/bulk.hpp"
#endif

#include "io/arith_report.hpp"
#include "io/error.hpp"
#include "io/names.hpp"
#include "io/print.hpp"
#include "module.hpp"

namespace bf16emu::py {

namespace {

constexpr std::size_t chunk = std::size_t{1} << 16;

// The random bits of element i under stochastic rounding: a counter-based draw keyed by the
// seed, so the result does not depend on the chunking or the thread count.
std::uint32_t random_bits(std::uint64_t key, std::size_t i) {
  bias::counter_rng r{key, i};
  return std::uint32_t(r.next() >> 32);
}

// The formats src/bulk converts from and to fp32.
template <class F>
inline constexpr bool hwy_narrow_format =
    std::is_same_v<F, bfloat16> || std::is_same_v<F, tensorfloat32> || std::is_same_v<F, binary16> ||
    std::is_same_v<F, float8_e4m3> || std::is_same_v<F, float8_e5m2>;

// in -> out with the src/bulk kernels where there are (fp32 <-> bf16/tf32/fp16/e4m3/e5m2, and
// between two of the latter through fp32; any env but stochastic rounding, which the caller has
// excluded); returns false when there are none.
template <class Out, class In>
bool hwy_convert([[maybe_unused]] const fp<In> *in, [[maybe_unused]] fp<Out> *out,
                 [[maybe_unused]] std::size_t n, [[maybe_unused]] const env &e,
                 [[maybe_unused]] std::uint8_t &flags) {
#ifdef BF16EMU_PY_BULK
  if constexpr (std::is_same_v<In, binary32> && hwy_narrow_format<Out>) {
    flags = bulk::convert_n(in, out, n, e);
    return true;
  } else if constexpr (std::is_same_v<Out, binary32> && hwy_narrow_format<In>) {
    flags = bulk::convert_n(in, out, n, e);
    return true;
  } else if constexpr (hwy_narrow_format<In> && hwy_narrow_format<Out> && !std::is_same_v<In, Out>) {
    // Through fp32, which holds every value of In exactly: the widening's flags (a signaling
    // NaN) and the narrowing's together are the direct conversion's. Not when outputs are
    // flushed and In has fp32's exponent range: the widening would flush In's subnormals, which
    // the direct conversion rounds (tf32's largest ones round up to bf16's smallest normal).
    if constexpr (In::exp_bits == binary32::exp_bits)
      if (static_cast<unsigned>(e.subnormal) & static_cast<unsigned>(subnormals::flush_outputs)) return false;
    constexpr std::size_t piece = 4096;
    f32 mid[piece];
    flags = 0;
    for (std::size_t i = 0; i < n; i += piece) {
      const std::size_t m = n - i < piece ? n - i : piece;
      flags |= bulk::convert_n(in + i, mid, m, e);
      flags |= bulk::convert_n(mid, out + i, m, e);
    }
    return true;
  }
#endif
  return false;
}

// out = a op b (a * b + c for fma) with the src/bulk kernel where there is one (bf16 add, sub,
// mul, fma; fp16 add, sub, mul; any env but stochastic rounding); returns false when there is none.
template <class F>
bool hwy_arith([[maybe_unused]] op_kind op, [[maybe_unused]] const fp<F> *a, [[maybe_unused]] const fp<F> *b,
               [[maybe_unused]] const fp<F> *c, [[maybe_unused]] fp<F> *out, [[maybe_unused]] std::size_t n,
               [[maybe_unused]] const env &e, [[maybe_unused]] std::uint8_t &flags) {
#ifdef BF16EMU_PY_BULK
  if constexpr (std::is_same_v<F, bfloat16>) {
    switch (op) {
    case op_kind::add: flags = bulk::add_n(a, b, out, n, e); return true;
    case op_kind::sub: flags = bulk::sub_n(a, b, out, n, e); return true;
    case op_kind::mul: flags = bulk::mul_n(a, b, out, n, e); return true;
    case op_kind::fma: flags = bulk::fma_n(a, b, c, out, n, e); return true;
    default: break;
    }
  } else if constexpr (std::is_same_v<F, binary16>) {
    switch (op) {
    case op_kind::add: flags = bulk::add_n(a, b, out, n, e); return true;
    case op_kind::sub: flags = bulk::sub_n(a, b, out, n, e); return true;
    case op_kind::mul: flags = bulk::mul_n(a, b, out, n, e); return true;
    default: break;
    }
  }
#endif
  return false;
}

template <class F> const fp<F> *as_fp(const pybind11::array &a) {
  return reinterpret_cast<const fp<F> *>(a.data());
}
template <class F> fp<F> *as_fp(pybind11::array &a) { return reinterpret_cast<fp<F> *>(a.mutable_data()); }

// Calls fn(begin, end, env) for every chunk of n elements in parallel; env carries the
// per-call rounding settings. Returns the OR of fn's flags.
template <class Fn> std::uint8_t run_chunks(std::size_t n, const call_env &ce, Fn &&fn) {
  const std::size_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::uint8_t> flags(chunks, 0);
  {
    pybind11::gil_scoped_release release;
    parallel_for(
        chunks, ce.threads,
        [&](std::uint64_t c, unsigned) {
          const std::size_t b = std::size_t(c) * chunk, e = b + chunk < n ? b + chunk : n;
          flags[c] = fn(b, e);
        },
        signal_checker());
  }
  std::uint8_t all = 0;
  for (std::uint8_t f : flags)
    all |= f;
  return all;
}

// Element-wise scalar loop over [b, e): res(i, env) returns a result<Out>. With each (not
// null), element i's own flags go to each[i].
template <class Out, class Res>
std::uint8_t scalar_loop(fp<Out> *out, std::uint8_t *each, std::size_t b, std::size_t e, const call_env &ce,
                         Res &&res) {
  std::uint8_t f = 0;
  env en = ce.e;
  const bool sr = is_stochastic(en.mode);
  for (std::size_t i = b; i < e; ++i) {
    if (sr) en.random = random_bits(ce.key, i);
    const result<Out> r = res(i, en);
    out[i] = r.value;
    if (each) each[i] = r.flags;
    f |= r.flags;
  }
  return f;
}

pybind11::array new_bits(format_id f, const pybind11::array &like) {
  const io::format_desc d = io::describe(f);
  std::vector<pybind11::ssize_t> shape(like.shape(), like.shape() + like.ndim());
  if (d.width <= 8) return pybind11::array_t<std::uint8_t>(shape);
  if (d.width <= 16) return pybind11::array_t<std::uint16_t>(shape);
  if (d.width <= 32) return pybind11::array_t<std::uint32_t>(shape);
  return pybind11::array_t<std::uint64_t>(shape);
}

// The result array: `out` when the caller gave one (its elements must have the format's
// storage width, be C-contiguous and writeable, and number n), else a new one shaped like `like`.
pybind11::array result_bits(format_id f, const pybind11::array &like, const pybind11::object &out) {
  if (out.is_none()) return new_bits(f, like);
  auto o = out.cast<pybind11::array>();
  check_bits(o, f, "out");
  if (!o.writeable()) throw pybind11::value_error("argument 'out' is read-only");
  if (o.size() != like.size())
    throw pybind11::value_error("argument 'out': shape " + shape_text(o) + " does not match the result " +
                                shape_text(like));
  return o;
}

// The per-element flag array (uint8, n elements, C-contiguous), or null when not asked for.
std::uint8_t *each_flags(const pybind11::object &flags_out, const pybind11::array &like) {
  if (flags_out.is_none()) return nullptr;
  auto f = flags_out.cast<pybind11::array>();
  if (f.itemsize() != 1 || !(f.flags() & pybind11::array::c_style) || !f.writeable() ||
      f.size() != like.size())
    throw pybind11::value_error("flag mask: needs a writeable C-contiguous uint8 array of " +
                                std::to_string(like.size()) + " elements");
  return static_cast<std::uint8_t *>(f.mutable_data());
}

// The storage of a run-time format's bit patterns: the narrowest of uint8/16/32/64 that holds it.
int storage_bytes(const format_spec &s) {
  return s.width <= 8 ? 1 : s.width <= 16 ? 2 : s.width <= 32 ? 4 : 8;
}

template <class T> std::uint64_t load_bits(const void *p, std::size_t i) {
  return static_cast<const T *>(p)[i];
}
template <class T> void store_bits(void *p, std::size_t i, std::uint64_t v) { static_cast<T *>(p)[i] = T(v); }

std::uint64_t load_any(const void *p, int bytes, std::size_t i) {
  switch (bytes) {
  case 1: return load_bits<std::uint8_t>(p, i);
  case 2: return load_bits<std::uint16_t>(p, i);
  case 4: return load_bits<std::uint32_t>(p, i);
  default: return load_bits<std::uint64_t>(p, i);
  }
}
void store_any(void *p, int bytes, std::size_t i, std::uint64_t v) {
  switch (bytes) {
  case 1: store_bits<std::uint8_t>(p, i, v); break;
  case 2: store_bits<std::uint16_t>(p, i, v); break;
  case 4: store_bits<std::uint32_t>(p, i, v); break;
  default: store_bits<std::uint64_t>(p, i, v); break;
  }
}

pybind11::array new_bits_bytes(int bytes, const pybind11::array &like) {
  std::vector<pybind11::ssize_t> shape(like.shape(), like.shape() + like.ndim());
  switch (bytes) {
  case 1: return pybind11::array_t<std::uint8_t>(shape);
  case 2: return pybind11::array_t<std::uint16_t>(shape);
  case 4: return pybind11::array_t<std::uint32_t>(shape);
  default: return pybind11::array_t<std::uint64_t>(shape);
  }
}

// Conversion where a format is named at run time (issue 44): core/spec.hpp's convert per element
// (no bulk kernel; the speed is in docs/formats.md), chunked and threaded as the others.
pybind11::tuple convert_runtime(const pybind11::array &x, const io::named_format &src,
                                const io::named_format &dst, const call_env &ce,
                                const pybind11::object &out_arg, const pybind11::object &flags_arg) {
  const int in_bytes = storage_bytes(src.spec), out_bytes = storage_bytes(dst.spec);
  if (x.itemsize() != in_bytes)
    throw pybind11::type_error("argument 'x': " + std::to_string(x.itemsize() * 8) +
                               "-bit elements do not hold format " + src.name + " (" +
                               std::to_string(in_bytes * 8) + "-bit storage)");
  if (!(x.flags() & pybind11::array::c_style))
    throw pybind11::value_error("argument 'x' is not C-contiguous");
  const std::uint64_t in_mask =
      src.spec.width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << src.spec.width) - 1;
  const auto n = std::size_t(x.size());
  for (std::size_t i = 0; i < n && src.spec.width < 8 * in_bytes; ++i)
    if (load_any(x.data(), in_bytes, i) & ~in_mask)
      throw pybind11::value_error("argument 'x': element " + std::to_string(i) + " = 0x" +
                                  hex(load_any(x.data(), in_bytes, i)) + " has bits above the " +
                                  std::to_string(src.spec.width) + "-bit format " + src.name);
  pybind11::array out;
  if (out_arg.is_none()) {
    out = new_bits_bytes(out_bytes, x);
  } else {
    out = out_arg.cast<pybind11::array>();
    if (out.itemsize() != out_bytes || !(out.flags() & pybind11::array::c_style) || !out.writeable() ||
        out.size() != x.size())
      throw pybind11::value_error("argument 'out': needs a writeable C-contiguous array of " +
                                  std::to_string(x.size()) + " " + std::to_string(out_bytes * 8) +
                                  "-bit elements");
  }
  std::uint8_t *each = each_flags(flags_arg, x);
  const void *in_p = x.data();
  void *out_p = out.mutable_data();
  const std::uint8_t flags = run_chunks(n, ce, [&](std::size_t b, std::size_t e) -> std::uint8_t {
    std::uint8_t f = 0;
    env en = ce.e;
    const bool sr = is_stochastic(en.mode);
    for (std::size_t i = b; i < e; ++i) {
      if (sr) en.random = random_bits(ce.key, i);
      const spec_result r = convert(dst.spec, src.spec, load_any(in_p, in_bytes, i), en);
      store_any(out_p, out_bytes, i, r.bits);
      if (each) each[i] = r.flags;
      f |= r.flags;
    }
    return f;
  });
  return pybind11::make_tuple(out, int(flags));
}

pybind11::tuple convert_array(const pybind11::array &x, const std::string &from, const std::string &to,
                              const call_env &ce, const pybind11::object &out_arg,
                              const pybind11::object &flags_arg) {
  const io::named_format nsrc = io::parse_format_spec(from), ndst = io::parse_format_spec(to);
  if (!nsrc.id || !ndst.id) return convert_runtime(x, nsrc, ndst, ce, out_arg, flags_arg);
  const format_id src = *nsrc.id, dst = *ndst.id;
  check_bits(x, src, "x");
  pybind11::array out = result_bits(dst, x, out_arg);
  std::uint8_t *each = each_flags(flags_arg, x);
  const auto n = std::size_t(x.size());
  const std::uint8_t flags = visit_format(src, [&](auto fi) {
    using In = decltype(fi);
    return visit_format(dst, [&](auto fo) -> std::uint8_t {
      using Out = decltype(fo);
      const fp<In> *a = as_fp<In>(x);
      fp<Out> *o = as_fp<Out>(out);
      return run_chunks(n, ce, [&](std::size_t b, std::size_t e) -> std::uint8_t {
        if (!is_stochastic(ce.e.mode) && !each) {
          std::uint8_t f = 0;
          if (hwy_convert<Out, In>(a + b, o + b, e - b, ce.e, f)) return f;
        }
        // The bulk conversion for 16/32-bit outputs (fp32 -> bf16, tf32; fp32 -> fp16 has another
        // exponent range). fp16 -> e5m2 stays scalar: GCC 12 reports a false -Wstringop-overflow
        // on the bulk loop's 8-bit stores.
        if constexpr (detail::same_range_narrowing<Out, In> && Out::width >= 16)
          if (!is_stochastic(ce.e.mode) && !each) return convert_loop<Out, In>(a + b, o + b, e - b, ce.e);
        return scalar_loop<Out>(o, each, b, e, ce,
                                [&](std::size_t i, const env &en) { return convert<Out>(a[i], en); });
      });
    });
  });
  return pybind11::make_tuple(out, int(flags));
}

format_id arith_format(const std::string &name) {
  const io::named_format nf = io::parse_format_spec(name);
  if (!nf.id) throw pybind11::value_error("argument 'format': '" + nf.name + "' is a run-time format");
  const format_id f = *nf.id;
  if (io::describe(f).precision > 24)
    throw pybind11::value_error(
        "argument 'format': arithmetic in '" + name +
        "' is not supported (up to 24 significant bits; fp64 is a conversion source only)");
  return f;
}

// Arithmetic in a run-time format (core/spec.hpp's arith, one scalar call per element): operands
// and result in the format's storage, at most 24 significant bits.
pybind11::tuple arith_runtime(op_kind op, const std::vector<pybind11::array> &ops, const io::named_format &f,
                              const call_env &ce, const pybind11::object &out_arg,
                              const pybind11::object &flags_arg) {
  if (f.spec.precision > 24)
    throw pybind11::value_error("argument 'format': arithmetic in '" + f.name +
                                "' is not supported (up to 24 significant bits)");
  const int n_ops = io::arity(op);
  if (int(ops.size()) != n_ops)
    throw pybind11::value_error(std::string(to_string(op)) + " takes " + std::to_string(n_ops) +
                                " operands, got " + std::to_string(ops.size()));
  const int bytes = storage_bytes(f.spec);
  const std::uint64_t mask = (std::uint64_t{1} << f.spec.width) - 1;
  static const char *names[] = {"a", "b", "c"};
  for (int k = 0; k < n_ops; ++k) {
    if (ops[k].itemsize() != bytes)
      throw pybind11::type_error(std::string("argument '") + names[k] +
                                 "': " + std::to_string(ops[k].itemsize() * 8) +
                                 "-bit elements do not hold format " + f.name);
    if (!(ops[k].flags() & pybind11::array::c_style))
      throw pybind11::value_error(std::string("argument '") + names[k] + "' is not C-contiguous");
    if (ops[k].size() != ops[0].size() || ops[k].ndim() != ops[0].ndim() ||
        !std::equal(ops[0].shape(), ops[0].shape() + ops[0].ndim(), ops[k].shape()))
      throw pybind11::value_error(std::string("argument '") + names[k] + "': shape " + shape_text(ops[k]) +
                                  " does not match argument 'a' " + shape_text(ops[0]));
    for (pybind11::ssize_t i = 0; i < ops[k].size(); ++i)
      if (load_any(ops[k].data(), bytes, std::size_t(i)) & ~mask)
        throw pybind11::value_error(std::string("argument '") + names[k] + "': element " + std::to_string(i) +
                                    " has bits above the " + std::to_string(f.spec.width) + "-bit format " +
                                    f.name);
  }
  pybind11::array out;
  if (out_arg.is_none()) {
    out = new_bits_bytes(bytes, ops[0]);
  } else {
    out = out_arg.cast<pybind11::array>();
    if (out.itemsize() != bytes || !(out.flags() & pybind11::array::c_style) || !out.writeable() ||
        out.size() != ops[0].size())
      throw pybind11::value_error("argument 'out': needs a writeable C-contiguous array of " +
                                  std::to_string(ops[0].size()) + " " + std::to_string(bytes * 8) +
                                  "-bit elements");
  }
  std::uint8_t *each = each_flags(flags_arg, ops[0]);
  const void *pa = ops[0].data(), *pb = n_ops > 1 ? ops[1].data() : nullptr,
             *pc = n_ops > 2 ? ops[2].data() : nullptr;
  void *po = out.mutable_data();
  const std::uint8_t flags =
      run_chunks(std::size_t(ops[0].size()), ce, [&](std::size_t b, std::size_t e) -> std::uint8_t {
        std::uint8_t fl = 0;
        env en = ce.e;
        const bool sr = is_stochastic(en.mode);
        for (std::size_t i = b; i < e; ++i) {
          if (sr) en.random = random_bits(ce.key, i);
          const spec_result r = arith(op, f.spec, f.spec, load_any(pa, bytes, i),
                                      pb ? load_any(pb, bytes, i) : 0, pc ? load_any(pc, bytes, i) : 0, en);
          store_any(po, bytes, i, r.bits);
          if (each) each[i] = r.flags;
          fl |= r.flags;
        }
        return fl;
      });
  return pybind11::make_tuple(out, int(flags));
}

pybind11::tuple arith_array(const std::string &opname, const std::vector<pybind11::array> &ops,
                            const std::string &format, const call_env &ce, const pybind11::object &out_arg,
                            const pybind11::object &flags_arg) {
  const op_kind op = parse_op(opname);
  const io::named_format nf = io::parse_format_spec(format);
  if (!nf.id) return arith_runtime(op, ops, nf, ce, out_arg, flags_arg);
  const format_id f = arith_format(format);
  const int n_ops = io::arity(op);
  if (int(ops.size()) != n_ops)
    throw pybind11::value_error(opname + " takes " + std::to_string(n_ops) + " operands, got " +
                                std::to_string(ops.size()));
  static const char *names[] = {"a", "b", "c"};
  for (int k = 0; k < n_ops; ++k) {
    check_bits(ops[k], f, names[k]);
    if (k > 0 && (ops[k].ndim() != ops[0].ndim() ||
                  !std::equal(ops[0].shape(), ops[0].shape() + ops[0].ndim(), ops[k].shape())))
      throw pybind11::value_error(std::string("argument '") + names[k] + "': shape " + shape_text(ops[k]) +
                                  " does not match argument 'a' " + shape_text(ops[0]));
  }
  pybind11::array out = result_bits(f, ops[0], out_arg);
  std::uint8_t *each = each_flags(flags_arg, ops[0]);
  const auto n = std::size_t(ops[0].size());
  const std::uint8_t flags = visit_format(f, [&](auto fi) -> std::uint8_t {
    using F = decltype(fi);
    if constexpr (F::precision > 24) {
      return 0; // rejected by arith_format
    } else {
      const fp<F> *a = as_fp<F>(ops[0]);
      const fp<F> *b = n_ops > 1 ? as_fp<F>(ops[1]) : nullptr;
      const fp<F> *c = n_ops > 2 ? as_fp<F>(ops[2]) : nullptr;
      fp<F> *o = as_fp<F>(out);
      return run_chunks(n, ce, [&](std::size_t lo, std::size_t hi) -> std::uint8_t {
        const bool scalar = is_stochastic(ce.e.mode) || each != nullptr;
        if (!scalar) {
          std::uint8_t f = 0;
          if (hwy_arith<F>(op, a + lo, b ? b + lo : nullptr, c ? c + lo : nullptr, o + lo, hi - lo, ce.e, f))
            return f;
        }
        if constexpr (detail::bulk_add_format<F>) {
          if (op == op_kind::add && !scalar) return add_loop<F>(a + lo, b + lo, o + lo, hi - lo, ce.e);
          if (op == op_kind::sub && !scalar) return sub_loop<F>(a + lo, b + lo, o + lo, hi - lo, ce.e);
        }
        return scalar_loop<F>(o, each, lo, hi, ce, [&](std::size_t i, const env &en) -> result<F> {
          switch (op) {
          case op_kind::add: return add(a[i], b[i], en);
          case op_kind::sub: return sub(a[i], b[i], en);
          case op_kind::mul: return mul(a[i], b[i], en);
          case op_kind::div: return div(a[i], b[i], en);
          case op_kind::fma: return fma(a[i], b[i], c[i], en);
          default: return sqrt(a[i], en);
          }
        });
      });
    }
  });
  return pybind11::make_tuple(out, int(flags));
}

// The OCP MX element formats (and fp8, which MX also uses).
bool mx_element(format_id f) {
  return f == format_id::e4m3 || f == format_id::e5m2 || f == format_id::e2m3 || f == format_id::e3m2 ||
         f == format_id::e2m1;
}

// MX block quantization along the last axis (core/scale.hpp quantize_mx_block): returns
// (scales, elements, flags), scales as UE8M0 bytes of shape x.shape[:-1] + (x.shape[-1] / block,).
pybind11::tuple quantize_mx_array(const pybind11::array &x, const std::string &from, const std::string &elem,
                                  long long block, const call_env &ce) {
  const format_id src = io::parse_format(from), dst = io::parse_format(elem);
  if (!mx_element(dst))
    throw pybind11::value_error("argument 'elem': '" + elem.substr(0, 80) +
                                "' is not an MX element format (e2m1, e2m3, e3m2, e4m3, e5m2)");
  check_bits(x, src, "x");
  if (block < 1 || block > 4096)
    throw pybind11::value_error("argument 'block' = " + std::to_string(block) + " is outside 1..4096");
  const pybind11::ssize_t last = x.ndim() == 0 ? 1 : x.shape(x.ndim() - 1);
  if (x.ndim() == 0 || last % block != 0)
    throw pybind11::value_error("argument 'x': the last axis of shape " + shape_text(x) +
                                " is not a multiple of block = " + std::to_string(block));
  pybind11::array out = new_bits(dst, x);
  std::vector<pybind11::ssize_t> sshape(x.shape(), x.shape() + x.ndim());
  sshape.back() = last / block;
  pybind11::array_t<std::uint8_t> scales(sshape);
  const auto k = std::size_t(block), blocks = std::size_t(x.size()) / k;
  std::uint8_t *sp = scales.mutable_data();
  const std::uint8_t flags = visit_format(src, [&](auto fi) {
    using In = decltype(fi);
    return visit_format(dst, [&](auto fo) -> std::uint8_t {
      using Out = decltype(fo);
      if constexpr (Out::width > 8) {
        return std::uint8_t(0); // rejected above (not an MX element format)
      } else {
        const fp<In> *a = as_fp<In>(x);
        fp<Out> *o = as_fp<Out>(out);
        return run_chunks(blocks, ce, [&](std::size_t b, std::size_t e) -> std::uint8_t {
          std::uint8_t f = 0;
          for (std::size_t j = b; j < e; ++j) {
            std::uint8_t fj = 0;
            sp[j] = quantize_mx_block<Out, In>(a + j * k, int(k), o + j * k, ce.e, fj).bits;
            f |= fj;
          }
          return f;
        });
      }
    });
  });
  return pybind11::make_tuple(scales, out, int(flags));
}

pybind11::dict event_dict(const io::arith_step &s) {
  pybind11::list events;
  for (const rounding_event &ev : s.events) {
    pybind11::dict d;
    d["op"] = to_string(ev.op);
    d["mode"] = to_string(ev.mode);
    d["sign"] = ev.sign;
    d["exponent"] = int(ev.exponent);
    d["lsb_exponent"] = int(ev.lsb_exp);
    d["kept"] = ev.kept;
    d["guard"] = int(ev.guard);
    d["round"] = int(ev.round);
    d["sticky"] = int(ev.sticky);
    d["tiny"] = ev.tiny;
    d["decision"] = to_string(ev.dec);
    d["explanation"] = io::explain(ev.dec);
    d["result_bits"] = ev.result_bits;
    d["error"] = io::exact_error_text(ev);
    d["error_hi"] = ev.err_hi;
    d["error_lo"] = ev.err_lo;
    d["error_exact"] = ev.err_exact;
    events.append(d);
  }
  pybind11::dict step;
  step["op"] = to_string(s.op);
  step["from"] = io::name(s.from);
  step["to"] = s.to.name;
  step["bits"] = s.bits;
  step["flags"] = int(s.flags);
  step["events"] = events;
  return step;
}

pybind11::dict trace_one(const std::string &opname, const std::vector<std::uint64_t> &bits,
                         const std::string &format, const std::string &to, const call_env &ce) {
  io::arith_request rq;
  rq.op = parse_op(opname);
  rq.format = io::parse_format(format);
  if (!to.empty()) {
    io::named_format nf = io::parse_format_spec(to);
    if (nf.id)
      rq.to = *nf.id;
    else
      rq.to_runtime = nf;
  }
  rq.e = ce.e;
  if (is_stochastic(rq.e.mode)) rq.e.random = random_bits(ce.key, ce.index);
  const std::uint64_t mask = io::describe(rq.format).width_mask;
  for (std::size_t k = 0; k < bits.size(); ++k) {
    if (bits[k] & ~mask)
      throw pybind11::value_error("operand " + std::to_string(k) + " (0x" + hex(bits[k]) +
                                  ") does not fit format " + format);
    io::operand o;
    o.format = rq.format;
    o.bits = bits[k];
    o.text = io::hex_bits(rq.format, bits[k]);
    rq.operands.push_back(o);
  }
  const io::arith_report r = io::run_arith(rq);
  pybind11::dict d;
  d["op"] = opname;
  d["format"] = io::name(rq.format);
  pybind11::list operands;
  for (std::uint64_t b : bits)
    operands.append(b);
  d["operands"] = operands;
  d["result_format"] = r.result_format.name;
  d["result_bits"] = r.result_bits;
  d["result"] = io::value_double(r.result_format, r.result_bits);
  d["flags"] = int(r.flags);
  pybind11::list steps;
  for (const auto &s : r.steps)
    steps.append(event_dict(s));
  d["steps"] = steps;
  // The last rounding (the one that produced the result), flattened for the common case.
  const rounding_event *last = nullptr;
  for (const auto &s : r.steps)
    if (!s.events.empty()) last = &s.events.back();
  for (const char *k : {"guard", "round", "sticky", "decision", "error", "exponent", "kept", "tiny"})
    d[k] = pybind11::none();
  if (last) {
    d["guard"] = int(last->guard);
    d["round"] = int(last->round);
    d["sticky"] = int(last->sticky);
    d["decision"] = to_string(last->dec);
    d["error"] = io::exact_error_text(*last);
    d["error_value"] = last->err_hi + last->err_lo;
    d["error_exact"] = last->err_exact;
    d["exponent"] = int(last->exponent);
    d["kept"] = last->kept;
    d["tiny"] = last->tiny;
  } else {
    d["decision"] = "exact";
    d["error"] = "0";
    d["error_value"] = 0.0;
    d["error_exact"] = true;
    d["guard"] = 0;
    d["round"] = 0;
    d["sticky"] = 0;
  }
  return d;
}

} // namespace

void check_bits(const pybind11::array &a, format_id f, const char *name) {
  const io::format_desc d = io::describe(f);
  const auto want = pybind11::ssize_t(d.width <= 8 ? 1 : d.width <= 16 ? 2 : d.width <= 32 ? 4 : 8);
  if (a.itemsize() != want)
    throw pybind11::type_error(std::string("argument '") + name + "': " + std::to_string(a.itemsize() * 8) +
                               "-bit elements do not hold format " + d.name + " (" +
                               std::to_string(want * 8) + "-bit storage)");
  if (!(a.flags() & pybind11::array::c_style))
    throw pybind11::value_error(std::string("argument '") + name + "' is not C-contiguous");
  // A format narrower than its storage (fp6/fp4 in one byte each, tf32 in four): the bits
  // above it must be 0.
  if (d.width < 8 * int(want)) {
    const auto above = [&](const auto *p) {
      for (pybind11::ssize_t i = 0; i < a.size(); ++i)
        if (std::uint64_t(p[i]) & ~d.width_mask)
          throw pybind11::value_error(std::string("argument '") + name + "': element " + std::to_string(i) +
                                      " = 0x" + hex(p[i]) + " has bits above the " + std::to_string(d.width) +
                                      "-bit format " + d.name);
    };
    if (want == 1) above(static_cast<const std::uint8_t *>(a.data()));
    if (want == 4) above(static_cast<const std::uint32_t *>(a.data()));
  }
}

void bind_elementwise(pybind11::module_ &m) {
  m.def(
      "convert",
      [](const pybind11::array &x, const std::string &from, const std::string &to, const pybind11::dict &opts,
         const pybind11::object &out,
         const pybind11::object &flags) { return convert_array(x, from, to, make_env(opts), out, flags); },
      pybind11::arg("x"), pybind11::arg("from"), pybind11::arg("to"), pybind11::arg("opts"),
      pybind11::arg("out") = pybind11::none(), pybind11::arg("flags") = pybind11::none(),
      "Convert bit patterns of format `from` into format `to` (into `out` when given; each "
      "element's flags into the uint8 array `flags` when given); returns (bits, OR of the flags).");
  m.def(
      "arith",
      [](const std::string &op, const std::vector<pybind11::array> &ops, const std::string &format,
         const pybind11::dict &opts, const pybind11::object &out,
         const pybind11::object &flags) { return arith_array(op, ops, format, make_env(opts), out, flags); },
      pybind11::arg("op"), pybind11::arg("ops"), pybind11::arg("format"), pybind11::arg("opts"),
      pybind11::arg("out") = pybind11::none(), pybind11::arg("flags") = pybind11::none(),
      "Element-wise add/sub/mul/div/fma/sqrt on bit patterns of one format (into `out` when given; "
      "each element's flags into the uint8 array `flags` when given); returns (bits, OR of the flags).");
  m.def(
      "trace",
      [](const std::string &op, const std::vector<std::uint64_t> &bits, const std::string &format,
         const std::string &to,
         const pybind11::dict &opts) { return trace_one(op, bits, format, to, make_env(opts)); },
      "One operation on one element with its full rounding trace, as a dict.");
  m.def(
      "quantize_mx",
      [](const pybind11::array &x, const std::string &from, const std::string &elem, long long block,
         const pybind11::dict &opts) { return quantize_mx_array(x, from, elem, block, make_env(opts)); },
      "OCP MX block quantization along the last axis; returns (UE8M0 scale bytes, element bits, flags).");
  m.def(
      "bulk_target",
      []() -> pybind11::object {
#ifdef BF16EMU_PY_BULK
        return pybind11::str(bulk::target_name());
#else
        return pybind11::none();
#endif
      },
      "The SIMD target of the src/bulk kernels on this CPU (Highway's name, e.g. 'AVX2'), or None when "
      "the module was built without them.");
  m.def(
      "check_bits",
      [](const pybind11::array &a, const std::string &format, const std::string &name) {
        const io::named_format f = io::parse_format_spec(format);
        if (f.id) return check_bits(a, *f.id, name.c_str());
        // A run-time format: its storage width and no bit above the pattern.
        const int bytes = storage_bytes(f.spec);
        if (a.itemsize() != bytes)
          throw pybind11::type_error("argument '" + name + "': " + std::to_string(a.itemsize() * 8) +
                                     "-bit elements do not hold format " + f.name + " (" +
                                     std::to_string(bytes * 8) + "-bit storage)");
        if (!(a.flags() & pybind11::array::c_style))
          throw pybind11::value_error("argument '" + name + "' is not C-contiguous");
        const std::uint64_t mask =
            f.spec.width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << f.spec.width) - 1;
        for (pybind11::ssize_t i = 0; i < a.size(); ++i)
          if (load_any(a.data(), bytes, std::size_t(i)) & ~mask)
            throw pybind11::value_error("argument '" + name + "': element " + std::to_string(i) + " = 0x" +
                                        hex(load_any(a.data(), bytes, std::size_t(i))) +
                                        " has bits above the " + std::to_string(f.spec.width) +
                                        "-bit format " + f.name);
      },
      "Checks bit patterns of `format` as convert does (storage width, C order, no bit above the "
      "pattern); the errors name argument `name`.");
  m.def("value", [](const std::string &format, std::uint64_t bits) {
    return io::value_double(io::parse_format_spec(format), bits);
  });
}

} // namespace bf16emu::py
