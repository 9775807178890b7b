// `oneflow launch --elastic=shrink`'s parts without a cluster: the flags' refusals, and
// re-planning a plan from its recipe for fewer nodes. tests/cluster:elastic_shrink_test
// runs them on daemons.
#include "tools/cli/launch_shrink.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/parallel_layout.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/graph.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "tools/cli/graph_text_job.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
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

Builder Mlp(int64_t batch = 48, int64_t hidden = 64) {
  examples::MlpConfig config;
  config.batch = batch;
  config.hidden = hidden;
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
  // The shrink rule (shrink_rule.h): 48 rows over dp 2 would give each device 24 where it
  // had 16, so 2 micro-batches of 24 (12 a device); the recorded text is re-cut to them.
  EXPECT_EQ(replan->action,
            "re-planned for the 2 surviving nodes (dp 3 -> 2, micro-batches 1 -> 2: global batch 48, 12 rows per "
            "device's micro-batch (was 16))");
  EXPECT_EQ(replan->nodes, 2);
  EXPECT_EQ(replan->plan.cluster().num_nodes(), 2);
  EXPECT_EQ(replan->plan.recipe().dp(), 2);
  EXPECT_EQ(replan->plan.recipe().nodes(), 2);
  EXPECT_EQ(replan->plan.recipe().micro_batches(), 2);
  EXPECT_EQ(replan->plan.job().batch_size(), 48);
  EXPECT_TRUE(VerifyPlan(replan->plan).ok());
  examples::ParallelFlags two = Flags(2, 2);
  two.micro_batches = 2;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(Mlp(), two, Dense())));
  EXPECT_THAT(replan->layout_text, StartsWith("plan 'mlp'"));
  EXPECT_THAT(replan->layout_text, HasSubstr("cluster: 2 nodes x 1 device per node"));
  EXPECT_EQ(replan->layout_text.find("boxings ("), std::string::npos) << replan->layout_text;
  // And again: the new plan carries its recipe. (On one device the text keeps its dp
  // hints, S(0) over one device, where the model built for one device writes none: the
  // same plan but for those hints.)
  absl::StatusOr<Replan> again = ReplanForSurvivors(replan->plan, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->action,
            "re-planned for the 1 surviving nodes (dp 2 -> 1, micro-batches 2 -> 4: global batch 48, 12 rows per "
            "device's micro-batch (was 12))");
  EXPECT_EQ(again->plan.cluster().num_nodes(), 1);
  EXPECT_EQ(again->plan.devices_size(), 1);
  EXPECT_TRUE(VerifyPlan(again->plan).ok());
}

// The gpt's reshapes hold the batch in their targets: its recorded text is re-cut with
// them (examples::ResizeMicroBatches), so the re-plan raises the micro-batches as the rule
// asks and is the plan the example writes for the survivors' layout.
TEST(LaunchShrinkTest, AGptIsRecutToTheSurvivorsMicroBatches) {
  examples::GptConfig config;
  config.batch = 12;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  const Builder gpt = [config](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); };
  const proto::Plan three = CompiledPlan(gpt, Flags(3, 3), Dense());
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->action,
            "re-planned for the 2 surviving nodes (dp 3 -> 2, micro-batches 1 -> 2: global batch 12, 3 rows per "
            "device's micro-batch (was 4))");
  examples::ParallelFlags two = Flags(2, 2);
  two.micro_batches = 2;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(gpt, two, Dense())));
}

// A model without hints compiled with tp (the split inferred, graph_text_job.h): the
// recipe records the model as written, without the inferred hints (RecipeJob), so the
// re-plan infers them again for the survivors' layout and gives the plan compiled for it
// from the start, recipe included.
proto::Plan CompiledHintFreePlan(const examples::ParallelFlags& flags) {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = Mlp()(*layout);
  EXPECT_TRUE(job.ok()) << job.status();
  examples::ClearSbpHints(&*job);
  absl::StatusOr<std::string> note = examples::HintTensorParallelism(*layout, &*job);
  EXPECT_TRUE(note.ok()) << note.status();
  EXPECT_THAT(*note, HasSubstr("layer0/weight S(1)"));
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, Dense(), &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<proto::CompileRecipe> recipe = examples::MakeRecipe(RecipeJob(*job, *note), *layout, Dense(), false);
  EXPECT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_TRUE(examples::AttachRecipe(*recipe, &*plan).ok());
  return *plan;
}

