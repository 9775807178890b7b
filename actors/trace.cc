#include "actors/trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "oneflow_core/files/atomic_write.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"\"", "\\\""}});
}

const char* KindName(proto::ActorKind kind) {
  switch (kind) {
    case proto::ACTOR_DATA_SOURCE: return "data_source";
    case proto::ACTOR_VARIABLE: return "variable";
    case proto::ACTOR_COMPUTE: return "compute";
    case proto::ACTOR_BOXING: return "boxing";
    case proto::ACTOR_SINK: return "sink";
    case proto::ACTOR_CONTROL: return "control";
    default: return "unknown";
  }
}

// "compute", "communication", "transfer": the ThreadKind without its prefix.
std::string ThreadName(int kind) {
  if (!proto::ThreadKind_IsValid(kind)) return absl::StrCat("thread ", kind);
  return absl::AsciiStrToLower(absl::StripPrefix(proto::ThreadKind_Name(static_cast<proto::ThreadKind>(kind)), "THREAD_"));
}

// The track of an actor's acts: its ThreadKind (compute 0, communication 1, transfer 2),
// except that a communication actor on stream s > 0 (CollectiveDef.stream) gets track
// kStreamTrackBase + s: each stream is a thread of its own, whose acts overlap those of
// the other streams.
int TrackOf(const proto::Plan& plan, const proto::ActorDef& actor) {
  if (actor.thread() == proto::THREAD_COMMUNICATION && actor.collective_id() >= 0 &&
      actor.collective_id() < plan.collectives_size()) {
    const int64_t stream = plan.collectives(static_cast<int>(actor.collective_id())).stream();
    if (stream > 0) return kStreamTrackBase + static_cast<int>(stream);
  }
  return static_cast<int>(actor.thread());
}


std::string Microseconds(int64_t ns) { return absl::StrFormat("%.3f", ns / 1000.0); }

std::string ChecksumText(uint32_t checksum) { return absl::StrFormat("0x%08x", checksum); }

}  // namespace

std::string ChromeTraceJson(const proto::Plan& plan, const std::vector<ActRecord>& acts) {
  absl::flat_hash_map<int64_t, const proto::ActorDef*> actors;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) actors[actor.id()] = &actor;
  }
  int64_t origin = acts.empty() ? 0 : acts[0].start_ns;
  for (const ActRecord& act : acts) origin = std::min(origin, act.start_ns);
  std::string json = "{\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& text) {
    absl::StrAppend(&json, first ? "" : ",\n", text);
    first = false;
  };
  // Track names: pid = device, tid = the actor's ThreadKind (compute 0, communication 1,
  // transfer 2), communication stream s > 0 at 10 + s (TrackOf).
  std::map<std::pair<int, int>, bool> tracks;
  for (const ActRecord& act : acts) {
    const proto::ActorDef* actor = actors.at(act.actor_id);
    tracks[{act.device_index, TrackOf(plan, *actor)}] = true;
  }
  for (const auto& [key, unused] : tracks) {
    const proto::DeviceId& device = plan.devices(key.first).device();
    event(absl::StrCat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", key.first,
                       ",\"args\":{\"name\":\"device ", device.node(), ":", device.device(), "\"}}"));
    event(absl::StrCat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", key.first, ",\"tid\":", key.second,
                       ",\"args\":{\"name\":\"", TrackName(key.second), "\"}}"));
  }
  // Collective acts of one (collective, iteration): the first one starts a flow, the
  // others finish it, so the viewer draws arrows between the devices of the group.
  std::map<std::pair<int64_t, int64_t>, int> flow_seen;
  for (const ActRecord& act : acts) {
    const proto::ActorDef* actor = actors.at(act.actor_id);
    const int tid = TrackOf(plan, *actor);
    // Microseconds with nanosecond digits: StrCat's 6 significant digits would round a
    // run of seconds to 10 us, coarser than many acts.
    const std::string ts = Microseconds(act.start_ns - origin);
    const std::string dur = Microseconds(act.end_ns - act.start_ns);
    event(absl::StrCat("{\"ph\":\"X\",\"name\":\"", Escape(actor->name()), "\",\"cat\":\"",
                       KindName(actor->kind()), "\",\"pid\":", act.device_index, ",\"tid\":", tid,
                       ",\"ts\":", ts, ",\"dur\":", dur, ",\"args\":{\"iteration\":", act.iteration,
                       ",\"actor\":", act.actor_id, "}}"));
    if (actor->collective_id() >= 0) {
      const auto key = std::make_pair(actor->collective_id(), act.iteration);
      const bool start = flow_seen[key]++ == 0;
      event(absl::StrCat("{\"ph\":\"", start ? "s" : "f", "\",\"bp\":\"e\",\"name\":\"collective ",
                         actor->collective_id(), "\",\"cat\":\"collective\",\"id\":",
                         actor->collective_id() * 1000003 + act.iteration, ",\"pid\":", act.device_index,
                         ",\"tid\":", tid, ",\"ts\":", ts, "}"));
    }
  }
  absl::StrAppend(&json, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"job\":\"", Escape(plan.job().name()),
                  "\",\"plan_checksum\":\"", ChecksumText(plan.checksum()), "\",\"micro_batches\":",
                  std::max<int64_t>(1, plan.job().micro_batches()), ",\"plan\":\"",
                  absl::Base64Escape(plan.SerializeAsString()), "\"}}\n");
  return json;
}

