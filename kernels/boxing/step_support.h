// What the runtime can execute of a boxing plan: one predicate over (step kind, dtype,
// SBP change) that RunBoxingStep (boxing_step.cc) and the plan verifier both call, so a
// plan the verifier accepts never fails at iteration 0 for want of an implementation.
//
// Supported today:
//  - Every kind moves any dtype: the non-reducing kinds only copy bytes.
//  - The reducing kinds, all_reduce (P -> B) and reduce_scatter (P -> S(i)), reduce f32
//    through the communicator's float collectives, and i32, i64 and u8 exactly (sum wraps
//    modulo 2^bits; max and min) by gathering every member's part and reducing locally in
//    rank order (kernels/boxing/integer_steps.cc). Integer tensors that reach a reduction
//    are labels and token ids, tiny next to activations, so gathering n parts instead of
//    a bandwidth-optimal reduce is the right trade there. f16, bf16 and f8 are not
//    reduced: that needs a float reduction with a chosen accumulation precision, which
//    the communicator does not offer (cast to f32 before the boxing).
//  - P(max) and P(min) are reduced like P(sum), but not made locally (local_partial,
//    split_to_partial, send_recv into a P): the devices other than the one holding the
//    value would need the reduction's identity element (-inf/+inf, INT_MIN/INT_MAX),
//    which the local kinds do not write; they write zeros, the identity of sum.
//
// Whether `from -> to` is the change `kind` makes, and whether the step is valid at its
// place in an N-D SBP, are questions of validity (INVALID_ARGUMENT), not of support; the
// callers check them separately (boxing_step.cc ChangeMismatch, the verifier).
#ifndef KERNELS_BOXING_STEP_SUPPORT_H_
#define KERNELS_BOXING_STEP_SUPPORT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing_plan.h"

namespace oneflow {

// OK when the runtime can execute a boxing step of `kind` that changes one hierarchy
// axis from `from` to `to` on a tensor of `dtype`; UNIMPLEMENTED naming the kind, the
// dtype and the SBPs, and what would be supported, otherwise:
//   all_reduce P -> B of f16 is not supported: reductions are implemented for f32, i32,
//   i64 and u8
//   local_partial B -> P(max) of f32 is not supported: making P(max) locally needs its
//   identity element; only P(sum)
// For kSendRecv, `from` and `to` are the SBPs of one hierarchy axis of the source and of
// the destination placement.
absl::Status CheckStepSupported(BoxingKind kind, DType dtype, const Sbp& from, const Sbp& to);

// How a collective group lies across nodes, for the two-level compressed collectives
// (kernels/compression/compressed_collectives.h): group rank = node position *
// local_size + local position.
struct NodeLayout {
  int64_t nodes = 0;
  int64_t local_size = 0;
};

// The layout of a group whose member g lives on node member_nodes[g], when the group
// can run a two-level step: its members listed node by node (each node's members
// consecutive), the same number on every node, more than one node and more than one
// member per node (with one of either, one level is all there is). INVALID_ARGUMENT
// otherwise, saying which rule fails and listing the nodes:
//   its members are on nodes [0, 1, 0, 1]; a two-level step needs them listed node by node
// Both the runtime (per group of the step) and the plan verifier (per collective) ask.
absl::StatusOr<NodeLayout> TwoLevelLayout(absl::Span<const int64_t> member_nodes);

// The step kind a plan names (BoxingStepDef.kind: "all_reduce", ...; BoxingKindName's
// inverse, exact); INVALID_ARGUMENT naming the text and listing the kinds for an unknown
// name:
//   unknown step kind 'all_gathr'; the kinds are identity, all_reduce, reduce_scatter,
//   all_gather, all_to_all, local_slice, local_partial, split_to_partial, send_recv
absl::StatusOr<BoxingKind> ParseBoxingKind(absl::string_view name);

}  // namespace oneflow

#endif  // KERNELS_BOXING_STEP_SUPPORT_H_
