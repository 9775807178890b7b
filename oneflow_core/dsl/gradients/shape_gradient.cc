// Gradients of the ops that move elements: each routes the gradient back to where the
// elements came from (reshape/transpose invert themselves, slice pads, concat slices,
// reductions broadcast, embedding scatters).
#include "oneflow_core/dsl/gradients/gradient_functions.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/op_util.h"

namespace oneflow {
namespace gradients {
namespace {

// The forward reduction's axes, normalized ([] means all). The forward op's inference
// already accepted them, so normalizing cannot fail here.
std::vector<int64_t> ReducedAxes(const GradientContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> axes =
      op_util::NormalizeAxes("axes", GetIntsAttr(*ctx.attrs, "axes"),
                             ctx.inputs[0].shape().rank(), /*empty_means_all=*/true);
  return axes.ok() ? *axes : std::vector<int64_t>{};
}

}  // namespace

std::vector<Tensor> ReshapeGradient(const GradientContext& ctx) {
  return {Reshape(ctx.output_grads[0], ctx.inputs[0].shape().dims(), ctx.location)};
}

std::vector<Tensor> TransposeGradient(const GradientContext& ctx) {
  const std::vector<int64_t> perm = GetIntsAttr(*ctx.attrs, "perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) inverse[perm[j]] = static_cast<int64_t>(j);
  return {Transpose(ctx.output_grads[0], inverse, ctx.location)};
}

std::vector<Tensor> ReduceSumGradient(const GradientContext& ctx) {
  return {BroadcastLike(ctx.output_grads[0], ctx.inputs[0], ReducedAxes(ctx), ctx.location)};
}

std::vector<Tensor> ReduceMeanGradient(const GradientContext& ctx) {
  const std::vector<int64_t> axes = ReducedAxes(ctx);
  double count = 1;
  for (int64_t axis : axes) count *= static_cast<double>(ctx.inputs[0].shape().dim(axis));
  const Tensor spread = BroadcastLike(ctx.output_grads[0], ctx.inputs[0], axes, ctx.location);
  return {ScalarMul(spread, 1.0 / count, ctx.location)};
}

std::vector<Tensor> SliceGradient(const GradientContext& ctx) {
  return {SliceGrad(ctx.output_grads[0], ctx.inputs[0], GetIntsAttr(*ctx.attrs, "begin"),
                    GetIntsAttr(*ctx.attrs, "end"), ctx.location)};
}

// Each input gets its own stretch of the gradient along the axis.
std::vector<Tensor> ConcatGradient(const GradientContext& ctx) {
  const Tensor dout = ctx.output_grads[0];
  const Shape& shape = dout.shape();
  int64_t axis = GetIntAttr(*ctx.attrs, "axis", 0);
  if (axis < 0) axis += shape.rank();
  const int64_t split = ctx.inputs[0].shape().dim(axis);
  std::vector<int64_t> begin(shape.rank(), 0);
  std::vector<int64_t> end = shape.dims();
  std::vector<int64_t> a_end = end;
  a_end[axis] = split;
  std::vector<int64_t> b_begin = begin;
  b_begin[axis] = split;
  return {Slice(dout, begin, a_end, ctx.location), Slice(dout, b_begin, end, ctx.location)};
}

// Ids are indices: no gradient.
std::vector<Tensor> EmbeddingGradient(const GradientContext& ctx) {
  return {EmbeddingGrad(ctx.inputs[1], ctx.output_grads[0], ctx.inputs[0].shape().dim(0),
                        ctx.location),
          Tensor()};
}

}  // namespace gradients
}  // namespace oneflow
