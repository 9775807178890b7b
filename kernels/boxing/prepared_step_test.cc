// A prepared boxing step runs act after act on new buffers: validated once, its packing
// buffers reused, every act's result exact.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/step_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

// all_gather S(1) -> B of a [3, 4] f32 tensor on 2 devices: columns [0, 2) and [2, 4),
// so each rank's piece is not contiguous in the output and goes through the scratch buffer.
TEST(PreparedBoxingStepTest, RunsManyActsOnNewBuffers) {
  const Placement placement = *Placement::Parse("cpu{0:0-1}");
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(2, "g")).value();
  std::vector<PreparedBoxingStep> steps;
  for (int64_t rank = 0; rank < 2; ++rank) {
    BoxingStepArgs args;
    args.logical = Shape{3, 4};
    args.kind = BoxingKind::kAllGather;
    args.src = *NdSbp::Parse("S(1)");
    args.dst = *NdSbp::Parse("B");
    args.placement = &placement;
    args.rank = rank;
    args.communicator = &group->communicator(rank);
    args.input_bytes = 6 * 4;
    args.output_bytes = 12 * 4;
    absl::StatusOr<PreparedBoxingStep> prepared = PreparedBoxingStep::Prepare(args);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    steps.push_back(*std::move(prepared));
  }
  for (int act = 0; act < 3; ++act) {
    // Logical value of element (r, c) in act `act`: 100 * act + 10 * r + c.
    std::vector<std::vector<float>> inputs(2), outputs(2, std::vector<float>(12, -1.0f));
    for (int64_t rank = 0; rank < 2; ++rank) {
      for (int r = 0; r < 3; ++r) {
        for (int c = 2 * rank; c < 2 * rank + 2; ++c) inputs[rank].push_back(100.0f * act + 10.0f * r + c);
      }
    }
    std::vector<absl::Status> statuses(2);
    RunOnRankThreads(2, [&](int64_t rank) {
      CollectiveOptions options;
      options.timeout = absl::Seconds(5);
      statuses[rank] = steps[rank].Run(inputs[rank].data(), outputs[rank].data(), options);
    });
    for (int64_t rank = 0; rank < 2; ++rank) {
      ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 4; ++c) {
          EXPECT_EQ(outputs[rank][r * 4 + c], 100.0f * act + 10.0f * r + c) << "act " << act << " rank " << rank;
        }
      }
    }
  }
  // The buffers are checked per act, not at preparation.
  const absl::Status missing = steps[0].Run(nullptr, nullptr, CollectiveOptions());
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message().rfind("boxing step all_gather axis 0 of f32 [3, 4]: S(1) -> B on cpu{0:0-1}, rank 0: ", 0),
            0u)
      << missing;
}

}  // namespace
}  // namespace oneflow
