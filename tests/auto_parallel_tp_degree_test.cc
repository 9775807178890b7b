// Each shape of tp group priced with the boxings the compiler plans for it
// (ModelProfile::tp_probe_profiles, CountTpBoxingsOfEachShape in
// examples/common/auto_parallel_driver.cc): the llama without hints, given Megatron's split
// for each layout (what `oneflow compile` does to a hint-free text), gathers its attention
// weights at tp = 2 and keeps them split at tp = 4, and the gpt's choice over nodes differs
// from its choice within one; each layout's price names the gathers its plan runs.
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "examples/gpt/gpt_model.h"
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

proto::AutoParallelLayout TensorParallel(int64_t tp, int64_t micro_batches = 1) {
  proto::AutoParallelLayout layout;
  layout.set_dp(4 / tp);
  layout.set_tp(tp);
  layout.set_pp(1);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(0);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

// A block's weight without its block ("attention/wq", "mlp/w_proj"): the prediction
// prices one of identical blocks (the first) for all.
std::string WeightKind(const std::string& tensor) { return tensor.substr(tensor.find('/') + 1); }

// The weights the compiled layout gathers over its tp axis (the compiler chose to replicate
// them where they are read), by kind.
std::set<std::string> WeightGathers(const examples::JobBuilder& build, const examples::AutoParallelRequest& request,
                                    const proto::AutoParallelLayout& auto_layout, const std::set<std::string>& kinds) {
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
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.kind() == proto::STEP_ALL_GATHER && kinds.count(WeightKind(boxing.tensor())) > 0) {
        gathers.insert(WeightKind(boxing.tensor()));
      }
    }
  }
  return gathers;
}

// The block weights whose gathers the prediction priced ("layers0/attention/wq (planned
// all_gather)"), by kind.
std::set<std::string> PricedWeightGathers(const proto::AutoParallelPrediction& prediction,
                                          const std::set<std::string>& kinds_of_weights) {
  std::set<std::string> gathers;
  for (const proto::AutoParallelEdge& edge : prediction.edges()) {
    const std::string& tensor = edge.tensor();
    const size_t planned = tensor.find(" (planned all_gather)");
    if (planned == std::string::npos) continue;
    const std::string kind = WeightKind(tensor.substr(0, planned));
    if (kinds_of_weights.count(kind) > 0) gathers.insert(kind);
  }
  return gathers;
}

// The llama's attention weights: their gathers are the compiler's choice by tp degree (its
// FFN weights' also depend on the rows per device: dp x tp = 2 x 2 gathers w2 only, one tp
// group of the whole batch w1, w2 and w3; not a probe's shape).
const std::set<std::string>& AttentionWeights() {
  static const auto* kinds = new std::set<std::string>{"attention/wq", "attention/wk", "attention/wv", "attention/wo"};
  return *kinds;
}

// The gpt's block weights.
const std::set<std::string>& GptBlockWeights() {
  static const auto* kinds =
      new std::set<std::string>{"attn/w_q", "attn/w_k", "attn/w_v", "attn/w_o", "mlp/w_fc", "mlp/w_proj"};
  return *kinds;
}

TEST(AutoParallelTpDegrees, EachDegreeIsPricedWithTheBoxingsItsPlanRuns) {
  const examples::JobBuilder build = HintFreeLlama();
  examples::AutoParallelRequest request;
  request.cluster.devices_per_node = 4;
  // The compiler's choice on tp = 2 and tp = 4 differs (the premise).
  const std::set<std::string> gathered_at_2 = WeightGathers(build, request, TensorParallel(2), AttentionWeights());
  const std::set<std::string> gathered_at_4 = WeightGathers(build, request, TensorParallel(4), AttentionWeights());
  EXPECT_EQ(gathered_at_2, (std::set<std::string>{"attention/wk", "attention/wo", "attention/wq", "attention/wv"}));
  EXPECT_TRUE(gathered_at_4.empty());
  for (const int64_t tp : {2, 4}) {
    absl::StatusOr<proto::AutoParallelDecision> priced = examples::PriceGivenLayout(build, request, TensorParallel(tp));
    ASSERT_TRUE(priced.ok()) << priced.status();
    EXPECT_EQ(PricedWeightGathers(priced->chosen(), AttentionWeights()), tp == 2 ? gathered_at_2 : gathered_at_4)
        << "tp = " << tp;
  }
}

// A tp group over nodes is probed over nodes, with the layout's micro-batches: the gpt
// without hints (Megatron's split inferred) at tp = 4 with 8 micro-batches on 4 hosts of one
// device at 1 Gbit/s gathers its MLP output and attention output weights for backward,
// which the same group within one node does not (nor either with the whole batch); each is
// priced with the gathers its plan runs.
TEST(AutoParallelTpDegrees, AGroupOverNodesIsPricedWithTheBoxingsOfItsLinks) {
  const examples::JobBuilder gpt = [](const examples::ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(examples::GptConfig(), layout));
    examples::ClearSbpHints(&job);
    OF_RETURN_IF_ERROR(examples::HintTensorParallelism(layout, &job).status());
    return job;
  };
  examples::AutoParallelRequest in_node;
  in_node.cluster.devices_per_node = 4;
  examples::AutoParallelRequest over_nodes;
  over_nodes.cluster.nodes = 4;
  over_nodes.cluster.inter_node_bandwidth = 1.25e8;
  over_nodes.settings.links.inter_node_bandwidth = 1.25e8;
  over_nodes.settings.links.inter_node_bandwidth_given = true;
  const proto::AutoParallelLayout tp4 = TensorParallel(4, /*micro_batches=*/8);
  const std::set<std::string> gathered_in_node = WeightGathers(gpt, in_node, tp4, GptBlockWeights());
  const std::set<std::string> gathered_over_nodes = WeightGathers(gpt, over_nodes, tp4, GptBlockWeights());
  EXPECT_TRUE(gathered_in_node.empty());  // the premise
  EXPECT_EQ(gathered_over_nodes, (std::set<std::string>{"attn/w_o", "mlp/w_proj"}));
  for (const auto* request : {&in_node, &over_nodes}) {
    absl::StatusOr<proto::AutoParallelDecision> priced = examples::PriceGivenLayout(gpt, *request, tp4);
    ASSERT_TRUE(priced.ok()) << priced.status();
    EXPECT_EQ(PricedWeightGathers(priced->chosen(), GptBlockWeights()),
              request == &in_node ? gathered_in_node : gathered_over_nodes)
        << (request == &in_node ? "in a node" : "over nodes");
  }
}

}  // namespace
}  // namespace oneflow
