// AddBackward's structure: which ops it visits, how it sums contributions and names
// the backward ops, what it returns for tensors the loss does not depend on, and its
// errors.
#include "oneflow_core/dsl/gradients/backward.h"

#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"

namespace oneflow {
namespace {

// "name = type(input, ...)" for the ops from `first` on.
std::vector<std::string> OpLines(const Graph& graph, size_t first) {
  std::vector<std::string> lines;
  for (size_t i = first; i < graph.ops().size(); ++i) {
    const Graph::OpRecord& op = graph.ops()[i];
    std::string line = op.name + " = " + op.type + "(";
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      line += (k ? ", " : "") + graph.tensor(op.inputs[k].second).name;
    }
    lines.push_back(line + ")");
  }
  return lines;
}

TEST(BackwardTest, SumsTheContributionsOfATensorFeedingTwoOps) {
  Graph graph("two_uses");
  Tensor x = graph.Variable("x", Shape{3}, Initializer::Zeros());
  Tensor doubled = ScalarMul(x, 2.0);
  Tensor rectified = Relu(x);
  Tensor loss = ReduceSum(Add(doubled, rectified));
  const size_t forward = graph.ops().size();
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(OpLines(graph, forward),
            (std::vector<std::string>{
                "reduce_sum_3_grad/ones_like_4 = ones_like(reduce_sum_3)",
                "reduce_sum_3_grad/broadcast_like_5 = broadcast_like("
                "reduce_sum_3_grad/ones_like_4, add_2)",
                "relu_1_grad/relu_grad_6 = relu_grad(reduce_sum_3_grad/broadcast_like_5, relu_1)",
                "scalar_mul_0_grad/scalar_mul_7 = scalar_mul(reduce_sum_3_grad/broadcast_like_5)",
                "x_grad/add_8 = add(relu_1_grad/relu_grad_6, scalar_mul_0_grad/scalar_mul_7)",
            }));
  EXPECT_EQ((*grads)[0].name(), "x_grad/add_8");
  absl::StatusOr<TensorValues> values =
      EvaluateGraph(graph, {{"x", Dense{Shape{3}, {-1.0, 0.5, 2.0}}}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("x_grad/add_8").values, (std::vector<double>{2, 3, 3}));
}

TEST(BackwardTest, OneOpReadingATensorTwice) {
  Graph graph("square");
  Tensor x = graph.Variable("x", Shape{2}, Initializer::Zeros());
  Tensor loss = ReduceSum(Mul(x, x));
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  absl::StatusOr<TensorValues> values = EvaluateGraph(graph, {{"x", Dense{Shape{2}, {3.0, -1.0}}}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at((*grads)[0].name()).values, (std::vector<double>{6, -2}));
}

TEST(BackwardTest, UnreachableTensorsGetNoGradientAndNoOps) {
  Graph graph("partial");
  Tensor x = graph.Input("x", Shape{2, 3}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{3, 2}, Initializer::Zeros());
  Tensor unused = graph.Variable("unused", Shape{3}, Initializer::Zeros());
  Tensor side = Relu(unused);  // Depends on a variable but not on the path to the loss.
  Tensor loss = ReduceMean(MatMul(x, w));
  const size_t forward = graph.ops().size();
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {w, unused, side});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_TRUE((*grads)[0].valid());
  EXPECT_EQ((*grads)[0].type(), w.type());
  EXPECT_FALSE((*grads)[1].valid());
  EXPECT_FALSE((*grads)[2].valid());
  for (const std::string& line : OpLines(graph, forward)) {
    EXPECT_EQ(line.find("relu"), std::string::npos) << line;
  }
}

TEST(BackwardTest, IntegerPathsCarryNoGradient) {
  Graph graph("tokens");
  Tensor ids = graph.Input("ids", Shape{4}, DType::kI32, "data");
  Tensor labels = graph.Input("labels", Shape{4}, DType::kI32, "data");
  Tensor table = graph.Variable("table", Shape{6, 5}, Initializer::Zeros());
  Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(Embedding(table, ids), labels));
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {table});
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ((*grads)[0].type(), table.type());
}

TEST(BackwardTest, MissingGradientNamesTheOpAndThePath) {
  Graph graph("no_grad");
  Tensor dy = graph.Variable("dy", Shape{3}, Initializer::Zeros());
  Tensor y = graph.Input("y", Shape{3}, DType::kF32, "data");
  const int line = __LINE__ + 1;
  Tensor masked = ReluGrad(dy, y);
  Tensor loss = ReduceSum(ScalarMul(masked, 2.0));
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {dy});
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(grads.status().message(),
            "op 'relu_grad_0' (relu_grad) at backward_test.cc:" + std::to_string(line) +
                " has no gradient; the loss 'reduce_sum_2' depends on it through relu_grad_0 -> "
                "scalar_mul_1 -> reduce_sum_2. Differentiable ops are listed in "
                "oneflow_core/dsl/gradients/gradient_registry.cc (optimizer updates and backward "
                "ops are not)");
}

TEST(BackwardTest, RejectsIntegerAndForeignTensors) {
  Graph graph("bad");
  Tensor ids = graph.Input("ids", Shape{3}, DType::kI32, "data");
  Tensor x = graph.Variable("x", Shape{3}, Initializer::Zeros());
  Tensor loss = ReduceSum(x);
  EXPECT_EQ(AddBackward(graph, loss, {ids}).status().message(),
            "AddBackward: the wrt tensor 'ids' is i32[3]; gradients exist only for floating "
            "tensors");
  Graph other("other");
  Tensor foreign = other.Variable("x", Shape{3}, Initializer::Zeros());
  EXPECT_EQ(AddBackward(graph, loss, {foreign}).status().message(),
            "AddBackward: the wrt tensor is not a tensor of graph 'bad'");
}

TEST(BackwardTest, GradientOfAnIntermediateTensor) {
  Graph graph("intermediate");
  Tensor x = graph.Variable("x", Shape{2}, Initializer::Zeros());
  Tensor h = ScalarMul(x, 3.0);
  Tensor loss = ReduceSum(Mul(h, h));
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, {h, x});
  ASSERT_TRUE(grads.ok()) << grads.status();
  absl::StatusOr<TensorValues> values = EvaluateGraph(graph, {{"x", Dense{Shape{2}, {1.0, 2.0}}}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at((*grads)[0].name()).values, (std::vector<double>{6, 12}));   // 2h
  EXPECT_EQ(values->at((*grads)[1].name()).values, (std::vector<double>{18, 36}));  // 18x
}

}  // namespace
}  // namespace oneflow
