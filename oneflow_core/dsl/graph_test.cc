#include "oneflow_core/dsl/graph.h"

#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace {

TEST(GraphTest, BuildsAnMlpAndPrintsIt) {
  Graph graph("mlp");
  Tensor x = graph.Input("x", Shape{8, 4}, DType::kF32, "data");
  x.WithSbp("S(0)");
  Tensor labels = graph.Input("labels", Shape{8}, DType::kI32, "data");
  Tensor w = graph.Variable("w", Shape{4, 3}, Initializer::Xavier(7));
  Tensor b = graph.Variable("b", Shape{3}, Initializer::Zeros());
  Tensor logits = BiasAdd(MatMul(x, w), b);
  Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(Relu(logits), labels));
  graph.SetLoss(loss);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  EXPECT_EQ(graph.ToText(),
            "graph mlp\n"
            "%x = input f32[8, 4] source=data sbp=S(0)\n"
            "%labels = input i32[8] source=data\n"
            "%w = variable f32[4, 3] init=xavier_uniform seed=7\n"
            "%b = variable f32[3] init=zeros\n"
            "%matmul_0 = matmul(a=%x, b=%w) f32[8, 3]\n"
            "%bias_add_1 = bias_add(x=%matmul_0, bias=%b) f32[8, 3]\n"
            "%relu_2 = relu(x=%bias_add_1) f32[8, 3]\n"
            "%sparse_softmax_cross_entropy_3 = sparse_softmax_cross_entropy(logits=%relu_2, "
            "labels=%labels) f32[8]\n"
            "%reduce_mean_4 = reduce_mean(x=%sparse_softmax_cross_entropy_3, axes=[], "
            "keep_dims=false) f32[]\n"
            "loss %reduce_mean_4\n");

  absl::StatusOr<proto::Job> job = graph.Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name(), "mlp");
  EXPECT_EQ(job->loss(), "reduce_mean_4");
  ASSERT_EQ(job->ops_size(), 5);
  EXPECT_EQ(job->ops(0).type(), "matmul");
  EXPECT_EQ(job->ops(0).inputs().at("a"), "x");
  EXPECT_EQ(job->ops(0).location().file(), "graph_test.cc");
  EXPECT_EQ(job->tensors(0).sbp_hint().sbp(0).split().axis(), 0);
  EXPECT_FALSE(job->tensors(1).has_sbp_hint());
  EXPECT_EQ(job->variables(0).initializer().seed(), 7u);
}

TEST(GraphTest, ShapeErrorNamesOpLineShapesAndWhatIsValid) {
  Graph graph("bad");
  Tensor x = graph.Input("x", Shape{64, 32}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{16, 10}, Initializer::Zeros());
  const int line = __LINE__ + 1;
  Tensor y = MatMul(x, w);
  EXPECT_FALSE(y.valid());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(graph.status().message(),
            "op 'matmul_0' (matmul) at graph_test.cc:" + std::to_string(line) +
                ": inner dimensions differ: a [64, 32] (transpose_a=false) has k=32, b [16, 10] "
                "(transpose_b=false) has k=16; they must be equal (inputs: x: f32[64, 32], w: "
                "f32[16, 10])");
  // Later calls are no-ops and the first error is what Build reports.
  Tensor z = Relu(y);
  EXPECT_FALSE(z.valid());
  EXPECT_EQ(graph.Build().status(), graph.status());
}

TEST(GraphTest, BadSbpHintAndNonScalarLossAreReported) {
  {
    Graph graph("hint");
    Tensor x = graph.Input("x", Shape{4}, DType::kF32, "data");
    const int line = __LINE__ + 1;
    x.WithSbp("S(zero)");
    EXPECT_EQ(graph.status().message(),
              "sbp hint on tensor 'x' at graph_test.cc:" + std::to_string(line) +
                  ": cannot parse SBP 'S(zero)': the split axis is not an integer; valid: "
                  "S(axis) with axis >= 0, B, P, P(max), P(min)");
  }
  {
    Graph graph("loss");
    Tensor x = graph.Input("x", Shape{4}, DType::kF32, "data");
    const int line = __LINE__ + 1;
    graph.SetLoss(x);
    EXPECT_EQ(graph.status().message(),
              "loss 'x' at graph_test.cc:" + std::to_string(line) +
                  " has type f32[4]; the loss must be a scalar (reduce it, e.g. reduce_mean)");
  }
}

