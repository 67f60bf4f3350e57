// The names of the rounding modes and of the rounding decisions have three spellings that must
// agree: docs/semantics.md (the contract), core/env.hpp's to_string, and the oracle's name()
// (tests/oracle, written from the contract). The page is read at test time; core and oracle are
// paired by what they do on the same inputs, not by enum order, so a renamed, swapped or
// reordered name on either side fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

using namespace coretest;

std::string read_spec() {
  std::ifstream f(BF16EMU_SOURCE_DIR "/docs/semantics.md");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The first column of the table whose header line starts with `header`.
std::vector<std::string> first_column(const std::string &doc, const std::string &header) {
  std::vector<std::string> out;
  std::istringstream in(doc);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      if (line.rfind(header, 0) == 0) {
        inside = true;
        std::getline(in, line); // |---|---|
      }
      continue;
    }
    if (line.empty() || line[0] != '|') break;
    std::string cell = line.substr(1, line.find('|', 1) - 1);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    out.push_back(cell);
  }
  return out;
}

std::vector<std::string> spec_modes() { return first_column(read_spec(), "| mode | result magnitude |"); }
std::vector<std::string> spec_decisions() { return first_column(read_spec(), "| decision | when |"); }

TEST(Names, RoundingModesAsTheSpecSpellsThem) {
  const std::vector<std::string> spec = spec_modes();
  ASSERT_EQ(spec.size(), std::size_t(round_mode_count)) << "docs/semantics.md: Rounding table not found";
  std::set<std::string> core;
  for (int i = 0; i < round_mode_count; ++i) {
    // The oracle declares its modes in the order of the page.
    EXPECT_EQ(oracle::name(oracle::rounding(i)), spec[std::size_t(i)]);
    core.insert(to_string(round_mode(i)));
  }
  EXPECT_EQ(core, std::set<std::string>(spec.begin(), spec.end()));
}

TEST(Names, DecisionsAsTheSpecSpellsThem) {
  const std::vector<std::string> spec = spec_decisions();
  ASSERT_EQ(spec.size(), 8u) << "docs/semantics.md: Trace decision table not found";
  const std::set<std::string> want(spec.begin(), spec.end());
  std::set<std::string> core, orc;
  for (int i = 0; i < 8; ++i)
    core.insert(to_string(decision(i)));
  for (const auto d : {oracle::decision::exact, oracle::decision::down, oracle::decision::up,
                       oracle::decision::tie_down, oracle::decision::tie_up, oracle::decision::overflow_inf,
                       oracle::decision::overflow_max, oracle::decision::flush_zero})
    orc.insert(oracle::name(d));
  EXPECT_EQ(core, want);
  EXPECT_EQ(orc, want);
}

// fp32 -> bf16 on inputs that tell the ten modes apart: kept significand even and odd,
// discarded fraction 0, 1/4, 1/2, 3/4, both signs, three stochastic words.
std::vector<std::uint64_t> core_signature(round_mode m) {
  std::vector<std::uint64_t> sig;
  for (const std::uint32_t k : {0x3F80u, 0x3F81u})
    for (const std::uint32_t f : {0x0000u, 0x4000u, 0x8000u, 0xC000u})
      for (const std::uint32_t s : {0u, 0x80000000u})
        for (const std::uint32_t rnd : {0u, 0x40000006u, 0xC0000003u}) {
          env e = with_mode(m);
          e.random = rnd;
          e.sr_bits = 3; // stochastic_k with 3 bits: not stochastic's rule
          sig.push_back(convert<bfloat16>(fp<binary32>::from_bits(s | (k << 16) | f), e).bits());
        }
  return sig;
}
std::vector<std::uint64_t> oracle_signature(oracle::rounding m) {
  std::vector<std::uint64_t> sig;
  for (const std::uint32_t k : {0x3F80u, 0x3F81u})
    for (const std::uint32_t f : {0x0000u, 0x4000u, 0x8000u, 0xC000u})
      for (const std::uint32_t s : {0u, 0x80000000u})
        for (const std::uint32_t rnd : {0u, 0x40000006u, 0xC0000003u}) {
          oracle::environment e;
          e.mode = m;
          e.random = rnd;
          e.sr_bits = 3;
          sig.push_back(oracle::convert({s | (k << 16) | f, oracle::fp32}, oracle::bf16, e).bits);
        }
  return sig;
}

TEST(Names, CoreAndOracleNameEachModeAlike) {
  for (int i = 0; i < round_mode_count; ++i) {
    const round_mode m = round_mode(i);
    const auto want = core_signature(m);
    std::vector<oracle::rounding> same;
    for (int j = 0; j < oracle::rounding_count; ++j)
      if (oracle_signature(oracle::rounding(j)) == want) same.push_back(oracle::rounding(j));
    ASSERT_EQ(same.size(), 1u) << to_string(m) << ": " << same.size() << " oracle modes behave alike";
    EXPECT_STREQ(to_string(m), oracle::name(same[0])) << "core and oracle name the same rounding differently";
    EXPECT_EQ(oenv(with_mode(m)).mode, same[0])
        << "tests/core/common.hpp maps " << to_string(m) << " to " << oracle::name(oenv(with_mode(m)).mode);
  }
}

TEST(Names, CoreAndOracleNameEachDecisionAlike) {
  struct row {
    std::uint32_t x; // fp32, converted to bf16
    round_mode mode;
    bool saturate, flush;
  };
  const row rows[] = {
      {0x3F800000u, round_mode::nearest_even, false, false}, // 1.0: exact
      {0x3F804000u, round_mode::nearest_even, false, false}, // f = 1/4: down
      {0x3F80C000u, round_mode::nearest_even, false, false}, // f = 3/4: up
      {0x3F808000u, round_mode::nearest_even, false, false}, // f = 1/2, k even: tie_down
      {0x3F818000u, round_mode::nearest_even, false, false}, // f = 1/2, k odd: tie_up
      {0x7F7FFFFFu, round_mode::nearest_even, false, false}, // fp32 max: overflow_inf
      {0x7F7FFFFFu, round_mode::nearest_even, true, false},  // saturated: overflow_max
      {0x00400000u, round_mode::nearest_even, false, true},  // 2^-127, flushed: flush_zero
      {0x3F808000u, round_mode::toward_zero, false, false},  // f = 1/2, not nearest: down
      {0xBF808000u, round_mode::downward, false, false},     // f = 1/2, not nearest: up
  };
  const std::vector<std::string> spec = spec_decisions();
  const std::set<std::string> spelled(spec.begin(), spec.end());
  std::set<std::string> seen;
  for (const row &r : rows) {
    env e = with_mode(r.mode);
    e.saturate = r.saturate;
    e.subnormal = r.flush ? subnormals::flush_outputs : subnormals::ieee;
    last_event ev;
    const auto got = convert<bfloat16>(fp<binary32>::from_bits(r.x), e, ev);
    const oracle::result want = oracle::convert({r.x, oracle::fp32}, oracle::bf16, oenv(e));
    ASSERT_EQ(ev.count, 1) << hex(r.x);
    ASSERT_EQ(std::uint64_t(got.bits()), want.bits) << hex(r.x);
    EXPECT_STREQ(to_string(ev.event.dec), oracle::name(want.dec))
        << hex(r.x) << " " << to_string(r.mode) << ": core and oracle name the same rounding differently";
    EXPECT_EQ(spelled.count(oracle::name(want.dec)), 1u)
        << oracle::name(want.dec) << " is not in docs/semantics.md";
    seen.insert(oracle::name(want.dec));
  }
  EXPECT_EQ(seen, spelled) << "every decision of the page is reached";
}

} // namespace
