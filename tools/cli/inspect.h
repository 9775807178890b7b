// `oneflow inspect` as a library: a Plan in, the text, JSON or DOT a user reads out.
//
// The command (inspect_command.cc) only reads the file and parses flags; everything it
// prints comes from InspectPlan, so tests check output without running a process.
//
//   OF_ASSIGN_OR_RETURN(proto::Plan plan, ReadPlanFile("a.plan"));
//   OF_ASSIGN_OR_RETURN(InspectFormat format, ParseInspectFormat("json"));
//   OF_ASSIGN_OR_RETURN(std::string json, InspectPlan(plan, {format}));
//
// The three formats and the JSON keys are described in docs/inspect.md.
#ifndef TOOLS_CLI_INSPECT_H_
#define TOOLS_CLI_INSPECT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "actors/bubble.h"
#include "proto/plan.pb.h"

namespace oneflow::cli {

enum class InspectFormat {
  // For a person: cluster, logical ops with SBPs, boxings, per-device figures.
  kText,
  // The same content as one JSON object with a fixed key order.
  kJson,
  // Graphviz: the logical graph, or one device's actor graph with a device chosen.
  kDot,
  // A self-contained page with every device (inspect_html.h); no --device, no trace.
  kHtml,
};

// "text", "json", "dot", "html". Anything else is INVALID_ARGUMENT naming the flag:
//   --format='xml' is not a format; valid: text, json, dot, html
absl::StatusOr<InspectFormat> ParseInspectFormat(absl::string_view text);

// Resolves the --device flag against `plan`: "" is no device; "K" is index K of
// plan.devices (as printed by the text format: "device 1 (0:1)"); "N:D" is the device
// with that node:device id. Anything else is INVALID_ARGUMENT naming the flag and the
// valid values:
//   --device='5' is out of range; valid: 0..1 (or a node:device id: 0:0, 0:1)
absl::StatusOr<std::optional<int>> ParseDeviceFlag(absl::string_view text, const proto::Plan& plan);

// What a trace of a run measured (`--trace=FILE`): the file as the user named it, and
// the compute threads' idle time per device (actors/bubble.h).
struct TraceBubble {
  std::string trace;
  actors::MeasuredBubble bubble;
};

struct InspectOptions {
  InspectFormat format = InspectFormat::kText;
  // An index into plan.devices. text/json: only that device appears in the per-device
  // section. dot: that device's actor graph instead of the logical graph.
  std::optional<int> device;
  // text/json: the measured bubble per pipeline stage, beside the modelled one (the
  // stages section then appears even for a plan of one stage). dot: ignored.
  std::optional<TraceBubble> measured;
};

// Checks `plan` with CheckPlanForInspection (a hand-built plan gets the same checks as
// one read from a file) and renders it. Errors: the check's, or INVALID_ARGUMENT when
// options.device is not an index of plan.devices. The output ends with a newline and
// is a pure function of the plan and options (no map order, no locale, no time).
absl::StatusOr<std::string> InspectPlan(const proto::Plan& plan, const InspectOptions& options);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_H_
