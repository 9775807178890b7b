#include "compiler/passes/precision_pass.h"

#include "compiler/compilation.h"
#include "oneflow_core/ops/attr.h"

namespace oneflow {

absl::StatusOr<bool> PrecisionPass::Run(Compilation* compilation) {
  if (compilation->options.precision != Precision::kBf16) return false;
  const LogicalGraph& graph = compilation->graph;
  bool changed = false;
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    const LogicalOp& op = graph.ops[o];
    if (op.type != "matmul" && op.type != "fused_matmul_bias") continue;
    // Products of f16 or bf16 tensors the user wrote keep their own dtype.
    if (graph.tensors[op.inputs[0]].type.dtype != DType::kF32) continue;
    proto::OpDef* def = compilation->job.mutable_ops(static_cast<int>(o));
    (*def->mutable_attrs())["compute_dtype"] = AttrToProto(AttrValue(std::string("bf16")));
    changed = true;
  }
  return changed;
}

}  // namespace oneflow
