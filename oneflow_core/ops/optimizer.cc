// Optimizer updates: ops with no outputs that update the parameter and its optimizer
// state in place (OpDefinition::updated_inputs). The compiler's optimizer pass adds one
// per trainable variable after the backward ops.
//
//   sgd_update(param, grad, momentum; momentum):
//     momentum <- momentum_factor * momentum + grad;  param <- param - lr * momentum
//   adamw_update(param, grad, m, v; beta1, beta2, epsilon, weight_decay), t = step + 1:
//     param <- param * (1 - lr * weight_decay)          (decoupled decay, Loshchilov-Hutter)
//     m <- beta1 m + (1 - beta1) grad;  v <- beta2 v + (1 - beta2) grad^2
//     param <- param - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
//   with variance_frozen_from = F > 0 (1-bit Adam's frozen variance, Tang et al. 2021;
//   default 0: never), from step F on v is left as it is and bias-corrected as at t = F:
//     param <- param - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^F)) + epsilon)
//   so the step is linear in the gradient, the property error feedback on compressed
//   gradients needs (docs/sbp_and_boxing.md, "Error feedback under AdamW"). v is the same
//   state as before, checkpointed as before; the switch is by the absolute step.
// lr comes from the schedule attributes (learning_rate.h) at the iteration the runtime
// passes the kernel.
//
// Out-of-place twins, for updates that run on a copy of the parameter (a shard of a
// replicated parameter under ZeRO stages 1 and 2, docs/zero.md): ordinary ops whose
// outputs are the new values, followed by `assign`s that write them into the variables.
//   sgd_step(param, grad, momentum) -> (new_param, new_momentum)
//   adamw_step(param, grad, m, v) -> (new_param, new_m, new_v)
//   assign(ref, value; ref):  ref <- value   (an update: no outputs, ref in place)
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/learning_rate.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::Status ExpectFactor(const AttrMap& attrs, const std::string& name, double fallback) {
  const double value = GetFloatAttr(attrs, name, fallback);
  if (value >= 0.0 && value < 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("attribute ", name, "=", value, " is out of range; valid: 0 <= ", name, " < 1"));
}

// Every tensor is elementwise state of the parameter: the same type as param.
absl::Status ExpectParamShaped(const std::vector<std::string>& names,
                               const std::vector<TensorType>& inputs) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating(names[0], inputs[0]));
  for (size_t i = 1; i < inputs.size(); ++i) {
    OF_RETURN_IF_ERROR(op_util::ExpectSameType(names[i], inputs[i], names[0], inputs[0]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferSgdUpdate(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(ExpectParamShaped({"param", "grad", "momentum"}, inputs));
  OF_RETURN_IF_ERROR(ExpectFactor(attrs, "momentum", 0.0));
  OF_RETURN_IF_ERROR(CheckLearningRateAttrs(attrs));
  return std::vector<TensorType>{};
}

absl::StatusOr<std::vector<TensorType>> InferAdamWUpdate(const std::vector<TensorType>& inputs,
                                                         const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(ExpectParamShaped({"param", "grad", "m", "v"}, inputs));
  OF_RETURN_IF_ERROR(ExpectFactor(attrs, "beta1", 0.9));
  OF_RETURN_IF_ERROR(ExpectFactor(attrs, "beta2", 0.999));
  if (!(GetFloatAttr(attrs, "epsilon", 1e-8) > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute epsilon=", GetFloatAttr(attrs, "epsilon", 1e-8), " must be > 0"));
  }
  if (!(GetFloatAttr(attrs, "weight_decay", 0.0) >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute weight_decay=", GetFloatAttr(attrs, "weight_decay", 0.0), " must be >= 0"));
  }
  if (GetIntAttr(attrs, "variance_frozen_from", 0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute variance_frozen_from=",
                                                   GetIntAttr(attrs, "variance_frozen_from", 0),
                                                   " must be >= 0 (0: never frozen)"));
  }
  OF_RETURN_IF_ERROR(CheckLearningRateAttrs(attrs));
  return std::vector<TensorType>{};
}

// The update is elementwise, so any common split works; a partial gradient must be
// reduced first (the update is not linear in it once momentum or Adam's moments are
// involved, and a partial parameter would be meaningless).
std::vector<SbpSignature> UpdateSignatures(const std::vector<TensorType>& inputs,
                                           const AttrMap&) {
  const size_t n = inputs.size();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < inputs[0].shape.rank(); ++axis) {
    signatures.push_back({std::vector<Sbp>(n, Sbp::Split(axis)), {}});
  }
  signatures.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {}});
  return signatures;
}

// The out-of-place steps: the checks of the in-place update, one output per value it
// would have written, typed like the parameter.
absl::StatusOr<std::vector<TensorType>> InferSgdStep(const std::vector<TensorType>& inputs,
                                                     const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(InferSgdUpdate(inputs, attrs).status());
  return std::vector<TensorType>(2, inputs[0]);
}

absl::StatusOr<std::vector<TensorType>> InferAdamWStep(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(InferAdamWUpdate(inputs, attrs).status());
  return std::vector<TensorType>(3, inputs[0]);
}

// As UpdateSignatures, every output laid out like the inputs.
std::vector<SbpSignature> StepSignatures(const std::vector<TensorType>& inputs,
                                         const AttrMap& attrs) {
  const size_t outputs = inputs.size() - 1;  // Every input but the gradient.
  std::vector<SbpSignature> signatures = UpdateSignatures(inputs, attrs);
  for (SbpSignature& signature : signatures) {
    signature.outputs.assign(outputs, signature.inputs[0]);
  }
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferAssign(const std::vector<TensorType>& inputs,
                                                    const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("value", inputs[1], "ref", inputs[0]));
  return std::vector<TensorType>{};
}

}  // namespace

OpDefinition SgdStepDefinition() {
  return {"sgd_step", {"param", "grad", "momentum"}, {"new_param", "new_momentum"},
          InferSgdStep, StepSignatures, "sgd_step"};
}

OpDefinition AdamWStepDefinition() {
  return {"adamw_step", {"param", "grad", "m", "v"}, {"new_param", "new_m", "new_v"},
          InferAdamWStep, StepSignatures, "adamw_step"};
}

OpDefinition AssignDefinition() {
  // Elementwise: ref and value in the same layout (S(i) or B; never P).
  OpDefinition definition{"assign", {"ref", "value"}, {}, InferAssign, UpdateSignatures,
                          "assign"};
  definition.updated_inputs = {"ref"};
  return definition;
}

OpDefinition SgdUpdateDefinition() {
  OpDefinition definition{"sgd_update", {"param", "grad", "momentum"}, {}, InferSgdUpdate,
                          UpdateSignatures, "sgd_update"};
  definition.updated_inputs = {"param", "momentum"};
  return definition;
}

OpDefinition AdamWUpdateDefinition() {
  OpDefinition definition{"adamw_update", {"param", "grad", "m", "v"}, {}, InferAdamWUpdate,
                          UpdateSignatures, "adamw_update"};
  definition.updated_inputs = {"param", "m", "v"};
  return definition;
}

}  // namespace oneflow
