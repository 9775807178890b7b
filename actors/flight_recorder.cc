#include "actors/flight_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/files/atomic_write.h"

namespace oneflow::actors {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t UnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Quote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string DeviceName(const proto::DeviceId& device) { return absl::StrCat(device.node(), ":", device.device()); }

enum class EntryState : int { kRunning = 0, kOk = 1, kFailed = 2 };

// The entry the calling thread is in, for NoteCollectiveStart.
thread_local std::atomic<int64_t>* current_start = nullptr;

}  // namespace

// Every field atomic: the owning thread writes, a dump may read at the same time.
// `sequence` is the entry's validity stamp: -1 while it is being (re)written.
struct FlightRecorder::Entry {
  std::atomic<int64_t> sequence{-1};
  std::atomic<int64_t> group_sequence{-1};
  std::atomic<int64_t> collective{-1};
  std::atomic<int64_t> iteration{0};
  std::atomic<int64_t> enqueue_ns{0};
  std::atomic<int64_t> start_ns{0};
  std::atomic<int64_t> end_ns{0};
  std::atomic<int> state{0};
};

struct FlightRecorder::Ring {
  int device_index = 0;
  std::unique_ptr<Entry[]> entries;
  std::atomic<int64_t> recorded{0};  // entries ever begun = the next sequence number
  // Per group (FlightRecorder::groups_): entries of it ever begun = its next
  // group_sequence. Written under `mutex`, read by a dump without it.
  std::unique_ptr<std::atomic<int64_t>[]> group_recorded;
  // Per group, for the progress sink, under `mutex`: acts ended, the last collective.
  std::vector<int64_t> group_completed;
  std::vector<int64_t> group_collective;
  // A device with several communication streams (CollectiveDef.stream) has one
  // collective thread per stream: they take turns at its ring (uncontended with one
  // stream). A dump still reads without it, through the entries' atomics.
  std::mutex mutex;
  // For the progress sink, under `mutex`.
  int64_t collective_ns = 0;
  int64_t last_collective = -1;
};

FlightRecorder::FlightRecorder(const proto::Plan& plan, int64_t node, int64_t capacity)
    : plan_(plan),
      node_(node),
      capacity_(std::max<int64_t>(1, capacity)),
      ring_of_(plan.devices_size(), -1),
      groups_(CollectiveGroupsOf(plan)) {
  for (int d = 0; d < plan.devices_size(); ++d) {
    if (node >= 0 && plan.devices(d).device().node() != node) continue;
    ring_of_[d] = static_cast<int>(rings_.size());
    auto ring = std::make_unique<Ring>();
    ring->device_index = d;
    ring->entries = std::make_unique<Entry[]>(static_cast<size_t>(capacity_));
    const size_t groups = groups_.names.size();
    ring->group_recorded = std::make_unique<std::atomic<int64_t>[]>(groups);
    for (size_t g = 0; g < groups; ++g) ring->group_recorded[g].store(0, std::memory_order_relaxed);
    ring->group_completed.assign(groups, 0);
    ring->group_collective.assign(groups, -1);
    rings_.push_back(std::move(ring));
  }
  anchor_steady_ns_ = SteadyNs();
  anchor_unix_ns_ = UnixNs();
}

FlightRecorder::~FlightRecorder() = default;

ActFunction FlightRecorder::Wrap(const ActorBinding& binding, ActFunction act) {
  const proto::ActorDef& actor = *binding.actor;
  if (actor.collective_id() < 0 || binding.device_index < 0 || binding.device_index >= plan_.devices_size() ||
      ring_of_[binding.device_index] < 0) {
    return act;
  }
  const auto& order = plan_.devices(binding.device_index).collective_order();
  if (std::find(order.begin(), order.end(), actor.collective_id()) == order.end()) return act;
  const int device = binding.device_index;
  const int64_t collective = actor.collective_id();
  return [this, device, collective, act = std::move(act)](int64_t iteration, const ActContext& context) {
    const int64_t sequence = Begin(device, collective, iteration);
    absl::Status status = act(iteration, context);
    Close(device, sequence, status.ok());
    return status;
  };
}

