#include "tools/cli/profile_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actors/trace.h"
#include "oneflow_core/status.h"
#include "tools/cli/json_writer.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

std::string Device(const proto::Plan& plan, int device) { return DeviceIdText(plan.devices(device).device()); }

// "316.72 us" below a millisecond, "12.345 ms" from one up.
std::string Time(double ns) {
  return ns >= 1e6 ? absl::StrFormat("%.3f ms", ns / 1e6) : absl::StrFormat("%.2f us", ns / 1e3);
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

// Whole counts as integers, averages with two decimals.
std::string Count(double count) {
  return count == std::floor(count) ? absl::StrCat(static_cast<int64_t>(count)) : absl::StrFormat("%.2f", count);
}

std::string BytesCell(double bytes) { return bytes > 0 ? FormatBytesShort(std::llround(bytes)) : "-"; }
std::string BandwidthCell(double bytes_per_second) {
  return bytes_per_second > 0 ? absl::StrFormat("%.3g GB/s", bytes_per_second / 1e9) : "-";
}

// Columns padded to their widest cell, two spaces apart, indented by `indent`.
std::string Table(const std::vector<std::vector<std::string>>& rows, int indent = 2) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line(indent, ' ');
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, row[c], c + 1 < row.size() ? std::string(widths[c] - row[c].size() + 2, ' ') : "");
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

size_t Top(size_t size, int top) { return top <= 0 ? size : std::min<size_t>(size, top); }

// The critical path summed per actor, by time on the path plus the waits before its acts.
struct Contributor {
  int device = 0;
  int64_t actor_id = 0;
  int64_t acts = 0;
  int64_t path_ns = 0;
  int64_t wait_ns = 0;
};

std::vector<Contributor> Contributors(const actors::CriticalPath& path) {
  std::map<int64_t, Contributor> by_actor;
  for (const actors::PathStep& step : path.steps) {
    Contributor& contributor = by_actor[step.act.actor_id];
    contributor.device = step.act.device_index;
    contributor.actor_id = step.act.actor_id;
    ++contributor.acts;
    contributor.path_ns += step.path_end_ns - step.path_start_ns;
    contributor.wait_ns += step.wait_ns;
  }
  std::vector<Contributor> list;
  for (const auto& [id, contributor] : by_actor) list.push_back(contributor);
  std::stable_sort(list.begin(), list.end(), [](const Contributor& a, const Contributor& b) {
    return a.path_ns + a.wait_ns > b.path_ns + b.wait_ns;
  });
  return list;
}

// Time on the path per thread kind of its acts, and the waits.
struct PathTotals {
  std::map<int, int64_t> by_thread;
  int64_t wait_ns = 0;
  std::set<int> devices;
};

PathTotals Totals(const actors::CriticalPath& path) {
  PathTotals totals;
  for (const actors::PathStep& step : path.steps) {
    totals.by_thread[step.act.thread] += step.path_end_ns - step.path_start_ns;
    totals.wait_ns += step.wait_ns;
    totals.devices.insert(step.act.device_index);
  }
  return totals;
}

struct ActorIndex {
  explicit ActorIndex(const proto::Plan& plan) {
    for (const proto::DevicePlan& device : plan.devices()) {
      for (const proto::ActorDef& actor : device.actors()) actors[actor.id()] = &actor;
    }
  }
  std::map<int64_t, const proto::ActorDef*> actors;
};

std::string OpTypeOf(const actors::StepProfile& profile, int64_t actor_id) {
  for (const actors::ProfileRow& row : profile.actors) {
    if (row.actor_id == actor_id) return row.op_type;
  }
  return "?";
}

// Per iteration and device of the profile: the reductions' time, the share of it the
// compute thread was acting, and the compute thread's busy time to compare with.
double PerIterationAndDevice(const ProfileReport& report, int64_t ns) {
  const actors::StepProfile& p = report.profile;
  return static_cast<double>(ns) / std::max<double>(1, static_cast<double>(p.iterations * p.devices.size()));
}

