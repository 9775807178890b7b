// The memory the ranks of one in-process group share: what each rank publishes for the
// collective it is in (its "post": buffer pointers and counts), how far each rank has got
// (its "phase"), the point-to-point channels, and the group's abort state.
//
// The protocol (the communicator drives it; docs/collectives.md has the picture):
//  - Calls are numbered per rank (1, 2, ...); all ranks make the same calls, so call k is
//    the same collective everywhere. Call k has phases 2k+1 (arrived: the post is
//    written) and 2k+2 (done: this rank reads and writes no peer buffer of call k any
//    more). A rank's phase only grows.
//  - A rank writes its post, then stores "arrived"; peers read the post and touch the
//    buffers it points to only after seeing every rank arrived. A rank leaves call k only
//    after every rank is done, so no peer still reads or writes its buffers and its post
//    is free for call k+1.
//  - Before "done", a rank that carried out its data movement of call k stores k as its
//    "completed" call; one that skipped it (it saw the group aborted) does not. All-reduce
//    writes into every rank's output, so a rank's result is whole only if every rank
//    completed the call; an aborted group starts no later call, so "completed >= k" is
//    exact.
//  - Every phase store and the abort happen under one mutex, and the decision to give up
//    waiting is taken under it too. So either some rank has seen "everyone arrived" before
//    the group was aborted, and then no one gives up on arrival, or every rank that sees
//    "everyone arrived" also sees the abort and touches no buffer. A rank that gave up on
//    arrival can therefore return at once: nobody reads or writes its buffers.
//  - Waits spin briefly (peers of one process are usually microseconds apart; sleeping
//    costs tens of microseconds per wake-up), then sleep on a condition variable until
//    the deadline.
#ifndef ONEFLOW_CORE_COMM_IN_PROCESS_GROUP_STATE_H_
#define ONEFLOW_CORE_COMM_IN_PROCESS_GROUP_STATE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "oneflow_core/comm/call_agreement.h"

namespace oneflow {
namespace in_process {

using Clock = std::chrono::steady_clock;

// What a rank publishes for one collective call. Written only by its rank, before it
// arrives; read by peers between everyone's arrival and everyone's done.
struct Post {
  // The call, which peers compare with theirs (call_agreement.h). Its counts (reduce-scatter:
  // elements per rank; all-gather: bytes per rank; all-to-all: the size x size byte matrix)
  // are a copy, so peers never read the caller's span.
  CallDescription call;
  const void* input = nullptr;
  void* output = nullptr;
};

// One direction (sender -> receiver) of a point-to-point link. Sends are numbered per
// channel; the sender publishes `data`/`bytes` and stores `posted`; the receiver claims
// it (under the mutex, so the sender cannot withdraw it any more), copies straight from
// the sender's buffer, then stores `done`.
struct Channel {
  std::atomic<int64_t> posted{0};
  std::atomic<int64_t> done{0};
  int64_t claimed = 0;         // guarded by the group mutex
  const void* data = nullptr;  // written by the sender before `posted`
  int64_t bytes = 0;
  absl::Status receive_status;  // written by the receiver before `done`
};

enum class WaitResult {
  kReady,    // the condition holds
  kAborted,  // the group was aborted first
  kExpired,  // the deadline passed first; this wait aborted the group
};

class GroupState {
 public:
  GroupState(int64_t size, std::string name);

  int64_t size() const { return size_; }
  const std::string& name() const { return name_; }

  Post& post(int64_t rank) { return posts_[rank]; }
  const Post& post(int64_t rank) const { return posts_[rank]; }
  Channel& channel(int64_t from, int64_t to) { return channels_[from * size_ + to]; }

  int64_t phase(int64_t rank) const { return phases_[rank].value.load(std::memory_order_acquire); }
  bool AllReached(int64_t phase) const;
  // The last call whose data movement `rank` carried out (see the protocol above).
  void SetCompleted(int64_t rank, int64_t call);
  bool AllCompleted(int64_t call) const;
  // The ranks whose phase is below `phase`, in order.
  std::vector<int64_t> RanksBelow(int64_t phase) const;

  // Stores `rank`'s phase and wakes the waiters. With `unless_aborted`, stores nothing and
  // returns false when the group is aborted (a rank must not arrive in an aborted group).
  bool SetPhase(int64_t rank, int64_t phase, bool unless_aborted);