TEST(LaunchShrinkTest, AnInferredSplitIsInferredAgainForTheSurvivors) {
  examples::ParallelFlags three = Flags(3, 3, /*tp=*/2);
  three.devices_per_node = 2;
  const proto::Plan plan = CompiledHintFreePlan(three);
  EXPECT_THAT(plan.recipe().graph_text(), Not(HasSubstr("sbp=")));
  absl::StatusOr<Replan> replan = ReplanForSurvivors(plan, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_THAT(replan->plan.recipe().graph_text(), Not(HasSubstr("sbp=")));
  examples::ParallelFlags two = Flags(2, 2, /*tp=*/2);
  two.devices_per_node = 2;
  two.micro_batches = 2;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledHintFreePlan(two))) << replan->action;
  EXPECT_TRUE(VerifyPlan(replan->plan).ok());
}

// Pipeline stages keep their number; each stage's placement moves to the survivors.
TEST(LaunchShrinkTest, PipelineStagesMoveToTheSurvivors) {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 64;
  config.uneven_batch = true;  // 2 rows per micro-batch over dp=3 (the re-plan's dp=2 divides them)
  const Builder gpt = [config](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); };
  examples::ParallelFlags six = Flags(6, 3, 1, 2);
  six.micro_batches = 2;
  const proto::Plan plan = CompiledPlan(gpt, six, Dense());
  absl::StatusOr<Replan> replan = ReplanForSurvivors(plan, 4);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->action,
            "re-planned for the 4 surviving nodes (dp 3 -> 2, micro-batches 2 -> 2: global batch 4, 1 row per device's "
            "micro-batch (was 1))");
  examples::ParallelFlags four = Flags(4, 2, 1, 2);
  four.micro_batches = 2;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(gpt, four, Dense())));
}

// The int4 all-reduces of variables' gradients across nodes (hierarchy axis 0): the steps
// auto's accuracy bound decides on.
int CrossNodeInt4Gradients(const proto::Plan& plan) {
  int int4 = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    if (!absl::StrContains(boxing.consumer_op(), "_update/")) continue;  // a variable's update reads a gradient
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      int4 += step.kind() == proto::STEP_ALL_REDUCE && step.hierarchy_axis() == 0 &&
              step.compression().kind() == proto::Compression::INT4;
    }
  }
  return int4;
}

// --codec_accuracy_bound=off travels in the recipe: the small gpt of the compression tests
// under AdamW at 1 MB/s between nodes (slow enough that codecs pay in the gradient
// buckets), where the bound (0.5% by default) refuses int4
// gradients and off lets auto pick them. Re-planned for 2 of 3 nodes, the plan is byte for
// byte the one compiled for 2 nodes with the bound off, int4 included; with the default
// bound (a recipe that lost the flag) it would be the int8 plan.
TEST(LaunchShrinkTest, ReplanKeepsTheCodecAccuracyBound) {
  examples::GptConfig config;
  config.batch = 12;
  config.seq = 16;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 64;
  const Builder gpt = [config](const examples::ParallelLayout& layout) { return examples::BuildGpt(config, layout); };
  auto flags = [](int64_t nodes) {
    examples::ParallelFlags flags = Flags(nodes, nodes, 2);
    flags.devices_per_node = 2;
    return flags;
  };
  examples::CompileSettings bounded;
  bounded.links.inter_node_bandwidth = 1e6;  // as --inter_node_bandwidth=1e6
  bounded.links.inter_node_bandwidth_given = true;
  examples::CompileSettings off = bounded;
  off.compression.codec_accuracy_bound = "off";
  const proto::Plan three = CompiledPlan(gpt, flags(3), off);
  EXPECT_EQ(three.recipe().codec_accuracy_bound(), "off");
  EXPECT_GE(CrossNodeInt4Gradients(three), 8);
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->plan.recipe().codec_accuracy_bound(), "off");
  examples::ParallelFlags two = flags(2);
  two.micro_batches = replan->plan.recipe().micro_batches();
  EXPECT_GE(CrossNodeInt4Gradients(replan->plan), 8);
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(CompiledPlan(gpt, two, off)));
  // The default bound refuses int4 on the same layout: what carrying the flag keeps away.
  const proto::Plan with_bound = CompiledPlan(gpt, two, bounded);
  EXPECT_EQ(CrossNodeInt4Gradients(with_bound), 0);
  EXPECT_EQ(with_bound.recipe().codec_accuracy_bound(), "");  // the default is not written: dense plans keep their bytes
}

