// Failures of the in-process backend are prompt and say who waited for whom: a rank that
// never arrives, a peer that never sends, mismatched and invalid calls, an abort from
// outside. Nothing may hang: every test finishes well inside its timeouts.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Seconds = std::chrono::duration<double>;

std::unique_ptr<InProcessGroup> MakeGroup(int64_t ranks) {
  return std::move(InProcessGroup::Create(ranks, "tp0")).value();
}

CollectiveOptions Options(int64_t rank, absl::Duration timeout) {
  CollectiveOptions options;
  options.timeout = timeout;
  options.description =
      absl::StrCat("actor 'h/boxing_3/all_reduce' on rank ", rank, " collective 12 iteration 7");
  return options;
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
  if (kind == "reduce_scatter") {
    return communicator.ReduceScatter(input.data(), output.data(), counts, options);
  }
  if (kind == "all_gather")
    return communicator.AllGather(input.data(), output.data(), counts, options);
  if (kind == "all_to_all")
    return communicator.AllToAll(input.data(), output.data(), matrix, options);
  return communicator.Broadcast(output.data(), 64, /*root=*/0, options);
}

class MissingRankTest : public ::testing::TestWithParam<std::string> {};

// Rank 3 never arrives: ranks 0..2 get DEADLINE_EXCEEDED naming their own description
// and rank 3, within the timeout; rank 3 arriving afterwards fails at once.
TEST_P(MissingRankTest, OthersGetDeadlineExceededNamingTheMissingRank) {
  const absl::Duration timeout = absl::Milliseconds(300);
  std::unique_ptr<InProcessGroup> group = MakeGroup(4);
  std::vector<absl::Status> statuses(3);
  std::vector<double> seconds(3);
  RunOnRankThreads(3, [&](int64_t rank) {
    const auto start = std::chrono::steady_clock::now();
    statuses[rank] = CallCollective(group->communicator(rank), GetParam(), Options(rank, timeout));
    seconds[rank] = Seconds(std::chrono::steady_clock::now() - start).count();
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    const absl::Status& status = statuses[rank];
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(std::string(status.message()),
                StartsWith(absl::StrCat("actor 'h/boxing_3/all_reduce' on rank ", rank,
                                        " collective 12 iteration 7: in-process group 'tp0' rank ",
                                        rank, " of 4, ", GetParam(), " call 1: ")));
    EXPECT_THAT(std::string(status.message()), HasSubstr("rank 3 to arrive")) << status;
    // Within the timeout (plus scheduling slack), and not long before it.
    EXPECT_LT(seconds[rank], 0.3 + 1.5) << "rank " << rank;
  }
  EXPECT_GE(*std::max_element(seconds.begin(), seconds.end()), 0.25);
  // The one whose wait expired says so; the others say they stopped because of it.
  int expired = 0;
  for (const absl::Status& status : statuses) {
    expired += absl::StrContains(status.message(), "waited 300ms for rank 3 to arrive") &&
               !absl::StrContains(status.message(), "stopped waiting");
  }
  EXPECT_EQ(expired, 1);

  const auto start = std::chrono::steady_clock::now();
  const absl::Status late = CallCollective(group->communicator(3), GetParam(), Options(3, timeout));
  EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start).count(), 1.0);  // no waiting
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_THAT(std::string(late.message()), HasSubstr("the group was aborted earlier: "));
  EXPECT_THAT(std::string(late.message()), HasSubstr("for rank 3 to arrive"));
}

INSTANTIATE_TEST_SUITE_P(Kinds, MissingRankTest,
                         ::testing::Values("all_reduce", "reduce_scatter", "all_gather",
                                           "all_to_all", "broadcast"));

// A rank with a long timeout is released as soon as a peer's short timeout expires.
TEST(FailuresTest, TheShortestTimeoutReleasesEveryone) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(4);
  std::vector<absl::Status> statuses(3);
  std::vector<double> seconds(3);
  RunOnRankThreads(3, [&](int64_t rank) {
    const absl::Duration timeout = rank == 1 ? absl::Milliseconds(200) : absl::Seconds(60);
    const auto start = std::chrono::steady_clock::now();
    statuses[rank] =
        CallCollective(group->communicator(rank), "all_reduce", Options(rank, timeout));
    seconds[rank] = Seconds(std::chrono::steady_clock::now() - start).count();
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kDeadlineExceeded) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr("rank 3 to arrive"));
    EXPECT_LT(seconds[rank], 2.0);
  }
  EXPECT_THAT(std::string(statuses[0].message()),
              HasSubstr("stopped waiting for rank 3 to arrive: the group was aborted: actor "
                        "'h/boxing_3/all_reduce' on rank 1"));
}

