// Executing boxing on tensors: one step of a compiler BoxingPlan (proto BoxingStepDef),
// run by one device on its own slice, over the communicator of its group.
//
// A boxing actor calls RunBoxingStep for its step, on its device's communication thread
// (collective kinds) or compute thread (local kinds); every device of the step's groups
// makes the same call at the same point of the plan's collective order. The data each
// device ends up holding is exactly what sbp/boxing_simulator.h defines for the step:
//   all_reduce        P -> B      all-reduce of the whole slice
//   reduce_scatter    P -> S(i)   reduce-scatter; chunk g is group member g's new slice
//   all_gather        S(i) -> B   all-gather of the members' slices
//   all_to_all        S(i) -> S(j) member g sends member h (its slice ∩ h's new slice)
//   local_slice       B -> S(i)   keep one's part; no communication
//   local_partial     B -> P      coordinate 0 of the axis keeps the value, others zeros
//   split_to_partial  S(i) -> P   own slice placed into zeros
//   identity          any, on a one-device axis: a copy
// Every kind moves any dtype. The reductions (all_reduce, reduce_scatter) reduce f32
// through the communicator's float collectives, and i32, i64 and u8 exactly by gathering
// the members' parts as bytes and reducing locally in rank order (integer tensors that
// reach a reduction are labels and token ids: tiny, so the extra traffic of gathering is
// cheap); integer sums wrap modulo 2^bits. Either way every member gets the same bits.
// kernels/boxing/step_support.h is the one statement of what is supported; the plan
// verifier uses it too.
// The group of a device is the devices that differ from it only in `hierarchy_axis`,
// ranked by their coordinate on that axis (compiler/passes/collective_ordering_pass.cc
// builds them the same way). N-D SBPs work on any axis: when a member's piece is not
// contiguous in a buffer (a split that is not on the outermost non-trivial axis), it is
// packed into a scratch buffer before the collective and unpacked after; when it is
// contiguous, the collective reads and writes the device buffers directly.
//
// Errors: INVALID_ARGUMENT for arguments that do not describe a valid step (an unknown
// kind, an SBP change that is not the kind's, a change on another axis, wrong buffer
// sizes, a communicator that is not this device's group, or a step that is not valid at
// its place in the N-D SBP, e.g. an outer all-gather under an inner split of the same
// tensor axis); the check covers the whole group, so every member fails alike and none
// is left waiting. UNIMPLEMENTED, from CheckStepSupported, for a reduction of f16, bf16 or
// f8 and for making a P(max)/P(min) value locally. A compressed step is refused with
// UNIMPLEMENTED on a kind or dtype that has no compressed form, and with
// INVALID_ARGUMENT for codec options the codec refuses and, for the two-level form, for
// a group that is not regular across nodes or communicators that are not this device's.
// Communicator errors (DEADLINE_EXCEEDED, ...) pass through.
#ifndef KERNELS_BOXING_BOXING_STEP_H_
#define KERNELS_BOXING_BOXING_STEP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing_plan.h"

namespace oneflow {

struct BoxingStepArgs {
  Shape logical;              // the logical tensor's shape
  DType dtype = DType::kF32;  // any; f32, i32, i64 or u8 for the reducing kinds
  BoxingKind kind = BoxingKind::kIdentity;  // BoxingStepDef.kind
  NdSbp src;                  // the N-D SBP before the step ...
  NdSbp dst;                  // ... and after; they differ only on hierarchy_axis
  int64_t hierarchy_axis = 0;
  const Placement* placement = nullptr;  // where the tensor lives (not owned)
  int64_t rank = 0;                      // this device's rank in `placement`
  // The communicator of this device's group along hierarchy_axis (size = the axis's
  // extent, rank = this device's coordinate on it). nullptr for the local kinds.
  Communicator* communicator = nullptr;
  // This device's slice under `src` (DeviceSlice(logical, src, placement, rank)), dense
  // row-major, and the buffer for its slice under `dst`. They must not overlap.
  const void* input = nullptr;
  int64_t input_bytes = 0;
  void* output = nullptr;
  int64_t output_bytes = 0;
  // Timeout and description for the collective. A reducing step reduces by its P's
  // reduction, whatever options.reduce_op says.
  CollectiveOptions options;
  // The format the step's payload travels in (BoxingStepDef.compression): kNone is
  // dense. all_reduce, reduce_scatter and all_gather of f32 tensors run the compressed
  // collectives of kernels/compression (encode, exchange, decode and reduce in f32, the
  // same bits on every rank); any other compressed step is refused at preparation.
  CodecOptions compression;
  // The two-level form (kNone: one level), for an all_reduce or reduce_scatter of f32
  // whose group spans several nodes with the same number (> 1) of members on each,
  // listed node by node (every group of the step; TwoLevelLayout in step_support.h).
  // `compression` is then the in-node codec and this the cross-node one: the
  // reduce-scatter runs TwoLevelCompressedReduceScatter (in-node exchange with
  // `compression`, node partial sums across nodes with this), the all-reduce
  // TwoLevelCompressedAllReduce, whose all-gather phase encodes each reduced shard once
  // with `compression` as well: the shard then crosses the network at the in-node
  // precision (8-bit, ZeRO++'s qwZ) rather than the cross-node one, because a gathered
  // value is not averaged with others afterwards and its error reaches the result whole.
  // There is no two-level all_gather step: a gather encodes each shard once, so it has
  // one codec, and the flat compressed all-gather over the hierarchical communicator
  // already sends each encoded shard to each other node only once.
  CodecOptions cross_node_compression;
  // Two-level steps only, in place of `communicator` (which they do not use and may be
  // null): this device's in-node group (size = members per node, rank = its position
  // on its node) and cross-node group (the members with the same position on every
  // node; size = nodes, rank = its node's position).
  Communicator* in_node_communicator = nullptr;
  Communicator* cross_node_communicator = nullptr;
  // Error feedback (BoxingStepDef.compression.error_feedback; compressed_collectives.h,
  // "Error feedback"): a compressed all_reduce, reduce_scatter or all_gather of a gradient
  // encodes what its codec dropped last act along with this act's values (an all_gather:
  // the shard this device owns and encodes). The prepared step owns
  // the residual (zeros at first; PreparedBoxingStep::residual). Any other step with it
  // is INVALID_ARGUMENT at preparation.
  bool error_feedback = false;

