// End to end: one device's collective stalls past the collective timeout on a compiled
// mlp (dp=2, both devices in this process); the run fails, the flight recorder dump is
// written at the first error, and `oneflow diagnose`'s analysis names the stalled device.
// And a recorder's dump of two ranks whose two communication streams interleave
// differently: `oneflow diagnose` pairs their calls by group sequence, not by the device's.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

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

// dp=2 x tp=2 on 2 nodes as ZeRO-1 issues it: the tp all-reduces on stream 0, the dp
// all-gathers (a 20 B and a 2560 B one per iteration) on stream 1.
enum Collective { kTp0 = 0, kTp1 = 1, kGatherSmall = 2, kGatherLarge = 3 };
proto::Plan TwoStreamPlan() {
  proto::Plan plan;
  auto id = [](int node, int device) {
    proto::DeviceId d;
    d.set_node(node);
    d.set_device(device);
    return d;
  };
  const std::vector<proto::DeviceId> devices = {id(0, 0), id(0, 1), id(1, 0), id(1, 1)};
  auto add = [&](proto::CollectiveKind kind, int64_t bytes, int64_t stream, std::vector<int> members) {
    proto::CollectiveDef* collective = plan.add_collectives();
    collective->set_id(plan.collectives_size() - 1);
    collective->set_kind(kind);
    collective->set_bytes_per_device(bytes);
    collective->set_stream(stream);
    for (const int m : members) *collective->add_group() = devices[m];
  };
  add(proto::ALL_REDUCE, 2560, 0, {0, 1});   // kTp0
  add(proto::ALL_REDUCE, 2560, 0, {2, 3});   // kTp1
  add(proto::ALL_GATHER, 20, 1, {0, 2});     // kGatherSmall
  add(proto::ALL_GATHER, 2560, 1, {0, 2});   // kGatherLarge
  for (int d = 0; d < 4; ++d) {
    proto::DevicePlan* device = plan.add_devices();
    *device->mutable_device() = devices[d];
    device->add_collective_order(d < 2 ? kTp0 : kTp1);
    if (d % 2 == 0) {
      device->add_collective_order(kGatherSmall);
      device->add_collective_order(kGatherLarge);
    }
  }
  return plan;
}

// The acts below run back to back, one device after the other: the second device's
// lateness is only the time between them, which a preemption under load could make look
// like a slow rank. These tests are about alignment, not slowness.
const cli::DiagnoseOptions kNoSlowRanks = [] {
  cli::DiagnoseOptions options;
  options.slow_min_samples = 1 << 30;
  return options;
}();

// Device `device` acts out `order` (collective ids) `iterations` times, each act closed.
void Act(actors::FlightRecorder& recorder, int device, const std::vector<int64_t>& order, int iterations) {
  for (int i = 0; i < iterations; ++i) {
    for (const int64_t collective : order) recorder.Close(device, recorder.Begin(device, collective, i), true);
  }
}

proto::FlightDump Dump(const actors::FlightRecorder& recorder, const std::string& reason) {
  const absl::StatusOr<proto::FlightDump> dump = cli::ParseFlightDump(recorder.DumpJson(reason), reason);
  EXPECT_TRUE(dump.ok()) << dump.status();
  return dump.ok() ? *dump : proto::FlightDump();
}

TEST(FlightRecorderEndToEndTest, StreamsInterleavingDifferentlyOnTwoRanksAreNoMismatch) {
  const proto::Plan plan = TwoStreamPlan();
  actors::FlightRecorder recorder(plan, /*node=*/-1);
  // Device 0:0's dp stream runs ahead of its tp stream, 1:0's behind: the first
  // iteration's gathers get device sequence numbers 0, 1 on 0:0 and 1, 2 on 1:0.
  Act(recorder, 0, {kGatherSmall, kGatherLarge, kTp0}, 3);
  Act(recorder, 2, {kTp1, kGatherSmall, kGatherLarge}, 3);
  const proto::FlightDump dump = Dump(recorder, "two streams");
  const proto::FlightDevice& first = dump.devices(0);
  ASSERT_EQ(first.entries_size(), 9);
  EXPECT_EQ(first.entries(1).collective(), kGatherLarge);
  EXPECT_EQ(first.entries(1).sequence(), 1);
  EXPECT_EQ(first.entries(1).group_sequence(), 1);
  EXPECT_EQ(first.entries(2).group_sequence(), 0);  // its first tp all-reduce
  EXPECT_EQ(first.group_recorded().at("devices [0:0, 1:0]"), 6);
  EXPECT_EQ(first.group_recorded().at("devices [0:0, 0:1]"), 3);
  EXPECT_EQ(dump.devices(2).entries(2).sequence(), 2);
  EXPECT_EQ(dump.devices(2).entries(2).group_sequence(), 1);  // 1:0's large gather: the same call
  const cli::Diagnosis diagnosis = cli::Diagnose({dump}, kNoSlowRanks);
  EXPECT_FALSE(diagnosis.by_device_sequence);
  EXPECT_TRUE(diagnosis.findings.empty()) << cli::RenderDiagnosisText(diagnosis);

  // The same dump without group sequence numbers (as an older worker wrote it): aligned by
  // the device's numbers, the gathers pair wrongly, and the text says how it aligned.
  proto::FlightDump old = dump;
  for (proto::FlightDevice& device : *old.mutable_devices()) {
    device.clear_group_recorded();
    for (proto::FlightEntry& entry : *device.mutable_entries()) entry.clear_group_sequence();
  }
  const cli::Diagnosis by_device = cli::Diagnose({old}, kNoSlowRanks);
  EXPECT_TRUE(by_device.by_device_sequence);
  ASSERT_EQ(by_device.findings.size(), 3u) << cli::RenderDiagnosisText(by_device);  // sequences 1, 4, 7
  EXPECT_EQ(by_device.findings[0].text,
            "mismatch: group devices [0:0, 1:0] sequence 1: the ranks called different collectives: ALL_GATHER 20 B on "
            "1:0; ALL_GATHER 2560 B on 0:0")
      << cli::RenderDiagnosisText(by_device);
  EXPECT_EQ(cli::RenderDiagnosisText(by_device).rfind("note: these dumps have no per-group sequence numbers", 0), 0u);
}

TEST(FlightRecorderEndToEndTest, DifferentCallsAtOneGroupSequenceAreStillAMismatch) {
  const proto::Plan plan = TwoStreamPlan();
  actors::FlightRecorder recorder(plan, /*node=*/-1);
  Act(recorder, 0, {kGatherSmall, kTp0, kGatherLarge}, 2);
  // 1:0 runs its gathers in the other order: its first dp call is the large one.
  Act(recorder, 2, {kTp1, kGatherLarge, kGatherSmall}, 2);
  const cli::Diagnosis diagnosis = cli::Diagnose({Dump(recorder, "swapped")}, kNoSlowRanks);
  ASSERT_EQ(diagnosis.findings.size(), 4u) << cli::RenderDiagnosisText(diagnosis);
  EXPECT_EQ(diagnosis.findings[0].kind, cli::Finding::Kind::kMismatch);
  EXPECT_EQ(diagnosis.findings[0].text,
            "mismatch: group devices [0:0, 1:0] sequence 0: the ranks called different collectives: ALL_GATHER 20 B on "
            "0:0; ALL_GATHER 2560 B on 1:0");
  EXPECT_EQ(diagnosis.findings[3].sequence, 3);
}

}  // namespace
}  // namespace oneflow
