// Backward ops of the elementwise activations: relu_grad, gelu_grad, dropout_grad.
// Each is linear in the incoming gradient dy, so besides matching splits a partial dy
// against a whole forward tensor gives a partial dx.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// (dy, forward tensor) -> dx: both floating and of one type.
InferFn InferGradOfUnary(std::string forward_arg) {
  return [forward_arg](const std::vector<TensorType>& inputs,
                       const AttrMap&) -> absl::StatusOr<std::vector<TensorType>> {
    OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", inputs[0]));
    OF_RETURN_IF_ERROR(op_util::ExpectSameType("dy", inputs[0], forward_arg, inputs[1]));
    return std::vector<TensorType>{inputs[0]};
  };
}

std::vector<SbpSignature> BinaryLinearInDy(const std::vector<TensorType>& inputs,
                                           const AttrMap&) {
  return op_util::LinearInFirstSignatures(inputs[0].shape.rank(), 2);
}

absl::StatusOr<std::vector<TensorType>> InferDropoutGrad(const std::vector<TensorType>& inputs,
                                                         const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", inputs[0]));
  const double rate = GetFloatAttr(attrs, "rate", 0.0);
  if (rate < 0.0 || rate >= 1.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute rate=", rate, " is out of range; valid: 0 <= rate < 1"));
  }
  return inputs;
}

}  // namespace

OpDefinition ReluGradDefinition() {
  // dx = dy where the forward output y > 0, else 0.
  return {"relu_grad", {"dy", "y"}, {"dx"}, InferGradOfUnary("y"), BinaryLinearInDy,
          "relu_grad"};
}

OpDefinition GeluGradDefinition() {
  // dx = dy * gelu'(x), x the forward input (gelu is not invertible from its output).
  return {"gelu_grad", {"dy", "x"}, {"dx"}, InferGradOfUnary("x"), BinaryLinearInDy,
          "gelu_grad"};
}

OpDefinition DropoutGradDefinition() {
  // With the forward op's rate and seed the mask is the same function of (seed,
  // iteration, logical index), so dx = dy * mask / (1 - rate) needs no saved mask and
  // commutes with summation like dropout itself.
  return {"dropout_grad",
          {"dy"},
          {"dx"},
          InferDropoutGrad,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/true);
          },
          "dropout_grad"};
}

}  // namespace oneflow
