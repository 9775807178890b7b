#include "actors/thread_priority.h"

#include <thread>

#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

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
  int other = base;
  std::thread thread([&] {
    // Lowering the priority is always allowed.
    ASSERT_TRUE(SetThisThreadNice(base + 3).ok());
    other = ThisThreadNice();
  });
  thread.join();
  EXPECT_EQ(other, base + 3);
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
