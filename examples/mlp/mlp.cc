// mlp: compiles a multi-layer perceptron classifier for a cluster layout.
//
//   mlp --devices_per_node=4 --dp=2 --tp=2 --plan_out=/tmp/mlp.plan
//   oneflow inspect /tmp/mlp.plan
//
// --dp=1 --tp=1 on one device is the single-device reference.
#include "absl/flags/flag.h"
#include "examples/common/example_main.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, batch, 64, "Samples per iteration (the logical batch).");
ABSL_FLAG(int64_t, in_features, 64, "Input features.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, classes, 10, "Classes.");
ABSL_FLAG(int64_t, layers, 4, "Linear layers.");
ABSL_FLAG(std::string, optimizer, "sgd", "sgd (momentum 0.9) or adamw.");
ABSL_FLAG(double, lr, 0.1, "Learning rate.");
ABSL_FLAG(std::string, record_file, "",
          "f32 records of in_features values then the label, one per sample; empty: synthetic data.");

namespace oneflow::examples {
namespace {

absl::Status Main() {
  MlpConfig config;
  config.batch = absl::GetFlag(FLAGS_batch);
  config.in_features = absl::GetFlag(FLAGS_in_features);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.classes = absl::GetFlag(FLAGS_classes);
  config.layers = absl::GetFlag(FLAGS_layers);
  config.optimizer = absl::GetFlag(FLAGS_optimizer);
  config.learning_rate = absl::GetFlag(FLAGS_lr);
  config.record_file = absl::GetFlag(FLAGS_record_file);
  const JobBuilder build = [&config](const ParallelLayout& layout) { return BuildMlp(config, layout); };
  if (AutoParallelRequested()) return CompileAndReportAuto(build);
  OF_ASSIGN_OR_RETURN(ParallelLayout layout, LayoutFromFlags());
  OF_ASSIGN_OR_RETURN(proto::Job job, BuildMlp(config, layout));
  return CompileAndReport(job, layout, build);
}

}  // namespace
}  // namespace oneflow::examples

int main(int argc, char** argv) {
  oneflow::examples::ParseExampleFlags(argc, argv, "Compiles an MLP classifier to a per-device plan.");
  return oneflow::examples::RunExample("mlp", &oneflow::examples::Main);
}
