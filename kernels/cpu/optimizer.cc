// Optimizer updates, in place on the parameter and its state (OpDefinition::
// updated_inputs); they have no outputs. Their out-of-place twins (sgd_step, adamw_step)
// write the new values to outputs instead, and assign copies a value into a variable. Formulas as oneflow_core/ops/optimizer.cc. The
// learning rate comes from the schedule attributes at the context's iteration
// (ops/learning_rate.h), in double like every scalar here, so every device of every
// layout uses the same rate; the elementwise loops are float.
//
// The updates are the largest memory-bound loops of a step (every parameter and its state,
// read and written): with a device pool (thread_pool.h) each runs as contiguous chunks
// over the pool. Elements are independent, so the result does not depend on the cut.
#include <cmath>
#include <cstring>

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


// The arrays one update reads and writes: `*_out` is either the matching input (the
// in-place updates) or a separate output (the out-of-place steps, whose outputs never
// overlap their inputs: kernel.h). Each case has its own loop, so the compiler may
// vectorize the second without alias checks (seven pointers are past what GCC versions a
// loop for, and a scalar sqrt made adamw 7x slower); both loops do the same arithmetic,
// so the two give the same bits.
struct SgdArrays {
  const float* param;
  const float* grad;
  const float* momentum;
  float* param_out;
  float* momentum_out;
  int64_t n;
};

// momentum <- momentum_factor * momentum + grad;  param <- param - lr * momentum.
absl::Status RunSgd(const char* kernel, const KernelContext& context, const SgdArrays& a) {
  OF_ASSIGN_OR_RETURN(const double lr, LearningRate(kernel, context));
  const double momentum_factor = GetFloatAttr(AttrsOf(context), "momentum", 0.0);
  OF_RETURN_IF_ERROR(CheckFactor(kernel, "momentum", momentum_factor));
  const float rate = static_cast<float>(lr);
  const float factor = static_cast<float>(momentum_factor);
  ParallelFor(context.thread_pool, a.n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    const float* grad = a.grad;
    if (a.param_out == a.param) {
      float* param = a.param_out;
      float* momentum = a.momentum_out;
      for (int64_t i = begin; i < end; ++i) {
        momentum[i] = factor * momentum[i] + grad[i];
        param[i] -= rate * momentum[i];
      }
      return;
    }
    const float* __restrict param = a.param;
    const float* __restrict momentum = a.momentum;
    float* __restrict param_out = a.param_out;
    float* __restrict momentum_out = a.momentum_out;
    for (int64_t i = begin; i < end; ++i) {
      const float m = factor * momentum[i] + grad[i];
      momentum_out[i] = m;
      param_out[i] = param[i] - rate * m;
    }
  });
  return absl::OkStatus();
}

struct AdamWArrays {
  const float* param;
  const float* grad;
  const float* m;
  const float* v;
  float* param_out;
  float* m_out;
  float* v_out;
  int64_t n;
};