BucketOverlap MeasureBucketOverlap(const proto::Plan& plan, const std::vector<ActRecord>& acts) {
  absl::flat_hash_map<int64_t, const proto::ActorDef*> actors;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) actors[actor.id()] = &actor;
  }
  // Compute-thread acts per device, by start (one thread's acts never overlap each other).
  std::map<int, std::vector<const ActRecord*>> compute;
  for (const ActRecord& act : acts) {
    auto it = actors.find(act.actor_id);
    if (it != actors.end() && it->second->thread() == proto::THREAD_COMPUTE) compute[act.device_index].push_back(&act);
  }
  for (auto& [device, list] : compute) {
    std::sort(list.begin(), list.end(), [](const ActRecord* a, const ActRecord* b) { return a->start_ns < b->start_ns; });
  }
  BucketOverlap overlap;
  for (const ActRecord& act : acts) {
    auto it = actors.find(act.actor_id);
    if (it == actors.end() || !it->second->has_bucket_id()) continue;
    ++overlap.bucket_acts;
    overlap.bucket_ms += (act.end_ns - act.start_ns) / 1e6;
    bool later = false;
    for (const ActRecord* other : compute[act.device_index]) {
      if (other->start_ns >= act.end_ns) break;
      const int64_t begin = std::max(other->start_ns, act.start_ns), end = std::min(other->end_ns, act.end_ns);
      if (end <= begin) continue;
      overlap.overlapped_ms += (end - begin) / 1e6;
      const proto::ActorDef* actor = actors.at(other->actor_id);
      later = later || (actor->kind() == proto::ACTOR_COMPUTE && other->iteration == act.iteration &&
                        other->actor_id > act.actor_id);
    }
    if (later) ++overlap.acts_overlapping_later_compute;
  }
  return overlap;
}

namespace {

std::string TracePrefix(const std::string& path) { return absl::StrCat("trace file '", path, "'"); }

// A number field of a JSON object, or nullopt when it is missing or not a number.
std::optional<double> Number(const google::protobuf::Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end() || !it->second.has_number_value()) return std::nullopt;
  return it->second.number_value();
}

std::string String(const google::protobuf::Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? std::string() : it->second.string_value();
}

// The trace file parsed as JSON, with its traceEvents array present.
absl::StatusOr<google::protobuf::Struct> ParseTraceFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    const std::string message = absl::StrCat(TracePrefix(path), ": cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message)
                           : error == EACCES ? absl::PermissionDeniedError(message)
                                             : absl::InvalidArgumentError(message);
  }
  std::stringstream text;
  text << file.rdbuf();
  google::protobuf::Struct trace;
  const auto parsed = google::protobuf::util::JsonStringToMessage(text.str(), &trace);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(TracePrefix(path),
                                                   ": not a trace written by `oneflow run --trace` (not JSON: ",
                                                   std::string(parsed.message()), ")"));
  }
  auto events = trace.fields().find("traceEvents");
  if (events == trace.fields().end() || !events->second.has_list_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TracePrefix(path), ": not a trace written by `oneflow run --trace` (no traceEvents array)"));
  }
  return trace;
}

}  // namespace