TEST(FailuresTest, RecvWithoutSendAndSendWithoutRecvTimeOut) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(2);
  float value = 0;
  const absl::Status recv =
      group->communicator(0).Recv(&value, sizeof(value), 1, Options(0, absl::Milliseconds(100)));
  EXPECT_EQ(recv.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(recv.message()),
              HasSubstr("rank 0 of 2, receive 1 from rank 1: waited 100ms for rank 1 to send"));

  std::unique_ptr<InProcessGroup> other = MakeGroup(2);
  const absl::Status send =
      other->communicator(1).Send(&value, sizeof(value), 0, Options(1, absl::Milliseconds(100)));
  EXPECT_EQ(send.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(send.message()),
              HasSubstr("rank 1 of 2, send 1 to rank 0: waited 100ms for rank 0 to receive"));
}

// Two ranks that send to each other first wait for each other: both fail by the deadline.
TEST(FailuresTest, CrossedSendsFailInsteadOfHanging) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(2);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    float value = 1;
    statuses[rank] = group->communicator(rank).Send(&value, sizeof(value), 1 - rank,
                                                    Options(rank, absl::Milliseconds(150)));
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr("to receive"));
  }
}

TEST(FailuresTest, MismatchedCallsFailOnEveryRank) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(2);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    statuses[rank] =
        CallCollective(group->communicator(rank), rank == 0 ? "all_reduce" : "all_gather",
                       Options(rank, absl::Seconds(30)));
  });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(statuses[0].message()),
      HasSubstr("all_reduce call 1: the ranks disagree on the call (a plan or runtime bug): "
                "rank 1 called all_gather where rank 0 called all_reduce"));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(statuses[1].message()),
      HasSubstr("all_gather call 1: the ranks disagree on the call (a plan or runtime bug): "
                "rank 0 called all_reduce where rank 1 called all_gather"));

  std::unique_ptr<InProcessGroup> counts = MakeGroup(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    std::vector<float> data(8);
    statuses[rank] = counts->communicator(rank).AllReduce(
        data.data(), data.data(), rank == 0 ? 8 : 6, Options(rank, absl::Seconds(30)));
  });
  EXPECT_THAT(std::string(statuses[0].message()),
              HasSubstr("rank 1 passed count 6 where rank 0 passed 8"));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
}

// An invalid call fails on its rank and aborts the group, so the peers that made valid
// calls fail promptly with the same code instead of waiting out 30 s.
TEST(FailuresTest, InvalidArgumentsReleaseThePeers) {
  struct Case {
    std::string name;
    std::function<absl::Status(Communicator&, const CollectiveOptions&)> bad_call;
    std::string message;
  };
  float data[8] = {};
  const std::vector<Case> cases = {
      {"negative count",
       [&](Communicator& c, const CollectiveOptions& o) { return c.AllReduce(data, data, -1, o); },
       "all_reduce call 1: count is -1; it must be >= 0"},
      {"counts size",
       [&](Communicator& c, const CollectiveOptions& o) {
         return c.ReduceScatter(data, data, std::vector<int64_t>{1, 1, 1}, o);
       },
       "reduce_scatter call 1: counts has 3 entries; the call needs 2"},
      {"null output",
       [&](Communicator& c, const CollectiveOptions& o) {
         return c.AllGather(data, nullptr, std::vector<int64_t>{4, 4}, o);
       },
       "all_gather call 1: output is null but its size is 8"},
      {"root",
       [&](Communicator& c, const CollectiveOptions& o) { return c.Broadcast(data, 4, 2, o); },
       "broadcast call 1: root 2 is outside the group of 2 ranks"},
      {"send to self",
       [&](Communicator& c, const CollectiveOptions& o) { return c.Send(data, 4, 0, o); },
       "send 1 to rank 0: a rank cannot send to itself"},
  };
  for (const Case& test : cases) {
    std::unique_ptr<InProcessGroup> group = MakeGroup(2);
    std::vector<absl::Status> statuses(2);
    const auto start = std::chrono::steady_clock::now();
    RunOnRankThreads(2, [&](int64_t rank) {
      const CollectiveOptions options = Options(rank, absl::Seconds(30));
      statuses[rank] = rank == 0 ? test.bad_call(group->communicator(0), options)
                                 : CallCollective(group->communicator(1), "all_reduce", options);
    });
    EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start).count(), 5.0) << test.name;
    EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument) << test.name;
    EXPECT_THAT(std::string(statuses[0].message()), HasSubstr(test.message)) << statuses[0];
    // Waiting when the abort came: the cause's code; arriving after it: FAILED_PRECONDITION.
    EXPECT_THAT(statuses[1].code(), ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                                     absl::StatusCode::kFailedPrecondition))
        << statuses[1];
    EXPECT_THAT(std::string(statuses[1].message()), HasSubstr(test.message)) << statuses[1];
  }
}

