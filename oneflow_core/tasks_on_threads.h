// Work split into independent tasks (one per device of a plan), run on a few threads.
//
//   std::vector<size_t> sizes(devices);
//   RunTasksOnThreads(devices, TaskThreads(), [&](int d) { sizes[d] = Size(d); });
//
// Each task writes only its own slots and the caller combines them in task order, so
// what comes out does not depend on the number of threads or on which thread ran what:
// the compiler's output stays byte-identical. The compiler's largest plans (issue 29's
// 64 devices, 434,240 actors) spend seconds in per-device work; a plain thread per
// call costs ~50 us, nothing against that.
#ifndef ONEFLOW_CORE_TASKS_ON_THREADS_H_
#define ONEFLOW_CORE_TASKS_ON_THREADS_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace oneflow {

// The threads per-device work runs on: the machine's hardware threads, at most 8 (the
// work is memory-bound past that).
inline int TaskThreads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// Calls task(0) ... task(tasks - 1) on up to `threads` threads, the caller one of them,
// each taking the next index until none is left; returns when every call has returned.
inline void RunTasksOnThreads(int tasks, int threads, const std::function<void(int)>& task) {
  std::atomic<int> next{0};
  auto drain = [&] {
    for (int i = next.fetch_add(1); i < tasks; i = next.fetch_add(1)) task(i);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < std::min(threads, tasks); ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_TASKS_ON_THREADS_H_
