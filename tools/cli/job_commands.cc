#include "tools/cli/job_commands.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "oneflow_core/status.h"
#include "tools/cli/daemon_flags.h"
#include "tools/cli/json_writer.h"
#include "tools/cli/launch_recovery.h"
#include "tools/launcher/daemon_client.h"
#include "tools/launcher/job_control.h"

// Defined by inspect_command.cc; `list` and `status` take text or json.
ABSL_DECLARE_FLAG(std::string, format);

namespace oneflow::cli {
namespace {

using launcher::NodeAnswer;

constexpr char kDaemonFlagUsage[] = "--nodes=HOST:PORT,... --token_file=F [--tls_ca=F]";

absl::StatusOr<std::unique_ptr<launcher::JobControl>> ConnectFromFlags() {
  OF_ASSIGN_OR_RETURN(DaemonFlags flags, ReadDaemonFlags());
  launcher::JobControlOptions options;
  options.nodes = std::move(flags.nodes);
  options.token = std::move(flags.token);
  options.tls_ca_file = std::move(flags.tls_ca_file);
  return launcher::JobControl::Create(std::move(options));
}

// True for json, false for text; INVALID_ARGUMENT naming the valid ones otherwise.
absl::StatusOr<bool> JsonFormat() {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format == "json") return true;
  if (format == "text") return false;
  return absl::InvalidArgumentError(absl::StrCat("--format=", format, " is not a choice; valid: text, json"));
}

// Local time to the second, as people read it in a terminal.
std::string LocalTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::LocalTimeZone());
}

// "3/10": iterations the worker reported of those asked ("3" from a daemon that does not
// say how many were asked).
std::string IterationsText(const proto::JobStatus& job) {
  const int64_t done = job.last_iteration() + 1;
  return job.iterations() > 0 ? absl::StrCat(done, "/", job.iterations()) : absl::StrCat(done);
}

// The fields of one job on one node, inside an open JSON object.
void WriteJobFields(JsonWriter& json, const NodeAnswer& node, const proto::JobStatus& job) {
  json.Key("node");
  json.Int(node.rank);
  json.Key("address");
  json.String(node.address);
  json.Key("job_id");
  json.String(job.job_id());
  json.Key("state");
  json.String(launcher::JobStateName(job.state()));
  json.Key("node_rank");
  json.Int(job.node_rank());
  json.Key("last_iteration");
  json.Int(job.last_iteration());
  json.Key("iterations");
  json.Int(job.iterations());
  json.Key("worker_pid");
  json.Int(job.worker_pid());
  json.Key("worker_resident_bytes");
  json.Int(job.worker_resident_bytes());
  json.Key("worker_peak_resident_bytes");
  json.Int(job.worker_peak_resident_bytes());
  json.Key("start_unix_ms");
  if (job.start_unix_ms() > 0)
    json.Int(job.start_unix_ms());
  else
    json.Null();
  json.Key("end_unix_ms");
  if (job.end_unix_ms() > 0)
    json.Int(job.end_unix_ms());
  else
    json.Null();
  json.Key("reason");
  json.String(job.reason());
  json.Key("devices");
  json.BeginArray();
  for (const proto::DeviceProgress& device : job.progress()) {
    json.BeginObject();
    json.Key("device");
    json.Int(device.device());
    json.Key("completed_collectives");
    json.Int(device.completed_collectives());
    json.Key("completed_iterations");
    json.Int(device.completed_iterations());
    json.EndObject();
  }
  json.EndArray();
  if (job.recoveries_size() > 0) {  // Only after a recovery: other jobs' output is as before.
    json.Key("recoveries");
    json.BeginArray();
    for (const proto::Recovery& recovery : job.recoveries()) {
      json.BeginObject();
      json.Key("cause");
      json.String(recovery.cause());
      json.Key("node");
      json.Int(recovery.node());
      json.Key("address");
      json.String(recovery.node_address());
      json.Key("action");
      json.String(recovery.action());
      json.Key("from");
      json.String(recovery.from());
      json.Key("iteration");
      json.Int(recovery.iteration());
      json.Key("checkpoint");
      json.String(recovery.checkpoint());
      json.EndObject();
    }
    json.EndArray();
  }
}

// ---- list ---------------------------------------------------------------------------

// What one daemon keeps of ended jobs, in words: "the last 8 ended jobs, each for at most
// 72h, under /tmp/oneflowd-0"; empty from a daemon that does not say.
std::string RetentionText(const proto::ListResponse& retention) {
  if (!retention.has_keep_jobs()) return "";
  std::string text = retention.keep_jobs() == 0  ? std::string("no ended jobs")
                     : retention.keep_jobs() == 1 ? std::string("the last ended job")
                                                  : absl::StrCat("the last ", retention.keep_jobs(), " ended jobs");
  if (retention.keep_jobs() > 0 && retention.keep_jobs_for_s() > 0) {
    absl::StrAppend(&text, ", each for at most ", absl::FormatDuration(absl::Seconds(retention.keep_jobs_for_s())),
                    " after it ended");
  }
  if (!retention.work_dir().empty()) absl::StrAppend(&text, " (directories under ", retention.work_dir(), ")");
  return text;
}

