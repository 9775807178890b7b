// Gradients of Llama's ops (docs/llama.md): rms_norm reads its input back, silu its
// input, and rotary_embedding's gradient is the inverse rotation of dy (a rotation's
// transpose is its inverse), so it keeps nothing of the forward pass.
#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {

std::vector<Tensor> RmsNormGradient(const GradientContext& ctx) {
  const RmsNormGrads grads = RmsNormGrad(ctx.inputs[0], ctx.inputs[1], ctx.output_grads[0],
                                         GetFloatAttr(*ctx.attrs, "epsilon", 1e-6), ctx.location);
  return {grads.dx, grads.dgamma};
}

std::vector<Tensor> RotaryEmbeddingGradient(const GradientContext& ctx) {
  return {ZigZagRotaryEmbedding(ctx.output_grads[0], GetFloatAttr(*ctx.attrs, "base", 10000.0),
                                GetIntAttr(*ctx.attrs, "zigzag_blocks", 0), !GetBoolAttr(*ctx.attrs, "inverse", false),
                                ctx.location)};
}

// Blocks passed `shift` places on around the ring come back the other way.
std::vector<Tensor> RingShiftGradient(const GradientContext& ctx) {
  return {RingShift(ctx.output_grads[0], GetIntAttr(*ctx.attrs, "axis", 0), GetIntAttr(*ctx.attrs, "blocks", 1),
                    -GetIntAttr(*ctx.attrs, "shift", 1), ctx.location)};
}

// Masked entries are constants: their gradient is zero, the rest pass through.
std::vector<Tensor> RingCausalMaskGradient(const GradientContext& ctx) {
  return {RingCausalMask(ctx.output_grads[0], GetIntAttr(*ctx.attrs, "axis", 0), GetIntAttr(*ctx.attrs, "step", 0),
                         /*fill=*/0.0, ctx.location)};
}

// Recomputes the step's probabilities from its saved log-sum-exp (the out's last column);
// one op per input gradient, each skipping what the forward skipped.
std::vector<Tensor> RingAttentionGradient(const GradientContext& ctx) {
  const AttrMap& attrs = *ctx.attrs;
  std::vector<Tensor> grads;
  for (int64_t wrt = 0; wrt < 3; ++wrt) {
    grads.push_back(RingAttentionStepGrad(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[0],
                                          ctx.output_grads[0], GetIntAttr(attrs, "axis", 0),
                                          GetIntAttr(attrs, "step", 0), GetFloatAttr(attrs, "scale", 1.0),
                                          GetBoolAttr(attrs, "zigzag", false), wrt, ctx.location));
  }
  return grads;
}

std::vector<Tensor> SiluGradient(const GradientContext& ctx) {
  return {SiluGrad(ctx.output_grads[0], ctx.inputs[0], ctx.location)};
}

}  // namespace gradients
}  // namespace oneflow
