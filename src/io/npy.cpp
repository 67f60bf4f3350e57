// bf16emu io: .npy reader and writer. See npy.hpp.
#include "io/npy.hpp"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "io/error.hpp"
#include "io/files.hpp"
#include "io/memory.hpp"

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace bf16emu::npy {

namespace {

[[noreturn]] void fail(const std::string &name, const std::string &what) {
  throw io::input_error(name + ": " + what);
}

std::size_t elem_size(dtype t) {
  switch (t) {
  case dtype::f32: return 4;
  case dtype::f64: return 8;
  default: return 2;
  }
}

std::string shape_str(const std::vector<std::size_t> &s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    r += std::to_string(s[i]);
    if (s.size() == 1 || i + 1 < s.size()) r += ",";
    if (i + 1 < s.size()) r += " ";
  }
  return r + ")";
}

// Minimal parser for the header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct header_parser {
  const std::string &h;
  const std::string &name;
  std::size_t i = 0;

  [[noreturn]] void bad(const std::string &what) {
    std::string shown = h.substr(0, 200);
    while (!shown.empty() && std::isspace(static_cast<unsigned char>(shown.back())))
      shown.pop_back();
    fail(name, "bad header (" + what + ") in: " + shown);
  }
  void ws() {
    while (i < h.size() && std::isspace(static_cast<unsigned char>(h[i])))
      ++i;
  }
  bool eat(char c) {
    ws();
    if (i < h.size() && h[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void need(char c) {
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }
  std::string str() {
    ws();
    if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) bad("expected a string");
    char q = h[i++];
    std::size_t start = i;
    while (i < h.size() && h[i] != q)
      ++i;
    if (i >= h.size()) bad("unterminated string");
    return h.substr(start, i++ - start);
  }
  std::size_t integer() {
    ws();
    if (i >= h.size() || !std::isdigit(static_cast<unsigned char>(h[i]))) bad("expected a dimension");
    unsigned long long v = 0;
    while (i < h.size() && std::isdigit(static_cast<unsigned char>(h[i]))) {
      unsigned d = unsigned(h[i++] - '0');
      if (v > (std::numeric_limits<unsigned long long>::max() - d) / 10) bad("dimension too large");
      v = v * 10 + d;
    }
    if (h.compare(i, 1, "L") == 0) ++i; // Python 2 long suffix
    return std::size_t(v);
  }
  bool boolean() {
    ws();
    if (h.compare(i, 4, "True") == 0) {
      i += 4;
      return true;
    }
    if (h.compare(i, 5, "False") == 0) {
      i += 5;
      return false;
    }
    bad("expected True or False");
  }
  std::vector<std::size_t> tuple() {
    need('(');
    std::vector<std::size_t> s;
    if (eat(')')) return s;
    for (;;) {
      s.push_back(integer());
      if (eat(')')) return s;
      need(',');
      if (eat(')')) return s;
    }
  }
};

} // namespace

const char *descr(dtype t) noexcept {
  switch (t) {
  case dtype::f32: return "<f4";
  case dtype::f64: return "<f8";
  default: return "<u2";
  }
}

std::size_t array::size() const noexcept {
  std::size_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

double array::value(std::size_t i) const {
  switch (type) {
  case dtype::f32: return f32.at(i);
  case dtype::f64: return f64.at(i);
  default: return u16.at(i);
  }
}

namespace {

// The preamble and header dict of an image: the array's dtype and shape (no data yet), and the
// offset where the data start.
struct header_info {
  array a;
  std::string descr;
  std::size_t data_offset = 0;
};

header_info parse_header(const std::uint8_t *data, std::size_t size, const std::string &name) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, magic, 6) != 0)
    fail(name, "not a .npy file (wrong magic; expected \\x93NUMPY)");
  unsigned major = data[6], minor = data[7];
  std::size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = std::size_t(data[8]) | std::size_t(data[9]) << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(name, "truncated header");
    hlen = std::size_t(data[8]) | std::size_t(data[9]) << 8 | std::size_t(data[10]) << 16 |
           std::size_t(data[11]) << 24;
    hstart = 12;
  } else {
    fail(name, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  }
  if (hlen > size - hstart) fail(name, "truncated header (declares " + std::to_string(hlen) + " bytes)");
  std::string h(reinterpret_cast<const char *>(data + hstart), hlen);

  header_parser p{h, name};
  std::string descr_s;
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::vector<std::size_t> shape;
  p.need('{');
  while (!p.eat('}')) {
    std::string key = p.str();
    p.need(':');
    // Each key once: a second 'shape' would otherwise silently win.
    auto first = [&](bool &seen) {
      if (seen) p.bad("duplicate key '" + io::shorten(key) + "'");
      seen = true;
    };
    if (key == "descr") {
      first(have_descr);
      descr_s = p.str();
    } else if (key == "fortran_order") {
      first(have_order);
      fortran = p.boolean();
    } else if (key == "shape") {
      first(have_shape);
      shape = p.tuple();
    } else {
      p.bad("unknown key '" + io::shorten(key) + "'");
    }
    if (!p.eat(',')) {
      p.need('}');
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) p.bad("missing descr, fortran_order or shape");
  // After the dict only the padding (spaces) and the final newline that NumPy writes.
  for (std::size_t k = p.i; k < h.size(); ++k)
    if (h[k] != ' ' && !(h[k] == '\n' && k + 1 == h.size()))
      p.bad("unexpected characters after the dict, at byte " + std::to_string(k) + " of the header");

  header_info r;
  array &a = r.a;
  if (descr_s == "<f4")
    a.type = dtype::f32;
  else if (descr_s == "<f8")
    a.type = dtype::f64;
  else if (descr_s == "<u2")
    a.type = dtype::u16;
  else
    fail(name, "unsupported dtype '" + io::shorten(descr_s) + "' (supported: '<f4', '<f8', '<u2')");
  if (fortran) fail(name, "fortran_order True is not supported (save a C-order array)");
  a.shape = shape;
  r.descr = descr_s;
  r.data_offset = hstart + hlen;
  return r;
}

} // namespace

