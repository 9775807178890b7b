// Round trips: a graph built with the DSL prints as text, the text parses back, and the
// parsed graph prints the same text and builds the same Job. Error paths are in
// graph_text_errors_test.cc.
#include "oneflow_core/dsl/text/graph_text.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/dsl/text/round_trip_testing.h"

namespace oneflow {
namespace {

using graph_text::ExpectRoundTrip;
using graph_text::MustParse;

Placement MustPlacement(const std::string& text) {
  absl::StatusOr<Placement> placement = Placement::Parse(text);
  EXPECT_TRUE(placement.ok()) << placement.status();
  return *placement;
}

// The model of testdata/mlp.graph, written with the DSL.
std::unique_ptr<Graph> BuildMlp() {
  auto graph = std::make_unique<Graph>("mlp");
  graph->SetBatchSize(8);
  graph->SetDefaultPlacement(MustPlacement("cpu{0:0-1, 1:0-1}[2, 2]"));
  graph->AddDataSource("data", DataSource::SyntheticClassification(/*seed=*/1, /*num_classes=*/3));
  Tensor x = graph->Input("x", Shape{8, 4}, DType::kF32, "data");
  x.WithSbp("[S(0), B]");
  Tensor labels = graph->Input("labels", Shape{8}, DType::kI32, "data");
  labels.WithSbp("[S(0), B]");
  Tensor w1 = graph->Variable("w1", Shape{4, 16}, Initializer::Normal(0, 0.02, 3));
  w1.WithSbp("[B, S(1)]");
  Tensor b1 = graph->Variable("b1", Shape{16}, Initializer::Zeros());
  b1.WithSbp("[B, S(0)]");
  Tensor h = Dropout(Relu(BiasAdd(MatMul(x, w1), b1)), /*rate=*/0.1, /*seed=*/5);
  Tensor w2 = graph->Variable("w2", Shape{16, 3}, Initializer::Uniform(-0.25, 0.25, 4));
  w2.WithSbp("[B, S(0)]");
  Tensor temperature = graph->Variable("temperature", Shape{}, Initializer::Ones(), DType::kF32,
                                       /*trainable=*/false);
  Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(Mul(MatMul(h, w2), temperature), labels));
  loss.WithSbp("B").WithPlacement(MustPlacement("cpu{0:0}"));
  graph->SetLoss(loss);
  graph->SetOptimizer(Optimizer::Sgd(0.1, 0.9).WithWarmupCosine(100, 1000, 1e-5));
  return graph;
}

std::string ReadTestdata(const std::string& name) {
  std::ifstream file("oneflow_core/dsl/text/testdata/" + name);
  EXPECT_TRUE(file.good()) << "cannot open testdata/" << name;
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// The lines of `text` that are neither blank nor comments.
std::string WithoutComments(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST(GraphTextTest, MlpPrintsAsTheTestdataFileAndRoundTrips) {
  std::unique_ptr<Graph> mlp = BuildMlp();
  const std::string file = ReadTestdata("mlp.graph");
  EXPECT_EQ(mlp->ToText(), WithoutComments(file));
  ExpectRoundTrip(*mlp);

  // The file itself, comments and all, parses to the same Job.
  std::unique_ptr<Graph> parsed = MustParse(file);
  EXPECT_EQ(parsed->ToText(), mlp->ToText());
  absl::StatusOr<proto::Job> job = parsed->Build();
  ASSERT_TRUE(job.ok()) << job.status();
  // Source locations name the line of the text: %matmul_0 is on line 16.
  EXPECT_EQ(job->ops(0).name(), "matmul_0");
  EXPECT_EQ(job->ops(0).location().file(), "<text>");
  EXPECT_EQ(job->ops(0).location().line(), 16);
  EXPECT_EQ(job->ops(4).location().line(), 24);

  // With locations, each line says where the C++ made it (BuildMlp's Input of x is on
  // line 36 of this file), and the text parses to the C++ graph's locations.
  const std::string located = mlp->ToText(Graph::Locations::kPrint);
  EXPECT_NE(located.find("\n%x = input f32[8, 4] source=data sbp=[S(0), B] loc=\"graph_text_test.cc:36\"\n"),
            std::string::npos)
      << located;
  absl::StatusOr<proto::Job> located_job = MustParse(located)->Build();
  ASSERT_TRUE(located_job.ok()) << located_job.status();
  EXPECT_EQ(located_job->ops(0).location().file(), "graph_text_test.cc");
  EXPECT_EQ(located_job->ops(0).location().line(), 44);
}

TEST(GraphTextTest, AdamWTokenSourcesAndFilePathsRoundTrip) {
  Graph graph("lm");
  graph.AddDataSource("tokens", DataSource::SyntheticTokens(/*seed=*/2, /*vocab=*/50));
  // Quotes, backslashes and a newline in a path survive the C escaping of the text.
  graph.AddDataSource("file", DataSource::TokenFile("data/a \"b\"\\c\n.bin"));
  graph.AddDataSource("records", DataSource::RecordFile("records.f32"));
  Tensor ids = graph.Input("ids", Shape{4, 6}, DType::kI32, "tokens");
  Tensor table = graph.Variable("embedding/table", Shape{50, 8},
                                Initializer::Xavier(std::numeric_limits<uint64_t>::max()));
  Tensor gamma = graph.Variable("ln.gamma", Shape{8}, Initializer::Ones(), DType::kF32);
  Tensor beta = graph.Variable("ln.beta", Shape{8}, Initializer::Zeros(), DType::kF32);
  Tensor h = LayerNorm(Embedding(table, ids), gamma, beta, /*epsilon=*/1e-5);
  Tensor loss = ReduceSum(Transpose(h, {2, 0, 1}), {0, 1, 2}, /*keep_dims=*/false);
  graph.SetLoss(loss);
  graph.SetOptimizer(Optimizer::AdamW(3e-4, 0.9, 0.95, 1e-8, 0.1));
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  EXPECT_EQ(graph.ToText(),
            "graph lm\n"
            "source tokens synthetic_tokens seed=2 vocab=50\n"
            "source file token_file path=\"data/a \\\"b\\\"\\\\c\\n.bin\"\n"
            "source records record_file path=\"records.f32\"\n"
            "%ids = input i32[4, 6] source=tokens\n"
            "%embedding/table = variable f32[50, 8] init=xavier_uniform "
            "seed=18446744073709551615\n"
            "%ln.gamma = variable f32[8] init=ones\n"
            "%ln.beta = variable f32[8] init=zeros\n"
            "%embedding_0 = embedding(table=%embedding/table, ids=%ids) f32[4, 6, 8]\n"
            "%layer_norm_1 = layer_norm(x=%embedding_0, gamma=%ln.gamma, beta=%ln.beta, "
            "epsilon=1e-05) f32[4, 6, 8]\n"
            "%transpose_2 = transpose(x=%layer_norm_1, perm=[2, 0, 1]) f32[8, 4, 6]\n"
            "%reduce_sum_3 = reduce_sum(x=%transpose_2, axes=[0, 1, 2], keep_dims=false) f32[]\n"
            "optimizer adamw lr=3e-04 beta1=0.9 beta2=0.95 epsilon=1e-08 weight_decay=0.1\n"
            "loss %reduce_sum_3\n");
  ExpectRoundTrip(graph);
}

// AdamW's frozen variance (Optimizer::WithFrozenVariance) prints after the
// hyperparameters and reads back, so a plan's recipe keeps it.
TEST(GraphTextTest, AdamWFrozenVarianceRoundTrips) {
  Graph graph("frozen");
  Tensor w = graph.Variable("w", Shape{3}, Initializer::Ones());
  graph.SetLoss(ReduceSum(w, {0}, /*keep_dims=*/false));
  graph.SetOptimizer(Optimizer::AdamW(1e-3).WithFrozenVariance(20).WithZero(1, 0));
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  EXPECT_EQ(graph.ToText(),
            "graph frozen\n"
            "%w = variable f32[3] init=ones\n"
            "%reduce_sum_0 = reduce_sum(x=%w, axes=[0], keep_dims=false) f32[]\n"
            "optimizer adamw lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-08 weight_decay=0.01 "
            "variance_frozen_from=20 zero=1 zero_axis=0\n"
            "loss %reduce_sum_0\n");
  ExpectRoundTrip(graph);
  std::unique_ptr<Graph> read = MustParse(graph.ToText());
  absl::StatusOr<proto::Job> job = read->Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->optimizer().adamw().variance_frozen_from(), 20);
}

// Graph::BlockScope, AttentionCoreScope and Tensor::WithRecompute print on the op lines
// (block=, block_recompute=, attention_core=, recompute=) and read back.
TEST(GraphTextTest, RecomputeScopesRoundTrip) {
  Graph graph("blocks");
  Tensor x = graph.Variable("x", Shape{2, 4}, Initializer::Ones());
  {
    Graph::BlockScope block(graph, "block0", proto::RECOMPUTE_FULL);
    Tensor h = Relu(x);
    {
      Graph::AttentionCoreScope core(graph);
      h = Softmax(h);
    }
    Relu(h).WithRecompute(false);
  }
  const std::string text = graph.ToText();
  EXPECT_NE(text.find("%relu_0 = relu(x=%x) f32[2, 4] block=block0 block_recompute=full\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("%softmax_1 = softmax(x=%relu_0) f32[2, 4] block=block0 block_recompute=full "
                      "attention_core=true\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%relu_2 = relu(x=%softmax_1) f32[2, 4] recompute=false block=block0 block_recompute=full\n"),
            std::string::npos)
      << text;
  ExpectRoundTrip(graph);
}

// Tensor::WithSparseRows prints as sparse_rows=%ids on the variable's line, the ids
// defined later, and reads back.
TEST(GraphTextTest, SparseRowsRoundTrip) {
  Graph graph("table");
  graph.AddDataSource("data", DataSource::SyntheticTokens(1, 16));
  Tensor table = graph.Variable("table", Shape{16, 4}, Initializer::Zeros());
  Tensor tokens = graph.Input("tokens", Shape{2, 3}, DType::kI32, "data");
  table.WithSparseRows(tokens);
  Embedding(table, tokens);
  EXPECT_NE(graph.ToText().find("sparse_rows=%tokens"), std::string::npos) << graph.ToText();
  ExpectRoundTrip(graph);
}

TEST(GraphTextTest, FloatAttributesReadBackBitForBit) {
  const double values[] = {1.0 / 3,  0.1,    -0.0,  2.0, 1e21, 1e-300, 5e-324,
                           -1.5e308, 123456789.0, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  Graph graph("floats");
  Tensor x = graph.Input("x", Shape{2}, DType::kF32, "data");
  for (double value : values) x = ScalarMul(x, value);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  const std::string text = graph.ToText();
  EXPECT_NE(text.find("scalar=0.3333333333333333)"), std::string::npos) << text;
  EXPECT_NE(text.find("scalar=-0.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("scalar=2.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("scalar=1e+21)"), std::string::npos) << text;
  EXPECT_NE(text.find("scalar=5e-324)"), std::string::npos) << text;
  EXPECT_NE(text.find("scalar=-inf)"), std::string::npos) << text;
  std::unique_ptr<Graph> parsed = MustParse(text);
  ASSERT_EQ(parsed->ops().size(), std::size(values));
  for (size_t i = 0; i < std::size(values); ++i) {
    const double* got = std::get_if<double>(&parsed->ops()[i].attrs.at("scalar"));
    ASSERT_NE(got, nullptr) << "op " << i << " lost its float type";
    EXPECT_EQ(std::memcmp(got, &values[i], sizeof(double)), 0)
        << "op " << i << ": wrote " << values[i] << ", read " << *got;
  }
  ExpectRoundTrip(graph);
}

TEST(GraphTextTest, StringAttributesAreEscaped) {
  // No registered op takes a string yet; inference ignores attributes it does not read,
  // so an extra one on relu carries the string through the printer and the parser.
  Graph graph("strings");
  Tensor x = graph.Input("x", Shape{2}, DType::kF32, "data");
  graph.AddSingleOutputOp("relu", {x}, {{"note", std::string("say \"hi\"\n\\ ok")}}, SourceLocation{"t.cc", 1},
               "y");
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  EXPECT_EQ(graph.ToText(),
            "graph strings\n"
            "%x = input f32[2] source=data\n"
            "%y = relu(x=%x, note=\"say \\\"hi\\\"\\n\\\\ ok\") f32[2]\n");
  ExpectRoundTrip(graph);
}

TEST(GraphTextTest, HandWrittenTextIsReadLeniently) {
  // Spacing, argument order, CRLF line ends, indented comments and an int list without
  // spaces are all accepted; the printed form is canonical.
  std::unique_ptr<Graph> graph = MustParse(
      "# leading comment\r\n"
      "graph  hand written \r\n"
      "\r\n"
      "   # indented comment\n"
      "%x=input f32[2,3]   source = data   sbp=S(1)\n"
      "%w = variable   f32[3, 2] seed=9 init=xavier_uniform\n"
      "%y = matmul( b = %w , a = %x, transpose_b=false )  f32[2,2]\n"
      "%t = transpose(x=%y, perm=[1,0]) f32[2, 2]\n"
      "optimizer adamw lr=1\n");
  EXPECT_EQ(graph->ToText(),
            "graph hand written\n"
            "%x = input f32[2, 3] source=data sbp=S(1)\n"
            "%w = variable f32[3, 2] init=xavier_uniform seed=9\n"
            "%y = matmul(a=%x, b=%w, transpose_b=false) f32[2, 2]\n"
            "%t = transpose(x=%y, perm=[1, 0]) f32[2, 2]\n"
            "optimizer adamw lr=1.0 beta1=0.9 beta2=0.999 epsilon=1e-08 weight_decay=0.01\n");
  // The omitted AdamW hyperparameters are Optimizer::AdamW's defaults.
  absl::StatusOr<proto::Job> job = graph->Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->optimizer().adamw().beta2(), 0.999);
  EXPECT_EQ(job->optimizer().schedule().base_lr(), 1.0);
  EXPECT_EQ(job->ops(0).location().line(), 7);
}

TEST(GraphTextTest, GraphWithoutSettingsPrintsOnlyItsLines) {
  Graph graph("bare");
  Tensor x = graph.Input("x", Shape{}, DType::kF32, "anything");
  Relu(x);
  EXPECT_EQ(graph.ToText(),
            "graph bare\n"
            "%x = input f32[] source=anything\n"
            "%relu_0 = relu(x=%x) f32[]\n");
  // Without any 'source' line, inputs may name sources freely, as Graph::Build allows.
  ExpectRoundTrip(graph);
}

}  // namespace
}  // namespace oneflow
