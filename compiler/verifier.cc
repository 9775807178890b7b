#include "compiler/verifier.h"

#include "absl/strings/str_cat.h"
#include "compiler/ring_shift.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

absl::Status VerifyLogicalGraph(const LogicalGraph& graph) {
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    const LogicalOp& op = graph.ops[o];
    for (int64_t t : op.inputs) {
      const LogicalTensor& tensor = graph.tensors[t];
      if (tensor.kind == LogicalTensor::Kind::kOpOutput && tensor.producer >= static_cast<int64_t>(o)) {
        return absl::InternalError(absl::StrCat("op '", op.name, "' reads '", tensor.name,
                                                "' before its producer runs"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerifySbps(const LogicalGraph& graph) {
  for (const LogicalTensor& tensor : graph.tensors) {
    if (!tensor.sbp_chosen) {
      return absl::InternalError(absl::StrCat("tensor '", tensor.name, "' has no SBP"));
    }
    OF_RETURN_IF_ERROR(CheckNdSbpFits(tensor.type.shape, tensor.sbp,
                                      graph.placements[tensor.placement].hierarchy()));
  }
  for (const LogicalOp& op : graph.ops) {
    const int64_t axes = graph.placements[op.placement].hierarchy().rank();
    if (op.input_sbps.size() != op.inputs.size() || op.output_sbps.size() != op.outputs.size()) {
      return absl::InternalError(absl::StrCat("op '", op.name, "' has no complete SBP signature"));
    }
    for (const auto* list : {&op.input_sbps, &op.output_sbps}) {
      for (const NdSbp& sbp : *list) {
        if (sbp.size() != axes) {
          return absl::InternalError(absl::StrCat("op '", op.name, "' has SBP ", sbp.ToString(),
                                                  " on a placement with ", axes, " axes"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyBoxings(const Compilation& compilation) {
  const LogicalGraph& graph = compilation.graph;
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    const LogicalOp& op = graph.ops[o];
    OF_ASSIGN_OR_RETURN(const int64_t input_placement, InputPlacementOf(compilation, static_cast<int64_t>(o)));
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const LogicalTensor& tensor = graph.tensors[op.inputs[k]];
      const int64_t b = op.input_boxings[k];
      if (b < 0) {
        if (tensor.placement != input_placement ||
            !SameLayout(tensor.sbp, op.input_sbps[k], graph.placements[op.placement].hierarchy())) {
          return absl::InternalError(absl::StrCat("op '", op.name, "' reads '", tensor.name, "' as ",
                                                  tensor.sbp.ToString(), " but needs ",
                                                  op.input_sbps[k].ToString(), " and has no boxing"));
        }
        continue;
      }
      const Boxing& boxing = compilation.boxings[b];
      if (boxing.tensor != op.inputs[k] || boxing.dst_sbp != op.input_sbps[k] ||
          boxing.dst_placement != input_placement) {
        return absl::InternalError(absl::StrCat("op '", op.name, "' reads '", tensor.name,
                                                "' through boxing ", b, ", which produces another layout"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

VerifierChecks& VerifierChecks::operator|=(const VerifierChecks& other) {
  sbps = sbps || other.sbps;
  boxings = boxings || other.boxings;
  plan_structure = plan_structure || other.plan_structure;
  collective_order = collective_order || other.collective_order;
  memory = memory || other.memory;
  return *this;
}

absl::Status VerifyCompilation(const Compilation& compilation, const VerifierChecks& checks) {
  const LogicalGraph& graph = compilation.graph;
  OF_RETURN_IF_ERROR(VerifyLogicalGraph(graph));
  if (checks.sbps) OF_RETURN_IF_ERROR(VerifySbps(graph));
  if (checks.boxings) OF_RETURN_IF_ERROR(VerifyBoxings(compilation));
  if (checks.plan_structure) OF_RETURN_IF_ERROR(VerifyPlanStructure(compilation.plan));
  if (checks.collective_order) OF_RETURN_IF_ERROR(VerifyCollectiveOrder(compilation.plan));
  if (checks.memory) OF_RETURN_IF_ERROR(VerifyMemory(compilation.plan));
  return absl::OkStatus();
}

PlanChecks PlanChecksOf(const VerifierChecks& checks) {
  PlanChecks plan;
  plan.collective_order = checks.collective_order;
  plan.memory = checks.memory;
  return plan;
}

}  // namespace oneflow
