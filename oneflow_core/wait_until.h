// Waiting on a std::condition_variable until an absl::Time deadline.
//
// The tree has one mutex type, std::mutex with std::condition_variable (not absl::Mutex:
// Debian's absl is not built with ThreadSanitizer's annotations, so races under
// --config=tsan would be reported through every absl::Mutex). absl::Mutex's
// AwaitWithDeadline has no std equivalent taking an absl::Time, and the obvious
// `wait_for(lock, absl::ToChronoNanoseconds(deadline - absl::Now()), done)` overflows on
// an infinite deadline (chrono adds the duration to now()), returning at once.
#ifndef ONEFLOW_CORE_WAIT_UNTIL_H_
#define ONEFLOW_CORE_WAIT_UNTIL_H_

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace oneflow {

// With `lock` held, waits on `changed` until `done()` is true or `deadline` passes
// (absl::InfiniteFuture(): no deadline); returns `done()`. Whoever makes `done()` true
// must notify `changed`.
template <typename Predicate>
bool WaitUntil(std::condition_variable& changed, std::unique_lock<std::mutex>& lock, absl::Time deadline,
               Predicate done) {
  while (!done()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    // In slices of at most an hour, which chrono's arithmetic holds.
    changed.wait_for(lock, absl::ToChronoNanoseconds(std::min(left, absl::Hours(1))));
  }
  return true;
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_WAIT_UNTIL_H_