array parse(const std::uint8_t *data, std::size_t size, const std::string &name, const expect &want) {
  header_info hi = parse_header(data, size, name);
  array &a = hi.a;
  const std::string &descr_s = hi.descr;
  const std::vector<std::size_t> &shape = a.shape;
  if (!want.type_any && want.type != a.type)
    fail(name, std::string("dtype is '") + io::shorten(descr_s) + "', expected '" + descr(want.type) + "'");
  if (!want.any_shape) {
    bool ok = want.dims.size() == shape.size();
    for (std::size_t k = 0; ok && k < shape.size(); ++k)
      ok = want.dims[k] < 0 || std::size_t(want.dims[k]) == shape[k];
    if (!ok) {
      std::string w = "(";
      for (std::size_t k = 0; k < want.dims.size(); ++k)
        w += (want.dims[k] < 0 ? std::string("*") : std::to_string(want.dims[k])) +
             (k + 1 < want.dims.size() || want.dims.size() == 1 ? "," : "") +
             (k + 1 < want.dims.size() ? " " : "");
      fail(name, "shape mismatch: file has " + shape_str(shape) + ", expected " + w + ")");
    }
  }

  std::size_t n = 1;
  for (auto d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d / 8) fail(name, "shape too large");
    n *= d;
  }
  std::size_t es = elem_size(a.type), body = hi.data_offset;
  if (size - body < n * es)
    fail(name, "truncated data: shape " + shape_str(shape) + " needs " + std::to_string(n * es) +
                   " bytes, file has " + std::to_string(size - body));
  const std::uint8_t *src = data + body;
  if (n == 0) return a; // empty array: nothing to copy (memcpy into a null data() is UB)
  switch (a.type) {
  case dtype::f32:
    a.f32.resize(n);
    std::memcpy(a.f32.data(), src, n * es);
    break;
  case dtype::f64:
    a.f64.resize(n);
    std::memcpy(a.f64.data(), src, n * es);
    break;
  case dtype::u16:
    a.u16.resize(n);
    std::memcpy(a.u16.data(), src, n * es);
    break;
  }
  return a;
}