TEST(FailuresTest, SizeMismatchBetweenSendAndRecv) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(2);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    char buffer[16] = {};
    const CollectiveOptions options = Options(rank, absl::Seconds(30));
    statuses[rank] = rank == 0 ? group->communicator(0).Send(buffer, 16, 1, options)
                               : group->communicator(1).Recv(buffer, 8, 0, options);
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("rank 0 sends 16 bytes but 8 are expected"));
  }
}

TEST(FailuresTest, AbortFromOutsideReleasesWaitersWithItsCause) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(3);
  std::vector<absl::Status> statuses(2);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    group->communicator(2).Abort(absl::CancelledError("runtime shutting down: actor 'x' failed"));
  });
  RunOnRankThreads(2, [&](int64_t rank) {
    statuses[rank] =
        CallCollective(group->communicator(rank), "all_reduce", Options(rank, absl::Seconds(30)));
  });
  aborter.join();
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("stopped waiting for rank 2 to arrive: the group was aborted: runtime "
                          "shutting down: actor 'x' failed"));
  }
}

// An abort at an arbitrary moment, while ranks run all-reduces back to back on buffers
// they free after each call: every rank stops with the abort's cause (or FAILED_PRECONDITION
// for a later call), every call that succeeded before it is exact, and nothing hangs or
// reads freed memory (which --config=asan and --config=tsan would report).
TEST(FailuresTest, AbortAtAnyMomentStopsEveryRankCleanly) {
  for (int delay_us : {0, 300, 1000, 3000, 10000}) {
    std::unique_ptr<InProcessGroup> group = MakeGroup(4);
    std::vector<absl::Status> last(4);
    std::vector<int64_t> wrong(4, 0);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      group->communicator(0).Abort(absl::CancelledError("stop"));
    });
    RunOnRankThreads(4, [&](int64_t rank) {
      for (int iteration = 0; iteration < 100000; ++iteration) {
        std::vector<float> data(5000, static_cast<float>(rank + iteration));
        last[rank] = group->communicator(rank).AllReduce(data.data(), data.data(), 5000,
                                                         Options(rank, absl::Seconds(30)));
        if (!last[rank].ok()) return;
        wrong[rank] += data[4999] != static_cast<float>(6 + 4 * iteration);
      }
    });
    aborter.join();
    for (int64_t rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(wrong[rank], 0);
      EXPECT_THAT(last[rank].code(), ::testing::AnyOf(absl::StatusCode::kCancelled,
                                                      absl::StatusCode::kFailedPrecondition))
          << last[rank];
      EXPECT_THAT(std::string(last[rank].message()), HasSubstr("aborted"));
    }
  }
}

TEST(FailuresTest, TwoThreadsOnOneCommunicatorIsRefused) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(2);
  absl::Status first;
  std::thread waiting([&] {
    first = CallCollective(group->communicator(0), "all_reduce", Options(0, absl::Seconds(30)));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // usually: `first` is in
  const absl::Status second =
      CallCollective(group->communicator(0), "all_reduce", Options(0, absl::Seconds(30)));
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

}  // namespace
}  // namespace oneflow
