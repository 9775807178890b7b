#include "compiler/sparse_boxing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// Where a tensor's rows hint comes from.
struct RowsHint {
  bool gather = false;  // true: a variable read in part; false: a partial sum nonzero in part
  int64_t ids = -1;     // tensor index of the ids
  int64_t reader_op = -1;
  int64_t reader_input = -1;
};

std::optional<RowsHint> HintOf(const LogicalGraph& graph, int64_t t) {
  const LogicalTensor& tensor = graph.tensors[t];
  if (tensor.kind == LogicalTensor::Kind::kVariable && tensor.sparse_rows >= 0) {
    return RowsHint{true, tensor.sparse_rows};
  }
  if (tensor.gradient_of >= 0 && graph.tensors[tensor.gradient_of].sparse_rows >= 0) {
    return RowsHint{false, graph.tensors[tensor.gradient_of].sparse_rows};
  }
  if (tensor.kind != LogicalTensor::Kind::kOpOutput) return std::nullopt;
  const LogicalOp& op = graph.ops[tensor.producer];
  const std::string& output = op.definition->outputs[tensor.producer_output];
  for (const auto& [sparse_output, ids_input] : op.definition->sparse_row_outputs) {
    if (sparse_output != output) continue;
    for (size_t k = 0; k < op.definition->inputs.size(); ++k) {
      if (op.definition->inputs[k] == ids_input) {
        return RowsHint{false, op.inputs[k], tensor.producer, static_cast<int64_t>(k)};
      }
    }
  }
  return std::nullopt;
}

bool Splits0(const Sbp& sbp) { return sbp.is_split() && sbp.axis() == 0; }

// Why the step cannot be sparse, or "" when it can.
std::string StepProblem(const RowsHint& hint, const BoxingStep& step, DType dtype, const Shape& hierarchy) {
  const int64_t axis = step.hierarchy_axis;
  const Sbp& from = step.src.at(axis);
  const Sbp& to = step.dst.at(axis);
  bool fits = false;
  if (hint.gather) {
    fits = step.kind == BoxingKind::kAllGather && Splits0(from) && to.is_broadcast();
  } else {
    fits = (step.kind == BoxingKind::kReduceScatter && from.is_partial() && Splits0(to)) ||
           (step.kind == BoxingKind::kAllReduce && from.is_partial() && to.is_broadcast());
  }
  if (!fits) {
    return absl::StrCat("its step is ", BoxingKindName(step.kind), " ", from.ToString(), " -> ", to.ToString(),
                        hint.gather ? "; a sparse gather is all_gather S(0) -> B"
                                    : "; a sparse reduction is reduce_scatter P -> S(0) or all_reduce P -> B");
  }
  if (!hint.gather && dtype != DType::kF32) return absl::StrCat("sparse reductions add f32, not ", DTypeName(dtype));
  for (int64_t other = 0; other < step.src.size(); ++other) {
    if (other == axis || hierarchy.dim(other) == 1) continue;
    const Sbp& sbp = step.src.at(other);
    const bool ok = sbp.is_broadcast() || (step.kind == BoxingKind::kAllReduce && Splits0(sbp));
    if (!ok) {
      return absl::StrCat("hierarchy axis ", other, " is ", sbp.ToString(),
                          step.kind == BoxingKind::kAllReduce ? "; the other axes must be B or S(0)"
                                                              : "; the other axes must be B");
    }
  }
  if (step.compression.compressed()) return "the step is compressed";
  return "";
}

}  // namespace

bool HasRowsHint(const Compilation& compilation, int64_t t) { return HintOf(compilation.graph, t).has_value(); }

int64_t ExpectedDistinctRows(int64_t rows, int64_t ids) {
  if (rows <= 0 || ids <= 0) return 0;
  const double expected = static_cast<double>(rows) * -std::expm1(static_cast<double>(ids) * std::log1p(-1.0 / rows));
  return std::min<int64_t>({rows, ids, static_cast<int64_t>(std::llround(expected))});
}

