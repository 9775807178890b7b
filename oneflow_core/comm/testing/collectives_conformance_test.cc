// Every call of every backend (in-process on 1..8 ranks, Gloo on 1..4 and 8, hierarchical
// on 1x1 .. 2x4 nodes x devices) against a sequential reference computed here, one thread
// per rank. Counts are uneven and include empty ranks; for backends that move data in
// segments, sizes also span several of them on up to 4 ranks. Values are compared exactly:
// every backend reduces in rank order, the hierarchical one within a node first and then
// across nodes, which is what the reference follows (TestGroup::shape).
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/comm/testing/communicator_factory.h"
#include "oneflow_core/comm/testing/conformance.h"

namespace oneflow {
namespace comm_testing {
namespace {

class CollectivesConformanceTest : public ::testing::TestWithParam<BackendCase> {
 protected:
  // One group per case, shared by the case's tests: connecting a Gloo group costs about as
  // much as a test's calls. Every test leaves the group as it found it (no call fails), and
  // a test that broke it would fail the case's later tests too, after its own failure.
  static std::map<std::string, std::unique_ptr<TestGroup>>& Groups() {
    static auto* const groups = new std::map<std::string, std::unique_ptr<TestGroup>>();
    return *groups;
  }
  static void TearDownTestSuite() { Groups().clear(); }

  void SetUp() override {
    std::unique_ptr<TestGroup>& group = Groups()[CaseName(GetParam())];
    if (group == nullptr) group = GetParam().factory->MakeGroup(GetParam().shape);
    group_ = group.get();
  }

  int64_t ranks() const { return group_->size(); }
  Communicator& communicator(int64_t rank) { return (*group_)[rank]; }
  // Sizes past one segment, for backends that move data in segments (segment_bytes), on
  // groups of up to 4 ranks: they dominate the test's time, and the seams between segments
  // do not depend on the number of ranks.
  bool large() const { return GetParam().factory->segment_bytes() > 0 && ranks() <= 4; }

  TestGroup* group_ = nullptr;
};

TEST_P(CollectivesConformanceTest, AllReduceEveryOpInAndOutOfPlace) {
  const int64_t n = ranks();
  // Empty, fewer elements than ranks, uneven, several 2048-element reduction blocks; for
  // backends with segments, more than Gloo's 64 KiB one-round all-reduce per rank, and on
  // small groups per-rank chunks of more than one segment (the last one partial).
  std::vector<int64_t> sizes = {0, 1, n + 2, 7001};
  if (GetParam().factory->segment_bytes() > 0)
    sizes.push_back(large() ? 300001 * n + 5 : 20001 * n);
  for (int64_t count : sizes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        if (count > 1000 && op != ReduceOp::kSum && in_place) continue;  // keep the test short
        const std::vector<float> want = ReferenceReduction(group_->shape(), op, 0, count);
        std::vector<std::vector<float>> outputs(n);
        std::vector<absl::Status> statuses(n);
        RunOnRankThreads(n, [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, count);
          if (in_place) {
            statuses[rank] =
                communicator(rank).AllReduce(input.data(), input.data(), count, options);
            outputs[rank] = std::move(input);
          } else {
            outputs[rank].assign(count, -1.0f);
            statuses[rank] =
                communicator(rank).AllReduce(input.data(), outputs[rank].data(), count, options);
          }
        });
        for (int64_t rank = 0; rank < n; ++rank) {
          ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(outputs[rank][i], want[i]) << "rank " << rank << " element " << i << " count "
                                                 << count << " in place " << in_place;
          }
        }
      }
    }
  }
}

