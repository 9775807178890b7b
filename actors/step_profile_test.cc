// ProfileStep and FindCriticalPath on hand-made acts with known durations: every figure
// is exact.
#include "actors/step_profile.h"

#include <numeric>

#include "actors/critical_path.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Data parallel over two devices. On device d (actor ids 10 d + ...): 0 data source
// (compute thread), 1 matmul (compute), 2 all_reduce (communication thread, collective
// 0: 4000 B per device), 3 sgd_update (compute). Registers 0: data -> matmul,
// 1: matmul -> all_reduce, 2: all_reduce -> sgd_update, one slot each.
proto::Plan TwoDevicePlan() {
  proto::Plan plan;
  plan.mutable_job()->set_name("dp2");
  proto::CollectiveDef* collective = plan.add_collectives();
  collective->set_id(0);
  collective->set_kind(proto::ALL_REDUCE);
  collective->set_bytes_per_device(4000);
  for (int d = 0; d < 2; ++d) {
    proto::DevicePlan* device = plan.add_devices();
    device->mutable_device()->set_device(d);
    auto actor = [&](int64_t id, const char* name, proto::ThreadKind thread, const char* kernel,
                     std::vector<int64_t> consumed, std::vector<int64_t> produced) {
      proto::ActorDef* def = device->add_actors();
      def->set_id(10 * d + id);
      def->set_name(name);
      def->set_thread(thread);
      def->set_kind(kernel == nullptr ? proto::ACTOR_DATA_SOURCE : proto::ACTOR_COMPUTE);
      def->set_collective_id(-1);
      if (kernel != nullptr) def->add_kernels()->set_name(kernel);
      for (int64_t r : consumed) def->add_consumed_registers(r);
      for (int64_t r : produced) def->add_produced_registers(r);
      return def;
    };
    actor(0, "data", proto::THREAD_COMPUTE, nullptr, {}, {0});
    actor(1, "mm", proto::THREAD_COMPUTE, "matmul", {0}, {1});
    proto::ActorDef* all_reduce = actor(2, "mm_grad/all_reduce", proto::THREAD_COMMUNICATION, "all_reduce", {1}, {2});
    all_reduce->set_kind(proto::ACTOR_BOXING);
    all_reduce->set_collective_id(0);
    actor(3, "sgd", proto::THREAD_COMPUTE, "sgd_update", {2}, {});
    for (int64_t r = 0; r < 3; ++r) {
      proto::RegisterDef* reg = device->add_registers();
      reg->set_id(r);
      reg->set_producer_actor(10 * d + r);
      reg->add_consumer_actors(10 * d + r + 1);
      reg->set_count(1);
    }
  }
  return plan;
}

// Three iterations; iteration 0 is warm-up. Device 0's data source runs iteration 1
// from 70, before iteration 0 ended (75): 5 ns of it are in the window [75, 250). In
// iteration 2 device 0's all_reduce arrives last (215) and device 1's update starts 2 ns
// after its input was ready.
std::vector<ActRecord> Acts() {
  auto act = [](int device, int64_t actor, int64_t index, int64_t start, int64_t end) {
    const int thread = actor == 2 ? proto::THREAD_COMMUNICATION : proto::THREAD_COMPUTE;
    return ActRecord{thread, device, 10 * device + actor, index, start, end};
  };
  return {
      // Iteration 0.
      act(0, 0, 0, 0, 10), act(0, 1, 0, 10, 40), act(0, 2, 0, 40, 60), act(0, 3, 0, 60, 70),
      act(1, 0, 0, 0, 10), act(1, 1, 0, 10, 50), act(1, 2, 0, 50, 60), act(1, 3, 0, 60, 75),
      // Iteration 1.
      act(0, 0, 1, 70, 80), act(0, 1, 1, 80, 110), act(0, 2, 1, 110, 140), act(0, 3, 1, 140, 150),
      act(1, 0, 1, 75, 85), act(1, 1, 1, 85, 125), act(1, 2, 1, 125, 140), act(1, 3, 1, 140, 160),
      // Iteration 2.
      act(0, 0, 2, 160, 170), act(0, 1, 2, 170, 215), act(0, 2, 2, 215, 230), act(0, 3, 2, 230, 240),
      act(1, 0, 2, 160, 170), act(1, 1, 2, 170, 210), act(1, 2, 2, 210, 230), act(1, 3, 2, 232, 250),
  };
}

const ProfileRow& Row(const std::vector<ProfileRow>& rows, const std::string& name, int device = -1) {
  for (const ProfileRow& row : rows) {
    if (row.name == name && row.device_index == device) return row;
  }
  ADD_FAILURE() << "no row " << name << " on " << device;
  static const ProfileRow none;
  return none;
}

