#include "actors/engine.h"

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "actors/thread_priority.h"
#include "oneflow_core/comm/compute_activity.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"

namespace oneflow::actors {
namespace {

proto::Plan MlpPlan(int64_t dp, int64_t tp, int64_t register_count, int64_t micro_batches = 1) {
  oneflow::testing::MlpPlanSpec spec;
  spec.layout = oneflow::testing::OnOneNode(dp, tp);
  spec.layout.micro_batches = micro_batches;
  spec.model = examples::MlpConfig();
  spec.model.batch = 16;
  spec.model.in_features = 8;
  spec.model.hidden = 16;
  spec.model.classes = 4;
  spec.options.register_count = register_count;
  absl::StatusOr<proto::Plan> plan = oneflow::testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// Acts that only take a little time, so threads interleave.
BindFunction Sleepy(std::chrono::microseconds duration) {
  return [duration](const ActorBinding&) -> absl::StatusOr<ActFunction> {
    return ActFunction([duration](int64_t, const ActContext&) {
      std::this_thread::sleep_for(duration);
      return absl::OkStatus();
    });
  };
}

TEST(EngineTest, EveryActorActsOncePerIterationInOrder) {
  const proto::Plan plan = MlpPlan(2, 2, 2);
  EngineOptions options;
  options.iterations = 5;
  options.record_acts = true;
  absl::StatusOr<EngineResult> result = RunEngine(plan, Sleepy(std::chrono::microseconds(10)), options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::map<int64_t, std::vector<int64_t>> iterations;  // actor -> iterations in act order
  for (const ActRecord& act : result->acts) iterations[act.actor_id].push_back(act.iteration);
  int64_t actors = 0;
  for (const proto::DevicePlan& device : plan.devices()) actors += device.actors_size();
  ASSERT_EQ(static_cast<int64_t>(iterations.size()), actors);
  for (const auto& [actor, seen] : iterations) {
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4})) << "actor " << actor;
  }
}

// On each device: does any act of iteration i + 1 start before the last act of
// iteration i ends?
bool IterationsOverlap(const EngineResult& result) {
  std::map<std::pair<int, int64_t>, std::pair<int64_t, int64_t>> span;  // (device, it) -> [first start, last end]
  for (const ActRecord& act : result.acts) {
    auto [it, inserted] = span.try_emplace({act.device_index, act.iteration}, act.start_ns, act.end_ns);
    it->second.first = std::min(it->second.first, act.start_ns);
    it->second.second = std::max(it->second.second, act.end_ns);
  }
  for (const auto& [key, interval] : span) {
    auto next = span.find({key.first, key.second + 1});
    if (next != span.end() && next->second.first < interval.second) return true;
  }
  return false;
}

TEST(EngineTest, RegisterCountOneIsLockStepAndTwoOverlapsIterations) {
  EngineOptions options;
  options.iterations = 6;
  options.record_acts = true;
  absl::StatusOr<EngineResult> lock_step =
      RunEngine(MlpPlan(2, 1, 1), Sleepy(std::chrono::microseconds(50)), options);
  ASSERT_TRUE(lock_step.ok()) << lock_step.status();
  EXPECT_FALSE(IterationsOverlap(*lock_step));
  absl::StatusOr<EngineResult> double_buffered =
      RunEngine(MlpPlan(2, 1, 2), Sleepy(std::chrono::microseconds(50)), options);
  ASSERT_TRUE(double_buffered.ok()) << double_buffered.status();
  EXPECT_TRUE(IterationsOverlap(*double_buffered));
}

TEST(EngineTest, AllocatesExactlyThePlannedMemory) {
  const proto::Plan plan = MlpPlan(1, 2, 2);
  EngineOptions options;
  options.iterations = 1;
  absl::StatusOr<EngineResult> result = RunEngine(plan, Sleepy(std::chrono::microseconds(0)), options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (int d = 0; d < plan.devices_size(); ++d) {
    int64_t planned = 0;
    for (const proto::MemoryBlock& block : plan.devices(d).memory_blocks()) {
      planned += (block.size_bytes() + 63) / 64 * 64 + 64;  // Alignment padding only.
    }
    EXPECT_EQ(result->allocated_bytes[d], planned);
    // The blocks are exactly the planned peak: persistent block + register_count slot copies.
    int64_t block_bytes = 0;
    for (const proto::MemoryBlock& block : plan.devices(d).memory_blocks()) block_bytes += block.size_bytes();
    EXPECT_EQ(block_bytes, plan.devices(d).peak_bytes());
  }
}

TEST(EngineTest, AnActErrorStopsTheRunAndNamesTheActor) {
  const proto::Plan plan = MlpPlan(2, 1, 2);
  const int64_t failing = plan.devices(1).actors(5).id();
  BindFunction bind = [failing](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
    const bool fail = binding.actor->id() == failing;
    return ActFunction([fail](int64_t iteration, const ActContext&) {
      if (fail && iteration == 2) return absl::InvalidArgumentError("label 12 is out of range [0, 4)");
      return absl::OkStatus();
    });
  };
  EngineOptions options;
  options.iterations = 10;
  absl::StatusOr<EngineResult> result = RunEngine(plan, bind, options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(),
            "device 0:1 actor " + std::to_string(failing) + " '" + plan.devices(1).actors(5).name() +
                "' iteration 2: label 12 is out of range [0, 4)");
}

TEST(EngineTest, AHangBecomesAnErrorNamingWhatEachActorWaitsFor) {
  proto::Plan plan = MlpPlan(1, 1, 2);
  // Make the data source wait for the loss sink of the same iteration: a cycle.
  proto::DevicePlan* device = plan.mutable_devices(0);
  const proto::ActorDef& sink = device->actors(device->actors_size() - 1);
  ASSERT_EQ(sink.kind(), proto::ACTOR_SINK);
  device->mutable_actors(0)->add_control_predecessors(sink.id());
  EngineOptions options;
  options.iterations = 3;
  options.progress_timeout = std::chrono::milliseconds(200);
  absl::StatusOr<EngineResult> result = RunEngine(plan, Sleepy(std::chrono::microseconds(0)), options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(result.status().message().find(
                "device 0:0 compute thread made no progress for 200 ms: actor 0 '" +
                device->actors(0).name() + "' waits at iteration 0 for control predecessor actor " +
                std::to_string(sink.id()) + " 'loss_sink'"),
            std::string::npos)
      << result.status();
}

// With micro-batches, every edge between a per-iteration and a per-micro-batch actor
// maps act counts: a per-micro-batch reader of a per-iteration register (a variable) acts
// on micro-batch n only after its producer's act n / M; a per-iteration reader of what
// the accumulator writes acts on iteration i only after the accumulator's last
// micro-batch of i; per-iteration actors act once per iteration, the others M times.
TEST(EngineTest, MicroBatchesMapActCountsOnEveryEdge) {
  constexpr int64_t kMicroBatches = 4, kIterations = 3;
  const proto::Plan plan = MlpPlan(2, 1, 2, kMicroBatches);
  EngineOptions options;
  options.iterations = kIterations;
  options.record_acts = true;
  absl::StatusOr<EngineResult> result = RunEngine(plan, Sleepy(std::chrono::microseconds(10)), options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::map<int64_t, std::vector<ActRecord>> acts;  // actor id -> its acts in order
  for (const ActRecord& act : result->acts) acts[act.actor_id].push_back(act);
  std::map<int64_t, const proto::ActorDef*> actor;
  int per_iteration = 0, checked_edges = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& def : device.actors()) actor[def.id()] = &def;
  }
  for (const auto& [id, def] : actor) {
    per_iteration += def->per_iteration();
    ASSERT_EQ(acts[id].size(), static_cast<size_t>(def->per_iteration() ? kIterations : kIterations * kMicroBatches))
        << def->name();
  }
  EXPECT_GT(per_iteration, 0);
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::RegisterDef& reg : device.registers()) {
      const proto::ActorDef& producer = *actor[reg.producer_actor()];
      for (int64_t consumer_id : reg.consumer_actors()) {
        const proto::ActorDef& consumer = *actor[consumer_id];
        for (const ActRecord& act : acts[consumer_id]) {
          // The producer's act whose value this act reads.
          int64_t needed = act.iteration;
          if (reg.per_iteration() && !consumer.per_iteration()) needed = act.iteration / kMicroBatches;
          if (!reg.per_iteration() && !producer.per_iteration() && consumer.per_iteration()) {
            ADD_FAILURE() << consumer.name() << " acts once per iteration but reads per-micro-batch " << reg.tensor();
          }
          if (reg.per_iteration() && !producer.per_iteration()) {  // The accumulator: its last act of the iteration.
            needed = (consumer.per_iteration() ? act.iteration : act.iteration / kMicroBatches) * kMicroBatches +
                     kMicroBatches - 1;
          }
          ASSERT_LT(needed, static_cast<int64_t>(acts[producer.id()].size()));
          EXPECT_LE(acts[producer.id()][needed].end_ns, act.start_ns)
              << consumer.name() << " act " << act.iteration << " started before " << producer.name() << " act "
              << needed << " ended";
          // Edges between the two rates: a variable's per-micro-batch readers, the
          // accumulator's output.
          if (reg.per_iteration() != consumer.per_iteration() || reg.per_iteration() != producer.per_iteration()) {
            ++checked_edges;
          }
        }
      }
    }
  }
  EXPECT_GT(checked_edges, 0);
}