std::string ReductionLine(const ProfileReport& report) {
  const actors::ReductionOverlap& r = report.reductions;
  if (r.reduction_acts == 0) return "gradient reductions: none in the measured iterations";
  return absl::StrCat("gradient reductions: ", r.reduction_acts, " acts, ",
                      Time(PerIterationAndDevice(report, r.reduction_ns)), " per iteration and device, ",
                      Percent(r.hidden_fraction), " of it hidden behind compute (",
                      Time(PerIterationAndDevice(report, r.hidden_ns)), "); compute ",
                      Time(PerIterationAndDevice(report, r.compute_ns)), " per iteration and device");
}

// The same counted from each call's last member's arrival (ReductionOverlap.transfer_ns):
// what a launched run's figure means, where members wait for slower hosts inside the call.
std::string TransferLine(const ProfileReport& report) {
  const actors::ReductionOverlap& r = report.reductions;
  return absl::StrCat("gradient reductions from each call's last arrival (the transfer, no waiting for peers): ",
                      Time(PerIterationAndDevice(report, r.transfer_ns)), " per iteration and device, ",
                      Percent(r.transfer_hidden_fraction), " of it hidden behind compute (",
                      Time(PerIterationAndDevice(report, r.transfer_hidden_ns)), "); exposed ",
                      Time(PerIterationAndDevice(report, r.transfer_ns - r.transfer_hidden_ns)), "; ",
                      Percent(r.transfer_hidden_by_members_fraction),
                      " of it while a member's compute still acted (after every member's: ",
                      Time(PerIterationAndDevice(report, r.transfer_ns - r.transfer_hidden_by_members_ns)), ")");
}

std::string RenderText(const proto::Plan& plan, const ProfileReport& report, const ProfileOptions& options) {
  const ProfileTables tables = TabulateProfile(plan, report, options.top);
  std::string text;
  for (const std::string& line : tables.heading) absl::StrAppend(&text, line, "\n");
  // A section with notes (the critical path) indents its table under them.
  for (const ProfileSection& section : tables.sections) {
    absl::StrAppend(&text, "\n", section.title, "\n");
    for (const std::string& note : section.notes) absl::StrAppend(&text, "  ", note, "\n");
    absl::StrAppend(&text, Table(section.rows, section.notes.empty() ? 2 : 4));
  }
  return text;
}

double Ms(double ns) { return ns / 1e6; }

void RowJson(JsonWriter& json, const proto::Plan& plan, const actors::ProfileRow& row, bool actor) {
  json.BeginObject();
  if (actor) {
    json.Key("device");
    json.String(Device(plan, row.device_index));
    json.Key("actor");
    json.String(row.name);
    json.Key("actor_id");
    json.Int(row.actor_id);
  }
  json.Key("op_type");
  json.String(row.op_type);
  json.Key("thread");
  json.String(ThreadKindText(row.thread));
  json.Key("time_ms");
  json.Double(Ms(row.ns_per_iteration));
  json.Key("share");
  json.Double(row.share);
  json.Key("calls");
  json.Double(row.calls_per_iteration);
  json.Key("bytes");
  json.Double(row.bytes_per_iteration);
  json.Key("bytes_per_second");
  json.Double(row.bytes_per_second);
  if (!actor) {
    json.Key("time_ms_per_device");
    json.BeginObject();
    for (size_t d = 0; d < row.ns_per_device.size(); ++d) {
      json.Key(Device(plan, static_cast<int>(d)));
      json.Double(Ms(row.ns_per_device[d]));
    }
    json.EndObject();
  }
  json.EndObject();
}

