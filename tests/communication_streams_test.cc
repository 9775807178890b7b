// Communication streams end to end (compiler/passes/collective_ordering_pass.h,
// actors/engine.h): on dp=2 x tp=2 the compiler puts the tensor-parallel collectives
// (axis 1) and the data-parallel ones (axis 0) on two streams, the engine issues them
// from two threads per device, and training follows the same loss curve as with one
// stream and as on one device.
#include <set>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "plan/plan_verifier.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"

namespace oneflow {
namespace {

constexpr int kIterations = 20;

examples::ParallelLayout Layout(int64_t devices, int64_t dp, int64_t tp) {
  examples::ParallelFlags flags;
  flags.devices_per_node = devices;
  flags.dp = dp;
  flags.tp = tp;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan GptPlan(const examples::ParallelLayout& layout, bool one_stream) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  options.one_communication_stream = one_stream;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

TEST(CommunicationStreamsTest, EachHierarchyAxisIsAStream) {
  const proto::Plan plan = GptPlan(Layout(4, 2, 2), false);
  ASSERT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  ASSERT_EQ(plan.streams_size(), 2);
  // Streams are numbered by their first collective: the forward pass's tensor-parallel
  // ones come before the first data-parallel reduction.
  EXPECT_EQ(plan.streams(0).name(), "axis 1 of cpu{0:0-3}[2, 2] (2 groups of 2)");
  EXPECT_EQ(plan.streams(1).name(), "axis 0 of cpu{0:0-3}[2, 2] (2 groups of 2)");
  std::set<int64_t> streams_of_axis[2];
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    ASSERT_EQ(collective.group_size(), 2) << collective.id();
    // Devices d and d ^ 1 differ in axis 1 (tp), d and d ^ 2 in axis 0 (dp).
    const int64_t a = collective.group(0).device(), b = collective.group(1).device();
    streams_of_axis[(a ^ b) == 1 ? 1 : 0].insert(collective.stream());
  }
  EXPECT_EQ(streams_of_axis[1], std::set<int64_t>{0});
  EXPECT_EQ(streams_of_axis[0], std::set<int64_t>{1});
  // Every device issues collectives of both.
  for (const proto::DevicePlan& device : plan.devices()) {
    std::set<int64_t> used;
    for (int64_t id : device.collective_order()) used.insert(plan.collectives(static_cast<int>(id)).stream());
    EXPECT_EQ(used, (std::set<int64_t>{0, 1})) << device.device().device();
  }
}

TEST(CommunicationStreamsTest, OneStreamOnRequest) {
  const proto::Plan plan = GptPlan(Layout(4, 2, 2), true);
  ASSERT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  ASSERT_EQ(plan.streams_size(), 1);
  for (const proto::CollectiveDef& collective : plan.collectives()) EXPECT_EQ(collective.stream(), 0);
  // The collectives and their per-device order are those of the streamed plan.
  const proto::Plan streamed = GptPlan(Layout(4, 2, 2), false);
  ASSERT_EQ(plan.collectives_size(), streamed.collectives_size());
  for (int d = 0; d < plan.devices_size(); ++d) {
    EXPECT_EQ(std::vector<int64_t>(plan.devices(d).collective_order().begin(), plan.devices(d).collective_order().end()),
              std::vector<int64_t>(streamed.devices(d).collective_order().begin(),
                                   streamed.devices(d).collective_order().end()));
  }
}

struct Trained {
  std::vector<double> losses;
  // Per device: the engine threads its collectives' acts ran on.
  std::vector<std::set<int32_t>> collective_threads;
};

Trained Train(const proto::Plan& plan) {
  actors::TrainOptions train;
  train.iterations = kIterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  train.record_acts = true;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, train);
  EXPECT_TRUE(result.ok()) << result.status();
  Trained trained;
  trained.collective_threads.resize(plan.devices_size());
  if (!result.ok()) return trained;
  for (const actors::IterationMetrics& m : result->iterations) trained.losses.push_back(m.loss);
  std::set<int64_t> collective_actors;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.collective_id() >= 0) collective_actors.insert(actor.id());
    }
  }
  for (const actors::ActRecord& act : result->engine.acts) {
    if (collective_actors.count(act.actor_id)) trained.collective_threads[act.device_index].insert(act.thread);
  }
  return trained;
}

TEST(CommunicationStreamsTest, TrainsLikeOneStreamAndOneDevice) {
  const Trained reference = Train(GptPlan(Layout(1, 1, 1), false));
  const Trained streamed = Train(GptPlan(Layout(4, 2, 2), false));
  const Trained one_stream = Train(GptPlan(Layout(4, 2, 2), true));
  EXPECT_TRUE(testing::MatchesReference(streamed.losses, reference.losses, kIterations)) << "two streams";
  EXPECT_TRUE(testing::MatchesReference(one_stream.losses, reference.losses, kIterations)) << "one stream";
  // Two streams: each device's collectives ran on two threads; one stream: on one.
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(streamed.collective_threads[d].size(), 2u) << "device " << d;
    EXPECT_EQ(one_stream.collective_threads[d].size(), 1u) << "device " << d;
  }
}

}  // namespace
}  // namespace oneflow
