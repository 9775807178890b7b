// Internal to kernels/boxing: a validated per-axis step as one device sees it, with the
// slices of every member of its group, and the code of each kind.
#ifndef KERNELS_BOXING_GROUP_STEP_H_
#define KERNELS_BOXING_GROUP_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/boxing/boxing_step.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing_internal {

struct GroupStep {
  BoxingKind kind = BoxingKind::kIdentity;
  int64_t axis = 0;
  int64_t me = 0;  // this device's rank in the group: its coordinate on `axis`
  // Per group member g (coordinate g on `axis`): its slices under src and dst.
  std::vector<TensorSlice> src;
  std::vector<TensorSlice> dst;
  int64_t element_size = 0;
  ReduceOp reduce_op = ReduceOp::kSum;  // of the P being reduced
  // "boxing step all_gather axis 1 of f32 [5, 7]: [S(0), S(0)] -> [S(0), B] on
  // cpu{0:0-3}[2, 2], rank 2": the start of every error.
  std::string name;
  // Packing buffers, kept from act to act so that a prepared step allocates only on its
  // first act (PreparedBoxingStep; one thread runs a step at a time).
  mutable std::vector<char> send_scratch;
  mutable std::vector<char> receive_scratch;
  // Compressed steps: what the acts exchanged; for a two-level step, in the node and
  // across nodes (zero for the others).
  mutable CompressedTraffic traffic;
  mutable CompressedTraffic cross_node_traffic;
  // Error feedback's residual (BoxingStepArgs::error_feedback), sized at preparation;
  // empty without it.
  mutable std::vector<float> residual;

  int64_t size() const { return static_cast<int64_t>(src.size()); }
  absl::Status Error(absl::string_view message) const;  // INVALID_ARGUMENT, prefixed
};

// The collective kinds (collective_steps.cc). Preconditions: the step was validated and
// checked for the whole group (so every member takes the same path).
absl::Status RunAllReduce(const GroupStep& step, const BoxingStepArgs& args);
absl::Status RunReduceScatter(const GroupStep& step, const BoxingStepArgs& args);
absl::Status RunAllGather(const GroupStep& step, const BoxingStepArgs& args);
absl::Status RunAllToAll(const GroupStep& step, const BoxingStepArgs& args);

// The reducing kinds for i32, i64 and u8 (integer_steps.cc), which RunAllReduce and
// RunReduceScatter hand over to: the communicator reduces floats only, so the members'
// parts are gathered as bytes (AllGather, AllToAll) and reduced locally in rank order.
absl::Status RunIntegerAllReduce(const GroupStep& step, const BoxingStepArgs& args);
absl::Status RunIntegerReduceScatter(const GroupStep& step, const BoxingStepArgs& args);

// PreparedBoxingStep::Prepare's checks of args.compression and
// args.cross_node_compression for a validated step (step_compression.cc): UNIMPLEMENTED
// for a kind or dtype without a compressed form, INVALID_ARGUMENT for codec options the
// codec refuses, a cross-node codec without an in-node one, a group of the step that is
// not regular across nodes (every group, so all devices fail alike), and in-node or
// cross-node communicators missing or not this device's.
absl::Status CheckCompression(const GroupStep& step, const BoxingStepArgs& args);

// With args.error_feedback, the floats of the step's residual (kernels/compression's
// *ResidualElements for the call the step makes); INVALID_ARGUMENT for a step that has
// no error feedback (not a compressed f32 all_reduce or reduce_scatter). 0 without it.
absl::StatusOr<int64_t> ResidualElements(const GroupStep& step, const BoxingStepArgs& args);

// The options passed to the communicator: the caller's, with the step's reduction.
CollectiveOptions StepOptions(const GroupStep& step, const BoxingStepArgs& args);

}  // namespace boxing_internal
}  // namespace oneflow

#endif  // KERNELS_BOXING_GROUP_STEP_H_