// A compression hint travels into the Job (TensorDef.compression), back out of it (the
// compiler's passes rebuild graphs from jobs) and through the text form.
TEST(GraphTest, CompressionHintsTravelThroughJobsAndText) {
  Graph graph("hinted");
  graph.AddDataSource("data", DataSource::SyntheticClassification(/*seed=*/1, /*num_classes=*/3));
  Tensor x = graph.Input("x", Shape{8, 4}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{4, 3}, Initializer::Zeros());
  w.WithCompression(Compression::kInt8);
  Tensor y = MatMul(x, w).WithCompression(Compression::kNone);
  graph.SetLoss(ReduceMean(y.WithCompression(Compression::kFp8)));
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  absl::StatusOr<proto::Job> job = graph.Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->tensors(0).compression(), proto::TensorDef::COMPRESSION_UNSET);
  EXPECT_EQ(job->tensors(1).compression(), proto::TensorDef::COMPRESSION_INT8);
  EXPECT_EQ(job->tensors(2).compression(), proto::TensorDef::COMPRESSION_FP8);  // The last hint wins.
  EXPECT_EQ(graph.ToText(),
            "graph hinted\n"
            "source data synthetic_classification seed=1 num_classes=3\n"
            "%x = input f32[8, 4] source=data\n"
            "%w = variable f32[4, 3] init=zeros compression=int8\n"
            "%matmul_0 = matmul(a=%x, b=%w) f32[8, 3] compression=fp8\n"
            "%reduce_mean_1 = reduce_mean(x=%matmul_0, axes=[], keep_dims=false) f32[]\n"
            "loss %reduce_mean_1\n");
  absl::StatusOr<std::unique_ptr<Graph>> rebuilt = Graph::FromJob(*job);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ((*rebuilt)->ToText(), graph.ToText());

  proto::Job damaged = *job;
  damaged.mutable_tensors(1)->set_compression(static_cast<proto::TensorDef::Compression>(9));
  EXPECT_EQ(Graph::FromJob(damaged).status().message(),
            "tensor 'w' has compression hint 9, which this build does not know; valid: none, fp8, int8, int4");
  EXPECT_EQ(ParseCompression("fp9").status().message(),
            "compression 'fp9' is not one of: none, fp8, int8, int4");
}

TEST(GraphTest, DuplicateNamesAndUnknownOpsAreReported) {
  Graph graph("dup");
  graph.Input("x", Shape{4}, DType::kF32, "data");
  graph.Variable("x", Shape{4}, Initializer::Zeros());
  EXPECT_NE(graph.status().message().find("tensor name 'x'"), std::string::npos);
  EXPECT_NE(graph.status().message().find("is already used in graph 'dup'"), std::string::npos);

  Graph other("unknown");
  Tensor x = other.Input("x", Shape{4}, DType::kF32, "data");
  other.AddSingleOutputOp("conv7d", {x}, {}, SourceLocation{"model.cc", 3});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(other.status().message().substr(0, 60),
            "op 'conv7d_0' (conv7d) at model.cc:3: unknown op type 'conv7");
}

TEST(GraphTest, TensorsOfAnotherGraphAreRejected) {
  Graph first("first");
  Graph second("second");
  Tensor a = first.Input("a", Shape{2, 2}, DType::kF32, "data");
  Tensor b = second.Input("b", Shape{2, 2}, DType::kF32, "data");
  Tensor c = Add(a, b);
  EXPECT_FALSE(c.valid());
  EXPECT_NE(first.status().message().find("input 'y' is not a tensor of graph 'first'"),
            std::string::npos);
}

}  // namespace
}  // namespace oneflow
