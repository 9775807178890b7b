#include "actors/trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

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
  // Track names: pid = device, tid = thread (compute 0, communication 1).
  std::map<std::pair<int, int>, bool> tracks;
  for (const ActRecord& act : acts) {
    const proto::ActorDef* actor = actors.at(act.actor_id);
    const int tid = actor->thread() == proto::THREAD_COMMUNICATION ? 1 : 0;
    tracks[{act.device_index, tid}] = true;
  }
  for (const auto& [key, unused] : tracks) {
    const proto::DeviceId& device = plan.devices(key.first).device();
    event(absl::StrCat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", key.first,
                       ",\"args\":{\"name\":\"device ", device.node(), ":", device.device(), "\"}}"));
    event(absl::StrCat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", key.first, ",\"tid\":", key.second,
                       ",\"args\":{\"name\":\"", key.second ? "communication" : "compute", "\"}}"));
  }
  // Collective acts of one (collective, iteration): the first one starts a flow, the
  // others finish it, so the viewer draws arrows between the devices of the group.
  std::map<std::pair<int64_t, int64_t>, int> flow_seen;
  for (const ActRecord& act : acts) {
    const proto::ActorDef* actor = actors.at(act.actor_id);
    const int tid = actor->thread() == proto::THREAD_COMMUNICATION ? 1 : 0;
    const double ts = (act.start_ns - origin) / 1000.0;
    const double dur = (act.end_ns - act.start_ns) / 1000.0;
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
  absl::StrAppend(&json, "\n],\"displayTimeUnit\":\"ms\"}\n");
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

absl::Status WriteChromeTrace(const std::string& path, const proto::Plan& plan,
                              const std::vector<ActRecord>& acts) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::trunc);
    if (!file) return absl::PermissionDeniedError(absl::StrCat("trace file '", path, "': cannot create '", temporary, "'"));
    file << ChromeTraceJson(plan, acts);
    if (!file.flush()) {
      std::remove(temporary.c_str());
      return absl::UnknownError(absl::StrCat("trace file '", path, "': write failed"));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::UnknownError(absl::StrCat("trace file '", path, "': cannot rename into place"));
  }
  return absl::OkStatus();
}

}  // namespace oneflow::actors
