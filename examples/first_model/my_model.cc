// my_model: a model of one's own, built outside the oneflow repository against its SDK
// (docs/first_model.md). A layer norm, a column-parallel and a row-parallel linear with
// GELU between them (Megatron's MLP block), a classifier, AdamW. The layout flags
// (--nodes --devices_per_node --dp --tp --pp --micro_batches --zero ...) come from the SDK's
// driver, //examples/common:example_main.
//
//   bazel run -c opt //:my_model -- --devices_per_node=4 --dp=2 --tp=2 --run --iters=5
#include "absl/flags/flag.h"
#include "examples/common/example_main.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, batch, 32, "Samples per iteration.");
ABSL_FLAG(int64_t, hidden, 64, "Width of the model.");
ABSL_FLAG(double, lr, 0.01, "AdamW learning rate.");

namespace {

using namespace oneflow;
using oneflow::examples::ParallelLayout;

absl::StatusOr<proto::Job> BuildMyModel(const ParallelLayout& layout) {
  const int64_t hidden = absl::GetFlag(FLAGS_hidden);
  const int64_t classes = 10;
  Graph graph("my_model");
  graph.SetDefaultPlacement(layout.placement());
  graph.SetBatchSize(absl::GetFlag(FLAGS_batch));
  graph.SetMicroBatches(layout.micro_batches());
  OF_ASSIGN_OR_RETURN(const int64_t rows, layout.MicroBatchRows(absl::GetFlag(FLAGS_batch)));
  graph.AddDataSource("data", DataSource::SyntheticClassification(/*seed=*/1, classes));
  // Rows split over the data-parallel axis, whole on every tensor-parallel device.
  const NdSbp data = layout.Sbp(Sbp::Split(0), Sbp::Broadcast());
  Tensor x = graph.Input("x", Shape{rows, hidden}, DType::kF32, "data").WithSbp(data);
  Tensor labels = graph.Input("labels", Shape{rows}, DType::kI32, "data").WithSbp(data);

  const NdSbp replicated = layout.Sbp(Sbp::Broadcast(), Sbp::Broadcast());
  Tensor gamma = graph.Variable("norm/gamma", Shape{hidden}, Initializer::Ones()).WithSbp(replicated);
  Tensor beta = graph.Variable("norm/beta", Shape{hidden}, Initializer::Zeros()).WithSbp(replicated);
  Tensor h = LayerNorm(x, gamma, beta);
  // Column-parallel: each tensor-parallel device holds a slice of the output features.
  Tensor w1 = graph.Variable("fc1/weight", Shape{hidden, 4 * hidden}, Initializer::Xavier(2))
                  .WithSbp(layout.Sbp(Sbp::Broadcast(), Sbp::Split(1)));
  Tensor b1 = graph.Variable("fc1/bias", Shape{4 * hidden}, Initializer::Zeros())
                  .WithSbp(layout.Sbp(Sbp::Broadcast(), Sbp::Split(0)));
  h = Gelu(BiasAdd(MatMul(h, w1), b1));
  // Row-parallel: the matching slice of the input features; the partial sums meet once.
  Tensor w2 = graph.Variable("fc2/weight", Shape{4 * hidden, hidden}, Initializer::Xavier(3))
                  .WithSbp(layout.Sbp(Sbp::Broadcast(), Sbp::Split(0)));
  h = Add(MatMul(h, w2), x);
  Tensor w3 = graph.Variable("head/weight", Shape{hidden, classes}, Initializer::Xavier(4))
                  .WithSbp(replicated);
  graph.SetLoss(ReduceMean(SparseSoftmaxCrossEntropy(MatMul(h, w3), labels)));
  graph.SetOptimizer(Optimizer::AdamW(absl::GetFlag(FLAGS_lr)).WithZero(layout.zero(), layout.dp_axis()));
  return graph.Build();
}

absl::Status Main() {
  OF_ASSIGN_OR_RETURN(const ParallelLayout layout, oneflow::examples::LayoutFromFlags());
  OF_ASSIGN_OR_RETURN(const proto::Job job, BuildMyModel(layout));
  return oneflow::examples::CompileAndReport(job, layout);
}

}  // namespace

int main(int argc, char** argv) {
  oneflow::examples::ParseExampleFlags(argc, argv, "my_model: compiles (and with --run trains) a model of one's own.");
  return oneflow::examples::RunExample("my_model", &Main);
}
