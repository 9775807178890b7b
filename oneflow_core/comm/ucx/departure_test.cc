// A rank that leaves a UCX group after its last call (gloo/departure.h, ucx/mesh.h).
//
// The race this guards against (seen as ~1 in 6 runs of //tests/cluster:elastic_launch_test):
// in a job's last iteration rank 2 finished and destroyed its communicator while rank 1
// still waited for its send to rank 0 to complete; rank 1 failed with "stopped waiting for
// rank 0 to receive: the group was aborted by rank 2: its communicator was destroyed" and
// the job exited 1. Here the same order is forced: rank 2 leaves after the group's first
// call, then rank 1 sends rank 0 a message that rank 0 receives only 300 ms later.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/ucx/communicator.h"
#include "oneflow_core/comm/gloo/departure.h"

namespace oneflow {
namespace ucx_backend {
namespace {

using gloo_backend::CallPosition;
using gloo_backend::Departure;
using gloo_backend::DecodeDeparture;
using gloo_backend::DepartureVerdict;
using gloo_backend::EncodeDeparture;
using gloo_backend::Judge;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int64_t kRanks = 3;
// Far above UCX's eager threshold: a rendezvous whose send completes only on the
// receiver's acknowledgement.
constexpr int64_t kMessageBytes = 4 << 20;

struct Group {
  std::unique_ptr<KeyValueStore> store;  // declared first: destroyed last
  std::vector<std::unique_ptr<Communicator>> ranks;
};

Group MakeGroup(const std::string& name) {
  Group group;
  group.store = NewInMemoryKeyValueStore();
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    UcxGroupOptions options;
    options.group_name = name;
    options.rank = rank;
    options.size = kRanks;
    options.store = group.store.get();
    absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewUcxCommunicator(options);
    EXPECT_TRUE(communicator.ok()) << communicator.status();
    group.ranks.push_back(std::move(communicator).value());
  }
  return group;
}

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
void FirstCall(Group& group) {
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&group, rank] {
      std::vector<float> data(1000, static_cast<float>(rank + 1));
      ASSERT_TRUE(group.ranks[rank]->AllReduce(data.data(), data.data(), 1000, Options(rank)).ok());
      EXPECT_EQ(data[999], 6.0f);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(UcxDepartureTest, ALeaverDoesNotFailAPeerStillWaitingForAThird) {
  Group group = MakeGroup("leaver_after_its_calls");
  FirstCall(group);
  group.ranks[2].reset();  // rank 2 is done with the group: its calls all completed

  std::vector<char> sent(kMessageBytes);
  for (int64_t i = 0; i < kMessageBytes; ++i) sent[i] = static_cast<char>(i * 7 + 3);
  std::vector<char> received(kMessageBytes, 0);
  absl::Status receive_status;
  std::thread receiver([&] {
    // Rank 0 is slow to take the message: rank 1 waits well past its first peer checks.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    receive_status = group.ranks[0]->Recv(received.data(), kMessageBytes, 1, Options(0));
  });
  const absl::Status send_status = group.ranks[1]->Send(sent.data(), kMessageBytes, 0, Options(1));
  receiver.join();
  EXPECT_TRUE(send_status.ok()) << send_status;
  EXPECT_TRUE(receive_status.ok()) << receive_status;
  EXPECT_TRUE(received == sent);

  // Ranks 0 and 1 go on together: the departure failed nothing.
  std::thread second([&] {
    std::vector<char> reply(16, 'r');
    EXPECT_TRUE(group.ranks[0]->Send(reply.data(), 16, 1, Options(0)).ok());
  });
  std::vector<char> reply(16, 0);
  EXPECT_TRUE(group.ranks[1]->Recv(reply.data(), 16, 0, Options(1)).ok());
  second.join();
  EXPECT_EQ(std::string(reply.begin(), reply.end()), std::string(16, 'r'));
}

// A rank that leaves before a collective call its peers make fails them within seconds
// (not their 30 s timeout), naming it and how far it got.
TEST(UcxDepartureTest, ALeaverBeforeACallFailsThePeersNamingIt) {
  Group group = MakeGroup("leaver_before_a_call");
  FirstCall(group);
  group.ranks[2].reset();
  std::vector<absl::Status> statuses(2);
  std::vector<double> seconds(2);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> data(1000, 1.0f);
      const Clock::time_point start = Clock::now();
      statuses[rank] = group.ranks[rank]->AllReduce(data.data(), data.data(), 1000, Options(rank));
      seconds[rank] = SecondsSince(start);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_LT(seconds[rank], 3.0);
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kAborted) << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()),
                HasSubstr(absl::StrCat("ucx group 'leaver_before_a_call' rank ", rank,
                                       " of 3, all_reduce call 2: stopped waiting for rank 2 to arrive: "
                                       "the group was aborted by rank 2: its communicator was destroyed "
                                       "after 1 collective call, before call 2")));
  }
}

