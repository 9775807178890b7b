// Ops normalizing over the last axis: softmax, log_softmax, layer_norm, and the
// sparse softmax cross-entropy loss. None of them commutes with a partial sum, and the
// last axis must be whole on every device.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferSoftmax(const std::vector<TensorType>& inputs,
                                                     const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", inputs[0], 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  return inputs;
}

std::vector<SbpSignature> LastAxisWholeSignatures(const std::vector<TensorType>& inputs,
                                                  const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  return op_util::UnarySignatures(rank, /*linear=*/false, {rank - 1});
}

// layer_norm(x [..., h], gamma [h], beta [h]) normalizes over the last axis.
absl::StatusOr<std::vector<TensorType>> InferLayerNorm(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  const int64_t hidden = x.shape.dim(x.shape.rank() - 1);
  const char* names[] = {"x", "gamma", "beta"};
  for (int i = 1; i < 3; ++i) {
    if (inputs[i].shape != Shape{hidden}) {
      return absl::InvalidArgumentError(absl::StrCat(
          names[i], " ", inputs[i].shape.ToString(), " must be [", hidden,
          "], the last dimension of x ", x.shape.ToString()));
    }
    OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, names[i], inputs[i]));
  }
  if (GetFloatAttr(attrs, "epsilon", 1e-5) <= 0) {
    return absl::InvalidArgumentError("attribute epsilon must be > 0");
  }
  return std::vector<TensorType>{x};
}

std::vector<SbpSignature> LayerNormSignatures(const std::vector<TensorType>& inputs,
                                              const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({{Sbp::Split(axis), B, B}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{B, B, B}, {B}});
  return signatures;
}

// sparse_softmax_cross_entropy(logits [..., c], labels [...] i32/i64) -> loss [...].
absl::StatusOr<std::vector<TensorType>> InferCrossEntropy(const std::vector<TensorType>& inputs,
                                                          const AttrMap&) {
  const TensorType& logits = inputs[0];
  const TensorType& labels = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("logits", logits, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("logits", logits));
  if (labels.dtype != DType::kI32 && labels.dtype != DType::kI64) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels must be i32 or i64 class indices, got ", labels.ToString()));
  }
  const std::vector<int64_t>& dims = logits.shape.dims();
  const Shape expected(std::vector<int64_t>(dims.begin(), dims.end() - 1));
  if (labels.shape != expected) {
    return absl::InvalidArgumentError(absl::StrCat("labels ", labels.shape.ToString(),
                                                   " must have the shape of logits ",
                                                   logits.shape.ToString(),
                                                   " without its last (class) axis: ",
                                                   expected.ToString()));
  }
  return std::vector<TensorType>{{expected, logits.dtype}};
}

std::vector<SbpSignature> CrossEntropySignatures(const std::vector<TensorType>& inputs,
                                                 const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({{Sbp::Split(axis), Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}});
  return signatures;
}

}  // namespace

OpDefinition SoftmaxDefinition() {
  return {"softmax", {"x"}, {"out"}, InferSoftmax, LastAxisWholeSignatures, "softmax"};
}

OpDefinition LogSoftmaxDefinition() {
  return {"log_softmax", {"x"}, {"out"}, InferSoftmax, LastAxisWholeSignatures, "log_softmax"};
}

OpDefinition LayerNormDefinition() {
  return {"layer_norm", {"x", "gamma", "beta"}, {"out"}, InferLayerNorm, LayerNormSignatures,
          "layer_norm"};
}

OpDefinition SparseSoftmaxCrossEntropyDefinition() {
  return {"sparse_softmax_cross_entropy",
          {"logits", "labels"},
          {"out"},
          InferCrossEntropy,
          CrossEntropySignatures,
          "sparse_softmax_cross_entropy"};
}

}  // namespace oneflow
