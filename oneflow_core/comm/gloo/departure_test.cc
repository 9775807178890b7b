// A rank that leaves a Gloo group after its last call (gloo/departure.h, gloo/mesh.h).
//
// The race this guards against, as on UCX (ucx/departure_test.cc): rank 2 finished and
// destroyed its communicator while rank 1 still waited for its send to rank 0; rank 1's
// watcher saw rank 2's connection close, read its record ("its communicator was
// destroyed") and failed rank 1's call. Here the same order is forced: rank 2 leaves after
// the group's first call, then rank 1 sends rank 0 a message that rank 0 receives only
// 300 ms later, well after the watchers of ranks 0 and 1 saw rank 2's connections close.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int64_t kRanks = 3;
// A send that Gloo completes only after the receiver posted its receive.
constexpr int64_t kMessageBytes = 4 << 20;

CollectiveOptions Options(int64_t rank) {
  CollectiveOptions options;
  options.timeout = absl::Seconds(30);
  options.description = absl::StrCat("departure_test rank ", rank);
  return options;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Every rank makes one all-reduce (connecting the group), checked against the sum.
void FirstCall(GlooTestGroup& group) {
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&group, rank] {
      std::vector<float> data(1000, static_cast<float>(rank + 1));
      ASSERT_TRUE(group[rank].AllReduce(data.data(), data.data(), 1000, Options(rank)).ok());
      EXPECT_EQ(data[999], 6.0f);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(GlooDepartureTest, ALeaverDoesNotFailAPeerStillWaitingForAThird) {
  GlooTestGroup group = MakeGlooGroup(kRanks, "leaver_after_its_calls");
  FirstCall(group);
  group.communicators[2].reset();  // rank 2 is done with the group: its calls all completed

  std::vector<char> sent(kMessageBytes);
  for (int64_t i = 0; i < kMessageBytes; ++i) sent[i] = static_cast<char>(i * 7 + 3);
  std::vector<char> received(kMessageBytes, 0);
  absl::Status receive_status;
  std::thread receiver([&] {
    // Rank 0 is slow to take the message: rank 1 waits while the watchers react.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    receive_status = group[0].Recv(received.data(), kMessageBytes, 1, Options(0));
  });
  const absl::Status send_status = group[1].Send(sent.data(), kMessageBytes, 0, Options(1));
  receiver.join();
  EXPECT_TRUE(send_status.ok()) << send_status;
  EXPECT_TRUE(receive_status.ok()) << receive_status;
  EXPECT_TRUE(received == sent);

  // Ranks 0 and 1 go on together, with a collective call too: the departure failed nothing.
  std::thread second([&] {
    std::vector<char> reply(16, 'r');
    EXPECT_TRUE(group[0].Send(reply.data(), 16, 1, Options(0)).ok());
  });
  std::vector<char> reply(16, 0);
  EXPECT_TRUE(group[1].Recv(reply.data(), 16, 0, Options(1)).ok());
  second.join();
  EXPECT_EQ(std::string(reply.begin(), reply.end()), std::string(16, 'r'));
}

// A rank that leaves before a collective call its peers make fails them within seconds
// (not their 30 s timeout), naming it and how far it got.
TEST(GlooDepartureTest, ALeaverBeforeACallFailsThePeersNamingIt) {
  GlooTestGroup group = MakeGlooGroup(kRanks, "leaver_before_a_call");
  FirstCall(group);
  group.communicators[2].reset();
  std::vector<absl::Status> statuses(2);
  std::vector<double> seconds(2);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> data(1000, 1.0f);
      const Clock::time_point start = Clock::now();
      statuses[rank] = group[rank].AllReduce(data.data(), data.data(), 1000, Options(rank));
      seconds[rank] = SecondsSince(start);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_LT(seconds[rank], 3.0);
    // Two orders, both right: the rank entered call 2 and learned of the departure while
    // waiting in it (ABORTED, "aborted by rank 2"), or the departure record reached it
    // first and call 2 was refused as it began (FAILED_PRECONDITION, "aborted earlier by
    // rank 2": failure.cc Failure::Earlier). A fresh clone's uncached run saw the second.
    const absl::StatusCode code = statuses[rank].code();
    EXPECT_TRUE(code == absl::StatusCode::kAborted || code == absl::StatusCode::kFailedPrecondition)
        << statuses[rank];
    const std::string expected_cause = absl::StrCat(
        code == absl::StatusCode::kAborted ? "the group was aborted by rank 2" : "the group was aborted earlier by rank 2",
        ": its communicator was destroyed after 1 collective call, before call 2");
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr(expected_cause));
    EXPECT_THAT(std::string(statuses[rank].message()),
                HasSubstr(absl::StrCat("gloo group 'leaver_before_a_call' rank ", rank, " of 3")));
  }
}

// A point-to-point receive from a rank that left without sending it.
TEST(GlooDepartureTest, AReceiveFromALeaverThatNeverSentFailsNamingIt) {
  GlooTestGroup group = MakeGlooGroup(kRanks, "leaver_without_sending");
  FirstCall(group);
  group.communicators[2].reset();
  std::vector<char> data(64);
  const Clock::time_point start = Clock::now();
  const absl::Status status = group[0].Recv(data.data(), 64, 2, Options(0));
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("receive 1 from rank 2: stopped waiting for rank 2 to send: the group was aborted by "
                        "rank 2: its communicator was destroyed after sending 0 messages to rank 0, before "
                        "message 1"));
}

}  // namespace
}  // namespace oneflow
