// A boxing step's kind and compression as the plan writes them (proto::BoxingStepKind,
// proto::Compression) and as the compiler and the runtime use them (BoxingKind,
// CodecOptions): the one place the two spellings meet.
#ifndef KERNELS_BOXING_STEP_PROTO_H_
#define KERNELS_BOXING_STEP_PROTO_H_

#include <cstdint>

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

// A step's compression as the runtime runs it: codec, group size (block_size), Hadamard,
// rounding (STOCHASTIC sets stochastic_rounding; the seed is per act,
// StochasticRoundingSeed). NONE gives Codec::kNone. A kind or rounding this build does
// not know is INVALID_ARGUMENT naming the number (kind 5, the removed TACO_FP8 of older
// plans, says to recompile the plan); options the codec refuses (CheckCodecOptions:
// STOCHASTIC with an fp8 codec) and STOCHASTIC on NONE are INVALID_ARGUMENT too.
absl::StatusOr<CodecOptions> CodecFromProto(const proto::Compression& compression);

// The CodecOptions::seed of act `act` (iteration * micro-batches + micro-batch) of a
// step with STOCHASTIC rounding: Compression.rounding_seed mixed with the act number
// (MixSeed). The compressed collectives then mix in the encoding rank and key each
// element by its index, so the numbers are a function of (rounding_seed, act, rank in the
// group, element) only: the same on a rerun and after a resume, whatever thread runs it.
uint64_t StochasticRoundingSeed(const proto::Compression& compression, int64_t act);

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
