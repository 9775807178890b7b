#include "tools/cli/diagnose_command.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "oneflow_core/status.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/diagnose.h"
#include "tools/launcher/job_control.h"

// Defined by inspect_command.cc: one --format for every subcommand that has several.
ABSL_DECLARE_FLAG(std::string, format);

namespace oneflow::cli {
namespace {

absl::Status RunDiagnose(const std::vector<std::string>& arguments, std::ostream& out) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--format='", format, "' is not a format; valid: text, json"));
  }
  if (!absl::GetFlag(FLAGS_nodes).empty()) {
    // A job on the daemons: every node's worker dumps (SIGUSR1) and its daemon returns it.
    if (arguments.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("with --nodes, give one job id (not ", arguments.size(), " arguments): oneflow diagnose "
                       "--nodes=HOST:PORT,... --token_file=F JOB"));
    }
    OF_ASSIGN_OR_RETURN(DaemonFlags flags, ReadDaemonFlags());
    launcher::JobControlOptions options;
    options.nodes = std::move(flags.nodes);
    options.token = std::move(flags.token);
    options.tls_ca_file = std::move(flags.tls_ca_file);
    OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::JobControl> control, launcher::JobControl::Create(std::move(options)));
    OF_ASSIGN_OR_RETURN(std::vector<launcher::NodeAnswer> answers, control->Dump(arguments[0], absl::Seconds(5)));
    std::vector<FetchedDump> fetched;
    for (const launcher::NodeAnswer& answer : answers) {
      FetchedDump& dump = fetched.emplace_back();
      dump.node = answer.rank;
      dump.json = answer.dump.dump_json();
      dump.note = answer.error.ok() ? answer.dump.note() : std::string(answer.error.message());
    }
    Diagnosis diagnosis;
    const std::string text = DiagnoseFetchedDumps(fetched, &diagnosis);
    out << (format == "json" ? RenderDiagnosisJson(diagnosis) : text);
    out.flush();
    if (absl::Status failures = launcher::FailuresOf(answers); !failures.ok()) return failures;
    if (!out) return absl::UnknownError("cannot write the output (is stdout closed or the disk full?)");
    return absl::OkStatus();
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
  command.arguments = "DUMP... | JOB";
  command.flag_usage = "[--format=text|json] [--nodes=HOST:PORT,... --token_file=F [--tls_ca=F]]";
  command.summary =
      "hung and slow ranks and mismatched collectives from the workers' flight recorder dumps (files, or a "
      "running job's through its daemons with --nodes)";
  command.flags = {"format", "nodes", "token_file", "tls_ca"};
  command.flag_help = {{"format", "text (for people) or json (one object)."}};
  command.min_arguments = 1;
  command.max_arguments = 1 << 20;
  command.run = &RunDiagnose;
  return command;
}

}  // namespace oneflow::cli
