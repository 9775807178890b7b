// Megatron's split inferred for a model without tp hints (compiler/tensor_parallel_hints.h):
// on the gpt example with its hints taken away, the inference gives back exactly the hints
// its author wrote on the tensor-parallel axis.
#include "compiler/tensor_parallel_hints.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

examples::ParallelLayout Layout(int64_t dp, int64_t tp) {
  examples::ParallelFlags flags;
  flags.nodes = 1;
  flags.devices_per_node = dp * tp;
  flags.dp = dp;
  flags.tp = tp;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

// The hand-written tp-axis split of every variable the gpt splits, and the job without
// any hint.
struct Hinted {
  std::map<std::string, Sbp> splits;
  proto::Job hint_free;
};

Hinted GptWithoutHints(const examples::GptConfig& config, int64_t dp, int64_t tp) {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, Layout(dp, tp));
  EXPECT_TRUE(job.ok()) << job.status();
  Hinted hinted;
  hinted.hint_free = *job;
  const int tp_axis = dp > 1 ? 1 : 0;
  std::map<std::string, bool> is_variable;
  for (const proto::VariableDef& variable : job->variables()) is_variable[variable.tensor()] = true;
  for (const proto::TensorDef& tensor : job->tensors()) {
    if (tensor.has_sbp_hint() && is_variable[tensor.name()]) {
      const absl::StatusOr<NdSbp> sbp = NdSbp::FromProto(tensor.sbp_hint());
      EXPECT_TRUE(sbp.ok()) << sbp.status();
      if (sbp->at(tp_axis).is_split()) hinted.splits.emplace(tensor.name(), sbp->at(tp_axis));
    }
  }
  examples::ClearSbpHints(&hinted.hint_free);
  return hinted;
}

// "name S(1), ..." in name order.
std::string Text(const std::map<std::string, Sbp>& splits) {
  std::string text;
  for (const auto& [name, sbp] : splits) absl::StrAppend(&text, text.empty() ? "" : ", ", name, " ", sbp.ToString());
  return text;
}

TEST(TensorParallelHintsTest, TheGptGetsBackItsOwnHints) {
  const examples::GptConfig config = testing::CodecTestGpt();
  for (const auto& [dp, tp] : {std::pair<int64_t, int64_t>{2, 2}, {1, 4}}) {
    const Hinted hinted = GptWithoutHints(config, dp, tp);
    ASSERT_EQ(hinted.splits.size(), 1u + 6u * config.layers) << "wte and six weights a block";
    const absl::StatusOr<std::map<std::string, Sbp>> inferred = InferTensorParallelSplits(hinted.hint_free, tp);
    ASSERT_TRUE(inferred.ok()) << inferred.status();
    EXPECT_EQ(Text(*inferred), Text(hinted.splits)) << "dp=" << dp << " tp=" << tp;
  }
  // Over 3 devices the 4 heads do not split into whole heads (the reshape's signature needs
  // the devices to divide them): attention's weights stay replicated, the MLP's and the
  // embedding's still split (uneven splits are balanced).
  const Hinted four = GptWithoutHints(config, 1, 4);
  const absl::StatusOr<std::map<std::string, Sbp>> three = InferTensorParallelSplits(four.hint_free, 3);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(Text(*three),
            "block0/mlp/w_fc S(1), block0/mlp/w_proj S(0), block1/mlp/w_fc S(1), block1/mlp/w_proj S(0), wte S(0)");
}

