// `oneflow compile GRAPH.txt --auto_parallel` through its library call: the search over
// the layouts a graph text can be built for (micro-batches; pipeline stages in a text with
// blocks), the chosen plan
// byte for byte the plan of compiling the text with the chosen flags, determinism, and
// the refusal of a text written for one placement.
#include <algorithm>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/graph.h"
#include "plan/plan_checksum.h"
#include "plan/plan_io.h"
#include "tools/cli/graph_text_job.h"

namespace oneflow::cli {
namespace {

examples::ParallelLayout Layout(const examples::ParallelFlags& flags) {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

// A model's `--print_graph` text without its `placement` line: a layout-free model.
std::string LayoutFreeText(const absl::StatusOr<proto::Job>& job) {
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(*job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return LayoutFreeGraphText((*graph)->ToText(Graph::Locations::kOmit), /*zero_from_layout=*/false);
}

// The mlp's text as `--print_graph` writes it for one device, without its `placement`
// line: a layout-free model.
// (With `micro_batches`: the text of one micro-batch, as --print_graph --micro_batches writes it.)
std::string LayoutFreeMlpText(int64_t batch, int64_t micro_batches = 1) {
  examples::MlpConfig config;
  config.batch = batch;
  config.in_features = 8;
  config.hidden = 16;
  config.layers = 2;
  examples::ParallelFlags flags;
  flags.micro_batches = micro_batches;
  return LayoutFreeText(examples::BuildMlp(config, Layout(flags)));
}

examples::AutoParallelRequest FourDevices() {
  examples::AutoParallelRequest request;
  request.cluster.devices_per_node = 4;
  return request;
}

std::string Bytes(const proto::Plan& plan) {
  absl::StatusOr<std::string> bytes = SerializePlan(plan);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return *bytes;
}

// The text compiled with `layout`'s flags (and `settings`: --recompute, --pp_schedule), as
// `oneflow compile` does.
absl::StatusOr<proto::Plan> PlanOfTheFlags(const std::string& text, const std::string& file_name,
                                           const examples::ParallelLayout& layout,
                                           const examples::CompileSettings& settings = examples::CompileSettings()) {
  OF_ASSIGN_OR_RETURN(const proto::Job job, JobFromGraphText(text, file_name, layout));
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions options, examples::CompileOptionsFor(layout, settings, &dump));
  return Compile(job, options);
}

// The searched plan, its decision record set aside, is byte for byte the plan of
// compiling the text with the chosen layout's flags.
void ExpectThePlanOfItsFlags(const std::string& text, const std::string& file_name,
                             const examples::ParallelLayout& layout, const proto::Plan& searched) {
  absl::StatusOr<proto::Plan> by_hand = PlanOfTheFlags(
      text, file_name, layout, examples::SettingsForLayout({}, searched.auto_parallel().chosen().layout()));
  ASSERT_TRUE(by_hand.ok()) << by_hand.status();
  proto::Plan chosen = searched;
  chosen.clear_auto_parallel();
  ASSERT_TRUE(SealPlan(&chosen).ok());
  EXPECT_TRUE(Bytes(chosen) == Bytes(*by_hand));
}

TEST(GraphTextAutoParallel, SearchesTheTextsLayoutsAndCompilesTheChosenOneAsItsFlagsWould) {
  const std::string text = LayoutFreeMlpText(/*batch=*/16);
  ASSERT_THAT(text, testing::Not(testing::HasSubstr("placement")));
  absl::StatusOr<examples::AutoParallelResult> result = AutoParallelFromGraphText(text, "mlp.txt", FourDevices());
  ASSERT_TRUE(result.ok()) << result.status();
  const proto::AutoParallelDecision& decision = result->plan.auto_parallel();
  // The mlp has no blocks (pp = 1), and its inputs hold the batch of 16 rows with every op
  // keeping rows apart up to the loss's mean, so micro-batches are searched; its
  // one-device `sbp=B` hints split nothing, so a tp layout gets Megatron's split
  // (JobFromGraphText): dp = 4 with ZeRO 0-3 and 3 keeping forward's gathered copies, and
  // 1, 2 or 4 micro-batches (whole rows on each device: 15), dp = 2 x tp = 2 with the same
  // five and 1-8 micro-batches (20), and tp = 4 with 1-16 (5) are all its layouts.
  EXPECT_EQ(decision.candidates(), 40);
  EXPECT_EQ(auto_parallel::LayoutName(decision.chosen().layout()),
            "dp=4 tp=1 pp=1 micro_batches=1 zero=0 recompute=none");
  int micro_batched = 0;
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
    EXPECT_EQ(alternative.layout().pp(), 1);
    micro_batched += alternative.layout().micro_batches() > 1;
    EXPECT_GE(auto_parallel::StepSeconds(alternative), auto_parallel::StepSeconds(decision.chosen()));
  }
  EXPECT_EQ(decision.alternatives_size(), 5);  // the top alternatives the record keeps
  EXPECT_GT(micro_batched, 0) << "no micro-batched layout was priced";

  // The same text compiled with the chosen flags: the same plan once the decision record
  // is set aside.
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.dp = 4;
  const examples::ParallelLayout layout = Layout(flags);
  ExpectThePlanOfItsFlags(text, "mlp.txt", layout, result->plan);
}

// The gpt's text as --print_graph writes it for one device (2 blocks, the whole batch of
// 8 rows), without its `placement` line.
std::string LayoutFreeGptText() {
  return LayoutFreeText(examples::BuildGpt(examples::GptConfig(), Layout(examples::ParallelFlags{})));
}

TEST(GraphTextAutoParallel, ATextWithBlocksIsCutIntoPipelineStagesWithMicroBatches) {
  const std::string text = LayoutFreeGptText();
  examples::AutoParallelRequest request = FourDevices();
  request.device_memory = 6000000;  // below every layout of one stage
  std::string search_note = "unset";
  absl::StatusOr<examples::AutoParallelResult> result =
      AutoParallelFromGraphText(text, "gpt.txt", request, /*tensor_parallel_note=*/nullptr, &search_note);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(search_note, "");  // pipelines and micro-batches both searched
  const proto::AutoParallelDecision& decision = result->plan.auto_parallel();
  // 153 layouts with ZeRO-3 re-gathering (the pipelines with micro-batches twice, 1F1B
  // and ZB-H1, which fills the pipeline's bubble with the weights' gradients at 1F1B's
  // memory), and each of the 30 with ZeRO-3 again keeping forward's gathered copies.
  EXPECT_EQ(decision.candidates(), 183);
  EXPECT_EQ(auto_parallel::LayoutName(decision.chosen().layout()),
            "dp=1 tp=2 pp=2 pp_schedule=zb micro_batches=8 zero=0 recompute=none");
  EXPECT_LE(decision.planned_peak_bytes(), request.device_memory);

  // The chosen plan is the text compiled with the chosen flags (its blocks on the stages,
  // its batch cut into 8 micro-batches).
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.tp = 2;
  flags.pp = 2;
  flags.micro_batches = 8;
  const examples::ParallelLayout layout = Layout(flags);
  absl::StatusOr<proto::Job> job = JobFromGraphText(text, "gpt.txt", layout);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->micro_batches(), 8);
  EXPECT_EQ(result->plan.job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_ZB_H1);
  ExpectThePlanOfItsFlags(text, "gpt.txt", layout, result->plan);
}

TEST(GraphTextAutoParallel, TheNoteSaysWhatATextLeavesOutOfTheSearch) {
  std::string search_note;
  // The mlp has no blocks.
  std::string text = LayoutFreeMlpText(/*batch=*/16);
  ASSERT_TRUE(AutoParallelFromGraphText(text, "mlp.txt", FourDevices(), nullptr, &search_note).ok());
  EXPECT_EQ(search_note,
            "pipelines not searched: the graph has 0 block(s) (ops marked block=NAME); pipeline stages cut between "
            "blocks\n");
  // A text of one micro-batch (inputs of 8 rows under `batch 16`, as `--print_graph
  // --micro_batches=2` prints it) is the model of its whole batch: searched as the text of
  // 16 rows is, to the same plan bytes.
  text = LayoutFreeMlpText(/*batch=*/16, /*micro_batches=*/2);
  absl::StatusOr<examples::AutoParallelResult> result =
      AutoParallelFromGraphText(text, "mlp.txt", FourDevices(), nullptr, &search_note);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(search_note,
            "searched as the whole batch: the graph's inputs hold 8 rows, one micro-batch of its batch of 16\n"
            "pipelines not searched: the graph has 0 block(s) (ops marked block=NAME); pipeline stages cut between "
            "blocks\n");
  absl::StatusOr<examples::AutoParallelResult> whole =
      AutoParallelFromGraphText(LayoutFreeMlpText(/*batch=*/16), "mlp.txt", FourDevices());
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(result->plan.auto_parallel().candidates(), whole->plan.auto_parallel().candidates());
  EXPECT_TRUE(Bytes(result->plan) == Bytes(whole->plan));
  // Micro-batches of one row cannot be grown back (a size-1 axis also broadcasts): that
  // text's micro-batch is the search's batch, and the note says micro-batches are not searched.
  text = LayoutFreeMlpText(/*batch=*/4, /*micro_batches=*/4);
  result = AutoParallelFromGraphText(text, "mlp.txt", FourDevices(), nullptr, &search_note);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(search_note,
            "pipelines not searched: the graph has 0 block(s) (ops marked block=NAME); pipeline stages cut between "
            "blocks\nmicro-batches not searched: the graph's inputs are not the whole batch of a `batch` line (a "
            "`batch N` line and inputs of N rows)\n");
}

TEST(GraphTextAutoParallel, TwoSearchesGiveTheSamePlanBytes) {
  const std::string text = LayoutFreeMlpText(/*batch=*/16);
  absl::StatusOr<examples::AutoParallelResult> first = AutoParallelFromGraphText(text, "mlp.txt", FourDevices());
  absl::StatusOr<examples::AutoParallelResult> second = AutoParallelFromGraphText(text, "mlp.txt", FourDevices());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(Bytes(first->plan) == Bytes(second->plan));
}

TEST(GraphTextAutoParallel, MemoryBelowEveryLayoutNamesTheSmallestPeak) {
  examples::AutoParallelRequest request = FourDevices();
  request.device_memory = 1024;
  absl::StatusOr<examples::AutoParallelResult> result =
      AutoParallelFromGraphText(LayoutFreeMlpText(/*batch=*/16), "mlp.txt", request);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  // tp = 4 splits the weights over the 4 devices, 16 micro-batches the activations: the smallest peak.
  EXPECT_EQ(std::string(result.status().message()),
            "--device_memory=1.00 KiB (1024 B) is below every layout's predicted peak (40 layouts of 'mlp' on 4 "
            "devices); the smallest is 3.71 KiB (3800 B), with --dp=1 --tp=4 --pp=1 --micro_batches=16 --zero=0 "
            "--recompute=none; give at least that much, or more devices");
  // That layout compiled: memory planning's peak (4416 B) is the predicted one within 25%
  // (before session 56 the model predicted 1640 B, 0.37 of it).
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.tp = 4;
  flags.micro_batches = 16;
  absl::StatusOr<proto::Plan> plan = PlanOfTheFlags(LayoutFreeMlpText(/*batch=*/16), "mlp.txt", Layout(flags));
  ASSERT_TRUE(plan.ok()) << plan.status();
  int64_t planned = 0;
  for (const proto::DevicePlan& device : plan->devices()) planned = std::max(planned, device.peak_bytes());
  EXPECT_NEAR(3800.0 / static_cast<double>(planned), 1.0, 0.25) << "planned " << planned << " B";
}

TEST(GraphTextAutoParallel, ATextWrittenForOnePlacementIsRefused) {
  const std::string text = absl::StrCat("graph p\nplacement cpu{0:0-1}[2]\n", LayoutFreeMlpText(16).substr(
                                                                                  LayoutFreeMlpText(16).find('\n') + 1));
  absl::StatusOr<examples::AutoParallelResult> result = AutoParallelFromGraphText(text, "p.txt", FourDevices());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(result.status().message()),
            "p.txt: --auto_parallel gives each layout its own placement, but the graph has `placement "
            "cpu{0:0-1}`; remove that line (and sbp hints written for one layout), or compile without "
            "--auto_parallel");
}

}  // namespace
}  // namespace oneflow::cli
