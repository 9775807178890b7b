#include "tools/cli/report_command.h"

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "tools/cli/metrics_file.h"
#include "actors/trace.h"
#include "plan/plan_io.h"
#include "tools/cli/profile_report.h"
#include "tools/cli/run_report.h"

ABSL_FLAG(std::string, plan, "",
          "report: the plan the run trained, for a --trace written without its plan (traces carry it).");

// Defined by run_command.cc: where `run` writes the trace and `inspect` and `report` read it.
ABSL_DECLARE_FLAG(std::string, trace);

namespace oneflow::cli {
namespace {

// The tables of `oneflow profile` show every row on the page (it is searchable there).
constexpr int kAllRows = 0;

absl::Status RunReport(const std::vector<std::string>& arguments, std::ostream& out) {
  const std::string plan_path = absl::GetFlag(FLAGS_plan);
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  if (!plan_path.empty() && trace_path.empty()) {
    return absl::InvalidArgumentError(
        "--plan without --trace: the profile is of a trace (--trace=FILE.json, which carries its plan; --plan "
        "names the plan only for a trace written without it)");
  }
  RunReportInput input;
  input.metrics_path = arguments[0];
  OF_ASSIGN_OR_RETURN(input.lines, ReadMetricsFile(arguments[0]));
  ProfileTables tables;
  if (!trace_path.empty()) {
    OF_ASSIGN_OR_RETURN(const proto::Plan plan,
                        plan_path.empty() ? actors::ReadPlanOfChromeTrace(trace_path) : ReadPlanFile(plan_path));
    OF_ASSIGN_OR_RETURN(const ProfileReport report, ProfileTrace(plan, trace_path));
    tables = TabulateProfile(plan, report, kAllRows);
    input.profile = &tables;
  }
  out << RenderRunReport(input);
  out.flush();
  if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
}

}  // namespace

Subcommand ReportSubcommand() {
  Subcommand command;
  command.name = "report";
  command.arguments = "METRICS.jsonl";
  command.flag_usage = "[--trace=FILE.json [--plan=PLAN]] > run.html";
  command.summary =
      "a training run as one HTML page: loss and step-time curves, a summary, compression, and the profile";
  command.flags = {"plan", "trace"};
  command.flag_help = {{"trace", "Add the tables of `oneflow profile` for this trace (written by `oneflow run PLAN "
                                 "--trace=FILE.json`)."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunReport;
  return command;
}

}  // namespace oneflow::cli