// A C++ model without hints searched with --auto_parallel: its builder hints each layout
// with HintTensorParallelism (examples/common/tensor_parallel_hinting.h), and the search
// prices the same layouts, tp ones included, as for the hand-hinted gpt, to the same
// predictions, and chooses the same.
TEST(TensorParallelHintsTest, AHintFreeBuilderIsSearchedAsTheHintedModel) {
  const examples::GptConfig config = testing::CodecTestGpt();
  const examples::JobBuilder hinted = [&](const examples::ParallelLayout& layout) {
    return examples::BuildGpt(config, layout);
  };
  // The gpt as one would write it without WithSbp calls.
  const examples::JobBuilder bare = [&](const examples::ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
    if (job.ok()) examples::ClearSbpHints(&*job);
    return job;
  };
  const examples::JobBuilder hint_free =
      [&](const examples::ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
    absl::StatusOr<proto::Job> job = bare(layout);
    if (!job.ok()) return job.status();
    absl::StatusOr<std::string> note = examples::HintTensorParallelism(layout, &*job);
    if (!note.ok()) return note.status();
    return job;
  };
  examples::AutoParallelRequest request;
  request.cluster.nodes = 2;
  request.cluster.devices_per_node = 2;
  request.cluster.inter_node_bandwidth = 1.25e8;
  absl::StatusOr<examples::AutoParallelResult> with_hints = examples::AutoParallelCompile(hinted, request);
  ASSERT_TRUE(with_hints.ok()) << with_hints.status();
  absl::StatusOr<examples::AutoParallelResult> without = examples::AutoParallelCompile(hint_free, request);
  ASSERT_TRUE(without.ok()) << without.status();
  const proto::AutoParallelDecision& a = with_hints->plan.auto_parallel();
  const proto::AutoParallelDecision& b = without->plan.auto_parallel();
  EXPECT_EQ(b.candidates(), a.candidates());
  EXPECT_EQ(b.chosen().layout().DebugString(), a.chosen().layout().DebugString());
  ASSERT_EQ(b.alternatives_size(), a.alternatives_size());
  for (int i = 0; i < a.alternatives_size(); ++i) {
    EXPECT_EQ(b.alternatives(i).layout().DebugString(), a.alternatives(i).layout().DebugString());
    EXPECT_EQ(b.alternatives(i).compute_seconds(), a.alternatives(i).compute_seconds());
    EXPECT_EQ(b.alternatives(i).exposed_communication_seconds(), a.alternatives(i).exposed_communication_seconds());
  }
  // Without the hinting, the model shows the search nothing tp could split: its tp
  // layouts are not candidates.
  absl::StatusOr<examples::AutoParallelResult> bare_search = examples::AutoParallelCompile(bare, request);
  ASSERT_TRUE(bare_search.ok()) << bare_search.status();
  EXPECT_LT(bare_search->plan.auto_parallel().candidates(), b.candidates());
}

// A hand-written text: the weight whose product a layer norm reads over its features
// stays replicated (no signature splits a layer norm's normalized axis), and so does the
// one that opens nothing on S(0); the classifier head is split by classes, its logits
// gathered for the loss (the loss's own ops may read them so).
constexpr char kNormThenHead[] = R"(graph norm_then_head
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%labels = input i32[8] source=data
%w1 = variable f32[16, 16] init=xavier_uniform seed=1
%gamma = variable f32[16] init=ones
%beta = variable f32[16] init=zeros
%w2 = variable f32[16, 4] init=xavier_uniform seed=2
%h = matmul(a=%x, b=%w1) f32[8, 16]
%n = layer_norm(x=%h, gamma=%gamma, beta=%beta, epsilon=1e-05) f32[8, 16]
%logits = matmul(a=%n, b=%w2) f32[8, 4]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[8]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

TEST(TensorParallelHintsTest, ALayerNormOverSplitFeaturesStopsTheSplit) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(kNormThenHead);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  ASSERT_TRUE(job.ok()) << job.status();
  const absl::StatusOr<std::map<std::string, Sbp>> inferred = InferTensorParallelSplits(*job, 2);
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  EXPECT_EQ(Text(*inferred), "w2 S(1)");
  EXPECT_EQ(InferTensorParallelSplits(*job, 1).status().message(), "tensor-parallel devices 1 < 2: nothing to split");
}

}  // namespace
}  // namespace oneflow
