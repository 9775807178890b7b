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

}  // namespace oneflow
