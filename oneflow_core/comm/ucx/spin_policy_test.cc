// When a UCX wait spins (spin_policy.h): while at least half of the communicator's recent
// spinning waits ended within kSpinWait, and every kProbeEvery-th wait otherwise; never
// while the process runs compute acts.
#include "oneflow_core/comm/ucx/spin_policy.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace ucx_backend {
namespace {

constexpr absl::Duration kShort = absl::Microseconds(3);  // a peer already sending
constexpr absl::Duration kLong = absl::Milliseconds(4);   // a peer still computing

// Runs `waits` waits that take `waited` each when they spin (as UcxExchange::WaitFor
// records them); returns how many of them spun.
int Waits(SpinPolicy& policy, int waits, absl::Duration waited) {
  int spun = 0;
  for (int i = 0; i < waits; ++i) {
    if (policy.NextSpin() == absl::ZeroDuration()) continue;
    ++spun;
    policy.Record(waited);
  }
  return spun;
}

TEST(SpinPolicy, ANewCommunicatorSpins) {
  SpinPolicy policy;
  EXPECT_EQ(policy.NextSpin(), kSpinWait);
}

// While compute acts run (compute_activity.h) no wait spins, not even a new
// communicator's or a probe, and those waits leave the probes' count alone: once compute
// stops, the policy is where it was.
TEST(SpinPolicy, NoWaitSpinsWhileTheProcessComputes) {
  SpinPolicy policy;
  EXPECT_EQ(policy.NextSpin(/*compute_acts_running=*/1), absl::ZeroDuration());
  EXPECT_EQ(policy.NextSpin(/*compute_acts_running=*/0), kSpinWait);
  EXPECT_EQ(Waits(policy, 6, kLong), 6);  // now long waits have stopped the spin
  SpinPolicy counted = policy;
  for (int i = 0; i < 3 * SpinPolicy::kProbeEvery; ++i) {
    EXPECT_EQ(policy.NextSpin(/*compute_acts_running=*/2), absl::ZeroDuration());
  }
  for (int i = 0; i < 2 * SpinPolicy::kProbeEvery; ++i) EXPECT_EQ(policy.NextSpin(), counted.NextSpin());
}

TEST(SpinPolicy, StopsSpinningAfterAFewLongWaits) {
  SpinPolicy policy;
  // 1 * (7/8)^n < 1/2 first at n = 6: a few calls, not one unlucky wait.
  EXPECT_EQ(Waits(policy, 5, kLong), 5);
  EXPECT_EQ(policy.NextSpin(), kSpinWait);  // the sixth
  policy.Record(kLong);
  EXPECT_EQ(policy.NextSpin(), absl::ZeroDuration());
}

// Peers that stay slow: only the probes spin, one wait in kProbeEvery.
TEST(SpinPolicy, WhileWaitsStayLongOnlyTheProbesSpin) {
  SpinPolicy policy;
  Waits(policy, 6, kLong);
  EXPECT_EQ(Waits(policy, 80 * SpinPolicy::kProbeEvery, kLong), 80);
}

// Peers that become prompt again: the probes find short waits and the spin comes back
// after six of them (1 - (7/8)^6 >= 1/2), within 6 * kProbeEvery waits.
TEST(SpinPolicy, ResumesSpinningWhenTheProbesFindShortWaits) {
  SpinPolicy policy;
  Waits(policy, 200, kLong);
  int waits = 0;
  int spinning_in_a_row = 0;
  while (spinning_in_a_row < 20 && waits < 1000) {
    ++waits;
    spinning_in_a_row = Waits(policy, 1, kShort) == 1 ? spinning_in_a_row + 1 : 0;
  }
  EXPECT_EQ(spinning_in_a_row, 20);
  EXPECT_LE(waits - 20, 6 * SpinPolicy::kProbeEvery) << "spun again after " << waits - 20 << " waits";
  EXPECT_GE(waits - 20, 5 * SpinPolicy::kProbeEvery) << "spun again after " << waits - 20 << " waits";
}

TEST(SpinPolicy, AWaitOfExactlyTheSpinWindowIsShort) {
  SpinPolicy policy;
  EXPECT_EQ(Waits(policy, 50, kSpinWait), 50);
  Waits(policy, 50, kSpinWait + absl::Microseconds(1));
  EXPECT_EQ(policy.NextSpin(), absl::ZeroDuration());
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
  EXPECT_EQ(Waits(mostly_short, 16, kShort), 16);
  EXPECT_EQ(Waits(mostly_long, 16, kLong), 2);
}

}  // namespace
}  // namespace ucx_backend
}  // namespace oneflow
