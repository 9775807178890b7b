// Gradients of the elementwise ops. Broadcasting binary ops sum the gradient back over
// the axes an input was broadcast along (reduce_sum_like); an input of the output's
// shape takes it directly.
#include <variant>

#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace gradients {
namespace {

// `grad` (of the output's shape) reduced to the shape of the broadcast input `like`.
Tensor SumLike(Tensor grad, Tensor like, Loc at) {
  if (!grad.valid() || grad.shape() == like.shape()) return grad;
  return ReduceSumLike(grad, like, at);
}

}  // namespace

std::vector<Tensor> AddGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  return {SumLike(dout, ctx.inputs[0], ctx.location), SumLike(dout, ctx.inputs[1], ctx.location)};
}

std::vector<Tensor> SubGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const Loc at = ctx.location;
  return {SumLike(dout, ctx.inputs[0], at), SumLike(ScalarMul(dout, -1.0, at), ctx.inputs[1], at)};
}

std::vector<Tensor> MulGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const Tensor x = ctx.inputs[0];
  const Tensor y = ctx.inputs[1];
  const Loc at = ctx.location;
  return {SumLike(Mul(dout, y, at), x, at), SumLike(Mul(dout, x, at), y, at)};
}

// out = x / y:  dx = dout / y,  dy = -dout * x / y^2 = -(dout * out) / y.
std::vector<Tensor> DivGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const Tensor y = ctx.inputs[1];
  const Loc at = ctx.location;
  const Tensor dy = ScalarMul(Div(Mul(dout, ctx.outputs[0], at), y, at), -1.0, at);
  return {SumLike(Div(dout, y, at), ctx.inputs[0], at), SumLike(dy, y, at)};
}

std::vector<Tensor> BiasAddGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const int64_t rank = dout.shape().rank();
  if (rank == 1) return {dout, dout};  // No axis to sum: x and bias are both [n].
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < rank - 1; ++axis) axes.push_back(axis);
  return {dout, ReduceSum(dout, axes, /*keep_dims=*/false, ctx.location)};
}

// relu_grad reads the output (y > 0 iff x > 0), so x need not be kept alive.
std::vector<Tensor> ReluGradient(const GradientContext& ctx) {
  return {ReluGrad(ctx.output_grads[0], ctx.outputs[0], ctx.location)};
}

std::vector<Tensor> GeluGradient(const GradientContext& ctx) {
  return {GeluGrad(ctx.output_grads[0], ctx.inputs[0], ctx.location)};
}

std::vector<Tensor> ScalarMulGradient(const GradientContext& ctx) {
  return {ScalarMul(ctx.output_grads[0], GetFloatAttr(*ctx.attrs, "scalar", 0.0), ctx.location)};
}

std::vector<Tensor> ScalarAddGradient(const GradientContext& ctx) {
  return {ctx.output_grads[0]};
}

std::vector<Tensor> DropoutGradient(const GradientContext& ctx) {
  return {DropoutGrad(ctx.output_grads[0], GetFloatAttr(*ctx.attrs, "rate", 0.0),
                      static_cast<uint64_t>(GetIntAttr(*ctx.attrs, "seed", 0)), ctx.location)};
}

// To(x, placement, sbp) moved x; its gradient moves back to x's placement (pipeline
// stages send activations forward and gradients backward). The SBP is left to the
// compiler: the gradient of a B tensor is naturally P, not B. An identity with the
// attribute hint_gradient = true (a model pinning a layout in both passes, e.g.
// examples/common/context_parallel.cc) gives its gradient the forward output's hint,
// when every axis of that hint is a split (the gradient of a split is the same split).
std::vector<Tensor> IdentityGradient(const GradientContext& ctx) {
  const Tensor x = ctx.inputs[0];
  auto pinned = ctx.attrs->find("hint_gradient");
  if (pinned != ctx.attrs->end() && std::holds_alternative<bool>(pinned->second) &&
      std::get<bool>(pinned->second)) {
    // A copy: AddSingleOutputOp below grows the graph's tensor table, which would leave a
    // reference into it dangling (seen as an empty or garbage hint on dx).
    const std::optional<NdSbp> hint = x.graph()->tensor(ctx.outputs[0].id()).sbp_hint;
    bool all_split = hint.has_value();
    for (int64_t a = 0; all_split && a < hint->size(); ++a) all_split = hint->at(a).is_split();
    if (all_split) {
      Tensor dx = x.graph()->AddSingleOutputOp("identity", {ctx.output_grads[0]}, {}, ctx.location);
      if (!dx.valid()) return {dx};
      dx.WithSbp(*hint);
      const std::optional<Placement>& placement = x.graph()->tensor(x.id()).placement;
      if (placement) dx.WithPlacement(*placement);
      return {dx};
    }
  }
  const std::optional<Placement>& placement = x.graph()->tensor(x.id()).placement;
  if (!placement) return {ctx.output_grads[0]};
  Tensor dx = x.graph()->AddSingleOutputOp("identity", {ctx.output_grads[0]}, {}, ctx.location);
  if (dx.valid()) dx.WithPlacement(*placement);
  return {dx};
}

// Masked entries are constants: no gradient flows to them.
std::vector<Tensor> CausalMaskGradient(const GradientContext& ctx) {
  return {CausalMask(ctx.output_grads[0], /*fill=*/0.0, ctx.location)};
}

}  // namespace gradients
}  // namespace oneflow
