// Small helpers shared by the op definitions: argument checks with uniform messages and
// the common signature patterns.
#ifndef ONEFLOW_CORE_OPS_OP_UTIL_H_
#define ONEFLOW_CORE_OPS_OP_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "oneflow_core/ops/op_definition.h"

namespace oneflow {
namespace op_util {

// "input 'a' must have rank 2, got f32[3]".
absl::Status ExpectRank(const std::string& arg, const TensorType& type, int64_t rank);
absl::Status ExpectRankAtLeast(const std::string& arg, const TensorType& type, int64_t rank);
absl::Status ExpectFloating(const std::string& arg, const TensorType& type);
absl::Status ExpectSameDType(const std::string& arg_a, const TensorType& a,
                             const std::string& arg_b, const TensorType& b);

// An axis attribute in [-rank, rank) normalized to [0, rank); error names the attribute.
absl::StatusOr<int64_t> NormalizeAxis(const std::string& attr, int64_t axis, int64_t rank);

// S(i) -> S(i) for every axis of `rank` not in `excluded`, plus B -> B, and P -> P when
// `linear` (the op commutes with summation). For ops with one input and one output.
std::vector<SbpSignature> UnarySignatures(int64_t rank, bool linear,
                                          const std::vector<int64_t>& excluded = {});

}  // namespace op_util
}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_OP_UTIL_H_
