// End to end: one device's collective stalls past the collective timeout on a compiled
// mlp (dp=2, both devices in this process); the run fails, the flight recorder dump is
// written at the first error, and `oneflow diagnose`'s analysis names the stalled device.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "actors/flight_recorder.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"
#include "tools/cli/diagnose.h"

namespace oneflow {
namespace {

proto::Plan CompileMlp() {
  testing::MlpPlanSpec spec;
  spec.layout = testing::OnOneNode(/*dp=*/2);
  absl::StatusOr<proto::Plan> plan = testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

TEST(FlightRecorderEndToEndTest, StalledRankIsNamedFromTheDump) {
  const proto::Plan plan = CompileMlp();
  const int64_t per_iteration = plan.devices(1).collective_order_size();
  ASSERT_GT(per_iteration, 0);
  actors::FlightRecorder recorder(plan, /*node=*/-1);
  const std::string path = ::testing::TempDir() + "/flight-node0.json";
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = 5;
  options.collective_timeout = absl::Milliseconds(300);
  options.flight_recorder = &recorder;
  options.on_failure = [&](const absl::Status& error) {
    ASSERT_TRUE(recorder.WriteDump(path, error.message(), "e2e").ok());
  };
  // Device 1 enters the first collective of iteration 2 two seconds late.
  const int64_t stalled_collective = plan.devices(1).collective_order(0);
  options.wrap_act = [&](const actors::ActorBinding& binding, actors::ActFunction act) -> actors::ActFunction {
    if (binding.device_index != 1 || binding.actor->collective_id() != stalled_collective) return act;
    return [act](int64_t iteration, const actors::ActContext& context) {
      if (iteration == 2) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
      return act(iteration, context);
    };
  };
  const absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();

  const absl::StatusOr<proto::FlightDump> dump = cli::ReadFlightDump(path);
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_EQ(dump->devices_size(), 2);
  EXPECT_EQ(dump->devices(1).recorded(), 2 * per_iteration);  // it never entered sequence 2 × per_iteration
  const cli::Diagnosis diagnosis = cli::Diagnose({*dump});
  const std::string text = cli::RenderDiagnosisText(diagnosis);
  std::printf("%s", text.c_str());  // docs/diagnosis.md quotes it.
  ASSERT_FALSE(diagnosis.findings.empty()) << text;
  const cli::Finding& hang = diagnosis.findings[0];
  EXPECT_EQ(hang.kind, cli::Finding::Kind::kHang) << text;
  EXPECT_EQ(hang.suspects, std::vector<std::string>{"0:1"}) << text;
  EXPECT_EQ(hang.arrived, std::vector<std::string>{"0:0"}) << text;
  EXPECT_EQ(hang.sequence, 2 * per_iteration) << text;
  EXPECT_EQ(hang.collective, stalled_collective) << text;
}

}  // namespace
}  // namespace oneflow