TEST(ProfileStepTest, WindowAndStep) {
  absl::StatusOr<StepProfile> profile = ProfileStep(TwoDevicePlan(), Acts());
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->first_iteration, 1);
  EXPECT_EQ(profile->last_iteration, 2);
  EXPECT_EQ(profile->iterations, 2);
  EXPECT_EQ(profile->window_start_ns, 75);
  EXPECT_EQ(profile->window_end_ns, 250);
  EXPECT_THAT(profile->step_ns, DoubleEq(87.5));
  EXPECT_THAT(profile->iteration_end_ns, ElementsAre(75, 160, 250));
  EXPECT_THAT(profile->devices, ElementsAre(0, 1));
}

TEST(ProfileStepTest, OpTypesPerDevice) {
  absl::StatusOr<StepProfile> profile = ProfileStep(TwoDevicePlan(), Acts());
  ASSERT_TRUE(profile.ok()) << profile.status();
  std::vector<std::string> order;
  for (const ProfileRow& row : profile->op_types) order.push_back(row.op_type);
  EXPECT_THAT(order, ElementsAre("matmul", "all_reduce", "sgd_update", "data_source"));
  // matmul: device 0 (30 + 45) / 2, device 1 (40 + 40) / 2; their mean over 87.5.
  const ProfileRow& matmul = Row(profile->op_types, "matmul");
  EXPECT_THAT(matmul.ns_per_device, ElementsAre(37.5, 40));
  EXPECT_THAT(matmul.ns_per_iteration, DoubleEq(38.75));
  EXPECT_THAT(matmul.share, DoubleEq(38.75 / 87.5));
  EXPECT_THAT(matmul.calls_per_iteration, DoubleEq(1));
  EXPECT_THAT(matmul.bytes_per_iteration, DoubleEq(0));
  // The data source's act of iteration 1 on device 0 counts 5 of its 10 ns (75..80).
  const ProfileRow& data = Row(profile->op_types, "data_source");
  EXPECT_THAT(data.ns_per_device, ElementsAre(7.5, 10));
  EXPECT_THAT(data.share, DoubleEq(0.1));
  EXPECT_THAT(data.calls_per_iteration, DoubleEq(1));
  const ProfileRow& all_reduce = Row(profile->op_types, "all_reduce");
  EXPECT_EQ(all_reduce.thread, proto::THREAD_COMMUNICATION);
  EXPECT_THAT(all_reduce.ns_per_device, ElementsAre(22.5, 17.5));
  EXPECT_THAT(all_reduce.share, DoubleEq(20 / 87.5));
  EXPECT_THAT(all_reduce.bytes_per_iteration, DoubleEq(4000));
  EXPECT_THAT(all_reduce.bytes_per_second, DoubleEq(4000 / 20e-9));
  EXPECT_THAT(Row(profile->op_types, "sgd_update").ns_per_device, ElementsAre(10, 19));
}

TEST(ProfileStepTest, Actors) {
  absl::StatusOr<StepProfile> profile = ProfileStep(TwoDevicePlan(), Acts());
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_EQ(profile->actors.size(), 8u);
  EXPECT_EQ(profile->actors[0].name, "mm");
  EXPECT_EQ(profile->actors[0].device_index, 1);
  EXPECT_THAT(profile->actors[0].ns_per_iteration, DoubleEq(40));
  EXPECT_THAT(profile->actors[0].share, DoubleEq(40 / 87.5));
  const ProfileRow& all_reduce = Row(profile->actors, "mm_grad/all_reduce", 0);
  EXPECT_EQ(all_reduce.actor_id, 2);
  EXPECT_EQ(all_reduce.op_type, "all_reduce");
  EXPECT_THAT(all_reduce.ns_per_iteration, DoubleEq(22.5));
  EXPECT_THAT(all_reduce.bytes_per_iteration, DoubleEq(4000));
  EXPECT_THAT(all_reduce.bytes_per_second, DoubleEq(4000 / 22.5e-9));
}

