#include "bench/train/bench_models.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"

namespace oneflow::bench {

absl::StatusOr<BenchModel> CompileBenchModel(const std::string& model, int64_t nodes, int64_t devices_per_node) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.dp = nodes * devices_per_node;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  BenchModel result;
  if (model == "mlp") {
    examples::MlpConfig mlp;
    mlp.batch = 256;
    mlp.in_features = 256;
    mlp.hidden = 1024;
    mlp.layers = 4;
    result.config = absl::StrCat("4 linear layers 256-1024-1024-1024-10, relu, batch ", mlp.batch, ", sgd momentum");
    OF_ASSIGN_OR_RETURN(result.job, examples::BuildMlp(mlp, layout));
  } else if (model == "gpt") {
    examples::GptConfig gpt;
    gpt.batch = 8;
    gpt.seq = 64;
    gpt.layers = 2;
    gpt.hidden = 128;
    gpt.heads = 4;
    gpt.vocab = 512;
    result.config = "gpt 2 layers, hidden 128, 4 heads, seq 64, vocab 512, batch 8, adamw";
    OF_ASSIGN_OR_RETURN(result.job, examples::BuildGpt(gpt, layout));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("no benchmark model '", model, "'; valid: mlp, gpt"));
  }
  CompileOptions options;
  options.cluster = layout.cluster();
  OF_ASSIGN_OR_RETURN(result.plan, Compile(result.job, options));
  return result;
}

double MedianStepMs(const std::vector<double>& step_ms, size_t warmup) {
  if (step_ms.size() <= warmup) return 0;
  std::vector<double> steps(step_ms.begin() + warmup, step_ms.end());
  std::sort(steps.begin(), steps.end());
  return steps[steps.size() / 2];
}

}  // namespace oneflow::bench
