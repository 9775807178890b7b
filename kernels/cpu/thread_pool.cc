#include "kernels/cpu/thread_pool.h"

#include <algorithm>

namespace oneflow {

KernelThreadPool::KernelThreadPool(int threads) {
  for (int t = 1; t < threads; ++t) helpers_.emplace_back([this] { HelperLoop(); });
}

KernelThreadPool::~KernelThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void KernelThreadPool::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (next_task_ < tasks_) {
    const int index = next_task_++;
    const std::function<void(int)>* task = task_;
    lock.unlock();
    (*task)(index);
    lock.lock();
  }
}

void KernelThreadPool::Run(int tasks, const std::function<void(int)>& task) {
  if (tasks <= 0) return;
  if (helpers_.empty() || tasks == 1) {
    for (int index = 0; index < tasks; ++index) task(index);
    return;
  }
  std::lock_guard<std::mutex> serial(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    tasks_ = tasks;
    next_task_ = 0;
    helpers_finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  Drain();
  // Every helper checks in for every generation, even one that found no task left: then
  // none can still be reading task_ (a reference to the caller's function) after return.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return helpers_finished_ == static_cast<int>(helpers_.size()); });
  task_ = nullptr;
}

void KernelThreadPool::HelperLoop() {
  int64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    Drain();
    bool last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last = ++helpers_finished_ == static_cast<int>(helpers_.size());
    }
    if (last) done_.notify_one();
  }
}

void ParallelFor(KernelThreadPool* pool, int64_t total, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& body) {
  if (total <= 0) return;
  const int64_t most = grain > 0 ? total / grain : total;
  const int64_t parts = pool == nullptr ? 1 : std::min<int64_t>(pool->threads(), std::max<int64_t>(most, 1));
  if (parts <= 1) {
    body(0, total);
    return;
  }
  // Even parts; the first total % parts get one more.
  const int64_t base = total / parts, extra = total % parts;
  pool->Run(static_cast<int>(parts), [&](int part) {
    const int64_t begin = part * base + std::min<int64_t>(part, extra);
    body(begin, begin + base + (part < extra ? 1 : 0));
  });
}

}  // namespace oneflow
