// Failures of the Gloo backend are prompt and say who waited for whom: a rank that never
// joins or never arrives, an abort, a peer whose communicator goes away, mismatched and
// invalid calls. Ranks are threads here; gloo/two_process_test.cc kills a real process.
// Nothing may hang: every test finishes well inside its timeouts.
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

CollectiveOptions Options(int64_t rank, absl::Duration timeout) {
  CollectiveOptions options;
  options.timeout = timeout;
  options.description =
      absl::StrCat("actor 'h/boxing_3/all_reduce' on rank ", rank, " collective 12 iteration 7");
  return options;
}

std::string Description(int64_t rank) {
  return absl::StrCat("actor 'h/boxing_3/all_reduce' on rank ", rank, " collective 12 iteration 7");
}

// Calls the collective `kind` with small valid buffers (4 floats per rank).
absl::Status CallCollective(Communicator& communicator, const std::string& kind,
                            const CollectiveOptions& options) {
  const int64_t n = communicator.size();
  std::vector<float> input(4 * n * n, 1.0f);
  std::vector<float> output(4 * n * n, 0.0f);
  const std::vector<int64_t> counts(n, 4);
  const std::vector<int64_t> matrix(n * n, 4);
  if (kind == "all_reduce")
    return communicator.AllReduce(input.data(), output.data(), 4 * n, options);
  if (kind == "reduce_scatter")
    return communicator.ReduceScatter(input.data(), output.data(), counts, options);
  if (kind == "all_gather")
    return communicator.AllGather(input.data(), output.data(), counts, options);
  if (kind == "all_to_all")
    return communicator.AllToAll(input.data(), output.data(), matrix, options);
  return communicator.Broadcast(output.data(), 64, /*root=*/0, options);
}

// Runs one all-reduce on every rank so the group is connected.
void Connect(GlooTestGroup& group) {
  RunOnRankThreads(group.size(), [&](int64_t rank) {
    const absl::Status status =
        CallCollective(group[rank], "all_reduce", Options(rank, absl::Seconds(30)));
    ASSERT_TRUE(status.ok()) << status;
  });
}

class MissingRankTest : public ::testing::TestWithParam<std::string> {};

// Rank 3 never joins: the first call of ranks 0..2 ends with DEADLINE_EXCEEDED naming
// their own description and rank 3, within the timeout; rank 3 coming later fails at once.
TEST_P(MissingRankTest, FirstCallNamesTheRankThatNeverJoined) {
  GlooTestGroup group = MakeGlooGroup(4, "tp0");
  std::vector<absl::Status> statuses(3);
  std::vector<double> seconds(3);
  RunOnRankThreads(3, [&](int64_t rank) {
    const Clock::time_point start = Clock::now();
    statuses[rank] =
        CallCollective(group[rank], GetParam(), Options(rank, absl::Milliseconds(300)));
    seconds[rank] = SecondsSince(start);
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kDeadlineExceeded) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()),
                StartsWith(absl::StrCat(Description(rank), ": gloo group 'tp0' rank ", rank,
                                        " of 4, ", GetParam(), " call 1: ")));
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr("rank 3 to join the group"));
    EXPECT_LT(seconds[rank], 0.3 + 1.5) << "rank " << rank;
  }
  const Clock::time_point start = Clock::now();
  const absl::Status late = CallCollective(group[3], GetParam(), Options(3, absl::Seconds(30)));
  EXPECT_LT(SecondsSince(start), 1.5);
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_THAT(std::string(late.message()), HasSubstr("the group was aborted by rank "));
  EXPECT_THAT(std::string(late.message()), HasSubstr("rank 3 to join the group"));
}

// Rank 2 joined, but does not make call 2: ranks 0 and 1 name it; its next call fails.
TEST_P(MissingRankTest, LaterCallNamesTheRankThatDidNotArrive) {
  GlooTestGroup group = MakeGlooGroup(3, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(2);
  std::vector<double> seconds(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    const Clock::time_point start = Clock::now();
    statuses[rank] =
        CallCollective(group[rank], GetParam(), Options(rank, absl::Milliseconds(300)));
    seconds[rank] = SecondsSince(start);
  });
  int expired = 0;
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kDeadlineExceeded) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()),
                StartsWith(absl::StrCat(Description(rank), ": gloo group 'tp0' rank ", rank,
                                        " of 3, ", GetParam(), " call 2: ")));
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr("rank 2 to arrive"));
    EXPECT_LT(seconds[rank], 0.3 + 1.5);
    expired += absl::StrContains(statuses[rank].message(), "waited 300ms for rank 2 to arrive") &&
               !absl::StrContains(statuses[rank].message(), "stopped waiting");
  }
  EXPECT_GE(expired, 1);
  // Rank 2 learns through its broken connections (its watcher) and fails at once.
  const Clock::time_point start = Clock::now();
  const absl::Status late = CallCollective(group[2], GetParam(), Options(2, absl::Seconds(30)));
  EXPECT_LT(SecondsSince(start), 1.5);
  EXPECT_THAT(late.code(),
              AnyOf(absl::StatusCode::kFailedPrecondition, absl::StatusCode::kDeadlineExceeded))
      << late;
  EXPECT_THAT(std::string(late.message()), HasSubstr("waited 300ms for rank 2 to arrive"));
}

