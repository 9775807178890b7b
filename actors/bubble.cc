#include "actors/bubble.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace oneflow::actors {

int64_t CoveredNs(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t window_start_ns,
                  int64_t window_end_ns) {
  // One thread's acts never overlap, but merging costs nothing and keeps hand-made
  // records (and the transfer track, where several transfer threads meet) honest.
  std::sort(intervals.begin(), intervals.end());
  int64_t covered = 0, covered_to = window_start_ns;
  for (const auto& [start, end] : intervals) {
    const int64_t begin = std::max(start, covered_to), finish = std::min(end, window_end_ns);
    if (finish > begin) covered += finish - begin;
    covered_to = std::max(covered_to, std::min(end, window_end_ns));
  }
  return covered;
}

absl::StatusOr<MeasuredBubble> MeasureBubble(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                             int64_t warmup_iterations) {
  const int64_t micro_batches = std::max<int64_t>(1, plan.job().micro_batches());
  absl::flat_hash_map<int64_t, std::pair<const proto::ActorDef*, int>> actors;
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) actors[actor.id()] = {&actor, d};
  }
  MeasuredBubble bubble;
  bubble.devices.resize(plan.devices_size());
  bubble.window_start_ns = std::numeric_limits<int64_t>::max();
  bubble.window_end_ns = std::numeric_limits<int64_t>::min();
  int64_t last_iteration = -1;
  // Compute-thread acts per device, as [start, end) intervals.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> compute(plan.devices_size());
  for (const ActRecord& act : acts) {
    auto it = actors.find(act.actor_id);
    if (it == actors.end() || it->second.second != act.device_index) {
      return absl::InvalidArgumentError(absl::StrCat("act of actor ", act.actor_id, " on device index ",
                                                     act.device_index, ": the plan has no such actor there"));
    }
    const proto::ActorDef& actor = *it->second.first;
    const int64_t iteration = actor.per_iteration() ? act.iteration : act.iteration / micro_batches;
    last_iteration = std::max(last_iteration, iteration);
    if (iteration >= warmup_iterations) {
      bubble.window_start_ns = std::min(bubble.window_start_ns, act.start_ns);
      bubble.window_end_ns = std::max(bubble.window_end_ns, act.end_ns);
    }
    if (actor.thread() == proto::THREAD_COMPUTE) compute[act.device_index].push_back({act.start_ns, act.end_ns});
  }
  if (last_iteration < warmup_iterations) {
    return absl::FailedPreconditionError(
        absl::StrCat("the trace has acts of iterations 0..", last_iteration, " only; the first ", warmup_iterations,
                     " are warm-up: run at least ", warmup_iterations + 1, " iterations (--iters)"));
  }
  bubble.first_iteration = warmup_iterations;
  bubble.last_iteration = last_iteration;
  const int64_t window = std::max<int64_t>(bubble.window_end_ns - bubble.window_start_ns, 1);
  for (int d = 0; d < plan.devices_size(); ++d) {
    const int64_t busy = CoveredNs(std::move(compute[d]), bubble.window_start_ns, bubble.window_end_ns);
    bubble.devices[d].busy_ns = busy;
    bubble.devices[d].idle_fraction = 1.0 - static_cast<double>(busy) / window;
  }
  return bubble;
}

}  // namespace oneflow::actors
