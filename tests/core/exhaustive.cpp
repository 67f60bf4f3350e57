// Exhaustive tier: every pair of bfloat16 encodings (2^32 pairs) for add, sub and mul in each of
// the 7 rounding modes, against the fast independent oracle (tests/oracle/fast_oracle.hpp).
// Value bits and all five flags must match. Stochastic rounding uses a random word derived from a
// hash of (a, b, op); the other modes get the same word and must ignore it.
//
//   core_exhaustive [--threads N] [--stride S] [--first A] [--last A] [--ops add,sub,mul]
//                   [--modes 0,1,...,6]
//
// --stride S checks only the first operands a = first, first+S, ... (all b), for a quick sample
// run; --first/--last restrict the first operand to [first, last] (to split or resume a run).
// First operands are processed in increasing order, so an interrupted run has covered a prefix.
// Progress (percentage, rate, ETA) goes to stderr every 10 s. Exit status 0 iff no mismatch.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <bf16emu/core.hpp>

#include "fast_oracle.hpp"
#include "progress.hpp"

namespace {

using namespace bf16emu;

std::uint32_t mix(std::uint32_t a, std::uint32_t b, std::uint32_t op) {
  std::uint64_t x = (std::uint64_t(a) << 16 | b) * 0x9E3779B97F4A7C15ull + op * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return std::uint32_t(x >> 32);
}

const char *op_name(int op) { return op == 0 ? "add" : op == 1 ? "sub" : "mul"; }

std::atomic<std::uint64_t> g_done{0}, g_mismatch{0};
std::atomic<std::uint32_t> g_last_started{0};
std::mutex g_print;

void report(int op, int mode, std::uint32_t a, std::uint32_t b, std::uint32_t rnd, std::uint32_t got,
            unsigned gotf, std::uint32_t want, unsigned wantf) {
  std::lock_guard<std::mutex> lk(g_print);
  std::fprintf(stderr,
               "MISMATCH %s mode=%s a=0x%04x b=0x%04x random=0x%08x: core 0x%04x flags %u, oracle 0x%04x "
               "flags %u\n",
               op_name(op), to_string(round_mode(mode)), a, b, rnd, got, gotf, want, wantf);
}

void check_row(std::uint32_t a, const std::vector<int> &ops, const std::vector<int> &modes) {
  std::uint64_t bad = 0;
  const bf16 x = bf16::from_bits(a);
  for (int op : ops) {
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const std::uint32_t rnd = mix(a, b, std::uint32_t(op));
      const bf16 y = bf16::from_bits(b);
      // The oracle's mode-independent work once per pair; the rounding per mode.
      const fast_oracle::prepared p =
          op == 2 ? fast_oracle::bf16_mul_prepare(a, b) : fast_oracle::bf16_addsub_prepare(a, b, op == 1);
      for (int m : modes) {
        env e;
        e.mode = round_mode(m);
        e.random = rnd;
        result<bfloat16> r;
        if (op == 0)
          r = add(x, y, e);
        else if (op == 1)
          r = sub(x, y, e);
        else
          r = mul(x, y, e);
        const fast_oracle::res w = fast_oracle::finish(p, fast_oracle::BF16, m, false, rnd);
        if (r.value.bits != w.bits || r.flags != w.flags) {
          if (bad < 5 && g_mismatch.load() < 50)
            report(op, m, a, b, rnd, r.value.bits, r.flags, w.bits, w.flags);
          ++bad;
        }
      }
    }
  }
  g_mismatch += bad;
}

std::vector<int> parse_list(const char *s, bool ops) {
  std::vector<int> v;
  std::string str(s), tok;
  for (std::size_t i = 0; i <= str.size(); ++i) {
    if (i == str.size() || str[i] == ',') {
      if (ops)
        v.push_back(tok == "add" ? 0 : tok == "sub" ? 1 : tok == "mul" ? 2 : -1);
      else
        v.push_back(std::atoi(tok.c_str()));
      if (v.back() < 0 || v.back() > (ops ? 2 : 6)) {
        std::fprintf(stderr, "bad list item '%s'\n", tok.c_str());
        std::exit(2);
      }
      tok.clear();
    } else {
      tok += str[i];
    }
  }
  return v;
}

} // namespace

int main(int argc, char **argv) {
  unsigned threads = std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  std::uint32_t stride = 1, first = 0, last = 65535;
  std::vector<int> ops{0, 1, 2}, modes{0, 1, 2, 3, 4, 5, 6};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc)
      threads = unsigned(std::atoi(argv[++i]));
    else if (arg == "--stride" && i + 1 < argc)
      stride = std::uint32_t(std::atoi(argv[++i]));
    else if (arg == "--first" && i + 1 < argc)
      first = std::uint32_t(std::atoi(argv[++i]));
    else if (arg == "--last" && i + 1 < argc)
      last = std::uint32_t(std::atoi(argv[++i]));
    else if (arg == "--ops" && i + 1 < argc)
      ops = parse_list(argv[++i], true);
    else if (arg == "--modes" && i + 1 < argc)
      modes = parse_list(argv[++i], false);
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--stride S] [--first A] [--last A] [--ops add,sub,mul] "
                   "[--modes 0,..,6]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  if (stride < 1) stride = 1;

  std::vector<std::uint32_t> rows;
  if (last > 65535) last = 65535;
  for (std::uint32_t a = first; a <= last; a += stride)
    rows.push_back(a);
  const std::uint64_t per_row = 65536ull * ops.size() * modes.size();
  const std::uint64_t total = per_row * rows.size();
  std::fprintf(stderr,
               "core_exhaustive: %zu first operands x 65536 x %zu ops x %zu modes = %llu cases, %u threads\n",
               rows.size(), ops.size(), modes.size(), (unsigned long long)total, threads);

  coretest::progress_thread progress([&](double s) {
    const double done = double(g_done.load());
    const double rate = done / s;
    std::fprintf(stderr,
                 "  %6.2f%%  %llu cases  %.3g cases/s  elapsed %.0f s  ETA %.0f s  a<=0x%04x started  "
                 "mismatches %llu\n",
                 100.0 * done / double(total), (unsigned long long)done, rate, s,
                 rate > 0 ? (double(total) - done) / rate : 0.0, unsigned(g_last_started.load()),
                 (unsigned long long)g_mismatch.load());
  });
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (;;) {
        const std::size_t i = next.fetch_add(1);
        if (i >= rows.size()) return;
        g_last_started = rows[i];
        check_row(rows[i], ops, modes);
        g_done += per_row;
      }
    });

  for (auto &t : pool)
    t.join();
  progress.stop();

  const double s = progress.elapsed();
  std::printf("core_exhaustive: %llu cases, %llu mismatches, %.1f s wall, %u threads\n",
              (unsigned long long)g_done.load(), (unsigned long long)g_mismatch.load(), s, threads);
  return g_mismatch.load() == 0 && g_done.load() == total ? 0 : 1;
}