INSTANTIATE_TEST_SUITE_P(Kinds, MissingRankTest,
                         ::testing::Values("all_reduce", "reduce_scatter", "all_gather",
                                           "all_to_all", "broadcast"));

// A rank with a long timeout is released as soon as a peer's short timeout expires, even
// while it waits on a connection that stays open (rank 0 waits for rank 3's header).
TEST(GlooFailuresTest, TheShortestTimeoutReleasesEveryone) {
  GlooTestGroup group = MakeGlooGroup(4, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(3);
  std::vector<double> seconds(3);
  RunOnRankThreads(3, [&](int64_t rank) {
    const absl::Duration timeout = rank == 1 ? absl::Milliseconds(200) : absl::Seconds(60);
    const Clock::time_point start = Clock::now();
    statuses[rank] = CallCollective(group[rank], "all_reduce", Options(rank, timeout));
    seconds[rank] = SecondsSince(start);
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kDeadlineExceeded) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr("rank 3 to arrive"));
    EXPECT_LT(seconds[rank], 3.0);
  }
  EXPECT_THAT(
      std::string(statuses[0].message()),
      HasSubstr(absl::StrCat("stopped waiting for rank 3 to arrive: the group was aborted by "
                             "rank 1: ",
                             Description(1))));
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

// Abort from another thread ends a call blocked on a peer within 2 s, whether the call is
// connecting or connected; the peer in the group learns of it through its connections.
TEST(GlooFailuresTest, AbortReleasesABlockedCallPromptly) {
  for (bool connected : {false, true}) {
    GlooTestGroup group = MakeGlooGroup(2, "tp0");
    if (connected) Connect(group);
    absl::Status blocked;
    double seconds = 0;
    std::thread caller([&] {
      const Clock::time_point start = Clock::now();
      blocked = CallCollective(group[0], "all_reduce", Options(0, absl::Seconds(60)));
      seconds = SecondsSince(start);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    group[0].Abort(absl::CancelledError("runtime shutting down: actor 'x' failed"));
    caller.join();
    EXPECT_LT(seconds, 0.2 + 2.0) << "connected " << connected;
    EXPECT_EQ(blocked.code(), absl::StatusCode::kCancelled) << blocked;
    EXPECT_THAT(
        std::string(blocked.message()),
        HasSubstr(connected ? "stopped waiting for rank 1 to arrive: the group was aborted: "
                              "runtime shutting down: actor 'x' failed"
                            : "stopped waiting for rank 1 to join the group: the group was "
                              "aborted: runtime shutting down: actor 'x' failed"));
    // Later calls fail at once; so do the peer's, with the abort's story.
    const absl::Status later = CallCollective(group[0], "broadcast", Options(0, absl::Seconds(60)));
    EXPECT_EQ(later.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(later.message()),
                HasSubstr(absl::StrCat("broadcast call ", connected ? 3 : 2,
                                       ": the group was aborted earlier: runtime shutting down")));
    const Clock::time_point start = Clock::now();
    const absl::Status peer = CallCollective(group[1], "all_reduce", Options(1, absl::Seconds(60)));
    EXPECT_LT(SecondsSince(start), 2.0);
    EXPECT_THAT(peer.code(),
                AnyOf(absl::StatusCode::kFailedPrecondition, absl::StatusCode::kCancelled))
        << peer;
    EXPECT_THAT(std::string(peer.message()),
                HasSubstr("by rank 0: runtime shutting down: actor 'x' failed"));
  }
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

TEST(GlooFailuresTest, RecvWithoutSendAndSendWithoutRecvTimeOut) {
  GlooTestGroup group = MakeGlooGroup(2, "tp0");
  Connect(group);
  float value = 0;
  const absl::Status recv =
      group[0].Recv(&value, sizeof(value), 1, Options(0, absl::Milliseconds(100)));
  EXPECT_EQ(recv.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(recv.message()),
              HasSubstr("rank 0 of 2, receive 1 from rank 1: waited 100ms for rank 1 to send"));

  GlooTestGroup other = MakeGlooGroup(2, "tp1");
  Connect(other);
  const absl::Status send =
      other[1].Send(&value, sizeof(value), 0, Options(1, absl::Milliseconds(100)));
  EXPECT_EQ(send.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(send.message()),
              HasSubstr("rank 1 of 2, send 1 to rank 0: waited 100ms for rank 0 to receive"));
}

// Two ranks that send to each other first wait for each other: both fail by the deadline.
TEST(GlooFailuresTest, CrossedSendsFailInsteadOfHanging) {
  GlooTestGroup group = MakeGlooGroup(2, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    float value = 1;
    statuses[rank] =
        group[rank].Send(&value, sizeof(value), 1 - rank, Options(rank, absl::Milliseconds(150)));
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr("to receive"));
  }
}

TEST(GlooFailuresTest, MismatchedCallsFailOnEveryRank) {
  GlooTestGroup group = MakeGlooGroup(2, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    statuses[rank] = CallCollective(group[rank], rank == 0 ? "all_reduce" : "all_gather",
                                    Options(rank, absl::Seconds(30)));
  });
  // Whichever rank reads the other's call header first reports the disagreement and
  // aborts the group; the other then fails with that report ("the group was aborted by
  // rank N: ..."). Either way both ranks name both calls.
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(statuses[0].message()),
              AnyOf(HasSubstr("all_reduce call 2: the ranks disagree on the call (a plan or runtime bug): "
                              "rank 1 called all_gather where rank 0 called all_reduce"),
                    HasSubstr("all_gather call 2: the ranks disagree on the call (a plan or runtime bug): "
                              "rank 0 called all_reduce where rank 1 called all_gather")));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(statuses[1].message()),
              HasSubstr("the ranks disagree on the call (a plan or runtime bug): rank "));

  GlooTestGroup counts = MakeGlooGroup(2, "tp1");
  Connect(counts);
  RunOnRankThreads(2, [&](int64_t rank) {
    std::vector<float> data(8);
    statuses[rank] = counts[rank].AllReduce(data.data(), data.data(), rank == 0 ? 8 : 6,
                                            Options(rank, absl::Seconds(30)));
  });
  EXPECT_THAT(std::string(statuses[0].message()),
              HasSubstr("rank 1 passed count 6 where rank 0 passed 8"));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
}

