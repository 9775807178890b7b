// The recompute pass on a small graph written as text: the state after the pass, line by
// line, for each mode and override, and what it records per block.
#include "compiler/passes/recompute_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

// Two blocks of matmul -> softmax (the attention core) -> relu, then a classifier.
// softmax_grad reads softmax's output and relu_grad relu's; relu_2, the first block's
// output, is the second block's input.
constexpr char kTwoBlocks[] = R"(graph blocks
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w1 = variable f32[8, 8] init=xavier_uniform seed=1
%w2 = variable f32[8, 8] init=xavier_uniform seed=2
%w3 = variable f32[8, 4] init=xavier_uniform seed=3
%matmul_0 = matmul(a=%x, b=%w1) f32[4, 8] block=block0
%softmax_1 = softmax(x=%matmul_0) f32[4, 8] block=block0 attention_core=true
%relu_2 = relu(x=%softmax_1) f32[4, 8] block=block0
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[4, 8] block=block1
%softmax_4 = softmax(x=%matmul_3) f32[4, 8] block=block1 attention_core=true
%relu_5 = relu(x=%softmax_4) f32[4, 8] block=block1
%matmul_6 = matmul(a=%relu_5, b=%w3) f32[4, 4]
%sparse_softmax_cross_entropy_7 = sparse_softmax_cross_entropy(logits=%matmul_6, labels=%labels) f32[4]
%reduce_mean_8 = reduce_mean(x=%sparse_softmax_cross_entropy_7, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_8
)";

absl::StatusOr<proto::Plan> CompileText(const std::string& text, proto::RecomputeMode mode, std::string* dump) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(1);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_inter_node_bandwidth(10e9);
  options.recompute = mode;
  options.dump_after = {"recompute"};
  options.dump = dump;
  return Compile(*job, options);
}

// The dump's op lines (those with " = "), from the first to the last that contains
// `from` / `to`.
std::string Lines(const std::string& dump, const std::string& from, const std::string& to) {
  const size_t begin = dump.rfind('\n', dump.find(from)) + 1;
  const size_t end = dump.find('\n', dump.rfind(to));
  return dump.substr(begin, end - begin + 1);
}

TEST(RecomputePassTest, NoneChangesNothingButRecordsTheBlocks) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(kTwoBlocks, proto::RECOMPUTE_NONE, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(dump.find("recompute("), std::string::npos) << dump;
  EXPECT_EQ(dump.find("/recompute"), std::string::npos) << dump;
  ASSERT_EQ(plan->job().recompute_blocks_size(), 2);
  const proto::RecomputeBlockDef& block0 = plan->job().recompute_blocks(0);
  EXPECT_EQ(block0.block(), "block0");
  // Backward reads softmax_1 (softmax_grad) and relu_2 (relu_grad, matmul_3's gradient):
  // 2 x 4 x 8 f32.
  EXPECT_EQ(block0.activation_bytes_without(), 256);
  EXPECT_EQ(block0.activation_bytes_kept(), 256);
  EXPECT_EQ(block0.recomputed_ops(), 0);
}

