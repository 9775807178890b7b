// rms_norm and its backward op rms_norm_grad (Llama's normalization): each row of the last
// axis scaled by the reciprocal of its root mean square, then by gamma. Like layer_norm the
// last axis must be whole on every device; unlike it there is no mean to subtract and no
// beta.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// x [..., h] and gamma [h] of one floating dtype; epsilon > 0.
absl::Status CheckRmsNormArguments(const TensorType& x, const TensorType& gamma,
                                   const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  const int64_t hidden = x.shape.dim(x.shape.rank() - 1);
  if (gamma.shape != Shape{hidden}) {
    return absl::InvalidArgumentError(absl::StrCat("gamma ", gamma.shape.ToString(), " must be [",
                                                   hidden, "], the last dimension of x ",
                                                   x.shape.ToString()));
  }
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, "gamma", gamma));
  const double epsilon = GetFloatAttr(attrs, "epsilon", 1e-6);
  if (!(epsilon > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute epsilon=", epsilon, " must be > 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferRmsNorm(const std::vector<TensorType>& inputs,
                                                     const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(CheckRmsNormArguments(inputs[0], inputs[1], attrs));
  return std::vector<TensorType>{inputs[0]};
}

// Rows split on any axis but the last, gamma whole; or everything whole. The output is
// linear in gamma, so a partial gamma against a whole x gives a partial output.
std::vector<SbpSignature> RmsNormSignatures(const std::vector<TensorType>& inputs,
                                            const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({{Sbp::Split(axis), B}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{B, B}, {B}});
  signatures.push_back({{B, Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

// rms_norm_grad(x [..., h], gamma [h], dy [..., h]) -> dx, dgamma [h].
absl::StatusOr<std::vector<TensorType>> InferRmsNormGrad(const std::vector<TensorType>& inputs,
                                                         const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(CheckRmsNormArguments(inputs[0], inputs[1], attrs));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("dy", inputs[2], "x", inputs[0]));
  return std::vector<TensorType>{inputs[0], inputs[1]};
}

// Rows split: each device's dgamma sums only its rows, a partial sum. Linear in dy.
std::vector<SbpSignature> RmsNormGradSignatures(const std::vector<TensorType>& inputs,
                                                const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  const Sbp P = Sbp::Partial();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    const Sbp S = Sbp::Split(axis);
    signatures.push_back({{S, B, S}, {S, P}});
  }
  signatures.push_back({{B, B, B}, {B, B}});
  signatures.push_back({{B, B, P}, {P, P}});
  return signatures;
}

}  // namespace

OpDefinition RmsNormDefinition() {
  // out = x / sqrt(mean(x^2, last axis) + epsilon) * gamma; epsilon defaults to 1e-6.
  return {"rms_norm", {"x", "gamma"}, {"out"}, InferRmsNorm, RmsNormSignatures, "rms_norm"};
}

OpDefinition RmsNormGradDefinition() {
  // With r = 1 / sqrt(mean(x^2) + epsilon), xhat = x * r, g = dy * gamma:
  // dx = r * (g - xhat * mean(g * xhat)), dgamma = sum over rows of dy * xhat.
  return {"rms_norm_grad",  {"x", "gamma", "dy"},   {"dx", "dgamma"},
          InferRmsNormGrad, RmsNormGradSignatures, "rms_norm_grad"};
}

}  // namespace oneflow
