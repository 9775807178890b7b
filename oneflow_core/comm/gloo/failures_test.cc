// Failures only the Gloo backend has, ranks as threads: the connect timeout that bounds a
// first call, and a peer whose communicator is destroyed mid-job (its device thread quit).
// A dead process is two_process_test.cc; the failures every backend shares (missing ranks,
// aborts, timeouts, disagreeing and invalid calls) are the conformance suites in testing/.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/comm/testing/conformance.h"

namespace oneflow {
namespace {

using comm_testing::CallCollective;
using comm_testing::Clock;
using comm_testing::Description;
using comm_testing::Options;
using comm_testing::SecondsSince;
using ::testing::HasSubstr;

// Runs one all-reduce on every rank so the group is connected.
void Connect(GlooTestGroup& group) {
  RunOnRankThreads(group.size(), [&](int64_t rank) {
    const absl::Status status =
        CallCollective(group[rank], "all_reduce", Options(rank, absl::Seconds(30)));
    ASSERT_TRUE(status.ok()) << status;
  });
}

TEST(GlooFailuresTest, ConnectTimeoutBoundsTheFirstCall) {
  GlooTestGroup group = MakeGlooGroup(2, "short", /*connect_timeout=*/absl::Milliseconds(200));
  const Clock::time_point start = Clock::now();
  const absl::Status status = CallCollective(group[0], "all_gather", Options(0, absl::Seconds(60)));
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(), absl::StrCat(Description(0),
                                           ": gloo group 'short' rank 0 of 2, all_gather call 1: "
                                           "waited 200ms for rank 1 to join the group"));
}

// A peer whose communicator is destroyed mid-job (its device thread quit) releases the
// ranks blocked in a call with it, long before their 60 s timeout.
TEST(GlooFailuresTest, APeerThatGoesAwayReleasesTheOthers) {
  GlooTestGroup group = MakeGlooGroup(3, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(2);
  std::vector<double> seconds(2);
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    group.communicators[2].reset();
  });
  RunOnRankThreads(2, [&](int64_t rank) {
    const Clock::time_point start = Clock::now();
    statuses[rank] = CallCollective(group[rank], "all_gather", Options(rank, absl::Seconds(60)));
    seconds[rank] = SecondsSince(start);
  });
  leaver.join();
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_LT(seconds[rank], 0.2 + 3.0);
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kAborted) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()),
                HasSubstr("rank 2 to arrive: the group was aborted by rank 2: its communicator was "
                          "destroyed"));
  }
}

}  // namespace
}  // namespace oneflow
