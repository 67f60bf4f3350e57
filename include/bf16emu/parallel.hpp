// bf16emu parallel: the library's one thread primitive. Every layer that runs work on several
// cores (attention heads and row blocks, bias sweeps and searches, the pitfalls' block pairs, the
// GPU runner's host model) calls parallel_for; nothing else under include/ starts a thread.
//
// Determinism: the work is indexed [0, count) and fn(i, worker) is called exactly once per
// index. Which worker runs an index depends on timing, so fn must write its result to a slot
// owned by i (or merge into per-worker state whose merge is exact and order-free, such as the
// ledger's counters and exact sums). Used that way, the bits of every result are the same for
// any thread count. Indices are handed out in increasing order.
//
// Errors: an exception thrown by fn stops the hand-out of new indices; the workers finish the
// index they hold, and the first exception is rethrown in the calling thread.
//
// Threads that cannot be started: when the system refuses a thread (an address-space or
// process-count limit, std::thread throwing std::system_error or std::bad_alloc), parallel_for
// never aborts and never fails: it stops starting threads and runs every index on the workers it
// has (at least the calling thread). By the determinism rule above the bits are the same; only
// the wall time changes. `threads` is a ceiling, not a promise.
//
// Progress: progress(done, count) is called after each finished index, one call at a time
// (under a lock), with done strictly increasing; throttle in the callback, not here.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace bf16emu {

using progress_fn = std::function<void(std::uint64_t done, std::uint64_t total)>;

// The worker count parallel_for uses for `requested` threads over `count` indices:
// 0 means every hardware thread; never more workers than indices, never fewer than 1.
inline unsigned resolve_threads(unsigned requested, std::uint64_t count) noexcept {
  unsigned nt = requested > 0 ? requested : std::thread::hardware_concurrency();
  if (nt < 1) nt = 1;
  if (count < nt) nt = count == 0 ? 1u : static_cast<unsigned>(count);
  return nt;
}

// Shard k of n of the indices [0, total) is k, k + n, k + 2n, ...: the one rule by which work is
// split across processes (bias --shard K/N, the ranks of an MPI run). Its index j is k + j * n;
// this many of them (n > 0).
inline std::uint64_t shard_size(std::uint64_t total, std::uint64_t k, std::uint64_t n) noexcept {
  return total > k ? (total - k - 1) / n + 1 : 0;
}

// Calls fn(i, worker) for every i in [0, count) on resolve_threads(threads, count) workers;
// worker is in [0, that count) and identifies the thread, for per-worker scratch state.
template <class Fn>
void parallel_for(std::uint64_t count, unsigned threads, Fn &&fn, const progress_fn &progress = {}) {
  const unsigned nt = resolve_threads(threads, count);
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex mu;
  std::uint64_t done = 0;
  auto worker = [&](unsigned w) {
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const std::uint64_t i = next.fetch_add(1);
      if (i >= count) return;
      try {
        fn(i, w);
        if (progress) {
          std::lock_guard<std::mutex> lock(mu);
          progress(++done, count);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error) first_error = std::current_exception();
        failed.store(true);
        return;
      }
    }
  };
  if (nt == 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    try {
      pool.reserve(nt - 1);
      for (unsigned w = 1; w < nt; ++w)
        pool.emplace_back(worker, w);
    } catch (const std::system_error &) {
      // No more threads: the ones started, and this one, share the remaining indices.
    } catch (const std::bad_alloc &) {
    }
    worker(0);
    for (auto &t : pool)
      t.join();
  }
  if (first_error) std::rethrow_exception(first_error);
}

} // namespace bf16emu
