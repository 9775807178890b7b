// Reference kernels of silu and silu_grad.
#include <cmath>

#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

Outputs Silu(const KernelArgs& args) {
  return std::vector<Dense>{Map(args.in(0), [](double x) { return x * Sigmoid(x); })};
}

Outputs SiluGrad(const KernelArgs& args) {
  Dense dx = args.in(0);
  const Dense& x = args.in(1);
  for (size_t i = 0; i < dx.values.size(); ++i) {
    const double s = Sigmoid(x.values[i]);
    dx.values[i] *= s * (1 + x.values[i] * (1 - s));
  }
  return std::vector<Dense>{dx};
}

}  // namespace reference
}  // namespace oneflow
