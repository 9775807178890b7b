// `oneflow inspect` on plans with pipeline stages (gpt --pp): the stages section (devices,
// ops, memory, the modelled 1F1B bubble and a measured one), and its JSON. Figures are
// checked against the plan's own fields, not golden bytes, so memory-planning changes do
// not churn this test.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/common/compile_recipe.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tools/cli/inspect.h"
#include "tools/cli/pipeline_stages.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;
using ::testing::Not;

proto::Plan PipelinedGpt(int64_t pp, int64_t dp, int64_t micro_batches, int64_t layers) {
  examples::ParallelFlags flags;
  flags.devices_per_node = pp * dp;
  flags.pp = pp;
  flags.dp = dp;
  flags.micro_batches = micro_batches;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.layers = layers;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 32;
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(config, layout), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::string Inspect(const proto::Plan& plan, InspectFormat format, std::optional<TraceBubble> measured = {}) {
  absl::StatusOr<std::string> out = InspectPlan(plan, {format, std::nullopt, measured});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

google::protobuf::Struct Json(const std::string& text) {
  google::protobuf::Struct json;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &json).ok()) << text;
  return json;
}

// A measurement with the given idle fraction per device.
TraceBubble Measured(const std::vector<double>& idle) {
  TraceBubble measured;
  measured.trace = "t.json";
  measured.bubble.first_iteration = 1;
  measured.bubble.last_iteration = 3;
  measured.bubble.window_end_ns = 2'500'000;
  for (double fraction : idle) measured.bubble.devices.push_back({0, fraction});
  return measured;
}

TEST(ModelledBubbleTest, OneF1B) {
  EXPECT_THAT(ModelledBubble(1, 8), DoubleEq(0));
  EXPECT_THAT(ModelledBubble(2, 1), DoubleEq(0.5));
  EXPECT_THAT(ModelledBubble(2, 4), DoubleEq(0.2));
  EXPECT_THAT(ModelledBubble(4, 8), DoubleEq(3.0 / 11));
  EXPECT_THAT(ModelledBubble(4, 0), DoubleEq(0.75));  // Unset micro-batches: one.
}

// Per schedule at S = 4, M = 8 (issue 27's figures): 1F1B 3/11, interleaved V = 2 3/19,
// ZB-H1 3/27.
TEST(ModelledBubbleTest, PerSchedule) {
  EXPECT_THAT(ModelledBubble(4, 8, proto::PIPELINE_SCHEDULE_1F1B, 1), DoubleEq(3.0 / 11));
  EXPECT_THAT(ModelledBubble(4, 8, proto::PIPELINE_SCHEDULE_INTERLEAVED, 2), DoubleEq(3.0 / 19));
  EXPECT_THAT(ModelledBubble(4, 8, proto::PIPELINE_SCHEDULE_ZB_H1, 1), DoubleEq(3.0 / 27));
  EXPECT_THAT(ModelledBubble(1, 8, proto::PIPELINE_SCHEDULE_ZB_H1, 1), DoubleEq(0));
}

