#include "tools/cli/inspect.h"

#include "tools/cli/inspect_html.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "oneflow_core/status.h"
#include "tools/cli/inspect_render.h"
#include "plan/plan_check.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

// "0..1 (or a node:device id: 0:0, 0:1)", or "none (the plan has no devices)".
std::string ValidDevices(const proto::Plan& plan) {
  if (plan.devices_size() == 0) return "none (the plan has no devices)";
  std::vector<std::string> ids;
  for (const proto::DevicePlan& device : plan.devices()) {
    ids.push_back(DeviceIdText(device.device()));
  }
  return absl::StrCat("0..", plan.devices_size() - 1,
                      " (or a node:device id: ", absl::StrJoin(ids, ", "), ")");
}

}  // namespace

std::string DeviceTitle(const proto::Plan& plan, int device) {
  return absl::StrCat("device ", device, " (", DeviceIdText(plan.devices(device).device()), ")");
}

std::string BucketKindText(const proto::GradientBucketDef& bucket, const PlanIndex& index) {
  const proto::CollectiveDef* collective = index.FindCollective(bucket.collective_id());
  return collective != nullptr && collective->kind() == proto::REDUCE_SCATTER ? "reduce_scatter" : "all_reduce";
}

absl::StatusOr<InspectFormat> ParseInspectFormat(absl::string_view text) {
  if (text == "text") return InspectFormat::kText;
  if (text == "json") return InspectFormat::kJson;
  if (text == "dot") return InspectFormat::kDot;
  if (text == "html") return InspectFormat::kHtml;
  return absl::InvalidArgumentError(
      absl::StrCat("--format='", text, "' is not a format; valid: text, json, dot, html"));
}

absl::StatusOr<std::optional<int>> ParseDeviceFlag(absl::string_view text,
                                                   const proto::Plan& plan) {
  if (text.empty()) return std::optional<int>();
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  int64_t index = -1;
  if (parts.size() == 2) {
    int64_t node = 0;
    int64_t device = 0;
    if (absl::SimpleAtoi(parts[0], &node) && absl::SimpleAtoi(parts[1], &device)) {
      for (int d = 0; d < plan.devices_size(); ++d) {
        const proto::DeviceId& id = plan.devices(d).device();
        if (id.node() == node && id.device() == device) return std::optional<int>(d);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "--device='", text, "' names no device of the plan; valid: ", ValidDevices(plan)));
    }
  } else if (parts.size() == 1 && absl::SimpleAtoi(parts[0], &index)) {
    if (index >= 0 && index < plan.devices_size()) {
      return std::optional<int>(static_cast<int>(index));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--device='", text, "' is out of range; valid: ", ValidDevices(plan)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device='", text,
                   "' is not a device index or node:device id; valid: ", ValidDevices(plan)));
}

absl::StatusOr<std::string> InspectPlan(const proto::Plan& plan, const InspectOptions& options) {
  OF_RETURN_IF_ERROR(CheckPlanForInspection(plan));
  if (options.device.has_value() &&
      (*options.device < 0 || *options.device >= plan.devices_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device='", *options.device, "' is out of range; valid: ", ValidDevices(plan)));
  }
  if (options.measured.has_value() &&
      static_cast<int>(options.measured->bubble.devices.size()) != plan.devices_size()) {
    return absl::InvalidArgumentError(absl::StrCat("trace file '", options.measured->trace, "': measured ",
                                                   options.measured->bubble.devices.size(),
                                                   " devices, but the plan has ", plan.devices_size()));
  }
  const PlanIndex index(plan);
  switch (options.format) {
    case InspectFormat::kText:
      return RenderText(plan, index, options.device, options.measured);
    case InspectFormat::kJson:
      return RenderJson(plan, index, options.device, options.measured);
    case InspectFormat::kDot:
      return options.device.has_value() ? RenderDeviceDot(plan, index, *options.device)
                                        : RenderLogicalDot(plan, index);
    case InspectFormat::kHtml:
      // The page holds every device (one is chosen in it); --device only has to be valid.
      if (options.measured.has_value()) {
        return absl::InvalidArgumentError(
            "--trace is not supported with --format=html (the page shows the static actor order)");
      }
      return RenderHtml(plan, index);
  }
  return absl::InternalError("unhandled InspectFormat");
}

}  // namespace oneflow::cli
