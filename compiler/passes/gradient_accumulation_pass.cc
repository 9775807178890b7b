#include "compiler/passes/gradient_accumulation_pass.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The addends of a variable's gradient, grouped by the placement that produces them.
struct PlacedContributions {
  int64_t placement = 0;         // index into LogicalGraph::placements
  std::vector<int64_t> tensors;  // in the order the sum reads them
};

// The terms autograd summed into `gradient` (oneflow_core/dsl/gradients/backward.cc sums a
// tensor's contributions with `add` ops placed where the variable lives): descends
// through the `add` ops on the variable's placement `owner` that nothing else reads, and
// groups the terms by their producer's placement, the owner's group first. Empty when the
// terms do not come from the owner's placement and another one (see the end). Any add may
// be split so, not only autograd's: accumulation is linear, so accumulating the terms apart
// and adding the results equals accumulating the sum, up to float rounding.
std::vector<PlacedContributions> ContributionsByPlacement(const LogicalGraph& graph, int64_t gradient, int64_t owner) {
  std::vector<int64_t> terms;
  std::vector<int64_t> pending = {gradient};
  while (!pending.empty()) {
    const int64_t t = pending.back();
    pending.pop_back();
    const LogicalTensor& tensor = graph.tensors[t];
    const bool summed_here = tensor.kind == LogicalTensor::Kind::kOpOutput &&
                             graph.ops[tensor.producer].type == "add" &&
                             graph.ops[tensor.producer].placement == owner &&
                             (t == gradient || tensor.consumers.size() == 1);
    if (!summed_here) {
      terms.push_back(t);
      continue;
    }
    const std::vector<int64_t>& inputs = graph.ops[tensor.producer].inputs;
    for (auto it = inputs.rbegin(); it != inputs.rend(); ++it) pending.push_back(*it);  // first input first
  }
  std::vector<PlacedContributions> groups = {{owner, {}}};
  for (int64_t t : terms) {
    const int64_t placement = graph.tensors[t].placement;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const PlacedContributions& g) { return g.placement == placement; });
    if (group == groups.end()) group = groups.insert(groups.end(), PlacedContributions{placement, {}});
    group->tensors.push_back(t);
  }
  // Every term on the owner's placement: one accumulate of the sum, as without stages.
  // Every term on one other placement: the same (accumulated there instead, the gradient
  // would leave the variable's placement, and its data-parallel sync and the optimizer
  // would read it across the cut).
  if (groups.size() < 2 || groups[0].tensors.empty()) return {};
  return groups;
}

}  // namespace

absl::StatusOr<bool> GradientAccumulationPass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  const int64_t micro_batches = job.micro_batches();
  if (micro_batches < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job '", job.name(), "' has micro_batches=", micro_batches, "; it must be >= 1"));
  }
  if (micro_batches <= 1 || compilation->gradients.empty()) return false;
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  const LogicalGraph& logical = compilation->graph;
  // The accumulate ops are appended in the order backward produces the gradients (their
  // producers' positions), not in variable order: gradient_bucketing orders a group's
  // members by the op that makes each ready, here the accumulate op, and collective
  // ordering issues the buckets in that order. In variable order (forward order) the
  // first bucket held the first layers' gradients, which backward produces last, so with
  // micro-batches no gradient collective started before the last micro-batch's backward
  // ended (a 2-device dp gpt: 35% of the reduction hidden at 2 micro-batches, 83% at 1).
  std::vector<size_t> backward_order(compilation->gradients.size());
  std::vector<int64_t> producer(compilation->gradients.size(), -1);
  for (size_t g = 0; g < compilation->gradients.size(); ++g) {
    backward_order[g] = g;
    const auto it = logical.tensor_index.find(compilation->gradients[g].second);
    if (it == logical.tensor_index.end()) continue;
    const LogicalTensor& tensor = logical.tensors[it->second];
    if (tensor.kind == LogicalTensor::Kind::kOpOutput) producer[g] = tensor.producer;
  }
  std::stable_sort(backward_order.begin(), backward_order.end(),
                   [&](size_t a, size_t b) { return producer[a] < producer[b]; });
  for (size_t g : backward_order) {
    auto& [variable, gradient] = compilation->gradients[g];
    Tensor grad = graph->FindTensor(gradient);
    const SourceLocation location = graph->tensor(graph->FindTensor(variable).id()).location;
    const auto variable_index = logical.tensor_index.find(variable);
    const auto gradient_index = logical.tensor_index.find(gradient);
    std::vector<PlacedContributions> groups;
    if (variable_index != logical.tensor_index.end() && gradient_index != logical.tensor_index.end()) {
      groups = ContributionsByPlacement(logical, gradient_index->second, logical.tensors[variable_index->second].placement);
    }
    if (groups.empty()) {
      Tensor accumulated = graph->AddSingleOutputOp("accumulate", {grad}, {{"micro_batches", micro_batches}},
                                                    location, absl::StrCat(variable, "_accumulate"));
      OF_RETURN_IF_ERROR(graph->status());
      gradient = accumulated.name();
      continue;
    }
    // A variable read on several pipeline stages (a tied embedding: the gpt's output
    // projection on the last stage multiplies by the first stage's token embedding) has
    // a gradient term from each. Summed per micro-batch where the variable lives, the
    // last stage's term crossed the cut every micro-batch (24 x 192 KiB an iteration for
    // the hosts sweep's gpt at M = 24, traced; docs/auto_parallel_measurements.md,
    // "Pipelines across hosts, traced"). Each stage accumulates its own terms over the
    // micro-batches instead, and the accumulated terms are added once per iteration where
    // the variable lives, so the cut carries the term once, after the stage's last
    // micro-batch's backward (Megatron all-reduces the first and last stages' embedding
    // gradients once, after the pipeline's flush).
    std::vector<Tensor> accumulated_terms;
    for (const PlacedContributions& group : groups) {
      const Placement& placement = logical.placements[group.placement];
      Tensor sum = graph->FindTensor(logical.tensors[group.tensors[0]].name);
      for (size_t k = 1; k < group.tensors.size(); ++k) {
        sum = Add(sum, graph->FindTensor(logical.tensors[group.tensors[k]].name), location);
        sum.WithPlacement(placement);
      }
      Tensor accumulated =
          graph->AddSingleOutputOp("accumulate", {sum}, {{"micro_batches", micro_batches}}, location,
                                   absl::StrCat(variable, "_accumulate_placement", group.placement));
      accumulated.WithPlacement(placement);
      accumulated_terms.push_back(accumulated);
    }
    Tensor total = accumulated_terms[0];
    for (size_t k = 1; k < accumulated_terms.size(); ++k) {
      const bool last = k + 1 == accumulated_terms.size();
      total = graph->AddSingleOutputOp("add", {total, accumulated_terms[k]}, {}, location,
                                       last ? absl::StrCat(variable, "_accumulated_sum") : "");
      total.WithPlacement(logical.placements[groups[0].placement]);
    }
    OF_RETURN_IF_ERROR(graph->status());
    gradient = total.name();
  }
  OF_ASSIGN_OR_RETURN(compilation->job, graph->Build());
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