absl::StatusOr<proto::Plan> ReadPlanOfChromeTrace(const std::string& path) {
  OF_ASSIGN_OR_RETURN(const google::protobuf::Struct trace, ParseTraceFile(path));
  auto other = trace.fields().find("otherData");
  const std::string encoded = other != trace.fields().end() && other->second.has_struct_value()
                                  ? String(other->second.struct_value(), "plan")
                                  : std::string();
  if (encoded.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        TracePrefix(path), ": holds no plan (written by an older `oneflow run --trace`); name the plan the run "
        "trained as well"));
  }
  std::string bytes;
  proto::Plan plan;
  if (!absl::Base64Unescape(encoded, &bytes) || !plan.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(TracePrefix(path), ": its otherData.plan is damaged (not a base64-encoded plan)"));
  }
  const std::string checksum = String(other->second.struct_value(), "plan_checksum");
  if (checksum != ChecksumText(plan.checksum())) {
    return absl::InvalidArgumentError(absl::StrCat(TracePrefix(path), ": its otherData.plan has checksum ",
                                                   ChecksumText(plan.checksum()), " but the trace names ",
                                                   checksum.empty() ? "none" : checksum, ": the file is damaged"));
  }
  return plan;
}

absl::StatusOr<std::vector<ActRecord>> ReadChromeTrace(const std::string& path, const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const google::protobuf::Struct trace, ParseTraceFile(path));
  auto events = trace.fields().find("traceEvents");
  const std::string& job = plan.job().name();
  auto other = trace.fields().find("otherData");
  if (other != trace.fields().end() && other->second.has_struct_value()) {
    const std::string checksum = String(other->second.struct_value(), "plan_checksum");
    if (!checksum.empty() && checksum != ChecksumText(plan.checksum())) {
      return absl::InvalidArgumentError(absl::StrCat(
          TracePrefix(path), ": written for plan '", String(other->second.struct_value(), "job"), "' (checksum ",
          checksum, "), not for this plan '", job, "' (checksum ", ChecksumText(plan.checksum()), ")"));
    }
  }
  absl::flat_hash_map<int64_t, std::pair<const proto::ActorDef*, int>> actors;
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) actors[actor.id()] = {&actor, d};
  }
  std::vector<ActRecord> acts;
  const auto& list = events->second.list_value().values();
  for (int e = 0; e < list.size(); ++e) {
    if (!list[e].has_struct_value() || String(list[e].struct_value(), "ph") != "X") continue;
    const google::protobuf::Struct& event = list[e].struct_value();
    auto args = event.fields().find("args");
    const std::optional<double> pid = Number(event, "pid"), ts = Number(event, "ts"), dur = Number(event, "dur");
    std::optional<double> actor_id, iteration;
    if (args != event.fields().end() && args->second.has_struct_value()) {
      actor_id = Number(args->second.struct_value(), "actor");
      iteration = Number(args->second.struct_value(), "iteration");
    }
    if (!pid || !ts || !dur || !actor_id || !iteration) {
      return absl::InvalidArgumentError(absl::StrCat(
          TracePrefix(path), ": traceEvents[", e,
          "] is a slice without pid, ts, dur, args.actor or args.iteration: not a trace written by `oneflow run "
          "--trace`"));
    }
    const std::string name = String(event, "name");
    auto it = actors.find(static_cast<int64_t>(*actor_id));
    if (it == actors.end() || it->second.second != static_cast<int>(*pid) || it->second.first->name() != name) {
      return absl::InvalidArgumentError(absl::StrCat(
          TracePrefix(path), ": traceEvents[", e, "] is an act of actor ", static_cast<int64_t>(*actor_id), " '", name,
          "' on device index ", static_cast<int64_t>(*pid), ", which plan '", job,
          "' does not have: not a trace of this plan"));
    }
    ActRecord act;
    act.device_index = static_cast<int32_t>(*pid);
    act.thread = static_cast<int32_t>(TrackOf(plan, *it->second.first));
    act.actor_id = static_cast<int64_t>(*actor_id);
    act.iteration = static_cast<int64_t>(*iteration);
    act.start_ns = std::llround(*ts * 1000);
    act.end_ns = act.start_ns + std::llround(*dur * 1000);
    acts.push_back(act);
  }
  return acts;
}

absl::Status WriteChromeTrace(const std::string& path, const proto::Plan& plan,
                              const std::vector<ActRecord>& acts) {
  return WriteFileAtomically(path, ChromeTraceJson(plan, acts), WriteFileOptions{absl::StrCat("trace file '", path, "'")});
}

std::string TrackName(int track) {
  if (track >= kStreamTrackBase) return absl::StrCat("communication stream ", track - kStreamTrackBase);
  return ThreadName(track);
}

}  // namespace oneflow::actors
