// Busy admits one call at a time; DeadlineAfter maps timeouts to deadlines the same way on
// absl time and on the steady clock, saturating rather than overflowing.
#include "oneflow_core/comm/call_guard.h"

#include <atomic>
#include <chrono>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(BusyTest, RefusesASecondEntryUntilTheFirstLeaves) {
  std::atomic<bool> flag{false};
  {
    Busy first(&flag);
    EXPECT_TRUE(first.entered());
    Busy second(&flag);
    EXPECT_FALSE(second.entered());
    // The refused one must not clear the flag the first still holds.
  }
  EXPECT_FALSE(flag.load());
  Busy again(&flag);
  EXPECT_TRUE(again.entered());
}

TEST(BusyTest, ARefusedEntryLeavesTheFlagSet) {
  std::atomic<bool> flag{false};
  Busy first(&flag);
  { Busy second(&flag); }
  EXPECT_TRUE(flag.load());
}

TEST(DeadlineAfterTest, AbslTime) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(DeadlineAfter(now, absl::Seconds(5)), absl::FromUnixSeconds(1005));
  EXPECT_EQ(DeadlineAfter(now, absl::ZeroDuration()), now);
  EXPECT_EQ(DeadlineAfter(now, -absl::Seconds(5)), now);
  EXPECT_EQ(DeadlineAfter(now, absl::InfiniteDuration()), absl::InfiniteFuture());
}

TEST(DeadlineAfterTest, SteadyClock) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  EXPECT_EQ(DeadlineAfter<Clock>(now, absl::Milliseconds(5)), now + std::chrono::milliseconds(5));
  EXPECT_EQ(DeadlineAfter<Clock>(now, absl::ZeroDuration()), now);
  EXPECT_EQ(DeadlineAfter<Clock>(now, -absl::Seconds(1)), now);
  EXPECT_EQ(DeadlineAfter<Clock>(now, absl::InfiniteDuration()), Clock::time_point::max());
  // Finite, but past what the clock can represent from now: saturates instead of wrapping.
  EXPECT_EQ(DeadlineAfter<Clock>(now, absl::Hours(24 * 365 * 400)), Clock::time_point::max());
}

}  // namespace
}  // namespace oneflow
