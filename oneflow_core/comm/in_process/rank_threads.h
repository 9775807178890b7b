// Test helper: runs fn(rank) for every rank of a group, each on its own thread (as each
// device's communication thread would), and returns when all have finished.
#ifndef ONEFLOW_CORE_COMM_IN_PROCESS_RANK_THREADS_H_
#define ONEFLOW_CORE_COMM_IN_PROCESS_RANK_THREADS_H_

#include <cstdint>
#include <thread>
#include <vector>

namespace oneflow {

template <typename Fn>
void RunOnRankThreads(int64_t ranks, Fn&& fn) {
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&fn, rank] { fn(rank); });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_IN_PROCESS_RANK_THREADS_H_
