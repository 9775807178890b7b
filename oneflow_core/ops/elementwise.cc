// Elementwise ops: unary (relu, gelu, scalar_mul, scalar_add, dropout, identity,
// ones_like), binary with numpy broadcasting (add, sub, mul, div), and bias_add.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferUnaryFloating(const std::vector<TensorType>& inputs,
                                                           const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  return inputs;
}

SignaturesFn UnarySignaturesFn(bool linear) {
  return [linear](const std::vector<TensorType>& inputs, const AttrMap&) {
    return op_util::UnarySignatures(inputs[0].shape.rank(), linear);
  };
}

absl::StatusOr<std::vector<TensorType>> InferDropout(const std::vector<TensorType>& inputs,
                                                     const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  const double rate = GetFloatAttr(attrs, "rate", 0.0);
  if (rate < 0.0 || rate >= 1.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute rate=", rate, " is out of range; valid: 0 <= rate < 1"));
  }
  return inputs;
}

// Numpy broadcasting: shapes align at the last axis; each pair of dims must be equal
// or one of them 1.
absl::StatusOr<std::vector<TensorType>> InferBroadcastBinary(const std::vector<TensorType>& inputs,
                                                             const AttrMap&) {
  const TensorType& x = inputs[0];
  const TensorType& y = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, "y", y));
  const int64_t rank = std::max(x.shape.rank(), y.shape.rank());
  std::vector<int64_t> dims(rank);
  for (int64_t axis = 0; axis < rank; ++axis) {
    const int64_t x_axis = axis - (rank - x.shape.rank());
    const int64_t y_axis = axis - (rank - y.shape.rank());
    const int64_t dx = x_axis >= 0 ? x.shape.dim(x_axis) : 1;
    const int64_t dy = y_axis >= 0 ? y.shape.dim(y_axis) : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes x ", x.shape.ToString(), " and y ", y.shape.ToString(),
          " do not broadcast: at output axis ", axis, " sizes ", dx, " and ", dy,
          " differ and neither is 1"));
    }
    dims[axis] = dx == 1 ? dy : dx;
  }
  return std::vector<TensorType>{{Shape(std::move(dims)), x.dtype}};
}

// Which partial-sum combinations an op preserves: add/sub take P,P; mul takes one P
// against a B; div only a P numerator.
enum class PartialRule { kBothPartial, kEitherPartial, kNumeratorPartial };

SignaturesFn BroadcastBinarySignatures(PartialRule rule) {
  return [rule](const std::vector<TensorType>& inputs, const AttrMap&) {
    const Shape& x = inputs[0].shape;
    const Shape& y = inputs[1].shape;
    const int64_t rank = std::max(x.rank(), y.rank());
    const Sbp B = Sbp::Broadcast();
    const Sbp P = Sbp::Partial();
    std::vector<SbpSignature> signatures;
    // Split output axis i: an input holding that axis at full size splits it too; an
    // input broadcasting along it (size 1 or absent) must be whole on every device.
    for (int64_t axis = 0; axis < rank; ++axis) {
      const int64_t x_axis = axis - (rank - x.rank());
      const int64_t y_axis = axis - (rank - y.rank());
      const bool x_full = x_axis >= 0 && x.dim(x_axis) != 1;
      const bool y_full = y_axis >= 0 && y.dim(y_axis) != 1;
      if (!x_full && !y_full) continue;  // Output size 1 on this axis.
      signatures.push_back({{x_full ? Sbp::Split(x_axis) : B, y_full ? Sbp::Split(y_axis) : B},
                            {Sbp::Split(axis)}});
    }
    signatures.push_back({{B, B}, {B}});
    switch (rule) {
      case PartialRule::kBothPartial:
        signatures.push_back({{P, P}, {P}});
        break;
      case PartialRule::kEitherPartial:
        signatures.push_back({{P, B}, {P}});
        signatures.push_back({{B, P}, {P}});
        break;
      case PartialRule::kNumeratorPartial:
        signatures.push_back({{P, B}, {P}});
        break;
    }
    return signatures;
  };
}