  bool two_level() const { return cross_node_compression.codec != Codec::kNone; }
};

namespace boxing_internal {
struct GroupStep;
}  // namespace boxing_internal

// A step validated once, when the runtime binds its actor: the group's slices are
// computed and checked for the whole group then, and its packing buffers are kept from
// act to act, so an act only moves bytes. Not thread-safe: one thread runs it at a time
// (the actor's), as the communicator contract requires anyway.
class PreparedBoxingStep {
 public:
  // Every check RunBoxingStep makes except the buffer pointers, which change per act
  // (`args.input`/`args.output` are ignored; their byte counts are checked).
  static absl::StatusOr<PreparedBoxingStep> Prepare(const BoxingStepArgs& args);

  // Runs the step on this act's buffers (of the prepared byte counts; null only when 0).
  // `rounding_seed` is this act's CodecOptions::seed for codecs that round
  // stochastically (both levels; StochasticRoundingSeed in step_proto.h); ignored otherwise.
  absl::Status Run(const void* input, void* output, CollectiveOptions options, uint64_t rounding_seed = 0);

  // Bytes this device exchanged in compressed form over all acts so far, and what they
  // weigh dense, and the squared error and signal of this device's own encodings (the
  // compressed collectives decode what they encode; actors/compression_meter.h turns them
  // into the metrics' per-codec error). Zero for a dense step. For a two-level step, the
  // in-node exchanges ...
  const CompressedTraffic& traffic() const;
  // ... and these the cross-node ones; zero for a flat or dense step. As in
  // TwoLevelTraffic (compressed_collectives.h), bytes are counted per level and errors
  // per codec: traffic() meters `compression`'s encodings (an all_reduce's gathered
  // shards included, though they cross nodes too), cross_node_traffic()
  // `cross_node_compression`'s, so each can be labelled with its codec.
  const CompressedTraffic& cross_node_traffic() const;

  // The residual of an error-feedback step (empty otherwise): allocated at preparation,
  // zeros until the first act, then what this device's encodings dropped in the last act.
  // Writable so that a checkpoint can save it and a resumed run restore it between acts.
  absl::Span<float> residual() const;

 private:
  std::shared_ptr<const boxing_internal::GroupStep> step_;
  BoxingStepArgs args_;
};

// Prepare, then Run once. Blocking; returns once `output` holds the device's slice
// under `dst` and `input` may be reused.
absl::Status RunBoxingStep(const BoxingStepArgs& args);

// The "send_recv" step between two placements: the source devices hold slices under
// `src` (no P axis: a partial value is reduced before it travels), the destination
// devices receive their slices under `dst`. A device may be in both (then what it holds
// itself is copied locally). Each destination device takes each piece of its slice from
// one source replica: itself when it holds the piece, else a replica on its node, spread
// over the replicas by destination rank. Destination devices that are not coordinate 0
// on every P axis of `dst` hold zeros, as the simulator has it.
struct SendRecvArgs {
  Shape logical;
  DType dtype = DType::kF32;
  NdSbp src;
  const Placement* src_placement = nullptr;
  NdSbp dst;
  const Placement* dst_placement = nullptr;
  DeviceId device;  // this device
  // The communicator of the union group: the source devices in rank order, then the
  // destination devices not among them in rank order (collective_ordering_pass.cc).
  Communicator* communicator = nullptr;
  // This device's source slice (null, 0 when it is not a source) and destination slice
  // buffer (null, 0 when it is not a destination).
  const void* input = nullptr;
  int64_t input_bytes = 0;
  void* output = nullptr;
  int64_t output_bytes = 0;
  CollectiveOptions options;
};

absl::Status RunSendRecv(const SendRecvArgs& args);

}  // namespace oneflow

#endif  // KERNELS_BOXING_BOXING_STEP_H_
