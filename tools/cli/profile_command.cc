#include "tools/cli/profile_command.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "actors/trace.h"
#include "plan/plan_io.h"
#include "tools/cli/profile_report.h"

ABSL_FLAG(int32_t, top, 10,
          "profile: rows of the op type and actor tables and of the critical path's contributors "
          "(0: all).");

// Defined by inspect_command.cc: one --format for every subcommand that has several.
ABSL_DECLARE_FLAG(std::string, format);

namespace oneflow::cli {
namespace {

absl::Status RunProfile(const std::vector<std::string>& arguments, std::ostream& out) {
  // Flags are checked before the files are read: a typo should not wait on a big trace.
  OF_ASSIGN_OR_RETURN(const ProfileFormat format, ParseProfileFormat(absl::GetFlag(FLAGS_format)));
  const int32_t top = absl::GetFlag(FLAGS_top);
  if (top < 0) return absl::InvalidArgumentError(absl::StrCat("--top=", top, " is negative; valid: 0 (all) or more"));
  // `profile TRACE.json`: the trace carries its plan; `profile PLAN TRACE.json` names it
  // (for traces written before they carried it).
  const std::string& trace_path = arguments.back();
  absl::StatusOr<proto::Plan> read =
      arguments.size() == 1 ? actors::ReadPlanOfChromeTrace(trace_path) : ReadPlanFile(arguments[0]);
  // `profile PLAN` alone: say what is missing instead of quoting a plan's bytes as a bad trace.
  if (!read.ok() && arguments.size() == 1 && ReadPlanFile(trace_path).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", trace_path, "' is a plan, not a trace; profile reads a trace of a run: `oneflow run ", trace_path,
        " --trace=FILE.json`, then `oneflow profile FILE.json`"));
  }
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, std::move(read));
  OF_ASSIGN_OR_RETURN(const ProfileReport report, ProfileTrace(plan, trace_path));
  out << RenderProfile(plan, report, {format, top});
  out.flush();
  if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
}

}  // namespace

Subcommand ProfileSubcommand() {
  Subcommand command;
  command.name = "profile";
  command.arguments = "[PLAN] TRACE.json";
  command.flag_usage = "[--top=N] [--format=text|json]";
  command.summary =
      "where a traced step went: per op type, actor and device thread, and the critical path of an iteration";
  command.flags = {"top", "format"};
  command.flag_help = {{"format", "text (tables for people) or json (one object)."}};
  command.min_arguments = 1;
  command.max_arguments = 2;
  command.run = &RunProfile;
  return command;
}

}  // namespace oneflow::cli
