#include "compiler/passes/shape_inference_pass.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

std::string TypeText(const proto::TensorDef& def) {
  absl::StatusOr<DType> dtype = FromProto(def.dtype());
  Shape shape(std::vector<int64_t>(def.shape().begin(), def.shape().end()));
  return absl::StrCat(dtype.ok() ? DTypeName(*dtype) : "invalid", shape.ToString());
}

// Every device of `placement` must exist in the cluster.
absl::Status CheckInCluster(const Placement& placement, const Placement& cluster,
                            const std::string& tensor) {
  for (const DeviceId& device : placement.devices()) {
    if (cluster.RankOf(device) < 0 || placement.device_type() != cluster.device_type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "placement ", placement.ToString(), " of tensor '", tensor, "' uses device ",
          DeviceTypeName(placement.device_type()), " ", device.ToString(),
          ", which is not in the cluster ", cluster.ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> ShapeInferencePass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  // Rebuilding through the DSL re-runs every op's inference with the user's op names and
  // source lines in its errors.
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(job));
  OF_ASSIGN_OR_RETURN(proto::Job rebuilt, graph->Build());
  for (int i = 0; i < job.tensors_size(); ++i) {
    const proto::TensorDef& recorded = job.tensors(i);
    Tensor inferred = graph->FindTensor(recorded.name());
    if (!inferred.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", recorded.name(), "' is neither an input, a variable nor an op output"));
    }
    const proto::TensorDef& def = rebuilt.tensors(inferred.id());
    if (TypeText(def) != TypeText(recorded)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", recorded.name(), "' is recorded as ", TypeText(recorded),
          " but inference gives ", TypeText(def)));
    }
  }
  if (job.has_optimizer() && job.loss().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", job.name(), "' has an optimizer but no loss; call Graph::SetLoss"));
  }
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  const LogicalGraph& logical = compilation->graph;
  for (const Placement& placement : logical.placements) {
    for (const LogicalTensor& tensor : logical.tensors) {
      if (logical.placements[tensor.placement] == placement) {
        OF_RETURN_IF_ERROR(CheckInCluster(placement, compilation->cluster_placement, tensor.name));
        break;
      }
    }
  }
  for (const LogicalTensor& tensor : logical.tensors) {
    if (!tensor.hint) continue;
    const Placement& placement = logical.placements[tensor.placement];
    if (tensor.hint->size() != placement.hierarchy().rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sbp hint ", tensor.hint->ToString(), " of tensor '", tensor.name, "' has ",
          tensor.hint->size(), " axes but its placement ", placement.ToString(), " has ",
          placement.hierarchy().rank(), "; give one SBP per hierarchy axis"));
    }
    if (tensor.kind == LogicalTensor::Kind::kVariable) {
      // A variable holds one value that the devices store (initialize, update in place,
      // checkpoint) as slices or copies; a partial sum is what an op produces, not a way
      // to store a value.
      for (int64_t axis = 0; axis < tensor.hint->size(); ++axis) {
        if (!tensor.hint->at(axis).is_partial()) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "sbp hint ", tensor.hint->ToString(), " of variable '", tensor.name, "' is partial (P) on axis ", axis,
            ": a variable is stored whole or in slices; give B or S(i) on every axis"));
      }
    }
    absl::Status fits = CheckNdSbpFits(tensor.type.shape, *tensor.hint, placement.hierarchy());
    if (!fits.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sbp hint of tensor '", tensor.name, "': ", fits.message()));
    }
  }
  return false;
}

}  // namespace oneflow
