// Helpers shared by the long core tiers: a progress thread that calls report(elapsed
// seconds) every 10 s until stop() (or destruction), so a multi-hour run shows rate and ETA
// on stderr; and the hash that gives each (input, mode) row its stochastic random word.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace coretest {

// A 32-bit word from (a, m) (splitmix64-style finaliser): the env::random of a row.
inline std::uint32_t row_random(std::uint32_t a, std::uint32_t m) {
  std::uint64_t x = (std::uint64_t(a) + (std::uint64_t(m) << 32)) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return std::uint32_t(x >> 32);
}

class progress_thread {
public:
  explicit progress_thread(std::function<void(double)> report)
      : t0_(std::chrono::steady_clock::now()), report_(std::move(report)), thread_([this] { run(); }) {}
  progress_thread(const progress_thread &) = delete;
  progress_thread &operator=(const progress_thread &) = delete;
  ~progress_thread() { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      finished_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

private:
  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!cv_.wait_for(lk, std::chrono::seconds(10), [this] { return finished_; }))
      report_(elapsed());
  }

  std::chrono::steady_clock::time_point t0_;
  std::function<void(double)> report_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread thread_; // last: starts after every member it uses
};

} // namespace coretest