// bias_add: x [..., n] + bias [n] along the last axis.
absl::StatusOr<std::vector<TensorType>> InferBiasAdd(const std::vector<TensorType>& inputs,
                                                     const AttrMap&) {
  const TensorType& x = inputs[0];
  const TensorType& bias = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("bias", bias, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, "bias", bias));
  const int64_t last = x.shape.dim(x.shape.rank() - 1);
  if (bias.shape.dim(0) != last) {
    return absl::InvalidArgumentError(absl::StrCat("bias ", bias.shape.ToString(),
                                                   " does not match the last dimension of x ",
                                                   x.shape.ToString(), "; expected [", last, "]"));
  }
  return std::vector<TensorType>{x};
}

std::vector<SbpSignature> BiasAddSignatures(const std::vector<TensorType>& inputs,
                                            const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({{Sbp::Split(axis), B}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Split(rank - 1), Sbp::Split(0)}, {Sbp::Split(rank - 1)}});
  signatures.push_back({{B, B}, {B}});
  // Every device adds its partial bias to its partial x: the sums add up.
  signatures.push_back({{Sbp::Partial(), Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

// ones_like: the values do not depend on the input, so a partial input (whose devices
// each hold a whole-shaped part) still gives every device the whole result.
std::vector<SbpSignature> OnesLikeSignatures(const std::vector<TensorType>& inputs,
                                             const AttrMap&) {
  std::vector<SbpSignature> signatures = op_util::UnarySignatures(inputs[0].shape.rank(), false);
  signatures.push_back({{Sbp::Partial()}, {Sbp::Broadcast()}});
  return signatures;
}

}  // namespace

OpDefinition IdentityDefinition() {
  // The DSL's To(x, placement, sbp) hints the output; the compiler boxes into it.
  return {"identity",
          {"x"},
          {"out"},
          [](const std::vector<TensorType>& inputs, const AttrMap&)
              -> absl::StatusOr<std::vector<TensorType>> { return inputs; },
          UnarySignaturesFn(true),
          "identity"};
}

OpDefinition OnesLikeDefinition() {
  return {"ones_like", {"x"}, {"out"}, InferUnaryFloating, OnesLikeSignatures, "ones_like"};
}

OpDefinition ReluDefinition() {
  return {"relu", {"x"}, {"out"}, InferUnaryFloating, UnarySignaturesFn(false), "relu"};
}

OpDefinition GeluDefinition() {
  return {"gelu", {"x"}, {"out"}, InferUnaryFloating, UnarySignaturesFn(false), "gelu"};
}

OpDefinition ScalarMulDefinition() {
  return {"scalar_mul", {"x"}, {"out"}, InferUnaryFloating, UnarySignaturesFn(true),
          "scalar_mul"};
}

OpDefinition ScalarAddDefinition() {
  // Adding a constant on every device would count it once per device: no P.
  return {"scalar_add", {"x"}, {"out"}, InferUnaryFloating, UnarySignaturesFn(false),
          "scalar_add"};
}

OpDefinition DropoutDefinition() {
  // The mask is a function of (seed, logical index), the same on every layout, so
  // masking commutes with summation and P -> P is exact.
  return {"dropout", {"x"}, {"out"}, InferDropout, UnarySignaturesFn(true), "dropout"};
}

OpDefinition AddDefinition() {
  return {"add", {"x", "y"}, {"out"}, InferBroadcastBinary,
          BroadcastBinarySignatures(PartialRule::kBothPartial), "add"};
}

OpDefinition SubDefinition() {
  return {"sub", {"x", "y"}, {"out"}, InferBroadcastBinary,
          BroadcastBinarySignatures(PartialRule::kBothPartial), "sub"};
}

OpDefinition MulDefinition() {
  return {"mul", {"x", "y"}, {"out"}, InferBroadcastBinary,
          BroadcastBinarySignatures(PartialRule::kEitherPartial), "mul"};
}

OpDefinition DivDefinition() {
  return {"div", {"x", "y"}, {"out"}, InferBroadcastBinary,
          BroadcastBinarySignatures(PartialRule::kNumeratorPartial), "div"};
}

OpDefinition BiasAddDefinition() {
  return {"bias_add", {"x", "bias"}, {"out"}, InferBiasAdd, BiasAddSignatures, "bias_add"};
}

}  // namespace oneflow