TEST(InspectPipelineTest, StagesOfTwoStageGpt) {
  const proto::Plan plan = PipelinedGpt(/*pp=*/2, /*dp=*/1, /*micro_batches=*/4, /*layers=*/2);
  const std::string text = Inspect(plan, InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr("plan 'gpt' (format version 2)\nmicro-batches: 4 per iteration\ncluster: "));
  EXPECT_THAT(text, HasSubstr("\npipeline stages (2), 4 micro-batches per iteration; 1F1B bubble "
                              "(S - 1) / (M + S - 1) = 1 / 5 = 0.200\n  modelled bubble per schedule: 1f1b 0.200 (this "
                              "plan), interleaved V=2 0.111, zb 0.077\n  stage 0: cpu{0:0}\n    devices: 0:0\n"));
  const std::vector<PipelineStage> stages = PipelineStages(plan);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].num_ops + stages[1].num_ops, plan.op_sbps_size());
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(stages[s].devices, std::vector<int>{s});
    EXPECT_EQ(stages[s].peak_bytes, plan.devices(s).peak_bytes());
    EXPECT_EQ(stages[s].persistent_bytes, ComputeDeviceFigures(plan.devices(s)).persistent_bytes);
    EXPECT_THAT(text, HasSubstr(absl::StrCat("  stage ", s, ": cpu{0:", s, "}\n    devices: 0:", s, "\n    ops: ",
                                             stages[s].num_ops, "\n    memory per device: peak ",
                                             FormatBytes(stages[s].peak_bytes), ", persistent ",
                                             FormatBytes(stages[s].persistent_bytes),
                                             "\n    bubble: modelled 0.200\n")));
  }
  // Listed backwards, the ops meet stage 1 first; the stage holding the loss still comes last.
  proto::Plan reversed = plan;
  std::reverse(reversed.mutable_op_sbps()->begin(), reversed.mutable_op_sbps()->end());
  const std::vector<PipelineStage> reordered = PipelineStages(reversed);
  ASSERT_EQ(reordered.size(), 2u);
  EXPECT_EQ(reordered[0].placement, "cpu{0:0}");
  EXPECT_EQ(reordered[1].placement, "cpu{0:1}");
  const google::protobuf::Struct json = Json(Inspect(plan, InspectFormat::kJson));
  EXPECT_EQ(json.fields().at("micro_batches").number_value(), 4);
  const google::protobuf::Struct& pipeline = json.fields().at("pipeline").struct_value();
  EXPECT_EQ(pipeline.fields().at("num_stages").number_value(), 2);
  EXPECT_THAT(pipeline.fields().at("modelled_bubble").number_value(), DoubleEq(0.2));
  EXPECT_TRUE(pipeline.fields().at("trace").has_null_value());
  const auto& json_stages = pipeline.fields().at("stages").list_value();
  ASSERT_EQ(json_stages.values_size(), 2);
  const google::protobuf::Struct& last = json_stages.values(1).struct_value();
  EXPECT_EQ(last.fields().at("placement").string_value(), "cpu{0:1}");
  EXPECT_EQ(last.fields().at("devices").list_value().values(0).string_value(), "0:1");
  EXPECT_EQ(last.fields().at("num_ops").number_value(), stages[1].num_ops);
  EXPECT_EQ(last.fields().at("peak_bytes").number_value(), plan.devices(1).peak_bytes());
  EXPECT_TRUE(last.fields().at("measured_bubble").has_null_value());
}

// A plan cut by --stage_blocks: each stage names its count (from the plan's recipe), in
// text and JSON; one cut by block count names none.
TEST(InspectPipelineTest, StagesNameTheirBlocksWhenCut) {
  examples::ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.pp = 2;
  flags.micro_batches = 2;
  flags.stage_blocks = {3, 1};
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.layers = 4;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 32;
  const proto::Job job = *examples::BuildGpt(config, layout);
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  *plan->mutable_recipe() = *examples::MakeRecipe(job, layout, examples::CompileSettings(), /*auto_parallel=*/false);
  const std::vector<PipelineStage> stages = PipelineStages(*plan);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_GT(stages[0].num_ops, 2 * stages[1].num_ops);  // three blocks against one
  const std::string text = Inspect(*plan, InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr(absl::StrCat("    ops: ", stages[0].num_ops, "\n    blocks: 3 (--stage_blocks=3,1)\n")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("    ops: ", stages[1].num_ops, "\n    blocks: 1 (--stage_blocks=3,1)\n")));
  const google::protobuf::Struct json = Json(Inspect(*plan, InspectFormat::kJson));
  const auto& json_stages = json.fields().at("pipeline").struct_value().fields().at("stages").list_value();
  ASSERT_EQ(json_stages.values_size(), 2);
  EXPECT_EQ(json_stages.values(0).struct_value().fields().at("blocks").number_value(), 3);
  EXPECT_EQ(json_stages.values(1).struct_value().fields().at("blocks").number_value(), 1);
  const proto::Plan balanced = PipelinedGpt(/*pp=*/2, /*dp=*/1, /*micro_batches=*/2, /*layers=*/4);
  EXPECT_THAT(Inspect(balanced, InspectFormat::kText), Not(HasSubstr("    blocks: ")));
}

