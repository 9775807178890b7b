#include "compiler/passes/optimizer_pass.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::Status CheckSchedule(const proto::LearningRateSchedule& schedule) {
  if (!(schedule.base_lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer learning rate is ", schedule.base_lr(), "; it must be > 0"));
  }
  if (schedule.kind() == proto::LearningRateSchedule::WARMUP_COSINE &&
      (schedule.warmup_steps() < 0 || schedule.total_steps() <= schedule.warmup_steps() ||
       schedule.min_lr() < 0 || schedule.min_lr() > schedule.base_lr())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warmup-cosine schedule warmup_steps=", schedule.warmup_steps(), " total_steps=",
        schedule.total_steps(), " min_lr=", schedule.min_lr(), " base_lr=", schedule.base_lr(),
        " is invalid; need 0 <= warmup_steps < total_steps and 0 <= min_lr <= base_lr"));
  }
  return absl::OkStatus();
}

// A zero-initialized state variable laid out exactly like `param`.
Tensor StateLike(Graph& graph, Tensor param, const std::string& suffix) {
  // A copy: adding the variable may reallocate the graph's tensor records.
  const Graph::TensorRecord record = graph.tensor(param.id());
  Tensor state = graph.Variable(absl::StrCat(param.name(), "/", suffix), param.shape(),
                                Initializer::Zeros(), param.dtype(), /*trainable=*/false,
                                record.location);
  if (!state.valid()) return state;
  if (record.sbp_hint) state.WithSbp(*record.sbp_hint);
  if (record.placement) state.WithPlacement(*record.placement);
  return state;
}

}  // namespace

absl::StatusOr<bool> OptimizerPass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  if (!job.has_optimizer() || compilation->gradients.empty()) return false;
  const proto::OptimizerDef& optimizer = job.optimizer();
  OF_RETURN_IF_ERROR(CheckSchedule(optimizer.schedule()));
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  for (const auto& [variable, gradient] : compilation->gradients) {
    Tensor param = graph->FindTensor(variable);
    Tensor grad = graph->FindTensor(gradient);
    const SourceLocation location = graph->tensor(param.id()).location;
    Graph::NameScope scope(*graph, absl::StrCat(variable, "_update"));
    if (optimizer.has_adamw()) {
      Tensor m = StateLike(*graph, param, "adam_m");
      Tensor v = StateLike(*graph, param, "adam_v");
      AdamWUpdate(param, grad, m, v, optimizer.adamw(), optimizer.schedule(), location);
    } else {
      Tensor momentum = StateLike(*graph, param, "momentum");
      SgdUpdate(param, grad, momentum, optimizer.sgd(), optimizer.schedule(), location);
    }
    OF_RETURN_IF_ERROR(graph->status());
  }
  OF_ASSIGN_OR_RETURN(compilation->job, graph->Build());
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
