// Dense data parallelism over hosts: every gradient reduction rides in a bucket, none is a
// bucketed reduce-scatter followed by an all-gather of its own (one call per tensor that no
// bucket shares), and the layout still trains like one device. Until session 46 the boxing
// planner priced a bucketed all-reduce of a 12-64 KiB gradient over 3 hosts as the one
// round it runs alone (sbp/boxing/axis_step.cc AlgorithmBytes), and chose the pair.
#include <vector>

#include "absl/strings/str_cat.h"

#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "plan/plan_verifier.h"
#include "tests/gpt_plan.h"
#include "tests/plan_losses.h"

namespace oneflow {
namespace {

// dp over `nodes` nodes x 1 device with the links session 45 run 4's `oneflow calibrate
// --nodes` measured between 3 emulated hosts (bench/auto_parallel/runs/
// session45_run4_hosts.jsonl: 55.3 us per round, 114.236e6 B/s across them).
proto::Plan CompileAcrossHosts(const examples::GptConfig& config, int64_t nodes, double bucket_mb) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = 1;
  flags.dp = nodes;
  flags.inter_node_bandwidth = 114.236e6;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  if (!layout.ok()) return proto::Plan();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return proto::Plan();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.cluster.set_inter_node_latency(55.2975e-6);
  options.bucket_mb = bucket_mb;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

int CountCollectives(const proto::Plan& plan, proto::CollectiveKind kind) {
  int count = 0;
  for (const proto::CollectiveDef& collective : plan.collectives()) count += collective.kind() == kind;
  return count;
}

// The gpt of bench/auto_parallel/prediction_hosts_bench.sh (6 blocks, hidden 96) at dp=3
// over 3 hosts, dense. Alone, each of the 24 attention projections (96 x 96, 36,864 B) and
// wpe (32 x 96, 12,288 B) is cheaper as a reduce-scatter + all-gather (2 x (55.3 us +
// 24,576 B / 114.236e6) = 541 us for a projection) than as the one-round all-reduce a
// tensor of at most 64 KiB runs alone (55.3 us + 73,728 B / 114.236e6 = 701 us): 25
// all-gathers with --bucket_mb=0. In a bucket (about 1-2 MiB, two rounds) the all-reduce
// adds 49,152 B / 114.236e6 = 430 us and the pair 215 + 55.3 + 215 = 486 us: every
// gradient's reduction is an all-reduce in one of the two buckets; no all-gather is left.
// The same bytes cross the links either way (2 x 2/3 = 4/3 of each gradient).
TEST(GradientBucketsGathersTest, TheBenchGptAtDp3OverThreeHostsGathersNoGradientOnItsOwn) {
  const examples::GptConfig gpt = testing::HostsBenchGpt();
  const proto::Plan alone = CompileAcrossHosts(gpt, 3, 0);
  const proto::Plan bucketed = CompileAcrossHosts(gpt, 3, 25);
  EXPECT_EQ(CountCollectives(alone, proto::ALL_GATHER), 25);
  EXPECT_EQ(CountCollectives(alone, proto::REDUCE_SCATTER), 25);
  EXPECT_EQ(CountCollectives(bucketed, proto::ALL_GATHER), 0);
  EXPECT_EQ(CountCollectives(bucketed, proto::REDUCE_SCATTER), 0);
  EXPECT_EQ(CountCollectives(bucketed, proto::ALL_REDUCE), 2);
  ASSERT_EQ(bucketed.buckets_size(), 2);
  // 64 gradients and the loss.
  EXPECT_EQ(bucketed.buckets(0).members_size() + bucketed.buckets(1).members_size(), 65);
  EXPECT_EQ(bucketed.devices(0).bytes_sent_per_iter(), alone.devices(0).bytes_sent_per_iter());
  EXPECT_TRUE(VerifyPlan(bucketed).ok()) << VerifyPlan(bucketed);
}

// A smaller gpt whose 64 x 64 weights (16 KiB) took the reduce-scatter + all-gather in their
// buckets before: the bucketed all-reduces train like one device (1e-4 relative), and so
// does the unbucketed plan with its pairs.
TEST(GradientBucketsGathersTest, TheBucketedAllReducesTrainLikeOneDevice) {
  const examples::GptConfig gpt = testing::TinyTrainingGpt(2);
  constexpr int64_t kIterations = 4;
  const std::vector<float> reference = testing::TrainedLosses(CompileAcrossHosts(gpt, 1, 25), kIterations);
  ASSERT_EQ(reference.size(), kIterations);
  for (double bucket_mb : {0.0, 25.0}) {
    const proto::Plan plan = CompileAcrossHosts(gpt, 3, bucket_mb);
    EXPECT_EQ(CountCollectives(plan, proto::ALL_GATHER) > 0, bucket_mb == 0) << "bucket_mb " << bucket_mb;
    testing::ExpectLossesNear(testing::TrainedLosses(plan, kIterations), reference, 1e-4,
                              absl::StrCat("bucket_mb ", bucket_mb));
  }
}

}  // namespace
}  // namespace oneflow
