#include "compiler/passes/sbp_choice_pass.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/sbp_candidates.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

NdSbp AllBroadcast(int64_t axes) { return NdSbp(std::vector<Sbp>(axes, Sbp::Broadcast())); }

}  // namespace

absl::StatusOr<bool> SbpChoicePass::Run(Compilation* compilation) {
  LogicalGraph& graph = compilation->graph;
  compilation->boxing_cache = std::make_unique<BoxingCache>(&graph.placements, compilation->links);
  BoxingCache& cache = *compilation->boxing_cache;
  for (LogicalTensor& tensor : graph.tensors) {
    if (tensor.kind == LogicalTensor::Kind::kOpOutput) continue;
    const int64_t axes = graph.placements[tensor.placement].hierarchy().rank();
    tensor.sbp = tensor.hint ? *tensor.hint : AllBroadcast(axes);
    tensor.sbp_chosen = true;
  }
  for (LogicalOp& op : graph.ops) {
    const Placement& placement = graph.placements[op.placement];
    const std::string where = absl::StrCat("op '", op.name, "' (", op.type, ")");
    OF_ASSIGN_OR_RETURN(const OpSbpCandidates candidates, SbpCandidatesOf(graph, op));
    // Each input is priced with the compression options boxing insertion will plan it
    // with (its role and hint), so with a slow link the choice sees what compression
    // saves; with fast links nothing compresses and the prices are the dense ones.
    std::vector<BoxingOptions> input_options;
    for (int64_t t : op.inputs) input_options.push_back(BoxingOptionsOf(*compilation, t, /*into_loss_sink=*/false));
    double best_seconds = std::numeric_limits<double>::infinity();
    double best_weight = 0;
    int64_t best_conversions = 0;
    const SbpCandidate* best = nullptr;
    for (const SbpCandidate& candidate : candidates.candidates) {
      const std::optional<InputBoxingPrice> price = PriceCandidateInputs(graph, cache, op, candidate, input_options);
      if (!price) continue;
      double weight = 0;
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        weight += OutputWeight(graph.tensors[op.outputs[k]], candidate.outputs[k], placement);
      }
      // Free conversions (local slices) still cost a kernel: among equals, fewer.
      const double seconds = price->seconds;
      const int64_t conversions = price->conversions;
      if (seconds < best_seconds || (seconds == best_seconds && weight < best_weight) ||
          (seconds == best_seconds && weight == best_weight && conversions < best_conversions)) {
        best_seconds = seconds;
        best_weight = weight;
        best_conversions = conversions;
        best = &candidate;
      }
    }
    if (best == nullptr) {
      std::vector<std::string> inputs;
      for (int64_t t : op.inputs) {
        inputs.push_back(absl::StrCat(graph.tensors[t].name, ": ", graph.tensors[t].sbp.ToString()));
      }
      std::vector<std::string> hints;
      for (int64_t t : op.outputs) {
        if (graph.tensors[t].hint) {
          hints.push_back(absl::StrCat(graph.tensors[t].name, ": ", graph.tensors[t].hint->ToString()));
        }
      }
      if (candidates.candidates.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " cannot produce the hinted SBP of its output (", absl::StrJoin(hints, ", "),
            "); its 1-D signatures are: ",
            absl::StrJoin(candidates.signatures, "; ", [](std::string* out, const SbpSignature& s) {
              out->append(s.ToString());
            })));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has no SBP signature reachable from its inputs (", absl::StrJoin(inputs, ", "),
          ") on placement ", placement.ToString(),
          " without boxing an in-place updated input or an unsupported conversion"));
    }
    op.input_sbps = best->inputs;
    op.output_sbps = best->outputs;
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      LogicalTensor& out = graph.tensors[op.outputs[k]];
      out.sbp = best->outputs[k];
      out.sbp_chosen = true;
    }
  }
  return true;
}

}  // namespace oneflow
