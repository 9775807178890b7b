#include "tests/mlp_plan.h"

#include "compiler/compiler.h"
#include "oneflow_core/status.h"

namespace oneflow::testing {

examples::MlpConfig SmallMlp() {
  examples::MlpConfig config;
  config.batch = 8;
  config.in_features = 4;
  config.hidden = 8;
  config.classes = 3;
  config.layers = 2;
  return config;
}

examples::ParallelFlags OnOneNode(int64_t dp, int64_t tp) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp * tp;
  flags.dp = dp;
  flags.tp = tp;
  return flags;
}

absl::StatusOr<proto::Plan> CompileMlpPlan(const MlpPlanSpec& spec) {
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(spec.layout));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildMlp(spec.model, layout));
  CompileOptions options = spec.options;
  options.cluster = layout.cluster();
  if (spec.threads_per_device.has_value()) options.cluster.set_threads_per_device(*spec.threads_per_device);
  return Compile(job, options);
}

}  // namespace oneflow::testing
