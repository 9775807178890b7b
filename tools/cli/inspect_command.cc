#include "tools/cli/inspect_command.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "actors/bubble.h"
#include "actors/trace.h"
#include "oneflow_core/status.h"
#include "tools/cli/inspect.h"
#include "plan/plan_io.h"

ABSL_FLAG(std::string, format, "text",
          "Output format: text (for people), json (one object, stable keys), dot "
          "(Graphviz) or html (a self-contained page: graph, actors, memory, collectives).");
ABSL_FLAG(std::string, device, "",
          "One device, as an index of the plan's devices (0..N-1) or a node:device "
          "id (0:1). text/json: only its section; dot: its actor graph instead of the "
          "logical graph.");

// Defined by run_command.cc: `run` writes the trace that `inspect` reads back.
ABSL_DECLARE_FLAG(std::string, trace);

namespace oneflow::cli {
namespace {

// The measured bubble of a trace written by `oneflow run PLAN --trace=FILE`; errors name
// the file (missing, not a trace, a trace of another plan, too few iterations).
absl::StatusOr<TraceBubble> MeasureTrace(const std::string& path, const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const std::vector<actors::ActRecord> acts, actors::ReadChromeTrace(path, plan));
  absl::StatusOr<actors::MeasuredBubble> bubble = actors::MeasureBubble(plan, acts);
  if (!bubble.ok()) {
    return absl::Status(bubble.status().code(),
                        absl::StrCat("trace file '", path, "': ", bubble.status().message()));
  }
  return TraceBubble{path, *std::move(bubble)};
}

absl::Status RunInspect(const std::vector<std::string>& arguments, std::ostream& out) {
  // The format is checked before the file is read: a typo should not wait on a big plan.
  OF_ASSIGN_OR_RETURN(const InspectFormat format, ParseInspectFormat(absl::GetFlag(FLAGS_format)));
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, ReadPlanFile(arguments[0]));
  OF_ASSIGN_OR_RETURN(const std::optional<int> device,
                      ParseDeviceFlag(absl::GetFlag(FLAGS_device), plan));
  InspectOptions options{format, device, std::nullopt};
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    if (format == InspectFormat::kHtml) {
      return absl::InvalidArgumentError("--trace is not supported with --format=html (the page shows the static actor order)");
    }
    OF_ASSIGN_OR_RETURN(options.measured, MeasureTrace(absl::GetFlag(FLAGS_trace), plan));
  }
  OF_ASSIGN_OR_RETURN(const std::string text, InspectPlan(plan, options));
  out << text;
  out.flush();
  if (!out)
    return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
}

}  // namespace

Subcommand InspectSubcommand() {
  Subcommand command;
  command.name = "inspect";
  command.arguments = "PLAN";
  command.flag_usage = "[--format=text|json|dot|html] [--device=K] [--trace=FILE.json]";
  command.summary = "print a plan: cluster, SBPs, boxings, per-device actors, memory and traffic";
  command.flags = {"format", "device", "trace"};
  command.flag_help = {{"trace", "Read this Chrome/Perfetto trace of the plan (written by `oneflow run PLAN --trace=FILE.json`) "
                                 "and show the measured pipeline bubble per stage."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunInspect;
  return command;
}

}  // namespace oneflow::cli
