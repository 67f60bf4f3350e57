// bf16emu io: NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0).
//
// Supported dtypes (little-endian, C order, any shape including 0-d):
//   '<f4' float32, '<f8' float64, '<u2' uint16 (bfloat16 or fp16 bit patterns).
// ('|u1'/'<i4' etc. are rejected with a clear message.)
//
// Every failure throws io::input_error (src/io/error.hpp) whose message starts
// with the file name and says what is wrong: missing file, wrong magic, unsupported
// version, bad header, unsupported dtype, Fortran order, shape mismatch, truncated data.
//
//   #include "io/npy.hpp"
//   namespace npy = bf16emu::npy;
//   npy::array q = npy::read("q.npy", {npy::dtype::u16, {-1, 64}});  // any rows, 64 cols
//   const std::uint16_t *bits = q.u16.data();  // row-major, q.shape = {rows, 64}
//   npy::write("out.npy", npy::dtype::f32, {rows, 64}, out.data());
//   npy::write("o.npy", arr);                                        // or a whole array
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace bf16emu::npy {

enum class dtype { f32, f64, u16 };

// "<f4", "<f8", "<u2".
const char *descr(dtype t) noexcept;

struct array {
  dtype type = dtype::f32;
  std::vector<std::size_t> shape; // empty = 0-d (one element)
  // Exactly one of these holds the data (the one matching `type`), row-major.
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<std::uint16_t> u16;

  // Product of the shape (1 for 0-d).
  std::size_t size() const noexcept;
  // Element i as a double: exact for f32/f64; the integer value for u16 (bit pattern).
  double value(std::size_t i) const;
};

// What the caller expects. dims: -1 matches any extent; an empty `dims` with
// any_shape = true accepts every shape. type_any accepts every supported dtype.
struct expect {
  bool type_any = true;
  dtype type = dtype::f32;
  bool any_shape = true;
  std::vector<long long> dims;

  expect() = default;
  expect(dtype t) : type_any(false), type(t) {}
  expect(dtype t, std::vector<long long> d)
      : type_any(false), type(t), any_shape(false), dims(std::move(d)) {}
};

// Reads a .npy file. `name` in messages is the path.
array read(const std::string &path, const expect &want = {});

// Reads one .npy image from `in` and no more: the preamble, a header of at most max_header_bytes,
// and exactly the data its shape and dtype declare, after the size guard (io/memory.hpp) has
// accepted them (max_memory 0: the memory available). Anything after the data is not read.
// /dev/zero or /dev/urandom fails on the magic, a lying header on the guard.
inline constexpr std::uint64_t max_header_bytes = std::uint64_t{1} << 20;
std::vector<std::uint8_t> read_image(std::istream &in, const std::string &name, std::uint64_t max_memory = 0);

// Parses a .npy image held in memory (for fuzzers and tests); `name` is used in messages.
array parse(const std::uint8_t *data, std::size_t size, const std::string &name, const expect &want = {});

// Writes a version 1.0 file (2.0 if the header needs it). `data` holds product(shape)
// elements of the dtype's C type (float, double, std::uint16_t). Throws input_error
// naming the path when the file cannot be written.
void write(const std::string &path, dtype t, const std::vector<std::size_t> &shape, const void *data);
void write(const std::string &path, const array &a);

// The bytes write() would produce (header + data).
std::vector<std::uint8_t> serialize(dtype t, const std::vector<std::size_t> &shape, const void *data);

} // namespace bf16emu::npy
