// RunBoxingStep's errors name the step and say what is wrong, every device of an invalid
// step fails alike (no one is left waiting), communicator failures pass through, and the
// reduction follows the P being reduced.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/step_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;

// A valid all_gather S(0) -> B of a [5, 7] f32 tensor on 2 devices, for rank `rank`.
struct Fixture {
  Placement placement = *Placement::Parse("cpu{0:0-1}");
  std::vector<float> input = std::vector<float>(21, 1.0f);  // rows [0, 3) or [3, 5): 21 or 14
  std::vector<float> output = std::vector<float>(35, 0.0f);
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(2, "g")).value();

  BoxingStepArgs Args(int64_t rank) {
    BoxingStepArgs args;
    args.logical = Shape{5, 7};
    args.kind = BoxingKind::kAllGather;
    args.src = *NdSbp::Parse("S(0)");
    args.dst = *NdSbp::Parse("B");
    args.placement = &placement;
    args.rank = rank;
    args.communicator = &group->communicator(rank);
    args.input = input.data();
    args.input_bytes = (rank == 0 ? 21 : 14) * 4;
    args.output = output.data();
    args.output_bytes = 35 * 4;
    args.options.timeout = absl::Seconds(5);
    return args;
  }
};

const char* kName =
    "boxing step all_gather axis 0 of f32 [5, 7]: S(0) -> B on cpu{0:0-1}, rank 0: ";

TEST(BoxingStepErrorsTest, ArgumentsThatDoNotDescribeTheStep) {
  struct Case {
    std::function<void(BoxingStepArgs&)> change;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](BoxingStepArgs& a) { a.kind = BoxingKind::kSendRecv; }, absl::StatusCode::kInvalidArgument,
       "send_recv moves data between placements; run it with RunSendRecv"},
      {[](BoxingStepArgs& a) { a.src = *NdSbp::Parse("P"); }, absl::StatusCode::kInvalidArgument,
       "all_gather makes S(i) -> B, not P -> B"},
      {[](BoxingStepArgs& a) { a.hierarchy_axis = 1; }, absl::StatusCode::kInvalidArgument,
       "hierarchy axis 1 is outside the hierarchy [2]"},
      {[](BoxingStepArgs& a) { a.src = *NdSbp::Parse("S(2)"); }, absl::StatusCode::kInvalidArgument,
       "source: SBP S(2) splits axis 2 of a tensor of shape [5, 7]; valid split axes are 0..1"},
      {[](BoxingStepArgs& a) { a.input_bytes = 80; }, absl::StatusCode::kInvalidArgument,
       "the buffers hold 80 and 140 bytes; the slices [0:3, 0:7] and [0:5, 0:7] need 84 and 140"},
      {[](BoxingStepArgs& a) { a.communicator = nullptr; }, absl::StatusCode::kInvalidArgument,
       "a collective step needs a communicator"},
      {[](BoxingStepArgs& a) { a.rank = 2; }, absl::StatusCode::kInvalidArgument,
       "rank 2 is outside the placement's 2 devices"},
      {[](BoxingStepArgs& a) {
         a.dtype = DType::kF16;
         a.kind = BoxingKind::kAllReduce;
         a.src = *NdSbp::Parse("P");
       },
       absl::StatusCode::kUnimplemented,
       "all_reduce P -> B of f16 is not supported: reductions are implemented for f32, i32, "
       "i64 and u8"},
  };
  for (const Case& test : cases) {
    Fixture fixture;
    BoxingStepArgs args = fixture.Args(0);
    test.change(args);
    const absl::Status status = RunBoxingStep(args);
    EXPECT_EQ(status.code(), test.code) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(test.message)) << status;
  }
  Fixture fixture;
  BoxingStepArgs args = fixture.Args(0);
  args.input_bytes = 80;
  EXPECT_EQ(RunBoxingStep(args).message(),
            std::string(kName) +
                "the buffers hold 80 and 140 bytes; the slices [0:3, 0:7] and "
                "[0:5, 0:7] need 84 and 140");
}

TEST(BoxingStepErrorsTest, WrongCommunicatorAndOtherAxisChange) {
  const Placement grid = *Placement::Parse("cpu{0:0-1, 1:0-1}[2, 2]");
  std::unique_ptr<InProcessGroup> three = std::move(InProcessGroup::Create(3, "three")).value();
  std::vector<float> buffer(35);
  BoxingStepArgs args;
  args.logical = Shape{5, 7};
  args.kind = BoxingKind::kAllReduce;
  args.src = *NdSbp::Parse("[P, B]");
  args.dst = *NdSbp::Parse("[B, B]");
  args.placement = &grid;
  args.rank = 1;
  args.communicator = &three->communicator(0);
  args.input = buffer.data();
  args.input_bytes = 140;
  args.output = buffer.data() + 0;
  args.output_bytes = 140;
  EXPECT_THAT(std::string(RunBoxingStep(args).message()),
              HasSubstr("the communicator is in-process group 'three' rank 0 of 3; this device's "
                        "group along hierarchy axis 0 has 2 devices and it is number 0"));
  args.dst = *NdSbp::Parse("[B, S(0)]");
  EXPECT_THAT(
      std::string(RunBoxingStep(args).message()),
      HasSubstr("the SBP changes on hierarchy axis 1 too; a step changes only its own axis"));
}

