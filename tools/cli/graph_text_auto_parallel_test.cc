// `oneflow compile GRAPH.txt --auto_parallel` through its library call: the search over
// the layouts a graph text can be built for (pp = 1, one micro-batch), the chosen plan
// byte for byte the plan of compiling the text with the chosen flags, determinism, and
// the refusal of a text written for one placement.
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/mlp/mlp_model.h"
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

// The mlp's text as `--print_graph` writes it for one device, without its `placement`
// line: a layout-free model.
std::string LayoutFreeMlpText(int64_t batch) {
  examples::MlpConfig config;
  config.batch = batch;
  config.in_features = 8;
  config.hidden = 16;
  config.layers = 2;
  absl::StatusOr<proto::Job> job = examples::BuildMlp(config, Layout(examples::ParallelFlags{}));
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(*job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit((*graph)->ToText(Graph::Locations::kOmit), '\n')) {
    if (!absl::StartsWith(line, "placement ")) lines.emplace_back(line);
  }
  return absl::StrJoin(lines, "\n");
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

TEST(GraphTextAutoParallel, SearchesTheTextsLayoutsAndCompilesTheChosenOneAsItsFlagsWould) {
  const std::string text = LayoutFreeMlpText(/*batch=*/16);
  ASSERT_THAT(text, testing::Not(testing::HasSubstr("placement")));
  absl::StatusOr<examples::AutoParallelResult> result = AutoParallelFromGraphText(text, "mlp.txt", FourDevices());
  ASSERT_TRUE(result.ok()) << result.status();
  const proto::AutoParallelDecision& decision = result->plan.auto_parallel();
  // The mlp has no blocks, and a text keeps pp = 1 and one micro-batch; its one-device
  // `sbp=B` hints split nothing, so a tp layout gets Megatron's split (JobFromGraphText):
  // dp = 4 and dp = 2 x tp = 2 with ZeRO 0, 1, 2 and 3, and tp = 4, are all its layouts.
  EXPECT_EQ(decision.candidates(), 9);
  EXPECT_EQ(auto_parallel::LayoutName(decision.chosen().layout()),
            "dp=4 tp=1 pp=1 micro_batches=1 zero=0 recompute=none");
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
    EXPECT_EQ(alternative.layout().pp(), 1);
    EXPECT_EQ(alternative.layout().micro_batches(), 1);
    EXPECT_GE(auto_parallel::StepSeconds(alternative), auto_parallel::StepSeconds(decision.chosen()));
  }
  EXPECT_EQ(decision.alternatives_size(), 5);  // the top alternatives the record keeps
  int tensor_parallel = 0;
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
    tensor_parallel += alternative.layout().tp() > 1;
  }
  EXPECT_GT(tensor_parallel, 0) << "no tp layout was priced";

  // The same text compiled with the chosen flags: the same plan once the decision record
  // is set aside.
  examples::ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.dp = 4;
  const examples::ParallelLayout layout = Layout(flags);
  absl::StatusOr<proto::Job> job = JobFromGraphText(text, "mlp.txt", layout);
  ASSERT_TRUE(job.ok()) << job.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, examples::CompileSettings(), &dump);
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> by_hand = Compile(*job, *options);
  ASSERT_TRUE(by_hand.ok()) << by_hand.status();
  proto::Plan chosen = result->plan;
  chosen.clear_auto_parallel();
  ASSERT_TRUE(SealPlan(&chosen).ok());
  EXPECT_TRUE(Bytes(chosen) == Bytes(*by_hand));
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
  // ZeRO-3 shards everything over the 4 devices: the smallest peak.
  EXPECT_EQ(std::string(result.status().message()),
            "--device_memory=1.00 KiB (1024 B) is below every layout's predicted peak (9 layouts of 'mlp' on 4 "
            "devices); the smallest is 3.74 KiB (3832 B), with --dp=4 --tp=1 --pp=1 --micro_batches=1 --zero=3 "
            "--recompute=none; give at least that much, or more devices");
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
