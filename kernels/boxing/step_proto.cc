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
  CodecOptions options;
  options.group_size = compression.block_size();
  options.hadamard = compression.hadamard();
  switch (compression.kind()) {
    case proto::Compression::NONE:
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
    case proto::Compression::TACO_FP8:
      options.codec = Codec::kTacoFp8;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("codec ", static_cast<int>(compression.kind()),
                                                     " is not one this build knows"));
  }
  const absl::Status valid = CheckCodecOptions(options);
  if (!valid.ok()) return valid;
  return options;
}

}  // namespace oneflow
