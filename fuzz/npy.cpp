// Parser harness: .npy images (src/io/npy.cpp). Any input either parses or throws
// io::input_error; nothing else may escape, crash or leak. A parsed array must
// serialize and parse back to the same shape, dtype and bits.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "io/error.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace npy = bf16emu::npy;
  npy::array a;
  try {
    a = npy::parse(data, size, "fuzz.npy");
  } catch (const bf16emu::io::input_error &) {
    return 0;
  }
  const void *payload = a.type == npy::dtype::f32   ? static_cast<const void *>(a.f32.data())
                        : a.type == npy::dtype::f64 ? static_cast<const void *>(a.f64.data())
                                                    : static_cast<const void *>(a.u16.data());
  const std::size_t n = a.size();
  const std::size_t held = a.type == npy::dtype::f32   ? a.f32.size()
                           : a.type == npy::dtype::f64 ? a.f64.size()
                                                       : a.u16.size();
  if (held != n) std::abort();
  const std::vector<std::uint8_t> img = npy::serialize(a.type, a.shape, payload);
  const npy::array b = npy::parse(img.data(), img.size(), "roundtrip.npy");
  if (b.type != a.type || b.shape != a.shape) std::abort();
  const std::size_t bytes = n * (a.type == npy::dtype::f32 ? 4 : a.type == npy::dtype::f64 ? 8 : 2);
  const void *pb = b.type == npy::dtype::f32   ? static_cast<const void *>(b.f32.data())
                   : b.type == npy::dtype::f64 ? static_cast<const void *>(b.f64.data())
                                               : static_cast<const void *>(b.u16.data());
  if (bytes && std::memcmp(payload, pb, bytes) != 0) std::abort();
  // The same image against typed and shaped expectations exercises the checking paths.
  try {
    (void)npy::parse(data, size, "fuzz.npy", npy::expect(npy::dtype::u16, {-1, 4}));
  } catch (const bf16emu::io::input_error &) {
  }
  return 0;
}