// One line when every answering daemon keeps the same, else one per node:
// "kept: running jobs and the last 8 ended jobs (directories under /tmp/oneflowd-0); older
// ones are removed (oneflowd --keep_jobs, --keep_jobs_for)".
std::string KeptText(const std::vector<NodeAnswer>& answers) {
  std::vector<std::pair<const NodeAnswer*, std::string>> said;
  for (const NodeAnswer& node : answers) {
    if (!node.error.ok()) continue;
    const std::string text = RetentionText(node.retention);
    if (!text.empty()) said.push_back({&node, text});
  }
  if (said.empty()) return "";
  const char kTail[] = "; older ones are removed (oneflowd --keep_jobs, --keep_jobs_for)\n";
  bool same = true;
  for (const auto& [node, text] : said) same = same && text == said[0].second;
  if (same) return absl::StrCat("kept: running jobs and ", said[0].second, kTail);
  std::string lines;
  for (const auto& [node, text] : said) {
    absl::StrAppend(&lines, "kept on ", launcher::NodeName(node->rank, node->address), ": running jobs and ", text,
                    kTail);
  }
  return lines;
}

std::string ListText(const std::vector<NodeAnswer>& answers) {
  std::vector<std::vector<std::string>> rows = {{"NODE", "ADDRESS", "JOB", "STATE", "ITERATIONS", "STARTED"}};
  for (const NodeAnswer& node : answers) {
    for (const proto::JobStatus& job : node.jobs) {
      rows.push_back({absl::StrCat(node.rank), node.address, job.job_id(), launcher::JobStateName(job.state()),
                      IterationsText(job), job.start_unix_ms() > 0 ? LocalTime(job.start_unix_ms()) : "-"});
    }
  }
  if (rows.size() == 1) {
    int answered = 0;
    for (const NodeAnswer& node : answers) answered += node.error.ok() ? 1 : 0;
    return answered == 0 ? "" : absl::StrCat("no jobs on ", answered, answered == 1 ? " node\n" : " nodes\n");
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i], i + 1 < row.size() ? std::string(widths[i] - row[i].size() + 2, ' ') : "");
    }
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

absl::Status RunList(const std::vector<std::string>&, std::ostream& out) {
  OF_ASSIGN_OR_RETURN(const bool json_format, JsonFormat());
  OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::JobControl> control, ConnectFromFlags());
  const std::vector<NodeAnswer> answers = control->List();
  if (json_format) {
    JsonWriter json;
    json.BeginObject();
    json.Key("jobs");
    json.BeginArray();
    for (const NodeAnswer& node : answers) {
      for (const proto::JobStatus& job : node.jobs) {
        json.BeginObject();
        WriteJobFields(json, node, job);
        json.EndObject();
      }
    }
    json.EndArray();
    json.Key("kept");
    json.BeginArray();
    for (const NodeAnswer& node : answers) {
      if (!node.error.ok() || !node.retention.has_keep_jobs()) continue;
      json.BeginObject();
      json.Key("node");
      json.Int(node.rank);
      json.Key("keep_jobs");
      json.Int(node.retention.keep_jobs());
      json.Key("keep_jobs_for_s");
      if (node.retention.keep_jobs_for_s() > 0)
        json.Double(node.retention.keep_jobs_for_s());
      else
        json.Null();
      json.Key("work_dir");
      json.String(node.retention.work_dir());
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    out << json.Finish();
  } else {
    out << ListText(answers) << KeptText(answers);
  }
  return launcher::FailuresOf(answers);
}

// ---- status and cancel --------------------------------------------------------------

// "job 'J': running on nodes 0, 1" or "job 'J': cancelled on node 0, failed on node 1".
std::string StatusHeadline(const std::string& job_id, const std::vector<NodeAnswer>& answers) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;  // In order of first appearance.
  for (const NodeAnswer& node : answers) {
    if (node.jobs.empty()) continue;
    const std::string state = launcher::JobStateName(node.jobs[0].state());
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == state; });
    if (group == groups.end()) group = groups.insert(groups.end(), {state, {}});
    group->second.push_back(node.rank);
  }
  std::vector<std::string> parts;
  for (const auto& [state, nodes] : groups) {
    parts.push_back(absl::StrCat(state, nodes.size() == 1 ? " on node " : " on nodes ", absl::StrJoin(nodes, ", ")));
  }
  return absl::StrCat("job '", job_id, "': ", absl::StrJoin(parts, ", "));
}

