// A reference executor of boxing plans on per-device buffers, for tests.
//
// It answers "does this plan really turn the source layout into the destination
// layout?" with real data, independently of how PlanBoxing chose the plan:
//  - Distribute lays out a logical tensor: each device gets DeviceSlice of it, and
//    partial (P) axes get a genuine random decomposition (the devices that differ only
//    in P coordinates hold random parts summing to the value), so a plan that forgets a
//    reduction, or reduces twice, produces wrong numbers.
//  - SimulateStep moves data as the step's collective would: an all-reduce sums the
//    buffers of each group, an all-gather copies from group members, a local slice
//    reads only the device's own buffer, and so on. A device only ever reads the
//    buffers of its own group (the devices that differ only in the step's hierarchy
//    axis), so a step that is not valid at its place in an N-D SBP fails with an error
//    naming the element no group member holds.
//  - CheckHoldsLogical compares every device with DeviceSlice of the logical tensor
//    (for P axes: the sum over the P coordinates).
// Plain C++, single-threaded, no communicators: what is checked is the plan, not the
// collectives' implementations.
#ifndef SBP_BOXING_SIMULATOR_H_
#define SBP_BOXING_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing_plan.h"

namespace oneflow {

// A tensor as the devices of one placement hold it.
struct SimulatedTensor {
  NdSbp nd_sbp;
  // buffers[rank]: the dense row-major buffer of DeviceSlice(logical, nd_sbp, rank).
  std::vector<std::vector<float>> buffers;
};

// Lays out `values` (the logical tensor, row-major, logical.NumElements() of them)
// under `nd_sbp` on `placement`. Partial parts are drawn from `seed`. Errors: an SBP
// that does not fit, a wrong number of values.
absl::StatusOr<SimulatedTensor> Distribute(const Shape& logical, const std::vector<float>& values,
                                           const NdSbp& nd_sbp, const Placement& placement,
                                           uint64_t seed);

// Applies one step in place. `placement` holds the tensor before the step and
// `next_placement` after it; they differ only for kSendRecv. Errors (INTERNAL, as they
// are planner bugs): step.src differs from tensor->nd_sbp, a per-axis step that changes
// another axis, a send/recv from a partial source, or a device that needs an element
// its group does not hold.
absl::Status SimulateStep(const Shape& logical, const BoxingStep& step, const Placement& placement,
                          const Placement& next_placement, SimulatedTensor* tensor);

// Distributes `values` under `src` on `src_placement` and applies every step of `plan`
// (switching to `dst_placement` at its send/recv).
absl::StatusOr<SimulatedTensor> SimulatePlan(const Shape& logical, const std::vector<float>& values,
                                             const NdSbp& src, const Placement& src_placement,
                                             const BoxingPlan& plan, const Placement& dst_placement,
                                             uint64_t seed);

// OK when every device of `placement` holds DeviceSlice(tensor.nd_sbp) of `values`
// within `tolerance` (absolute); for P axes, the sum over the devices that differ only
// in P coordinates must. Otherwise INTERNAL naming the first wrong device and element:
//   rank 2 (coordinate 1, 0) element [3, 4]: holds 0.5, the logical value is 1.25
absl::Status CheckHoldsLogical(const Shape& logical, const std::vector<float>& values,
                               const SimulatedTensor& tensor, const Placement& placement,
                               float tolerance);

}  // namespace oneflow

#endif  // SBP_BOXING_SIMULATOR_H_
