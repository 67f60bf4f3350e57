// `bf16emu attention` on bad input files: every one must exit with status 2 and a message.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
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

// The stderr of the last run, one file per test (ctest runs the tests in parallel).
std::string stderr_path() {
  return dir + "/stderr-" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
}

int run(const std::string &args) {
  const std::string cmd =
      std::string("'") + BF16EMU_CLI + "' attention " + args + " > /dev/null 2> '" + stderr_path() + "'";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string last_stderr() {
  std::ifstream f(stderr_path());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// `attention args` must exit 2 with a one-line message that contains every one of `names`.
void expect_bad(const std::string &args, std::initializer_list<std::string> names) {
  EXPECT_EQ(run(args), 2) << args;
  const std::string err = last_stderr();
  EXPECT_EQ(err.find('\n'), err.size() - 1) << args << ": one line: " << err;
  for (const auto &name : names)
    EXPECT_NE(err.find(name), std::string::npos) << args << ": " << name << " not in: " << err;
}

// The stdout of `attention args --json` (empty, and a failure, unless it exits 0).
std::string run_json(const std::string &args) {
  const std::string out =
      dir + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  const std::string cmd =
      std::string("'") + BF16EMU_CLI + "' attention " + args + " --json > '" + out + "' 2> /dev/null";
  const int st = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << args;
  std::ifstream f(out);
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

// The tiled backward's options: an unknown choice, a block size of 0 or one the tensor-core k
// chunks cannot tile (fa2 policies), and tiled-only options without --bwd tiled are bad input,
// named in the message, exit 2.
TEST(AttentionCli, TiledBackwardBadOptions) {
  const struct {
    const char *args, *names;
  } bad[] = {
      {"--n 32 --backward --bwd tiles", "--bwd"},
      {"--n 32 --bwd tiled --bwd-block-m 0", "--bwd-block-m"},
      {"--n 32 --bwd tiled --bwd-block-n -16", "--bwd-block-n"},
      {"--n 32 --bwd tiled --bwd-block-n 24", "--bwd-block-n"},
      {"--n 32 --bwd tiled --delta lanes", "--delta"},
      {"--n 32 --bwd tiled --dq-order sideways", "--dq-order"},
      {"--n 32 --bwd tiled --bwd-q-order up", "--bwd-q-order"},
      {"--n 32 --backward --dq-order descending", "--bwd tiled"},
  };
  for (const auto &b : bad)
    expect_bad(b.args, {b.names});
}

// dQ, dK, dV exist only with a backward: asking for them without one is bad input (it used to
// exit 0 without writing them), and nothing is written.
TEST(AttentionCli, GradientOutputsNeedABackward) {
  for (const char *opt : {"--out-dq", "--out-dk", "--out-dv"})
    for (const char *bwd : {"", "--bwd reference"}) {
      const std::string path = dir + "/no_backward.npy";
      std::remove(path.c_str());
      expect_bad(std::string("--n 32 --d 8 ") + bwd + " " + opt + " '" + path + "'", {opt, "--backward"});
      EXPECT_FALSE(std::ifstream(path).good()) << opt << " " << bwd;
    }
}

TEST(AttentionCli, TiledBackwardJson) {
  // fp32 allows any block size; fa2 needs multiples of 16
  for (const std::string extra : {"--policy fa2:sm80 --bwd-block-m 16 --bwd-block-n 32",
                                  "--policy fp32 --bwd-block-m 5 --bwd-block-n 7 --delta sequential "
                                  "--dq-order descending --bwd-q-order ascending --causal"}) {
    const std::string out = dir + "/tiled.json";
    const std::string cmd = std::string("'") + BF16EMU_CLI + "' attention --n 40 --d 16 --bwd tiled --json " +
                            extra + " > '" + out + "' 2> /dev/null";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << extra;
    std::ifstream f(out);
    const std::string js((std::istreambuf_iterator<char>(f)), {});
    for (const char *key :
         {"\"backward\":{\"kind\":\"tiled\"", "\"dq_add\":", "\"dv_acc\":", "\"grad_error\":", "\"delta\":"})
      EXPECT_NE(js.find(key), std::string::npos) << extra << ": " << key;
  }
}

TEST(AttentionCli, OutputErrorJsonHasClusteredStatistics) {
  // With two heads the head-clustered standard error exists (two groups), so stderr_heads is a
  // positive number, not 0; every statistic named in docs/attention.md is in the JSON.
  const std::string js = run_json("--n 32 --d 16 --heads 2 --policy fa2:sm80");
  for (const char *key : {"\"nonfinite\":0", "\"first_nonfinite\":-1",
                          "\"stderr_rows\":", "\"z_rows\":", "\"stderr_heads\":", "\"z_heads\":"})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  const auto p = js.find("\"stderr_heads\":");
  ASSERT_NE(p, std::string::npos);
  EXPECT_GT(std::atof(js.c_str() + p + 15), 0.0) << js.substr(p, 40);
}

TEST(AttentionCli, OutputErrorJsonSaysWhichZDescribesOneInput) {
  // Issue 13: z and z_rows test the mean error of this one input, z_heads is over independent
  // heads; the JSON says so beside each (the text output's "z (one input)" and "z (heads)"),
  // for O and for delta, without dropping the existing keys.
  const std::string js = run_json("--n 32 --d 16 --heads 2 --policy paper:autocast --backward");
  auto count = [&](const std::string &s) {
    std::size_t k = 0;
    for (auto p = js.find(s); p != std::string::npos; p = js.find(s, p + 1))
      ++k;
    return k;
  };
  const std::size_t summaries = count("\"mean_signed\":");
  EXPECT_GE(summaries, 2u) << js.substr(0, 200); // O and delta at least
  for (const char *key :
       {"\"z_scope\":\"one input\"", "\"z_rows_scope\":\"one input\"", "\"z_heads_scope\":\"heads\""})
    EXPECT_EQ(count(key), summaries) << key;
  // each label follows its own z
  for (const char *pair :
       {"\"z_scope\":\"one input\",\"stderr_rows\":", "\"z_rows_scope\":\"one input\",\"stderr_heads\":"})
    EXPECT_EQ(count(pair), summaries) << pair;
}

// Sizes (issue 19): the memory a run needs is computed in checked arithmetic before anything
// is allocated; a need above the limit (the available memory, or --max-memory) is bad input
// naming the need and the override, never a crash, std::bad_alloc or a wrapped size.
TEST(AttentionCli, SizesBeyondMemoryAreBadInput) {
  for (const char *args :
       {"--n 4611686018427387904 --d 4", "--n 100000000 --d 1000", "--heads 1000000000 --n 2 --d 2",
        "--batch 4294967296 --heads 4294967296 --n 2 --d 2", "--n 100000 --d 64 --backward",
        "--n 64 --d 16 --max-memory 64K"})
    // "--max-memory to override", or "--max-memory is 64.0 kB" when the limit was given
    expect_bad(args, {"attention needs ", "--max-memory"});
  // the same run with room to spare runs
  EXPECT_EQ(run("--n 64 --d 16 --max-memory 64M"), 0) << last_stderr();
  expect_bad("--n 64 --d 16 --max-memory lots", {"--max-memory", "lots"});
}

// Counts are strict unsigned integers with bounds: no saturation, no sign, no zero where a
// count of at least one is needed; the message names the option.
TEST(AttentionCli, CountsAreStrict) {
  const struct {
    const char *args, *name;
  } bad[] = {
      {"--n 99999999999999999999 --d 4", "--n"},
      {"--n 0", "--n"},
      {"--n -16", "--n"},
      {"--d 0", "--d"},
      {"--heads 0", "--heads"},
      {"--batch -1", "--batch"},
      {"--n 16 --threads -5", "--threads"},
      {"--n 16 --threads 100000", "--threads"},
      {"--n 16 --threads 0", "--threads"},
      {"--n 16 --seed -1", "--seed"},
      {"--n 16 --seed 18446744073709551616", "--seed"},
      {"--n 16 --block-m 0", "--block-m"},
      {"--n 16 --block-n -64", "--block-n"},
      {"--n 16 --heads 2x", "--heads"},
  };
  for (const auto &b : bad)
    expect_bad(b.args, {b.name});
  EXPECT_EQ(run("--n 16 --d 16 --heads 3 --threads 2 --seed 18446744073709551615"), 0) << last_stderr();
}

// Input files that are directories or do not exist: exit 2 naming the option and the path
// (not "basic_filebuf::underflow").
TEST(AttentionCli, DirectoriesAndMissingFilesAreNamed) {
  const auto ok =
      write("ok2.npy", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 16), }", floats(32)));
  const struct {
    std::string args;
    const char *option;
    std::string path;
  } bad[] = {
      {"--q '" + dir + "' --k '" + ok + "' --v '" + ok + "'", "--q", dir},
      {"--q '" + ok + "' --k '" + dir + "' --v '" + ok + "'", "--k", dir},
      {"--q '" + ok + "' --k '" + ok + "' --v '" + dir + "/none.npy'", "--v", dir + "/none.npy"},
      {"--q '" + ok + "' --k '" + ok + "' --v '" + ok + "' --do '" + dir + "' --backward", "--do", dir},
  };
  for (const auto &b : bad) {
    expect_bad(b.args, {b.option, b.path});
    EXPECT_EQ(last_stderr().find("underflow"), std::string::npos) << last_stderr();
  }
}

// The knob names: an unknown value names the option, the token (at most ~80 characters of it)
// and the accepted names.
// Algorithm 1 needs beta > 1: beta = 1 would silently give the unstabilized output.
TEST(AttentionCli, BetaAtMostOneIsRejected) {
  for (const char *b : {"1", "0.5", "0", "-2", "nan", "inf"})
    expect_bad(std::string("--n 16 --variant stabilized --beta ") + b, {"--beta", "> 1"});
  expect_bad("--n 16 --variant stabilized --tie-tol -1e-3", {"--tie-tol", ">= 0"});
  EXPECT_EQ(run("--n 16 --variant stabilized --beta 1.001"), 0) << last_stderr();
}

TEST(AttentionCli, UnknownNamesAreNamed) {
  const struct {
    const char *args, *option, *accepted;
  } bad[] = {
      {"--n 16 --kv-order sideways", "--kv-order", "forward, reverse"},
      {"--n 16 --exp fast", "--exp", "rn, poly"},
      {"--n 16 --row-sum tree", "--row-sum", "sequential, quad"},
      {"--n 16 --fma maybe", "--fma", "on, off"},
      {"--n 16 --normalize scale", "--normalize", "reciprocal, divide"},
      {"--n 16 --variant flash", "--variant", "standard, fa2, stabilized"},
  };
  for (const auto &b : bad)
    expect_bad(b.args, {b.option, b.accepted});
  EXPECT_EQ(run("--n 16 --exp " + std::string(500, 'x')), 2);
  EXPECT_LT(last_stderr().size(), 300u) << last_stderr();
}

namespace {
// stdout of `attention args` (exit status in *rc).
std::string run_stdout(const std::string &args, int *rc) {
  const std::string out =
      dir + "/stdout-" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
  const std::string cmd =
      std::string("'") + BF16EMU_CLI + "' attention " + args + " > '" + out + "' 2> '" + stderr_path() + "'";
  const int st = std::system(cmd.c_str());
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(out);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
} // namespace

// --site-precision: a bad token exits 2 naming it; the JSON ledger records the canonical spec
// (sites in ledger order) only when one is given.
TEST(AttentionCli, SitePrecisionBadTokensAreNamed) {
  expect_bad("--n 16 --policy paper --site-precision row_sum=fp33",
             {"--site-precision", "row_sum=fp33", "fp32, exact"});
  expect_bad("--n 16 --policy paper --site-precision rowsum=fp32",
             {"--site-precision", "rowsum=fp32", "row_sum"});
  expect_bad("--n 16 --policy paper --site-precision pv", {"--site-precision", "'pv'"});
  expect_bad("--n 16 --policy paper --site-precision pv=exact,,row_sum=fp32", {"--site-precision", "''"});
  expect_bad("--n 16 --policy paper --site-precision pv=exact,pv=fp32",
             {"--site-precision", "twice", "pv=fp32"});
  expect_bad("--n 16 --policy paper --site-precision pv=exact,", {"--site-precision", "''"});
  expect_bad("--n 16 --policy fa2:sm80 --bwd tiled --site-precision pv=exact",
             {"--site-precision", "--bwd tiled"});
  EXPECT_EQ(run("--n 16 --site-precision pv=" + std::string(500, 'x')), 2);
  EXPECT_LT(last_stderr().size(), 400u) << last_stderr();
}

TEST(AttentionCli, SitePrecisionInTheLedger) {
  int rc = -1;
  const std::string plain = run_stdout("--n 16 --d 16 --policy paper --json", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(plain.find("site_precision"), std::string::npos) << plain;
  const std::string sp =
      run_stdout("--n 16 --d 16 --policy paper --json --site-precision pv=exact,row_sum=fp32", &rc);
  EXPECT_EQ(rc, 0) << last_stderr();
  EXPECT_NE(sp.find("\"site_precision\":\"row_sum=fp32,pv=exact\""), std::string::npos) << sp;
  EXPECT_EQ(sp.find("\"pv\":"), std::string::npos) << "an exact site files no events: " << sp;
  const std::string text =
      run_stdout("--n 16 --d 16 --policy paper --site-precision pv=exact,row_sum=fp32", &rc);
  EXPECT_NE(text.find("site precision: row_sum=fp32,pv=exact"), std::string::npos) << text;
}

// paper:autocast runs with its own tiles (512 x 512, forward key order), causal and stabilized;
// the alias `paper` keeps its name in the ledger; the tiled backward does not model autocast.
TEST(AttentionCli, PaperPolicies) {
  int rc = -1;
  const std::string ac =
      run_stdout("--n 40 --d 16 --policy paper:autocast --causal --variant stabilized --json", &rc);
  EXPECT_EQ(rc, 0) << last_stderr();
  for (const char *s :
       {"\"policy\":\"paper:autocast\"", "\"block_m\":512", "\"block_n\":512", "\"kv_order\":\"forward\""})
    EXPECT_NE(ac.find(s), std::string::npos) << s << " not in " << ac;
  EXPECT_NE(run_stdout("--n 16 --d 16 --policy paper --json", &rc).find("\"policy\":\"paper\""),
            std::string::npos);
  EXPECT_NE(run_stdout("--n 16 --d 16 --policy paper:bf16 --json", &rc).find("\"policy\":\"paper:bf16\""),
            std::string::npos);
  expect_bad("--n 16 --policy paper:autocast --bwd tiled", {"paper:autocast", "--bwd tiled"});
  expect_bad("--n 16 --policy paper:fp8", {"--policy", "paper:fp8", "paper:autocast"});
}
