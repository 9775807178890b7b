// Failures of every backend are prompt and say who waited for whom: a rank that never
// makes a call (the first one, or a later one), timeouts of different lengths, an abort
// from inside or outside the group at any moment, point-to-point calls without a partner,
// and a second thread on one communicator. Ranks are threads; nothing may hang: every test
// finishes well inside its timeouts. Disagreeing and invalid calls are in
// agreement_conformance_test.cc; what only one backend does stays in its folder (Gloo: a
// peer whose communicator is destroyed, the connect timeout, two processes).
#include <algorithm>
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/comm/testing/communicator_factory.h"
#include "oneflow_core/comm/testing/conformance.h"

namespace oneflow {
namespace comm_testing {
namespace {

using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kCause[] = "runtime shutting down: actor 'x' failed";

class FailuresConformanceTest
    : public ::testing::TestWithParam<std::shared_ptr<CommunicatorFactory>> {
 protected:
  std::unique_ptr<TestGroup> MakeGroup(int64_t ranks) { return GetParam()->MakeGroup(ranks); }
};

// "actor ... on rank 2 ...: <group's name for rank 2>, all_reduce call 3": how every
// message of that call starts.
std::string Prefix(TestGroup& group, int64_t rank, const std::string& kind, int call) {
  return absl::StrCat(Description(rank), ": ", group[rank].Name(), ", ", kind, " call ", call);
}

// Rank 3 of a group of 4 does not make a call, of every kind, as its first call (a lazily
// connecting group never connects) and as a later one (connected), each case in its own
// group and all at once: ranks 0..2 get DEADLINE_EXCEEDED within the timeout, starting with
// their own description and naming the call, and saying they waited for rank 3; rank 3
// calling afterwards fails at once.
TEST_P(FailuresConformanceTest, MissingRankInTheFirstOrALaterCall) {
  struct Case {
    std::string kind;
    bool connected;
  };
  std::vector<Case> cases;
  for (bool connected : {false, true}) {
    for (const std::string& kind : AllKinds()) cases.push_back({kind, connected});
  }
  const int64_t n = static_cast<int64_t>(cases.size());
  std::vector<std::unique_ptr<TestGroup>> groups;
  for (int64_t c = 0; c < n; ++c) groups.push_back(MakeGroup(4));
  RunOnRankThreads(n, [&](int64_t c) {
    if (cases[c].connected) Connect(*groups[c]);
  });
  const std::vector<int64_t> missing = RankNumbers(groups[0]->shape(), 3);

  std::vector<std::vector<absl::Status>> statuses(n, std::vector<absl::Status>(3));
  std::vector<std::vector<double>> seconds(n, std::vector<double>(3));
  RunOnRankThreads(3 * n, [&](int64_t thread) {
    const int64_t c = thread / 3, rank = thread % 3;
    const Clock::time_point start = Clock::now();
    statuses[c][rank] =
        CallCollective((*groups[c])[rank], cases[c].kind, Options(rank, absl::Milliseconds(300)));
    seconds[c][rank] = SecondsSince(start);
  });
  for (int64_t c = 0; c < n; ++c) {
    const std::string name = absl::StrCat(cases[c].kind, cases[c].connected ? " later" : " first");
    const int call = cases[c].connected ? kConnectCalls + 1 : 1;
    int expired = 0;
    for (int64_t rank = 0; rank < 3; ++rank) {
      const absl::Status& status = statuses[c][rank];
      const std::string message(status.message());
      EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << name << ": " << status;
      EXPECT_THAT(message, StartsWith(Prefix(*groups[c], rank, cases[c].kind, call))) << name;
      EXPECT_TRUE(NamesWaitFor(message, missing)) << name << ": " << status;
      // Within the timeout (plus scheduling slack).
      EXPECT_LT(seconds[c][rank], 0.3 + 1.5) << name << " rank " << rank;
      // The one whose wait expired says so; the others that they stopped because of it.
      expired += !absl::StrContains(message, "stopped waiting") &&
                 std::regex_search(message, std::regex("waited [0-9.]+ms for"));
    }
    EXPECT_GE(expired, 1) << name;
    // Not long before the timeout either.
    EXPECT_GE(*std::max_element(seconds[c].begin(), seconds[c].end()), 0.25) << name;
  }

  std::vector<absl::Status> late(n);
  std::vector<double> late_seconds(n);
  RunOnRankThreads(n, [&](int64_t c) {
    const Clock::time_point start = Clock::now();
    late[c] = CallCollective((*groups[c])[3], cases[c].kind, Options(3, absl::Seconds(30)));
    late_seconds[c] = SecondsSince(start);
  });
  for (int64_t c = 0; c < n; ++c) {
    EXPECT_LT(late_seconds[c], 1.5) << cases[c].kind;  // no waiting
    EXPECT_THAT(late[c].code(),
                AnyOf(absl::StatusCode::kFailedPrecondition, absl::StatusCode::kDeadlineExceeded))
        << late[c];
    EXPECT_THAT(std::string(late[c].message()), HasSubstr("the group was aborted")) << late[c];
    EXPECT_TRUE(NamesWaitFor(late[c].message(), missing)) << late[c];
  }
}

// A rank with a long timeout is released as soon as a peer's short timeout expires, even
// while it waits on a connection that stays open (rank 0 waits for rank 3).
TEST_P(FailuresConformanceTest, TheShortestTimeoutReleasesEveryone) {
  if (!GetParam()->group_arrival_gap().empty()) GTEST_SKIP() << GetParam()->group_arrival_gap();
  std::unique_ptr<TestGroup> group = MakeGroup(4);
  Connect(*group);
  const std::vector<int64_t> missing = RankNumbers(group->shape(), 3);
  std::vector<absl::Status> statuses(3);
  std::vector<double> seconds(3);
  RunOnRankThreads(3, [&](int64_t rank) {
    const absl::Duration timeout = rank == 1 ? absl::Milliseconds(200) : absl::Seconds(10);
    const Clock::time_point start = Clock::now();
    statuses[rank] = CallCollective((*group)[rank], "all_reduce", Options(rank, timeout));
    seconds[rank] = SecondsSince(start);
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kDeadlineExceeded) << statuses[rank];
    EXPECT_TRUE(NamesWaitFor(statuses[rank].message(), missing)) << statuses[rank];
    EXPECT_LT(seconds[rank], 3.0) << "rank " << rank;
  }
  // Rank 0 tells why it stopped: rank 1's expiry, with rank 1's description.
  EXPECT_THAT(std::string(statuses[0].message()), HasSubstr("stopped waiting for "));
  EXPECT_THAT(std::string(statuses[0].message()), HasSubstr("the group was aborted"));
  EXPECT_THAT(std::string(statuses[0].message()), HasSubstr(Description(1)));
}

// The last rank aborts the group (the runtime's shutdown) instead of calling, while the
// others wait in a call: they are released promptly with its cause, and its own later call
// is refused. On groups of several shapes at once: a hierarchical group must spread the
// abort through its nodes and across them.
TEST_P(FailuresConformanceTest, AnAbortReleasesTheWaitersWithItsCause) {
  const std::vector<GroupShape> shapes = {{2, 1}, {1, 3}, {2, 2}, {3, 2}};
  std::vector<std::unique_ptr<TestGroup>> groups;
  for (const GroupShape& shape : shapes) groups.push_back(GetParam()->MakeGroup(shape));
  RunOnRankThreads(groups.size(), [&](int64_t g) { Connect(*groups[g]); });
  std::vector<std::vector<absl::Status>> statuses(groups.size());
  std::vector<std::vector<double>> seconds(groups.size());
  std::vector<std::thread> threads;
  for (size_t g = 0; g < groups.size(); ++g) {
    TestGroup& group = *groups[g];
    statuses[g].resize(group.size());
    seconds[g].resize(group.size());
    for (int64_t rank = 0; rank < group.size(); ++rank) {
      threads.emplace_back([&, g, rank] {
        const Clock::time_point start = Clock::now();
        if (rank == group.size() - 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          group[rank].Abort(absl::CancelledError(kCause));
        }
        statuses[g][rank] =
            CallCollective(group[rank], "all_reduce", Options(rank, absl::Seconds(60)));
        seconds[g][rank] = SecondsSince(start);
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t g = 0; g < groups.size(); ++g) {
    TestGroup& group = *groups[g];
    const int64_t last = group.size() - 1;
    for (int64_t rank = 0; rank < last; ++rank) {
      const std::string message(statuses[g][rank].message());
      EXPECT_LT(seconds[g][rank], 5.0) << ShapeName(group.shape()) << " rank " << rank;
      EXPECT_THAT(statuses[g][rank].code(),
                  AnyOf(absl::StatusCode::kCancelled, absl::StatusCode::kFailedPrecondition))
          << statuses[g][rank];
      EXPECT_THAT(message, StartsWith(Prefix(group, rank, "all_reduce", kConnectCalls + 1)));
      EXPECT_TRUE(NamesWaitFor(message, RankNumbers(group.shape(), last))) << message;
      EXPECT_THAT(message, HasSubstr("the group was aborted"));
      EXPECT_THAT(message, HasSubstr(kCause));
    }
    EXPECT_EQ(statuses[g][last].code(), absl::StatusCode::kFailedPrecondition) << statuses[g][last];
    EXPECT_THAT(std::string(statuses[g][last].message()),
                HasSubstr(absl::StrCat("all_reduce call ", kConnectCalls + 1,
                                       ": the group was aborted earlier: ", kCause)));
  }
}

// Abort from another thread ends a call blocked on a peer within 2 s, whether the group
// has connected or not (a group for each, at once); later calls fail at once, and so does
// the peer's, with the cause.
TEST_P(FailuresConformanceTest, AnAbortEndsABlockedCallPromptly) {
  std::unique_ptr<TestGroup> groups[2] = {MakeGroup(2), MakeGroup(2)};
  Connect(*groups[1]);
  absl::Status blocked[2];
  double seconds[2] = {0, 0};
  RunOnRankThreads(4, [&](int64_t thread) {
    const int64_t g = thread / 2;
    if (thread % 2 == 0) {
      const Clock::time_point start = Clock::now();
      blocked[g] = CallCollective((*groups[g])[0], "all_reduce", Options(0, absl::Seconds(60)));
      seconds[g] = SecondsSince(start);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      (*groups[g])[0].Abort(absl::CancelledError(kCause));
    }
  });
  for (int64_t g = 0; g < 2; ++g) {
    const bool connected = g == 1;
    TestGroup& group = *groups[g];
    EXPECT_LT(seconds[g], 0.2 + 2.0) << "connected " << connected;
    EXPECT_EQ(blocked[g].code(), absl::StatusCode::kCancelled) << blocked[g];
    EXPECT_TRUE(NamesWaitFor(blocked[g].message(), RankNumbers(group.shape(), 1))) << blocked[g];
    EXPECT_THAT(std::string(blocked[g].message()),
                HasSubstr(absl::StrCat("the group was aborted: ", kCause)));

    const absl::Status later = CallCollective(group[0], "broadcast", Options(0, absl::Seconds(60)));
    EXPECT_EQ(later.code(), absl::StatusCode::kFailedPrecondition) << later;
    EXPECT_THAT(std::string(later.message()),
                HasSubstr(absl::StrCat("broadcast call ", (connected ? kConnectCalls : 0) + 2,
                                       ": the group was aborted earlier: ", kCause)));
    const Clock::time_point start = Clock::now();
    const absl::Status peer = CallCollective(group[1], "all_reduce", Options(1, absl::Seconds(60)));
    EXPECT_LT(SecondsSince(start), 2.0);
    EXPECT_THAT(peer.code(),
                AnyOf(absl::StatusCode::kFailedPrecondition, absl::StatusCode::kCancelled))
        << peer;
    EXPECT_THAT(std::string(peer.message()), HasSubstr(kCause));
  }
}

// An abort at an arbitrary moment, while ranks run all-reduces back to back on buffers
// they free after each call: every rank stops with the abort's cause (or
// FAILED_PRECONDITION for a later call), every call that succeeded before it is exact,
// and nothing hangs or reads freed memory (which --config=asan and --config=tsan would
// report).
TEST_P(FailuresConformanceTest, AnAbortAtAnyMomentStopsEveryRankCleanly) {
  for (int delay_us : {0, 300, 1000, 3000, 10000}) {
    std::unique_ptr<TestGroup> group = MakeGroup(4);
    std::vector<absl::Status> last(4);
    std::vector<int64_t> wrong(4, 0);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      (*group)[0].Abort(absl::CancelledError("stop"));
    });
    RunOnRankThreads(4, [&](int64_t rank) {
      for (int iteration = 0; iteration < 100000; ++iteration) {
        std::vector<float> data(5000, static_cast<float>(rank + iteration));
        last[rank] = (*group)[rank].AllReduce(data.data(), data.data(), 5000,
                                              Options(rank, absl::Seconds(30)));
        if (!last[rank].ok()) return;
        wrong[rank] += data[4999] != static_cast<float>(6 + 4 * iteration);
      }
    });
    aborter.join();
    for (int64_t rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(wrong[rank], 0) << "delay " << delay_us << " rank " << rank;
      EXPECT_THAT(last[rank].code(),
                  AnyOf(absl::StatusCode::kCancelled, absl::StatusCode::kFailedPrecondition))
          << last[rank];
      EXPECT_THAT(std::string(last[rank].message()), HasSubstr("aborted"));
    }
  }
}

// Point-to-point calls without a partner, each in its own group, all at once: a receive
// with no send, a send with no receive, and two ranks that send to each other first (each
// waits for the other to receive). All fail by their deadline, naming the peer.
TEST_P(FailuresConformanceTest, PointToPointWithoutAPartnerTimesOut) {
  std::unique_ptr<TestGroup> receiving = MakeGroup(2), sending = MakeGroup(2),
                             crossed = MakeGroup(2);
  TestGroup* groups[] = {receiving.get(), sending.get(), crossed.get()};
  RunOnRankThreads(3, [&](int64_t g) { Connect(*groups[g]); });
  absl::Status recv, send, crossed_sends[2];
  RunOnRankThreads(4, [&](int64_t thread) {
    float value = 0;
    if (thread == 0) {
      recv = (*receiving)[0].Recv(&value, sizeof(value), 1, Options(0, absl::Milliseconds(100)));
    } else if (thread == 1) {
      send = (*sending)[1].Send(&value, sizeof(value), 0, Options(1, absl::Milliseconds(100)));
    } else {
      const int64_t rank = thread - 2;
      crossed_sends[rank] = (*crossed)[rank].Send(&value, sizeof(value), 1 - rank,
                                                  Options(rank, absl::Milliseconds(150)));
    }
  });
  EXPECT_EQ(recv.code(), absl::StatusCode::kDeadlineExceeded) << recv;
  EXPECT_THAT(std::string(recv.message()), StartsWith(Description(0)));
  EXPECT_THAT(std::string(recv.message()),
              ContainsRegex("receive 1 from rank 1: waited [0-9.]+ms for rank 1 to send"));
  EXPECT_EQ(send.code(), absl::StatusCode::kDeadlineExceeded) << send;
  EXPECT_THAT(std::string(send.message()),
              ContainsRegex("send 1 to rank 0: waited [0-9.]+ms for rank 0 to receive"));
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(crossed_sends[rank].code(), absl::StatusCode::kDeadlineExceeded)
        << crossed_sends[rank];
    EXPECT_THAT(std::string(crossed_sends[rank].message()),
                HasSubstr(absl::StrCat("send 1 to rank ", 1 - rank, ": ")));
    EXPECT_THAT(std::string(crossed_sends[rank].message()), HasSubstr("to receive"));
  }
}

TEST_P(FailuresConformanceTest, SizeMismatchBetweenSendAndRecv) {
  std::unique_ptr<TestGroup> group = MakeGroup(2);
  Connect(*group);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    char buffer[16] = {};
    const CollectiveOptions options = Options(rank, absl::Seconds(30));
    statuses[rank] = rank == 0 ? (*group)[0].Send(buffer, 16, 1, options)
                               : (*group)[1].Recv(buffer, 8, 0, options);
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("rank 0 sends 16 bytes but 8 are expected"));
  }
}

TEST_P(FailuresConformanceTest, TwoThreadsOnOneCommunicatorIsRefused) {
  std::unique_ptr<TestGroup> group = MakeGroup(2);
  absl::Status first;
  std::thread waiting(
      [&] { first = CallCollective((*group)[0], "all_reduce", Options(0, absl::Seconds(30))); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // usually: `first` is in
  const absl::Status second =
      CallCollective((*group)[0], "all_reduce", Options(0, absl::Seconds(30)));
  waiting.join();
  // Whichever call came second is refused and aborts the group, which ends the other.
  const bool second_refused = absl::StrContains(
      second.message(), "called while another call on this communicator is in progress");
  const absl::Status& refused = second_refused ? second : first;
  const absl::Status& ended = second_refused ? first : second;
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("called while another call on this communicator is in progress; one "
                        "thread must issue a communicator's calls, in order"));
  EXPECT_EQ(ended.code(), absl::StatusCode::kFailedPrecondition) << ended;
  EXPECT_THAT(std::string(ended.message()), HasSubstr("the group was aborted"));
}

INSTANTIATE_TEST_SUITE_P(Backends, FailuresConformanceTest,
                         ::testing::ValuesIn(AllCommunicatorFactories()),
                         [](const auto& info) { return info.param->name(); });

}  // namespace
}  // namespace comm_testing
}  // namespace oneflow
