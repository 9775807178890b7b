// A CPU device's kernel threads: `--threads_per_device=N` gives each device a pool of
// N - 1 helper threads, and the device's compute thread is the N-th. Kernels reach the
// pool of the device they run for through a thread-local pointer (ScopedKernelThreadPool)
// rather than through KernelContext, so the kernel interface stays one function of its
// arguments and a kernel called outside a device (tests, the reference) runs serially.
//
//   KernelThreadPool pool(2);                    // per device, owned by the runtime
//   ScopedKernelThreadPool scope(&pool);         // around each kernel call
//   ParallelFor(rows, 64, [&](int64_t begin, int64_t end) { ... rows [begin, end) ... });
//
// Why a pool per device and not OpenBLAS's own threads: OpenBLAS's thread count is one
// process-wide setting, and a process may run several devices (`oneflow run` simulates
// the whole cluster in one). Each device splitting its own calls over its own threads
// keeps devices independent; OpenBLAS stays at one thread per call (registry.h).
#ifndef KERNELS_CPU_THREAD_POOL_H_
#define KERNELS_CPU_THREAD_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace oneflow {

// The most threads one device may have: far above any core count a CPU device gets,
// low enough that a typo (--threads_per_device=10000) is refused instead of spawning.
inline constexpr int64_t kMaxThreadsPerDevice = 256;

// OK when 1 <= threads <= kMaxThreadsPerDevice; otherwise INVALID_ARGUMENT naming
// `what` (the flag or field the user wrote, e.g. "--threads_per_device") and the range.
absl::Status CheckThreadsPerDevice(int64_t threads, absl::string_view what);

class KernelThreadPool {
 public:
  // `threads` counts the caller: threads - 1 helpers are started here. 1: no helpers.
  explicit KernelThreadPool(int threads);
  ~KernelThreadPool();
  KernelThreadPool(const KernelThreadPool&) = delete;
  KernelThreadPool& operator=(const KernelThreadPool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Calls task(0) ... task(tasks - 1), spread over the caller and the helpers, and
  // returns once all returned. Callers are serialized (a device has one compute thread;
  // the lock only guards against misuse). Tasks must not call Run on this pool.
  void Run(int tasks, const std::function<void(int)>& task);

 private:
  void HelperLoop();
  // Takes task indices until none is left.
  void Drain();

  std::mutex run_mutex_;  // one Run at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;  // under mutex_ between generations
  int tasks_ = 0;
  int next_task_ = 0;        // under mutex_
  int64_t generation_ = 0;   // bumped per Run; helpers wait for a new one
  int helpers_finished_ = 0; // helpers done with the current generation
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
};

// The pool kernels on this thread use while the scope lives (nullptr: run serially).
class ScopedKernelThreadPool {
 public:
  explicit ScopedKernelThreadPool(KernelThreadPool* pool);
  ~ScopedKernelThreadPool();
  ScopedKernelThreadPool(const ScopedKernelThreadPool&) = delete;
  ScopedKernelThreadPool& operator=(const ScopedKernelThreadPool&) = delete;

 private:
  KernelThreadPool* previous_;
};

// This thread's pool (ScopedKernelThreadPool), or nullptr.
KernelThreadPool* CurrentKernelThreadPool();

// Calls body(begin, end) on disjoint ranges covering [0, total), in parallel over the
// current pool. Ranges are at least `grain` long (except when total < grain), so small
// loops stay on the calling thread, where waking a helper would cost more than it saves.
void ParallelFor(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace oneflow

#endif  // KERNELS_CPU_THREAD_POOL_H_