SparseBoxingChoice ChooseSparseBoxing(const Compilation& compilation, const Boxing& boxing) {
  const LogicalGraph& graph = compilation.graph;
  const std::optional<RowsHint> hint = HintOf(graph, boxing.tensor);
  if (!hint.has_value()) return {};
  const LogicalTensor& tensor = graph.tensors[boxing.tensor];
  const LogicalTensor& ids = graph.tensors[hint->ids];
  const std::string ids_text = absl::StrCat("the ids of '", ids.name, "'");
  auto dense = [&](const std::string& why) {
    return SparseBoxingChoice{std::nullopt, absl::StrCat("; dense although ", ids_text, " list the rows in use: ", why)};
  };
  if (!compilation.options.sparse_boxing) return dense("sparse boxing is off (--sparse_boxing=off)");
  if (compilation.job.micro_batches() > 1) return dense("sparse boxing does not run with micro-batches");
  if (boxing.first_consumer < 0) return dense("the loss sink reads it");
  if (boxing.dst_placement != tensor.placement || ids.placement != tensor.placement) {
    return dense("the tensor, its ids and the consumer must share one placement");
  }
  if (boxing.plan.steps.size() != 1) {
    return dense(absl::StrCat("the conversion takes ", boxing.plan.steps.size(), " steps; a sparse one takes one"));
  }
  const BoxingStep& step = boxing.plan.steps[0];
  const Placement& placement = graph.placements[tensor.placement];
  if (step.hierarchy_axis < 0) return dense("it moves between placements");
  if (const std::string problem = StepProblem(*hint, step, tensor.type.dtype, placement.hierarchy()); !problem.empty()) {
    return dense(problem);
  }
  // The ids each device reads: the reader op's input layout, else the ids' own.
  const NdSbp& ids_sbp =
      hint->reader_op >= 0 ? graph.ops[hint->reader_op].input_sbps[hint->reader_input] : ids.sbp;
  for (const Sbp& sbp : ids_sbp.sbps()) {
    if (sbp.is_partial()) return dense(absl::StrCat("the ids are ", ids_sbp.ToString(), "; partial ids list nothing"));
  }
  // The ids' register must exist on the device before the boxing's actor: made by an op
  // that lowering emits before the boxing's first consumer.
  if (hint->reader_op < 0 && ids.kind == LogicalTensor::Kind::kOpOutput && ids.producer >= boxing.first_consumer) {
    return dense(absl::StrCat("op '", graph.ops[ids.producer].name, "' makes the ids after the boxing is needed"));
  }
  SparseBoxing sparse;
  sparse.kind = hint->gather && tensor.type.shape.rank() >= 3 ? proto::Sparsity::EXPERTS : proto::Sparsity::ROWS;
  sparse.rows_tensor = hint->ids;
  sparse.rows_reader_op = hint->reader_op;
  sparse.rows_reader_input = hint->reader_input;
  // The group's slice is the B (or P) side of the step.
  const NdSbp& whole = step.kind == BoxingKind::kReduceScatter ? step.src : step.dst;
  int64_t ids_per_device = 0;
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    absl::StatusOr<TensorSlice> slice = DeviceSlice(tensor.type.shape, whole, placement, rank);
    absl::StatusOr<TensorSlice> id_slice = DeviceSlice(ids.type.shape, ids_sbp, placement, rank);
    if (!slice.ok() || !id_slice.ok()) return dense("its slices do not lay out");
    const Shape shape = slice->shape();
    sparse.rows = std::max(sparse.rows, shape.dim(0));
    if (shape.dim(0) > 0) sparse.row_bytes = shape.NumElements() / shape.dim(0) * SizeOf(tensor.type.dtype);
    ids_per_device = std::max(ids_per_device, id_slice->NumElements());
  }
  sparse.max_rows = std::min(sparse.rows, ids_per_device);
  sparse.expected_rows = ExpectedDistinctRows(sparse.rows, ids_per_device);
  const int64_t members = placement.hierarchy().dim(step.hierarchy_axis);
  const double others = static_cast<double>(members - 1);
  double expected = 0;
  int64_t metadata = 0;
  if (step.kind == BoxingKind::kAllReduce) {
    expected = others * sparse.expected_rows * (sparse.row_bytes + 4);
    metadata = (members - 1) * 8;
  } else {
    // A device receives the rows it needs from their owners (gather), or an owner the
    // rows the others touched of its 1/P share (reduce-scatter): the same expectation.
    expected = others / members * sparse.expected_rows * sparse.row_bytes;
    metadata = (members - 1) * ((sparse.rows + 7) / 8);
  }
  sparse.expected_bytes_per_device =
      std::min<int64_t>(static_cast<int64_t>(std::llround(expected)), step.bytes_per_device) + metadata;
  const char* what = hint->gather ? "gathers" : "reduces";
  return {sparse,
          absl::StrCat("; row-sparse: ", what, " only the rows ", ids_text, " list on each device (at most ",
                       sparse.max_rows, " of ", sparse.rows, " rows, ", sparse.expected_rows,
                       " expected under uniform ids: ~", sparse.expected_bytes_per_device, " of ",
                       step.bytes_per_device,
                       " dense bytes per device); the runtime sends dense when the rows in use make that cheaper")};
}

}  // namespace oneflow
