#include "tools/cli/inspect_command.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "oneflow_core/status.h"
#include "tools/cli/inspect.h"
#include "tools/cli/plan_io.h"

ABSL_FLAG(std::string, format, "text",
          "Output format: text (for people), json (one object, stable keys) or dot "
          "(Graphviz).");
ABSL_FLAG(std::string, device, "",
          "One device, as an index of the plan's devices (0..N-1) or a node:device "
          "id (0:1). text/json: only its section; dot: its actor graph instead of the "
          "logical graph.");

namespace oneflow::cli {
namespace {

absl::Status RunInspect(const std::vector<std::string>& arguments, std::ostream& out) {
  // The format is checked before the file is read: a typo should not wait on a big plan.
  OF_ASSIGN_OR_RETURN(const InspectFormat format, ParseInspectFormat(absl::GetFlag(FLAGS_format)));
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, ReadPlanFile(arguments[0]));
  OF_ASSIGN_OR_RETURN(const std::optional<int> device,
                      ParseDeviceFlag(absl::GetFlag(FLAGS_device), plan));
  OF_ASSIGN_OR_RETURN(const std::string text, InspectPlan(plan, {format, device}));
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
  command.flag_usage = "[--format=text|json|dot] [--device=K]";
  command.summary = "print a plan: cluster, SBPs, boxings, per-device actors, memory and traffic";
  command.flags = {"format", "device"};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunInspect;
  return command;
}

}  // namespace oneflow::cli
