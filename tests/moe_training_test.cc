// Mixture of experts in the gpt (examples/gpt/moe.h) trains like one device whatever
// parallelizes its experts: fssdp (row-sparse gather and reduce-scatter of the experts in
// use), ep (all-to-all of the token buffers) and replicated, on 4 devices and on 2 x 2
// (data x tensor parallel). Also: the plans hold the collectives each mode implies, the
// skewed router makes fssdp move fewer expert bytes, the auto rule's choices, and bad
// flags are clear errors.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"

namespace oneflow {
namespace {

using examples::MoeParallel;

constexpr int kIterations = 12;

examples::GptConfig MoeGpt(MoeParallel parallel) {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.learning_rate = 0.01;
  config.moe.experts = 4;
  config.moe.top_k = 2;
  config.moe.parallel = parallel;
  return config;
}

examples::ParallelLayout Layout(int64_t dp, int64_t tp, int64_t pp = 1, int64_t micro_batches = 1) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp * tp * pp;
  flags.dp = dp;
  flags.tp = tp;
  flags.pp = pp;
  flags.micro_batches = micro_batches;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan Compile(const examples::GptConfig& config, int64_t dp, int64_t tp = 1, int64_t pp = 1,
                    int64_t micro_batches = 1) {
  const examples::ParallelLayout layout = Layout(dp, tp, pp, micro_batches);
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = oneflow::Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::vector<actors::IterationMetrics> Train(const proto::Plan& plan, int iterations = kIterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->iterations : std::vector<actors::IterationMetrics>{};
}

std::vector<double> Losses(const std::vector<actors::IterationMetrics>& metrics) {
  std::vector<double> losses;
  for (const actors::IterationMetrics& m : metrics) losses.push_back(m.loss);
  return losses;
}

int CountCollectives(const proto::Plan& plan, proto::CollectiveKind kind) {
  int count = 0;
  for (const proto::CollectiveDef& collective : plan.collectives()) count += collective.kind() == kind;
  return count;
}

TEST(MoeTrainingTest, EveryExpertParallelismTrainsLikeOneDevice) {
  const std::vector<double> reference = Losses(Train(Compile(MoeGpt(MoeParallel::kReplicated), 1)));
  for (MoeParallel parallel : {MoeParallel::kFssdp, MoeParallel::kExpert, MoeParallel::kReplicated}) {
    const std::string name(examples::MoeParallelName(parallel));
    const proto::Plan plan = Compile(MoeGpt(parallel), 4);
    // What each mode moves: fssdp gathers both expert weights of both blocks and reduces
    // their gradients sparsely; ep sends token buffers to the experts' owners and back.
    const int sparse = CountCollectives(plan, proto::SPARSE_ALL_GATHER) +
                       CountCollectives(plan, proto::SPARSE_REDUCE_SCATTER);
    EXPECT_EQ(sparse, parallel == MoeParallel::kFssdp ? 8 : 0) << name;
    EXPECT_EQ(CountCollectives(plan, proto::ALL_TO_ALL) > 0, parallel == MoeParallel::kExpert) << name;
    const std::vector<actors::IterationMetrics> metrics = Train(plan);
    EXPECT_TRUE(testing::MatchesReference(Losses(metrics), reference, kIterations)) << name << " on 4 devices";
    if (parallel == MoeParallel::kFssdp && !metrics.empty()) {
      EXPECT_EQ(metrics[0].sparse.sparse_calls + metrics[0].sparse.dense_calls, 8 * 4);
    }
  }
  // Experts sharded over dp while attention is tensor-parallel.
  EXPECT_TRUE(testing::MatchesReference(Losses(Train(Compile(MoeGpt(MoeParallel::kFssdp), 2, 2))), reference,
                                        kIterations))
      << "fssdp on dp=2 x tp=2";
}

// MoE blocks in pipeline stages: one block per stage at pp=2 with 2 micro-batches (the
// router, the capacity and the balance loss per micro-batch), alone and with the experts
// over dp=2 inside each stage (fssdp, and ep's all-to-alls on the stage's devices), equal
// to one device. The one-device reference runs the same
// micro-batches: capacity and the balance loss are per micro-batch, so a run without
// micro-batches routes differently.
TEST(MoeTrainingTest, MoeBlocksInPipelineStagesTrainLikeOneDevice) {
  const std::vector<double> reference = Losses(Train(Compile(MoeGpt(MoeParallel::kReplicated), 1, 1, 1, 2)));
  const proto::Plan pipelined = Compile(MoeGpt(MoeParallel::kReplicated), 1, 1, 2, 2);
  EXPECT_TRUE(testing::MatchesReference(Losses(Train(pipelined)), reference, kIterations)) << "pp=2, 2 micro-batches";
  for (MoeParallel parallel : {MoeParallel::kFssdp, MoeParallel::kExpert}) {
    const std::string name(examples::MoeParallelName(parallel));
    const proto::Plan plan = Compile(MoeGpt(parallel), 2, 1, 2, 2);
    // ep moves the token buffers to the experts' owners inside each stage. (fssdp here
    // gathers and reduces the experts densely: the plan holds no row-sparse collective
    // under micro-batches and stages; docs/moe.md.)
    if (parallel == MoeParallel::kExpert) {
      EXPECT_GT(CountCollectives(plan, proto::ALL_TO_ALL), 0) << name;
    }
    EXPECT_TRUE(testing::MatchesReference(Losses(Train(plan)), reference, kIterations))
        << name << " on pp=2 x dp=2, 2 micro-batches";
  }
}

// 16 experts, top-1, one sample per device and a Zipf(1.5) router: a device's 16 tokens
// use a few experts, so fssdp's calls run sparse and move a fraction of the dense bytes,
// and the run still trains like one device (the same router on 1 device, experts
// replicated). With balanced routing (EveryExpertParallelismTrainsLikeOneDevice) every
// device uses every expert and the runtime falls back to the dense collective, so only
// this case proves the sparse path's arithmetic.
TEST(MoeTrainingTest, SkewedRoutingMakesFssdpMoveOnlyTheExpertsInUse) {
  examples::GptConfig config = MoeGpt(MoeParallel::kFssdp);
  config.batch = 4;
  config.seq = 16;
  config.moe.experts = 16;
  config.moe.top_k = 1;
  config.moe.zipf_skew = 1.5;
  const std::vector<actors::IterationMetrics> metrics = Train(Compile(config, 4));
  ASSERT_EQ(metrics.size(), static_cast<size_t>(kIterations));
  examples::GptConfig one_device = config;
  one_device.moe.parallel = MoeParallel::kReplicated;
  EXPECT_TRUE(testing::MatchesReference(Losses(metrics), Losses(Train(Compile(one_device, 1))), kIterations))
      << "fssdp with a skewed router on 4 devices";
  for (const actors::IterationMetrics& m : metrics) {
    EXPECT_EQ(m.sparse.dense_calls, 0);
    EXPECT_EQ(m.sparse.sparse_calls, 8 * 4);
    EXPECT_LT(m.sparse.payload_bytes * 4, m.sparse.dense_bytes) << m.sparse.payload_bytes;
    // Rows travel whole: the payload is a whole number of experts of either weight
    // (both are 32 x 128 f32, 16 KiB).
    EXPECT_EQ(m.sparse.payload_bytes % (32 * 128 * 4), 0);
  }
}

// A nearly fixed router (Zipf(4): expert 0 takes most tokens) with 8 experts top-2, the
// experts sharded over dp=2 while attention is tensor-parallel (dp=2 x tp=2): the sparse
// path runs and the losses equal one device's. In this layout the sparse calls are the
// experts' row-sparse all-gathers (16 per iteration, a quarter of the dense bytes); the
// plan has no row-sparse reduce-scatter here (the gradients reduce densely), so the
// sparse reduce-scatter's sums are proven by the dp=4 case above (zeroing them, or
// dropping one rank's rows, fails it; it does not fail this one).
TEST(MoeTrainingTest, NearlyFixedRoutingRunsSparseOnDp2Tp2AndTrainsLikeOneDevice) {
  examples::GptConfig config = MoeGpt(MoeParallel::kFssdp);
  config.batch = 4;
  config.seq = 16;
  config.moe.experts = 8;
  config.moe.top_k = 2;
  config.moe.zipf_skew = 4;
  const std::vector<actors::IterationMetrics> metrics = Train(Compile(config, 2, 2));
  ASSERT_EQ(metrics.size(), static_cast<size_t>(kIterations));
  examples::GptConfig one_device = config;
  one_device.moe.parallel = MoeParallel::kReplicated;
  EXPECT_TRUE(testing::MatchesReference(Losses(metrics), Losses(Train(Compile(one_device, 1))), kIterations))
      << "fssdp with a nearly fixed router on dp=2 x tp=2";
  for (const actors::IterationMetrics& m : metrics) {
    EXPECT_GT(m.sparse.sparse_calls, 0) << "iteration " << m.iteration;
    EXPECT_LT(m.sparse.payload_bytes, m.sparse.dense_bytes) << "iteration " << m.iteration;
  }
}

// The auto rule (ChooseMoeParallel) on three regimes: small experts that every device uses
// are cheapest replicated (the same bytes as fssdp in fewer calls); large experts are
// cheapest left in place with the tokens moved (ep); small experts of which each device
// uses a few, each by many tokens (a skewed router), are cheapest fssdp. Golden: the
// modelled figures as well as the choice.
TEST(MoeTrainingTest, AutoRuleGolden) {
  examples::MoeCostInputs tiny;
  tiny.dp = 4;
  tiny.experts = 8;
  tiny.expert_bytes = 2 * 32 * 128 * 4;
  tiny.samples_per_device = 8;
  tiny.tokens_per_device = 8 * 128;
  tiny.top_k = 2;
  tiny.capacity = 40;
  tiny.hidden = 32;
  tiny.bandwidth = 1.25e9;
  const examples::MoeCost a = examples::ChooseMoeParallel(tiny);
  EXPECT_EQ(a.choice, MoeParallel::kReplicated) << a.reason;
  EXPECT_NEAR(a.replicated * 1e3, 0.4146, 1e-3);

  examples::MoeCostInputs dense_use = tiny;  // every device uses every big expert
  dense_use.expert_bytes = 2 * 1024 * 4096 * 4;
  dense_use.hidden = 1024;
  dense_use.samples_per_device = 1;
  const examples::MoeCost b = examples::ChooseMoeParallel(dense_use);
  EXPECT_EQ(b.choice, MoeParallel::kExpert) << b.reason;

  // Small experts (hidden 16), many tokens per device, a skewed router: each device uses
  // a fraction of 64 experts, each by many tokens.
  examples::MoeCostInputs skewed;
  skewed.dp = 4;
  skewed.experts = 64;
  skewed.hidden = 16;
  skewed.expert_bytes = 2 * 16 * 64 * 4;
  skewed.samples_per_device = 32;
  skewed.tokens_per_device = 32 * 128;
  skewed.top_k = 1;
  skewed.capacity = 3;
  skewed.bandwidth = 1.25e9;
  skewed.routing_skew = 3;
  const examples::MoeCost c = examples::ChooseMoeParallel(skewed);
  EXPECT_EQ(c.choice, MoeParallel::kFssdp) << c.reason;
  EXPECT_EQ(c.reason,
            "modelled per MoE layer and iteration at 1.25e+09 B/s: fssdp 0.591 ms (19.5 of 64 experts in use per "
            "device), ep 1.14 ms, replicated 0.729 ms: fssdp");

  examples::MoeCostInputs one_device = tiny;
  one_device.dp = 1;
  EXPECT_EQ(examples::ChooseMoeParallel(one_device).choice, MoeParallel::kReplicated);
}

TEST(MoeTrainingTest, BadFlagsAreClearErrors) {
  auto error = [](examples::GptConfig config, int64_t dp) {
    absl::StatusOr<proto::Job> job = examples::BuildGpt(config, Layout(dp, 1));
    return job.ok() ? std::string("ok") : std::string(job.status().message());
  };
  examples::GptConfig config = MoeGpt(MoeParallel::kFssdp);
  config.moe.top_k = 5;
  EXPECT_EQ(error(config, 1), "--moe_top_k=5 must be in 1..--moe_experts=4");
  config = MoeGpt(MoeParallel::kFssdp);
  config.moe.capacity_factor = 0;
  EXPECT_EQ(error(config, 1), "--moe_capacity=0 must be > 0 (the capacity factor; 1.25 is usual)");
  config = MoeGpt(MoeParallel::kExpert);
  EXPECT_NE(error(config, 8).find("--moe_parallel=ep shards the experts over --dp=8, but --moe_experts=4"),
            std::string::npos);
  EXPECT_EQ(std::string(examples::ParseMoeParallel("zero").status().message()),
            "--moe_parallel=zero is not one of: fssdp, ep, replicated, auto");
  // Uneven: 6 experts over 4 devices (owners of 2, 2, 1, 1) still trains like one device.
  config = MoeGpt(MoeParallel::kFssdp);
  config.moe.experts = 6;
  const std::vector<double> reference = Losses(Train(Compile(config, 1), 6));
  const std::vector<double> uneven = Losses(Train(Compile(config, 4), 6));
  ASSERT_EQ(uneven.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_NEAR(uneven[i], reference[i], 1e-4 * reference[i]) << i;
}

}  // namespace
}  // namespace oneflow
