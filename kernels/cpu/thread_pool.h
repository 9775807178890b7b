// A CPU device's kernel threads: `--threads_per_device=N` gives each device a pool of
// N - 1 helper threads, and the device's compute thread is the N-th. The runtime gets
// each device's pool from its backend (DeviceBackend::CreateThreadPool) and hands it to
// every kernel call as KernelContext::thread_pool; a kernel passes it to ParallelFor. A
// kernel called without one (tests, a device of one thread) runs serially. Passing the
// pool, not setting a thread-local, keeps the kernel a function of its arguments and the
// runtime free of this CPU header.
//
//   KernelThreadPool pool(2);                    // per device, from the backend
//   ParallelFor(context.thread_pool, rows, 64, [&](int64_t begin, int64_t end) { ... });
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


namespace oneflow {

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

// Calls body(begin, end) on disjoint ranges covering [0, total), in parallel over `pool`
// (nullptr: on the calling thread). Ranges are at least `grain` long (except when total < grain), so small
// loops stay on the calling thread, where waking a helper would cost more than it saves.
void ParallelFor(KernelThreadPool* pool, int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace oneflow

#endif  // KERNELS_CPU_THREAD_POOL_H_