// [S(0), S(0)] -> [B, S(0)] by an outer all-gather: device (0, 0) needs rows [0, 3) but its
// group holds rows [0, 2) and [3, 4). Every device, even those of groups that could run it,
// fails with the same diagnosis, at once.
TEST(BoxingStepErrorsTest, InvalidPlaceInTheNdSbpFailsOnEveryDevice) {
  const Placement grid = *Placement::Parse("cpu{0:0-1, 1:0-1}[2, 2]");
  const AxisCommunicators communicators(grid, 0);
  std::vector<absl::Status> statuses(4);
  RunOnRankThreads(4, [&](int64_t rank) {
    const NdSbp src = *NdSbp::Parse("[S(0), S(0)]");
    const NdSbp dst = *NdSbp::Parse("[B, S(0)]");
    const TensorSlice in = *DeviceSlice(Shape{5, 7}, src, grid, rank);
    const TensorSlice out = *DeviceSlice(Shape{5, 7}, dst, grid, rank);
    std::vector<float> input(in.NumElements()), output(out.NumElements());
    BoxingStepArgs args{Shape{5, 7},
                        DType::kF32,
                        BoxingKind::kAllGather,
                        src,
                        dst,
                        0,
                        &grid,
                        rank,
                        communicators.For(rank),
                        input.data(),
                        in.NumElements() * 4,
                        output.data(),
                        out.NumElements() * 4,
                        {}};
    statuses[rank] = RunBoxingStep(args);
  });
  for (int64_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(statuses[rank].message(),
              absl::StrCat("boxing step all_gather axis 0 of f32 [5, 7]: [S(0), S(0)] -> [B, S(0)] "
                           "on cpu{0:0-1, 1:0-1}[2, 2], rank ",
                           rank,
                           ": rank 0 (coordinate 0 on hierarchy axis 0) needs [0:3, 0:7] (21 "
                           "elements), its group holds 14 of them; the step is not valid at this "
                           "place of the N-D SBP"));
  }
}

TEST(BoxingStepErrorsTest, TimeoutNamesTheDescriptionAndTheMissingDevice) {
  Fixture fixture;
  BoxingStepArgs args = fixture.Args(0);
  args.options.timeout = absl::Milliseconds(100);
  args.options.description = "actor 'h/boxing_2/all_gather' collective 4 iteration 0";
  const absl::Status status = RunBoxingStep(args);  // rank 1 never runs its part
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "actor 'h/boxing_2/all_gather' collective 4 iteration 0: in-process group 'g' rank 0 "
            "of 2, all_gather call 1: waited 100ms for rank 1 to arrive");
}

// The P being reduced decides the reduction: P(max) -> B is an all-reduce by max.
TEST(BoxingStepErrorsTest, ReductionFollowsThePartial) {
  const Placement placement = *Placement::Parse("cpu{0:0-1}");
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(2, "g")).value();
  std::vector<std::vector<float>> outputs(2, std::vector<float>(3));
  RunOnRankThreads(2, [&](int64_t rank) {
    const std::vector<float> input =
        rank == 0 ? std::vector<float>{1, 5, -2} : std::vector<float>{4, 2, -3};
    BoxingStepArgs args{Shape{3},
                        DType::kF32,
                        BoxingKind::kAllReduce,
                        *NdSbp::Parse("P(max)"),
                        *NdSbp::Parse("B"),
                        0,
                        &placement,
                        rank,
                        &group->communicator(rank),
                        input.data(),
                        12,
                        outputs[rank].data(),
                        12,
                        {}};
    EXPECT_TRUE(RunBoxingStep(args).ok());
  });
  EXPECT_EQ(outputs[0], (std::vector<float>{4, 5, -2}));
  EXPECT_EQ(outputs[1], (std::vector<float>{4, 5, -2}));

  std::vector<float> input(3), output(3);
  BoxingStepArgs local{Shape{3},
                       DType::kF32,
                       BoxingKind::kLocalPartial,
                       *NdSbp::Parse("B"),
                       *NdSbp::Parse("P(max)"),
                       0,
                       &placement,
                       1,
                       nullptr,
                       input.data(),
                       12,
                       output.data(),
                       12,
                       {}};
  const absl::Status status = RunBoxingStep(local);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("making P(max) locally needs its identity element; only P(sum)"));
}

}  // namespace
}  // namespace oneflow