// A model's `--print_graph` text without its `placement` line: a layout-free model.
std::string LayoutFreeText(const absl::StatusOr<proto::Job>& job) {
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(*job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return LayoutFreeGraphText((*graph)->ToText(Graph::Locations::kOmit), /*zero_from_layout=*/false);
}

// The mlp's text without its `placement` line, as docs/auto_parallel.md makes one.
std::string LayoutFreeMlpText(int64_t hidden = 64) {
  return LayoutFreeText(Mlp(48, hidden)(*examples::ParallelLayout::Create(examples::ParallelFlags{})));
}

examples::AutoParallelRequest Nodes(int64_t nodes, int64_t device_memory = 0) {
  examples::AutoParallelRequest request;
  request.cluster.nodes = nodes;
  request.settings = Dense();
  request.device_memory = device_memory;
  return request;
}

// What `oneflow compile mlp.txt --auto_parallel --nodes=N --plan_out=...` writes: the
// searched plan with its recipe.
proto::Plan SearchedPlan(const std::string& text, const examples::AutoParallelRequest& request) {
  absl::StatusOr<examples::AutoParallelResult> result = AutoParallelFromGraphText(text, "mlp.txt", request);
  EXPECT_TRUE(result.ok()) << result.status();
  const examples::CompileSettings chosen =
      examples::SettingsForLayout(request.settings, result->plan.auto_parallel().chosen().layout());
  absl::StatusOr<proto::CompileRecipe> recipe = examples::MakeRecipe(result->job, result->layout, chosen, true);
  EXPECT_TRUE(recipe.ok()) << recipe.status();
  EXPECT_TRUE(examples::AttachRecipe(*recipe, &result->plan).ok());
  return result->plan;
}

// A plan the search chose from graph text is searched again for the survivors: the plan
// is the one the search gives for 2 nodes from the start, and its action says so.
TEST(LaunchShrinkTest, AutoParallelPlanIsSearchedAgainForTheSurvivors) {
  const std::string text = LayoutFreeMlpText();
  const proto::Plan three = SearchedPlan(text, Nodes(3));
  ASSERT_EQ(auto_parallel::LayoutFlags(three.auto_parallel().chosen().layout()),
            "--dp=3 --tp=1 --pp=1 --micro_batches=1 --zero=0 --recompute=none");
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->action,
            "re-planned for the 2 surviving nodes (the --auto_parallel search ran again: --dp=2 --tp=1 --pp=1 "
            "--micro_batches=1 --zero=0 --recompute=none; was --dp=3 --tp=1 --pp=1 --micro_batches=1 --zero=0 "
            "--recompute=none)");
  EXPECT_THAT(replan->layout_text, StartsWith("auto-parallel: chose --dp=2 --tp=1"));
  EXPECT_THAT(replan->layout_text, HasSubstr("\nplan 'mlp'"));
  EXPECT_THAT(replan->layout_text, HasSubstr("cluster: 2 nodes x 1 device per node"));
  EXPECT_TRUE(VerifyPlan(replan->plan).ok());
  // Recipe and decision record included.
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(SearchedPlan(text, Nodes(2))));
  EXPECT_TRUE(replan->plan.recipe().auto_parallel());
  // It shrinks again from its own recipe.
  absl::StatusOr<Replan> again = ReplanForSurvivors(replan->plan, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->action, HasSubstr("the --auto_parallel search ran again: --dp=1 "));
  EXPECT_TRUE(Bytes(again->plan) == Bytes(SearchedPlan(text, Nodes(1))));
}

