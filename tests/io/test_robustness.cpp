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

// A bad token is quoted by its first 80 characters and its length, never whole: a 10 MB token
// gives a message of a few hundred bytes (the message sizes below are bounds, not exact sizes).
TEST(Robustness, LongTokensAreCut) {
  const std::size_t big = 10 * 1024 * 1024;
  auto message = [](auto &&fn) -> std::string {
    try {
      fn();
    } catch (const input_error &e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string g(big, 'G'), ones(big, '1'), q(big, 'q');
  std::string counted = "("; // appended, not "(" + ...: GCC 12 warns falsely (-Wrestrict) on that
  counted += std::to_string(big) + " characters)";
  const auto &add = testfloat::parse_function("f32_add");
  const std::string msgs[] = {
      message([&] { parse_operand(g, format_id::fp32); }),
      message([&] { parse_operand("0x" + g.substr(2), format_id::bf16); }),
      message([&] { parse_uint(ones, 0xFFFFFFFFu, "--random"); }),
      message([&] { parse_format(q); }),
      message([&] { parse_mode(q); }),
      message([&] { testfloat::parse_function(q); }),
      message([&] { testfloat::parse_line(g + " 3F800000 3F800000 00", add, 1); }),
      message([&] { testfloat::parse_line("3F800000 3F800000 3F800000 " + g, add, 1); }),
      message([&] { testfloat::parse_line("3F800000 3F800000 3F800000 00 " + g, add, 1); }),
      message([&] { testfloat::parse_line("3F800000 " + g, add, 1); }),
  };
  for (const std::string &m : msgs) {
    EXPECT_NE(m, "(no error)");
    EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
    EXPECT_NE(m.find(counted), std::string::npos) << m.substr(0, 400);
  }
  // A short token is quoted whole, without a count.
  const std::string m = message([&] { parse_format("fp7"); });
  EXPECT_NE(m.find("'fp7'"), std::string::npos) << m;
  EXPECT_EQ(m.find("characters)"), std::string::npos) << m;
}
