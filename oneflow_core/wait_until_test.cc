#include "oneflow_core/wait_until.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(WaitUntilTest, DoneAlreadyReturnsAtOnceEvenPastTheDeadline) {
  std::mutex mutex;
  std::condition_variable changed;
  std::unique_lock<std::mutex> lock(mutex);
  EXPECT_TRUE(WaitUntil(changed, lock, absl::InfinitePast(), [] { return true; }));
}

TEST(WaitUntilTest, NeverDoneReturnsFalseAtTheDeadlineNotBefore) {
  std::mutex mutex;
  std::condition_variable changed;
  std::unique_lock<std::mutex> lock(mutex);
  const absl::Time start = absl::Now();
  EXPECT_FALSE(WaitUntil(changed, lock, start + absl::Milliseconds(30), [] { return false; }));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
  EXPECT_TRUE(lock.owns_lock());
}

// An infinite deadline waits for the notifier (a plain wait_for of the remaining time
// would overflow and return false at once).
TEST(WaitUntilTest, InfiniteDeadlineWaitsForTheNotifier) {
  std::mutex mutex;
  std::condition_variable changed;
  bool done = false;
  std::thread notifier([&] {
    absl::SleepFor(absl::Milliseconds(20));
    {
      std::lock_guard<std::mutex> guard(mutex);
      done = true;
    }
    changed.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(WaitUntil(changed, lock, absl::InfiniteFuture(), [&] { return done; }));
    EXPECT_TRUE(done);
  }
  notifier.join();
}

}  // namespace
}  // namespace oneflow