TEST(InspectPipelineTest, FourStagesInForwardOrder) {
  const proto::Plan plan = PipelinedGpt(/*pp=*/4, /*dp=*/1, /*micro_batches=*/8, /*layers=*/4);
  const std::vector<PipelineStage> stages = PipelineStages(plan);
  ASSERT_EQ(stages.size(), 4u);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(stages[s].placement, absl::StrCat("cpu{0:", s, "}"));
  EXPECT_THAT(Inspect(plan, InspectFormat::kText), HasSubstr("1F1B bubble (S - 1) / (M + S - 1) = 3 / 11 = 0.273\n"));
}

TEST(InspectPipelineTest, MeasuredBubblePerStageIsTheMeanOfItsDevices) {
  const proto::Plan plan = PipelinedGpt(/*pp=*/2, /*dp=*/2, /*micro_batches=*/4, /*layers=*/2);
  const TraceBubble measured = Measured({0.1, 0.3, 0.5, 0.7});
  const std::string text = Inspect(plan, InspectFormat::kText, measured);
  EXPECT_THAT(text, HasSubstr("\n  measured from trace 't.json': iterations 1..3 (iteration 0 is warm-up), "
                              "2.500 ms wall time\n"));
  EXPECT_THAT(text, HasSubstr("    devices: 0:0, 0:1\n"));
  EXPECT_THAT(text, HasSubstr("    bubble: modelled 0.200, measured 0.200 (mean of 0:0 0.100, 0:1 0.300)\n"));
  EXPECT_THAT(text, HasSubstr("    bubble: modelled 0.200, measured 0.600 (mean of 0:2 0.500, 0:3 0.700)\n"));
  const google::protobuf::Struct json = Json(Inspect(plan, InspectFormat::kJson, measured));
  const google::protobuf::Struct& pipeline = json.fields().at("pipeline").struct_value();
  const google::protobuf::Struct& trace = pipeline.fields().at("trace").struct_value();
  EXPECT_EQ(trace.fields().at("file").string_value(), "t.json");
  EXPECT_EQ(trace.fields().at("first_iteration").number_value(), 1);
  EXPECT_THAT(trace.fields().at("window_ms").number_value(), DoubleEq(2.5));
  const google::protobuf::Struct& second = pipeline.fields().at("stages").list_value().values(1).struct_value();
  EXPECT_THAT(second.fields().at("measured_bubble").number_value(), DoubleEq(0.6));
  EXPECT_THAT(second.fields().at("devices_measured_bubble").list_value().values(1).number_value(), DoubleEq(0.7));
}

TEST(InspectPipelineTest, OneStage) {
  const proto::Plan plan = PipelinedGpt(/*pp=*/1, /*dp=*/2, /*micro_batches=*/1, /*layers=*/1);
  const std::string text = Inspect(plan, InspectFormat::kText);
  EXPECT_THAT(text, Not(HasSubstr("pipeline stages")));
  EXPECT_THAT(text, Not(HasSubstr("micro-batches")));
  const google::protobuf::Struct json = Json(Inspect(plan, InspectFormat::kJson));
  EXPECT_EQ(json.fields().at("micro_batches").number_value(), 1);
  EXPECT_TRUE(json.fields().at("pipeline").has_null_value());
  // With a trace, one stage gets the section too: its bubble is engine overhead only.
  EXPECT_THAT(Inspect(plan, InspectFormat::kText, Measured({0.05, 0.07})),
              HasSubstr("pipeline stages (1), 1 micro-batch per iteration; 1F1B bubble (S - 1) / (M + S - 1) = "
                        "0 / 1 = 0.000\n"));
}

TEST(InspectPipelineTest, MeasurementOfAnotherDeviceCount) {
  const proto::Plan plan = PipelinedGpt(/*pp=*/2, /*dp=*/1, /*micro_batches=*/2, /*layers=*/2);
  absl::StatusOr<std::string> out = InspectPlan(plan, {InspectFormat::kText, std::nullopt, Measured({0.5})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "trace file 't.json': measured 1 devices, but the plan has 2");
}

}  // namespace
}  // namespace oneflow::cli