// The gpt's text without its `placement` line: 2 blocks, the whole batch of 8.
std::string LayoutFreeGptText() {
  return LayoutFreeText(
      examples::BuildGpt(examples::GptConfig(), *examples::ParallelLayout::Create(examples::ParallelFlags{})));
}

// A text's search that chose pipeline stages and micro-batches records the model before
// them (the whole batch, no stage placements), which compiles to the plan again, and the
// survivors get a search of their own, pipelines and micro-batches included.
TEST(LaunchShrinkTest, ASearchedPipelineIsSearchedAgainForTheSurvivors) {
  const std::string text = LayoutFreeGptText();
  constexpr int64_t kMemory = 9000000;
  const proto::Plan four = SearchedPlan(text, Nodes(4, kMemory));
  const proto::AutoParallelLayout& chosen = four.auto_parallel().chosen().layout();
  ASSERT_EQ(auto_parallel::LayoutFlags(chosen),
            "--dp=2 --tp=1 --pp=2 --pp_schedule=zb --micro_batches=4 --zero=0 --recompute=none");
  EXPECT_EQ(four.recipe().pp_schedule(), "zb");  // a re-plan of these stages compiles ZB-H1 again
  EXPECT_THAT(four.recipe().graph_text(), Not(HasSubstr("placement=")));
  EXPECT_THAT(four.recipe().graph_text(), HasSubstr("= input i32[8, 64]"));  // the whole batch
  // The recipe compiles to the plan: JobFromGraphText stages and cuts it again.
  {
    const examples::ParallelFlags flags = examples::LayoutFlagsFromRecipe(four.recipe());
    absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<proto::Job> job = JobFromGraphText(four.recipe().graph_text(), "the plan's recipe", *layout);
    ASSERT_TRUE(job.ok()) << job.status();
    std::string dump;
    absl::StatusOr<CompileOptions> options =
        examples::CompileOptionsFor(*layout, examples::SettingsFromRecipe(four.recipe()), &dump);
    ASSERT_TRUE(options.ok()) << options.status();
    absl::StatusOr<proto::Plan> again = Compile(*job, *options);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->devices_size(), four.devices_size());
    EXPECT_EQ(again->job().micro_batches(), chosen.micro_batches());
    for (int device = 0; device < again->devices_size(); ++device) {
      EXPECT_EQ(again->devices(device).peak_bytes(), four.devices(device).peak_bytes());
      EXPECT_EQ(again->devices(device).actors_size(), four.devices(device).actors_size());
    }
  }
  absl::StatusOr<Replan> replan = ReplanForSurvivors(four, 3);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_THAT(replan->action, HasSubstr("(the --auto_parallel search ran again: --dp=1 --tp=3 --pp=1 --micro_batches=4 "));
  EXPECT_TRUE(VerifyPlan(replan->plan).ok());
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(SearchedPlan(text, Nodes(3, kMemory)))) << replan->action;
  absl::StatusOr<Replan> again = ReplanForSurvivors(replan->plan, 2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->action, HasSubstr("(the --auto_parallel search ran again: --dp=1 --tp=1 --pp=2 "));
  // The 3 nodes' tp = 3 had its split inferred, so their recipe is the text without hints
  // (RecipeJob): the search of that text for 2 nodes.
  EXPECT_TRUE(Bytes(again->plan) ==
              Bytes(SearchedPlan(LayoutFreeGraphText(replan->plan.recipe().graph_text(), false), Nodes(2, kMemory))))
      << again->action;
}

