// The edges of the boxing search on one placement: change the SBP of one hierarchy
// axis by one conversion over that axis's groups.
//
// Why not every single-axis change is a valid step: the groups of axis k hold
// sub-tensors obtained by applying the OTHER axes' SBPs; for the step to be a 1-D
// conversion inside each group, the SBPs of axes after k (applied later, i.e. nested
// inside) must commute with the old and new SBP of axis k. They do unless an inner
// axis splits the same tensor axis that axis k splits before or after. Example on
// [2, 2]: [S(0), S(0)] -> [B, S(0)] on axis 0 is invalid, since under [S(0), S(0)] the
// inner split cuts the outer halves, while under [B, S(0)] it cuts the whole rows; a
// device's new rows live in the other group. Axes before k only narrow the group
// tensor, so they never forbid a step; the innermost axis can always change.
#ifndef SBP_BOXING_AXIS_STEP_H_
#define SBP_BOXING_AXIS_STEP_H_

#include <cstdint>
#include <optional>

#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing/context.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing {

// True when changing axis `axis` of `from` to `to` is one collective over the axis's
// groups (see the top of this file). A one-device axis can always change (a relabel).
bool IsAxisStepValid(const NdSbp& from, int64_t axis, const Sbp& to, const Shape& hierarchy);

// The shape of the largest group tensor of axis `axis` under `from` (coordinate 0 on
// every other axis). Preconditions: `from` fits the logical shape and hierarchy.
Shape GroupTensorShape(const Shape& logical, const NdSbp& from, int64_t axis,
                       const Shape& hierarchy);

// The step from `from` to `from` with axis `axis` set to `to` (!= from.at(axis)) on
// `placement`, with bytes, seconds, compression and reason filled in; nullopt when the
// step is not valid. A one-device axis gives a kIdentity relabel of 0 bytes.
// Preconditions: `from` and `to` fit context.logical and the hierarchy; partial SBPs
// are sums.
std::optional<BoxingStep> MakeAxisStep(const BoxingContext& context, const Placement& placement,
                                       const NdSbp& from, int64_t axis, const Sbp& to);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_AXIS_STEP_H_
