#include "compiler/auto_parallel/shared_core_pipeline.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow::auto_parallel {
namespace {

struct Task {
  bool forward = true;
  int64_t micro_batch = 0;
};

// Stage s of pp in 1F1B order.
std::vector<Task> OneForwardOneBackward(int64_t s, int64_t pp, int64_t micro_batches) {
  std::vector<Task> order;
  const int64_t warm_up = std::min(pp - s - 1, micro_batches);
  int64_t forwards = 0;
  for (; forwards < warm_up; ++forwards) order.push_back({true, forwards});
  for (int64_t backwards = 0; backwards < micro_batches; ++backwards) {
    if (forwards < micro_batches) order.push_back({true, forwards++});
    order.push_back({false, backwards});
  }
  return order;
}

}  // namespace

absl::StatusOr<double> SharedCorePipelineSeconds(const std::vector<PipelineStageWork>& stages, int64_t micro_batches,
                                                 double cores, proto::PipelineSchedule schedule) {
  if (stages.empty()) return absl::InvalidArgumentError("a pipeline of no stage");
  if (micro_batches < 1) return absl::InvalidArgumentError(absl::StrCat("micro_batches=", micro_batches, ": give >= 1"));
  if (!(cores > 0)) return absl::InvalidArgumentError(absl::StrCat("cores=", cores, ": give > 0"));
  if (schedule != proto::PIPELINE_SCHEDULE_1F1B && schedule != proto::PIPELINE_SCHEDULE_ZB_H1) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline schedule ", proto::PipelineSchedule_Name(schedule),
                                                   ": the play knows 1F1B and ZB-H1"));
  }
  const bool zero_bubble = schedule == proto::PIPELINE_SCHEDULE_ZB_H1;
  for (size_t s = 0; s < stages.size(); ++s) {
    const PipelineStageWork& stage = stages[s];
    if (stage.devices < 1 || stage.forward_seconds < 0 || stage.backward_seconds < 0 ||
        stage.forward_wait_seconds < 0 || stage.backward_wait_seconds < 0 || stage.first_forward_wait_seconds < 0 ||
        stage.first_backward_wait_seconds < 0 || stage.weight_backward_seconds < 0 ||
        stage.weight_backward_seconds > stage.backward_seconds) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", s, ": ", stage.devices, " devices, forward ", stage.forward_seconds, " s + ",
          stage.forward_wait_seconds, " s waiting (+ ", stage.first_forward_wait_seconds,
          " s the first micro-batch), backward ", stage.backward_seconds, " s + ", stage.backward_wait_seconds,
          " s waiting (+ ", stage.first_backward_wait_seconds, " s the first), ", stage.weight_backward_seconds,
          " s of the backward W; give >= 1 device, no negative time and W within the backward"));
    }
  }
  const int64_t pp = static_cast<int64_t>(stages.size());
  std::vector<std::vector<Task>> orders(pp);
  for (int64_t s = 0; s < pp; ++s) orders[s] = OneForwardOneBackward(s, pp, micro_batches);
  auto weight_seconds = [&](int64_t s) { return zero_bubble ? stages[s].weight_backward_seconds : 0.0; };
  // Which tasks finished: [stage][micro-batch]. (backward_done: B, what the stage before
  // waits for; weight_done: W, which frees the micro-batch's activation slot.)
  std::vector<std::vector<bool>> forward_done(pp, std::vector<bool>(micro_batches, false));
  std::vector<std::vector<bool>> backward_done(pp, std::vector<bool>(micro_batches, false));
  std::vector<std::vector<bool>> weight_done(pp, std::vector<bool>(micro_batches, !zero_bubble));
  std::vector<size_t> next(pp, 0);
  std::vector<int64_t> next_weight(pp, 0);  // W acts run oldest first, after their B
  // The task each stage runs: none, its next ordered task, or the W act next_weight[s].
  enum class Current { kNone, kOrdered, kWeight };
  std::vector<Current> current(pp, Current::kNone);
  std::vector<double> remaining(pp, 0);  // core-seconds left of the current task
  std::vector<double> waiting(pp, 0);    // wall seconds of waiting left after its compute
  auto ready = [&](int64_t s) -> bool {
    if (next[s] >= orders[s].size()) return false;
    const Task& task = orders[s][next[s]];
    if (task.forward) {
      const int64_t slots = pp - s;
      const bool slot_free = task.micro_batch < slots || weight_done[s][task.micro_batch - slots];
      return slot_free && (s == 0 || forward_done[s - 1][task.micro_batch]);
    }
    return s == pp - 1 ? forward_done[s][task.micro_batch] : backward_done[s + 1][task.micro_batch];
  };
  auto weight_ready = [&](int64_t s) {
    return zero_bubble && next_weight[s] < micro_batches && backward_done[s][next_weight[s]];
  };
  double now = 0;
  std::vector<int64_t> running;
  while (true) {
    running.clear();
    int64_t busy_devices = 0;  // devices computing (not waiting): they share the cores
    for (int64_t s = 0; s < pp; ++s) {
      if (current[s] == Current::kNone && ready(s)) {
        const Task& task = orders[s][next[s]];
        current[s] = Current::kOrdered;
        remaining[s] = task.forward ? stages[s].forward_seconds : stages[s].backward_seconds - weight_seconds(s);
        waiting[s] = task.forward ? stages[s].forward_wait_seconds : stages[s].backward_wait_seconds;
        if (task.micro_batch == 0) {
          waiting[s] += task.forward ? stages[s].first_forward_wait_seconds : stages[s].first_backward_wait_seconds;
        }
      } else if (current[s] == Current::kNone && weight_ready(s)) {
        current[s] = Current::kWeight;
        remaining[s] = weight_seconds(s);
        waiting[s] = 0;
      }
      if (current[s] == Current::kNone) continue;
      running.push_back(s);
      if (remaining[s] > 0) busy_devices += stages[s].devices;
    }
    if (running.empty()) break;
    const double rate = busy_devices == 0 ? 1.0 : std::min(1.0, cores / static_cast<double>(busy_devices));
    double step = std::numeric_limits<double>::infinity();
    for (int64_t s : running) step = std::min(step, remaining[s] > 0 ? remaining[s] / rate : waiting[s]);
    now += step;
    // A relative margin absorbs rounding: the phase(s) that set the step end now.
    const double margin = 1e-12 * std::max(1.0, now);
    for (int64_t s : running) {
      if (remaining[s] > 0) {
        remaining[s] -= step * rate;
        if (remaining[s] <= margin) remaining[s] = 0;
        continue;  // its waiting starts at the next step
      }
      waiting[s] -= step;
      if (waiting[s] > margin) continue;
      if (current[s] == Current::kWeight) {
        weight_done[s][next_weight[s]++] = true;
      } else {
        const Task& task = orders[s][next[s]];
        (task.forward ? forward_done : backward_done)[s][task.micro_batch] = true;
        ++next[s];
      }
      current[s] = Current::kNone;
    }
  }
  for (int64_t s = 0; s < pp; ++s) {
    if (next[s] < orders[s].size() || (zero_bubble && next_weight[s] < micro_batches)) {
      return absl::InternalError(absl::StrCat("pipeline play stalled: stage ", s, " at task ", next[s], " of ",
                                              orders[s].size(), ", W act ", next_weight[s]));
    }
  }
  return now;
}

absl::StatusOr<double> ZeroBubbleShare(const std::vector<PipelineStageWork>& stages, int64_t micro_batches) {
  double devices = 0;
  double slowest = 0;
  for (const PipelineStageWork& stage : stages) {
    devices += static_cast<double>(stage.devices);
    slowest = std::max(slowest, stage.forward_seconds + stage.backward_seconds + stage.forward_wait_seconds +
                                    stage.backward_wait_seconds);
  }
  const double cores = std::max(1.0, devices);
  OF_ASSIGN_OR_RETURN(const double one_forward_one_backward,
                      SharedCorePipelineSeconds(stages, micro_batches, cores, proto::PIPELINE_SCHEDULE_1F1B));
  OF_ASSIGN_OR_RETURN(const double zero_bubble,
                      SharedCorePipelineSeconds(stages, micro_batches, cores, proto::PIPELINE_SCHEDULE_ZB_H1));
  const double busy = static_cast<double>(micro_batches) * slowest;
  const double bubble = one_forward_one_backward - busy;
  if (bubble <= 0) return 1.0;
  return std::clamp((zero_bubble - busy) / bubble, 0.0, 1.0);
}

}  // namespace oneflow::auto_parallel
