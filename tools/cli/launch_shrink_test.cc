// `oneflow launch --elastic=shrink`'s parts without a cluster: the flags' refusals, and
// re-planning a plan from its recipe for fewer nodes. tests/cluster:elastic_shrink_test
// runs them on daemons.
#include "tools/cli/launch_shrink.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Builder = std::function<absl::StatusOr<proto::Job>(const examples::ParallelLayout&)>;

// What an example binary writes: the job built for the layout, compiled, with its recipe.
proto::Plan CompiledPlan(const Builder& build, const examples::ParallelFlags& flags,
                         const examples::CompileSettings& settings = {}) {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = build(*layout);
  EXPECT_TRUE(job.ok()) << job.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<proto::CompileRecipe> recipe = examples::MakeRecipe(*job, *layout, settings, false);
  EXPECT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_TRUE(examples::AttachRecipe(*recipe, &*plan).ok());
  return *plan;
}

Builder Mlp(int64_t batch = 48) {
  examples::MlpConfig config;
  config.batch = batch;
  config.hidden = 64;
  config.layers = 3;
  return [config](const examples::ParallelLayout& layout) { return examples::BuildMlp(config, layout); };
}

examples::ParallelFlags Flags(int64_t nodes, int64_t dp, int64_t tp = 1, int64_t pp = 1) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.dp = dp;
  flags.tp = tp;
  flags.pp = pp;
  return flags;
}

examples::CompileSettings Dense() {
  examples::CompileSettings settings;
  settings.compression.compression = "off";
  return settings;
}

std::string Bytes(const proto::Plan& plan) {
  absl::StatusOr<std::string> bytes = SerializePlanDeterministically(plan);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

// Re-planning 3 nodes of dp=3 for 2 survivors gives, byte for byte, the plan the example
// writes for 2 nodes of dp=2 (recipe included): the model read back from the recorded
// text is the same Job.
TEST(LaunchShrinkTest, ReplanIsThePlanCompiledForTheSurvivors) {
  const proto::Plan three = CompiledPlan(Mlp(), Flags(3, 3), Dense());
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->action, "re-planned for the 2 surviving nodes (dp 3 -> 2)");
  EXPECT_EQ(replan->plan.cluster().num_nodes(), 2);
  EXPECT_EQ(replan->plan.recipe().dp(), 2);
  EXPECT_EQ(replan->plan.recipe().nodes(), 2);
  EXPECT_TRUE(VerifyPlan(replan->plan).ok());
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(Mlp(), Flags(2, 2), Dense())));
  EXPECT_THAT(replan->layout_text, StartsWith("plan 'mlp'"));
  EXPECT_THAT(replan->layout_text, HasSubstr("cluster: 2 nodes x 1 device per node"));
  EXPECT_EQ(replan->layout_text.find("boxings ("), std::string::npos) << replan->layout_text;
  // And again: the new plan carries its recipe. (On one device the text keeps its dp
  // hints, S(0) over one device, where the model built for one device writes none: the
  // same plan but for those hints.)
  absl::StatusOr<Replan> again = ReplanForSurvivors(replan->plan, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->action, "re-planned for the 1 surviving nodes (dp 2 -> 1)");
  EXPECT_EQ(again->plan.cluster().num_nodes(), 1);
  EXPECT_EQ(again->plan.devices_size(), 1);
  EXPECT_TRUE(VerifyPlan(again->plan).ok());
}

// Pipeline stages keep their number; each stage's placement moves to the survivors.
TEST(LaunchShrinkTest, PipelineStagesMoveToTheSurvivors) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  const Builder gpt = [config](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); };
  examples::ParallelFlags six = Flags(6, 3, 1, 2);
  six.micro_batches = 2;
  const proto::Plan plan = CompiledPlan(gpt, six, Dense());
  absl::StatusOr<Replan> replan = ReplanForSurvivors(plan, 4);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->action, "re-planned for the 4 surviving nodes (dp 3 -> 2)");
  examples::ParallelFlags four = Flags(4, 2, 1, 2);
  four.micro_batches = 2;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(gpt, four, Dense())));
}

TEST(LaunchShrinkTest, RefusalsNameWhatIsValid) {
  proto::Plan old = CompiledPlan(Mlp(), Flags(3, 3), Dense());
  old.clear_recipe();
  absl::StatusOr<Replan> no_recipe = ReplanForSurvivors(old, 2);
  EXPECT_EQ(no_recipe.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_recipe.status().message()), HasSubstr("the plan carries no recipe (Plan.recipe)"));

  const proto::Plan tp = CompiledPlan(Mlp(), Flags(4, 2, 2), Dense());
  absl::StatusOr<Replan> odd = ReplanForSurvivors(tp, 3);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(odd.status().message(),
            "the 3 surviving nodes x 1 devices per node (3 devices) do not hold whole replicas of --tp=2 x --cp=1 x "
            "--pp=1 (2 devices); valid: a multiple of 2 devices");
  absl::StatusOr<Replan> one_replica = ReplanForSurvivors(tp, 2);
  EXPECT_EQ(one_replica.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(one_replica.status().message()),
              HasSubstr("re-planning --dp=2 as --dp=1 on the 2 surviving nodes drops the data-parallel axis"));

  // Fits on 3 nodes exactly; on 2, each device holds half the batch instead of a third.
  const proto::Plan fits = CompiledPlan(Mlp(480), Flags(3, 3), Dense());
  int64_t peak = 0;
  for (const proto::DevicePlan& device : fits.devices()) peak = std::max(peak, device.peak_bytes());
  examples::CompileSettings tight = Dense();
  tight.device_memory = peak;
  absl::StatusOr<Replan> too_big = ReplanForSurvivors(CompiledPlan(Mlp(480), Flags(3, 3), tight), 2);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("the model does not fit the 2 surviving nodes: with --dp=2 device 0:0 needs a peak of "));
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr(absl::StrCat("above the plan's --device_memory=", peak)));
}

TEST(LaunchShrinkTest, ElasticFlags) {
  absl::StatusOr<ElasticPolicy> shrink = ParseElasticPolicy("shrink", "2", 3, true);
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_TRUE(shrink->shrink);
  EXPECT_EQ(shrink->min_nodes, 2);
  absl::StatusOr<ElasticPolicy> by_default = ParseElasticPolicy("shrink", "", 3, true);
  ASSERT_TRUE(by_default.ok());
  EXPECT_EQ(by_default->min_nodes, 1);
  absl::StatusOr<ElasticPolicy> off = ParseElasticPolicy("off", "", 3, false);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->shrink);
  struct Case {
    std::string elastic, min_nodes;
    bool checkpoint_dir;
    std::string expected;
  };
  for (const Case& bad : std::vector<Case>{
           {"grow", "", true, "--elastic=grow is not one of: off, shrink"},
           {"shrink", "4", true, "--min_nodes=4 is above the job's 3 nodes (--nodes); valid: 1..3"},
           {"shrink", "0", true, "--min_nodes=0 is below 1; valid: 1..3"},
           {"shrink", "two", true, "--min_nodes=two is not a number of nodes; valid: 1..3"},
           {"off", "2", true, "--min_nodes=2 is for --elastic=shrink"},
           {"shrink", "2", false, "--elastic=shrink needs --checkpoint_dir and --checkpoint_every"},
       }) {
    absl::StatusOr<ElasticPolicy> policy = ParseElasticPolicy(bad.elastic, bad.min_nodes, 3, bad.checkpoint_dir);
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument) << bad.expected;
    EXPECT_THAT(std::string(policy.status().message()), StartsWith(bad.expected));
  }
}

}  // namespace
}  // namespace oneflow::cli
