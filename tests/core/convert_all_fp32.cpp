// Tier c: all 2^32 binary32 encodings converted to bfloat16 and to binary16 in each of the 7
// rounding modes, against the fast independent oracle (integer bit manipulation). Stochastic
// rounding uses a random word derived from a hash of the input (all modes get it; the others must
// ignore it). Value bits and flags must match.
//
//   core_convert_all_fp32 [--threads N] [--stride S]   (S: check every S-th input only)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <bf16emu/core.hpp>

#include "fast_oracle.hpp"
#include "progress.hpp"

namespace {

using namespace bf16emu;

std::atomic<std::uint64_t> g_done{0}, g_mismatch{0};
std::mutex g_print;

void check_block(std::uint64_t lo, std::uint64_t hi, std::uint32_t stride) {
  std::uint64_t bad = 0, n = 0;
  for (int m = 0; m < 7; ++m) {
    env e;
    e.mode = round_mode(m);
    for (std::uint64_t i = lo; i < hi; i += stride) {
      const std::uint32_t a = std::uint32_t(i);
      const std::uint32_t rnd = coretest::row_random(a, std::uint32_t(m));
      e.random = rnd;
      const f32 x = f32::from_bits(a);
      const result<bfloat16> rb = convert<bfloat16>(x, e);
      const fast_oracle::res wb = fast_oracle::f32_convert(a, fast_oracle::BF16, m, false, rnd);
      const result<binary16> rh = convert<binary16>(x, e);
      const fast_oracle::res wh = fast_oracle::f32_convert(a, fast_oracle::FP16, m, false, rnd);
      n += 2;
      const bool okb = rb.value.bits == wb.bits && rb.flags == wb.flags;
      const bool okh = rh.value.bits == wh.bits && rh.flags == wh.flags;
      if (!okb || !okh) {
        bad += !okb + !okh;
        if (g_mismatch.load() + bad < 40) {
          std::lock_guard<std::mutex> lk(g_print);
          if (!okb)
            std::fprintf(stderr,
                         "MISMATCH fp32->bf16 %s x=0x%08x random=0x%08x: core 0x%04x flags %u, oracle 0x%04x "
                         "flags %u\n",
                         to_string(e.mode), a, rnd, unsigned(rb.value.bits), unsigned(rb.flags), wb.bits,
                         unsigned(wb.flags));
          if (!okh)
            std::fprintf(stderr,
                         "MISMATCH fp32->fp16 %s x=0x%08x random=0x%08x: core 0x%04x flags %u, oracle 0x%04x "
                         "flags %u\n",
                         to_string(e.mode), a, rnd, unsigned(rh.value.bits), unsigned(rh.flags), wh.bits,
                         unsigned(wh.flags));
        }
      }
    }
  }
  g_done += n;
  g_mismatch += bad;
}

} // namespace

int main(int argc, char **argv) {
  unsigned threads = std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  std::uint32_t stride = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc)
      threads = unsigned(std::atoi(argv[++i]));
    else if (arg == "--stride" && i + 1 < argc)
      stride = std::uint32_t(std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--stride S]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  if (stride < 1) stride = 1;
  const std::uint64_t block = std::uint64_t(1) << 20; // multiple of any power-of-two stride
  const std::uint64_t blocks = (std::uint64_t(1) << 32) / block;
  const std::uint64_t total = 2 * 7 * (((std::uint64_t(1) << 32) + stride - 1) / stride);
  std::fprintf(stderr, "core_convert_all_fp32: %llu conversions (fp32 -> bf16, fp16; 7 modes), %u threads\n",
               (unsigned long long)total, threads);

  coretest::progress_thread progress([&](double s) {
    const double done = double(g_done.load()), rate = done / s;
    std::fprintf(stderr, "  %6.2f%%  %.3g conv/s  elapsed %.0f s  ETA %.0f s  mismatches %llu\n",
                 100.0 * done / double(total), rate, s, rate > 0 ? (double(total) - done) / rate : 0.0,
                 (unsigned long long)g_mismatch.load());
  });
  std::atomic<std::uint64_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (;;) {
        const std::uint64_t b = next.fetch_add(1);
        if (b >= blocks) return;
        // First index in this block that is a multiple of the stride.
        std::uint64_t lo = b * block;
        lo = (lo + stride - 1) / stride * stride;
        check_block(lo, (b + 1) * block, stride);
      }
    });
  for (auto &t : pool)
    t.join();
  progress.stop();
  const double s = progress.elapsed();
  std::printf("core_convert_all_fp32: %llu conversions, %llu mismatches, %.1f s wall, %u threads\n",
              (unsigned long long)g_done.load(), (unsigned long long)g_mismatch.load(), s, threads);
  return g_mismatch.load() == 0 && g_done.load() == total ? 0 : 1;
}
