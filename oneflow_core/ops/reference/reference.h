// A naive double-precision reference of every registered op: the semantics kernels
// must match, and the oracle of the op, signature and gradient tests.
//
//   OF_ASSIGN_OR_RETURN(std::vector<Dense> out,
//                       EvaluateReference("matmul", {a, b}, {{"transpose_b", true}}));
//
// An op's outputs come back in OpDefinition::outputs order. Optimizer updates (no
// outputs) return the new values of their updated inputs, in
// OpDefinition::updated_inputs order (sgd_update: param, momentum).
//
// The same functions run on one device's slices: ReferenceContext says where each
// physical input and output sits in its logical tensor, which the kernels that depend
// on logical positions need (dropout's mask is a function of the logical index, a
// vocab-parallel embedding needs its row offset, reduce_mean divides by the logical
// count, causal_mask compares logical rows and columns).
#ifndef ONEFLOW_CORE_OPS_REFERENCE_REFERENCE_H_
#define ONEFLOW_CORE_OPS_REFERENCE_REFERENCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/reference/dense.h"
#include "oneflow_core/shape.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {

// TensorLayout (tensor_slice.h): where a physical tensor sits in its logical tensor.

struct ReferenceContext {
  // One per input; empty: every input is a whole logical tensor.
  std::vector<TensorLayout> inputs;
  // One per output; empty: whole outputs of the inferred shapes.
  std::vector<TensorLayout> outputs;
  // The 0-based iteration: dropout's random stream, the learning-rate schedule and
  // Adam's bias correction (t = step + 1).
  int64_t step = 0;
};

// Outputs for whole logical inputs. Errors: an unknown type, inputs the op's inference
// rejects (its message), index values out of range (ids, labels).
absl::StatusOr<std::vector<Dense>> EvaluateReference(const std::string& type,
                                                     const std::vector<Dense>& inputs,
                                                     const AttrMap& attrs);

// As above on physical inputs placed by `context`; the inference runs on the logical
// input types.
absl::StatusOr<std::vector<Dense>> EvaluateReference(const std::string& type,
                                                     const std::vector<Dense>& inputs,
                                                     const AttrMap& attrs,
                                                     const ReferenceContext& context);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_REFERENCE_REFERENCE_H_
