#include "oneflow_core/ops/op_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace op_util {

absl::Status ExpectRank(const std::string& arg, const TensorType& type, int64_t rank) {
  if (type.shape.rank() == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input '", arg, "' must have rank ", rank,
                                                 ", got ", type.ToString()));
}

absl::Status ExpectRankAtLeast(const std::string& arg, const TensorType& type, int64_t rank) {
  if (type.shape.rank() >= rank) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input '", arg, "' must have rank >= ", rank,
                                                 ", got ", type.ToString()));
}

absl::Status ExpectFloating(const std::string& arg, const TensorType& type) {
  if (IsFloating(type.dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input '", arg,
                                                 "' must be a floating type (f32, f16, bf16), "
                                                 "got ",
                                                 type.ToString()));
}

absl::Status ExpectSameDType(const std::string& arg_a, const TensorType& a,
                             const std::string& arg_b, const TensorType& b) {
  if (a.dtype == b.dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("inputs '", arg_a, "' ", a.ToString(), " and '",
                                                 arg_b, "' ", b.ToString(),
                                                 " must have the same dtype"));
}

absl::Status ExpectSameType(const std::string& arg_a, const TensorType& a,
                            const std::string& arg_b, const TensorType& b) {
  if (a == b) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("inputs '", arg_a, "' ", a.ToString(), " and '",
                                                 arg_b, "' ", b.ToString(),
                                                 " must have the same type"));
}

absl::Status ExpectIndices(const std::string& arg, const TensorType& type) {
  if (type.dtype == DType::kI32 || type.dtype == DType::kI64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("input '", arg, "' must be i32 or i64 indices, got ", type.ToString()));
}

absl::StatusOr<int64_t> NormalizeAxis(const std::string& attr, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("attribute ", attr, "=", axis,
                                                   " is out of range for rank ", rank,
                                                   "; valid: ", -rank, "..", rank - 1));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::string& attr,
                                                   std::vector<int64_t> axes, int64_t rank,
                                                   bool empty_means_all) {
  if (axes.empty() && empty_means_all) {
    for (int64_t axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  for (int64_t& axis : axes) {
    absl::StatusOr<int64_t> normalized = NormalizeAxis(attr, axis, rank);
    if (!normalized.ok()) return normalized.status();
    axis = *normalized;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

std::vector<SbpSignature> UnarySignatures(int64_t rank, bool linear,
                                          const std::vector<int64_t>& excluded) {
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank; ++axis) {
    if (std::find(excluded.begin(), excluded.end(), axis) != excluded.end()) continue;
    signatures.push_back({{Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  if (linear) signatures.push_back({{Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

std::vector<SbpSignature> LinearInFirstSignatures(int64_t rank, int64_t num_inputs,
                                                  const std::vector<int64_t>& excluded) {
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank; ++axis) {
    if (std::find(excluded.begin(), excluded.end(), axis) != excluded.end()) continue;
    signatures.push_back(
        {std::vector<Sbp>(num_inputs, Sbp::Split(axis)), {Sbp::Split(axis)}});
  }
  signatures.push_back({std::vector<Sbp>(num_inputs, Sbp::Broadcast()), {Sbp::Broadcast()}});
  // Linear in the first input for fixed others: partial first inputs give partial outputs.
  std::vector<Sbp> partial_first(num_inputs, Sbp::Broadcast());
  partial_first[0] = Sbp::Partial();
  signatures.push_back({partial_first, {Sbp::Partial()}});
  return signatures;
}

}  // namespace op_util
}  // namespace oneflow
