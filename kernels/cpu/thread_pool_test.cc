// The device kernel pool: every index run exactly once, real concurrency, serial
// fallback without a pool, and the thread-count check's message.
#include "kernels/cpu/thread_pool.h"
#include "kernels/device_backend.h"

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    KernelThreadPool pool(threads);
    for (int64_t total : {0, 1, 2, 7, 64, 1000, 1001}) {
      for (int64_t grain : {0, 1, 3, 100}) {
        std::vector<std::atomic<int>> hits(total);
        std::atomic<int> calls{0};
        ParallelFor(&pool, total, grain, [&](int64_t begin, int64_t end) {
          ++calls;
          EXPECT_LT(begin, end);
          // Parts are at least `grain` long unless the whole range is shorter.
          if (total >= grain) {
            EXPECT_GE(end - begin, grain);
          }
          for (int64_t i = begin; i < end; ++i) ++hits[i];
        });
        for (int64_t i = 0; i < total; ++i) ASSERT_EQ(hits[i], 1) << "index " << i << " of " << total;
        EXPECT_LE(calls.load(), threads);
      }
    }
  }
}

TEST(ThreadPoolTest, TasksRunConcurrently) {
  KernelThreadPool pool(2);
  // Each task waits for the other to start: only two threads at once finish this.
  std::promise<void> started[2];
  std::shared_future<void> seen[2] = {started[0].get_future().share(), started[1].get_future().share()};
  std::atomic<int> met{0};
  pool.Run(2, [&](int task) {
    started[task].set_value();
    if (seen[1 - task].wait_for(std::chrono::seconds(10)) == std::future_status::ready) ++met;
  });
  EXPECT_EQ(met.load(), 2);
}

TEST(ThreadPoolTest, WithoutAPoolTheCallerRunsEverything) {
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  ParallelFor(nullptr, 1000, 1, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, ManyRunsBackToBack) {
  KernelThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int run = 0; run < 2000; ++run) {
    pool.Run(1 + run % 6, [&](int task) { sum += task + 1; });
  }
  int64_t want = 0;
  for (int run = 0; run < 2000; ++run) {
    const int tasks = 1 + run % 6;
    want += tasks * (tasks + 1) / 2;
  }
  EXPECT_EQ(sum.load(), want);
}

TEST(ThreadPoolTest, ThreadCountsOutsideTheRangeAreRefused) {
  EXPECT_TRUE(CheckThreadsPerDevice(1, "--threads_per_device").ok());
  EXPECT_TRUE(CheckThreadsPerDevice(kMaxThreadsPerDevice, "--threads_per_device").ok());
  for (int64_t bad : {int64_t{0}, int64_t{-2}, kMaxThreadsPerDevice + 1}) {
    const absl::Status status = CheckThreadsPerDevice(bad, "--threads_per_device");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              absl::StrCat("--threads_per_device=", bad,
                           " is not a valid thread count: a CPU device runs its kernels on 1 to 256 "
                           "threads (its compute thread plus helpers)"));
  }
}

}  // namespace
}  // namespace oneflow
