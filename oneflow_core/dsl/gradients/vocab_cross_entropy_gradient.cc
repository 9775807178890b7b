// Gradients of the vocab-parallel cross-entropy's ops (oneflow_core/ops/vocab_cross_entropy.cc).
// reduce_max has none: its only use is the shift, which cancels in the loss.
#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {

// d log(x) = dy / x.
std::vector<Tensor> LogGradient(const GradientContext& ctx) {
  return {Div(ctx.output_grads[0], ctx.inputs[0], ctx.location)};
}

// d sum_exp / d logits_j = exp(logits_j - shift), d target / d logits_j = [j == label],
// local to each slice of the class axis. The shift gets no gradient: in the loss
// log(sum_exp) - target its two paths cancel exactly (d/dshift = -1 + 1), so treating it
// as a constant gives the loss's true gradient without a max all-reduce in the backward.
// An output no gradient reaches contributes zero.
std::vector<Tensor> VocabCrossEntropyGradient(const GradientContext& ctx) {
  Tensor dsum_exp = ctx.output_grads[0];
  Tensor dtarget = ctx.output_grads[1];
  if (!dsum_exp.valid()) dsum_exp = ScalarMul(ctx.outputs[0], 0.0, ctx.location);
  if (!dtarget.valid()) dtarget = ScalarMul(ctx.outputs[1], 0.0, ctx.location);
  return {VocabCrossEntropyGrad(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], dsum_exp, dtarget, ctx.location),
          Tensor(), Tensor()};
}

}  // namespace gradients
}  // namespace oneflow
