#include "examples/common/dense_evaluation.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"

namespace oneflow::examples {

absl::StatusOr<proto::Plan> DenseEvaluationPlan(proto::Job job, const proto::Cluster& cluster) {
  // Small enough that lr * (anything Adam or SGD applies) is far below half an ulp of any
  // weight that matters, large enough to be a positive double and a positive float.
  constexpr double kNoLearning = 1e-30;
  proto::LearningRateSchedule* schedule = job.mutable_optimizer()->mutable_schedule();
  schedule->Clear();
  schedule->set_kind(proto::LearningRateSchedule::CONSTANT);
  schedule->set_base_lr(kNoLearning);
  CompileOptions options;
  options.cluster = cluster;
  options.bucket_mb = 0;
  return Compile(job, options);
}

absl::StatusOr<std::vector<double>> EvaluateCheckpoint(const proto::Plan& evaluation, const std::string& checkpoint_dir,
                                                       int64_t trained_iterations, int64_t batches) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = trained_iterations + batches;
  options.resume_from = checkpoint_dir;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(evaluation, options);
  if (!result.ok()) return result.status();
  if (result->first_iteration != trained_iterations) {
    return absl::FailedPreconditionError(absl::StrCat("the checkpoint in '", checkpoint_dir, "' is of iteration ",
                                                      result->first_iteration, ", not of the ", trained_iterations,
                                                      " trained iterations to evaluate"));
  }
  std::vector<double> losses;
  for (const actors::IterationMetrics& metrics : result->iterations) losses.push_back(metrics.loss);
  return losses;
}

}  // namespace oneflow::examples
