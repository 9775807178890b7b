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

// The whole ring's backward (Megatron's context parallelism): k and v travel the ring again
// with their gradients alongside. At step t a device holds K/V block r - t and the
// gradient so far of that block; it adds this step's dq, dk and dv (ring_attention_grad
// against the MERGED out and its gradient: the probabilities over every key, so each
// step's share of the whole softmax's gradient), then passes k, v, dk and dv one block
// on. After the last step one more shift brings dk and dv home (blocks shifts in all).
// Nothing of the forward's steps is read: no gradient reaches `out`'s producers.
std::vector<Tensor> RingAttentionResultGradient(const GradientContext& ctx) {
  const AttrMap& attrs = *ctx.attrs;
  const Tensor& q = ctx.inputs[1];
  const Tensor& out = ctx.outputs[0];
  const Tensor& dout = ctx.output_grads[0];
  const int64_t axis = GetIntAttr(attrs, "axis", 0);
  const double scale = GetFloatAttr(attrs, "scale", 1.0);
  const bool zigzag = GetBoolAttr(attrs, "zigzag", false);
  const int64_t blocks = ctx.inputs[2].shape().dim(axis);
  auto pass_on = [&](Tensor t) { return RingShift(t, axis, blocks, 1, ctx.location); };
  Tensor k = ctx.inputs[2], v = ctx.inputs[3], dq, dk, dv;
  for (int64_t t = 0; t < blocks; ++t) {
    if (t > 0) {
      k = pass_on(k);
      v = pass_on(v);
      dk = pass_on(dk);
      dv = pass_on(dv);
    }
    auto grad = [&](int64_t wrt) {
      return RingAttentionStepGrad(q, k, v, out, dout, axis, t, scale, zigzag, wrt, ctx.location);
    };
    dq = t == 0 ? grad(0) : Add(dq, grad(0), ctx.location);
    dk = t == 0 ? grad(1) : Add(dk, grad(1), ctx.location);
    dv = t == 0 ? grad(2) : Add(dv, grad(2), ctx.location);
  }
  if (blocks > 1) {
    dk = pass_on(dk);
    dv = pass_on(dv);
  }
  return {Tensor(), dq, dk, dv};
}

std::vector<Tensor> SiluGradient(const GradientContext& ctx) {
  return {SiluGrad(ctx.output_grads[0], ctx.inputs[0], ctx.location)};
}

}  // namespace gradients
}  // namespace oneflow