TEST_P(CollectivesConformanceTest, ReduceScatterUnevenCountsEveryOp) {
  const int64_t n = ranks();
  std::vector<int64_t> scales = {0, 1, 1500};
  if (large()) scales.push_back(60000);
  for (int64_t scale : scales) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        const std::vector<int64_t> counts = UnevenCounts(n, scale);
        std::vector<int64_t> offsets;
        int64_t total = 0;
        for (int64_t count : counts) {
          offsets.push_back(total);
          total += count;
        }
        std::vector<std::vector<float>> outputs(n);
        RunOnRankThreads(n, [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, total);
          absl::Status status;
          if (in_place) {
            float* mine = input.data() + offsets[rank];
            status = communicator(rank).ReduceScatter(input.data(), mine, counts, options);
            outputs[rank].assign(mine, mine + counts[rank]);
          } else {
            outputs[rank].assign(counts[rank], -1.0f);
            status = communicator(rank).ReduceScatter(input.data(), outputs[rank].data(), counts,
                                                      options);
          }
          EXPECT_TRUE(status.ok()) << status;
        });
        for (int64_t rank = 0; rank < n; ++rank) {
          ASSERT_EQ(outputs[rank],
                    ReferenceReduction(group_->shape(), op, offsets[rank], counts[rank]))
              << "rank " << rank << " scale " << scale << " in place " << in_place;
        }
      }
    }
  }
}

TEST_P(CollectivesConformanceTest, AllGatherUnevenBytes) {
  const int64_t n = ranks();
  for (int64_t scale : {int64_t{0}, int64_t{3}, large() ? int64_t{400000} : int64_t{40000}}) {
    for (bool in_place : {false, true}) {
      const std::vector<int64_t> counts = UnevenCounts(n, scale);
      std::vector<uint8_t> want;
      std::vector<int64_t> offsets;
      for (int64_t rank = 0; rank < n; ++rank) {
        offsets.push_back(static_cast<int64_t>(want.size()));
        for (int64_t i = 0; i < counts[rank]; ++i) want.push_back(Byte(rank, i));
      }
      std::vector<std::vector<uint8_t>> outputs(n, std::vector<uint8_t>(want.size(), 0xEE));
      RunOnRankThreads(n, [&](int64_t rank) {
        std::vector<uint8_t> input(counts[rank]);
        for (int64_t i = 0; i < counts[rank]; ++i) input[i] = Byte(rank, i);
        const void* source = input.data();
        if (in_place) {  // The contribution already sits at its place in the output.
          std::memcpy(outputs[rank].data() + offsets[rank], input.data(), counts[rank]);
          source = outputs[rank].data() + offsets[rank];
        }
        const absl::Status status =
            communicator(rank).AllGather(source, outputs[rank].data(), counts, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < n; ++rank) {
        ASSERT_EQ(outputs[rank], want) << "rank " << rank << " in place " << in_place;
      }
    }
  }
}

TEST_P(CollectivesConformanceTest, AllToAllUnevenMatrix) {
  const int64_t n = ranks();
  for (int64_t scale : {int64_t{0}, int64_t{1}, large() ? int64_t{200000} : int64_t{2000}}) {
    // bytes[src][dst]: uneven, with zeros on the diagonal of every fourth rank.
    std::vector<int64_t> matrix(n * n);
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t d = 0; d < n; ++d) matrix[s * n + d] = ((s * 3 + d * 5) % 4) * scale;
    }
    // Byte i of the chunk s -> d is Byte(s * n + d, i).
    std::vector<std::vector<uint8_t>> outputs(n);
    RunOnRankThreads(n, [&](int64_t rank) {
      std::vector<uint8_t> input;
      int64_t received = 0;
      for (int64_t d = 0; d < n; ++d) {
        for (int64_t i = 0; i < matrix[rank * n + d]; ++i) input.push_back(Byte(rank * n + d, i));
        received += matrix[d * n + rank];
      }
      outputs[rank].assign(received, 0xEE);
      const absl::Status status =
          communicator(rank).AllToAll(input.data(), outputs[rank].data(), matrix, {});
      EXPECT_TRUE(status.ok()) << status;
    });
    for (int64_t rank = 0; rank < n; ++rank) {
      std::vector<uint8_t> want;
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t i = 0; i < matrix[s * n + rank]; ++i) want.push_back(Byte(s * n + rank, i));
      }
      ASSERT_EQ(outputs[rank], want) << "rank " << rank << " scale " << scale;
    }
  }
}

