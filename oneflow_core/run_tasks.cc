#include "oneflow_core/run_tasks.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace oneflow {

int TaskThreads() { return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)); }

void RunTasksOnThreads(int tasks, int threads, const std::function<void(int)>& task) {
  std::atomic<int> next{0};
  auto drain = [&] {
    for (int i = next.fetch_add(1); i < tasks; i = next.fetch_add(1)) task(i);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < std::min(threads, tasks); ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread& helper : helpers) helper.join();
}

absl::Status RunChecksOnThreads(int tasks, const std::function<absl::Status(int)>& check) {
  std::vector<absl::Status> statuses(std::max(tasks, 0));
  // Once index i failed, no index after it can be the answer: skip those not started.
  std::atomic<int> first_failed{tasks};
  RunTasksOnThreads(tasks, TaskThreads(), [&](int i) {
    if (i > first_failed.load(std::memory_order_relaxed)) return;
    statuses[i] = check(i);
    if (statuses[i].ok()) return;
    int seen = first_failed.load(std::memory_order_relaxed);
    while (i < seen && !first_failed.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
    }
  });
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace oneflow