std::vector<std::uint8_t> read_image(std::istream &in, const std::string &name, std::uint64_t max_memory) {
  std::vector<std::uint8_t> bytes;
  // Appends up to `count` bytes; returns how many arrived.
  auto get = [&](std::uint64_t count) {
    const std::size_t from = bytes.size();
    bytes.resize(from + std::size_t(count));
    in.read(reinterpret_cast<char *>(bytes.data() + from), std::streamsize(count));
    if (in.bad()) fail(name, "read error");
    bytes.resize(from + std::size_t(in.gcount()));
    return std::uint64_t(in.gcount());
  };
  get(12); // the preamble of every version (10 bytes for 1.0); parse_header checks the magic
  if (bytes.size() >= 10 && bytes[6] >= 1 && bytes[6] <= 3) {
    const std::size_t pre = bytes[6] == 1 ? 10 : 12;
    std::uint64_t hlen = std::uint64_t(bytes[8]) | std::uint64_t(bytes[9]) << 8;
    if (pre == 12 && bytes.size() >= 12)
      hlen |= std::uint64_t(bytes[10]) << 16 | std::uint64_t(bytes[11]) << 24;
    if (hlen > max_header_bytes)
      fail(name, "header of " + std::to_string(hlen) + " bytes; at most " + std::to_string(max_header_bytes));
    get(pre + hlen - std::min<std::uint64_t>(bytes.size(), pre + hlen));
  }
  const header_info hi = parse_header(bytes.data(), bytes.size(), name);
  std::uint64_t n = elem_size(hi.a.type);
  for (auto d : hi.a.shape)
    n = io::saturating_product({n, std::uint64_t(d)});
  io::memory_need need;
  need.add({n, 3}, "its data"); // the image, the array, and the caller's copy
  io::check_memory(need, max_memory, "reading " + io::shorten(name, 200));
  bytes.resize(hi.data_offset); // drop what the 12-byte read took of the data
  get(n);
  return bytes;
}

array read(const std::string &path, const expect &want) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  const std::vector<std::uint8_t> bytes = read_image(in, path);
  return parse(bytes.data(), bytes.size(), path, want);
}

std::vector<std::uint8_t> serialize(dtype t, const std::vector<std::size_t> &shape, const void *data) {
  std::string dict = std::string("{'descr': '") + descr(t) +
                     "', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
  // Pad so that the data starts on a 64-byte boundary; the header ends with '\n'.
  std::size_t pre = 10;
  std::size_t total = pre + dict.size() + 1;
  if (total + (64 - total % 64) % 64 - pre > 0xFFFF) pre = 12;
  total = pre + dict.size() + 1;
  std::size_t pad = (64 - total % 64) % 64;
  std::string header = dict + std::string(pad, ' ') + "\n";
  std::size_t n = 1;
  for (auto d : shape)
    n *= d;
  std::size_t nbytes = n * elem_size(t);
  std::size_t hl = header.size();
  std::vector<std::uint8_t> out(pre + hl + nbytes);
  const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  std::memcpy(out.data(), magic, 6);
  out[6] = pre == 10 ? 1 : 2;
  out[7] = 0;
  for (std::size_t k = 0; k < pre - 8; ++k)
    out[8 + k] = std::uint8_t(hl >> (8 * k) & 0xFF);
  std::memcpy(out.data() + pre, header.data(), hl);
  if (nbytes) std::memcpy(out.data() + pre + hl, data, nbytes);
  return out;
}

void write(const std::string &path, dtype t, const std::vector<std::size_t> &shape, const void *data) {
  const auto bytes = serialize(t, shape, data);
  io::write_file(path, ".npy output", bytes.data(), bytes.size());
}

void write(const std::string &path, const array &a) {
  std::size_t n = a.size();
  const void *d = nullptr;
  std::size_t have = 0;
  switch (a.type) {
  case dtype::f32:
    d = a.f32.data();
    have = a.f32.size();
    break;
  case dtype::f64:
    d = a.f64.data();
    have = a.f64.size();
    break;
  case dtype::u16:
    d = a.u16.data();
    have = a.u16.size();
    break;
  }
  if (have != n)
    fail(path, "array holds " + std::to_string(have) + " elements but shape " + shape_str(a.shape) +
                   " needs " + std::to_string(n));
  write(path, a.type, a.shape, d);
}

} // namespace bf16emu::npy
