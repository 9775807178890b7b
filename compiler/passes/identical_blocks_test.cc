// Which ops belong to which block after autograd and the optimizer, and which blocks are
// copies of one another, on residual MLP blocks written as text.
#include "compiler/passes/identical_blocks.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/compilation.h"
#include "compiler/compiler.h"
#include "compiler/pass_pipeline.h"
#include "compiler/passes/pass_test_util.h"
#include "compiler/standard_pipeline.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// `blocks` Megatron MLP blocks with residual connections (block i: fc, gelu, proj, the
// residual add), a layer norm and a head, on 2 nodes x 2 devices (dp x tp). Block 0 reads
// the input, which needs no gradient, and the last block's output has one reader (its
// gradient is not summed), so blocks 1 .. blocks-2 are the copies.
std::string ResidualMlpText(int blocks) {
  std::string text = R"(graph residual_mlp
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[256, 64] source=data sbp=[S(0), B]
%labels = input i32[256] source=data sbp=[S(0), B]
)";
  for (int b = 0; b < blocks; ++b) {
    absl::StrAppend(&text, "%w_fc", b, " = variable f32[64, 128] init=xavier_uniform seed=", 2 * b + 1,
                    " sbp=[B, S(1)]\n%w_proj", b, " = variable f32[128, 64] init=xavier_uniform seed=", 2 * b + 2,
                    " sbp=[B, S(0)]\n");
  }
  absl::StrAppend(&text,
                  "%gamma = variable f32[64] init=ones sbp=[B, B]\n%beta = variable f32[64] init=zeros sbp=[B, B]\n"
                  "%w_head = variable f32[64, 4] init=xavier_uniform seed=99 sbp=[B, B]\n");
  std::string residual = "x";
  for (int b = 0; b < blocks; ++b) {
    const std::string mark = absl::StrCat(" block=b", b, "\n");
    absl::StrAppend(&text, "%fc", b, " = matmul(a=%", residual, ", b=%w_fc", b, ") f32[256, 128]", mark);
    absl::StrAppend(&text, "%gelu", b, " = gelu(x=%fc", b, ") f32[256, 128]", mark);
    absl::StrAppend(&text, "%proj", b, " = matmul(a=%gelu", b, ", b=%w_proj", b, ") f32[256, 64]", mark);
    absl::StrAppend(&text, "%res", b, " = add(x=%", residual, ", y=%proj", b, ") f32[256, 64]", mark);
    residual = absl::StrCat("res", b);
  }
  absl::StrAppend(&text, "%ln = layer_norm(x=%", residual, ", gamma=%gamma, beta=%beta, epsilon=1e-05) f32[256, 64]\n",
                  R"(%logits = matmul(a=%ln, b=%w_head) f32[256, 4]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[256]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)");
  return text;
}

// The logical graph as sbp_search finds it: the standard pipeline through sbp_choice.
absl::Status GraphAfterSbpChoice(const std::string& text, Compilation* compilation) {
  absl::StatusOr<proto::Job> job = JobFromText(text);
  if (!job.ok()) return job.status();
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  PassPipeline pipeline = StandardPipeline();
  if (absl::Status status = pipeline.StopAfter("sbp_choice"); !status.ok()) return status;
  if (absl::Status status = PrepareCompilation(*job, options, compilation); !status.ok()) return status;
  return pipeline.Run(compilation);
}

std::string BlockOf(const LogicalGraph& graph, const std::vector<std::string>& blocks, const std::string& op_name) {
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    if (graph.ops[o].name == op_name) return blocks[o];
  }
  return "<no op " + op_name + ">";
}

// The first op whose name starts with `prefix` (autograd numbers the ops it adds).
std::string OpStartingWith(const LogicalGraph& graph, const std::string& prefix) {
  for (const LogicalOp& op : graph.ops) {
    if (op.name.rfind(prefix, 0) == 0) return op.name;
  }
  return "<no op " + prefix + "...>";
}

TEST(IdenticalBlocksTest, BackwardOpsAndUpdatesTakeTheBlockOfWhatTheyDifferentiate) {
  Compilation compilation;
  ASSERT_TRUE(GraphAfterSbpChoice(ResidualMlpText(3), &compilation).ok());
  const LogicalGraph& graph = compilation.graph;
  const std::vector<std::string> blocks = OpBlocks(graph);
  EXPECT_EQ(BlockOf(graph, blocks, "fc1"), "b1");
  EXPECT_EQ(BlockOf(graph, blocks, "res2"), "b2");
  EXPECT_EQ(BlockOf(graph, blocks, "ln"), "");
  EXPECT_EQ(BlockOf(graph, blocks, "logits"), "");
  // The gradients of fc1's product, named after the op.
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "fc1_grad/")), "b1");
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "proj0_grad/")), "b0");
  // res1's gradient summed over its two readers in block 2, named after the tensor res1.
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "res1_grad/")), "b1");
  // The layer norm's backward is the epilogue's.
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "ln_grad/")), "");
  // Updates read their variable and its gradient: the block of the gradient's producer.
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "w_fc2_update/")), "b2");
  EXPECT_EQ(BlockOf(graph, blocks, OpStartingWith(graph, "w_head_update/")), "");
}

