// Independent tasks (one per device of a plan, typically) on a few threads.
//
// The compiler builds, checks and serializes each device of a plan on its own: a
// device's actors, registers, bytes and checks depend on that device alone. These helpers
// spread such work over the machine's cores. Each task writes only its own slots, so the
// result never depends on the number of threads or on which thread ran which task.
#ifndef ONEFLOW_CORE_RUN_TASKS_H_
#define ONEFLOW_CORE_RUN_TASKS_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace oneflow {

// The threads per-device work runs on: the machine's hardware threads, at most 8 (past
// that a plan's 64 devices are too few and too uneven to gain).
int TaskThreads();

// Calls task(0) ... task(tasks - 1) on up to `threads` threads, the caller one of them,
// each taking the next index until none is left; returns when every call has returned.
// With threads <= 1 (or one task) everything runs on the caller, in index order.
void RunTasksOnThreads(int tasks, int threads, const std::function<void(int)>& task);

// Runs check(0) ... check(tasks - 1) on TaskThreads() threads and returns the status of
// the lowest index that failed (OK when none did): the error a loop over the indices in
// order would have stopped at, whatever order the threads ran them in. Each check must
// depend only on its index (nothing it reads is written by another).
absl::Status RunChecksOnThreads(int tasks, const std::function<absl::Status(int)>& check);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_RUN_TASKS_H_