// An invalid call fails on its rank and aborts the group, so the peers that made valid
// calls fail promptly with the same code instead of waiting out 30 s, whether the bad call
// is the first (the group never connects) or a later one.
TEST(GlooFailuresTest, InvalidArgumentsReleaseThePeers) {
  struct Case {
    std::string name;
    std::function<absl::Status(Communicator&, const CollectiveOptions&)> bad_call;
    std::string message;
  };
  float data[8] = {};
  const std::vector<Case> cases = {
      {"negative count",
       [&](Communicator& c, const CollectiveOptions& o) { return c.AllReduce(data, data, -1, o); },
       "count is -1; it must be >= 0"},
      {"counts size",
       [&](Communicator& c, const CollectiveOptions& o) {
         return c.ReduceScatter(data, data, std::vector<int64_t>{1, 1, 1}, o);
       },
       "counts has 3 entries; the call needs 2"},
      {"root",
       [&](Communicator& c, const CollectiveOptions& o) { return c.Broadcast(data, 4, 2, o); },
       "root 2 is outside the group of 2 ranks"},
      {"send to self",
       [&](Communicator& c, const CollectiveOptions& o) { return c.Send(data, 4, 0, o); },
       "a rank cannot send to itself"},
  };
  for (bool connected : {false, true}) {
    for (const Case& test : cases) {
      GlooTestGroup group = MakeGlooGroup(2, "tp0");
      if (connected) Connect(group);
      std::vector<absl::Status> statuses(2);
      const Clock::time_point start = Clock::now();
      RunOnRankThreads(2, [&](int64_t rank) {
        const CollectiveOptions options = Options(rank, absl::Seconds(30));
        statuses[rank] = rank == 0 ? test.bad_call(group[0], options)
                                   : CallCollective(group[1], "all_reduce", options);
      });
      EXPECT_LT(SecondsSince(start), 5.0) << test.name;
      EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument) << test.name;
      EXPECT_THAT(std::string(statuses[0].message()), HasSubstr(test.message)) << statuses[0];
      EXPECT_THAT(std::string(statuses[0].message()), StartsWith(Description(0)));
      EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument) << statuses[1];
      EXPECT_THAT(std::string(statuses[1].message()), HasSubstr(test.message)) << statuses[1];
      EXPECT_THAT(std::string(statuses[1].message()), StartsWith(Description(1)));
    }
  }
}

TEST(GlooFailuresTest, SizeMismatchBetweenSendAndRecv) {
  GlooTestGroup group = MakeGlooGroup(2, "tp0");
  Connect(group);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    char buffer[16] = {};
    const CollectiveOptions options = Options(rank, absl::Seconds(30));
    statuses[rank] =
        rank == 0 ? group[0].Send(buffer, 16, 1, options) : group[1].Recv(buffer, 8, 0, options);
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("rank 0 sends 16 bytes but 8 are expected"));
  }
}

TEST(GlooFailuresTest, TwoThreadsOnOneCommunicatorIsRefused) {
  GlooTestGroup group = MakeGlooGroup(2, "tp0");
  absl::Status first;
  std::thread waiting(
      [&] { first = CallCollective(group[0], "all_reduce", Options(0, absl::Seconds(30))); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // usually: `first` is in
  const absl::Status second = CallCollective(group[0], "all_reduce", Options(0, absl::Seconds(30)));
  waiting.join();
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

}  // namespace
}  // namespace oneflow
