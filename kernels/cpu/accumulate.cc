// The gradient accumulator (oneflow_core/ops/accumulate.cc): micro-batch m = step mod M
// of an iteration writes out = x (m = 0) or out += x, and the last one scales by 1 / M,
// so after the iteration's last micro-batch `out` holds the mean of its inputs. The
// output register holds one value per iteration and is written by every micro-batch of
// it (RegisterDef.per_iteration): nothing reads it before the last.
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {

absl::Status Accumulate(const KernelContext& context) {
  OF_RETURN_IF_ERROR(
      CheckArguments("accumulate", context, {{"x", ArgKind::kFloat}}, {{"out", ArgKind::kFloat}}));
  const int64_t micro_batches = GetIntAttr(*context.attrs, "micro_batches", 1);
  if (micro_batches < 1) return absl::InvalidArgumentError("accumulate: micro_batches must be >= 1");
  const int64_t m = context.step % micro_batches;
  const float* x = context.inputs[0].As<float>();
  float* out = context.outputs[0].As<float>();
  const int64_t n = context.outputs[0].NumElements();
  if (m == 0) {
    std::copy(x, x + n, out);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] += x[i];
  }
  if (m == micro_batches - 1 && micro_batches > 1) {
    const float scale = 1.0f / static_cast<float>(micro_batches);
    for (int64_t i = 0; i < n; ++i) out[i] *= scale;
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
