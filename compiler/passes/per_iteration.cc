#include "compiler/passes/per_iteration.h"

namespace oneflow {

std::vector<bool> PerIterationTensors(const Compilation& compilation, std::vector<bool>* derived) {
  const LogicalGraph& graph = compilation.graph;
  if (compilation.job.micro_batches() <= 1) return {};
  std::vector<bool> per_iteration(graph.tensors.size(), false);
  derived->assign(graph.tensors.size(), false);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    per_iteration[t] = graph.tensors[t].kind == LogicalTensor::Kind::kVariable;
  }
  for (const LogicalOp& op : graph.ops) {
    bool all = !op.inputs.empty();
    for (int64_t t : op.inputs) all = all && per_iteration[t];
    bool after = op.type == "accumulate";
    for (int64_t t : op.inputs) after = after || (*derived)[t];
    if (op.type == "accumulate") all = true;
    for (int64_t t : op.outputs) {
      per_iteration[t] = all;
      (*derived)[t] = all && after;
    }
  }
  return per_iteration;
}

bool OpPerIteration(const LogicalOp& op, const std::vector<bool>& per_iteration) {
  if (per_iteration.empty() || op.inputs.empty()) return false;
  for (int64_t t : op.inputs) {
    if (!per_iteration[t]) return false;
  }
  return true;
}

}  // namespace oneflow