int64_t FlightRecorder::Begin(int device_index, int64_t collective_id, int64_t iteration) {
  Ring& ring = *rings_[ring_of_[device_index]];
  std::lock_guard<std::mutex> lock(ring.mutex);
  const int64_t sequence = ring.recorded.load(std::memory_order_relaxed);
  Entry& entry = ring.entries[sequence % capacity_];
  entry.sequence.store(-1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  // A collective id outside the plan (a caller's bug) still gets a device-wide number.
  const int group = collective_id >= 0 && collective_id < static_cast<int64_t>(groups_.of_collective.size())
                        ? groups_.of_collective[collective_id]
                        : -1;
  int64_t group_sequence = -1;
  if (group >= 0) {
    group_sequence = ring.group_recorded[group].load(std::memory_order_relaxed);
    ring.group_recorded[group].store(group_sequence + 1, std::memory_order_release);
    // The group's previous act has ended: its stream issues them one at a time (its Close
    // may have found the entry overwritten and counted nothing).
    ring.group_completed[group] = group_sequence;
    ring.group_collective[group] = collective_id;
  }
  entry.group_sequence.store(group_sequence, std::memory_order_relaxed);
  entry.collective.store(collective_id, std::memory_order_relaxed);
  entry.iteration.store(iteration, std::memory_order_relaxed);
  entry.start_ns.store(0, std::memory_order_relaxed);
  entry.end_ns.store(0, std::memory_order_relaxed);
  entry.state.store(static_cast<int>(EntryState::kRunning), std::memory_order_relaxed);
  entry.enqueue_ns.store(SteadyNs(), std::memory_order_relaxed);
  entry.sequence.store(sequence, std::memory_order_release);
  ring.recorded.store(sequence + 1, std::memory_order_release);
  current_start = &entry.start_ns;
  ring.last_collective = collective_id;
  if (sink_) sink_(ProgressOf(ring, group));
  return sequence;
}

void FlightRecorder::End(int device_index, bool ok) {
  Close(device_index, rings_[ring_of_[device_index]]->recorded.load(std::memory_order_relaxed) - 1, ok);
}

void FlightRecorder::Close(int device_index, int64_t sequence, bool ok) {
  Ring& ring = *rings_[ring_of_[device_index]];
  std::lock_guard<std::mutex> lock(ring.mutex);
  if (sequence < 0) return;
  Entry& entry = ring.entries[sequence % capacity_];
  // Another stream's acts may have reused the slot while this one ran (a full ring).
  if (entry.sequence.load(std::memory_order_relaxed) != sequence) {
    current_start = nullptr;
    return;
  }
  const int64_t end = SteadyNs();
  entry.end_ns.store(end, std::memory_order_relaxed);
  entry.state.store(static_cast<int>(ok ? EntryState::kOk : EntryState::kFailed), std::memory_order_release);
  current_start = nullptr;
  ring.collective_ns += end - entry.enqueue_ns.load(std::memory_order_relaxed);
  const int64_t collective = entry.collective.load(std::memory_order_relaxed);
  const int group = collective >= 0 && collective < static_cast<int64_t>(groups_.of_collective.size())
                        ? groups_.of_collective[collective]
                        : -1;
  if (group >= 0) ring.group_completed[group] = entry.group_sequence.load(std::memory_order_relaxed) + 1;
  if (sink_) sink_(ProgressOf(ring, group));
}

FlightRecorder::Progress FlightRecorder::ProgressOf(const Ring& ring, int group) const {
  Progress progress;
  progress.device_index = ring.device_index;
  progress.entered = ring.recorded.load(std::memory_order_relaxed);
  progress.collective_id = ring.last_collective;
  progress.collective_ns = ring.collective_ns;
  progress.group = group;
  if (group >= 0) {
    progress.group_entered = ring.group_recorded[group].load(std::memory_order_relaxed);
    progress.group_completed = ring.group_completed[group];
    progress.group_collective = ring.group_collective[group];
  }
  return progress;
}

void FlightRecorder::NoteCollectiveStart() {
  std::atomic<int64_t>* start = current_start;
  if (start != nullptr && start->load(std::memory_order_relaxed) == 0) {
    start->store(SteadyNs(), std::memory_order_relaxed);
  }
}

std::string FlightRecorder::DumpJson(absl::string_view reason, absl::string_view job) const {
  const int64_t now_steady = SteadyNs(), now_unix = UnixNs();
  auto unix_of = [&](int64_t steady) { return steady == 0 ? 0 : anchor_unix_ns_ + (steady - anchor_steady_ns_); };
  std::string out = absl::StrCat("{\n  \"format\": \"oneflow-flight-recorder\",\n  \"version\": 1,\n  \"job\": ",
                                 Quote(job), ",\n  \"node\": ", node_, ",\n  \"pid\": ", getpid(),
                                 ",\n  \"reason\": ", Quote(reason), ",\n  \"dumped_unix_ns\": ", now_unix,
                                 ",\n  \"dumped_ns\": ", now_steady, ",\n  \"collectives\": [");
  // The collectives of the recorded devices' orders, once each.
  std::vector<bool> listed(plan_.collectives_size(), false);
  bool first = true;
  for (const auto& ring : rings_) {
    const proto::DevicePlan& device = plan_.devices(ring->device_index);
    for (const int64_t id : device.collective_order()) {
      if (id < 0 || id >= plan_.collectives_size() || listed[id]) continue;
      listed[id] = true;
      const proto::CollectiveDef& collective = plan_.collectives(static_cast<int>(id));
      std::vector<std::string> members;
      for (const proto::DeviceId& member : collective.group()) members.push_back(Quote(DeviceName(member)));
      const std::string& group = groups_.names[groups_.of_collective[id]];
      std::string actor;
      for (const proto::ActorDef& a : device.actors()) {
        if (a.collective_id() == id) actor = a.name();
      }
      absl::StrAppend(&out, first ? "\n" : ",\n", "    {\"collective\": ", id, ", \"kind\": ",
                      Quote(proto::CollectiveKind_Name(collective.kind())), ", \"group\": ", Quote(group),
                      ", \"members\": [", absl::StrJoin(members, ", "), "], \"bytes\": ",
                      collective.bytes_per_device(), ", \"actor\": ", Quote(actor), "}");
      first = false;
    }
  }
  absl::StrAppend(&out, first ? "" : "\n  ", "],\n  \"devices\": [");
  for (size_t r = 0; r < rings_.size(); ++r) {
    const Ring& ring = *rings_[r];
    const proto::DeviceId& id = plan_.devices(ring.device_index).device();
    const int64_t recorded = ring.recorded.load(std::memory_order_acquire);
    // Read before the entries: an entry may be newer than these counts, never older.
    std::vector<std::string> group_recorded;
    for (size_t g = 0; g < groups_.names.size(); ++g) {
      const int64_t count = ring.group_recorded[g].load(std::memory_order_acquire);
      if (count > 0) group_recorded.push_back(absl::StrCat(Quote(groups_.names[g]), ": ", count));
    }
    absl::StrAppend(&out, r > 0 ? ",\n" : "\n", "    {\"device_index\": ", ring.device_index,
                    ", \"device\": ", Quote(DeviceName(id)), ", \"capacity\": ", capacity_,
                    ", \"recorded\": ", recorded, ", \"group_recorded\": {", absl::StrJoin(group_recorded, ", "),
                    "}, \"entries\": [");
    bool first_entry = true;
    for (int64_t k = std::max<int64_t>(0, recorded - capacity_); k < recorded; ++k) {
      const Entry& entry = ring.entries[k % capacity_];
      if (entry.sequence.load(std::memory_order_acquire) != k) continue;
      const int64_t collective = entry.collective.load(std::memory_order_relaxed);
      const int64_t group_sequence = entry.group_sequence.load(std::memory_order_relaxed);
      const int64_t iteration = entry.iteration.load(std::memory_order_relaxed);
      const int64_t enqueue = entry.enqueue_ns.load(std::memory_order_relaxed);
      const int64_t start = entry.start_ns.load(std::memory_order_relaxed);
      const int64_t end = entry.end_ns.load(std::memory_order_relaxed);
      const auto state = static_cast<EntryState>(entry.state.load(std::memory_order_acquire));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (entry.sequence.load(std::memory_order_relaxed) != k) continue;  // overwritten meanwhile
      int64_t group_rank = -1;
      if (collective >= 0 && collective < plan_.collectives_size()) {
        const auto& group = plan_.collectives(static_cast<int>(collective)).group();
        for (int m = 0; m < group.size(); ++m) {
          if (group[m].node() == id.node() && group[m].device() == id.device()) group_rank = m;
        }
      }
      absl::StrAppend(&out, first_entry ? "\n" : ",\n", "      {\"sequence\": ", k,
                      group_sequence < 0 ? "" : absl::StrCat(", \"group_sequence\": ", group_sequence),
                      ", \"collective\": ", collective,
                      ", \"iteration\": ", iteration, ", \"group_rank\": ", group_rank, ", \"enqueue_ns\": ", enqueue,
                      ", \"start_ns\": ", start, ", \"end_ns\": ", end, ", \"enqueue_unix_ns\": ", unix_of(enqueue),
                      ", \"start_unix_ns\": ", unix_of(start), ", \"end_unix_ns\": ", unix_of(end), ", \"state\": \"",
                      state == EntryState::kOk ? "ok" : state == EntryState::kFailed ? "failed" : "running", "\"}");
      first_entry = false;
    }
    absl::StrAppend(&out, first_entry ? "" : "\n    ", "]}");
  }
  absl::StrAppend(&out, rings_.empty() ? "" : "\n  ", "]\n}\n");
  return out;
}

absl::Status FlightRecorder::WriteDump(const std::string& path, absl::string_view reason,
                                       absl::string_view job) const {
  const absl::Status written = WriteFileAtomically(path, DumpJson(reason, job),
                                                   WriteFileOptions{absl::StrCat("flight recorder dump '", path, "'")});
  // A dump that cannot be written is reported, never fatal: whatever the cause, UNAVAILABLE.
  if (!written.ok()) return absl::UnavailableError(written.message());
  return absl::OkStatus();
}

}  // namespace oneflow::actors
