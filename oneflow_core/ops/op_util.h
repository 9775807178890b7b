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
// Same shape and dtype: "inputs 'dy' f32[4, 5] and 'y' f32[4, 6] must have the same type".
absl::Status ExpectSameType(const std::string& arg_a, const TensorType& a,
                            const std::string& arg_b, const TensorType& b);
// i32 or i64 indices: "input 'ids' must be i32 or i64 indices, got f32[4]".
absl::Status ExpectIndices(const std::string& arg, const TensorType& type);

// An axis attribute in [-rank, rank) normalized to [0, rank); error names the attribute.
absl::StatusOr<int64_t> NormalizeAxis(const std::string& attr, int64_t axis, int64_t rank);
// A list of axes normalized as above, sorted and de-duplicated; an empty list means all
// axes when `empty_means_all` (reductions), none otherwise.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::string& attr,
                                                   std::vector<int64_t> axes, int64_t rank,
                                                   bool empty_means_all);

// S(i) -> S(i) for every axis of `rank` not in `excluded`, plus B -> B, and P -> P when
// `linear` (the op commutes with summation). For ops with one input and one output.
std::vector<SbpSignature> UnarySignatures(int64_t rank, bool linear,
                                          const std::vector<int64_t>& excluded = {});

// For ops whose inputs all have the output's shape and that are linear in their first
// input only (relu_grad(dy, y), softmax_grad(dy, y), ...): every input and output S(i)
// for each axis not in `excluded`, all B, and P on the first input with B elsewhere.
std::vector<SbpSignature> LinearInFirstSignatures(int64_t rank, int64_t num_inputs,
                                                  const std::vector<int64_t>& excluded = {});

}  // namespace op_util
}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_OP_UTIL_H_
