#include "tools/cli/diagnose_command.h"

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "tools/cli/diagnose.h"

// Defined by inspect_command.cc: one --format for every subcommand that has several.
ABSL_DECLARE_FLAG(std::string, format);

namespace oneflow::cli {
namespace {

absl::Status RunDiagnose(const std::vector<std::string>& arguments, std::ostream& out) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--format='", format, "' is not a format; valid: text, json"));
  }
  std::vector<proto::FlightDump> dumps;
  for (const std::string& path : arguments) {
    OF_ASSIGN_OR_RETURN(proto::FlightDump dump, ReadFlightDump(path));
    dumps.push_back(std::move(dump));
  }
  const Diagnosis diagnosis = Diagnose(dumps);
  out << (format == "json" ? RenderDiagnosisJson(diagnosis) : RenderDiagnosisText(diagnosis));
  out.flush();
  if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
  return absl::OkStatus();
}

}  // namespace

Subcommand DiagnoseSubcommand() {
  Subcommand command;
  command.name = "diagnose";
  command.arguments = "DUMP...";
  command.flag_usage = "[--format=text|json]";
  command.summary = "hung and slow ranks and mismatched collectives from the workers' flight recorder dumps";
  command.flags = {"format"};
  command.min_arguments = 1;
  command.max_arguments = 1 << 20;
  command.run = &RunDiagnose;
  return command;
}

}  // namespace oneflow::cli
