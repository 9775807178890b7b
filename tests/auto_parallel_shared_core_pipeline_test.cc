// A 1F1B pipeline played out on shared host cores (compiler/auto_parallel/
// shared_core_pipeline.h): its length against schedules worked out by hand.
#include "compiler/auto_parallel/shared_core_pipeline.h"

#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

using auto_parallel::PipelineStageWork;
using auto_parallel::SharedCorePipelineSeconds;

std::vector<PipelineStageWork> Equal(int64_t pp, int64_t devices) {
  return std::vector<PipelineStageWork>(pp, PipelineStageWork{1.0, 2.0, devices});
}

TEST(SharedCorePipelineTest, WithACoreForEveryDeviceItIsTheOneForwardOneBackwardSchedule) {
  // (M + pp - 1) x (F + B).
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(Equal(4, 1), 4, 4);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 7 * 3.0, 1e-9);
  seconds = SharedCorePipelineSeconds(Equal(4, 1), 4, 64);
  ASSERT_TRUE(seconds.ok());
  EXPECT_NEAR(*seconds, 7 * 3.0, 1e-9);
}

TEST(SharedCorePipelineTest, OneStageOfMoreDevicesThanCoresTakesItsWorkInTurn) {
  // 4 devices on 2 cores: 3 micro-batches of F + B at half speed.
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(Equal(1, 4), 3, 2);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 3 * 3.0 * 2, 1e-9);
}

TEST(SharedCorePipelineTest, OneMicroBatchRunsOneStageAtATimeAtFullSpeed) {
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(Equal(4, 1), 1, 2);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 4 * 3.0, 1e-9);
}

TEST(SharedCorePipelineTest, FourStagesOnTwoCoresTakeLongerThanEitherBound) {
  // 4 stages, 4 micro-batches, F = 1, B = 2 on 2 cores: the schedule alone is 21, the
  // work over the cores 4 x 4 x 3 / 2 = 24; played out, three stages are runnable in the
  // steady state (1.5 cores' pace for the critical one) and one or two in the fill and
  // drain: 27.
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(Equal(4, 1), 4, 2);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 27.0, 1e-9);
}

TEST(SharedCorePipelineTest, TwoStagesOfTwoDevicesOnThreeCores) {
  // Stage 0: F0, F1, B0, B1; stage 1: F0, B0, F1, B1. F0 alone (1), F1 of stage 0 with
  // F0 of stage 1 at 3/4 speed (4/3), B0 of stage 1 alone (2), B0 of stage 0 with F1 of
  // stage 1 (4/3; B0 has 1 left), with B1 of stage 1 (4/3; B1 has 1 left), B1 of stage 1
  // alone (1), B1 of stage 0 alone (2): 10.
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(Equal(2, 2), 2, 3);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 10.0, 1e-9);
}

TEST(SharedCorePipelineTest, WaitingTakesWallTimeButNoCore) {
  // One stage of 2 devices on 1 core, one micro-batch: the forward's compute at half
  // speed (2), its wait (1), the backward's compute at half speed (4), its wait (0.5):
  // 7.5. (Waiting counted as compute: 9; left out: 6.)
  std::vector<PipelineStageWork> stage = {PipelineStageWork{1.0, 2.0, 2, 1.0, 0.5}};
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(stage, 1, 1);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 7.5, 1e-9);
}

TEST(SharedCorePipelineTest, AStageThatWaitsLeavesTheCoresToTheOthers) {
  // 2 stages of one device on 1 core, 2 micro-batches, F = B = 1, each forward then
  // waiting 1. Stage 0: F0, F1, B0, B1; stage 1: F0, B0, F1, B1.
  //   0-1   stage 0 computes F0 alone            1-2   it waits
  //   2-4   F1 of stage 0 and F0 of stage 1 share the core (1 each at half speed)
  //   4-5   both wait                             5-6   B0 of stage 1 alone
  //   6-8   B0 of stage 0 and F1 of stage 1 share the core
  //   8-9   stage 1 waits (stage 0's B1 needs its B1)
  //   9-10  B1 of stage 1 alone                   10-11 B1 of stage 0 alone: 11.
  std::vector<PipelineStageWork> stages(2, PipelineStageWork{1.0, 1.0, 1, 1.0, 0.0});
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(stages, 2, 1);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 11.0, 1e-9);
}

