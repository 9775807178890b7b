#include "examples/mlp/mlp_model.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {

absl::StatusOr<proto::Job> BuildMlp(const MlpConfig& config, const ParallelLayout& layout) {
  if (config.layers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--layers=", config.layers, " must be >= 1"));
  }
  if (config.optimizer != "sgd" && config.optimizer != "adamw") {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizer=", config.optimizer, " is not one of sgd, adamw"));
  }
  OF_RETURN_IF_ERROR(layout.CheckStages(config.layers, "layers"));
  // The graph is one micro-batch's (all of the batch without micro-batches).
  OF_ASSIGN_OR_RETURN(const int64_t rows, layout.MicroBatchRows(config.batch));
  const Sbp split0 = Sbp::Split(0);
  const Sbp split1 = Sbp::Split(1);
  const Sbp broadcast = Sbp::Broadcast();
  Graph graph("mlp");
  graph.SetDefaultPlacement(layout.placement());
  graph.SetBatchSize(config.batch);
  graph.SetMicroBatches(layout.micro_batches());
  graph.AddDataSource("data", config.record_file.empty()
                                  ? DataSource::SyntheticClassification(config.seed, config.classes)
                                  : DataSource::RecordFile(config.record_file));
  Tensor x = graph.Input("x", Shape{rows, config.in_features}, DType::kF32, "data");
  x.WithSbp(layout.Sbp(split0, broadcast));
  Tensor labels = graph.Input("labels", Shape{rows}, DType::kI32, "data");
  labels.WithSbp(layout.Sbp(split0, broadcast));
  Tensor h = x;
  int64_t stage = 0;  // Pipeline stage of layer i: ParallelLayout::StageOf.
  for (int64_t i = 0; i < config.layers; ++i) {
    if (layout.StageOf(i, config.layers) != stage) {
      stage = layout.StageOf(i, config.layers);
      h = To(h, layout.StagePlacement(stage), layout.Sbp(split0, broadcast));
    }
    const int64_t in = i == 0 ? config.in_features : config.hidden;
    const int64_t out = i + 1 == config.layers ? config.classes : config.hidden;
    // The last layer stays replicated over tp when it would be an unpaired column layer.
    const bool last_unpaired = i + 1 == config.layers && i % 2 == 0;
    const bool column = i % 2 == 0 && !last_unpaired;
    const bool row = i % 2 == 1;
    Tensor w = graph.Variable(absl::StrCat("layer", i, "/weight"), Shape{in, out},
                              Initializer::Xavier(config.seed * 1000 + 2 * i));
    w.WithSbp(layout.Sbp(broadcast, column ? split1 : row ? split0 : broadcast));
    if (layout.pp() > 1) w.WithPlacement(layout.StagePlacement(stage));
    Tensor b = graph.Variable(absl::StrCat("layer", i, "/bias"), Shape{out}, Initializer::Zeros());
    b.WithSbp(layout.Sbp(broadcast, column ? split0 : broadcast));
    if (layout.pp() > 1) b.WithPlacement(layout.StagePlacement(stage));
    h = BiasAdd(MatMul(h, w), b);
    if (i + 1 < config.layers) h = Relu(h);
  }
  Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(h, labels));
  graph.SetLoss(loss);
  Optimizer optimizer = config.optimizer == "sgd" ? Optimizer::Sgd(config.learning_rate, 0.9)
                                                  : Optimizer::AdamW(config.learning_rate);
  graph.SetOptimizer(optimizer.WithZero(layout.zero(), layout.dp_axis()));
  return graph.Build();
}

}  // namespace oneflow::examples
