// Bad input never crashes: random and mutated text/bytes into every reader of the support
// library must either succeed or throw io::input_error (never anything else).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "io/error.hpp"
#include "io/names.hpp"
#include "io/npy.hpp"
#include "io/number.hpp"
#include "io/testfloat.hpp"

using namespace bf16emu;
using namespace bf16emu::io;

namespace {

template <class Fn> void only_input_errors(Fn &&fn) {
  try {
    fn();
  } catch (const input_error &) {
  }
}

} // namespace

TEST(Robustness, OperandText) {
  std::mt19937_64 rng(1);
  const std::string alphabet = "0123456789abcdefABCDEFxXpPeE.+-_ infnaINFNAs\t";
  std::uniform_int_distribution<std::size_t> len(0, 40), pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> fmt(0, 6);
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    for (std::size_t k = len(rng); k > 0; --k)
      s += alphabet[pick(rng)];
    only_input_errors([&] { parse_operand(s, format_id(fmt(rng))); });
  }
  // Extreme exponents and lengths stay fast and exact.
  for (const char *s : {"1e999999999999999999", "1e-999999999999999999", "0x1p999999999", "-0x1p-999999999",
                        "0.0000000000000000000000000000000000000000000000000000000001e-330"})
    for (int f = 0; f < 7; ++f)
      only_input_errors([&] { parse_operand(s, format_id(f)); });
}

TEST(Robustness, TestFloatLines) {
  std::mt19937_64 rng(2);
  const std::string alphabet = "0123456789ABCDEFG \t";
  std::uniform_int_distribution<std::size_t> len(0, 50), pick(0, alphabet.size() - 1);
  const auto &f = testfloat::parse_function("f32_mulAdd");
  for (int i = 0; i < 100000; ++i) {
    std::string s;
    for (std::size_t k = len(rng); k > 0; --k)
      s += alphabet[pick(rng)];
    only_input_errors([&] { testfloat::parse_line(s, f, std::size_t(i)); });
  }
}

TEST(Robustness, NpyImages) {
  std::uint16_t data[12] = {};
  const auto good = npy::serialize(npy::dtype::u16, {3, 4}, data);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), nflips(1, 4);
  for (int i = 0; i < 50000; ++i) {
    auto img = good;
    for (int k = nflips(rng); k > 0; --k)
      img[pos(rng)] = std::uint8_t(byte(rng));
    img.resize(pos(rng) % 3 == 0 ? pos(rng) : img.size());
    only_input_errors([&] { npy::parse(img.data(), img.size(), "mutated.npy"); });
  }
}
