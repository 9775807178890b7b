// Backward kernels of the last-axis normalizations, row by row like the forward ones,
// computed from the forward output (softmax, log_softmax) or input (layer_norm, the
// cross-entropy's logits).
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/normalization_util.h"
#include "kernels/cpu/vector_math.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// (dy, y) -> dx, all of dy's shape. row_fn(dy, y, dx, width) does one row.
template <typename RowFn>
absl::Status SoftmaxFamilyGrad(const KernelContext& context, const char* kernel, RowFn row_fn) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{"dy"}, {"y"}}, {{"dx"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kernel, "input 'dy' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kernel, "y", context.inputs[1].shape, shape, "dy's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kernel, "dx", context.outputs[0].shape, shape, "dy's shape"));
  const int64_t width = LastDim(shape);
  const float* dy = context.inputs[0].As<const float>();
  const float* y = context.inputs[1].As<const float>();
  float* dx = context.outputs[0].As<float>();
  for (int64_t row = 0; row < Rows(shape); ++row) {
    const int64_t at = row * width;
    row_fn(dy + at, y + at, dx + at, width);
  }
  return absl::OkStatus();
}

}  // namespace

// dx = y * (dy - sum_j dy_j y_j).
absl::Status SoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(context, "softmax_grad",
                           [](const float* dy, const float* y, float* dx, int64_t width) {
                             const float dot = RowDot(dy, y, width);
                             for (int64_t j = 0; j < width; ++j) dx[j] = y[j] * (dy[j] - dot);
                           });
}

// dx = dy - exp(y) * sum_j dy_j, y the log-probabilities (<= 0, so ExpF is accurate).
absl::Status LogSoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(context, "log_softmax_grad",
                           [](const float* dy, const float* y, float* dx, int64_t width) {
                             const float sum = RowSum(dy, width);
                             for (int64_t j = 0; j < width; ++j) dx[j] = dy[j] - ExpF(y[j]) * sum;
                           });
}

// With xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum over rows of dy * xhat,  dbeta = sum over rows of dy.
// The column sums over rows accumulate in double: a data-parallel device may sum tens of
// thousands of rows, and float accumulation would lose digits the reference keeps.
absl::Status LayerNormGrad(const KernelContext& context) {
  constexpr char kKernel[] = "layer_norm_grad";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"gamma"}, {"dy"}},
                                    {{"dx"}, {"dgamma"}, {"dbeta"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'x' must have rank >= 1, got []");
  const int64_t h = LastDim(shape);
  const Shape row_shape{h};
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "gamma", context.inputs[1].shape, row_shape, "the last dimension of x"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[2].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", context.outputs[0].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dgamma", context.outputs[1].shape, row_shape, "gamma's shape"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dbeta", context.outputs[2].shape, row_shape, "gamma's shape"));
  const double epsilon = GetFloatAttr(AttrsOf(context), "epsilon", 1e-5);
  if (!(epsilon > 0)) return KernelError(kKernel, "attribute epsilon=", epsilon, " must be > 0");
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  const float* dy = context.inputs[2].As<const float>();
  float* dx = context.outputs[0].As<float>();
  std::vector<float> xhat(h), g(h);
  std::vector<double> dgamma(h, 0.0), dbeta(h, 0.0);
  const float inverse_h = 1.0f / static_cast<float>(h);
  for (int64_t row = 0; row < Rows(shape); ++row) {
    const float* in = x + row * h;
    const float* d = dy + row * h;
    const RowMoments moments = Moments(in, h, static_cast<float>(epsilon));
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t j = 0; j < h; ++j) {
      xhat[j] = (in[j] - moments.mean) * moments.rstd;
      g[j] = d[j] * gamma[j];
      sum_g += g[j];
      sum_gx += g[j] * xhat[j];
    }
    const float mean_g = sum_g * inverse_h;
    const float mean_gx = sum_gx * inverse_h;
    float* out = dx + row * h;
    for (int64_t j = 0; j < h; ++j) {
      out[j] = moments.rstd * (g[j] - mean_g - xhat[j] * mean_gx);
      dgamma[j] += static_cast<double>(d[j]) * xhat[j];
      dbeta[j] += d[j];
    }
  }
  float* dgamma_out = context.outputs[1].As<float>();
  float* dbeta_out = context.outputs[2].As<float>();
  for (int64_t j = 0; j < h; ++j) {
    dgamma_out[j] = static_cast<float>(dgamma[j]);
    dbeta_out[j] = static_cast<float>(dbeta[j]);
  }
  return absl::OkStatus();
}

// dlogits = (softmax(logits) - one_hot(labels)) * dy.
absl::Status SparseSoftmaxCrossEntropyGrad(const KernelContext& context) {
  constexpr char kKernel[] = "sparse_softmax_cross_entropy_grad";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context, {{"logits"}, {"labels", ArgKind::kIndex}, {"dy"}}, {{"dlogits"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'logits' must have rank >= 1, got []");
  const Shape rows_shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "labels", context.inputs[1].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[2].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dlogits", context.outputs[0].shape, shape, "logits' shape"));
  const int64_t classes = LastDim(shape);
  const float* logits = context.inputs[0].As<const float>();
  const float* dy = context.inputs[2].As<const float>();
  float* dlogits = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    for (int64_t row = 0; row < rows_shape.NumElements(); ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = logits + row * classes;
      float* out = dlogits + row * classes;
      const float scale = dy[row] / ExpShifted(in, classes, RowMax(in, classes), out);
      for (int64_t j = 0; j < classes; ++j) out[j] *= scale;
      out[labels[row]] -= dy[row];
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
