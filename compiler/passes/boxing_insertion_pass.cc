#include "compiler/passes/boxing_insertion_pass.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "compiler/ring_shift.h"
#include "compiler/sparse_boxing.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Who made the tensor, for the reason line: an op name, "data source 'd'" or
// "variable".
std::string ProducerText(const Compilation& compilation, const LogicalTensor& tensor) {
  switch (tensor.kind) {
    case LogicalTensor::Kind::kInput:
      return absl::StrCat("data source '", compilation.job.data_sources(tensor.producer).name(), "'");
    case LogicalTensor::Kind::kVariable:
      return absl::StrCat("variable '", tensor.name, "'");
    case LogicalTensor::Kind::kOpOutput:
      return absl::StrCat(compilation.graph.ops[tensor.producer].name, " (",
                          compilation.graph.ops[tensor.producer].type, ")");
  }
  return "";
}

// "; compressed as a gradient, where the cost model says it pays", or "" when no step
// compresses (so that plans without compression read as before).
std::string CompressionNote(const Compilation& compilation, const Boxing& boxing) {
  bool compressed = false;
  for (const BoxingStep& step : boxing.plan.steps) compressed |= step.compression.compressed();
  if (!compressed) return "";
  const LogicalTensor& tensor = compilation.graph.tensors[boxing.tensor];
  if (tensor.compression_hint.has_value()) return "; compressed as the tensor's compression hint asks";
  if (compilation.options.compression.mode == CompressionMode::kForced) {
    return absl::StrCat("; compressed with the forced codec ",
                        CompressionKindName(compilation.options.compression.forced));
  }
  return absl::StrCat("; compressed as ", boxing.role == TensorRole::kActivation ? "an " : "a ",
                      TensorRoleName(boxing.role), ", where the cost model says it pays");
}

}  // namespace

absl::StatusOr<bool> BoxingInsertionPass::Run(Compilation* compilation) {
  LogicalGraph& graph = compilation->graph;
  BoxingCache& cache = *compilation->boxing_cache;
  std::vector<Boxing>& boxings = compilation->boxings;
  boxings.clear();
  absl::flat_hash_map<std::string, int64_t> existing;
  // Returns the boxing converting `t` to (sbp, placement), creating it on first use.
  auto box = [&](int64_t t, const NdSbp& sbp, int64_t placement, int64_t consumer,
                 const std::string& consumer_text) -> absl::StatusOr<int64_t> {
    const LogicalTensor& tensor = graph.tensors[t];
    const std::string key = absl::StrCat(t, "|", sbp.ToString(), "|", placement);
    auto it = existing.find(key);
    if (it != existing.end()) return it->second;
    const bool into_loss_sink = consumer < 0;
    const absl::StatusOr<BoxingPlan>& plan =
        cache.Plan(tensor.type.shape, tensor.type.dtype, tensor.sbp, tensor.placement, sbp, placement,
                   BoxingOptionsOf(*compilation, t, into_loss_sink));
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat("tensor '", tensor.name, "' into ", consumer_text, ": ",
                                       plan.status().message()));
    }
    Boxing boxing;
    boxing.id = static_cast<int64_t>(boxings.size());
    boxing.tensor = t;
    boxing.dst_sbp = sbp;
    boxing.dst_placement = placement;
    boxing.plan = *plan;
    boxing.first_consumer = consumer;
    boxing.role = CompressionRole(*compilation, t, into_loss_sink);
    boxing.reason = absl::StrCat(ProducerText(*compilation, tensor), " produces ",
                                 tensor.sbp.ToString(),
                                 tensor.placement == placement
                                     ? ""
                                     : absl::StrCat(" on ", graph.placements[tensor.placement].ToString()),
                                 ", ", consumer_text, " needs ", sbp.ToString(),
                                 tensor.placement == placement
                                     ? ""
                                     : absl::StrCat(" on ", graph.placements[placement].ToString()));
    SparseBoxingChoice sparse = ChooseSparseBoxing(*compilation, boxing);
    if (!sparse.sparse.has_value() && HasRowsHint(*compilation, t) && boxing.plan.steps.size() == 1 &&
        boxing.plan.steps[0].compression.compressed()) {
      // Compressed or row-sparse: the sparse form wins when the rows expected in use
      // weigh less than the compressed bytes (it falls back to dense, not compressed).
      Boxing uncompressed = boxing;
      const absl::StatusOr<BoxingPlan>& dense = cache.Plan(tensor.type.shape, tensor.type.dtype, tensor.sbp,
                                                           tensor.placement, sbp, placement, BoxingOptions{});
      if (dense.ok()) {
        uncompressed.plan = *dense;
        SparseBoxingChoice alternative = ChooseSparseBoxing(*compilation, uncompressed);
        const int64_t compressed_bytes = boxing.plan.steps[0].bytes_per_device;
        if (alternative.sparse.has_value() && alternative.sparse->expected_bytes_per_device < compressed_bytes) {
          boxing.plan = *dense;
          sparse = std::move(alternative);
          absl::StrAppend(&sparse.note, " (rather than compressed: ", compressed_bytes,
                          " bytes per device compressed)");
        }
      }
    }
    absl::StrAppend(&boxing.reason, CompressionNote(*compilation, boxing));
    boxing.sparse = std::move(sparse.sparse);
    absl::StrAppend(&boxing.reason, sparse.note);
    existing.emplace(key, boxing.id);
    boxings.push_back(std::move(boxing));
    return boxings.back().id;
  };
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    LogicalOp& op = graph.ops[o];
    op.input_boxings.assign(op.inputs.size(), -1);
    // A ring_shift split over its ring reads its input from the rotated placement
    // (compiler/ring_shift.h); every other op from its own.
    OF_ASSIGN_OR_RETURN(const int64_t input_placement, InputPlacementOf(*compilation, static_cast<int64_t>(o)));
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const LogicalTensor& tensor = graph.tensors[op.inputs[k]];
      if (tensor.placement == input_placement &&
          SameLayout(tensor.sbp, op.input_sbps[k], graph.placements[input_placement].hierarchy())) {
        continue;
      }
      OF_ASSIGN_OR_RETURN(op.input_boxings[k],
                          box(op.inputs[k], op.input_sbps[k], input_placement, static_cast<int64_t>(o),
                              absl::StrCat(op.name, " (", op.type, ")")));
    }
  }
  // The loss sink reports one number per iteration: every device needs the whole value.
  if (graph.loss >= 0) {
    const LogicalTensor& loss = graph.tensors[graph.loss];
    const NdSbp all_b(std::vector<Sbp>(loss.sbp.size(), Sbp::Broadcast()));
    if (!SameLayout(loss.sbp, all_b, graph.placements[loss.placement].hierarchy())) {
      OF_RETURN_IF_ERROR(box(graph.loss, all_b, loss.placement, -1, "the loss sink").status());
    }
  }
  return !boxings.empty();
}

}  // namespace oneflow
