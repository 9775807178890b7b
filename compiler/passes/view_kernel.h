// The kernels whose output the plan may make a view of their input's bytes (proto
// RegisterDef.alias_of): the actor acts, no kernel runs. One predicate for the actor graph
// pass, which makes the views, and the auto-parallel profile, which charges them no writes.
#ifndef COMPILER_PASSES_VIEW_KERNEL_H_
#define COMPILER_PASSES_VIEW_KERNEL_H_

#include "absl/strings/string_view.h"

namespace oneflow {

// Kernels whose output on a device is always their input's bytes read with another
// shape: reshape's kernel copies the local slice whole, and its signatures pair only
// SBPs whose local slices hold the same elements in the same row-major order
// (oneflow_core/ops/shape_ops.cc); identity keeps the shape. Transpose is not one: it
// reorders elements. (A view only when the bytes are the same size and the input is not
// a variable's or a transfer's register: ActorGraphPass's MakeViewIfSameBytes.)
inline bool IsViewKernel(absl::string_view kernel) { return kernel == "reshape" || kernel == "identity"; }

}  // namespace oneflow

#endif  // COMPILER_PASSES_VIEW_KERNEL_H_
