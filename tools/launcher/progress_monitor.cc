#include "tools/launcher/progress_monitor.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace oneflow::launcher {
namespace {

std::string Seconds(absl::Duration duration) { return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(duration)); }

// A rank whose training waits for a checkpoint is named only after this long (or
// --hang_seconds if longer).
constexpr absl::Duration kCheckpointWaitLimit = absl::Seconds(60);

}  // namespace

ProgressMonitor::ProgressMonitor(const proto::Plan& plan, MonitorOptions options)
    : plan_(plan), options_(options), collective_groups_(CollectiveGroupsOf(plan)), devices_(plan.devices_size()) {
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DeviceId& id = plan.devices(d).device();
    index_of_[{id.node(), id.device()}] = d;
    devices_[d].node = id.node();
  }
  std::set<std::vector<int64_t>> seen;
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    std::vector<int64_t> members;
    for (const proto::DeviceId& member : collective.group()) {
      const auto found = index_of_.find({member.node(), member.device()});
      if (found != index_of_.end()) members.push_back(found->second);
    }
    std::sort(members.begin(), members.end());
    if (members.size() >= 2 && seen.insert(members).second) groups_.push_back(members);
  }
}

void ProgressMonitor::Observe(int64_t node, const proto::JobEvent::Heartbeat& heartbeat, absl::Time now) {
  Node& state = nodes_[node];
  state.silent_ms = heartbeat.worker_silent_ms();
  state.stopped = heartbeat.worker_stopped();
  state.checkpoint_wait_ms = heartbeat.worker_checkpoint_wait_ms();
  const int64_t window_ms = static_cast<int64_t>(options_.slow_window_seconds * 1000) + 1500;
  for (const proto::DeviceProgress& progress : heartbeat.progress()) {
    if (progress.device() < 0 || progress.device() >= static_cast<int64_t>(devices_.size())) continue;
    Device& device = devices_[progress.device()];
    const bool changed = !device.seen || progress.completed_collectives() != device.completed ||
                         progress.entered_collectives() != device.entered;
    if (changed) {
      if (device.seen && device.changes > 0) {
        const absl::Duration gap = now - device.changed;
        device.usual_gap = device.changes == 1 ? gap : (device.usual_gap * 7 + gap) / 8;
      }
      if (device.seen) ++device.changes;
      device.changed = now;
    }
    device.seen = true;
    device.completed = progress.completed_collectives();
    device.entered = progress.entered_collectives();
    device.collective = progress.collective();
    for (const proto::GroupProgress& group : progress.groups()) {
      if (group.group() < 0 || group.group() >= static_cast<int64_t>(collective_groups_.names.size())) continue;
      device.groups[group.group()] = {group.entered(), group.completed(), group.collective()};
    }
    // Stopped at this heartbeat or, as the daemon's stop sampler saw, since the previous one.
    device.samples.push_back({heartbeat.sampled_unix_ms(), progress.completed_collectives(), progress.collective_ns(),
                              heartbeat.worker_stopped() || heartbeat.worker_stopped_since_last_beat()});
    while (device.samples.size() > 2 && device.samples.back().unix_ms - device.samples.front().unix_ms > window_ms) {
      device.samples.pop_front();
    }
  }
}

std::string ProgressMonitor::DeviceName(int64_t device) const {
  const proto::DeviceId& id = plan_.devices(static_cast<int>(device)).device();
  return absl::StrCat(id.node(), ":", id.device());
}

std::string ProgressMonitor::GroupName(int64_t collective) const {
  std::vector<std::string> members;
  for (const proto::DeviceId& member : plan_.collectives(static_cast<int>(collective)).group()) {
    members.push_back(absl::StrCat(member.node(), ":", member.device()));
  }
  return absl::StrCat("devices [", absl::StrJoin(members, ", "), "]");
}

