// Reference kernels of rms_norm and rms_norm_grad, row by row (a row is the last axis,
// always whole on a device).
#include <cmath>

#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

// 1 / sqrt(mean(v^2) + epsilon) of the h values at v.
double InverseRms(const double* v, int64_t h, double epsilon) {
  double mean_square = 0;
  for (int64_t j = 0; j < h; ++j) mean_square += v[j] * v[j] / h;
  return 1 / std::sqrt(mean_square + epsilon);
}

}  // namespace

Outputs RmsNorm(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const Dense& gamma = args.in(1);
  const double epsilon = GetFloatAttr(args.attrs, "epsilon", 1e-6);
  const int64_t h = x.shape.dim(x.shape.rank() - 1);
  const int64_t rows = h == 0 ? 0 : x.shape.NumElements() / h;
  Dense out = x;
  for (int64_t row = 0; row < rows; ++row) {
    const double* v = &x.values[row * h];
    const double r = InverseRms(v, h, epsilon);
    for (int64_t j = 0; j < h; ++j) out.values[row * h + j] = v[j] * r * gamma.values[j];
  }
  return std::vector<Dense>{out};
}

Outputs RmsNormGrad(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const Dense& gamma = args.in(1);
  const Dense& dy = args.in(2);
  const double epsilon = GetFloatAttr(args.attrs, "epsilon", 1e-6);
  const int64_t h = x.shape.dim(x.shape.rank() - 1);
  const int64_t rows = h == 0 ? 0 : x.shape.NumElements() / h;
  Dense dx = x;
  Dense dgamma = args.NewOutput(1);
  for (int64_t row = 0; row < rows; ++row) {
    const double* v = &x.values[row * h];
    const double* d = &dy.values[row * h];
    const double r = InverseRms(v, h, epsilon);
    double mean_gx = 0;
    for (int64_t j = 0; j < h; ++j) {
      mean_gx += d[j] * gamma.values[j] * v[j] * r / h;
      dgamma.values[j] += d[j] * v[j] * r;
    }
    for (int64_t j = 0; j < h; ++j) {
      dx.values[row * h + j] = r * (d[j] * gamma.values[j] - v[j] * r * mean_gx);
    }
  }
  return std::vector<Dense>{dx, dgamma};
}

}  // namespace reference
}  // namespace oneflow
