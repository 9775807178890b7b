#include "actors/flight_recorder.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/flight_recorder.pb.h"

namespace oneflow::actors {
namespace {

// Two devices of node 0 and one of node 1, one all-reduce over all three.
proto::Plan ThreeDevicePlan() {
  proto::Plan plan;
  proto::CollectiveDef* collective = plan.add_collectives();
  collective->set_id(0);
  collective->set_kind(proto::ALL_REDUCE);
  collective->set_bytes_per_device(4096);
  for (const auto& [node, device] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 0}}) {
    proto::DeviceId* member = collective->add_group();
    member->set_node(node);
    member->set_device(device);
    proto::DevicePlan* plan_device = plan.add_devices();
    *plan_device->mutable_device() = *member;
    plan_device->add_collective_order(0);
    proto::ActorDef* actor = plan_device->add_actors();
    actor->set_name("grad/all_reduce");
    actor->set_collective_id(0);
  }
  return plan;
}

proto::FlightDump Parse(const std::string& json) {
  proto::FlightDump dump;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &dump);
  EXPECT_TRUE(status.ok()) << status.message() << "\n" << json;
  return dump;
}

TEST(FlightRecorderTest, KeepsTheLastEntriesInOrder) {
  const proto::Plan plan = ThreeDevicePlan();
  FlightRecorder recorder(plan, /*node=*/0, /*capacity=*/4);
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(recorder.Begin(0, 0, i), i);
    FlightRecorder::NoteCollectiveStart();
    recorder.End(0, /*ok=*/i != 8);
  }
  recorder.Begin(0, 0, 10);  // still in it
  const proto::FlightDump dump = Parse(recorder.DumpJson("test", "job-1"));
  EXPECT_EQ(dump.format(), "oneflow-flight-recorder");
  EXPECT_EQ(dump.job(), "job-1");
  EXPECT_EQ(dump.reason(), "test");
  ASSERT_EQ(dump.devices_size(), 2);  // node 0's devices only
  const proto::FlightDevice& device = dump.devices(0);
  EXPECT_EQ(device.device(), "0:0");
  EXPECT_EQ(device.recorded(), 11);
  ASSERT_EQ(device.entries_size(), 4);
  for (int k = 0; k < 4; ++k) {
    const proto::FlightEntry& entry = device.entries(k);
    EXPECT_EQ(entry.sequence(), 7 + k);
    EXPECT_EQ(entry.iteration(), 7 + k);
    EXPECT_EQ(entry.group_rank(), 0);
    EXPECT_GT(entry.enqueue_ns(), 0);
    EXPECT_GT(entry.enqueue_unix_ns(), 0);
  }
  EXPECT_EQ(device.entries(0).state(), "ok");
  EXPECT_EQ(device.entries(1).state(), "failed");
  EXPECT_EQ(device.entries(3).state(), "running");
  EXPECT_EQ(device.entries(3).end_ns(), 0);
  EXPECT_EQ(device.entries(3).start_ns(), 0);  // NoteCollectiveStart not called yet
  EXPECT_GE(device.entries(0).start_ns(), device.entries(0).enqueue_ns());
  EXPECT_GE(device.entries(0).end_ns(), device.entries(0).start_ns());
  EXPECT_EQ(dump.devices(1).device(), "0:1");
  EXPECT_EQ(dump.devices(1).entries_size(), 0);
  ASSERT_EQ(dump.collectives_size(), 1);
  EXPECT_EQ(dump.collectives(0).kind(), "ALL_REDUCE");
  EXPECT_EQ(dump.collectives(0).group(), "devices [0:0, 0:1, 1:0]");
  EXPECT_EQ(dump.collectives(0).members_size(), 3);
  EXPECT_EQ(dump.collectives(0).bytes(), 4096);
  EXPECT_EQ(dump.collectives(0).actor(), "grad/all_reduce");
}

TEST(FlightRecorderTest, ProgressSinkSeesEnteredCollectivesAndTheirTime) {
  const proto::Plan plan = ThreeDevicePlan();
  FlightRecorder recorder(plan, /*node=*/0);
  std::vector<std::vector<int64_t>> calls;
  recorder.SetProgressSink([&](const FlightRecorder::Progress& p) {
    calls.push_back({p.device_index, p.entered, p.collective_id, p.collective_ns, p.group, p.group_entered,
                     p.group_completed, p.group_collective});
  });
  recorder.Begin(1, 0, 0);
  ASSERT_EQ(calls.size(), 1u);
  // Inside collective 0: entered 1, in its group (0) too, none completed.
  EXPECT_EQ(calls[0], (std::vector<int64_t>{1, 1, 0, 0, 0, 1, 0, 0}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  recorder.End(1, true);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1][1], 1);
  EXPECT_GT(calls[1][3], 0);  // The act's time is counted once it ended.
  EXPECT_EQ(calls[1][6], 1);  // completed in the group
  recorder.Begin(1, 0, 1);
  EXPECT_EQ(calls[2][1], 2);
  EXPECT_EQ(calls[2][3], calls[1][3]);
  EXPECT_EQ(calls[2][5], 2);
  EXPECT_EQ(calls[2][6], 1);
}