TEST_P(CollectivesConformanceTest, BroadcastFromEveryRoot) {
  const int64_t n = ranks();
  for (int64_t bytes : {int64_t{0}, int64_t{13}, large() ? int64_t{1000000} : int64_t{100000}}) {
    for (int64_t root = 0; root < n; ++root) {
      std::vector<std::vector<uint8_t>> buffers(n);
      RunOnRankThreads(n, [&](int64_t rank) {
        buffers[rank].assign(bytes, 0xEE);
        if (rank == root) {
          for (int64_t i = 0; i < bytes; ++i) buffers[rank][i] = Byte(root, i);
        }
        const absl::Status status =
            communicator(rank).Broadcast(buffers[rank].data(), bytes, root, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < n; ++rank) {
        for (int64_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(buffers[rank][i], Byte(root, i)) << "rank " << rank << " root " << root;
        }
      }
    }
  }
}

// Every ordered pair exchanges messages of several sizes (0 included). Each thread walks
// the same global list of (sender, receiver, size) and takes its part, so the rendezvous
// sends cannot wait on each other in a cycle.
TEST_P(CollectivesConformanceTest, SendRecvBetweenEveryPair) {
  const int64_t n = ranks();
  struct Message {
    int64_t from, to, bytes;
  };
  std::vector<Message> messages;
  for (int64_t bytes : {int64_t{0}, int64_t{5}, large() ? int64_t{700000} : int64_t{70000}}) {
    for (int64_t from = 0; from < n; ++from) {
      for (int64_t to = 0; to < n; ++to) {
        if (from != to) messages.push_back({from, to, bytes});
      }
    }
  }
  std::vector<int64_t> wrong(n, 0);
  RunOnRankThreads(n, [&](int64_t rank) {
    for (const Message& message : messages) {
      std::vector<uint8_t> data(message.bytes);
      if (message.from == rank) {
        for (int64_t i = 0; i < message.bytes; ++i) {
          data[i] = Byte(message.from * 100 + message.to, i);
        }
        const absl::Status status =
            communicator(rank).Send(data.data(), message.bytes, message.to, {});
        EXPECT_TRUE(status.ok()) << status;
      } else if (message.to == rank) {
        const absl::Status status =
            communicator(rank).Recv(data.data(), message.bytes, message.from, {});
        EXPECT_TRUE(status.ok()) << status;
        for (int64_t i = 0; i < message.bytes; ++i) {
          wrong[rank] += data[i] != Byte(message.from * 100 + message.to, i);
        }
      }
    }
  });
  for (int64_t rank = 0; rank < n; ++rank) EXPECT_EQ(wrong[rank], 0) << "rank " << rank;
}

// In-process on 1..8 ranks; Gloo and UCX on 1..4 and 8 (5..7 add time, and nothing that 3 and 8
// do not already exercise: an uneven binomial tree, more peers than cores); hierarchical
// on one device, one device per node, one node, and 2 or 3 nodes of 2 or 4 devices.
std::vector<BackendCase> Cases() {
  std::vector<BackendCase> cases;
  for (int64_t ranks = 1; ranks <= 8; ++ranks) cases.push_back({InProcessFactory(), {1, ranks}});
  for (int64_t ranks : {1, 2, 3, 4, 8}) cases.push_back({GlooFactory(), {1, ranks}});
  for (int64_t ranks : {1, 2, 3, 4, 8}) cases.push_back({UcxFactory(), {1, ranks}});
  for (GroupShape shape : {GroupShape{1, 1}, GroupShape{2, 1}, GroupShape{1, 3}, GroupShape{2, 2},
                           GroupShape{3, 2}, GroupShape{2, 4}}) {
    cases.push_back({HierarchicalFactory(), shape});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Backends, CollectivesConformanceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<BackendCase>& info) {
                           return CaseName(info.param);
                         });

}  // namespace
}  // namespace comm_testing
}  // namespace oneflow