// A search that chose a tp layout for a text without splitting hints (the mlp's one-device
// `sbp=B`): the recipe's text has no hints (AutoParallelFromGraphText's job is RecipeJob's),
// so the search for the survivors infers the split again for each layout it tries, and
// gives the plan a search of the same text for them gives.
TEST(LaunchShrinkTest, AnInferredSplitIsSearchedAgainForTheSurvivors) {
  // Hidden 256 on a 10 MB/s link between the nodes: tensor parallelism wins (its
  // activations' reductions cost less than the weights' there).
  const std::string text = LayoutFreeMlpText(/*hidden=*/256);
  examples::AutoParallelRequest slow = Nodes(2);
  slow.cluster.devices_per_node = 2;
  slow.cluster.inter_node_bandwidth = 1e7;
  slow.settings.links.inter_node_bandwidth = 1e7;
  slow.settings.links.inter_node_bandwidth_given = true;
  const proto::Plan two = SearchedPlan(text, slow);
  ASSERT_GT(two.auto_parallel().chosen().layout().tp(), 1) << two.auto_parallel().DebugString();
  EXPECT_THAT(two.recipe().graph_text(), Not(HasSubstr("sbp=")));
  bool split = false;  // the compiled job has the inferred split
  for (const proto::TensorDef& tensor : two.job().tensors()) {
    split |= tensor.name() == "layer0/weight" && tensor.has_sbp_hint() && tensor.sbp_hint().sbp(0).has_split();
  }
  EXPECT_TRUE(split);
  absl::StatusOr<Replan> replan = ReplanForSurvivors(two, 1);
  ASSERT_TRUE(replan.ok()) << replan.status();
  examples::AutoParallelRequest one = slow;
  one.cluster.nodes = 1;
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(SearchedPlan(LayoutFreeGraphText(two.recipe().graph_text(), false), one)))
      << replan->action;
}

// A ZeRO stage the text's author wrote on the optimizer line is the model's, not a
// layout's: the recipe records no layout stage (AutoParallelFromGraphText keeps the
// layout without it even when the chosen layout repeats it), so the search on the
// survivors keeps the text's zero=2 instead of choosing a stage again.
TEST(LaunchShrinkTest, AutoParallelSearchAgainKeepsTheTextsZeroStage) {
  const std::string layout_free = LayoutFreeMlpText();
  const size_t optimizer = layout_free.find("\noptimizer ");
  ASSERT_NE(optimizer, std::string::npos) << layout_free;
  std::string text = layout_free;
  text.insert(text.find('\n', optimizer + 1), " zero=2");
  const proto::Plan three = SearchedPlan(text, Nodes(3));
  ASSERT_EQ(three.job().optimizer().zero_stage(), 2);
  EXPECT_EQ(three.recipe().zero(), 0);
  EXPECT_THAT(three.recipe().graph_text(), HasSubstr(" zero=2 zero_axis=0\n"));
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  ASSERT_TRUE(replan.ok()) << replan.status();
  EXPECT_EQ(replan->plan.job().optimizer().zero_stage(), 2) << replan->action;
  EXPECT_EQ(replan->plan.recipe().zero(), 0);
  EXPECT_THAT(replan->plan.recipe().graph_text(), HasSubstr(" zero=2 zero_axis=0\n"));
  EXPECT_TRUE(Bytes(replan->plan) == Bytes(SearchedPlan(text, Nodes(2))));
}

