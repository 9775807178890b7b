#include "compiler/passes/gradient_accumulation_pass.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<bool> GradientAccumulationPass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  const int64_t micro_batches = job.micro_batches();
  if (micro_batches < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job '", job.name(), "' has micro_batches=", micro_batches, "; it must be >= 1"));
  }
  if (micro_batches <= 1 || compilation->gradients.empty()) return false;
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  for (auto& [variable, gradient] : compilation->gradients) {
    Tensor grad = graph->FindTensor(gradient);
    const SourceLocation location = graph->tensor(graph->FindTensor(variable).id()).location;
    Tensor accumulated = graph->AddSingleOutputOp("accumulate", {grad}, {{"micro_batches", micro_batches}}, location,
                                       absl::StrCat(variable, "_accumulate"));
    OF_RETURN_IF_ERROR(graph->status());
    gradient = accumulated.name();
  }
  OF_ASSIGN_OR_RETURN(compilation->job, graph->Build());
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