bool ProgressMonitor::NodeUnresponsive(int64_t node) const {
  const auto found = nodes_.find(node);
  if (found == nodes_.end()) return false;
  return found->second.stopped || found->second.silent_ms >= options_.hang_seconds * 1000;
}

int64_t ProgressMonitor::EnteredOf(int64_t d, const Call& call) const {
  const Device& device = devices_[d];
  if (call.group < 0) return device.entered;
  const auto found = device.groups.find(call.group);
  return found == device.groups.end() ? 0 : found->second.entered;
}

int64_t ProgressMonitor::CompletedOf(int64_t d, const Call& call) const {
  const Device& device = devices_[d];
  if (call.group < 0) return device.completed;
  const auto found = device.groups.find(call.group);
  return found == device.groups.end() ? 0 : found->second.completed;
}

int64_t ProgressMonitor::CheckpointWaitMs(int64_t node) const {
  const auto found = nodes_.find(node);
  return found == nodes_.end() ? 0 : found->second.checkpoint_wait_ms;
}

std::optional<HangFinding> ProgressMonitor::HangAt(int64_t waiter, absl::Time now) const {
  const Device& w = devices_[waiter];
  if (w.groups.empty()) return HangIn(Call{w.collective, w.completed, -1}, now);
  // Each of its groups it is inside a call of (one per communication stream at most).
  for (const auto& [group, state] : w.groups) {
    if (state.entered <= state.completed) continue;
    if (std::optional<HangFinding> finding = HangIn(Call{state.collective, state.completed, group}, now)) {
      return finding;
    }
  }
  return std::nullopt;
}

