// rms_norm and rms_norm_grad on f32 rows of the last axis. The statistics (the mean of the
// squares, and the backward's mean of g * xhat) are accumulated in double: a row of 4096
// float squares summed in float loses ~12 bits of the smallest terms, and the row loops
// are a small part of a decoder layer next to its matmuls.
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// x [..., h] and gamma [h]; epsilon > 0 (returned).
absl::StatusOr<double> CheckRmsNorm(const char* kernel, const KernelContext& context) {
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kernel, "input 'x' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kernel, "gamma", context.inputs[1].shape, Shape{LastDim(shape)},
                                "the last dimension of x"));
  const double epsilon = GetFloatAttr(AttrsOf(context), "epsilon", 1e-6);
  if (!(epsilon > 0)) return KernelError(kernel, "attribute epsilon=", epsilon, " must be > 0");
  return epsilon;
}

float InverseRms(const float* v, int64_t h, double epsilon) {
  double sum = 0;
  for (int64_t j = 0; j < h; ++j) sum += static_cast<double>(v[j]) * v[j];
  return static_cast<float>(1 / std::sqrt(sum / static_cast<double>(h) + epsilon));
}

}  // namespace

absl::Status RmsNorm(const KernelContext& context) {
  constexpr char kKernel[] = "rms_norm";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"gamma"}}, {{"out"}}));
  OF_ASSIGN_OR_RETURN(const double epsilon, CheckRmsNorm(kKernel, context));
  const Shape& shape = context.inputs[0].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, shape, "x's shape"));
  const int64_t h = LastDim(shape);
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  float* out = context.outputs[0].As<float>();
  for (int64_t row = 0; row < Rows(shape); ++row) {
    const float* v = x + row * h;
    float* y = out + row * h;
    const float r = InverseRms(v, h, epsilon);
    for (int64_t j = 0; j < h; ++j) y[j] = v[j] * r * gamma[j];
  }
  return absl::OkStatus();
}

absl::Status RmsNormGrad(const KernelContext& context) {
  constexpr char kKernel[] = "rms_norm_grad";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"x"}, {"gamma"}, {"dy"}}, {{"dx"}, {"dgamma"}}));
  OF_ASSIGN_OR_RETURN(const double epsilon, CheckRmsNorm(kKernel, context));
  const Shape& shape = context.inputs[0].shape;
  const int64_t h = LastDim(shape);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[2].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", context.outputs[0].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dgamma", context.outputs[1].shape, Shape{h}, "gamma's shape"));
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  const float* dy = context.inputs[2].As<const float>();
  float* dx = context.outputs[0].As<float>();
  float* dgamma = context.outputs[1].As<float>();
  // dgamma sums over every row: accumulated in double, written once.
  std::vector<double> dgamma_sum(h, 0.0);
  for (int64_t row = 0; row < Rows(shape); ++row) {
    const float* v = x + row * h;
    const float* d = dy + row * h;
    const float r = InverseRms(v, h, epsilon);
    double sum_gx = 0;
    for (int64_t j = 0; j < h; ++j) {
      const float xhat = v[j] * r;
      sum_gx += static_cast<double>(d[j] * gamma[j]) * xhat;
      dgamma_sum[j] += static_cast<double>(d[j]) * xhat;
    }
    const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(h));
    float* out = dx + row * h;
    for (int64_t j = 0; j < h; ++j) out[j] = r * (d[j] * gamma[j] - v[j] * r * mean_gx);
  }
  for (int64_t j = 0; j < h; ++j) dgamma[j] = static_cast<float>(dgamma_sum[j]);
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
