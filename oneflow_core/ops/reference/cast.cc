// Reference kernel of cast: the value a tensor of the target dtype holds, in double
// (f32 rounds to float; f16 and bf16 round to nearest even through float, as the
// storage conversions of oneflow_core/dtype.h do).
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace reference {

Outputs Cast(const KernelArgs& args) {
  OF_ASSIGN_OR_RETURN(const DType dtype, CastTargetDType(args.attrs));
  Dense out = Map(args.in(0), [dtype](double x) -> double {
    const float value = static_cast<float>(x);
    if (dtype == DType::kBF16) return ToFloat(ToBFloat16(value));
    if (dtype == DType::kF16) return ToFloat(ToFloat16(value));
    return value;
  });
  out.dtype = dtype;
  return std::vector<Dense>{std::move(out)};
}

}  // namespace reference
}  // namespace oneflow