std::optional<HangFinding> ProgressMonitor::HangIn(const Call& call, absl::Time now) const {
  const int64_t sequence = call.sequence;
  const int64_t collective = call.collective;
  if (collective < 0 || collective >= plan_.collectives_size()) return std::nullopt;
  const absl::Duration threshold = absl::Seconds(options_.hang_seconds);
  const proto::CollectiveDef& def = plan_.collectives(static_cast<int>(collective));
  std::vector<int64_t> members, missing, arrived;
  for (const proto::DeviceId& member : def.group()) {
    const auto found = index_of_.find({member.node(), member.device()});
    if (found == index_of_.end()) return std::nullopt;
    const Device& m = devices_[found->second];
    if (!m.seen) return std::nullopt;  // A node that sends no heartbeats: nothing to say.
    members.push_back(found->second);
    (EnteredOf(found->second, call) > sequence ? arrived : missing).push_back(found->second);
  }
  std::vector<int64_t> suspects;
  std::vector<std::string> why;
  if (!missing.empty()) {
    for (const int64_t d : missing) {
      const Device& m = devices_[d];
      const bool unresponsive = NodeUnresponsive(m.node);
      const absl::Duration stalled = now - m.changed;
      const bool stuck = unresponsive || (m.entered > 0 && stalled >= std::max(threshold, m.usual_gap * 4));
      if (!stuck) return std::nullopt;  // Still moving: slow perhaps, not hung.
      // Held by a checkpoint write (session 45: a 4.2 s write on a loaded machine held
      // node 0 for 6.7 s and the job was stopped as hung): the writer's own timeouts end
      // a write that never finishes.
      const int64_t checkpoint_ms = CheckpointWaitMs(m.node);
      if (!unresponsive && checkpoint_ms > 0 &&
          absl::Milliseconds(checkpoint_ms) < std::max(threshold, kCheckpointWaitLimit)) {
        return std::nullopt;
      }
      suspects.push_back(d);
    }
  } else {
    // Every member entered: one whose worker does not run at all holds the others.
    for (const int64_t d : members) {
      if (NodeUnresponsive(devices_[d].node)) suspects.push_back(d);
    }
    if (suspects.empty()) return std::nullopt;
  }
  HangFinding finding;
  finding.sequence = sequence;
  finding.in_group = call.group >= 0;
  finding.collective = collective;
  finding.suspects = suspects;
  for (const int64_t d : arrived) {
    if (std::find(suspects.begin(), suspects.end(), d) == suspects.end()) finding.arrived.push_back(d);
  }
  std::vector<std::string> suspect_text, arrived_text;
  for (const int64_t d : suspects) {
    const Device& m = devices_[d];
    int rank = 0;
    for (int r = 0; r < def.group_size(); ++r) {
      if (index_of_.at({def.group(r).node(), def.group(r).device()}) == d) rank = r;
    }
    std::string state;
    const auto node = nodes_.find(m.node);
    if (node != nodes_.end() && node->second.stopped) {
      state = absl::StrCat("its worker is stopped (SIGSTOP?), silent for ",
                           Seconds(absl::Milliseconds(node->second.silent_ms)));
    } else if (node != nodes_.end() && node->second.silent_ms >= options_.hang_seconds * 1000) {
      state = absl::StrCat("its worker has not run for ", Seconds(absl::Milliseconds(node->second.silent_ms)));
    } else if (CheckpointWaitMs(m.node) > 0) {
      state = absl::StrCat("its training waits for a checkpoint (the previous one's write, or the copies) for ",
                           Seconds(absl::Milliseconds(CheckpointWaitMs(m.node))));
    } else {
      state = "its worker runs: stuck outside the collective (in compute or another transfer)";
    }
    const int64_t completed = CompletedOf(d, call);
    suspect_text.push_back(absl::StrCat(
        "node ", m.node, " device ", DeviceName(d), " (rank ", rank, " of the group) ",
        EnteredOf(d, call) > sequence ? "entered it but " : "has not entered it, ", "made no progress for ",
        Seconds(now - m.changed), call.group >= 0 ? ", last completed in the group: sequence " : ", last completed collective ",
        completed > 0 ? absl::StrCat(completed - 1) : std::string("none"), "; ", state));
  }
  absl::Duration waited = absl::InfiniteDuration();
  for (const int64_t d : finding.arrived) {
    arrived_text.push_back(DeviceName(d));
    waited = std::min(waited, now - devices_[d].changed);
  }
  finding.text = absl::StrCat("hang: collective ", collective, " (", proto::CollectiveKind_Name(def.kind()), ", ",
                              def.bytes_per_device(), " B) sequence ", sequence, " of group ", GroupName(collective),
                              ": ", absl::StrJoin(suspect_text, "; "), ". Arrived and waiting: ",
                              arrived_text.empty() ? std::string("none") : absl::StrJoin(arrived_text, ", "));
  if (!arrived_text.empty()) absl::StrAppend(&finding.text, " (for ", Seconds(waited), ")");
  return finding;
}

std::optional<HangFinding> ProgressMonitor::CheckHang(absl::Time now) const {
  if (options_.hang_seconds <= 0) return std::nullopt;
  const absl::Duration threshold = absl::Seconds(options_.hang_seconds);
  std::vector<int64_t> waiters;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const Device& device = devices_[d];
    if (device.seen && device.entered > device.completed && now - device.changed >= threshold) {
      waiters.push_back(static_cast<int64_t>(d));
    }
  }
  std::sort(waiters.begin(), waiters.end(),
            [this](int64_t a, int64_t b) { return devices_[a].completed < devices_[b].completed; });
  for (const int64_t w : waiters) {
    if (std::optional<HangFinding> finding = HangAt(w, now)) return finding;
  }
  return std::nullopt;
}