TEST(IdenticalBlocksTest, TheMiddleBlocksAreOneClassOpByOp) {
  Compilation compilation;
  ASSERT_TRUE(GraphAfterSbpChoice(ResidualMlpText(5), &compilation).ok());
  const LogicalGraph& graph = compilation.graph;
  const std::vector<std::string> blocks = OpBlocks(graph);
  const IdenticalBlockClasses found = FindIdenticalBlocks(graph);
  ASSERT_EQ(found.classes.size(), 1u);
  const std::vector<std::vector<int64_t>>& copies = found.classes[0];
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(blocks[copies[0][0]], "b1");
  EXPECT_EQ(blocks[copies[1][0]], "b2");
  EXPECT_EQ(blocks[copies[2][0]], "b3");
  // Forward (4), backward (a product's two gradients each, gelu's, the residual sum of
  // the block's input gradient) and the two updates; position by position the same op.
  for (const std::vector<int64_t>& block : copies) ASSERT_EQ(block.size(), copies[0].size());
  EXPECT_GE(copies[0].size(), 10u);
  for (size_t i = 0; i < copies[0].size(); ++i) {
    const LogicalOp& first = graph.ops[copies[0][i]];
    for (const std::vector<int64_t>& block : copies) {
      EXPECT_EQ(graph.ops[block[i]].type, first.type) << graph.ops[block[i]].name << " vs " << first.name;
    }
  }
  EXPECT_EQ(graph.ops[copies[2][0]].name, "fc3");
  EXPECT_EQ(graph.ops[copies[2][3]].name, "res3");
}

// A block whose variable has another shape is no copy of the others.
TEST(IdenticalBlocksTest, ABlockOfOtherShapesIsInNoClass) {
  std::string text = ResidualMlpText(5);
  const std::string from = "%w_fc2 = variable f32[64, 128]";
  text.replace(text.find(from), from.size(), "%w_fc2 = variable f32[64, 96]");
  for (const char* line : {"%fc2 = matmul(a=%res1, b=%w_fc2) f32[256, 128]", "%gelu2 = gelu(x=%fc2) f32[256, 128]"}) {
    std::string changed = line;
    changed.replace(changed.rfind("128"), 3, "96");
    text.replace(text.find(line), std::string(line).size(), changed);
  }
  const std::string proj = "%w_proj2 = variable f32[128, 64]";
  text.replace(text.find(proj), proj.size(), "%w_proj2 = variable f32[96, 64]");
  Compilation compilation;
  const absl::Status status = GraphAfterSbpChoice(text, &compilation);
  ASSERT_TRUE(status.ok()) << status;
  const std::vector<std::string> blocks = OpBlocks(compilation.graph);
  const IdenticalBlockClasses found = FindIdenticalBlocks(compilation.graph);
  ASSERT_EQ(found.classes.size(), 1u);
  ASSERT_EQ(found.classes[0].size(), 2u);
  EXPECT_EQ(blocks[found.classes[0][0][0]], "b1");
  EXPECT_EQ(blocks[found.classes[0][1][0]], "b3");
}

// --sbp_search with the copies searched once reaches the layouts of the search over every
// op (the residual stream split by rows over tp in every block: sbp_search_pass_test.cc)
// and records the class. (On this graph the searched block's moves also reach its
// neighbours through their readers' adaptation; tests:sbp_search_test checks on the gpt
// and the llama that the copies need the composition.)
TEST(IdenticalBlocksTest, SearchingTheCopiesOnceGivesTheLayoutsOfSearchingEveryOp) {
  absl::StatusOr<proto::Job> job = JobFromText(ResidualMlpText(5));
  ASSERT_TRUE(job.ok()) << job.status();
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  options.search_sbp = true;
  absl::StatusOr<proto::Plan> once = Compile(*job, options);
  ASSERT_TRUE(once.ok()) << once.status();
  options.search_identical_blocks_once = false;
  absl::StatusOr<proto::Plan> every_op = Compile(*job, options);
  ASSERT_TRUE(every_op.ok()) << every_op.status();
  options.search_sbp = false;
  absl::StatusOr<proto::Plan> greedy = Compile(*job, options);
  ASSERT_TRUE(greedy.ok()) << greedy.status();

  EXPECT_EQ(once->sbp_search().block_classes(), 1);
  EXPECT_EQ(once->sbp_search().composed_blocks(), 2);
  EXPECT_EQ(every_op->sbp_search().block_classes(), 0);
  EXPECT_EQ(every_op->sbp_search().composed_blocks(), 0);
  EXPECT_EQ(once->sbp_search().moved_ops(), every_op->sbp_search().moved_ops());
  EXPECT_DOUBLE_EQ(once->sbp_search().searched_seconds(), every_op->sbp_search().searched_seconds());
  ASSERT_EQ(once->op_sbps_size(), every_op->op_sbps_size());
  ASSERT_EQ(once->op_sbps_size(), greedy->op_sbps_size());
  for (int i = 0; i < once->op_sbps_size(); ++i) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(once->op_sbps(i), every_op->op_sbps(i)))
        << once->op_sbps(i).op_name();
  }
  for (const std::string name : {"res1", "res2", "res3"}) {
    for (int i = 0; i < once->op_sbps_size(); ++i) {
      if (once->op_sbps(i).op_name() != name) continue;
      EXPECT_FALSE(google::protobuf::util::MessageDifferencer::Equals(once->op_sbps(i), greedy->op_sbps(i)))
          << name << " kept the greedy choice";
    }
  }
}

}  // namespace
}  // namespace oneflow
