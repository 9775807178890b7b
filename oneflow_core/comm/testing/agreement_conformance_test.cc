// Calls the ranks disagree on, and invalid calls, on every backend: each fails with
// INVALID_ARGUMENT on every rank, promptly, before any payload moves, and the message is
// the same text on every backend (call_agreement.h makes it; each rank tells it from its
// own side, or from the side of the rank that noticed first). Every case runs in its own
// group of 2 ranks, all cases of a test at once, since a failed call ends its group.
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kDisagree[] = "the ranks disagree on the call (a plan or runtime bug): ";

// One case: what rank 0 and rank 1 call, and what the first disagreement is from rank
// 0's side ("rank 1 ... where rank 0 ...") and from rank 1's (or the part of it that is
// the same on every backend).
using Call = std::function<absl::Status(Communicator&, const CollectiveOptions&)>;
struct Case {
  std::string name;
  Call calls[2];
  std::string seen_by[2];
};

class AgreementConformanceTest
    : public ::testing::TestWithParam<std::shared_ptr<CommunicatorFactory>> {
 protected:
  // Runs every case in its own group (connected first when `connected`), all at once, and
  // returns the statuses by case and rank.
  std::vector<std::vector<absl::Status>> RunCases(const std::vector<Case>& cases,
                                                  bool connected = true) {
    const int64_t n = static_cast<int64_t>(cases.size());
    std::vector<std::unique_ptr<TestGroup>> groups;
    for (int64_t c = 0; c < n; ++c) groups.push_back(GetParam()->MakeGroup(2));
    if (connected) RunOnRankThreads(n, [&](int64_t c) { Connect(*groups[c]); });
    std::vector<std::vector<absl::Status>> statuses(n, std::vector<absl::Status>(2));
    const Clock::time_point start = Clock::now();
    RunOnRankThreads(2 * n, [&](int64_t thread) {
      const int64_t c = thread / 2, rank = thread % 2;
      statuses[c][rank] =
          cases[c].calls[rank]((*groups[c])[rank], Options(rank, absl::Seconds(30)));
    });
    // Nobody waits out the 30 s timeout.
    EXPECT_LT(SecondsSince(start), 5.0);
    return statuses;
  }

  // Every rank of every case fails with INVALID_ARGUMENT telling the case's disagreement
  // from one side or the other, after its own description.
  void ExpectRefusedAlike(const std::vector<Case>& cases) {
    const std::vector<std::vector<absl::Status>> statuses = RunCases(cases);
    for (size_t c = 0; c < cases.size(); ++c) {
      for (int64_t rank = 0; rank < 2; ++rank) {
        const absl::Status& status = statuses[c][rank];
        EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
            << cases[c].name << ": " << status;
        EXPECT_THAT(std::string(status.message()), StartsWith(Description(rank))) << cases[c].name;
        EXPECT_THAT(std::string(status.message()), HasSubstr(kDisagree)) << cases[c].name;
        EXPECT_THAT(std::string(status.message()),
                    AnyOf(HasSubstr(cases[c].seen_by[0]), HasSubstr(cases[c].seen_by[1])))
            << cases[c].name;
      }
    }
  }
};

Call Kind(const std::string& kind) {
  return [kind](Communicator& c, const CollectiveOptions& o) { return CallCollective(c, kind, o); };
}

// An all_to_all of `bytes` bytes from every rank to every rank, with `payload_format`.
Call AllToAll(int64_t bytes, uint32_t payload_format) {
  return [=](Communicator& c, const CollectiveOptions& o) {
    CollectiveOptions options = o;
    options.payload_format = payload_format;
    std::vector<char> input(2 * bytes), output(2 * bytes);
    return c.AllToAll(input.data(), output.data(), std::vector<int64_t>(4, bytes), options);
  };
}

TEST_P(AgreementConformanceTest, MismatchedKindsAreNamed) {
  ExpectRefusedAlike({{"all_to_all vs broadcast",
                       {Kind("all_to_all"), Kind("broadcast")},
                       {"rank 1 called broadcast where rank 0 called all_to_all",
                        "rank 0 called all_to_all where rank 1 called broadcast"}}});
}

// Every pair of different kinds, whichever way the backend routes them.
TEST_P(AgreementConformanceTest, EveryPairOfDifferentKindsIsRefused) {
  if (!GetParam()->group_arrival_gap().empty()) GTEST_SKIP() << GetParam()->group_arrival_gap();
  std::vector<Case> cases;
  const std::vector<std::string>& kinds = AllKinds();
  for (size_t a = 0; a < kinds.size(); ++a) {
    for (size_t b = a + 1; b < kinds.size(); ++b) {
      cases.push_back(
          {kinds[a] + " vs " + kinds[b],
           {Kind(kinds[a]), Kind(kinds[b])},
           {absl::StrCat("rank 1 called ", kinds[b], " where rank 0 called ", kinds[a]),
            absl::StrCat("rank 0 called ", kinds[a], " where rank 1 called ", kinds[b])}});
    }
  }
  ExpectRefusedAlike(cases);
}

