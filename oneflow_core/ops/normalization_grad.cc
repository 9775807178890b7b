// Backward ops of the last-axis normalizations: softmax_grad, log_softmax_grad,
// layer_norm_grad, sparse_softmax_cross_entropy_grad. Like their forward ops they need
// the last axis whole; unlike them they are linear in the incoming gradient dy, so a
// partial dy against whole forward tensors gives partial results.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// (dy, y) -> dx, y the forward output.
absl::StatusOr<std::vector<TensorType>> InferSoftmaxGrad(const std::vector<TensorType>& inputs,
                                                         const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("dy", inputs[0], 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", inputs[0]));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("dy", inputs[0], "y", inputs[1]));
  return std::vector<TensorType>{inputs[0]};
}

std::vector<SbpSignature> SoftmaxGradSignatures(const std::vector<TensorType>& inputs,
                                                const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  return op_util::LinearInFirstSignatures(rank, 2, {rank - 1});
}

// layer_norm_grad(x [..., h], gamma [h], dy [..., h]) -> dx, dgamma [h], dbeta [h].
absl::StatusOr<std::vector<TensorType>> InferLayerNormGrad(const std::vector<TensorType>& inputs,
                                                           const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  const TensorType& gamma = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  const int64_t hidden = x.shape.dim(x.shape.rank() - 1);
  if (gamma.shape != Shape{hidden}) {
    return absl::InvalidArgumentError(absl::StrCat("gamma ", gamma.shape.ToString(),
                                                   " must be [", hidden,
                                                   "], the last dimension of x ",
                                                   x.shape.ToString()));
  }
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, "gamma", gamma));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("dy", inputs[2], "x", x));
  if (GetFloatAttr(attrs, "epsilon", 1e-5) <= 0) {
    return absl::InvalidArgumentError("attribute epsilon must be > 0");
  }
  return std::vector<TensorType>{x, gamma, gamma};
}

// Rows split: each device's dgamma/dbeta sums only its rows, a partial sum.
std::vector<SbpSignature> LayerNormGradSignatures(const std::vector<TensorType>& inputs,
                                                  const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  const Sbp P = Sbp::Partial();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    const Sbp S = Sbp::Split(axis);
    signatures.push_back({{S, B, S}, {S, P, P}});
  }
  signatures.push_back({{B, B, B}, {B, B, B}});
  signatures.push_back({{B, B, P}, {P, P, P}});
  return signatures;
}

// sparse_softmax_cross_entropy_grad(logits [..., c], labels [...], dy [...]) -> dlogits.
absl::StatusOr<std::vector<TensorType>> InferCrossEntropyGrad(
    const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& logits = inputs[0];
  const TensorType& labels = inputs[1];
  const TensorType& dy = inputs[2];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("logits", logits, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("logits", logits));
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("labels", labels));
  const std::vector<int64_t>& dims = logits.shape.dims();
  const Shape expected(std::vector<int64_t>(dims.begin(), dims.end() - 1));
  if (labels.shape != expected || dy.shape != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels ", labels.shape.ToString(), " and dy ", dy.shape.ToString(),
        " must have the shape of logits ", logits.shape.ToString(),
        " without its last (class) axis: ", expected.ToString()));
  }
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("logits", logits, "dy", dy));
  return std::vector<TensorType>{logits};
}

std::vector<SbpSignature> CrossEntropyGradSignatures(const std::vector<TensorType>& inputs,
                                                     const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    const Sbp S = Sbp::Split(axis);
    signatures.push_back({{S, S, S}, {S}});
  }
  signatures.push_back({{B, B, B}, {B}});
  signatures.push_back({{B, B, Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

}  // namespace

OpDefinition SoftmaxGradDefinition() {
  // dx = y * (dy - sum(dy * y, last axis)).
  return {"softmax_grad", {"dy", "y"}, {"dx"}, InferSoftmaxGrad, SoftmaxGradSignatures,
          "softmax_grad"};
}

OpDefinition LogSoftmaxGradDefinition() {
  // dx = dy - exp(y) * sum(dy, last axis).
  return {"log_softmax_grad", {"dy", "y"}, {"dx"}, InferSoftmaxGrad, SoftmaxGradSignatures,
          "log_softmax_grad"};
}

OpDefinition LayerNormGradDefinition() {
  return {"layer_norm_grad",          {"x", "gamma", "dy"},    {"dx", "dgamma", "dbeta"},
          InferLayerNormGrad,         LayerNormGradSignatures, "layer_norm_grad"};
}

OpDefinition SparseSoftmaxCrossEntropyGradDefinition() {
  // dlogits = (softmax(logits) - one_hot(labels)) * dy.
  return {"sparse_softmax_cross_entropy_grad",
          {"logits", "labels", "dy"},
          {"dlogits"},
          InferCrossEntropyGrad,
          CrossEntropyGradSignatures,
          "sparse_softmax_cross_entropy_grad"};
}

}  // namespace oneflow
