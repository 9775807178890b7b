// A boxing step's kind and compression as the plan writes them (proto::BoxingStepKind,
// proto::Compression) and as the compiler and the runtime use them (BoxingKind,
// CodecOptions): the one place the two spellings meet.
#ifndef KERNELS_BOXING_STEP_PROTO_H_
#define KERNELS_BOXING_STEP_PROTO_H_

#include "absl/status/statusor.h"
#include "kernels/compression/codec.h"
#include "proto/plan.pb.h"
#include "sbp/boxing_plan.h"

namespace oneflow {

// Total: every BoxingKind has a plan value.
proto::BoxingStepKind BoxingKindToProto(BoxingKind kind);

// Inverse of BoxingKindToProto. STEP_INVALID (an unset field) and numbers this build
// does not know (a newer or damaged plan) are INVALID_ARGUMENT naming the number and
// the kinds this build runs:
//   unknown step kind 12; this build runs identity, all_reduce, reduce_scatter, ...
absl::StatusOr<BoxingKind> BoxingKindFromProto(proto::BoxingStepKind kind);

// A step's compression as the runtime runs it: codec, group size (block_size), Hadamard.
// NONE gives Codec::kNone. A kind this build does not know is INVALID_ARGUMENT naming the
// number; options the codec refuses (CheckCodecOptions) are INVALID_ARGUMENT too.
absl::StatusOr<CodecOptions> CodecFromProto(const proto::Compression& compression);

// A step's whole compression: one level, or the two-level form (proto::Compression's
// cross_node_* fields) of a reduction whose group spans nodes.
struct StepCompression {
  // The flat codec; for a two-level step, the in-node one. kNone: dense.
  CodecOptions codec;
  // The cross-node codec of a two-level step; kNone: one level.
  CodecOptions cross_node;

  bool two_level() const { return cross_node.codec != Codec::kNone; }
};

// Both levels. CodecFromProto's errors, those of the cross-node level starting with
// "cross-node "; INVALID_ARGUMENT for a cross-node codec under an in-node NONE (a
// two-level step compresses both levels: a dense in-node level is not a form the
// compressed collectives have).
absl::StatusOr<StepCompression> StepCompressionFromProto(const proto::Compression& compression);

}  // namespace oneflow

#endif  // KERNELS_BOXING_STEP_PROTO_H_
