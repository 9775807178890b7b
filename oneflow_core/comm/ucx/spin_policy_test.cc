// When a UCX wait spins (spin_policy.h): while at least half of the communicator's recent
// waits ended within kSpinWait.
#include "oneflow_core/comm/ucx/spin_policy.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace ucx_backend {
namespace {

constexpr absl::Duration kShort = absl::Microseconds(3);    // a peer already sending
constexpr absl::Duration kLong = absl::Milliseconds(4);     // a peer still computing

TEST(SpinPolicy, ANewCommunicatorSpins) {
  EXPECT_EQ(SpinPolicy().Spin(), kSpinWait);
}

TEST(SpinPolicy, StopsSpinningAfterLongWaitsAndResumesAfterShortOnes) {
  SpinPolicy policy;
  int long_waits = 0;
  while (policy.Spin() > absl::ZeroDuration()) {
    policy.Record(kLong);
    ++long_waits;
    ASSERT_LT(long_waits, 100);
  }
  // 1 * (7/8)^n < 1/2 first at n = 6: a few calls, not one unlucky wait.
  EXPECT_EQ(long_waits, 6);
  int short_waits = 0;
  while (policy.Spin() == absl::ZeroDuration()) {
    policy.Record(kShort);
    ++short_waits;
    ASSERT_LT(short_waits, 100);
  }
  EXPECT_GE(short_waits, 1);
  EXPECT_LE(short_waits, 6);
  EXPECT_EQ(policy.Spin(), kSpinWait);
}

TEST(SpinPolicy, AWaitOfExactlyTheSpinWindowIsShort) {
  SpinPolicy policy;
  for (int i = 0; i < 50; ++i) policy.Record(kSpinWait);
  EXPECT_EQ(policy.Spin(), kSpinWait);
  for (int i = 0; i < 50; ++i) policy.Record(kSpinWait + absl::Microseconds(1));
  EXPECT_EQ(policy.Spin(), absl::ZeroDuration());
}

// Mostly short waits with an occasional long one (a peer descheduled now and then) keep
// the spin; mostly long ones with an occasional short one do not.
TEST(SpinPolicy, FollowsTheMajorityOfRecentWaits) {
  SpinPolicy mostly_short;
  SpinPolicy mostly_long;
  for (int i = 0; i < 64; ++i) {
    mostly_short.Record(i % 4 == 3 ? kLong : kShort);
    mostly_long.Record(i % 4 == 3 ? kShort : kLong);
  }
  EXPECT_EQ(mostly_short.Spin(), kSpinWait);
  EXPECT_EQ(mostly_long.Spin(), absl::ZeroDuration());
}

}  // namespace
}  // namespace ucx_backend
}  // namespace oneflow
