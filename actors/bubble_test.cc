#include "actors/bubble.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;

// Two devices, two micro-batches per iteration. Device 0: actor 1 (compute thread, per
// micro-batch), actor 2 (communication thread), actor 3 (compute thread, per iteration).
// Device 1: actor 4 (compute thread, per micro-batch).
proto::Plan TwoDevicePlan() {
  proto::Plan plan;
  plan.mutable_job()->set_micro_batches(2);
  auto add = [&](proto::DevicePlan* device, int64_t id, proto::ThreadKind thread, bool per_iteration) {
    proto::ActorDef* actor = device->add_actors();
    actor->set_id(id);
    actor->set_thread(thread);
    actor->set_per_iteration(per_iteration);
  };
  proto::DevicePlan* d0 = plan.add_devices();
  add(d0, 1, proto::THREAD_COMPUTE, false);
  add(d0, 2, proto::THREAD_COMMUNICATION, false);
  add(d0, 3, proto::THREAD_COMPUTE, true);
  proto::DevicePlan* d1 = plan.add_devices();
  d1->mutable_device()->set_device(1);
  add(d1, 4, proto::THREAD_COMPUTE, false);
  return plan;
}

ActRecord Act(int device, int64_t actor, int64_t index, int64_t start, int64_t end) {
  return ActRecord{0, device, actor, index, start, end};
}

TEST(MeasureBubbleTest, IdleFractionOfTheMeasuredIterations) {
  const std::vector<ActRecord> acts = {
      // Iteration 0 (warm-up): micro-batches 0 and 1, and actor 3's act 0.
      Act(0, 1, 0, 0, 10), Act(0, 1, 1, 10, 20), Act(0, 3, 0, 20, 30), Act(1, 4, 0, 30, 40),
      // Device 1's micro-batch 1 of iteration 0 runs into the window by 5 ns.
      Act(1, 4, 1, 80, 95),
      // Iteration 1 (micro-batches 2 and 3; actor 3's act 1): the window is [90, 250).
      Act(0, 1, 2, 90, 140), Act(1, 4, 2, 95, 100), Act(0, 2, 2, 140, 160), Act(0, 1, 3, 160, 200),
      Act(0, 3, 1, 200, 220), Act(1, 4, 3, 210, 250)};
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(TwoDevicePlan(), acts);
  ASSERT_TRUE(bubble.ok()) << bubble.status();
  EXPECT_EQ(bubble->first_iteration, 1);
  EXPECT_EQ(bubble->last_iteration, 1);
  EXPECT_EQ(bubble->window_start_ns, 90);
  EXPECT_EQ(bubble->window_end_ns, 250);
  ASSERT_EQ(bubble->devices.size(), 2u);
  // Device 0 computes 50 + 40 + 20 of 160 ns; its communication act is idle time.
  EXPECT_EQ(bubble->devices[0].busy_ns, 110);
  EXPECT_THAT(bubble->devices[0].idle_fraction, DoubleEq(50.0 / 160));
  // Device 1: 5 (the warm-up act's tail) + 5 + 40.
  EXPECT_EQ(bubble->devices[1].busy_ns, 50);
  EXPECT_THAT(bubble->devices[1].idle_fraction, DoubleEq(110.0 / 160));
}

TEST(MeasureBubbleTest, MoreWarmUpIterations) {
  const std::vector<ActRecord> acts = {Act(0, 1, 0, 0, 10), Act(0, 1, 2, 20, 30), Act(0, 1, 4, 40, 50),
                                       Act(0, 1, 5, 60, 70)};
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(TwoDevicePlan(), acts, /*warmup_iterations=*/2);
  ASSERT_TRUE(bubble.ok()) << bubble.status();
  EXPECT_EQ(bubble->first_iteration, 2);
  EXPECT_EQ(bubble->window_start_ns, 40);
  EXPECT_THAT(bubble->devices[0].idle_fraction, DoubleEq(10.0 / 30));
  // A device without acts in the window is idle all of it.
  EXPECT_THAT(bubble->devices[1].idle_fraction, DoubleEq(1.0));
}

TEST(MeasureBubbleTest, OnlyTheWarmUpIteration) {
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(TwoDevicePlan(), {Act(0, 1, 1, 0, 10)});
  EXPECT_EQ(bubble.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bubble.status().message(), HasSubstr("iterations 0..0 only; the first 1 are warm-up: run at least 2"));
}

TEST(MeasureBubbleTest, ActOfAnotherPlan) {
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(TwoDevicePlan(), {Act(1, 1, 2, 0, 10)});
  EXPECT_EQ(bubble.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bubble.status().message(), HasSubstr("act of actor 1 on device index 1: the plan has no such actor"));
}

}  // namespace
}  // namespace oneflow::actors
