// `bf16emu attention` on bad input files: every one must exit with status 2 and a message.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

const std::string dir = BF16EMU_TEST_DIR;

// A .npy v1.0 image: magic, version, header length, the dict padded with spaces and '\n' to
// a multiple of 64 bytes in total, then `payload`.
std::string npy_image(const std::string &dict, const std::string &payload) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64 != 0)
    h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += char(1), s += char(0);
  s += char(h.size() & 0xff), s += char(h.size() >> 8);
  return s + h + payload;
}

std::string write(const std::string &name, const std::string &bytes) {
  const std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

int run(const std::string &args) {
  const std::string cmd =
      std::string("'") + BF16EMU_CLI + "' attention " + args + " > /dev/null 2> '" + dir + "/stderr.txt'";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string last_stderr() {
  std::ifstream f(dir + "/stderr.txt");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int run_qkv(const std::string &p) { return run("--q '" + p + "' --k '" + p + "' --v '" + p + "'"); }

std::string floats(int n) { return std::string(std::size_t(4 * n), '\0'); }

} // namespace

TEST(AttentionCli, WrongMagic) {
  EXPECT_EQ(run_qkv(write("magic.npy", "NOTNPY" + std::string(200, ' '))), 2);
  EXPECT_NE(last_stderr().find("magic.npy"), std::string::npos) << last_stderr();
}

TEST(AttentionCli, UnsupportedDtype) {
  const auto p = write("dtype.npy",
                       npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 16), }", floats(32)));
  EXPECT_EQ(run_qkv(p), 2);
}

TEST(AttentionCli, Truncated) {
  const auto p = write("trunc.npy",
                       npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 16), }", floats(5)));
  EXPECT_EQ(run_qkv(p), 2);
}

TEST(AttentionCli, WrongRank) {
  const auto p =
      write("rank.npy", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (32,), }", floats(32)));
  EXPECT_EQ(run_qkv(p), 2);
  EXPECT_NE(last_stderr().find("2-d"), std::string::npos) << last_stderr();
}

TEST(AttentionCli, ShapeMismatch) {
  const auto a =
      write("a.npy", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 16), }", floats(32)));
  const auto b =
      write("b.npy", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), }", floats(64)));
  EXPECT_EQ(run("--q '" + a + "' --k '" + b + "' --v '" + a + "'"), 2);
}

TEST(AttentionCli, MissingFile) { EXPECT_EQ(run_qkv(dir + "/does_not_exist.npy"), 2); }

TEST(AttentionCli, BadOptions) {
  EXPECT_EQ(run("--n 16 --policy fa2:sm70"), 2); // no BF16 tensor cores on sm70
  EXPECT_EQ(run("--n 16 --variant flash"), 2);
  EXPECT_EQ(run("--n 16 --trace-element 16,0"), 2);
  EXPECT_EQ(run("--n 32 --block-n 24"), 2); // not a multiple of the tensor-core k
}

TEST(AttentionCli, GoodFilesRun) {
  // 2 x 16 zeros in every tensor: a valid (if dull) input; bf16 bits as uint16 too
  const auto f =
      write("ok.npy", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 16), }", floats(32)));
  const auto u = write("ok16.npy", npy_image("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 16), }",
                                             std::string(64, '\0')));
  EXPECT_EQ(run_qkv(f), 0);
  EXPECT_EQ(run_qkv(u), 0);
  EXPECT_EQ(run("--q '" + f + "' --k '" + u + "' --v '" + f + "' --out-o '" + dir + "/o.npy'"), 0);
}
