// Parser harness: the CLI's operand syntax (src/io/number.cpp). Any text either parses or
// throws io::input_error. A parsed finite value must read back to the same bits from its
// exact decimal expansion and from its C hex-float, and a parsed bit pattern from its own hex.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <bf16emu/core.hpp>

#include "io/decimal.hpp"
#include "io/error.hpp"
#include "io/number.hpp"

namespace {

using bf16emu::format_id;
namespace io = bf16emu::io;

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "number parser: %s\n", what.c_str());
  std::abort();
}

std::uint64_t reparse(const std::string &text, format_id f) {
  try {
    return io::parse_operand(text, f).bits;
  } catch (const io::input_error &e) {
    fail("'" + text + "' rejected on re-reading: " + e.what());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  const format_id f = static_cast<format_id>(data[0] % 7);
  const std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
  io::operand op;
  try {
    op = io::parse_operand(text, f);
  } catch (const io::input_error &) {
    return 0;
  }
  if (op.format != f) fail("format changed");
  bf16emu::visit_format(f, [&](auto F) {
    using Fmt = decltype(F);
    const std::uint64_t mask = Fmt::width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << Fmt::width) - 1;
    if (op.bits & ~mask) fail("'" + text + "': bits beyond the format's width");
    const auto v = bf16emu::fp<Fmt>::from_bits(op.bits);
    // The bit pattern itself, as 0x + hex.
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(op.bits));
    if (reparse(hex, f) != op.bits) fail(std::string("'") + hex + "' does not read back");
    if (!v.is_finite()) return;
    const double d = bf16emu::to_native_double(bf16emu::convert<bf16emu::binary64>(v).value); // exact
    const std::string dec = io::exact_decimal(d);
    if (reparse(dec, f) != op.bits)
      fail("'" + text + "' -> " + hex + ": exact decimal '" + dec + "' differs");
    char hf[64];
    std::snprintf(hf, sizeof hf, "%a", d);
    if (reparse(hf, f) != op.bits) fail("'" + text + "' -> " + hex + ": hex-float '" + hf + "' differs");
  });
  return 0;
}
