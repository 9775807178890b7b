#include "sbp/boxing_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {

absl::string_view BoxingKindName(BoxingKind kind) {
  switch (kind) {
    case BoxingKind::kIdentity:
      return "identity";
    case BoxingKind::kAllReduce:
      return "all_reduce";
    case BoxingKind::kReduceScatter:
      return "reduce_scatter";
    case BoxingKind::kAllGather:
      return "all_gather";
    case BoxingKind::kAllToAll:
      return "all_to_all";
    case BoxingKind::kLocalSlice:
      return "local_slice";
    case BoxingKind::kLocalPartial:
      return "local_partial";
    case BoxingKind::kSplitToPartial:
      return "split_to_partial";
    case BoxingKind::kSendRecv:
      return "send_recv";
  }
  return "?";
}

std::string BoxingStepToString(const BoxingStep& step) {
  std::string text(BoxingKindName(step.kind));
  if (step.kind != BoxingKind::kSendRecv) absl::StrAppend(&text, " axis ", step.hierarchy_axis);
  absl::StrAppend(&text, ": ", step.src.ToString(), " -> ", step.dst.ToString(), ", ",
                  step.bytes_per_device, " bytes/device");
  if (step.cross_node_compression.compressed()) {
    absl::StrAppend(&text, " (", CompressionChoiceText(step.compression), " in-node, ",
                    CompressionChoiceText(step.cross_node_compression), " cross-node)");
  } else if (step.compression.compressed()) {
    absl::StrAppend(&text, " (", CompressionChoiceText(step.compression), ")");
  }
  return text;
}

std::string BoxingPlanToString(const BoxingPlan& plan) {
  return absl::StrJoin(plan.steps, "\n", [](std::string* out, const BoxingStep& step) {
    absl::StrAppend(out, BoxingStepToString(step));
  });
}

}  // namespace oneflow
