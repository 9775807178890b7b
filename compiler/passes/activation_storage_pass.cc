#include "compiler/passes/activation_storage_pass.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "compiler/compilation.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

bool AnyPartial(const NdSbp& sbp) {
  for (const Sbp& axis : sbp.sbps()) {
    if (axis.is_partial()) return true;
  }
  return false;
}

// One stored activation: where its two casts go in the job's op order.
struct Stored {
  int64_t tensor = -1;
  int64_t narrow_after = -1;  // op index; the narrowing cast runs right after it
  int64_t widen_before = -1;  // op index; the widening cast runs right before it
};

// Whether activation `t` is kept in bf16 (activation_storage_pass.h), and where.
bool StoredActivation(const LogicalGraph& graph, const std::vector<bool>& forward, int64_t t, Stored* stored) {
  const LogicalTensor& tensor = graph.tensors[t];
  if (tensor.kind != LogicalTensor::Kind::kOpOutput || !forward[tensor.producer]) return false;
  if (t == graph.loss || tensor.type.dtype != DType::kF32 || AnyPartial(tensor.sbp)) return false;
  const int64_t placement = graph.ops[tensor.producer].placement;
  stored->tensor = t;
  stored->narrow_after = tensor.producer;
  stored->widen_before = -1;
  for (int64_t reader : tensor.consumers) {
    if (forward[reader]) {
      stored->narrow_after = std::max(stored->narrow_after, reader);
    } else if (graph.ops[reader].placement == placement &&
               (stored->widen_before < 0 || reader < stored->widen_before)) {
      stored->widen_before = reader;
    }
  }
  // Backward runs after forward in the job's order; a reader before the last forward one
  // would be a graph this pass does not understand: keep it in f32.
  return stored->widen_before > stored->narrow_after;
}

proto::OpDef CastOp(const std::string& name, const std::string& input, DType dtype, const proto::OpDef& like) {
  proto::OpDef op;
  op.set_name(name);
  op.set_type("cast");
  (*op.mutable_inputs())["x"] = input;
  (*op.mutable_outputs())["out"] = name;
  (*op.mutable_attrs())["dtype"] = AttrToProto(AttrValue(std::string(DTypeName(dtype))));
  *op.mutable_location() = like.location();
  return op;
}

proto::TensorDef CastTensor(const std::string& name, DType dtype, const proto::TensorDef& like) {
  proto::TensorDef tensor = like;
  tensor.set_name(name);
  tensor.set_dtype(ToProto(dtype));
  tensor.clear_recompute();
  tensor.clear_sparse_rows();
  // The widened f32 value is boxed into backward readers as the original was (and keeps
  // its compression hint); the bf16 value is never boxed.
  if (dtype != DType::kF32) tensor.clear_compression();
  return tensor;
}

}  // namespace

