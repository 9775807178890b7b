// silu(x) = x * sigmoid(x) (SwiGLU's gate activation: swiglu(gate, up) = silu(gate) * up,
// composed in the DSL from silu and mul) and its backward op silu_grad(dy, x).
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferSilu(const std::vector<TensorType>& inputs,
                                                  const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  return inputs;
}

absl::StatusOr<std::vector<TensorType>> InferSiluGrad(const std::vector<TensorType>& inputs,
                                                      const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", inputs[0]));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("dy", inputs[0], "x", inputs[1]));
  return std::vector<TensorType>{inputs[0]};
}

}  // namespace

OpDefinition SiluDefinition() {
  return {"silu", {"x"}, {"out"}, InferSilu,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/false);
          },
          "silu"};
}

OpDefinition SiluGradDefinition() {
  // dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x): linear in dy.
  return {"silu_grad", {"dy", "x"}, {"dx"}, InferSiluGrad,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::LinearInFirstSignatures(inputs[0].shape.rank(), 2);
          },
          "silu_grad"};
}

}  // namespace oneflow