std::vector<std::string> ProgressMonitor::CheckSlow(absl::Time now) {
  std::vector<std::string> warnings;
  if (options_.slow_factor <= 0 || now - last_slow_check_ < absl::Seconds(1)) return warnings;
  last_slow_check_ = now;
  const int64_t window_ms = static_cast<int64_t>(options_.slow_window_seconds * 1000);
  // Per device over the window: the fraction of time outside collectives, and the
  // collectives completed; and at how many of its heartbeats the worker was stopped.
  std::map<int64_t, std::pair<double, int64_t>> busy;
  std::map<int64_t, std::pair<int, int>> stopped_beats;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const std::deque<Sample>& samples = devices_[d].samples;
    if (samples.size() < 2) continue;
    const Sample& last = samples.back();
    size_t first_index = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (last.unix_ms - samples[i].unix_ms >= window_ms) first_index = i;
    }
    const Sample& first = samples[first_index];
    const int64_t span_ms = last.unix_ms - first.unix_ms;
    if (span_ms < window_ms * 0.8) continue;
    std::pair<int, int>& beats = stopped_beats[static_cast<int64_t>(d)];
    for (size_t i = first_index + 1; i < samples.size(); ++i) {
      ++beats.second;
      if (samples[i].stopped) ++beats.first;
    }
    const double in_collectives = static_cast<double>(last.collective_ns - first.collective_ns) / (span_ms * 1e6);
    busy[static_cast<int64_t>(d)] = {1 - std::clamp(in_collectives, 0.0, 1.0), last.completed - first.completed};
  }
  std::set<int64_t> flagged, evaluated;
  std::map<int64_t, std::string> texts;
  for (const std::vector<int64_t>& group : groups_) {
    bool complete = true;
    double most = 0;
    for (const int64_t d : group) {
      const auto found = busy.find(d);
      if (found == busy.end() || found->second.second < 4) complete = false;
      if (complete) most = std::max(most, found->second.first);
    }
    if (!complete) continue;
    // Only a group that could be judged confirms or breaks its members' streaks: a window
    // with too few collectives (a slow rank's long steps, heartbeats late on a loaded
    // machine) is no evidence that the rank stopped being slow.
    for (const int64_t d : group) evaluated.insert(d);
    std::vector<int64_t> slow, rest;
    for (const int64_t d : group) (busy[d].first >= most / 2 ? slow : rest).push_back(d);
    if (rest.empty()) continue;
    double slow_least = 1, rest_most = 0, slow_mean = 0, rest_mean = 0;
    for (const int64_t d : slow) {
      slow_least = std::min(slow_least, busy[d].first);
      slow_mean += busy[d].first / slow.size();
    }
    for (const int64_t d : rest) {
      rest_most = std::max(rest_most, busy[d].first);
      rest_mean += busy[d].first / rest.size();
    }
    if (slow_least < options_.slow_factor * rest_most || slow_least - rest_most < 0.3 || 1 - rest_mean < 0.5) {
      continue;
    }
    std::vector<std::string> rest_names;
    for (const int64_t d : rest) rest_names.push_back(DeviceName(d));
    for (const int64_t d : slow) {
      flagged.insert(d);
      const auto [stopped, beats] = stopped_beats[d];
      const std::string where =
          stopped == 0 ? std::string("computing")
                       : absl::StrFormat("computing, or stopped: its worker was stopped (SIGSTOP?) at %d of %d heartbeats",
                                         stopped, beats);
      texts[d] = absl::StrFormat(
          "slow rank: node %d device %s is about %.1fx slower than %s of its group: over the last %.0f s it spent "
          "%.0f%% of its time outside collectives (%s), they %.0f%%, waiting for it in collectives the rest "
          "(%d collectives completed)",
          devices_[d].node, DeviceName(d), busy[d].first / std::max(rest_mean, 0.01), absl::StrJoin(rest_names, ", "),
          options_.slow_window_seconds, 100 * busy[d].first, where, 100 * rest_mean, busy[d].second);
    }
  }
  for (auto it = slow_streak_.begin(); it != slow_streak_.end();) {
    const bool cleared = evaluated.count(it->first) > 0 && flagged.count(it->first) == 0;
    it = cleared ? slow_streak_.erase(it) : std::next(it);
  }
  for (const int64_t d : flagged) {
    if (++slow_streak_[d] >= options_.slow_confirmations && slow_named_.insert(d).second) {
      warnings.push_back(texts[d]);
    }
  }
  return warnings;
}

}  // namespace oneflow::launcher