TEST(ProfileStepTest, ThreadsAddUpToTheStep) {
  absl::StatusOr<StepProfile> profile = ProfileStep(TwoDevicePlan(), Acts());
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_EQ(profile->threads.size(), 4u);
  const ThreadTime& compute0 = profile->threads[0];
  EXPECT_EQ(compute0.device_index, 0);
  EXPECT_EQ(compute0.thread, proto::THREAD_COMPUTE);
  EXPECT_THAT(compute0.compute_ns, DoubleEq(55));
  EXPECT_THAT(compute0.communication_ns, DoubleEq(0));
  EXPECT_THAT(compute0.idle_ns, DoubleEq(32.5));
  const ThreadTime& communication1 = profile->threads[3];
  EXPECT_EQ(communication1.device_index, 1);
  EXPECT_EQ(communication1.thread, proto::THREAD_COMMUNICATION);
  EXPECT_THAT(communication1.communication_ns, DoubleEq(17.5));
  EXPECT_THAT(communication1.idle_ns, DoubleEq(70));
  // On each compute thread the op types' times plus idle are the step.
  for (const ThreadTime& thread : profile->threads) {
    EXPECT_THAT(thread.compute_ns + thread.communication_ns + thread.idle_ns, DoubleEq(87.5));
    if (thread.thread != proto::THREAD_COMPUTE) continue;
    double types = 0;
    for (const ProfileRow& row : profile->op_types) {
      if (row.thread == proto::THREAD_COMPUTE) types += row.ns_per_device[thread.device_index];
    }
    EXPECT_THAT(types + thread.idle_ns, DoubleEq(87.5)) << "device " << thread.device_index;
  }
}

TEST(ProfileStepTest, WarmUpOnlyIsAnError) {
  std::vector<ActRecord> acts = Acts();
  acts.resize(8);
  absl::StatusOr<StepProfile> profile = ProfileStep(TwoDevicePlan(), acts);
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(profile.status().message(), HasSubstr("iterations 0..0 only"));
}

int64_t Total(const CriticalPath& path) {
  int64_t total = 0;
  for (const PathStep& step : path.steps) total += step.path_end_ns - step.path_start_ns + step.wait_ns;
  return total;
}

TEST(CriticalPathTest, RendezvousAndWait) {
  absl::StatusOr<CriticalPath> path = FindCriticalPath(TwoDevicePlan(), Acts(), 2);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->start_ns, 160);
  EXPECT_EQ(path->end_ns, 250);
  ASSERT_EQ(path->steps.size(), 4u);
  // data (device 0) -> mm (device 0) -> device 1's all_reduce from when device 0's
  // arrived -> device 1's update, 2 ns after its input.
  const std::vector<PathStep>& s = path->steps;
  EXPECT_EQ(s[0].act.actor_id, 0);
  EXPECT_EQ(s[0].edge, PathEdge::kStart);
  EXPECT_EQ(s[1].act.actor_id, 1);
  EXPECT_EQ(s[1].edge, PathEdge::kRegister);
  EXPECT_EQ(s[1].path_start_ns, 170);
  EXPECT_EQ(s[1].path_end_ns, 215);
  EXPECT_EQ(s[2].act.actor_id, 12);
  EXPECT_EQ(s[2].rendezvous_device, 0);
  EXPECT_EQ(s[2].path_start_ns, 215);
  EXPECT_EQ(s[2].path_end_ns, 230);
  EXPECT_EQ(s[3].act.actor_id, 13);
  EXPECT_EQ(s[3].wait_ns, 2);
  EXPECT_EQ(s[3].edge, PathEdge::kRegister);
  EXPECT_EQ(Total(*path), 90);
}

TEST(CriticalPathTest, ClippedAtThePreviousIteration) {
  absl::StatusOr<CriticalPath> path = FindCriticalPath(TwoDevicePlan(), Acts(), 1);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->start_ns, 75);
  EXPECT_EQ(path->end_ns, 160);
  ASSERT_EQ(path->steps.size(), 4u);
  EXPECT_EQ(path->steps[0].act.actor_id, 10);
  EXPECT_EQ(path->steps[0].path_start_ns, 75);
  EXPECT_EQ(Total(*path), 85);
}

TEST(CriticalPathTest, WaitBeforeTheFirstAct) {
  // Device 1's data source of iteration 2 starts 5 ns after iteration 1 ended, and ends
  // the same; device 0 is no longer the last to arrive: the path runs on device 1 and
  // begins with 5 ns of waiting.
  std::vector<ActRecord> acts = Acts();
  acts[20] = ActRecord{proto::THREAD_COMPUTE, 1, 10, 2, 165, 170};
  acts[17] = ActRecord{proto::THREAD_COMPUTE, 0, 1, 2, 170, 200};  // device 0 no longer last
  acts[18] = ActRecord{proto::THREAD_COMMUNICATION, 0, 2, 2, 200, 230};
  absl::StatusOr<CriticalPath> path = FindCriticalPath(TwoDevicePlan(), acts, 2);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(Total(*path), 90);
  EXPECT_EQ(path->steps.front().act.actor_id, 10);
  EXPECT_EQ(path->steps.front().path_start_ns, 165);
  EXPECT_EQ(path->steps.front().wait_ns, 5);
}

TEST(CriticalPathTest, NoActsOfTheIteration) {
  absl::StatusOr<CriticalPath> path = FindCriticalPath(TwoDevicePlan(), Acts(), 7);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow::actors
