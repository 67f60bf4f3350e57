// parallel_for when the system refuses threads (issue 46): it stops starting threads and runs
// every index on the workers it has, exactly once, and never aborts (include/bf16emu/parallel.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bf16emu/parallel.hpp>

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true; // a sanitizer's shadow memory does not fit an address-space cap
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

// In a forked child under a 4 GiB address-space cap (1024 thread stacks of 8 MiB do not fit):
// 0 when every index ran exactly once on fewer workers than asked, 1 when one ran twice or
// never, 2 when every thread was granted (the cap did not bite: nothing was tested).
int child() {
  const rlimit cap{rlim_t(1) << 32, rlim_t(1) << 32};
  if (setrlimit(RLIMIT_AS, &cap) != 0) return 3;
  std::vector<std::atomic<int>> hits(1 << 16);
  std::atomic<unsigned> workers{0};
  bf16emu::parallel_for(hits.size(), 1024, [&](std::uint64_t i, unsigned w) {
    hits[i].fetch_add(1);
    unsigned seen = workers.load();
    while (w + 1 > seen && !workers.compare_exchange_weak(seen, w + 1)) {
    }
    if (i == 0) usleep(200000); // the others start meanwhile (or fail to)
  });
  for (const auto &h : hits)
    if (h.load() != 1) return 1;
  return workers.load() < 1024 ? 0 : 2;
}

} // namespace

TEST(Parallel, RefusedThreadsRunTheRestOnTheOthers) {
  if (sanitized) GTEST_SKIP() << "an address-space cap does not fit a sanitizer's shadow memory";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(child());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status) << " (abort: 6)";
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "every thread was granted under the cap";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: an index ran twice or never; 3: setrlimit failed";
}