absl::StatusOr<bool> ActivationStoragePass::Run(Compilation* compilation) {
  if (compilation->options.precision != Precision::kBf16) return false;
  const LogicalGraph& graph = compilation->graph;
  const proto::Job& job = compilation->job;
  const int64_t num_ops = static_cast<int64_t>(graph.ops.size());
  const std::vector<bool> forward = ForwardOps(graph);
  std::vector<Stored> stored;
  for (int64_t t = 0; t < static_cast<int64_t>(graph.tensors.size()); ++t) {
    Stored s;
    if (StoredActivation(graph, forward, t, &s)) stored.push_back(s);
  }
  if (stored.empty()) return false;

  // The new ops by position, and what each backward reader reads instead.
  std::vector<std::vector<proto::OpDef>> after(num_ops), before(num_ops);
  absl::flat_hash_map<std::string, const proto::TensorDef*> tensor_defs;
  for (const proto::TensorDef& def : job.tensors()) tensor_defs[def.name()] = &def;
  // Per op index, the tensor names its inputs are renamed from -> to.
  std::vector<std::vector<std::pair<std::string, std::string>>> renames(num_ops);
  absl::flat_hash_map<std::string, NdSbp> new_sbps;
  std::vector<proto::TensorDef> new_tensors;
  for (const Stored& s : stored) {
    const LogicalTensor& tensor = graph.tensors[s.tensor];
    const LogicalOp& producer = graph.ops[tensor.producer];
    const auto def = tensor_defs.find(tensor.name);
    if (def == tensor_defs.end()) {
      return absl::InternalError(absl::StrCat("activation_storage: tensor '", tensor.name, "' is not in the job"));
    }
    const std::string narrow = absl::StrCat(tensor.name, "/bf16");
    const std::string widen = absl::StrCat(tensor.name, "/f32");
    after[s.narrow_after].push_back(CastOp(narrow, tensor.name, DType::kBF16, *producer.def));
    before[s.widen_before].push_back(CastOp(widen, narrow, DType::kF32, *producer.def));
    new_tensors.push_back(CastTensor(narrow, DType::kBF16, *def->second));
    new_tensors.push_back(CastTensor(widen, DType::kF32, *def->second));
    new_sbps[narrow] = tensor.sbp;
    new_sbps[widen] = tensor.sbp;
    const int64_t placement = producer.placement;
    for (int64_t reader : tensor.consumers) {
      if (!forward[reader] && graph.ops[reader].placement == placement) {
        renames[reader].emplace_back(tensor.name, widen);
      }
    }
  }

  // The SBPs sbp_choice gave, by name, to carry over the re-indexing.
  absl::flat_hash_map<std::string, NdSbp> tensor_sbps;
  absl::flat_hash_map<std::string, std::pair<std::vector<NdSbp>, std::vector<NdSbp>>> op_sbps;
  for (const LogicalTensor& tensor : graph.tensors) tensor_sbps[tensor.name] = tensor.sbp;
  for (const LogicalOp& op : graph.ops) op_sbps[op.name] = {op.input_sbps, op.output_sbps};
  for (const auto& [name, sbp] : new_sbps) {
    tensor_sbps[name] = sbp;
    op_sbps[name] = {{sbp}, {sbp}};
  }

  proto::Job rewritten = job;
  rewritten.clear_ops();
  for (int64_t o = 0; o < num_ops; ++o) {
    for (proto::OpDef& cast : before[o]) *rewritten.add_ops() = std::move(cast);
    proto::OpDef* def = rewritten.add_ops();
    *def = *graph.ops[o].def;
    for (const auto& [from, to] : renames[o]) {
      for (auto& [arg, tensor] : *def->mutable_inputs()) {
        if (tensor == from) tensor = to;
      }
    }
    for (proto::OpDef& cast : after[o]) *rewritten.add_ops() = std::move(cast);
  }
  for (proto::TensorDef& tensor : new_tensors) *rewritten.add_tensors() = std::move(tensor);

  const std::vector<Placement> placements = graph.placements;
  compilation->job = std::move(rewritten);
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  LogicalGraph& indexed = compilation->graph;
  // The casts take their tensor's placement, so the placement table (which sbp_choice's
  // boxing cache refers to by index) is the one sbp_choice saw.
  if (indexed.placements != placements) {
    return absl::InternalError("activation_storage changed the job's placement table");
  }
  for (LogicalTensor& tensor : indexed.tensors) {
    auto found = tensor_sbps.find(tensor.name);
    if (found == tensor_sbps.end()) {
      return absl::InternalError(absl::StrCat("activation_storage: tensor '", tensor.name, "' has no SBP"));
    }
    tensor.sbp = found->second;
    tensor.sbp_chosen = true;
  }
  for (LogicalOp& op : indexed.ops) {
    auto found = op_sbps.find(op.name);
    if (found == op_sbps.end()) {
      return absl::InternalError(absl::StrCat("activation_storage: op '", op.name, "' has no SBP signature"));
    }
    op.input_sbps = found->second.first;
    op.output_sbps = found->second.second;
  }
  return true;
}

}  // namespace oneflow
