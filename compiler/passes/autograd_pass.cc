#include "compiler/passes/autograd_pass.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/gradients/backward.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<bool> AutogradPass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  // A job without an optimizer is inference only: nothing to differentiate.
  if (!job.has_optimizer()) return false;
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  std::vector<Tensor> wrt;
  for (const Graph::VariableRecord& variable : graph->variables()) {
    if (variable.trainable) wrt.push_back(graph->TensorById(variable.tensor));
  }
  if (wrt.empty()) return false;
  OF_ASSIGN_OR_RETURN(std::vector<Tensor> grads, AddBackward(*graph, graph->loss(), wrt));
  compilation->gradients.clear();
  for (size_t i = 0; i < wrt.size(); ++i) {
    // A variable the loss does not depend on gets no gradient and no update.
    if (grads[i].valid()) compilation->gradients.push_back({wrt[i].name(), grads[i].name()});
  }
  if (compilation->gradients.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the loss '", job.loss(), "' of job '", job.name(),
        "' depends on no trainable variable; there is nothing to optimize"));
  }
  OF_ASSIGN_OR_RETURN(compilation->job, graph->Build());
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
