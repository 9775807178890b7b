#include "compiler/passes/precision_pass.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "compiler/compilation.h"
#include "oneflow_core/ops/attr.h"

namespace oneflow {

absl::StatusOr<bool> PrecisionPass::Run(Compilation* compilation) {
  if (compilation->options.precision != Precision::kBf16) return false;
  const LogicalGraph& graph = compilation->graph;
  absl::flat_hash_map<std::string, proto::OpDef*> defs;
  for (proto::OpDef& def : *compilation->job.mutable_ops()) defs[def.name()] = &def;
  bool changed = false;
  for (const LogicalOp& op : graph.ops) {
    if (op.type != "matmul" && op.type != "fused_matmul_bias") continue;
    // Products of f16 or bf16 tensors the user wrote keep their own dtype.
    if (graph.tensors[op.inputs[0]].type.dtype != DType::kF32) continue;
    const auto def = defs.find(op.name);
    if (def == defs.end()) {
      return absl::InternalError(absl::StrCat("precision: op '", op.name, "' of the graph is not in the job"));
    }
    (*def->second->mutable_attrs())["compute_dtype"] = AttrToProto(AttrValue(std::string("bf16")));
    changed = true;
  }
  return changed;
}

}  // namespace oneflow