// Decoupled weight decay (Loshchilov-Hutter), then Adam with bias correction, t = step + 1.
absl::Status RunAdamW(const char* kernel, const KernelContext& context, const AdamWArrays& a) {
  OF_ASSIGN_OR_RETURN(const double lr, LearningRate(kernel, context));
  const AttrMap& attrs = AttrsOf(context);
  const double beta1 = GetFloatAttr(attrs, "beta1", 0.9);
  const double beta2 = GetFloatAttr(attrs, "beta2", 0.999);
  const double epsilon = GetFloatAttr(attrs, "epsilon", 1e-8);
  const double weight_decay = GetFloatAttr(attrs, "weight_decay", 0.0);
  OF_RETURN_IF_ERROR(CheckFactor(kernel, "beta1", beta1));
  OF_RETURN_IF_ERROR(CheckFactor(kernel, "beta2", beta2));
  if (!(epsilon > 0)) return KernelError(kernel, "attribute epsilon=", epsilon, " must be > 0");
  if (!(weight_decay >= 0)) {
    return KernelError(kernel, "attribute weight_decay=", weight_decay, " must be >= 0");
  }
  const int64_t frozen_from = GetIntAttr(attrs, "variance_frozen_from", 0);
  if (frozen_from < 0) {
    return KernelError(kernel, "attribute variance_frozen_from=", frozen_from, " must be >= 0 (0: never)");
  }
  // 1-bit Adam's frozen variance: from iteration frozen_from on, v keeps the value its
  // first frozen_from updates gave it, bias-corrected as at t = frozen_from, and the step
  // is linear in the gradient (oneflow_core/ops/optimizer.cc).
  const bool frozen = frozen_from > 0 && context.step >= frozen_from;
  const double t = static_cast<double>(context.step + 1);
  const double variance_t = frozen ? static_cast<double>(frozen_from) : t;
  // Folded into per-step scalars: m_hat / (sqrt(v_hat) + eps) with m_hat = m / c1 and
  // v_hat = v / c2 becomes m * (1 / c1) / (sqrt(v) * (1 / sqrt(c2)) + eps).
  const float decay = static_cast<float>(1.0 - lr * weight_decay);
  const float rate = static_cast<float>(lr);
  const float b1 = static_cast<float>(beta1);
  const float b2 = static_cast<float>(beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float inverse_c1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1, t)));
  const float inverse_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2, variance_t)));
  const float eps = static_cast<float>(epsilon);
  ParallelFor(context.thread_pool, a.n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    const float* grad = a.grad;
    if (a.param_out == a.param) {
      float* param = a.param_out;
      float* m = a.m_out;
      float* v = a.v_out;
      for (int64_t i = begin; i < end; ++i) {
        const float g = grad[i];
        m[i] = b1 * m[i] + one_minus_b1 * g;
        // A select, not a branch: the loop stays vectorized at -O2 (no loop unswitching).
        v[i] = frozen ? v[i] : b2 * v[i] + one_minus_b2 * g * g;
        param[i] = param[i] * decay - rate * (m[i] * inverse_c1) / (std::sqrt(v[i]) * inverse_sqrt_c2 + eps);
      }
      return;
    }
    const float* __restrict param = a.param;
    const float* __restrict m_in = a.m;
    const float* __restrict v_in = a.v;
    float* __restrict param_out = a.param_out;
    float* __restrict m_out = a.m_out;
    float* __restrict v_out = a.v_out;
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i];
      const float m = b1 * m_in[i] + one_minus_b1 * g;
      const float v = frozen ? v_in[i] : b2 * v_in[i] + one_minus_b2 * g * g;
      m_out[i] = m;
      v_out[i] = v;
      param_out[i] = param[i] * decay - rate * (m * inverse_c1) / (std::sqrt(v) * inverse_sqrt_c2 + eps);
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status SgdUpdate(const KernelContext& context) {
  constexpr char kKernel[] = "sgd_update";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"momentum"}}, {}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "momentum"}));
  float* param = context.inputs[0].As<float>();
  float* momentum = context.inputs[2].As<float>();
  return RunSgd(kKernel, context,
                {param, context.inputs[1].As<const float>(), momentum, param, momentum,
                 context.inputs[0].NumElements()});
}

absl::Status AdamWUpdate(const KernelContext& context) {
  constexpr char kKernel[] = "adamw_update";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"m"}, {"v"}}, {}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "m", "v"}));
  float* param = context.inputs[0].As<float>();
  float* m = context.inputs[2].As<float>();
  float* v = context.inputs[3].As<float>();
  return RunAdamW(kKernel, context,
                  {param, context.inputs[1].As<const float>(), m, v, param, m, v,
                   context.inputs[0].NumElements()});
}

absl::Status SgdStep(const KernelContext& context) {
  constexpr char kKernel[] = "sgd_step";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"momentum"}},
                                    {{"new_param"}, {"new_momentum"}}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "momentum"}));
  for (const KernelArgument& out : context.outputs) {
    OF_RETURN_IF_ERROR(CheckShape(kKernel, "new_param", out.shape, context.inputs[0].shape, "param's shape"));
  }
  return RunSgd(kKernel, context,
                {context.inputs[0].As<const float>(), context.inputs[1].As<const float>(),
                 context.inputs[2].As<const float>(), context.outputs[0].As<float>(),
                 context.outputs[1].As<float>(), context.inputs[0].NumElements()});
}

absl::Status AdamWStep(const KernelContext& context) {
  constexpr char kKernel[] = "adamw_step";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"param"}, {"grad"}, {"m"}, {"v"}},
                                    {{"new_param"}, {"new_m"}, {"new_v"}}));
  OF_RETURN_IF_ERROR(CheckParamShaped(kKernel, context, {"param", "grad", "m", "v"}));
  for (const KernelArgument& out : context.outputs) {
    OF_RETURN_IF_ERROR(CheckShape(kKernel, "new_param", out.shape, context.inputs[0].shape, "param's shape"));
  }
  return RunAdamW(kKernel, context,
                  {context.inputs[0].As<const float>(), context.inputs[1].As<const float>(),
                   context.inputs[2].As<const float>(), context.inputs[3].As<const float>(),
                   context.outputs[0].As<float>(), context.outputs[1].As<float>(),
                   context.outputs[2].As<float>(), context.inputs[0].NumElements()});
}

// ref <- value: a copy of this device's slice into the variable.
absl::Status Assign(const KernelContext& context) {
  constexpr char kKernel[] = "assign";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"ref"}, {"value"}}, {}));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "value", context.inputs[1].shape, context.inputs[0].shape,
                                "ref's shape"));
  std::memcpy(context.inputs[0].As<float>(), context.inputs[1].As<const float>(),
              static_cast<size_t>(context.inputs[0].NumElements()) * sizeof(float));
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
