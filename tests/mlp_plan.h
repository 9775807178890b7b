// Test fixture: the examples' MLP compiled for a layout, in one call, for the tests that
// train or edit a small plan (before, each built its layout, model and options inline).
//
//   MlpPlanSpec spec;
//   spec.layout = OnOneNode(/*dp=*/2);
//   spec.model.hidden = 16;
//   spec.options.bucket_mb = 0;
//   absl::StatusOr<proto::Plan> plan = CompileMlpPlan(spec);
#ifndef TESTS_MLP_PLAN_H_
#define TESTS_MLP_PLAN_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "compiler/compile_options.h"
#include "examples/common/parallel_layout.h"
#include "examples/mlp/mlp_model.h"
#include "proto/plan.pb.h"

namespace oneflow::testing {

// The model most runtime tests train: batch 8, 4 features, hidden 8, 3 classes, 2 layers
// (seconds to train; small enough that every collective is latency-bound).
examples::MlpConfig SmallMlp();

// dp x tp devices on one node.
examples::ParallelFlags OnOneNode(int64_t dp, int64_t tp = 1);

struct MlpPlanSpec {
  examples::ParallelFlags layout;
  examples::MlpConfig model = SmallMlp();
  // Compiled with these; `cluster` is replaced by the layout's cluster.
  CompileOptions options;
  // The cluster's threads_per_device, when given (the layout's otherwise).
  std::optional<int64_t> threads_per_device;
};

// BuildMlp(spec.model) on ParallelLayout(spec.layout), compiled; the first error of the
// three steps otherwise.
absl::StatusOr<proto::Plan> CompileMlpPlan(const MlpPlanSpec& spec);

}  // namespace oneflow::testing

#endif  // TESTS_MLP_PLAN_H_