std::string StatusText(const std::string& job_id, const std::vector<NodeAnswer>& answers) {
  bool any = false;
  for (const NodeAnswer& node : answers) any = any || !node.jobs.empty();
  if (!any) return "";
  std::string text = StatusHeadline(job_id, answers);
  for (const NodeAnswer& node : answers) {
    if (node.jobs.empty()) continue;
    const proto::JobStatus& job = node.jobs[0];
    absl::StrAppend(&text, "\n  ", launcher::NodeName(node.rank, node.address), ": ",
                    launcher::JobStateName(job.state()), ", iterations ", IterationsText(job));
    if (job.worker_pid() > 0) absl::StrAppend(&text, ", worker pid ", job.worker_pid());
    if (job.start_unix_ms() > 0) absl::StrAppend(&text, ", started ", LocalTime(job.start_unix_ms()));
    if (job.end_unix_ms() > 0) absl::StrAppend(&text, ", ended ", LocalTime(job.end_unix_ms()));
    if (job.worker_resident_bytes() > 0) {
      absl::StrAppend(&text, absl::StrFormat(", worker resident %.1f MB (peak %.1f MB)",
                                             job.worker_resident_bytes() / 1e6, job.worker_peak_resident_bytes() / 1e6));
    } else if (job.worker_peak_resident_bytes() > 0) {
      absl::StrAppend(&text, absl::StrFormat(", worker peak resident %.1f MB", job.worker_peak_resident_bytes() / 1e6));
    }
    if (!job.reason().empty()) absl::StrAppend(&text, "\n    ", job.reason());
    for (const proto::Recovery& recovery : job.recoveries()) {
      absl::StrAppend(&text, "\n    recovered: ", RecoveryText(recovery));
    }
    if (job.progress().empty()) absl::StrAppend(&text, "\n    no progress recorded yet");
    for (const proto::DeviceProgress& device : job.progress()) {
      absl::StrAppend(&text, "\n    ", launcher::DeviceProgressText(device));
    }
  }
  return absl::StrCat(text, "\n");
}

void PrintStatus(const std::string& job_id, const std::vector<NodeAnswer>& answers, bool json_format,
                 std::ostream& out) {
  if (!json_format) {
    out << StatusText(job_id, answers);
    return;
  }
  JsonWriter json;
  json.BeginObject();
  json.Key("job_id");
  json.String(job_id);
  json.Key("nodes");
  json.BeginArray();
  for (const NodeAnswer& node : answers) {
    if (node.jobs.empty()) continue;
    json.BeginObject();
    WriteJobFields(json, node, node.jobs[0]);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  out << json.Finish();
}

absl::Status RunStatus(const std::vector<std::string>& arguments, std::ostream& out) {
  OF_ASSIGN_OR_RETURN(const bool json_format, JsonFormat());
  OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::JobControl> control, ConnectFromFlags());
  const std::string& job_id = arguments[0];
  OF_ASSIGN_OR_RETURN(const std::vector<NodeAnswer> answers, control->Status(job_id));
  PrintStatus(job_id, answers, json_format, out);
  return launcher::FailuresOf(answers);
}

absl::Status RunCancel(const std::vector<std::string>& arguments, std::ostream& out) {
  OF_ASSIGN_OR_RETURN(std::unique_ptr<launcher::JobControl> control, ConnectFromFlags());
  const std::string& job_id = arguments[0];
  OF_ASSIGN_OR_RETURN(const std::vector<NodeAnswer> answers, control->Cancel(job_id));
  PrintStatus(job_id, answers, /*json_format=*/false, out);
  return launcher::FailuresOf(answers);
}

}  // namespace

Subcommand ListSubcommand() {
  Subcommand command;
  command.name = "list";
  command.flag_usage = absl::StrCat(kDaemonFlagUsage, " [--format=text|json]");
  command.summary = "the jobs every node's oneflowd knows: state, iterations, start time";
  command.flags = {"nodes", "token_file", "tls_ca", "format"};
  command.flag_help = {{"format", "text (for people) or json (one object)."}};
  command.run = &RunList;
  return command;
}

Subcommand StatusSubcommand() {
  Subcommand command;
  command.name = "status";
  command.arguments = "JOB";
  command.flag_usage = absl::StrCat(kDaemonFlagUsage, " [--format=text|json]");
  command.summary = "one job on every node: state, iterations, each device's progress";
  command.flags = {"nodes", "token_file", "tls_ca", "format"};
  command.flag_help = {{"format", "text (for people) or json (one object)."}};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunStatus;
  return command;
}

Subcommand CancelSubcommand() {
  Subcommand command;
  command.name = "cancel";
  command.arguments = "JOB";
  command.flag_usage = kDaemonFlagUsage;
  command.summary = "stop a job on every node and wait until its workers are gone";
  command.flags = {"nodes", "token_file", "tls_ca"};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunCancel;
  return command;
}

}  // namespace oneflow::cli
