// The runtime's failure paths and progress reports on real compiled plans: a collective
// that cannot complete, a bad data file, and the per-device progress a worker mirrors
// into its status file.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"

namespace oneflow {
namespace {

proto::Plan CompileMlp(int64_t dp, int64_t tp, const std::string& record_file = "") {
  testing::MlpPlanSpec spec;
  spec.layout = testing::OnOneNode(dp, tp);
  spec.model.record_file = record_file;
  absl::StatusOr<proto::Plan> plan = testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// Device 1 never joins its first collective in time: device 0's call gives up after the
// collective timeout with a message naming the actor, the collective, its sequence
// number and the rank it waited for, and the whole run stops well before the progress
// timeout.
TEST(RuntimeFailuresTest, CollectiveThatCannotCompleteTimesOutWithItsNames) {
  const proto::Plan plan = CompileMlp(2, 1);
  actors::TrainOptions options;
  options.iterations = 3;
  options.collective_timeout = absl::Milliseconds(500);
  options.progress_timeout = std::chrono::milliseconds(30000);
  std::string stalled_actor;
  options.wrap_act = [&](const actors::ActorBinding& binding, actors::ActFunction act) -> actors::ActFunction {
    // The first collective of device 1's static order.
    if (binding.device_index != 1 || binding.actor->collective_id() != plan.devices(1).collective_order(0)) return act;
    stalled_actor = binding.actor->name();
    return [act](int64_t iteration, const actors::ActContext& context) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2000));
      return act(iteration, context);
    };
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  const std::string message(result.status().message());
  std::printf("the run failed with: %s\n", message.c_str());  // docs/runtime.md quotes it.
  // Device 0's side of the stalled collective (the first in the device's order).
  EXPECT_NE(message.find("device 0:0"), std::string::npos) << message;
  EXPECT_NE(message.find("collective"), std::string::npos) << message;
  EXPECT_NE(message.find(" sequence 0 iteration 0"), std::string::npos) << message;
  EXPECT_NE(message.find("rank"), std::string::npos) << message;  // The rank it waited for.
  EXPECT_LT(seconds, 5.0);
}

TEST(RuntimeFailuresTest, ProgressCountsEveryCollectiveAndIterationPerDevice) {
  const proto::Plan plan = CompileMlp(2, 1);
  actors::TrainOptions options;
  options.iterations = 4;
  std::mutex mutex;
  std::vector<int64_t> collectives(plan.devices_size(), 0), iterations(plan.devices_size(), 0);
  options.on_collective_done = [&](int device, int64_t completed) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(completed, collectives[device] + 1) << "collectives complete one at a time, in order";
    collectives[device] = completed;
  };
  options.on_iteration_done = [&](int device, int64_t completed) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(completed, iterations[device] + 1);
    iterations[device] = completed;
  };
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (int d = 0; d < plan.devices_size(); ++d) {
    EXPECT_GT(plan.devices(d).collective_order_size(), 0);
    EXPECT_EQ(collectives[d], 4 * plan.devices(d).collective_order_size()) << "device " << d;
    EXPECT_EQ(iterations[d], 4) << "device " << d;
  }
}

TEST(RuntimeFailuresTest, BadRecordFileNamesTheFileAndTheRecordSize) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/short.f32";
  FILE* file = fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  const float values[7] = {1, 2, 3, 4, 5, 6, 7};
  fwrite(values, sizeof(float), 7, file);  // Records are 4 features + 1 label = 5 floats.
  fclose(file);
  actors::TrainOptions options;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(CompileMlp(1, 1, path), options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("record file '" + path +
                                           "' has 28 bytes; data source 'data' needs a positive whole number of "
                                           "20-byte records (5 f32 values per sample: its outputs in order)"),
            std::string::npos)
      << result.status();
}

// A plan for cuda devices is valid (inspect shows it) but this build runs CPU devices
// only: the runtime and the daemon's submit check refuse it before anything runs.
TEST(RuntimeFailuresTest, CudaPlanIsRefusedBeforeAnythingRuns) {
  proto::Plan plan = CompileMlp(2, 1);
  plan.mutable_cluster()->set_device_type(proto::DEVICE_CUDA);
  for (proto::LogicalOpSbp& op : *plan.mutable_op_sbps()) op.mutable_placement()->set_device_type(proto::DEVICE_CUDA);
  ASSERT_TRUE(SealPlan(&plan).ok());
  ASSERT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  actors::TrainOptions train;
  train.iterations = 1;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, train);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  EXPECT_EQ(result.status().message(),
            "plan of job 'mlp' places op '" + plan.op_sbps(0).op_name() +
                "' on cuda devices, but this build runs CPU devices only (its CUDA kernels and NCCL communicator "
                "are not wired into the runtime yet); compile the job for a cpu cluster to run it here");
  EXPECT_EQ(CheckDevicesRunHere(plan).message(), result.status().message());
}

}  // namespace
}  // namespace oneflow