TEST_P(AgreementConformanceTest, MismatchedCountsRootsAndReductionsAreNamed) {
  auto broadcast = [](int64_t bytes, int64_t root) -> Call {
    return [=](Communicator& c, const CollectiveOptions& o) {
      std::vector<char> buffer(64);
      return c.Broadcast(buffer.data(), bytes, root, o);
    };
  };
  auto all_reduce = [](int64_t count, ReduceOp op) -> Call {
    return [=](Communicator& c, const CollectiveOptions& o) {
      CollectiveOptions options = o;
      options.reduce_op = op;
      std::vector<float> data(8);
      return c.AllReduce(data.data(), data.data(), count, options);
    };
  };
  ExpectRefusedAlike({
      {"broadcast bytes",
       {broadcast(64, 0), broadcast(48, 0)},
       {"rank 1 passed count 48 where rank 0 passed 64",
        "rank 0 passed count 64 where rank 1 passed 48"}},
      {"broadcast root",
       {broadcast(64, 0), broadcast(64, 1)},
       {"rank 1 passed root 1 where rank 0 passed 0",
        "rank 0 passed root 0 where rank 1 passed 1"}},
      {"all_reduce count",
       {all_reduce(8, ReduceOp::kSum), all_reduce(6, ReduceOp::kSum)},
       {"rank 1 passed count 6 where rank 0 passed 8",
        "rank 0 passed count 8 where rank 1 passed 6"}},
      {"all_reduce op",
       {all_reduce(8, ReduceOp::kSum), all_reduce(8, ReduceOp::kMax)},
       {"rank 1 reduces by max where rank 0 reduces by sum",
        "rank 0 reduces by sum where rank 1 reduces by max"}},
      // A peer's counts are known by value in one process, by a summary across processes:
      // what every backend says is this rank's own counts.
      {"all_to_all counts",
       {AllToAll(4, 0), AllToAll(8, 0)},
       {"where rank 0 passed [4, 4, 4, 4]", "where rank 1 passed [8, 8, 8, 8]"}},
  });
}

// The payload format (what the compressed collectives set to their codec) is refused on
// every kind with the same text on every backend, and is reported before the byte counts
// a different codec changes too.
TEST_P(AgreementConformanceTest, MismatchedPayloadFormatIsRefusedWithOneMessage) {
  std::vector<Case> cases;
  const std::string format_mismatch[2] = {
      "rank 1 passed payload_format 0x22 where rank 0 passed 0x11",
      "rank 0 passed payload_format 0x11 where rank 1 passed 0x22"};
  for (const std::string& kind : AllKinds()) {
    auto with_format = [kind](uint32_t payload_format) -> Call {
      return [=](Communicator& c, const CollectiveOptions& o) {
        CollectiveOptions options = o;
        options.payload_format = payload_format;
        return CallCollective(c, kind, options);
      };
    };
    cases.push_back(
        {kind, {with_format(0x11), with_format(0x22)}, {format_mismatch[0], format_mismatch[1]}});
  }
  cases.push_back({"all_to_all, formats and byte counts",
                   {AllToAll(132, 0x11), AllToAll(68, 0x22)},
                   {format_mismatch[0], format_mismatch[1]}});
  ExpectRefusedAlike(cases);
}

// An invalid call fails on its rank and aborts the group, so the peer that made a valid
// call fails promptly with the same code instead of waiting out 30 s, whether the bad call
// is the first (a lazily connecting group never connects) or a later one.
TEST_P(AgreementConformanceTest, InvalidArgumentsReleaseThePeers) {
  struct Invalid {
    Call bad_call;
    std::string message;
  };
  const std::vector<Invalid> invalid = {
      {[](Communicator& c, const CollectiveOptions& o) {
         float data[8] = {};
         return c.AllReduce(data, data, -1, o);
       },
       "all_reduce call N: count is -1; it must be >= 0"},
      {[](Communicator& c, const CollectiveOptions& o) {
         float data[8] = {};
         return c.ReduceScatter(data, data, std::vector<int64_t>{1, 1, 1}, o);
       },
       "reduce_scatter call N: counts has 3 entries; the call needs 2"},
      {[](Communicator& c, const CollectiveOptions& o) {
         float data[8] = {};
         return c.AllGather(data, nullptr, std::vector<int64_t>{4, 4}, o);
       },
       "all_gather call N: output is null but its size is 8"},
      {[](Communicator& c, const CollectiveOptions& o) {
         float data[8] = {};
         return c.Broadcast(data, 4, 2, o);
       },
       "root 2 is outside the group of 2 ranks"},
      {[](Communicator& c, const CollectiveOptions& o) {
         float data[8] = {};
         return c.Send(data, 4, 0, o);
       },
       "a rank cannot send to itself"},
  };
  for (bool connected : {false, true}) {
    std::vector<Case> cases;
    for (const Invalid& bad : invalid)
      cases.push_back({bad.message, {bad.bad_call, Kind("all_reduce")}, {}});
    const std::vector<std::vector<absl::Status>> statuses = RunCases(cases, connected);
    for (size_t c = 0; c < cases.size(); ++c) {
      // "call N": the bad call's number on its rank.
      std::string message = invalid[c].message;
      const size_t n = message.find(" call N");
      if (n != std::string::npos) {
        message.replace(n, 7, absl::StrCat(" call ", connected ? kConnectCalls + 1 : 1));
      }
      EXPECT_EQ(statuses[c][0].code(), absl::StatusCode::kInvalidArgument) << statuses[c][0];
      EXPECT_THAT(std::string(statuses[c][0].message()), HasSubstr(message));
      EXPECT_THAT(std::string(statuses[c][0].message()), StartsWith(Description(0)));
      // Waiting when the abort came: its code; arriving after it: FAILED_PRECONDITION.
      EXPECT_THAT(statuses[c][1].code(),
                  AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kFailedPrecondition))
          << statuses[c][1];
      EXPECT_THAT(std::string(statuses[c][1].message()), HasSubstr(message));
      EXPECT_THAT(std::string(statuses[c][1].message()), StartsWith(Description(1)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AgreementConformanceTest,
                         ::testing::ValuesIn(AllCommunicatorFactories()),
                         [](const auto& info) { return info.param->name(); });

}  // namespace
}  // namespace comm_testing
}  // namespace oneflow
