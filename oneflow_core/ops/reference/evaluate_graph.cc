#include "oneflow_core/ops/reference/evaluate_graph.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<TensorValues> EvaluateGraph(const Graph& graph, const TensorValues& feeds,
                                           int64_t step) {
  OF_RETURN_IF_ERROR(graph.status());
  TensorValues values;
  // The value of tensor `id`, taken from the feeds the first time an op reads it.
  auto value_of = [&](int64_t id, const std::string& op) -> absl::StatusOr<const Dense*> {
    const Graph::TensorRecord& tensor = graph.tensor(id);
    auto it = values.find(tensor.name);
    if (it != values.end()) return &it->second;
    auto feed = feeds.find(tensor.name);
    if (feed == feeds.end()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "' reads tensor '", tensor.name,
                                                     "' (", tensor.type.ToString(),
                                                     "), which is neither fed nor computed"));
    }
    if (feed->second.shape != tensor.type.shape ||
        feed->second.values.size() != static_cast<size_t>(tensor.type.shape.NumElements())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed '", tensor.name, "' has shape ", feed->second.shape.ToString(), " and ",
          feed->second.values.size(), " values; the tensor is ", tensor.type.ToString()));
    }
    Dense value = feed->second;
    value.dtype = tensor.type.dtype;
    return &values.emplace(tensor.name, std::move(value)).first->second;
  };
  ReferenceContext context;
  context.step = step;
  for (const Graph::OpRecord& op : graph.ops()) {
    std::vector<Dense> inputs;
    for (const auto& [arg, id] : op.inputs) {
      OF_ASSIGN_OR_RETURN(const Dense* value, value_of(id, op.name));
      inputs.push_back(*value);
    }
    absl::StatusOr<std::vector<Dense>> outputs =
        EvaluateReference(op.type, inputs, op.attrs, context);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(),
                          absl::StrCat("op '", op.name, "': ", outputs.status().message()));
    }
    OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(op.type));
    if (definition->outputs.empty()) {
      // An update: its results are the new values of the updated inputs.
      for (size_t u = 0; u < definition->updated_inputs.size(); ++u) {
        for (size_t i = 0; i < op.inputs.size(); ++i) {
          if (op.inputs[i].first == definition->updated_inputs[u]) {
            values[graph.tensor(op.inputs[i].second).name] = (*outputs)[u];
          }
        }
      }
      continue;
    }
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      values[graph.tensor(op.outputs[i].second).name] = std::move((*outputs)[i]);
    }
  }
  for (const auto& [name, value] : feeds) values.emplace(name, value);
  return values;
}

absl::StatusOr<TensorValues> EvaluateJob(const proto::Job& job, const TensorValues& feeds,
                                         int64_t step) {
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  return EvaluateGraph(*graph, feeds, step);
}

}  // namespace oneflow
