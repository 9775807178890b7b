#include "actors/thread_priority.h"

#include <cstdint>
#include <iostream>
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
  EXPECT_FALSE(off.communication_short_slice);
  EXPECT_FALSE(raised.communication_short_slice);
  EXPECT_FALSE(lowered.communication_short_slice);
}

TEST(ThreadPriorityTest, WithShortSlicesTheLeadKeepsEveryThreadAtTheBaseWeight) {
  // May raise or not: a short slice leads, both threads stay at the base nice value.
  for (bool may_raise : {true, false}) {
    ThreadNiceValues sliced = ChooseThreadNiceValues(0, 10, may_raise, /*short_slices=*/true);
    EXPECT_EQ(sliced.compute, 0);
    EXPECT_EQ(sliced.communication, 0);
    EXPECT_TRUE(sliced.communication_short_slice);
  }
  ThreadNiceValues from_five = ChooseThreadNiceValues(5, 3, false, true);
  EXPECT_EQ(from_five.compute, 5);
  EXPECT_EQ(from_five.communication, 5);
  // Levels 0 turns the lead off, slice included.
  ThreadNiceValues off = ChooseThreadNiceValues(0, 0, true, true);
  EXPECT_FALSE(off.communication_short_slice);
}

// The calling thread's slice as the kernel reports it, in ns.
int64_t ReportedSliceNs() {
  absl::StatusOr<absl::Duration> slice = ReportedThreadSlice(0);
  EXPECT_TRUE(slice.ok()) << slice.status();
  return slice.ok() ? absl::ToInt64Nanoseconds(*slice) : -1;
}

TEST(ThreadPriorityTest, AKernelThatTakesSlicesKeepsTheCommunicationSliceForThatThreadOnly) {
  std::thread thread([] {
    const int64_t before = ReportedSliceNs();
    const bool takes = KernelTakesThreadSlices();
    EXPECT_EQ(ReportedSliceNs(), before) << "the probe must undo its slice";
    if (!takes) {
      std::cerr << "this kernel keeps no per-thread slice (before Linux 6.12)\n";
      return;
    }
    ASSERT_TRUE(SetThisThreadSlice(kCommunicationSlice).ok());
    EXPECT_EQ(ReportedSliceNs(), absl::ToInt64Nanoseconds(kCommunicationSlice));
    EXPECT_NE(before, absl::ToInt64Nanoseconds(kCommunicationSlice));
  });
  thread.join();
  EXPECT_NE(ReportedSliceNs(), absl::ToInt64Nanoseconds(kCommunicationSlice)) << "another thread's slice leaked";
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
