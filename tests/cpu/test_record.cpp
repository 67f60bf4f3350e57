// The writer and reader of recorded CPU outputs (src/io/cpu_record.hpp, `cpu-probe --save`) on
// synthetic data, since this machine may lack the instructions:
//   - the committed Zen 5 files read and written back are byte-identical (the same format);
//   - a line by hand, with the "=" compaction;
//   - save_records writes a folder the checker program reads (CTest cpu_recorded_check_saved:
//     results = the model's, so 0 mismatches; cpu_recorded_check_saved_mismatch: one result
//     flipped, so the checker fails), and refuses a non-empty folder unless forced, keeping the
//     user's files.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "io/cpu_record.hpp"
#include "io/error.hpp"

namespace {

namespace io = bf16emu::io;
namespace fs = std::filesystem;

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Deterministic inputs: bf16 patterns in the low 16 bits, fp32 patterns whole (splitmix64).
std::uint64_t mix(std::uint64_t &x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// `lines` lines of `what` whose three results are the model's.
io::record_table synthetic(io::recorded what, int lines, std::uint64_t seed) {
  const io::record_layout &l = io::layout_of(what);
  io::record_table t;
  t.what = what;
  for (int r = 0; r < lines; ++r) {
    std::vector<std::uint32_t> in(std::size_t(l.inputs));
    for (int i = 0; i < l.inputs; ++i)
      in[std::size_t(i)] = std::uint32_t(mix(seed)) & (i >= l.wide_from ? 0xFFFFFFFFu : 0xFFFFu);
    const std::uint32_t d = io::model_output(what, in);
    t.in.push_back(in);
    t.out.push_back({d, d, d});
  }
  return t;
}

std::vector<io::record_table> all_tables() {
  std::vector<io::record_table> v;
  std::uint64_t seed = 1;
  for (const io::record_layout &l : io::record_layouts)
    v.push_back(synthetic(l.what, 512, seed++));
  return v;
}

TEST(Record, ZenFilesRoundTripByteForByte) {
  for (const io::recorded what : {io::recorded::vdpbf16ps, io::recorded::vcvtneps2bf16}) {
    const io::record_table t = io::read_record(BF16EMU_CPU_DATA, what);
    EXPECT_EQ(t.in.size(), 32768u);
    std::ostringstream back;
    io::write_record(back, t);
    EXPECT_EQ(back.str(), slurp(std::string(BF16EMU_CPU_DATA) + "/" + io::layout_of(what).file));
    EXPECT_TRUE(io::check_record(t).ok());
  }
}

TEST(Record, LineByHand) {
  // VDPBF16PS 1*1 + 1*1 + 0 = 2; results 2, 2, then (invented) 1: "=" for the repeat only.
  io::record_table t{
      io::recorded::vdpbf16ps, {{0x3f80, 0x3f80, 0x3f80, 0x3f80, 0}}, {{0x40000000, 0x40000000, 0x3f800000}}};
  std::ostringstream s;
  io::write_record(s, t);
  EXPECT_EQ(s.str(), "3f80 3f80 3f80 3f80 00000000 40000000 = 3f800000\n");
  EXPECT_EQ(io::model_output(io::recorded::vdpbf16ps, t.in[0]), 0x40000000u);
  const io::record_check c = io::check_record(t);
  EXPECT_EQ(c.mismatches[2], 1);
  EXPECT_EQ(c.mismatches[0] + c.mismatches[1], 0);
  // VCVTNE2PS2BF16 / VCVTNEPS2BF16: 0x3f808000 is a tie, to even 0x3f80; 0x3f818000 up to 0x3f82.
  EXPECT_EQ(io::model_output(io::recorded::vcvtne2ps2bf16, {0x3f808000}), 0x3f80u);
  EXPECT_EQ(io::model_output(io::recorded::vcvtneps2bf16, {0x3f818000}), 0x3f82u);
}

TEST(Record, SavedFoldersForTheChecker) {
  const std::string tmp = BF16EMU_TEST_TMP;
  const std::vector<io::record_table> tables = all_tables();
  for (const char *name : {"saved_model", "saved_flipped"}) {
    const std::string dir = tmp + "/" + name;
    fs::remove_all(dir);
    std::vector<io::record_table> t = tables;
    if (std::string(name) == "saved_flipped") t[3].out[100][1] ^= 1; // TDPBF16PS, MXCSR 0x7f80
    const std::vector<std::string> written = io::save_records(dir, t, "# synthetic (model outputs)\n", false);
    EXPECT_EQ(written.size(), std::size(io::record_layouts) + 1); // and README.md
    for (std::size_t i = 0; i < t.size(); ++i) { // the checker's reader gives back what was written
      const io::record_table back = io::read_record(dir, t[i].what);
      EXPECT_EQ(back.in, t[i].in);
      EXPECT_EQ(back.out, t[i].out);
    }
  }
}

TEST(Record, RefusesAFolderThatIsNotEmpty) {
  const std::string dir = std::string(BF16EMU_TEST_TMP) + "/saved_refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/mine.txt") << "keep\n";
  const std::vector<io::record_table> t{synthetic(io::recorded::vdpbf16ps, 4, 9)};
  try {
    io::save_records(dir, t, "x\n", false);
    ADD_FAILURE() << "wrote into a non-empty folder";
  } catch (const io::input_error &e) {
    EXPECT_NE(std::string(e.what()).find("is not empty (1 entries); --force"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir + "/vdpbf16ps.txt"));
  io::save_records(dir, t, "x\n", true); // forced: written beside the user's file, which stays
  EXPECT_EQ(slurp(dir + "/mine.txt"), "keep\n");
  EXPECT_EQ(io::read_record(dir, io::recorded::vdpbf16ps).in, t[0].in);
  for (const std::string &bad : {dir + "/mine.txt", dir + "/no/such"}) {
    EXPECT_THROW(io::check_record_dir(bad, true), io::input_error) << bad;
  }
}

TEST(Record, MalformedLinesNameTheLine) {
  const std::string dir = std::string(BF16EMU_TEST_TMP) + "/saved_malformed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::pair<const char *, const char *> cases[] = {
      {"1850f25a 1851 = =\n1850f25a 1851 =\n", ":2: expected 4 fields"},
      {"1850f25a = = =\n",
       ":1: result 1 '=' is not hex of at most 4 digits (the first result cannot be '=')"},
      {"1850f25a 18510 = =\n", ":1: result 1 '18510' is not hex of at most 4 digits"},
      {"0x1850f25a 1851 = =\n", ":1: input 1 '0x1850f25a' is not hex of at most 8 digits"},
      {"", ": no lines"},
  };
  for (const auto &[text, want] : cases) {
    std::ofstream(dir + "/vcvtneps2bf16.txt") << text;
    try {
      io::read_record(dir, io::recorded::vcvtneps2bf16);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const io::input_error &e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

} // namespace
