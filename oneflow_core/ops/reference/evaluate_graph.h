// Runs a whole logical graph forward with the reference kernels in double precision:
// the oracle for gradient checks and for end-to-end tests of the compiler and runtime
// (a plan run on any layout must give these values).
//
//   OF_ASSIGN_OR_RETURN(TensorValues values, EvaluateGraph(graph, {{"x", x}, {"w", w}}));
//   double loss = values.at(graph.loss().name()).values[0];
#ifndef ONEFLOW_CORE_OPS_REFERENCE_EVALUATE_GRAPH_H_
#define ONEFLOW_CORE_OPS_REFERENCE_EVALUATE_GRAPH_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/ops/reference/dense.h"
#include "proto/job.pb.h"

namespace oneflow {

// Tensor values by tensor name.
using TensorValues = std::map<std::string, Dense>;

// Evaluates the ops in graph order. `feeds` must hold every tensor that ops read and no
// op produces (inputs, variables); a feed takes its dtype from the graph's tensor and
// must have its shape. Returns the feeds and every op output. Optimizer updates (no
// outputs) replace the values of the tensors they update, so after a graph with updates
// the variables hold their new values. `step` is the iteration (ReferenceContext::step).
// Errors name the op or the tensor.
absl::StatusOr<TensorValues> EvaluateGraph(const Graph& graph, const TensorValues& feeds,
                                           int64_t step = 0);

// The same for a Job, rebuilt with Graph::FromJob.
absl::StatusOr<TensorValues> EvaluateJob(const proto::Job& job, const TensorValues& feeds,
                                         int64_t step = 0);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_REFERENCE_EVALUATE_GRAPH_H_
