// What every communicator does on entering a collective call, once for all backends:
// refuse a second thread that enters while a call is in flight (Busy), and turn the call's
// timeout into the deadline every wait of the call is bounded by (DeadlineAfter).
#ifndef ONEFLOW_CORE_COMM_CALL_GUARD_H_
#define ONEFLOW_CORE_COMM_CALL_GUARD_H_

#include <atomic>
#include <chrono>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace oneflow {

// Marks a communicator busy for one call. A communicator's calls are issued by one thread
// in the plan's order; a second thread entering at the same time is a bug in the caller,
// which the communicator reports (FAILED_PRECONDITION) when entered() is false.
class Busy {
 public:
  explicit Busy(std::atomic<bool>* flag) : flag_(flag), entered_(!flag->exchange(true)) {}
  ~Busy() {
    if (entered_) flag_->store(false);
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

  bool entered() const { return entered_; }

 private:
  std::atomic<bool>* flag_;
  bool entered_;
};

// What a call refused by Busy returns (before the backend adds who and which call).
inline absl::Status SecondThreadError() {
  return absl::FailedPreconditionError(
      "called while another call on this communicator is in progress; one thread must issue a "
      "communicator's calls, in order");
}

// `timeout` after `now`: `now` itself for a zero or negative timeout (the call fails at its
// first wait), never (InfiniteFuture) for an infinite one.
inline absl::Time DeadlineAfter(absl::Time now, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return now;
  if (timeout == absl::InfiniteDuration()) return absl::InfiniteFuture();
  return now + timeout;
}

// The same on a std::chrono clock (condition variables wait on the steady clock), where
// "never" is time_point::max() and a finite timeout saturates there instead of overflowing.
template <typename Clock>
typename Clock::time_point DeadlineAfter(typename Clock::time_point now, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return now;
  if (timeout == absl::InfiniteDuration()) return Clock::time_point::max();
  const auto nanoseconds = absl::ToChronoNanoseconds(timeout);
  if (nanoseconds >= Clock::time_point::max() - now) return Clock::time_point::max();
  return now + std::chrono::duration_cast<typename Clock::duration>(nanoseconds);
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_CALL_GUARD_H_