// A point-to-point receive from a rank that left without sending it.
TEST(UcxDepartureTest, AReceiveFromALeaverThatNeverSentFailsNamingIt) {
  Group group = MakeGroup("leaver_without_sending");
  FirstCall(group);
  group.ranks[2].reset();
  std::vector<char> data(64);
  const Clock::time_point start = Clock::now();
  const absl::Status status = group.ranks[0]->Recv(data.data(), 64, 2, Options(0));
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("receive 1 from rank 2: stopped waiting for rank 2 to send: the group was aborted by "
                        "rank 2: its communicator was destroyed after sending 0 messages to rank 0, before "
                        "message 1"));
}

TEST(UcxDepartureTest, RecordRoundTripsAndRefusesOtherText) {
  const Departure departure{7, {0, 2, 1}, {3, 0, 0}};
  const std::string text = EncodeDeparture(departure);
  EXPECT_EQ(text, "7\n0,2,1\n3,0,0");
  const std::optional<Departure> decoded = DecodeDeparture(text, 3);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->calls, 7u);
  EXPECT_EQ(decoded->sends, departure.sends);
  EXPECT_EQ(decoded->receives, departure.receives);
  EXPECT_FALSE(DecodeDeparture(text, 4).has_value());  // another group size
  EXPECT_FALSE(DecodeDeparture("7\n0,2,1", 3).has_value());
  EXPECT_FALSE(DecodeDeparture("x\n0,2,1\n3,0,0", 3).has_value());
  EXPECT_FALSE(DecodeDeparture("7\n0,-2,1\n3,0,0", 3).has_value());
}

TEST(UcxDepartureTest, VerdictsFollowWhatThePeerCompleted) {
  // Rank 2 left after 5 collective calls, having sent rank 1 two messages and received one.
  const Departure rank2{5, {0, 2, 0}, {0, 1, 0}};
  std::string why;
  const CallPosition call5{false, 5};
  const CallPosition call6{false, 6};
  EXPECT_EQ(Judge(rank2, call5, /*sending=*/true, 1, &why), DepartureVerdict::kConsumed);
  EXPECT_EQ(Judge(rank2, call5, /*sending=*/false, 1, &why), DepartureVerdict::kInFlight);
  EXPECT_EQ(Judge(rank2, call6, /*sending=*/true, 1, &why), DepartureVerdict::kLeftBefore);
  EXPECT_EQ(why, "its communicator was destroyed after 5 collective calls, before call 6");
  // Point to point: rank 1's 1st send was received, its 2nd was not; rank 1's 2nd receive
  // was sent, its 3rd was not.
  EXPECT_EQ(Judge(rank2, CallPosition{true, 1}, true, 1, &why), DepartureVerdict::kConsumed);
  EXPECT_EQ(Judge(rank2, CallPosition{true, 2}, true, 1, &why), DepartureVerdict::kLeftBefore);
  EXPECT_EQ(why, "its communicator was destroyed after receiving 1 message from rank 1, before message 2");
  EXPECT_EQ(Judge(rank2, CallPosition{true, 2}, false, 1, &why), DepartureVerdict::kInFlight);
  EXPECT_EQ(Judge(rank2, CallPosition{true, 3}, false, 1, &why), DepartureVerdict::kLeftBefore);
  EXPECT_EQ(why, "its communicator was destroyed after sending 2 messages to rank 1, before message 3");
}

}  // namespace
}  // namespace ucx_backend
}  // namespace oneflow