TEST(SharedCorePipelineTest, TheFirstMicroBatchAloneWaitsOnPerIterationWork) {
  // ZeRO-3's gathers: 2 stages of one device on a core each, 2 micro-batches, F = 1, B = 2,
  // every stage's first forward waiting 0.5 more and its first backward 0.25 more.
  // Stage 0: F0, F1, B0, B1; stage 1: F0, B0, F1, B1.
  //   0-1.5      F0 of stage 0 (its gathers after)
  //   1.5-2.5    F1 of stage 0 (no wait) with F0 of stage 1, which then waits to 3
  //   3-5.25     B0 of stage 1 and its first backward's wait
  //   5.25-6.25  F1 of stage 1, with B0 of stage 0 (5.25-7.5, its wait included)
  //   6.25-8.25  B1 of stage 1                  8.25-10.25  B1 of stage 0: 10.25
  // (Without the first waits 9; waiting in every micro-batch's tasks would give more.)
  std::vector<PipelineStageWork> stages(2, PipelineStageWork{1.0, 2.0, 1});
  absl::StatusOr<double> without = SharedCorePipelineSeconds(stages, 2, 2);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_NEAR(*without, 9.0, 1e-9);
  for (PipelineStageWork& stage : stages) {
    stage.first_forward_wait_seconds = 0.5;
    stage.first_backward_wait_seconds = 0.25;
  }
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(stages, 2, 2);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 10.25, 1e-9);
}

// ZB-H1: each backward's weight part (W) runs when the stage has nothing else ready.
std::vector<PipelineStageWork> WithWeightPart(int64_t pp, int64_t devices, double weight) {
  std::vector<PipelineStageWork> stages = Equal(pp, devices);
  for (PipelineStageWork& stage : stages) stage.weight_backward_seconds = weight;
  return stages;
}

TEST(SharedCorePipelineTest, ZeroBubbleFillsTheBubbleWithWeightGradients) {
  // F = B = W = 1 (backward 2, half of it W) on 4 stages, M = 8, a core per device. 1F1B:
  // (M + pp - 1) x 3 = 33. ZB-H1 as the engine runs it: 30. The zero-bubble paper's H1,
  // M x 3 + (pp - 1) = 27, starts a forward once B has freed part of the activations; the
  // engine frees a micro-batch's activation slot when W, which reads them, has run, so
  // stage s's forward of micro-batch k waits for its W of k - (pp - s), which the first
  // stage's warm-up cannot run ahead of. (Both figures also from an independent play
  // written apart from this one.)
  const std::vector<PipelineStageWork> stages = WithWeightPart(4, 1, 1.0);
  absl::StatusOr<double> one_forward_one_backward = SharedCorePipelineSeconds(stages, 8, 64);
  ASSERT_TRUE(one_forward_one_backward.ok()) << one_forward_one_backward.status();
  EXPECT_NEAR(*one_forward_one_backward, 33.0, 1e-9);  // the W part is played only with ZB-H1
  absl::StatusOr<double> zero_bubble =
      SharedCorePipelineSeconds(stages, 8, 64, proto::PIPELINE_SCHEDULE_ZB_H1);
  ASSERT_TRUE(zero_bubble.ok()) << zero_bubble.status();
  EXPECT_NEAR(*zero_bubble, 30.0, 1e-9);
  // Without a W part the schedules are one.
  absl::StatusOr<double> no_weight = SharedCorePipelineSeconds(Equal(4, 1), 8, 64, proto::PIPELINE_SCHEDULE_ZB_H1);
  ASSERT_TRUE(no_weight.ok()) << no_weight.status();
  EXPECT_NEAR(*no_weight, 33.0, 1e-9);
}

TEST(SharedCorePipelineTest, ZeroBubbleShareIsWhatTheWeightActsLeaveOfTheBubble) {
  // The plays above: 1F1B 33, ZB-H1 30, busy 8 x 3 = 24: 6 / 9 of the bubble left.
  absl::StatusOr<double> share = auto_parallel::ZeroBubbleShare(WithWeightPart(4, 1, 1.0), 8);
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_NEAR(*share, 2.0 / 3.0, 1e-9);
  // No W part: nothing filled. One stage: no bubble to fill.
  share = auto_parallel::ZeroBubbleShare(Equal(4, 1), 8);
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_NEAR(*share, 1.0, 1e-9);
  share = auto_parallel::ZeroBubbleShare(WithWeightPart(1, 1, 1.0), 8);
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_NEAR(*share, 1.0, 1e-9);
}

TEST(SharedCorePipelineTest, ZeroBubbleWithOneMicroBatchSavesEachStagesWeightPart) {
  // One micro-batch: the forwards, then each stage's B in turn from the last, and its W
  // beside the B of the stages before it; only the first stage's W (here its whole
  // backward, as the schedule marks it) ends the step after its B:
  // pp x F + (pp - 1) x (B - W) + the first stage's 2 = 4 + 3 + 2 = 9, 1F1B 12.
  std::vector<PipelineStageWork> stages = WithWeightPart(4, 1, 1.0);
  stages[0].weight_backward_seconds = 2.0;
  absl::StatusOr<double> seconds = SharedCorePipelineSeconds(stages, 1, 64, proto::PIPELINE_SCHEDULE_ZB_H1);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_NEAR(*seconds, 9.0, 1e-9);
}

