// Gradients of the last-axis normalizations: each is one backward op reading what the
// forward op produced (softmax and log_softmax their outputs, layer_norm its input).
#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {

std::vector<Tensor> SoftmaxGradient(const GradientContext& ctx) {
  return {SoftmaxGrad(ctx.output_grads[0], ctx.outputs[0], ctx.location)};
}

std::vector<Tensor> LogSoftmaxGradient(const GradientContext& ctx) {
  return {LogSoftmaxGrad(ctx.output_grads[0], ctx.outputs[0], ctx.location)};
}

std::vector<Tensor> LayerNormGradient(const GradientContext& ctx) {
  const LayerNormGrads grads =
      LayerNormGrad(ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0],
                    GetFloatAttr(*ctx.attrs, "epsilon", 1e-5), ctx.location);
  return {grads.dx, grads.dgamma, grads.dbeta};
}

// Labels are class indices: no gradient.
std::vector<Tensor> SparseSoftmaxCrossEntropyGradient(const GradientContext& ctx) {
  return {SparseSoftmaxCrossEntropyGrad(ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0],
                                        ctx.location),
          Tensor()};
}

}  // namespace gradients
}  // namespace oneflow
