#include "actors/critical_path.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "actors/step_profile.h"

namespace oneflow::actors {
namespace {

// A trace stores start and duration rounded to the nanosecond each, so an end read back
// may be a nanosecond past the start of what it enabled.
constexpr int64_t kRoundingNs = 2;

struct ActorInfo {
  const proto::ActorDef* actor = nullptr;
  int device = 0;
};

// The act index of `to` that the act `index` of `from` depends on, across units (with
// micro-batches, a per-micro-batch actor counts micro-batches and a per-iteration one
// iterations): a per-micro-batch act needs its iteration's act of a per-iteration actor,
// a per-iteration act the last micro-batch of a per-micro-batch actor.
int64_t MapIndex(int64_t index, const proto::ActorDef& from, const proto::ActorDef& to, int64_t micro_batches) {
  if (micro_batches == 1 || from.per_iteration() == to.per_iteration()) return index;
  if (to.per_iteration()) return index / micro_batches;
  return index * micro_batches + micro_batches - 1;
}

class Walker {
 public:
  Walker(const proto::Plan& plan, const std::vector<ActRecord>& acts) : plan_(plan), acts_(acts) {
    micro_batches_ = std::max<int64_t>(1, plan.job().micro_batches());
    for (int d = 0; d < plan.devices_size(); ++d) {
      for (const proto::ActorDef& actor : plan.devices(d).actors()) {
        actors_[actor.id()] = {&actor, d};
        if (actor.collective_id() >= 0) collective_members_[actor.collective_id()].push_back(actor.id());
      }
      for (const proto::RegisterDef& reg : plan.devices(d).registers()) registers_[{d, reg.id()}] = &reg;
    }
  }

  absl::Status Index() {
    for (const ActRecord& act : acts_) {
      auto it = actors_.find(act.actor_id);
      if (it == actors_.end() || it->second.device != act.device_index) {
        return absl::InvalidArgumentError(absl::StrCat("act of actor ", act.actor_id, " on device index ",
                                                       act.device_index, ": the plan has no such actor there"));
      }
      by_actor_[{act.actor_id, act.iteration}] = &act;
      tracks_[{act.device_index, act.thread}].push_back(&act);
    }
    for (auto& [key, track] : tracks_) {
      std::sort(track.begin(), track.end(), [](const ActRecord* a, const ActRecord* b) {
        return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
      });
      for (size_t i = 0; i < track.size(); ++i) position_[track[i]] = i;
    }
    return absl::OkStatus();
  }

  int64_t micro_batches() const { return micro_batches_; }
  const proto::ActorDef& Actor(int64_t id) const { return *actors_.at(id).actor; }

  // The act of the group's call that `act` belongs to that started last, or nullptr.
  const ActRecord* LastMember(const ActRecord& act) const {
    const proto::ActorDef& actor = Actor(act.actor_id);
    if (actor.collective_id() < 0) return nullptr;
    const ActRecord* last = nullptr;
    for (int64_t member : collective_members_.at(actor.collective_id())) {
      if (member == act.actor_id) continue;
      const ActRecord* other = Find(member, act.iteration);
      if (other != nullptr && (last == nullptr || other->start_ns > last->start_ns)) last = other;
    }
    return last;
  }

  // What `act` waited for: the candidate that ended last, no later than `start` (its
  // end clipped to `start`), and by which edge; nullptr when none.
  std::pair<const ActRecord*, PathEdge> Enabler(const ActRecord& act, int64_t start, int64_t* end) const {
    const ActRecord* best = nullptr;
    PathEdge best_edge = PathEdge::kStart;
    int64_t best_end = std::numeric_limits<int64_t>::min();
    auto consider = [&](const ActRecord* candidate, PathEdge edge) {
      if (candidate == nullptr || candidate == &act || candidate->end_ns > start + kRoundingNs) return;
      const int64_t clipped = std::min(candidate->end_ns, start);
      if (clipped > best_end || (clipped == best_end && edge < best_edge)) {
        best = candidate;
        best_edge = edge;
        best_end = clipped;
      }
    };
    const proto::ActorDef& actor = Actor(act.actor_id);
    const int device = act.device_index;
    for (int64_t id : actor.consumed_registers()) {
      auto reg = registers_.find({device, id});
      if (reg == registers_.end() || !actors_.contains(reg->second->producer_actor())) continue;
      const proto::ActorDef& producer = Actor(reg->second->producer_actor());
      consider(Find(producer.id(), MapIndex(act.iteration, actor, producer, micro_batches_)), PathEdge::kRegister);
    }
    for (int64_t id : actor.control_predecessors()) {
      if (!actors_.contains(id)) continue;
      consider(Find(id, MapIndex(act.iteration, actor, Actor(id), micro_batches_)), PathEdge::kControl);
    }
    for (int64_t id : actor.produced_registers()) {
      auto reg = registers_.find({device, id});
      if (reg == registers_.end()) continue;
      const int64_t reused = act.iteration - std::max<int64_t>(1, reg->second->count());
      if (reused < 0) continue;
      for (int64_t consumer : reg->second->consumer_actors()) {
        if (!actors_.contains(consumer)) continue;
        consider(Find(consumer, MapIndex(reused, actor, Actor(consumer), micro_batches_)), PathEdge::kSlot);
      }
    }
    // One act at a time per thread; a transfer actor has a thread of its own (the
    // device's transfer track holds several).
    if (actor.thread() == proto::THREAD_TRANSFER) {
      consider(Find(act.actor_id, act.iteration - 1), PathEdge::kThread);
    } else {
      const std::vector<const ActRecord*>& track = tracks_.at({act.device_index, act.thread});
      const size_t at = position_.at(&act);
      if (at > 0) consider(track[at - 1], PathEdge::kThread);
    }
    *end = best_end;
    return {best, best_edge};
  }

