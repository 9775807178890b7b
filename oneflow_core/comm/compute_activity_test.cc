// ComputeActsRunning counts the ComputeActScopes alive in the process, from any thread.
#include "oneflow_core/comm/compute_activity.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(ComputeActivity, CountsTheScopesAliveOnEveryThread) {
  EXPECT_EQ(ComputeActsRunning(), 0);
  {
    const ComputeActScope first;
    EXPECT_EQ(ComputeActsRunning(), 1);
    {
      const ComputeActScope second;
      EXPECT_EQ(ComputeActsRunning(), 2);
      const ComputeActScope uncounted(/*counted=*/false);  // a communication thread's act
      EXPECT_EQ(ComputeActsRunning(), 2);
    }
    EXPECT_EQ(ComputeActsRunning(), 1);
  }
  EXPECT_EQ(ComputeActsRunning(), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 10000; ++i) {
        const ComputeActScope act;
        EXPECT_GE(ComputeActsRunning(), 1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ComputeActsRunning(), 0);
}

}  // namespace
}  // namespace oneflow
