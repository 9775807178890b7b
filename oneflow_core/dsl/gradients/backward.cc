#include "oneflow_core/dsl/gradients/backward.h"

#include <map>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/dsl/gradients/gradient.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using TensorSet = absl::flat_hash_set<int64_t>;

bool AnyIn(const std::vector<std::pair<std::string, int64_t>>& args, const TensorSet& set) {
  for (const auto& [arg, id] : args) {
    if (set.contains(id)) return true;
  }
  return false;
}

absl::Status CheckTensor(const Graph& graph, Tensor tensor, const std::string& role) {
  if (!tensor.valid() || tensor.graph() != &graph) {
    return absl::InvalidArgumentError(absl::StrCat("AddBackward: the ", role,
                                                   " is not a tensor of graph '", graph.name(), "'"));
  }
  if (!IsFloating(tensor.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AddBackward: the ", role, " '", tensor.name(), "' is ", tensor.type().ToString(),
        "; gradients exist only for floating tensors"));
  }
  return absl::OkStatus();
}

// "relu_grad_3 -> reduce_sum_4": the ops from ops[first] to the loss, following the
// first consumer that leads to the loss at each step.
std::string PathToLoss(const Graph& graph, size_t first, int64_t loss, const TensorSet& leads) {
  std::vector<std::string> path = {graph.ops()[first].name};
  int64_t tensor = -1;
  for (const auto& [arg, id] : graph.ops()[first].outputs) {
    if (leads.contains(id)) tensor = id;
  }
  for (size_t i = first + 1; i < graph.ops().size() && tensor != loss; ++i) {
    const Graph::OpRecord& op = graph.ops()[i];
    bool consumes = false;
    for (const auto& [arg, id] : op.inputs) consumes |= id == tensor;
    if (!consumes || !AnyIn(op.outputs, leads)) continue;
    path.push_back(op.name);
    for (const auto& [arg, id] : op.outputs) {
      if (leads.contains(id)) tensor = id;
    }
  }
  return absl::StrJoin(path, " -> ");
}

