#include "compiler/auto_parallel/shared_core_pipeline.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

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
                                                 double cores) {
  if (stages.empty()) return absl::InvalidArgumentError("a pipeline of no stage");
  if (micro_batches < 1) return absl::InvalidArgumentError(absl::StrCat("micro_batches=", micro_batches, ": give >= 1"));
  if (!(cores > 0)) return absl::InvalidArgumentError(absl::StrCat("cores=", cores, ": give > 0"));
  for (size_t s = 0; s < stages.size(); ++s) {
    const PipelineStageWork& stage = stages[s];
    if (stage.devices < 1 || stage.forward_seconds < 0 || stage.backward_seconds < 0 ||
        stage.forward_wait_seconds < 0 || stage.backward_wait_seconds < 0 || stage.first_forward_wait_seconds < 0 ||
        stage.first_backward_wait_seconds < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", s, ": ", stage.devices, " devices, forward ", stage.forward_seconds, " s + ",
          stage.forward_wait_seconds, " s waiting (+ ", stage.first_forward_wait_seconds,
          " s the first micro-batch), backward ", stage.backward_seconds, " s + ", stage.backward_wait_seconds,
          " s waiting (+ ", stage.first_backward_wait_seconds, " s the first); give >= 1 device and no negative time"));
    }
  }
  const int64_t pp = static_cast<int64_t>(stages.size());
  std::vector<std::vector<Task>> orders(pp);
  for (int64_t s = 0; s < pp; ++s) orders[s] = OneForwardOneBackward(s, pp, micro_batches);
  // Which tasks finished: [stage][micro-batch].
  std::vector<std::vector<bool>> forward_done(pp, std::vector<bool>(micro_batches, false));
  std::vector<std::vector<bool>> backward_done(pp, std::vector<bool>(micro_batches, false));
  std::vector<size_t> next(pp, 0);
  std::vector<double> remaining(pp, -1);  // core-seconds left of the current task; -1: not started
  std::vector<double> waiting(pp, 0);     // wall seconds of waiting left after its compute
  auto ready = [&](int64_t s) -> bool {
    if (next[s] >= orders[s].size()) return false;
    const Task& task = orders[s][next[s]];
    if (task.forward) return s == 0 || forward_done[s - 1][task.micro_batch];
    return s == pp - 1 ? forward_done[s][task.micro_batch] : backward_done[s + 1][task.micro_batch];
  };
  double now = 0;
  std::vector<int64_t> running;
  while (true) {
    running.clear();
    int64_t busy_devices = 0;  // devices computing (not waiting): they share the cores
    for (int64_t s = 0; s < pp; ++s) {
      if (!ready(s)) continue;
      running.push_back(s);
      if (remaining[s] < 0) {
        const Task& task = orders[s][next[s]];
        remaining[s] = task.forward ? stages[s].forward_seconds : stages[s].backward_seconds;
        waiting[s] = task.forward ? stages[s].forward_wait_seconds : stages[s].backward_wait_seconds;
        if (task.micro_batch == 0) {
          waiting[s] += task.forward ? stages[s].first_forward_wait_seconds : stages[s].first_backward_wait_seconds;
        }
      }
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
      const Task& task = orders[s][next[s]];
      (task.forward ? forward_done : backward_done)[s][task.micro_batch] = true;
      ++next[s];
      remaining[s] = -1;
    }
  }
  for (int64_t s = 0; s < pp; ++s) {
    if (next[s] < orders[s].size()) {
      return absl::InternalError(absl::StrCat("1F1B play stalled: stage ", s, " at task ", next[s], " of ",
                                              orders[s].size()));
    }
  }
  return now;
}

}  // namespace oneflow::auto_parallel