std::string RenderJson(const proto::Plan& plan, const ProfileReport& report, const ProfileOptions& options) {
  const actors::StepProfile& p = report.profile;
  const ActorIndex index(plan);
  JsonWriter json;
  json.BeginObject();
  json.Key("job");
  json.String(plan.job().name());
  json.Key("trace");
  json.String(report.trace_path);
  json.Key("first_iteration");
  json.Int(p.first_iteration);
  json.Key("last_iteration");
  json.Int(p.last_iteration);
  json.Key("step_ms");
  json.Double(Ms(p.step_ns));
  json.Key("iteration_ms");
  json.BeginArray();
  for (int64_t i = p.first_iteration; i <= p.last_iteration; ++i) {
    json.Double(Ms(p.iteration_end_ns[i] - p.iteration_end_ns[i - 1]));
  }
  json.EndArray();
  json.Key("devices");
  json.BeginArray();
  for (int d : p.devices) json.String(Device(plan, d));
  json.EndArray();
  json.Key("threads");
  json.BeginArray();
  for (const actors::ThreadTime& thread : p.threads) {
    json.BeginObject();
    json.Key("device");
    json.String(Device(plan, thread.device_index));
    json.Key("thread");
    json.String(ThreadKindText(thread.thread));
    json.Key("compute_ms");
    json.Double(Ms(thread.compute_ns));
    json.Key("communication_ms");
    json.Double(Ms(thread.communication_ns));
    json.Key("idle_ms");
    json.Double(Ms(thread.idle_ns));
    json.EndObject();
  }
  json.EndArray();
  json.Key("op_type_count");
  json.Int(static_cast<int64_t>(p.op_types.size()));
  json.Key("op_types");
  json.BeginArray();
  for (size_t i = 0; i < Top(p.op_types.size(), options.top); ++i) RowJson(json, plan, p.op_types[i], false);
  json.EndArray();
  json.Key("actor_count");
  json.Int(static_cast<int64_t>(p.actors.size()));
  json.Key("actors");
  json.BeginArray();
  for (size_t i = 0; i < Top(p.actors.size(), options.top); ++i) RowJson(json, plan, p.actors[i], true);
  json.EndArray();

  const actors::ReductionOverlap& reductions = report.reductions;
  json.Key("gradient_reductions");
  json.BeginObject();
  json.Key("acts");
  json.Int(reductions.reduction_acts);
  json.Key("ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.reduction_ns)));
  json.Key("hidden_ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.hidden_ns)));
  json.Key("hidden_fraction");
  json.Double(reductions.hidden_fraction);
  json.Key("compute_ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.compute_ns)));
  json.Key("transfer_ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.transfer_ns)));
  json.Key("transfer_hidden_fraction");
  json.Double(reductions.transfer_hidden_fraction);
  json.Key("exposed_ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.transfer_ns - reductions.transfer_hidden_ns)));
  json.Key("transfer_hidden_by_members_fraction");
  json.Double(reductions.transfer_hidden_by_members_fraction);
  json.Key("exposed_after_members_ms_per_iteration_and_device");
  json.Double(Ms(PerIterationAndDevice(report, reductions.transfer_ns - reductions.transfer_hidden_by_members_ns)));
  json.EndObject();

  const actors::CriticalPath& path = report.critical_path;
  const PathTotals totals = Totals(path);
  json.Key("critical_path");
  json.BeginObject();
  json.Key("iteration");
  json.Int(path.iteration);
  json.Key("wall_ms");
  json.Double(Ms(path.end_ns - path.start_ns));
  json.Key("wait_ms");
  json.Double(Ms(totals.wait_ns));
  json.Key("ms_by_thread");
  json.BeginObject();
  for (const auto& [thread, ns] : totals.by_thread) {
    json.Key(actors::TrackName(thread));
    json.Double(Ms(ns));
  }
  json.EndObject();
  json.Key("contributors");
  json.BeginArray();
  const std::vector<Contributor> contributors = Contributors(path);
  for (size_t i = 0; i < Top(contributors.size(), options.top); ++i) {
    const Contributor& c = contributors[i];
    json.BeginObject();
    json.Key("device");
    json.String(Device(plan, c.device));
    json.Key("actor");
    json.String(index.actors.at(c.actor_id)->name());
    json.Key("op_type");
    json.String(OpTypeOf(p, c.actor_id));
    json.Key("acts");
    json.Int(c.acts);
    json.Key("path_ms");
    json.Double(Ms(c.path_ns));
    json.Key("wait_ms");
    json.Double(Ms(c.wait_ns));
    json.EndObject();
  }
  json.EndArray();
  // Every step, in time order; times from the end of the previous iteration.
  json.Key("steps");
  json.BeginArray();
  for (const actors::PathStep& step : path.steps) {
    json.BeginObject();
    json.Key("device");
    json.String(Device(plan, step.act.device_index));
    json.Key("actor");
    json.String(index.actors.at(step.act.actor_id)->name());
    json.Key("act");
    json.Int(step.act.iteration);
    json.Key("thread");
    json.String(actors::TrackName(step.act.thread));
    json.Key("edge");
    json.String(actors::PathEdgeName(step.edge));
    json.Key("wait_ms");
    json.Double(Ms(step.wait_ns));
    json.Key("start_ms");
    json.Double(Ms(step.path_start_ns - path.start_ns));
    json.Key("path_ms");
    json.Double(Ms(step.path_end_ns - step.path_start_ns));
    json.Key("rendezvous_device");
    if (step.rendezvous_device >= 0) {
      json.String(Device(plan, step.rendezvous_device));
    } else {
      json.Null();
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  json.EndObject();
  return json.Finish();
}

}  // namespace

ProfileTables TabulateProfile(const proto::Plan& plan, const ProfileReport& report, int top) {
  const actors::StepProfile& p = report.profile;
  const ActorIndex index(plan);
  ProfileTables tables;
  tables.heading.push_back(absl::StrCat(
      "profile of plan '", plan.job().name(), "' from trace '", report.trace_path, "': iterations ",
      p.first_iteration, "..", p.last_iteration, " (",
      p.first_iteration == 1 ? "iteration 0 is" : absl::StrCat("iterations 0..", p.first_iteration - 1, " are"),
      " warm-up)"));
  std::vector<std::string> devices;
  for (int d : p.devices) devices.push_back(Device(plan, d));
  tables.heading.push_back(absl::StrCat("step: ", Time(p.step_ns), " per iteration (end of iteration ",
                                        p.first_iteration - 1, " to end of iteration ", p.last_iteration, ", ",
                                        Time(p.window_end_ns - p.window_start_ns), " / ", p.iterations,
                                        "); devices: ", absl::StrJoin(devices, ", ")));
  tables.heading.push_back(ReductionLine(report));
  if (report.reductions.reduction_acts > 0) tables.heading.push_back(TransferLine(report));

  ProfileSection& threads = tables.sections.emplace_back();
  threads.title = "threads, per iteration (compute + communication + idle = step)";
  threads.rows = {{"device", "thread", "compute", "", "communication", "", "idle", ""}};
  for (const actors::ThreadTime& thread : p.threads) {
    const double step = std::max(p.step_ns, 1e-9);
    threads.rows.push_back({Device(plan, thread.device_index), ThreadKindText(thread.thread), Time(thread.compute_ns),
                            Percent(thread.compute_ns / step), Time(thread.communication_ns),
                            Percent(thread.communication_ns / step), Time(thread.idle_ns),
                            Percent(thread.idle_ns / step)});
  }

  const size_t types = Top(p.op_types.size(), top);
  ProfileSection& op_types = tables.sections.emplace_back();
  op_types.title = absl::StrCat("op types, per iteration and device (top ", types, " of ", p.op_types.size(),
                                "; share: of the step on that thread of every device)");
  op_types.rows = {{"op type", "thread", "time", "share", "calls", "bytes", "bandwidth"}};
  for (size_t i = 0; i < types; ++i) {
    const actors::ProfileRow& row = p.op_types[i];
    op_types.rows.push_back({row.op_type, ThreadKindText(row.thread), Time(row.ns_per_iteration), Percent(row.share),
                             Count(row.calls_per_iteration), BytesCell(row.bytes_per_iteration),
                             BandwidthCell(row.bytes_per_second)});
  }

  const size_t actor_rows = Top(p.actors.size(), top);
  ProfileSection& actors = tables.sections.emplace_back();
  actors.title = absl::StrCat("actors, per iteration (top ", actor_rows, " of ", p.actors.size(),
                              "; share: of the step on its thread)");
  actors.rows = {{"device", "actor", "op type", "thread", "time", "share", "calls", "bytes", "bandwidth"}};
  for (size_t i = 0; i < actor_rows; ++i) {
    const actors::ProfileRow& row = p.actors[i];
    actors.rows.push_back({Device(plan, row.device_index), row.name, row.op_type, ThreadKindText(row.thread),
                           Time(row.ns_per_iteration), Percent(row.share), Count(row.calls_per_iteration),
                           BytesCell(row.bytes_per_iteration), BandwidthCell(row.bytes_per_second)});
  }

  const actors::CriticalPath& path = report.critical_path;
  const double wall = std::max<double>(path.end_ns - path.start_ns, 1e-9);
  const PathTotals totals = Totals(path);
  ProfileSection& critical = tables.sections.emplace_back();
  critical.title = absl::StrCat("critical path of iteration ", path.iteration, " (the median of ", p.iterations,
                                "): ", Time(path.end_ns - path.start_ns), " from the end of iteration ",
                                path.iteration - 1, " to the end of iteration ", path.iteration);
  std::vector<std::string> parts;
  for (const auto& [thread, ns] : totals.by_thread) {
    parts.push_back(absl::StrCat(actors::TrackName(thread), " acts ", Time(ns), " (",
                                 Percent(ns / wall), ")"));
  }
  parts.push_back(absl::StrCat("waiting ", Time(totals.wait_ns), " (", Percent(totals.wait_ns / wall), ")"));
  critical.notes.push_back(absl::StrCat(path.steps.size(), " acts on ", totals.devices.size(),
                                        totals.devices.size() == 1 ? " device: " : " devices: ",
                                        absl::StrJoin(parts, ", ")));
  const std::vector<Contributor> contributors = Contributors(path);
  const size_t shown = Top(contributors.size(), top);
  critical.notes.push_back(absl::StrCat("top ", shown, " of ", contributors.size(),
                                        " actors on it (on path: its acts' time on the path; wait: before them)"));
  critical.rows = {{"device", "actor", "op type", "acts", "on path", "wait", "share"}};
  for (size_t i = 0; i < shown; ++i) {
    const Contributor& c = contributors[i];
    critical.rows.push_back({Device(plan, c.device), index.actors.at(c.actor_id)->name(), OpTypeOf(p, c.actor_id),
                             absl::StrCat(c.acts), Time(c.path_ns), Time(c.wait_ns),
                             Percent((c.path_ns + c.wait_ns) / wall)});
  }
  return tables;
}

absl::StatusOr<ProfileFormat> ParseProfileFormat(const std::string& text) {
  if (text == "text") return ProfileFormat::kText;
  if (text == "json") return ProfileFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat("--format='", text, "' is not a format; valid: text, json"));
}

absl::StatusOr<ProfileReport> ProfileTrace(const proto::Plan& plan, const std::string& trace_path) {
  OF_ASSIGN_OR_RETURN(const std::vector<actors::ActRecord> acts, actors::ReadChromeTrace(trace_path, plan));
  auto named = [&](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("trace file '", trace_path, "': ", status.message()));
  };
  ProfileReport report;
  report.trace_path = trace_path;
  absl::StatusOr<actors::StepProfile> profile = actors::ProfileStep(plan, acts);
  if (!profile.ok()) return named(profile.status());
  report.profile = *std::move(profile);
  // The iteration of median wall time: a typical one, not the warm-up's tail or a hiccup.
  const actors::StepProfile& p = report.profile;
  std::vector<std::pair<int64_t, int64_t>> walls;
  for (int64_t i = p.first_iteration; i <= p.last_iteration; ++i) {
    walls.push_back({p.iteration_end_ns[i] - p.iteration_end_ns[i - 1], i});
  }
  std::sort(walls.begin(), walls.end());
  absl::StatusOr<actors::CriticalPath> path = actors::FindCriticalPath(plan, acts, walls[(walls.size() - 1) / 2].second);
  if (!path.ok()) return named(path.status());
  report.critical_path = *std::move(path);
  absl::StatusOr<actors::ReductionOverlap> reductions = actors::MeasureReductionOverlap(plan, acts);
  if (!reductions.ok()) return named(reductions.status());
  report.reductions = *std::move(reductions);
  return report;
}

std::string RenderProfile(const proto::Plan& plan, const ProfileReport& report, const ProfileOptions& options) {
  return options.format == ProfileFormat::kJson ? RenderJson(plan, report, options)
                                                : RenderText(plan, report, options);
}

}  // namespace oneflow::cli
