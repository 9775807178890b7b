#include "kernels/boxing/step_proto.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace {

constexpr std::pair<BoxingKind, proto::BoxingStepKind> kKinds[] = {
    {BoxingKind::kIdentity, proto::STEP_IDENTITY},
    {BoxingKind::kAllReduce, proto::STEP_ALL_REDUCE},
    {BoxingKind::kReduceScatter, proto::STEP_REDUCE_SCATTER},
    {BoxingKind::kAllGather, proto::STEP_ALL_GATHER},
    {BoxingKind::kAllToAll, proto::STEP_ALL_TO_ALL},
    {BoxingKind::kLocalSlice, proto::STEP_LOCAL_SLICE},
    {BoxingKind::kLocalPartial, proto::STEP_LOCAL_PARTIAL},
    {BoxingKind::kSplitToPartial, proto::STEP_SPLIT_TO_PARTIAL},
    {BoxingKind::kSendRecv, proto::STEP_SEND_RECV},
};

// proto::Compression's reserved kind 5, TACO_FP8 in plans written before the codec was
// named for what it is (FP8_E4M3 with hadamard; plan.proto).
constexpr int kRemovedTacoFp8 = 5;

// One level of a Compression: its kind, group size, rotation and rounding.
absl::StatusOr<CodecOptions> CodecFrom(proto::Compression::Kind kind, int64_t block_size, bool hadamard,
                                       proto::Compression::Rounding rounding) {
  CodecOptions options;
  options.group_size = block_size;
  options.hadamard = hadamard;
  if (!proto::Compression::Rounding_IsValid(rounding)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rounding ", static_cast<int>(rounding), " is not one this build knows (NEAREST, STOCHASTIC)"));
  }
  options.stochastic_rounding = rounding == proto::Compression::STOCHASTIC;
  switch (kind) {
    case proto::Compression::NONE:
      if (options.stochastic_rounding) {
        return absl::InvalidArgumentError("rounding STOCHASTIC on a dense step; only int4 and int8 encoders round");
      }
      return CodecOptions();
    case proto::Compression::FP8_E4M3:
      options.codec = Codec::kFp8E4M3;
      break;
    case proto::Compression::FP8_E5M2:
      options.codec = Codec::kFp8E5M2;
      break;
    case proto::Compression::INT4:
      options.codec = Codec::kInt4;
      break;
    case proto::Compression::INT8:
      options.codec = Codec::kInt8;
      break;
    case proto::Compression::BF16:
      options.codec = Codec::kBf16;
      break;
    default:
      if (static_cast<int>(kind) == kRemovedTacoFp8) {
        return absl::InvalidArgumentError(
            "codec 5 (TACO_FP8) is no longer run: it was FP8_E4M3 with hadamard and a second scale per group; "
            "recompile the plan (its activation steps become FP8_E4M3 with hadamard)");
      }
      return absl::InvalidArgumentError(
          absl::StrCat("codec ", static_cast<int>(kind), " is not one this build knows"));
  }
  const absl::Status valid = CheckCodecOptions(options);
  if (!valid.ok()) return valid;
  return options;
}

}  // namespace

proto::BoxingStepKind BoxingKindToProto(BoxingKind kind) {
  for (const auto& [ours, theirs] : kKinds) {
    if (ours == kind) return theirs;
  }
  return proto::STEP_INVALID;  // Unreachable: the table lists every BoxingKind.
}

absl::StatusOr<BoxingKind> BoxingKindFromProto(proto::BoxingStepKind kind) {
  std::vector<std::string> names;
  for (const auto& [ours, theirs] : kKinds) {
    if (theirs == kind) return ours;
    names.emplace_back(BoxingKindName(ours));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown step kind ", static_cast<int>(kind),
                                                 "; this build runs ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<CodecOptions> CodecFromProto(const proto::Compression& compression) {
  absl::StatusOr<CodecOptions> codec =
      CodecFrom(compression.kind(), compression.block_size(), compression.hadamard(), compression.rounding());
  if (codec.ok()) codec->fitted_int4_scale = compression.fitted_int4_scale();
  return codec;
}

uint64_t StochasticRoundingSeed(const proto::Compression& compression, int64_t act) {
  return MixSeed(compression.rounding_seed(), act);
}

absl::StatusOr<StepCompression> StepCompressionFromProto(const proto::Compression& compression) {
  StepCompression step;
  absl::StatusOr<CodecOptions> codec = CodecFromProto(compression);
  if (!codec.ok()) return codec.status();
  step.codec = *codec;
  // One rounding for both levels; a dense cross-node level (one-level step) has none.
  absl::StatusOr<CodecOptions> cross_node =
      CodecFrom(compression.cross_node_kind(), compression.cross_node_block_size(), compression.cross_node_hadamard(),
                compression.cross_node_kind() == proto::Compression::NONE ? proto::Compression::NEAREST
                                                                          : compression.rounding());
  if (!cross_node.ok()) {
    return absl::Status(cross_node.status().code(), absl::StrCat("cross-node ", cross_node.status().message()));
  }
  step.cross_node = *cross_node;
  step.cross_node.fitted_int4_scale = compression.fitted_int4_scale();
  if (step.two_level() && step.codec.codec == Codec::kNone) {
    return absl::InvalidArgumentError(absl::StrCat("cross-node codec ", CodecName(step.cross_node.codec),
                                                   " without an in-node codec; a two-level step compresses "
                                                   "both levels"));
  }
  return step;
}

}  // namespace oneflow