TEST(SharedCorePipelineTest, ZeroBubbleOfTwoStages) {
  // 2 stages, M = 4, F = 1, backward 3: on the first stage all W, on the last B = 0.25 and
  // W = 2.75. 1F1B: (4 + 1) x 4 = 20. ZB-H1:
  //   0-1 F0 (stage 0); 1-2 F0 (stage 1), F1 (stage 0); 2-2.25 B0 (stage 1), then its W0 to 5;
  //   2.25-5.25 W0 of stage 0 (its backward; F2 needs the slot W0 holds), 5-6 F1 (stage 1)
  //   and so on, each stage's W beside the other's work: 17.25.
  std::vector<PipelineStageWork> stages(2, PipelineStageWork{1.0, 3.0, 1});
  stages[0].weight_backward_seconds = 3.0;
  stages[1].weight_backward_seconds = 2.75;
  absl::StatusOr<double> one_forward_one_backward = SharedCorePipelineSeconds(stages, 4, 64);
  ASSERT_TRUE(one_forward_one_backward.ok()) << one_forward_one_backward.status();
  EXPECT_NEAR(*one_forward_one_backward, 20.0, 1e-9);
  absl::StatusOr<double> zero_bubble = SharedCorePipelineSeconds(stages, 4, 64, proto::PIPELINE_SCHEDULE_ZB_H1);
  ASSERT_TRUE(zero_bubble.ok()) << zero_bubble.status();
  EXPECT_NEAR(*zero_bubble, 17.25, 1e-9);
}

TEST(SharedCorePipelineTest, ZeroBubbleOnSharedCores) {
  // pp = 4 on 2 cores, M = 4, F = B = W = 1: the W acts fill the cores the fill and the
  // drain leave idle, so ZB-H1 is shorter than 1F1B's 27 (FourStagesOnTwoCores above)
  // and no shorter than the work over the cores, 4 x 4 x 3 / 2 = 24.
  absl::StatusOr<double> zero_bubble =
      SharedCorePipelineSeconds(WithWeightPart(4, 1, 1.0), 4, 2, proto::PIPELINE_SCHEDULE_ZB_H1);
  ASSERT_TRUE(zero_bubble.ok()) << zero_bubble.status();
  EXPECT_LT(*zero_bubble, 27.0 - 1e-9);
  EXPECT_GE(*zero_bubble, 24.0 - 1e-9);
}

TEST(SharedCorePipelineTest, BadInputIsRefusedNamingIt) {
  absl::StatusOr<double> none = SharedCorePipelineSeconds({}, 1, 2);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<double> no_micro_batch = SharedCorePipelineSeconds(Equal(2, 1), 0, 2);
  EXPECT_EQ(no_micro_batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_micro_batch.status().message().find("micro_batches=0"), std::string::npos);
  absl::StatusOr<double> no_core = SharedCorePipelineSeconds(Equal(2, 1), 2, 0);
  EXPECT_EQ(no_core.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_core.status().message().find("cores=0"), std::string::npos);
  std::vector<PipelineStageWork> empty_stage = Equal(2, 1);
  empty_stage[1].devices = 0;
  absl::StatusOr<double> no_device = SharedCorePipelineSeconds(empty_stage, 2, 2);
  EXPECT_EQ(no_device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_device.status().message().find("stage 1: 0 devices"), std::string::npos);
  std::vector<PipelineStageWork> negative_wait = Equal(2, 1);
  negative_wait[0].backward_wait_seconds = -1;
  absl::StatusOr<double> waits_back = SharedCorePipelineSeconds(negative_wait, 2, 2);
  EXPECT_EQ(waits_back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(waits_back.status().message().find("backward 2 s + -1 s waiting"), std::string::npos)
      << waits_back.status();
  std::vector<PipelineStageWork> negative_first = Equal(2, 1);
  negative_first[1].first_forward_wait_seconds = -0.5;
  absl::StatusOr<double> first_back = SharedCorePipelineSeconds(negative_first, 2, 2);
  EXPECT_EQ(first_back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(first_back.status().message().find("stage 1: 1 devices, forward 1 s + 0 s waiting (+ -0.5 s the first"),
            std::string::npos)
      << first_back.status();
  std::vector<PipelineStageWork> too_much_weight = WithWeightPart(2, 1, 2.5);
  absl::StatusOr<double> weight_beyond = SharedCorePipelineSeconds(too_much_weight, 2, 2, proto::PIPELINE_SCHEDULE_ZB_H1);
  EXPECT_EQ(weight_beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(weight_beyond.status().message().find("2.5 s of the backward W"), std::string::npos)
      << weight_beyond.status();
  absl::StatusOr<double> interleaved =
      SharedCorePipelineSeconds(Equal(2, 1), 2, 2, proto::PIPELINE_SCHEDULE_INTERLEAVED);
  EXPECT_EQ(interleaved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(interleaved.status().message().find("PIPELINE_SCHEDULE_INTERLEAVED"), std::string::npos)
      << interleaved.status();
}

}  // namespace
}  // namespace oneflow
