// Reference optimizer updates (formulas in oneflow_core/ops/optimizer.cc). They return
// the new values of the updated inputs instead of writing them in place.
#include <cmath>

#include "oneflow_core/ops/learning_rate.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {

Outputs SgdUpdate(const KernelArgs& args) {
  const double lr = LearningRateAt(args.attrs, args.step);
  const double momentum = GetFloatAttr(args.attrs, "momentum", 0.0);
  Dense param = args.in(0);
  Dense buffer = args.in(2);
  for (size_t i = 0; i < param.values.size(); ++i) {
    buffer.values[i] = momentum * buffer.values[i] + args.in(1).values[i];
    param.values[i] -= lr * buffer.values[i];
  }
  return std::vector<Dense>{param, buffer};
}

Outputs AdamWUpdate(const KernelArgs& args) {
  const double lr = LearningRateAt(args.attrs, args.step);
  const double beta1 = GetFloatAttr(args.attrs, "beta1", 0.9);
  const double beta2 = GetFloatAttr(args.attrs, "beta2", 0.999);
  const double epsilon = GetFloatAttr(args.attrs, "epsilon", 1e-8);
  const double weight_decay = GetFloatAttr(args.attrs, "weight_decay", 0.0);
  const double t = static_cast<double>(args.step + 1);
  const int64_t frozen_from = GetIntAttr(args.attrs, "variance_frozen_from", 0);
  const bool frozen = frozen_from > 0 && args.step >= frozen_from;
  const double correction1 = 1 - std::pow(beta1, t);
  const double correction2 = 1 - std::pow(beta2, frozen ? static_cast<double>(frozen_from) : t);
  Dense param = args.in(0);
  Dense m = args.in(2);
  Dense v = args.in(3);
  for (size_t i = 0; i < param.values.size(); ++i) {
    const double g = args.in(1).values[i];
    param.values[i] *= 1 - lr * weight_decay;
    m.values[i] = beta1 * m.values[i] + (1 - beta1) * g;
    if (!frozen) v.values[i] = beta2 * v.values[i] + (1 - beta2) * g * g;
    param.values[i] -=
        lr * (m.values[i] / correction1) / (std::sqrt(v.values[i] / correction2) + epsilon);
  }
  return std::vector<Dense>{param, m, v};
}

Outputs Assign(const KernelArgs& args) { return std::vector<Dense>{args.in(1)}; }

}  // namespace reference
}  // namespace oneflow
