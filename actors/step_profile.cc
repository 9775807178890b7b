#include "actors/step_profile.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "actors/bubble.h"

namespace oneflow::actors {
namespace {

std::string OpType(const proto::ActorDef& actor) {
  if (actor.kernels_size() > 0) {
    std::vector<std::string> names;
    for (const proto::KernelDef& kernel : actor.kernels()) names.push_back(kernel.name());
    return absl::StrJoin(names, "+");
  }
  switch (actor.kind()) {
    case proto::ACTOR_DATA_SOURCE: return "data_source";
    case proto::ACTOR_VARIABLE: return "variable";
    case proto::ACTOR_COMPUTE: return "compute";
    case proto::ACTOR_BOXING: return "boxing";
    case proto::ACTOR_SINK: return "sink";
    case proto::ACTOR_CONTROL: return "control";
    default: return "unknown";
  }
}

// Accumulated over the measured iterations, before dividing by their count.
struct Totals {
  int64_t window_ns = 0;
  int64_t calls = 0;
  double bytes = 0;
};

void SortRows(std::vector<ProfileRow>* rows) {
  std::sort(rows->begin(), rows->end(), [](const ProfileRow& a, const ProfileRow& b) {
    if (a.ns_per_iteration != b.ns_per_iteration) return a.ns_per_iteration > b.ns_per_iteration;
    if (a.name != b.name) return a.name < b.name;
    return a.device_index < b.device_index;
  });
}

}  // namespace

int64_t IterationOfAct(const proto::ActorDef& actor, int64_t act_index, int64_t micro_batches) {
  return actor.per_iteration() ? act_index : act_index / std::max<int64_t>(1, micro_batches);
}

absl::StatusOr<StepProfile> ProfileStep(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                        int64_t warmup_iterations) {
  // MeasureBubble checks the acts against the plan and finds the measured iterations.
  absl::StatusOr<MeasuredBubble> bubble = MeasureBubble(plan, acts, warmup_iterations);
  if (!bubble.ok()) return bubble.status();
  const int64_t micro_batches = std::max<int64_t>(1, plan.job().micro_batches());
  absl::flat_hash_map<int64_t, const proto::ActorDef*> actors;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) actors[actor.id()] = &actor;
  }
  absl::flat_hash_map<int64_t, int64_t> collective_bytes;
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    collective_bytes[collective.id()] = collective.bytes_per_device();
  }

  StepProfile profile;
  profile.first_iteration = bubble->first_iteration;
  profile.last_iteration = bubble->last_iteration;
  profile.iterations = profile.last_iteration - profile.first_iteration + 1;
  profile.iteration_end_ns.assign(profile.last_iteration + 1, 0);
  std::vector<bool> has_acts(plan.devices_size(), false);
  for (const ActRecord& act : acts) {
    const int64_t iteration = IterationOfAct(*actors.at(act.actor_id), act.iteration, micro_batches);
    profile.iteration_end_ns[iteration] = std::max(profile.iteration_end_ns[iteration], act.end_ns);
    has_acts[act.device_index] = true;
  }
  for (size_t i = 1; i < profile.iteration_end_ns.size(); ++i) {
    profile.iteration_end_ns[i] = std::max(profile.iteration_end_ns[i], profile.iteration_end_ns[i - 1]);
  }
  for (int d = 0; d < plan.devices_size(); ++d) {
    if (has_acts[d]) profile.devices.push_back(d);
  }
  profile.window_start_ns = profile.iteration_end_ns[profile.first_iteration - 1];
  profile.window_end_ns = profile.iteration_end_ns[profile.last_iteration];
  const int64_t window = profile.window_end_ns - profile.window_start_ns;
  const double n = static_cast<double>(profile.iterations);
  profile.step_ns = window / n;

  // Per actor, and per (device, thread): the acts' intervals, all and communication only.
  std::map<int64_t, Totals> per_actor;
  std::map<std::pair<int, int>, std::pair<std::vector<std::pair<int64_t, int64_t>>,
                                          std::vector<std::pair<int64_t, int64_t>>>>
      per_thread;
  for (const ActRecord& act : acts) {
    const proto::ActorDef& actor = *actors.at(act.actor_id);
    const int64_t begin = std::max(act.start_ns, profile.window_start_ns);
    const int64_t end = std::min(act.end_ns, profile.window_end_ns);
    Totals& totals = per_actor[act.actor_id];
    if (end > begin) {
      totals.window_ns += end - begin;
      auto& [all, communication] = per_thread[{act.device_index, static_cast<int>(actor.thread())}];
      all.push_back({begin, end});
      if (actor.collective_id() >= 0) communication.push_back({begin, end});
    }
    if (IterationOfAct(actor, act.iteration, micro_batches) >= profile.first_iteration) {
      ++totals.calls;
      if (actor.collective_id() >= 0) {
        auto bytes = collective_bytes.find(actor.collective_id());
        if (bytes != collective_bytes.end()) totals.bytes += bytes->second;
      }
    }
  }

  // Op types by (thread kind, type), per device.
  const double devices = static_cast<double>(std::max<size_t>(1, profile.devices.size()));
  std::map<std::pair<int, std::string>, ProfileRow> op_types;
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      auto found = per_actor.find(actor.id());
      if (found == per_actor.end()) continue;
      const Totals& totals = found->second;
      ProfileRow row;
      row.op_type = OpType(actor);
      row.name = actor.name();
      row.actor_id = actor.id();
      row.device_index = d;
      row.thread = actor.thread();
      row.ns_per_iteration = totals.window_ns / n;
      row.share = profile.step_ns > 0 ? row.ns_per_iteration / profile.step_ns : 0;
      row.calls_per_iteration = totals.calls / n;
      row.bytes_per_iteration = totals.bytes / n;
      row.bytes_per_second = totals.window_ns > 0 ? totals.bytes / (totals.window_ns * 1e-9) : 0;
      ProfileRow& type = op_types[{static_cast<int>(actor.thread()), row.op_type}];
      if (type.ns_per_device.empty()) {
        type.op_type = type.name = row.op_type;
        type.thread = actor.thread();
        type.ns_per_device.assign(plan.devices_size(), 0);
      }
      type.ns_per_device[d] += row.ns_per_iteration;
      type.ns_per_iteration += row.ns_per_iteration / devices;
      type.calls_per_iteration += row.calls_per_iteration / devices;
      type.bytes_per_iteration += row.bytes_per_iteration / devices;
      profile.actors.push_back(std::move(row));
    }
  }
  for (auto& [key, row] : op_types) {
    row.share = profile.step_ns > 0 ? row.ns_per_iteration / profile.step_ns : 0;
    const double seconds = row.ns_per_iteration * 1e-9;
    row.bytes_per_second = seconds > 0 ? row.bytes_per_iteration / seconds : 0;
    profile.op_types.push_back(std::move(row));
  }
  SortRows(&profile.op_types);
  SortRows(&profile.actors);

  for (auto& [key, intervals] : per_thread) {
    ThreadTime thread;
    thread.device_index = key.first;
    thread.thread = static_cast<proto::ThreadKind>(key.second);
    const int64_t busy = CoveredNs(std::move(intervals.first), profile.window_start_ns, profile.window_end_ns);
    const int64_t communication =
        CoveredNs(std::move(intervals.second), profile.window_start_ns, profile.window_end_ns);
    thread.communication_ns = communication / n;
    thread.compute_ns = (busy - communication) / n;
    thread.idle_ns = (window - busy) / n;
    profile.threads.push_back(thread);
  }
  return profile;
}

}  // namespace oneflow::actors