  // The sender publishes send number `sequence`: false (nothing published) when aborted.
  bool Offer(Channel& channel, int64_t sequence, const void* data, int64_t bytes);
  // The receiver claims send number `sequence`: false when aborted, and then the sender
  // may withdraw it.
  bool Claim(Channel& channel, int64_t sequence);
  // The sender gives up on send number `sequence` of an aborted group: true when the
  // receiver never claimed it (nobody will read the data), false when the receiver is
  // copying and the sender must wait for `done`.
  bool Withdraw(Channel& channel, int64_t sequence);
  // Stores `channel.done` and wakes the waiters.
  void MarkReceived(Channel& channel, int64_t sequence);

  // Waits until ready() holds (kReady), the group is aborted (kAborted) or `deadline`
  // passes. On expiry, under the mutex, `on_expiry` decides: a status aborts the group
  // with it (kExpired); nullopt means the peer is already in bounded memory work on this
  // rank's buffers, and the wait goes on without a deadline. ready() must read only
  // atomics that change under the mutex.
  template <typename Ready>
  WaitResult Wait(Ready ready, Clock::time_point deadline,
                  absl::FunctionRef<std::optional<absl::Status>()> on_expiry);

  // Waits until ready() holds, aborted or not: for the end of a call, when peers may still
  // read (all-reduce: write) this rank's buffers. Every peer counted by ready() has
  // arrived in the call and waits for nothing more before it is done, so this is bounded
  // by memory work. If
  // `deadline` passes first, aborts the group with on_expiry() and keeps waiting; returns
  // true in that case.
  template <typename Ready>
  bool WaitDraining(Ready ready, Clock::time_point deadline,
                    absl::FunctionRef<absl::Status()> on_expiry);

  // The first abort's cause wins. Wakes every waiter.
  void Abort(const absl::Status& cause);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // OK while not aborted.
  absl::Status abort_cause() const;

 private:
  // Polls ready() briefly; true once it holds. Shared by Wait and WaitDraining.
  template <typename Ready>
  bool SpinUntil(Ready ready, bool stop_on_abort) const;
  void AbortLocked(const absl::Status& cause);

  // One cache line per rank: written by its rank, polled by the others.
  struct alignas(64) Phase {
    std::atomic<int64_t> value{0};
    std::atomic<int64_t> completed{0};
  };

  const int64_t size_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> aborted_{false};
  absl::Status abort_cause_;  // guarded by mutex_
  std::unique_ptr<Phase[]> phases_;
  std::vector<Post> posts_;
  std::unique_ptr<Channel[]> channels_;
};

// ---------------------------------------------------------------------------------------
// Implementation of the templates.

template <typename Ready>
bool GroupState::SpinUntil(Ready ready, bool stop_on_abort) const {
  // ~64 cheap polls, then yields: with more ranks than cores (4 ranks on 2 cores) a
  // spinning rank would steal the time slice of the peer it waits for.
  constexpr int kPolls = 64;
  constexpr int kYields = 64;
  for (int i = 0; i < kPolls + kYields; ++i) {
    if (ready()) return true;
    if (stop_on_abort && aborted()) return false;
    if (i < kPolls) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
  return false;
}

template <typename Ready>
WaitResult GroupState::Wait(Ready ready, Clock::time_point deadline,
                            absl::FunctionRef<std::optional<absl::Status>()> on_expiry) {
  if (SpinUntil(ready, /*stop_on_abort=*/true)) return WaitResult::kReady;
  std::unique_lock<std::mutex> lock(mutex_);
  bool bounded = true;
  while (true) {
    // ready() before aborted_: a rank that sees everyone arrived must take part in the
    // call's end (peers may read its buffers), whatever else happened.
    if (ready()) return WaitResult::kReady;
    if (bounded && aborted_.load(std::memory_order_relaxed)) return WaitResult::kAborted;
    if (bounded && Clock::now() >= deadline) {
      std::optional<absl::Status> cause = on_expiry();
      if (cause.has_value()) {
        AbortLocked(*cause);
        return WaitResult::kExpired;
      }
      bounded = false;
    }
    if (bounded) {
      changed_.wait_until(lock, deadline);
    } else {
      changed_.wait(lock);
    }
  }
}

template <typename Ready>
bool GroupState::WaitDraining(Ready ready, Clock::time_point deadline,
                              absl::FunctionRef<absl::Status()> on_expiry) {
  if (SpinUntil(ready, /*stop_on_abort=*/false)) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  bool expired = false;
  while (!ready()) {
    if (!expired && Clock::now() >= deadline) {
      AbortLocked(on_expiry());
      expired = true;
    }
    if (expired) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, deadline);
    }
  }
  return expired;
}

}  // namespace in_process
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_IN_PROCESS_GROUP_STATE_H_
