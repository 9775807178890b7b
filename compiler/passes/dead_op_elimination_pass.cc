#include "compiler/passes/dead_op_elimination_pass.h"

#include "absl/container/flat_hash_set.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<bool> DeadOpEliminationPass::Run(Compilation* compilation) {
  proto::Job& job = compilation->job;
  if (!job.has_optimizer()) return false;
  const LogicalGraph& graph = compilation->graph;
  // Walk ops backwards: an op is live if it updates state (no outputs) or one of its
  // outputs is the loss or is read by a live op.
  absl::flat_hash_set<int64_t> needed_tensors;
  if (graph.loss >= 0) needed_tensors.insert(graph.loss);
  std::vector<bool> live(graph.ops.size(), false);
  for (int64_t o = static_cast<int64_t>(graph.ops.size()) - 1; o >= 0; --o) {
    const LogicalOp& op = graph.ops[o];
    bool is_live = !op.definition->updated_inputs.empty();
    for (int64_t t : op.outputs) is_live |= needed_tensors.contains(t);
    if (!is_live) continue;
    live[o] = true;
    for (int64_t t : op.inputs) needed_tensors.insert(t);
  }
  if (std::all_of(live.begin(), live.end(), [](bool b) { return b; })) return false;
  // Keep live ops, and the tensors that are still produced or read.
  absl::flat_hash_set<std::string> kept_tensors;
  for (const LogicalTensor& tensor : graph.tensors) {
    if (tensor.kind != LogicalTensor::Kind::kOpOutput) kept_tensors.insert(tensor.name);
  }
  proto::Job pruned = job;
  pruned.clear_ops();
  pruned.clear_tensors();
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    if (!live[o]) continue;
    *pruned.add_ops() = job.ops(static_cast<int>(o));
    for (int64_t t : graph.ops[o].outputs) kept_tensors.insert(graph.tensors[t].name);
  }
  for (const proto::TensorDef& tensor : job.tensors()) {
    if (kept_tensors.contains(tensor.name())) *pruned.add_tensors() = tensor;
  }
  job = std::move(pruned);
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
