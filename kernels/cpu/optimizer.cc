// Optimizer updates, in place on the parameter and its state (OpDefinition::
// updated_inputs); they have no outputs. Formulas as oneflow_core/ops/optimizer.cc. The
// learning rate comes from the schedule attributes at the context's iteration
// (ops/learning_rate.h), in double like every scalar here, so every device of every
// layout uses the same rate; the elementwise loops are float.
//
// The updates are the largest memory-bound loops of a step (every parameter and its state,
// read and written): with a device pool (thread_pool.h) each runs as contiguous chunks
// over the pool. Elements are independent, so the result does not depend on the cut.
#include <cmath>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "oneflow_core/ops/learning_rate.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// Every input is elementwise state of the parameter: the parameter's shape.
absl::Status CheckParamShaped(const char* kernel, const KernelContext& context,
                              std::initializer_list<const char*> names) {
  size_t i = 0;
  for (const char* name : names) {
    OF_RETURN_IF_ERROR(CheckShape(kernel, name, context.inputs[i++].shape, context.inputs[0].shape,
                                  "param's shape"));
  }
  return absl::OkStatus();
}

absl::Status CheckFactor(const char* kernel, const char* name, double value) {
  if (value >= 0.0 && value < 1.0) return absl::OkStatus();
  return KernelError(kernel, "attribute ", name, "=", value, " is out of range; valid: 0 <= ", name,
                     " < 1");
}

// The learning rate at the context's step, after checking the schedule attributes.
absl::StatusOr<double> LearningRate(const char* kernel, const KernelContext& context) {
  const absl::Status valid = CheckLearningRateAttrs(AttrsOf(context));
  if (!valid.ok()) return KernelError(kernel, valid.message());
  return LearningRateAt(AttrsOf(context), context.step);
}

// Elements per chunk at least: 32 Ki floats is 128 KiB of each array, ~10 us of memory
// traffic, well above a helper's wake-up.
constexpr int64_t kUpdateGrain = int64_t{1} << 15;

}  // namespace

// momentum <- momentum_factor * momentum + grad;  param <- param - lr * momentum.
absl::Status SgdUpdate(const KernelContext& context) {
  constexpr char kKernel[] = "sgd_update";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"momentum"}}, {}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "momentum"}));
  OF_ASSIGN_OR_RETURN(const double lr, LearningRate(kKernel, context));
  const double momentum_factor = GetFloatAttr(AttrsOf(context), "momentum", 0.0);
  OF_RETURN_IF_ERROR(CheckFactor(kKernel, "momentum", momentum_factor));
  const float rate = static_cast<float>(lr);
  const float factor = static_cast<float>(momentum_factor);
  float* param = context.inputs[0].As<float>();
  const float* grad = context.inputs[1].As<const float>();
  float* momentum = context.inputs[2].As<float>();
  const int64_t n = context.inputs[0].NumElements();
  ParallelFor(n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      momentum[i] = factor * momentum[i] + grad[i];
      param[i] -= rate * momentum[i];
    }
  });
  return absl::OkStatus();
}

// Decoupled weight decay (Loshchilov-Hutter), then Adam with bias correction, t = step + 1.
absl::Status AdamWUpdate(const KernelContext& context) {
  constexpr char kKernel[] = "adamw_update";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"m"}, {"v"}}, {}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "m", "v"}));
  OF_ASSIGN_OR_RETURN(const double lr, LearningRate(kKernel, context));
  const AttrMap& attrs = AttrsOf(context);
  const double beta1 = GetFloatAttr(attrs, "beta1", 0.9);
  const double beta2 = GetFloatAttr(attrs, "beta2", 0.999);
  const double epsilon = GetFloatAttr(attrs, "epsilon", 1e-8);
  const double weight_decay = GetFloatAttr(attrs, "weight_decay", 0.0);
  OF_RETURN_IF_ERROR(CheckFactor(kKernel, "beta1", beta1));
  OF_RETURN_IF_ERROR(CheckFactor(kKernel, "beta2", beta2));
  if (!(epsilon > 0)) return KernelError(kKernel, "attribute epsilon=", epsilon, " must be > 0");
  if (!(weight_decay >= 0)) {
    return KernelError(kKernel, "attribute weight_decay=", weight_decay, " must be >= 0");
  }
  const double t = static_cast<double>(context.step + 1);
  // Folded into per-step scalars: m_hat / (sqrt(v_hat) + eps) with m_hat = m / c1 and
  // v_hat = v / c2 becomes m * (1 / c1) / (sqrt(v) * (1 / sqrt(c2)) + eps).
  const float decay = static_cast<float>(1.0 - lr * weight_decay);
  const float rate = static_cast<float>(lr);
  const float b1 = static_cast<float>(beta1);
  const float b2 = static_cast<float>(beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float inverse_c1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1, t)));
  const float inverse_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, t)));
  const float eps = static_cast<float>(epsilon);
  float* param = context.inputs[0].As<float>();
  const float* grad = context.inputs[1].As<const float>();
  float* m = context.inputs[2].As<float>();
  float* v = context.inputs[3].As<float>();
  const int64_t n = context.inputs[0].NumElements();
  ParallelFor(n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i];
      m[i] = b1 * m[i] + one_minus_b1 * g;
      v[i] = b2 * v[i] + one_minus_b2 * g * g;
      param[i] = param[i] * decay -
                 rate * (m[i] * inverse_c1) / (std::sqrt(v[i]) * inverse_sqrt_c2 + eps);
    }
  });
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
