// Last-axis normalizations: softmax, log_softmax, layer_norm and the sparse softmax
// cross-entropy loss. Each works row by row (a row is the last axis, whole on every
// device) in a few passes over the row, which stays in the L1 cache: a max, a sum of
// exponentials, then the write-out, all on Float8 (normalization_util.h). Sums keep 8
// lanes of partial sums; the order differs from the reference's by float rounding.
#include <cmath>
#include <limits>

#include "kernels/cpu/float8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/normalization_util.h"
#include "kernels/cpu/vector_math.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// Softmax or log-softmax of each row of x.
absl::Status RowSoftmax(const KernelContext& context, const char* kernel, bool log) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{"x"}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kernel, "input 'x' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kernel, "out", context.outputs[0].shape, shape, "x's shape"));
  const int64_t width = LastDim(shape);
  const float* x = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = Rows(shape);
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * width;
    const float* next = row + 1 < rows ? in + width : in;
    float* y = out + row * width;
    const float max = RowMax(in, width);
    if (log) {
      const float shift = max + std::log(SumExpShifted(in, width, max, next));
      Map(in, y, width, [shift](Float8 v) { return v - shift; });
    } else {
      const float inverse = 1.0f / ExpShifted(in, width, max, y, next);
      Map(y, y, width, [inverse](Float8 v) { return v * inverse; });
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Softmax(const KernelContext& context) {
  return RowSoftmax(context, "softmax", /*log=*/false);
}

absl::Status LogSoftmax(const KernelContext& context) {
  return RowSoftmax(context, "log_softmax", /*log=*/true);
}

// out = (x - mean) / sqrt(var + epsilon) * gamma + beta over each row; the variance is
// the mean squared deviation (two passes, no E[x^2] - E[x]^2 cancellation).
absl::Status LayerNorm(const KernelContext& context) {
  constexpr char kKernel[] = "layer_norm";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"gamma"}, {"beta"}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'x' must have rank >= 1, got []");
  const int64_t h = LastDim(shape);
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "gamma", context.inputs[1].shape, Shape{h}, "the last dimension of x"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "beta", context.inputs[2].shape, Shape{h}, "the last dimension of x"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, shape, "x's shape"));
  const double epsilon = GetFloatAttr(AttrsOf(context), "epsilon", 1e-5);
  if (!(epsilon > 0)) return KernelError(kKernel, "attribute epsilon=", epsilon, " must be > 0");
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  const float* beta = context.inputs[2].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = Rows(shape);
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * h;
    const float* next = row + 1 < rows ? in + h : in;
    float* y = out + row * h;
    if (row + 1 < rows) PrefetchForWriting(y + h, h);
    const RowMoments moments = Moments(in, h, static_cast<float>(epsilon), next);
    const float mean = moments.mean, rstd = moments.rstd;
    Map(in, gamma, beta, y, h,
        [mean, rstd](Float8 v, Float8 g, Float8 b) { return (v - mean) * rstd * g + b; });
  }
  return absl::OkStatus();
}

// loss[row] = -log_softmax(x)[label] = (max - x[label]) + log(sum_j exp(x_j - max)).
absl::Status SparseSoftmaxCrossEntropy(const KernelContext& context) {
  constexpr char kKernel[] = "sparse_softmax_cross_entropy";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"logits"}, {"labels", ArgKind::kIndex}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'logits' must have rank >= 1, got []");
  const Shape rows_shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "labels", context.inputs[1].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, rows_shape,
                                "logits without the class axis"));
  const int64_t classes = LastDim(shape);
  const float* logits = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    const int64_t rows = rows_shape.NumElements();
    for (int64_t row = 0; row < rows; ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = logits + row * classes;
      const float* next = row + 1 < rows ? in + classes : in;
      const float max = RowMax(in, classes);
      out[row] = (max - in[labels[row]]) + std::log(SumExpShifted(in, classes, max, next));
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
