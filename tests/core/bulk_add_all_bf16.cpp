// Long tier: bulk add_loop on all 2^32 bfloat16 pairs in each of the 7 rounding modes against
// element-wise scalar add (itself checked exhaustively against the independent oracle by
// core_exhaustive). Row a holds the 65536 pairs (a, b); each row gets its own random word for
// stochastic rounding and one of four environments (IEEE; flush both + tininess before
// rounding; saturation + CUDA NaNs; inputs as zero + PyTorch NaNs). Value bits and the OR of
// the flags per row must match.
//
//   core_bulk_add_all_bf16 [--threads N] [--stride S]   (S: check every S-th row only)
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <bf16emu/core.hpp>

#include "progress.hpp"

namespace {

using namespace bf16emu;

env row_env(std::uint32_t a, int m) {
  env e = with_mode(round_mode(m));
  e.random = coretest::row_random(a, std::uint32_t(m));
  switch (a % 4) {
  case 1:
    e.subnormal = subnormals::flush_both;
    e.tiny = tininess::before_rounding;
    break;
  case 2:
    e.saturate = true;
    e.nan = nan_policy::cuda;
    break;
  case 3:
    e.subnormal = subnormals::inputs_as_zero;
    e.nan = nan_policy::pytorch;
    break;
  default: break;
  }
  return e;
}

std::atomic<std::uint64_t> g_done{0}, g_mismatch{0};
std::mutex g_print;

void check_rows(std::uint32_t first, std::uint32_t step) {
  std::vector<bf16> a(65536), b(65536), out(65536);
  for (std::uint32_t j = 0; j < 65536; ++j)
    b[j] = bf16::from_bits(j);
  for (std::uint32_t row = first; row < 65536; row += step) {
    for (auto &x : a)
      x = bf16::from_bits(row);
    std::uint64_t bad = 0;
    for (int m = 0; m < round_mode_count; ++m) {
      const env e = row_env(row, m);
      const std::uint8_t flags = add_loop(a.data(), b.data(), out.data(), 65536, e);
      std::uint8_t want = 0;
      for (std::uint32_t j = 0; j < 65536; ++j) {
        const result<bfloat16> r = add(a[j], b[j], e);
        want |= r.flags;
        if (r.value.bits != out[j].bits) {
          ++bad;
          if (g_mismatch.load() + bad < 40) {
            std::lock_guard<std::mutex> lk(g_print);
            std::fprintf(stderr,
                         "MISMATCH add_loop %s a=0x%04x b=0x%04x random=0x%08x: bulk 0x%04x scalar 0x%04x\n",
                         to_string(e.mode), unsigned(row), unsigned(j), e.random, unsigned(out[j].bits),
                         unsigned(r.value.bits));
          }
        }
      }
      if (flags != want) {
        ++bad;
        std::lock_guard<std::mutex> lk(g_print);
        std::fprintf(stderr, "MISMATCH add_loop flags %s row a=0x%04x: bulk %u scalar %u\n",
                     to_string(e.mode), unsigned(row), unsigned(flags), unsigned(want));
      }
    }
    g_done += 65536ull * round_mode_count;
    g_mismatch += bad;
  }
}

} // namespace

int main(int argc, char **argv) {
  unsigned threads = std::thread::hardware_concurrency();
  std::uint32_t stride = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--threads")
      threads = unsigned(std::atoi(argv[i + 1]));
    else if (k == "--stride")
      stride = std::uint32_t(std::atoi(argv[i + 1]));
  }
  if (threads == 0) threads = 1;
  if (stride == 0) stride = 1;
  const std::uint64_t rows = (65536 + stride - 1) / stride, total = rows * 65536ull * round_mode_count;
  std::fprintf(stderr, "add_loop vs add, bf16, %llu rows x 65536 x 7 modes = %llu cases, %u threads\n",
               static_cast<unsigned long long>(rows), static_cast<unsigned long long>(total), threads);
  coretest::progress_thread progress([&](double t) {
    const double done = double(g_done.load());
    std::fprintf(stderr, "  %.1f%% (%.0f M cases/s, ETA %.0f s), %llu mismatches\n",
                 100.0 * done / double(total), done / t / 1e6,
                 done > 0 ? t * (double(total) - done) / done : 0.0,
                 static_cast<unsigned long long>(g_mismatch.load()));
  });
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(check_rows, t * stride, threads * stride);
  for (auto &t : pool)
    t.join();
  progress.stop();
  std::printf("bulk add_loop bf16: %llu cases, %llu mismatches, %.0f s wall\n",
              static_cast<unsigned long long>(g_done.load()),
              static_cast<unsigned long long>(g_mismatch.load()), progress.elapsed());
  return g_mismatch.load() == 0 && g_done.load() == total ? 0 : 1;
}
