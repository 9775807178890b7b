#include "actors/core_lending.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

TEST(CoreLendingTest, RunnableThreadsAreTheLoadavgFourthFieldsNumerator) {
  EXPECT_EQ(*RunnableThreadsFromLoadavg("0.29 1.44 2.05 2/89 29869\n"), 2);
  EXPECT_EQ(*RunnableThreadsFromLoadavg("6.87 5.28 3.61 13/340 8371"), 13);
  for (absl::string_view bad : {"", "0.29 1.44 2.05", "0.29 1.44 2.05 x/89 1", "0.29 1.44 2.05 289 1"}) {
    const absl::StatusOr<int> runnable = RunnableThreadsFromLoadavg(bad);
    ASSERT_FALSE(runnable.ok()) << bad;
    EXPECT_EQ(runnable.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(runnable.status().message(), absl::StrCat("'", bad, "' is not /proc/loadavg")))
        << runnable.status().message();
  }
}

TEST(CoreLendingTest, LendsOnlyAfterItsShareAndOnlyWhileThreadsOutnumberCores) {
  const absl::Duration every = absl::Milliseconds(10);
  EXPECT_TRUE(ShouldLendCore(absl::Milliseconds(10), every, 3, 2));   // 3 runnable on 2 cores
  EXPECT_TRUE(ShouldLendCore(absl::Milliseconds(25), every, 9, 8));
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(9), every, 3, 2));   // not yet its turn
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(10), every, 2, 2));  // a core each
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(10), every, 1, 8));
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(10), every, -1, 2));  // runnable unknown
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(10), every, 3, 0));   // cores unknown
  EXPECT_FALSE(ShouldLendCore(absl::Milliseconds(10), absl::ZeroDuration(), 3, 2));  // off
}

// A host whose thread runs 4 ms of CPU per act.
struct FakeHost {
  absl::Duration cpu;
  int runnable = 3;
  int cores = 2;
  int runnable_reads = 0;
  std::vector<absl::Duration> sleeps;
  CoreLendingHost Host() {
    return CoreLendingHost{[this] { return cpu; },
                           [this] {
                             ++runnable_reads;
                             return runnable;
                           },
                           [this] { return cores; }, [this](absl::Duration d) { sleeps.push_back(d); }};
  }
};

TEST(CoreLendingTest, AThreadOnAnOversubscribedHostSleepsThePauseAfterEachTenMillisecondsOfCpu) {
  FakeHost fake;
  CoreLender lender(CoreLendingOptions{}, fake.Host());
  // Acts end at 4, 8, 12, 16, 20, 24 ms of CPU: the first 10 ms are done at 12 (lends),
  // the next at 24 (12 + 12 >= 10; 20 is only 8 after 12).
  std::vector<bool> lent;
  for (int act = 1; act <= 6; ++act) {
    fake.cpu += absl::Milliseconds(4);
    lent.push_back(lender.BetweenActs());
  }
  EXPECT_EQ(lent, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_EQ(lender.lent(), 2);
  EXPECT_EQ(fake.sleeps, (std::vector<absl::Duration>{absl::Microseconds(200), absl::Microseconds(200)}));
  EXPECT_EQ(fake.runnable_reads, 2);  // the host is read once per 10 ms, not per act
}

TEST(CoreLendingTest, AThreadWithACoreOfItsOwnNeverSleepsAndReadsTheHostOncePerShare) {
  FakeHost fake;
  fake.runnable = 2;
  CoreLender lender(CoreLendingOptions{}, fake.Host());
  for (int act = 1; act <= 6; ++act) {
    fake.cpu += absl::Milliseconds(4);
    EXPECT_FALSE(lender.BetweenActs()) << act;
  }
  EXPECT_TRUE(fake.sleeps.empty());
  EXPECT_EQ(fake.runnable_reads, 2);
  // The host becomes busier: the next check lends.
  fake.runnable = 5;
  fake.cpu += absl::Milliseconds(12);
  EXPECT_TRUE(lender.BetweenActs());
}

TEST(CoreLendingTest, OffNeverReadsTheHost) {
  FakeHost fake;
  CoreLender lender(CoreLendingOptions{absl::ZeroDuration(), absl::Microseconds(200)}, fake.Host());
  fake.cpu += absl::Seconds(1);
  EXPECT_FALSE(lender.BetweenActs());
  EXPECT_EQ(fake.runnable_reads, 0);
}

TEST(CoreLendingTest, ThisMachineCountsItsCoresItsRunnableThreadsAndThisThreadsCpu) {
  const CoreLendingHost host = ThisMachine();
  EXPECT_GE(host.cores(), 1);
  EXPECT_GE(host.runnable_threads(), 1);  // this thread runs while it reads
  const absl::Duration before = host.thread_cpu_time();
  volatile double sink = 0;
  for (int i = 0; i < 20000000; ++i) sink = sink + i * 0.5;
  EXPECT_GT(host.thread_cpu_time(), before);
}

}  // namespace
}  // namespace oneflow::actors