// Where the forward ops run when the graph uses several placements (pipeline stages),
// by the compiler's rule (compiler/compilation.h, IndexLogicalGraph): an op on the
// placement of its outputs' hints, else of its first input; an unhinted tensor where its
// producer runs; unhinted inputs and variables on the default placement. Empty when
// every hint is the default placement: then nothing needs pinning.
std::vector<std::optional<Placement>> ForwardOpPlacements(const Graph& graph, size_t num_forward) {
  const std::optional<Placement>& fallback = graph.default_placement();
  bool several = false;
  for (int64_t id = 0; id < graph.num_tensors(); ++id) {
    const std::optional<Placement>& hint = graph.tensor(id).placement;
    several |= hint.has_value() && hint != fallback;
  }
  if (!several) return {};
  std::map<int64_t, std::optional<Placement>> tensor_placement;
  auto placement_of = [&](int64_t id) -> std::optional<Placement> {
    if (graph.tensor(id).placement) return graph.tensor(id).placement;
    auto it = tensor_placement.find(id);
    return it != tensor_placement.end() ? it->second : fallback;
  };
  std::vector<std::optional<Placement>> placements(num_forward);
  for (size_t i = 0; i < num_forward; ++i) {
    const Graph::OpRecord& op = graph.ops()[i];
    std::optional<Placement> placement;
    for (const auto& [arg, id] : op.outputs) {
      if (!placement && graph.tensor(id).placement) placement = graph.tensor(id).placement;
    }
    if (!placement && !op.inputs.empty()) placement = placement_of(op.inputs[0].second);
    if (!placement) placement = fallback;
    for (const auto& [arg, id] : op.outputs) tensor_placement[id] = placement;
    placements[i] = placement;
  }
  return placements;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> AddBackward(Graph& graph, Tensor loss,
                                                const std::vector<Tensor>& wrt) {
  OF_RETURN_IF_ERROR(graph.status());
  OF_RETURN_IF_ERROR(CheckTensor(graph, loss, "loss"));
  for (const Tensor& tensor : wrt) OF_RETURN_IF_ERROR(CheckTensor(graph, tensor, "wrt tensor"));

  // Gradient functions append ops; only the forward ops are walked.
  const size_t num_forward = graph.ops().size();
  TensorSet reached;  // Depends on a wrt tensor.
  for (const Tensor& tensor : wrt) reached.insert(tensor.id());
  for (size_t i = 0; i < num_forward; ++i) {
    const Graph::OpRecord& op = graph.ops()[i];
    if (!AnyIn(op.inputs, reached)) continue;
    for (const auto& [arg, id] : op.outputs) reached.insert(id);
  }
  TensorSet leads = {loss.id()};  // The loss depends on it.
  for (size_t i = num_forward; i-- > 0;) {
    const Graph::OpRecord& op = graph.ops()[i];
    if (!AnyIn(op.outputs, leads)) continue;
    for (const auto& [arg, id] : op.inputs) leads.insert(id);
  }

  // With several placements, every op a gradient function adds runs where its forward op
  // does (its outputs get that placement as a hint, unless they have one): the backward
  // of a pipeline stage stays on the stage, and gradients cross between stages only
  // where activations did.
  const std::vector<std::optional<Placement>> forward_placements = ForwardOpPlacements(graph, num_forward);
  auto pin = [&](size_t first_new_op, const std::optional<Placement>& placement) {
    if (!placement) return;
    for (size_t j = first_new_op; j < graph.ops().size(); ++j) {
      for (const auto& [arg, id] : graph.ops()[j].outputs) {
        if (!graph.tensor(id).placement) graph.mutable_tensor(id).placement = placement;
      }
    }
  };

  // Gradient contributions per tensor; Total sums them once and keeps the sum.
  std::map<int64_t, std::vector<Tensor>> contributions;
  auto total = [&](int64_t id, SourceLocation location) -> Tensor {
    auto it = contributions.find(id);
    if (it == contributions.end()) return Tensor();
    std::vector<Tensor>& parts = it->second;
    Tensor sum = parts[0];
    for (size_t k = 1; k < parts.size(); ++k) sum = Add(sum, parts[k], location);
    parts = {sum};
    return sum;
  };
  {
    Graph::NameScope scope(graph, loss.name() + "_grad");
    contributions[loss.id()] = {OnesLike(loss, graph.tensor(loss.id()).location)};
  }

  for (size_t i = num_forward; i-- > 0;) {
    const Graph::OpRecord op = graph.ops()[i];  // A copy: the vector grows below.
    if (!AnyIn(op.inputs, reached) || !AnyIn(op.outputs, leads)) continue;
    Graph::NameScope scope(graph, op.name + "_grad");
    GradientContext ctx;
    ctx.op_name = op.name;
    ctx.op_type = op.type;
    ctx.attrs = &op.attrs;
    ctx.location = op.location;
    bool any_grad = false;
    for (const auto& [arg, id] : op.inputs) ctx.inputs.push_back(graph.TensorById(id));
    const size_t first_new_op = graph.ops().size();
    for (const auto& [arg, id] : op.outputs) {
      ctx.outputs.push_back(graph.TensorById(id));
      ctx.output_grads.push_back(total(id, op.location));
      any_grad |= ctx.output_grads.back().valid();
    }
    if (!any_grad) continue;  // Only integer paths (ids, labels) lead here.
    const GradientFn* gradient = FindGradient(op.type);
    if (gradient == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op.name, "' (", op.type, ") at ", op.location.ToString(),
          " has no gradient; the loss '", loss.name(), "' depends on it through ",
          PathToLoss(graph, i, loss.id(), leads),
          ". Differentiable ops are listed in oneflow_core/dsl/gradients/gradient_registry.cc "
          "(optimizer updates and backward ops are not)"));
    }
    const std::vector<Tensor> grads = (*gradient)(ctx);
    OF_RETURN_IF_ERROR(graph.status());
    if (!forward_placements.empty()) pin(first_new_op, forward_placements[i]);
    if (grads.size() != op.inputs.size()) {
      return absl::InternalError(absl::StrCat("gradient of op '", op.name, "' (", op.type,
                                              ") returned ", grads.size(), " tensors for ",
                                              op.inputs.size(), " inputs"));
    }
    for (size_t k = 0; k < grads.size(); ++k) {
      const int64_t input = op.inputs[k].second;
      if (!grads[k].valid() || !reached.contains(input)) continue;
      if (!(grads[k].type() == graph.tensor(input).type)) {
        return absl::InternalError(absl::StrCat(
            "gradient of op '", op.name, "' (", op.type, ") gives input '", op.inputs[k].first,
            "' the type ", grads[k].type().ToString(), "; the input is ",
            graph.tensor(input).type.ToString()));
      }
      contributions[input].push_back(grads[k]);
    }
  }

  std::vector<Tensor> result;
  for (const Tensor& tensor : wrt) {
    Graph::NameScope scope(graph, tensor.name() + "_grad");
    const size_t first_new_op = graph.ops().size();
    result.push_back(total(tensor.id(), graph.tensor(tensor.id()).location));
    // A variable's gradient is summed where the variable lives.
    if (!forward_placements.empty()) {
      pin(first_new_op, graph.tensor(tensor.id()).placement ? graph.tensor(tensor.id()).placement
                                                             : graph.default_placement());
    }
  }
  OF_RETURN_IF_ERROR(graph.status());
  return result;
}

}  // namespace oneflow
