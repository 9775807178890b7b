// cast(x; dtype) converts a floating tensor to another floating storage type: f32 -> bf16
// rounds to nearest even (oneflow_core/dtype.h), bf16 -> f32 is exact. The compiler's
// activation_storage pass inserts it under --precision=bf16 to keep activations that
// backward reads in bf16 and widen them back to f32 for their backward readers.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<DType> CastTargetDType(const AttrMap& attrs) {
  auto it = attrs.find("dtype");
  const std::string* name = it == attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (name == nullptr) return absl::InvalidArgumentError("attribute 'dtype' (a floating dtype name) is required");
  OF_ASSIGN_OR_RETURN(const DType dtype, ParseDType(*name));
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'dtype' is '", *name, "'; cast converts between f32, f16 and bf16"));
  }
  return dtype;
}

namespace {

absl::StatusOr<std::vector<TensorType>> InferCast(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const DType from = inputs[0].dtype;
  if (from != DType::kF32 && from != DType::kF16 && from != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'x' must be f32, f16 or bf16, got ", inputs[0].ToString()));
  }
  OF_ASSIGN_OR_RETURN(const DType dtype, CastTargetDType(attrs));
  return std::vector<TensorType>{{inputs[0].shape, dtype}};
}

}  // namespace

OpDefinition CastDefinition() {
  // Rounding does not commute with summation: no P -> P.
  return {"cast", {"x"}, {"out"}, InferCast,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/false);
          },
          "cast"};
}

}  // namespace oneflow
