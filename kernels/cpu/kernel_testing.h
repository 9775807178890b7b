// Test helper: runs a CPU kernel on reference Dense tensors with exactly the arguments
// EvaluateReference takes, and returns its results in the same form, so a test compares
// the two with one call each:
//
//   ReferenceContext context = ...;  // layouts of a device's slices, the step
//   auto want = EvaluateReference("softmax", inputs, attrs, context);
//   auto got = RunCpuKernel("softmax", inputs, attrs, context);
//
// Float inputs are rounded to their dtype (RoundToFloat them first so the reference sees the
// same values); index inputs are stored as i32 or i64 per their dtype. Output buffers
// start as NaN, so an element a kernel fails to write shows up in any comparison.
#ifndef KERNELS_CPU_KERNEL_TESTING_H_
#define KERNELS_CPU_KERNEL_TESTING_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/ops/reference/dense.h"
#include "oneflow_core/ops/reference/reference.h"

namespace oneflow {

// The op's outputs in OpDefinition::outputs order, or for updates the new values of its
// updated inputs in OpDefinition::updated_inputs order (as EvaluateReference). Output
// shapes come from the op's inference on the logical input types and from
// context.outputs (whole tensors when empty). Errors: an unknown op, inputs the
// inference rejects, and whatever the kernel returns.
absl::StatusOr<std::vector<Dense>> RunCpuKernel(const std::string& op_type,
                                                const std::vector<Dense>& inputs,
                                                const AttrMap& attrs,
                                                const ReferenceContext& context = {});

// `dense` with floating values rounded to float precision, or to bf16/f16 for those
// dtypes, as the kernel's buffer holds them (index values unchanged).
Dense RoundToFloat(Dense dense);

// EvaluateGraph (oneflow_core/ops/reference/evaluate_graph.h) with the CPU kernels: the
// ops in graph order on whole tensors, feeds rounded to float, updates replacing the
// values of the tensors they update. Returns the feeds and every op output; errors name
// the op.
absl::StatusOr<std::map<std::string, Dense>> EvaluateGraphWithCpuKernels(
    const Graph& graph, const std::map<std::string, Dense>& feeds, int64_t step = 0);

}  // namespace oneflow

#endif  // KERNELS_CPU_KERNEL_TESTING_H_
