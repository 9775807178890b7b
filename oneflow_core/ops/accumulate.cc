// accumulate(x; micro_batches): the gradient accumulator of micro-batched training
// (Job.micro_batches). It runs once per micro-batch and its output holds one value per
// iteration: the mean over the iteration's micro-batches of x,
//   out = (x_0 + x_1 + ... + x_{M-1}) / M,   M = micro_batches,
// where x_m is its input on micro-batch m (the kernel sees m as step mod M). The compiler's
// gradient_accumulation pass puts one between every gradient and its optimizer update,
// so the gradient's boxing (all-reduce, reduce-scatter) runs once per iteration on the
// accumulated value. Linear, so every SBP passes through unchanged, P included.
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {

OpDefinition AccumulateDefinition() {
  return {"accumulate",
          {"x"},
          {"out"},
          [](const std::vector<TensorType>& inputs, const AttrMap& attrs)
              -> absl::StatusOr<std::vector<TensorType>> {
            OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
            if (GetIntAttr(attrs, "micro_batches", 1) < 1) {
              return absl::InvalidArgumentError("accumulate: micro_batches must be >= 1");
            }
            return inputs;
          },
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/true);
          },
          "accumulate"};
}

}  // namespace oneflow
