// Gradients of ops, written in the DSL itself.
//
// The compiler's autograd pass rebuilds the job as a Graph (Graph::FromJob), walks the
// forward ops in reverse, and for each op calls its GradientFn with DSL tensors for the
// op's inputs, outputs and the gradients flowing into its outputs. The function adds
// ordinary ops (matmul, mul, reduce_sum, relu_grad, ...) to the same graph and returns one
// gradient per input. Backward ops are therefore ordinary ops: they get shape inference,
// SBP signatures, boxing and kernels like any other.
//
//   // matmul: out = a . b   =>   da = dout . b^T,   db = a^T . dout
//   std::vector<Tensor> MatMulGradient(const GradientContext& ctx) {
//     Tensor dout = ctx.output_grads[0];
//     return {MatMul(dout, ctx.inputs[1], false, true, ctx.location),
//             MatMul(ctx.inputs[0], dout, true, false, ctx.location)};
//   }
//
// The set of gradients is an explicit list (gradient_registry.cc), like the op registry.
#ifndef ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_H_
#define ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/source_location.h"

namespace oneflow {

struct GradientContext {
  // The forward op, as the graph holds it.
  std::string op_name;
  std::string op_type;
  const AttrMap* attrs = nullptr;
  // The forward op's source line: backward ops report errors at the user's line.
  SourceLocation location;
  // In the order of OpDefinition::inputs / outputs.
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  // d(loss)/d(output i); an invalid Tensor where no gradient reaches that output.
  // At least one is valid when the function is called.
  std::vector<Tensor> output_grads;
};

// One entry per forward input: d(loss)/d(input), with the input's exact type, or an
// invalid Tensor where no gradient exists (integer inputs such as labels and ids).
// Errors are recorded in the graph like any DSL error.
using GradientFn = std::function<std::vector<Tensor>(const GradientContext&)>;

// The gradient of op type `type`, or nullptr when the op has none (optimizer updates,
// ops whose inputs are all integers).
const GradientFn* FindGradient(absl::string_view type);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_H_
