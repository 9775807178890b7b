#include "actors/thread_priority.h"

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

TEST(ThreadPriorityTest, UserGivenLevelsOutsideTheNiceRangeAreRefusedNamingTheFlag) {
  EXPECT_TRUE(ValidateCommunicationPriorityLevels(0, "--communication_priority_levels").ok());
  EXPECT_TRUE(ValidateCommunicationPriorityLevels(10, "--communication_priority_levels").ok());
  EXPECT_TRUE(ValidateCommunicationPriorityLevels(39, "--communication_priority_levels").ok());
  for (int64_t bad : {int64_t{-1}, int64_t{40}, int64_t{1} << 40}) {
    const absl::Status status = ValidateCommunicationPriorityLevels(bad, "--communication_priority_levels");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StrContains(status.message(),
                                  absl::StrCat("--communication_priority_levels=", bad, " is not in [0, 39]")))
        << status.message();
  }
}

TEST(ThreadPriorityTest, CommunicationLeadsComputeByTheLevelsEitherWay) {
  // Allowed to raise: communication goes up, compute stays.
  ThreadNiceValues raised = ChooseThreadNiceValues(0, 10, /*may_raise=*/true);
  EXPECT_EQ(raised.compute, 0);
  EXPECT_EQ(raised.communication, -10);
  // Not allowed: compute goes down instead.
  ThreadNiceValues lowered = ChooseThreadNiceValues(0, 10, /*may_raise=*/false);
  EXPECT_EQ(lowered.compute, 10);
  EXPECT_EQ(lowered.communication, 0);
  // From another base, clamped to Linux's range.
  ThreadNiceValues high_base = ChooseThreadNiceValues(-15, 10, true);
  EXPECT_EQ(high_base.communication, -20);
  EXPECT_EQ(high_base.compute, -15);
  ThreadNiceValues low_base = ChooseThreadNiceValues(15, 10, false);
  EXPECT_EQ(low_base.compute, 19);
  EXPECT_EQ(low_base.communication, 15);
  // Off.
  ThreadNiceValues off = ChooseThreadNiceValues(3, 0, true);
  EXPECT_EQ(off.compute, 3);
  EXPECT_EQ(off.communication, 3);
}

TEST(ThreadPriorityTest, SetsOnlyTheCallingThread) {
  const int base = ThisThreadNice();
  // Lowering the priority is always allowed; from nice 19 (a build run under `nice -n 19`)
  // there is no lower, so the other thread goes the other way only where it may.
  const int wanted = base + 3 <= 19 ? base + 3 : (MayRaiseThreadPriority(base, 3) ? base - 3 : base);
  if (wanted == base) GTEST_SKIP() << "at nice " << base << " without the right to raise, no other value to set";
  int other = base;
  std::thread thread([&] {
    ASSERT_TRUE(SetThisThreadNice(wanted).ok());
    other = ThisThreadNice();
  });
  thread.join();
  EXPECT_EQ(other, wanted);
  EXPECT_EQ(ThisThreadNice(), base);
}

TEST(ThreadPriorityTest, TheProbeLeavesTheCallingThreadAsItWas) {
  const int base = ThisThreadNice();
  (void)MayRaiseThreadPriority(base, 10);
  EXPECT_EQ(ThisThreadNice(), base);
  EXPECT_FALSE(MayRaiseThreadPriority(base, 0));
}

}  // namespace
}  // namespace oneflow::actors
