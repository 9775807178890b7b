// A boxing step's kind as the plan writes it (proto::BoxingStepKind) and as the compiler
// and the runtime use it (BoxingKind): the one place the two spellings meet.
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

}  // namespace oneflow

#endif  // KERNELS_BOXING_STEP_PROTO_H_
