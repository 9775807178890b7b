// Gradient buckets over 2-D groups (compiler/passes/gradient_bucketing_pass.h) on the
// demo's 2-node plan: gpt 2 blocks, hidden 256, dp=2 across the nodes x tp=2 inside each
// (`./tools/dev.sh demo`). Its replicated parameters' gradients are reduced over both
// axes: [P, P] -> [B, B] as an all-reduce on the tp axis then one on the dp axis, and
// [P, P] -> [B, S] as a reduce-scatter on the tp axis then an all-reduce on the dp axis.
// Before buckets covered such chains, each of those 21 cross-node all-reduces ran on its
// own; now they ride in buckets, and so do the in-node reduce-scatters that start the
// [B, S] chains (reduce-scatter buckets), and the plan still trains like one device.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/reduction_overlap.h"
#include "actors/runtime.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/gpt_plan.h"
#include "tests/plan_losses.h"

namespace oneflow {
namespace {

examples::GptConfig DemoGpt() {
  examples::GptConfig config;
  config.layers = 2;
  config.hidden = 256;
  config.heads = 8;
  config.batch = 8;
  config.seq = 32;
  config.vocab = 256;
  config.learning_rate = 0.01;
  return config;
}

proto::Plan CompileDemo(int64_t nodes, int64_t dp, int64_t tp, double bucket_mb) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = dp * tp / nodes;
  flags.dp = dp;
  flags.tp = tp;
  // The options `examples/gpt/gpt` compiles with (its default flags).
  examples::CompileSettings settings;
  settings.bucket_mb = bucket_mb;
  return testing::CompileGptPlan(DemoGpt(), flags, settings);
}

// The gradient reduction collectives device 0 issues per iteration, by hierarchy axis
// (0: dp, across the nodes; 1: tp, inside a node). A bucket's actor and a boxing actor
// reducing a gradient (actors::GradientReductions) each issue one collective.
std::vector<int> GradientReductionsPerAxis(const proto::Plan& plan) {
  const actors::GradientReductions reductions(plan);
  std::vector<int> per_axis(2, 0);
  for (const proto::ActorDef& actor : plan.devices(0).actors()) {
    if (actor.collective_id() < 0 || !reductions.Contains(actor)) continue;
    ++per_axis.at(plan.collectives(static_cast<int>(actor.collective_id())).hierarchy_axis());
  }
  return per_axis;
}

TEST(GradientBuckets2dTest, TheDemoPlansCrossNodeReductionsRideInBuckets) {
  const proto::Plan off = CompileDemo(2, 2, 2, 0);
  const proto::Plan on = CompileDemo(2, 2, 2, 25);
  // Without buckets: 11 [P, P] -> [B, B] chains (10 layer-norm gammas and betas, wpe)
  // and 9 [P, P] -> [B, S] chains (wte and the 8 attention projections) each reduce on
  // both axes, and the 4 mlp weights ([P, S] -> [B, S]) on the dp axis: 24 cross-node
  // and 20 in-node gradient reductions (the loss's, for the sink, is no gradient's).
  EXPECT_EQ(GradientReductionsPerAxis(off), (std::vector<int>{24, 20}));
  // With them: the [B, B] chains' first steps (with the loss's) in in-node all-reduce
  // buckets, the 9 [B, S] chains' first steps (in-node reduce-scatters) in reduce-scatter
  // buckets: 3 in-node collectives in all; every cross-node all-reduce in 4 buckets: the
  // mlp weights of each block (1 MiB first buckets, produced first), the attention
  // projections once their reduce-scatter bucket ran, and the second steps of the
  // [B, B] chains with wte's.
  EXPECT_EQ(GradientReductionsPerAxis(on), (std::vector<int>{4, 3}));
  ASSERT_EQ(on.buckets_size(), 7);
  // Every gradient reduction on the dp axis is in a bucket, 2-D chains' second steps included.
  std::set<std::pair<int64_t, int64_t>> bucketed;
  for (const proto::GradientBucketDef& bucket : on.buckets()) {
    for (const proto::BucketMemberDef& member : bucket.members()) {
      bucketed.insert({member.boxing_id(), member.boxing_step()});
    }
  }
  int second_steps = 0;
  for (const proto::BoxingDef& boxing : on.boxings()) {
    for (int s = 0; s < boxing.steps_size(); ++s) {
      const proto::BoxingStepDef& step = boxing.steps(s);
      // Every dense reduction of a gradient chain rides in a bucket: the in-node
      // reduce-scatters on axis 1 too.
      if (step.kind() == proto::STEP_REDUCE_SCATTER && step.hierarchy_axis() == 1 && s == 0 &&
          boxing.steps_size() > 1 && boxing.steps(1).kind() == proto::STEP_ALL_REDUCE) {
        EXPECT_TRUE(step.has_bucket_id()) << boxing.tensor() << " step " << s;
      }
      if (step.hierarchy_axis() != 0 || step.kind() != proto::STEP_ALL_REDUCE) continue;
      const bool member = bucketed.count({boxing.id(), s}) > 0;
      EXPECT_EQ(member, step.has_bucket_id()) << boxing.tensor() << " step " << s;
      second_steps += member && s == 1;
    }
  }
  EXPECT_EQ(second_steps, 21);  // 11 + 9 gradients and the loss.
  // A bucket of second steps comes after the bucket or step that ran its members' first
  // steps: on every device, the actor producing a member's input precedes the bucket's.
  for (const proto::DevicePlan& device : on.devices()) {
    std::vector<int64_t> position(device.registers_size(), -1);
    for (int a = 0; a < device.actors_size(); ++a) {
      for (const proto::KernelDef& kernel : device.actors(a).kernels()) {
        for (const auto& [name, reg] : kernel.outputs()) position[reg] = a;
      }
    }
    for (int a = 0; a < device.actors_size(); ++a) {
      if (!device.actors(a).has_bucket_id()) continue;
      for (const auto& [name, reg] : device.actors(a).kernels(0).inputs()) {
        EXPECT_GE(position[reg], 0) << "bucket " << device.actors(a).bucket_id() << " input " << name;
        EXPECT_LT(position[reg], a) << "bucket " << device.actors(a).bucket_id() << " input " << name;
      }
    }
  }
  // Same bytes on the wire: buckets move exactly their members' bytes.
  EXPECT_EQ(on.devices(0).bytes_sent_per_iter(), off.devices(0).bytes_sent_per_iter());
}

// The demo plan with its 2-D buckets (and with a limit small enough for several buckets
// per axis and level) trains like one device.
TEST(GradientBuckets2dTest, TheDemoPlanTrainsLikeOneDevice) {
  constexpr int64_t kIterations = 3;
  const std::vector<float> reference = testing::TrainedLosses(CompileDemo(1, 1, 1, 25), kIterations);
  ASSERT_EQ(reference.size(), kIterations);
  EXPECT_LT(reference.back(), reference.front());
  for (double bucket_mb : {25.0, 0.005}) {
    const proto::Plan plan = CompileDemo(2, 2, 2, bucket_mb);
    if (bucket_mb == 0.005) {
      // 5 KiB: the 1 KiB layer-norm gradients in several buckets on each axis.
      EXPECT_GE(plan.buckets_size(), 4);
    }
    testing::ExpectLossesNear(testing::TrainedLosses(plan, kIterations), reference, 1e-4,
                              absl::StrCat("bucket_mb ", bucket_mb));
  }
}

}  // namespace
}  // namespace oneflow