TEST(RecomputePassTest, SelectiveReRunsTheAttentionCoreBeforeItsGradient) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(kTwoBlocks, proto::RECOMPUTE_SELECTIVE, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Each block's softmax re-runs from the kept matmul output just before its gradient,
  // which reads the copy; nothing else changes.
  EXPECT_EQ(Lines(dump, "%softmax_4/recompute", "y=%softmax_1/recompute"),
            "%softmax_4/recompute: f32[4, 8] S(0) = softmax(x=%matmul_3:S(0)) @0\n"
            "%softmax_4_grad/softmax_grad_16: f32[4, 8] S(0) = softmax_grad(dy=%relu_5_grad/relu_grad_15:S(0), "
            "y=%softmax_4/recompute:S(0)) @0\n"
            "%matmul_3_grad/matmul_17: f32[4, 8] S(0) = matmul(a=%softmax_4_grad/softmax_grad_16:S(0), b=%w2:B) @0\n"
            "%matmul_3_grad/matmul_18: f32[8, 8] S(0) = matmul(a=%relu_2:S(1), b=%softmax_4_grad/softmax_grad_16:B) @0\n"
            "%relu_2_grad/relu_grad_19: f32[4, 8] S(0) = relu_grad(dy=%matmul_3_grad/matmul_17:S(0), y=%relu_2:S(0)) @0\n"
            "%softmax_1/recompute: f32[4, 8] S(0) = softmax(x=%matmul_0:S(0)) @0\n"
            "%softmax_1_grad/softmax_grad_20: f32[4, 8] S(0) = softmax_grad(dy=%relu_2_grad/relu_grad_19:S(0), "
            "y=%softmax_1/recompute:S(0)) @0\n");
  // Forward is unchanged: the original softmax still feeds relu.
  EXPECT_NE(dump.find("%relu_5: f32[4, 8] S(0) = relu(x=%softmax_4:S(0)) @0\n"), std::string::npos) << dump;
  const proto::RecomputeBlockDef& block1 = plan->job().recompute_blocks(1);
  EXPECT_EQ(block1.block(), "block1");
  EXPECT_EQ(block1.mode(), proto::RECOMPUTE_SELECTIVE);
  // softmax_4's copy reads matmul_3, which backward did not read before: kept now.
  EXPECT_EQ(block1.activation_bytes_without(), 256);
  EXPECT_EQ(block1.activation_bytes_kept(), 256);
  EXPECT_EQ(block1.recomputed_ops(), 1);
  EXPECT_EQ(block1.recompute_flops(), 32);
}

TEST(RecomputePassTest, FullReRunsTheBlockFromItsInput) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(kTwoBlocks, proto::RECOMPUTE_FULL, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The whole block but its output re-runs from the block's input relu_2.
  EXPECT_EQ(Lines(dump, "%matmul_3/recompute", "y=%softmax_1/recompute"),
            "%matmul_3/recompute: f32[4, 8] S(0) = matmul(a=%relu_2:S(0), b=%w2:B) @0\n"
            "%softmax_4/recompute: f32[4, 8] S(0) = softmax(x=%matmul_3/recompute:S(0)) @0\n"
            "%softmax_4_grad/softmax_grad_16: f32[4, 8] S(0) = softmax_grad(dy=%relu_5_grad/relu_grad_15:S(0), "
            "y=%softmax_4/recompute:S(0)) @0\n"
            "%matmul_3_grad/matmul_17: f32[4, 8] S(0) = matmul(a=%softmax_4_grad/softmax_grad_16:S(0), b=%w2:B) @0\n"
            "%matmul_3_grad/matmul_18: f32[8, 8] S(0) = matmul(a=%relu_2:S(1), b=%softmax_4_grad/softmax_grad_16:B) @0\n"
            "%relu_2_grad/relu_grad_19: f32[4, 8] S(0) = relu_grad(dy=%matmul_3_grad/matmul_17:S(0), y=%relu_2:S(0)) @0\n"
            "%matmul_0/recompute: f32[4, 8] S(0) = matmul(a=%x:S(0), b=%w1:B) @0\n"
            "%softmax_1/recompute: f32[4, 8] S(0) = softmax(x=%matmul_0/recompute:S(0)) @0\n"
            "%softmax_1_grad/softmax_grad_20: f32[4, 8] S(0) = softmax_grad(dy=%relu_2_grad/relu_grad_19:S(0), "
            "y=%softmax_1/recompute:S(0)) @0\n");
  const proto::RecomputeBlockDef& block1 = plan->job().recompute_blocks(1);
  // relu_5, the block's output, is read by matmul_6 (forward, outside the block): kept
  // (as the next block's input would be); matmul_3 and softmax_4 are re-run from the
  // block's input relu_2 (block0's output, counted there).
  EXPECT_EQ(block1.activation_bytes_without(), 256);
  EXPECT_EQ(block1.activation_bytes_kept(), 128);
  EXPECT_EQ(block1.recomputed_ops(), 2);
  EXPECT_EQ(block1.recompute_flops(), 2 * 4 * 8 * 8 + 32);
}

}  // namespace
}  // namespace oneflow