 private:
  const ActRecord* Find(int64_t actor, int64_t index) const {
    if (index < 0) return nullptr;
    auto it = by_actor_.find({actor, index});
    return it == by_actor_.end() ? nullptr : it->second;
  }

  const proto::Plan& plan_;
  const std::vector<ActRecord>& acts_;
  int64_t micro_batches_ = 1;
  absl::flat_hash_map<int64_t, ActorInfo> actors_;
  absl::flat_hash_map<int64_t, std::vector<int64_t>> collective_members_;
  absl::flat_hash_map<std::pair<int, int64_t>, const proto::RegisterDef*> registers_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, const ActRecord*> by_actor_;
  std::map<std::pair<int, int>, std::vector<const ActRecord*>> tracks_;
  absl::flat_hash_map<const ActRecord*, size_t> position_;
};

}  // namespace

const char* PathEdgeName(PathEdge edge) {
  switch (edge) {
    case PathEdge::kStart: return "start";
    case PathEdge::kRegister: return "register";
    case PathEdge::kControl: return "control";
    case PathEdge::kSlot: return "slot";
    case PathEdge::kThread: return "thread";
  }
  return "unknown";
}

absl::StatusOr<CriticalPath> FindCriticalPath(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                              int64_t iteration) {
  Walker walker(plan, acts);
  if (absl::Status indexed = walker.Index(); !indexed.ok()) return indexed;
  // Iteration ends, each no earlier than the one before (as StepProfile's).
  std::vector<int64_t> ends(iteration + 1, std::numeric_limits<int64_t>::min());
  const ActRecord* last = nullptr;
  for (const ActRecord& act : acts) {
    const int64_t of = IterationOfAct(walker.Actor(act.actor_id), act.iteration, walker.micro_batches());
    if (of > iteration) continue;
    ends[of] = std::max(ends[of], act.end_ns);
    if (of == iteration && (last == nullptr || act.end_ns > last->end_ns)) last = &act;
  }
  if (iteration < 1 || last == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no critical path of iteration ", iteration,
                                                   ": the acts hold no act of it, or it is the first"));
  }
  for (int64_t i = 1; i <= iteration; ++i) ends[i] = std::max(ends[i], ends[i - 1]);
  CriticalPath path;
  path.iteration = iteration;
  path.start_ns = ends[iteration - 1];
  path.end_ns = ends[iteration];

  std::vector<PathStep> reversed;
  absl::flat_hash_set<const ActRecord*> visited;
  const ActRecord* current = last;
  int64_t t = last->end_ns;
  while (true) {
    visited.insert(current);
    PathStep step;
    step.act = *current;
    step.path_end_ns = t;
    // A collective's call finishes after its last member arrived: go on from that one.
    const ActRecord* from = current;
    int64_t start = std::min(current->start_ns, t);
    const ActRecord* member = walker.LastMember(*current);
    if (member != nullptr && member->start_ns > start && member->start_ns <= t) {
      from = member;
      start = member->start_ns;
      step.rendezvous_device = member->device_index;
    }
    if (start <= path.start_ns) {
      step.path_start_ns = path.start_ns;
      reversed.push_back(step);
      break;
    }
    step.path_start_ns = start;
    int64_t end = 0;
    const auto [enabler, edge] = walker.Enabler(*from, start, &end);
    if (enabler == nullptr || visited.contains(enabler) || end <= path.start_ns) {
      step.wait_ns = start - path.start_ns;
      reversed.push_back(step);
      break;
    }
    step.wait_ns = start - end;
    step.edge = edge;
    reversed.push_back(step);
    current = enabler;
    t = end;
  }
  path.steps.assign(reversed.rbegin(), reversed.rend());
  return path;
}

}  // namespace oneflow::actors