TEST(FlightRecorderTest, TwoStreamsOfOneDeviceNumberTheirGroupsApart) {
  // Device 0:0 also has a collective with 0:1 alone (another group, another stream).
  proto::Plan plan = ThreeDevicePlan();
  proto::CollectiveDef* pair = plan.add_collectives();
  pair->set_id(1);
  pair->set_kind(proto::ALL_GATHER);
  pair->set_stream(1);
  *pair->add_group() = plan.devices(0).device();
  *pair->add_group() = plan.devices(1).device();
  plan.mutable_devices(0)->add_collective_order(1);
  constexpr int kActs = 500;
  FlightRecorder recorder(plan, /*node=*/0, /*capacity=*/2 * kActs);
  // One thread per stream, as the engine runs them: their acts interleave at random.
  auto stream = [&](int64_t collective) {
    for (int i = 0; i < kActs; ++i) recorder.Close(0, recorder.Begin(0, collective, i), true);
  };
  std::thread first(stream, 0), second(stream, 1);
  first.join();
  second.join();
  const proto::FlightDump dump = Parse(recorder.DumpJson("streams"));
  const proto::FlightDevice& device = dump.devices(0);
  ASSERT_EQ(device.entries_size(), 2 * kActs);
  EXPECT_EQ(device.group_recorded().at("devices [0:0, 0:1, 1:0]"), kActs);
  EXPECT_EQ(device.group_recorded().at("devices [0:0, 0:1]"), kActs);
  // Device-wide numbers in recording order; each group's numbers count its own acts in
  // that order (the iteration the thread passed is the act's index in its stream).
  std::map<int64_t, int64_t> next = {{0, 0}, {1, 0}};
  for (int k = 0; k < device.entries_size(); ++k) {
    const proto::FlightEntry& entry = device.entries(k);
    EXPECT_EQ(entry.sequence(), k);
    ASSERT_TRUE(entry.has_group_sequence());
    EXPECT_EQ(entry.group_sequence(), next[entry.collective()]++) << "entry " << k;
    EXPECT_EQ(entry.group_sequence(), entry.iteration());
  }
}

TEST(FlightRecorderTest, WrapsOnlyCollectiveActorsOfRecordedDevices) {
  const proto::Plan plan = ThreeDevicePlan();
  FlightRecorder recorder(plan, /*node=*/0);
  int calls = 0;
  ActFunction act = [&](int64_t, const ActContext&) {
    ++calls;
    return absl::OkStatus();
  };
  ActorBinding binding{&plan, 1, &plan.devices(1).actors(0)};
  ActFunction wrapped = recorder.Wrap(binding, act);
  class NoContext : public ActContext {
    void* RegisterSlot(int64_t, int64_t) const override { return nullptr; }
  } context;
  ASSERT_TRUE(wrapped(0, context).ok());
  ASSERT_TRUE(wrapped(1, context).ok());
  EXPECT_EQ(calls, 2);
  const proto::FlightDump dump = Parse(recorder.DumpJson("x"));
  EXPECT_EQ(dump.devices(1).recorded(), 2);
  // A device of another node passes through unrecorded (and must not crash).
  ActorBinding other{&plan, 2, &plan.devices(2).actors(0)};
  ASSERT_TRUE(recorder.Wrap(other, act)(0, context).ok());
}

TEST(FlightRecorderTest, WritesTheDumpFile) {
  const proto::Plan plan = ThreeDevicePlan();
  FlightRecorder recorder(plan, /*node=*/-1);
  recorder.Begin(2, 0, 0);
  const std::string path = ::testing::TempDir() + "/flight.json";
  ASSERT_TRUE(recorder.WriteDump(path, "SIGUSR1").ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const proto::FlightDump dump = Parse(text.str());
  EXPECT_EQ(dump.node(), -1);
  ASSERT_EQ(dump.devices_size(), 3);
  EXPECT_EQ(dump.devices(2).entries(0).group_rank(), 2);
  const absl::Status bad = recorder.WriteDump("/nonexistent-dir/flight.json", "x");
  EXPECT_EQ(bad.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(bad.message().find("/nonexistent-dir/flight.json"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace oneflow::actors
