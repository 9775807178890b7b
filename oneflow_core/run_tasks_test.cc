#include "oneflow_core/run_tasks.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(RunTasksOnThreads, CallsEveryIndexOnce) {
  for (int threads : {1, 2, 8}) {
    std::vector<std::atomic<int>> calls(1000);
    RunTasksOnThreads(1000, threads, [&](int i) { calls[i].fetch_add(1); });
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(calls[i].load(), 1) << "index " << i << ", " << threads << " threads";
  }
}

TEST(RunTasksOnThreads, NoTasksCallsNothing) {
  int calls = 0;
  RunTasksOnThreads(0, 4, [&](int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(RunChecksOnThreads, AllPassingIsOk) {
  std::vector<std::atomic<int>> calls(64);
  EXPECT_TRUE(RunChecksOnThreads(64, [&](int i) {
                calls[i].fetch_add(1);
                return absl::OkStatus();
              }).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(calls[i].load(), 1) << "index " << i;
}

// The error of the lowest failing index, as a loop in order would return, even when a
// later index fails first.
TEST(RunChecksOnThreads, ReturnsTheLowestFailingIndex) {
  const absl::Status status = RunChecksOnThreads(64, [](int i) {
    if (i == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // Fails last.
      return absl::FailedPreconditionError("device 3");
    }
    if (i == 7 || i == 40) return absl::FailedPreconditionError(absl::StrCat("device ", i));
    return absl::OkStatus();
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "device 3");
}

}  // namespace
}  // namespace oneflow
