// cast: f32 <-> f16/bf16 storage conversion (oneflow_core/ops/cast.cc). The bulk
// conversions of oneflow_core/dtype.h round to nearest even (F16C / SIMD loops); widening
// is exact. Same dtype in and out is a copy.
#include <cstring>
#include <memory>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

bool IsCastable(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

// Widens `n` elements of `in` (of `dtype`) to float.
void ToFloats(const KernelArgument& in, int64_t n, float* out) {
  switch (in.dtype) {
    case DType::kBF16:
      ConvertToFloat(in.As<const BFloat16>(), n, out);
      return;
    case DType::kF16:
      ConvertToFloat(in.As<const Float16>(), n, out);
      return;
    default:
      std::memcpy(out, in.As<const float>(), static_cast<size_t>(n) * sizeof(float));
  }
}

}  // namespace

absl::Status Cast(const KernelContext& context) {
  constexpr char kKernel[] = "cast";
  if (context.inputs.size() != 1 || context.outputs.size() != 1) {
    return KernelError(kKernel, "takes inputs (x) and outputs (out), got ", context.inputs.size(), " inputs and ",
                       context.outputs.size(), " outputs");
  }
  const KernelArgument& in = context.inputs[0];
  const KernelArgument& out = context.outputs[0];
  for (const KernelArgument* argument : {&in, &out}) {
    if (!IsCastable(argument->dtype)) {
      return KernelError(kKernel, argument == &in ? "input 'x'" : "output 'out'", " must be f32, f16 or bf16, got ",
                         DTypeName(argument->dtype), argument->shape.ToString());
    }
    if (argument->data == nullptr && argument->NumElements() > 0) {
      return KernelError(kKernel, argument == &in ? "input 'x' " : "output 'out' ", argument->shape.ToString(),
                         " has no buffer");
    }
  }
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", out.shape, in.shape, "the shape of x"));
  const int64_t n = in.NumElements();
  if (in.dtype == out.dtype) {
    std::memcpy(out.data, in.data, static_cast<size_t>(n) * SizeOf(in.dtype));
    return absl::OkStatus();
  }
  // Widening writes the f32 output directly: activation storage (--precision=bf16) widens
  // every kept activation before backward; a float copy there would allocate and copy
  // each tensor once more.
  if (out.dtype == DType::kF32) {
    ToFloats(in, n, out.As<float>());
    return absl::OkStatus();
  }
  // Narrowing reads f32 directly; from f16 to bf16 (or back) goes through a float copy.
  std::unique_ptr<float[]> widened;
  const float* floats = in.As<const float>();
  if (in.dtype != DType::kF32) {
    widened.reset(new float[static_cast<size_t>(n)]);
    ToFloats(in, n, widened.get());
    floats = widened.get();
  }
  switch (out.dtype) {
    case DType::kBF16:
      ConvertToBFloat16(floats, n, out.As<BFloat16>());
      break;
    case DType::kF16:
      ConvertToFloat16(floats, n, out.As<Float16>());
      break;
    default:
      std::memcpy(out.data, floats, static_cast<size_t>(n) * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
