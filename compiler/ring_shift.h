// Where the compiler delivers the input of a ring_shift op (oneflow_core/ops/ring_attention.cc),
// ring attention's one communication.
//
// ring_shift rolls a tensor by `shift` blocks along a tensor axis. Split S(axis) over a
// hierarchy axis of `blocks` devices, block r of the result is block r - shift of the
// input: the device at coordinate r needs what the device at r - shift holds. No SBP
// boxing says that (boxings keep the logical value), but a placement change does: the
// input is boxed, S(axis) to S(axis), into the op's placement with that hierarchy axis
// rotated by `shift` (RingShiftedPlacement), a send/recv in which every device of the
// ring sends its block to the device `shift` places on and receives from the one `shift`
// places back; the kernel on each device then copies what arrived. Nothing else of the
// runtime changes: an op reads the boxing output on its own device (actor_graph_pass.cc).
#ifndef COMPILER_RING_SHIFT_H_
#define COMPILER_RING_SHIFT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "compiler/compilation.h"
#include "oneflow_core/placement.h"

namespace oneflow {

// `placement` with hierarchy axis `hierarchy_axis` rotated: the device at coordinate c is
// the one of `placement` at c with c[hierarchy_axis] + shift (mod its size).
Placement RingShiftedPlacement(const Placement& placement, int64_t hierarchy_axis, int64_t shift);

// Adds to graph->placements the rotated placements (every hierarchy axis whose size is
// the op's `blocks`) that the ring_shift ops of the graph may box into, so that later
// passes find them without changing the placements. Called when the graph is indexed.
// `job` is the graph's job (graph->ops[o] is job.ops(o)).
absl::Status AddRingShiftPlacements(const proto::Job& job, LogicalGraph* graph);

// The placement (index into graph.placements) op `o`'s input must be boxed into: for a
// ring_shift whose chosen input SBP splits the shifted axis, the rotated placement;
// otherwise (other ops, a ring_shift whole along the axis) the op's own. Errors name the
// op when the split is not one block per device of exactly one hierarchy axis.
absl::StatusOr<int64_t> InputPlacementOf(const Compilation& compilation, int64_t o);

}  // namespace oneflow

#endif  // COMPILER_RING_SHIFT_H_