// --device_memory that the 3 nodes' smallest layout (ZeRO-3 over 3 devices) fits and 2
// nodes' does not: the search finds nothing, and the refusal says so with its figures.
// (The limit is ZeRO-3's planned peak: the model predicts the dp = 3 layouts within 15%
// of theirs, but not in their planned order, so the smallest prediction may be another's.)
TEST(LaunchShrinkTest, AutoParallelSearchThatFindsNothingIsRefused) {
  // The data hinted split by rows (a hint that splits: no tp split is inferred,
  // graph_text_job.h), so the layouts are data-parallel ones and the smallest is ZeRO-3's
  // (a tp layout of the hint-free text would be smaller still).
  const std::string text = absl::StrReplaceAll(LayoutFreeMlpText(), {{"source=data sbp=B", "source=data sbp=S(0)"}});
  ASSERT_THAT(text, HasSubstr("source=data sbp=S(0)"));
  // ZeRO-3's planned peak over the 3 devices (memory planning's, which the search checks
  // the layouts it compiles against): the limit. The other stages plan more (zero = 0:
  // 184832 B, zero = 3: 171904 B), so the search, falling back from each layout it
  // compiles over the limit, ends at ZeRO-3.
  int64_t smallest = 0;
  {
    examples::ParallelFlags flags = Flags(3, 3);
    flags.zero = 3;
    absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<proto::Job> job = JobFromGraphText(text, "mlp.txt", *layout);
    ASSERT_TRUE(job.ok()) << job.status();
    std::string dump;
    absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, Dense(), &dump);
    ASSERT_TRUE(options.ok()) << options.status();
    absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const proto::DevicePlan& device : plan->devices()) smallest = std::max(smallest, device.peak_bytes());
  }
  const proto::Plan three = SearchedPlan(text, Nodes(3, smallest));
  ASSERT_EQ(three.auto_parallel().chosen().layout().zero(), 3) << three.auto_parallel().DebugString();
  // The recipe's text carries the chosen stage on its optimizer line and the layout's
  // placement; the text searched again has neither.
  EXPECT_THAT(three.recipe().graph_text(), HasSubstr(" zero=3 zero_axis=0\n"));
  EXPECT_THAT(three.recipe().graph_text(), HasSubstr("\nplacement cpu{"));
  const std::string searched = LayoutFreeGraphText(three.recipe().graph_text(), true);
  EXPECT_THAT(searched, Not(HasSubstr(" zero=")));
  EXPECT_THAT(searched, Not(HasSubstr("placement")));
  EXPECT_THAT(searched, HasSubstr("\noptimizer sgd lr="));
  absl::StatusOr<Replan> replan = ReplanForSurvivors(three, 2);
  // Refused by the prediction (RESOURCE_EXHAUSTED) or by memory planning of the layouts
  // it compiled (FAILED_PRECONDITION): both are the search's own message.
  EXPECT_TRUE(replan.status().code() == absl::StatusCode::kResourceExhausted ||
              replan.status().code() == absl::StatusCode::kFailedPrecondition)
      << replan.status();
  EXPECT_THAT(std::string(replan.status().message()),
              StartsWith("the model does not fit the 2 surviving nodes: the --auto_parallel search found no layout "
                         "that fits: "));
  EXPECT_THAT(std::string(replan.status().message()), HasSubstr(absl::StrCat("--device_memory=")));
  EXPECT_THAT(std::string(replan.status().message()), HasSubstr(absl::StrCat("(", smallest, " B)")));
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

  // ZeRO-3 over 3 nodes fits exactly; on 2 each parameter shard is half instead of a third
  // (and the raised micro-batches accumulate whole gradients), so the re-plan's peak is
  // above it. (Until session 53 an activation-bound mlp served here: raising the
  // micro-batches did not lower its peak then, as per-iteration registers were doubled.)
  examples::ParallelFlags sharded = Flags(3, 3);
  sharded.zero = 3;
  const proto::Plan fits = CompiledPlan(Mlp(48, 256), sharded, Dense());
  int64_t peak = 0;
  for (const proto::DevicePlan& device : fits.devices()) peak = std::max(peak, device.peak_bytes());
  examples::CompileSettings tight = Dense();
  tight.device_memory = peak;
  absl::StatusOr<Replan> too_big = ReplanForSurvivors(CompiledPlan(Mlp(48, 256), sharded, tight), 2);
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
