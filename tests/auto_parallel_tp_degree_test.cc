// Each tensor-parallel degree priced with the boxings the compiler plans at that degree
// (ModelProfile::tp_degree_profiles, examples/common/auto_parallel_driver.cc): the llama
// without hints, given Megatron's split for each layout (what `oneflow compile` does to a
// hint-free text), gathers its attention weights at tp = 2 and keeps them split at tp = 4;
// the tp = 4 layout's price names only the collectives the tp = 4 plan runs.
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

examples::JobBuilder HintFreeLlama() {
  return [](const examples::ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    const examples::LlamaConfig config;  // hidden 128, 4 heads, 2 kv heads, 2 layers
    OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildLlama(config, layout));
    examples::ClearSbpHints(&job);
    OF_RETURN_IF_ERROR(examples::HintTensorParallelism(layout, &job).status());
    return job;
  };
}

proto::AutoParallelLayout TensorParallel(int64_t tp) {
  proto::AutoParallelLayout layout;
  layout.set_dp(4 / tp);
  layout.set_tp(tp);
  layout.set_pp(1);
  layout.set_micro_batches(1);
  layout.set_zero(0);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

// An attention weight without its layer ("attention/wq"): the prediction prices one layer
// of identical ones (the first) for all.
std::string WeightKind(const std::string& tensor) { return tensor.substr(tensor.find("/attention/") + 1); }

// The attention weights the compiled layout gathers (the compiler chose to replicate them).
std::set<std::string> WeightGathers(const examples::JobBuilder& build, const examples::AutoParallelRequest& request,
                                    const proto::AutoParallelLayout& auto_layout) {
  absl::StatusOr<examples::ParallelLayout> layout =
      examples::ParallelLayout::Create(examples::FlagsForLayout(request.cluster, auto_layout));
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = build(*layout);
  EXPECT_TRUE(job.ok()) << job.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, request.settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::set<std::string> gathers;
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    if (!absl::StrContains(boxing.tensor(), "/attention/w")) continue;
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.kind() == proto::STEP_ALL_GATHER) gathers.insert(WeightKind(boxing.tensor()));
    }
  }
  return gathers;
}

// The attention weights whose gathers the prediction priced ("layers0/attention/wq
// (planned all_gather)"), by kind.
std::set<std::string> PricedWeightGathers(const proto::AutoParallelPrediction& prediction) {
  std::set<std::string> gathers;
  for (const proto::AutoParallelEdge& edge : prediction.edges()) {
    const std::string& tensor = edge.tensor();
    const size_t planned = tensor.find(" (planned all_gather)");
    if (planned != std::string::npos && absl::StrContains(tensor, "/attention/w")) {
      gathers.insert(WeightKind(tensor.substr(0, planned)));
    }
  }
  return gathers;
}

TEST(AutoParallelTpDegrees, EachDegreeIsPricedWithTheBoxingsItsPlanRuns) {
  const examples::JobBuilder build = HintFreeLlama();
  examples::AutoParallelRequest request;
  request.cluster.devices_per_node = 4;
  // The compiler's choice on tp = 2 and tp = 4 differs (the premise).
  const std::set<std::string> gathered_at_2 = WeightGathers(build, request, TensorParallel(2));
  const std::set<std::string> gathered_at_4 = WeightGathers(build, request, TensorParallel(4));
  EXPECT_EQ(gathered_at_2, (std::set<std::string>{"attention/wk", "attention/wo", "attention/wq", "attention/wv"}));
  EXPECT_TRUE(gathered_at_4.empty());
  for (const int64_t tp : {2, 4}) {
    absl::StatusOr<proto::AutoParallelDecision> priced = examples::PriceGivenLayout(build, request, TensorParallel(tp));
    ASSERT_TRUE(priced.ok()) << priced.status();
    EXPECT_EQ(PricedWeightGathers(priced->chosen()), tp == 2 ? gathered_at_2 : gathered_at_4) << "tp = " << tp;
  }
}

}  // namespace
}  // namespace oneflow
