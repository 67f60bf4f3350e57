// Parser harness: TestFloat test-case lines (src/io/testfloat.cpp). Any line either parses
// or throws io::input_error; a parsed line must format and parse back to the same fields,
// and evaluating its operands with the core must not fail.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <bf16emu/core.hpp>

#include "io/error.hpp"
#include "io/testfloat.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  namespace io = bf16emu::io;
  namespace tf = bf16emu::testfloat;
  if (size < 2) return 0;
  static const char *const names[] = {"f32_add",  "f32_sub",     "f32_mul",     "f32_mulAdd", "f32_div",
                                      "f32_sqrt", "f32_to_bf16", "bf16_to_f32", "f32_to_f16", "f16_to_f32"};
  const tf::function *fn = tf::find_function(names[data[0] % 10]);
  if (!fn) std::abort();
  bf16emu::round_mode mode = bf16emu::round_mode::nearest_even;
  static const char *const opts[] = {"-rnear_even", "-rminMag", "-rmin", "-rmax", "-rnear_maxMag", "-rodd"};
  if (!tf::rounding_option(opts[data[1] % 6], mode)) std::abort();
  const std::string text(reinterpret_cast<const char *>(data + 2), size - 2);
  tf::line l;
  try {
    l = tf::parse_line(text, *fn, 1);
  } catch (const io::input_error &) {
    return 0;
  }
  const std::string again = tf::format_line(*fn, l);
  tf::line m;
  try {
    m = tf::parse_line(again, *fn, 1);
  } catch (const io::input_error &e) {
    std::fprintf(stderr, "formatted line '%s' rejected: %s\n", again.c_str(), e.what());
    std::abort();
  }
  for (int i = 0; i < 3; ++i)
    if (l.ops[i] != m.ops[i]) std::abort();
  if (l.result != m.result || l.flags != m.flags) std::abort();
  if (tf::from_bf16emu_flags(tf::to_bf16emu_flags(l.flags & 31)) != (l.flags & 31)) std::abort();
  (void)tf::evaluate(*fn, l.ops, bf16emu::with_mode(mode));
  return 0;
}
