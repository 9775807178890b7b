#include "oneflow_core/comm/in_process/group_state.h"

namespace oneflow {
namespace in_process {

GroupState::GroupState(int64_t size, std::string name)
    : size_(size),
      name_(std::move(name)),
      phases_(new Phase[size]),
      posts_(size),
      channels_(new Channel[size * size]) {}

bool GroupState::AllReached(int64_t phase) const {
  for (int64_t rank = 0; rank < size_; ++rank) {
    if (this->phase(rank) < phase) return false;
  }
  return true;
}

void GroupState::SetCompleted(int64_t rank, int64_t call) {
  phases_[rank].completed.store(call, std::memory_order_release);
}

bool GroupState::AllCompleted(int64_t call) const {
  for (int64_t rank = 0; rank < size_; ++rank) {
    if (phases_[rank].completed.load(std::memory_order_acquire) < call) return false;
  }
  return true;
}

std::vector<int64_t> GroupState::RanksBelow(int64_t phase) const {
  std::vector<int64_t> ranks;
  for (int64_t rank = 0; rank < size_; ++rank) {
    if (this->phase(rank) < phase) ranks.push_back(rank);
  }
  return ranks;
}

bool GroupState::SetPhase(int64_t rank, int64_t phase, bool unless_aborted) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unless_aborted && aborted_.load(std::memory_order_relaxed)) return false;
    phases_[rank].value.store(phase, std::memory_order_release);
  }
  changed_.notify_all();
  return true;
}

bool GroupState::Offer(Channel& channel, int64_t sequence, const void* data, int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load(std::memory_order_relaxed)) return false;
    channel.data = data;
    channel.bytes = bytes;
    channel.posted.store(sequence, std::memory_order_release);
  }
  changed_.notify_all();
  return true;
}

bool GroupState::Claim(Channel& channel, int64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.load(std::memory_order_relaxed)) return false;
  channel.claimed = sequence;
  return true;
}

bool GroupState::Withdraw(Channel& channel, int64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  return channel.claimed < sequence;
}

void GroupState::MarkReceived(Channel& channel, int64_t sequence) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    channel.done.store(sequence, std::memory_order_release);
  }
  changed_.notify_all();
}

void GroupState::Abort(const absl::Status& cause) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    AbortLocked(cause);
  }
  changed_.notify_all();
}

void GroupState::AbortLocked(const absl::Status& cause) {
  if (aborted_.load(std::memory_order_relaxed)) return;
  abort_cause_ = cause.ok() ? absl::CancelledError("aborted without a cause") : cause;
  aborted_.store(true, std::memory_order_release);
  // Waiters are woken by the caller (Abort) or, inside Wait, once the mutex is released:
  // notify here too, since Wait returns with the lock held by its unique_lock.
  changed_.notify_all();
}

absl::Status GroupState::abort_cause() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_cause_;
}

}  // namespace in_process
}  // namespace oneflow