// Each actor's act records the nice value and the slice (ns) of the thread it runs on, by
// the thread kind its ActorDef names.
struct NiceByThreadKind {
  std::mutex mutex;
  std::set<int> compute;
  std::set<int> communication;
  std::set<int64_t> compute_slices;
  std::set<int64_t> communication_slices;
};

BindFunction RecordNice(NiceByThreadKind* seen) {
  return [seen](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
    const bool collective = binding.actor->thread() == proto::THREAD_COMMUNICATION;
    return ActFunction([seen, collective](int64_t, const ActContext&) {
      const int nice = ThisThreadNice();
      const absl::StatusOr<absl::Duration> slice = ReportedThreadSlice(0);
      if (!slice.ok()) return slice.status();
      std::lock_guard<std::mutex> lock(seen->mutex);
      (collective ? seen->communication : seen->compute).insert(nice);
      (collective ? seen->communication_slices : seen->compute_slices).insert(absl::ToInt64Nanoseconds(*slice));
      return absl::OkStatus();
    });
  };
}

TEST(EngineTest, CommunicationThreadsLeadComputeThreadsByAShortSliceOrTenNiceLevels) {
  const proto::Plan plan = MlpPlan(2, 2, 2);
  int collectives = 0;
  for (const proto::ActorDef& actor : plan.devices(0).actors()) collectives += actor.thread() == proto::THREAD_COMMUNICATION;
  ASSERT_GT(collectives, 0);
  const int base = ThisThreadNice();
  EngineOptions options;
  options.iterations = 2;
  NiceByThreadKind seen;
  ASSERT_TRUE(RunEngine(plan, RecordNice(&seen), options).ok());
  // One value per kind: every compute thread alike, every communication thread alike.
  ASSERT_EQ(seen.compute.size(), 1u);
  ASSERT_EQ(seen.communication.size(), 1u);
  ASSERT_EQ(seen.communication_slices.size(), 1u);
  const int64_t slice_ns = absl::ToInt64Nanoseconds(kCommunicationSlice);
  for (int64_t slice : seen.compute_slices) EXPECT_NE(slice, slice_ns);
  if (KernelTakesThreadSlices()) {
    // Linux 6.12 and later: the lead is the communication threads' short slice, every
    // thread at the caller's nice value.
    EXPECT_EQ(*seen.communication_slices.begin(), slice_ns);
    EXPECT_EQ(seen.compute, std::set<int>{base});
    EXPECT_EQ(seen.communication, std::set<int>{base});
  } else {
    // kCommunicationPriorityLevels ahead (as root they are raised; otherwise the compute
    // threads are lowered).
    EXPECT_NE(*seen.communication_slices.begin(), slice_ns);
    EXPECT_EQ(*seen.compute.begin() - *seen.communication.begin(), kCommunicationPriorityLevels);
    EXPECT_TRUE(*seen.compute.begin() == base || *seen.communication.begin() == base);
  }
  EXPECT_EQ(ThisThreadNice(), base);  // the calling thread is left as it was

  // Off: every thread at the caller's value.
  options.communication_priority_levels = 0;
  NiceByThreadKind off;
  ASSERT_TRUE(RunEngine(plan, RecordNice(&off), options).ok());
  EXPECT_EQ(off.compute, std::set<int>{base});
  EXPECT_EQ(off.communication, std::set<int>{base});
  for (int64_t slice : off.communication_slices) EXPECT_NE(slice, slice_ns);
}

// Every compute act runs counted (oneflow_core/comm/compute_activity.h: the UCX waits
// spin only while the count is 0) and a communication act's own run is not: at tp = 2 a
// collective act sees at most the 2 devices' compute acts. Nothing stays counted after
// the run.
TEST(EngineTest, ComputeActsAreCountedForTheCommunicationWaits) {
  const proto::Plan plan = MlpPlan(1, 2, 1);
  std::mutex mutex;
  int least_in_compute = 1 << 20;
  int most_in_communication = 0;
  BindFunction record = [&](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
    const bool collective = binding.actor->thread() == proto::THREAD_COMMUNICATION;
    return ActFunction([&, collective](int64_t, const ActContext&) {
      const int running = ComputeActsRunning();
      std::lock_guard<std::mutex> lock(mutex);
      if (collective) {
        most_in_communication = std::max(most_in_communication, running);
      } else {
        least_in_compute = std::min(least_in_compute, running);
      }
      return absl::OkStatus();
    });
  };
  EngineOptions options;
  options.iterations = 3;
  ASSERT_TRUE(RunEngine(plan, record, options).ok());
  EXPECT_GE(least_in_compute, 1);
  EXPECT_LE(most_in_communication, 2);  // the 2 devices' compute threads at most, never itself
  EXPECT_EQ(ComputeActsRunning(), 0);
}

}  // namespace
}  // namespace oneflow::actors
