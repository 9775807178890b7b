// Every collective of the in-process backend on 1..8 ranks, one thread per rank, against
// a sequential reference computed here. Counts are uneven and include empty ranks; values
// are compared exactly (the reductions add in rank order, like the reference).
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

// A reproducible value for (rank, element) with many distinct low bits, so a chunk taken
// from the wrong rank or offset cannot compare equal.
float Value(int64_t rank, int64_t element) {
  return static_cast<float>((element * 7919 + rank * 104729) % 10007) * 0.013f - 61.0f;
}
uint8_t Byte(int64_t rank, int64_t index) {
  return static_cast<uint8_t>(rank * 31 + index * 7 + 1);
}

std::vector<float> RankFloats(int64_t rank, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = Value(rank, i);
  return values;
}

// Sum over ranks in rank order, the reference of all-reduce and reduce-scatter.
float SumOverRanks(int64_t ranks, int64_t element) {
  float sum = Value(0, element);
  for (int64_t rank = 1; rank < ranks; ++rank) sum += Value(rank, element);
  return sum;
}

std::unique_ptr<InProcessGroup> MakeGroup(int64_t ranks) {
  absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(ranks, "test");
  EXPECT_TRUE(group.ok()) << group.status();
  return std::move(group).value();
}

// Uneven per-rank counts with zeros: e.g. 4 ranks -> {3, 0, 5, 2} times `scale`.
std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale) {
  std::vector<int64_t> counts(ranks);
  for (int64_t r = 0; r < ranks; ++r) counts[r] = ((r * 5 + 3) % 7 % 6) * scale;
  if (ranks > 1) counts[1] = 0;
  return counts;
}

class CollectivesTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(CollectivesTest, AllReduce) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  // Empty, fewer elements than ranks, uneven, and several 2048-element reduction blocks.
  for (int64_t count : {int64_t{0}, int64_t{1}, ranks + 2, int64_t{7001}}) {
    for (bool in_place : {false, true}) {
      std::vector<std::vector<float>> outputs(ranks);
      std::vector<absl::Status> statuses(ranks);
      RunOnRankThreads(ranks, [&](int64_t rank) {
        std::vector<float> input = RankFloats(rank, count);
        if (in_place) {
          statuses[rank] =
              group->communicator(rank).AllReduce(input.data(), input.data(), count, {});
          outputs[rank] = input;
        } else {
          outputs[rank].assign(count, -1.0f);
          statuses[rank] =
              group->communicator(rank).AllReduce(input.data(), outputs[rank].data(), count, {});
        }
      });
      for (int64_t rank = 0; rank < ranks; ++rank) {
        ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(outputs[rank][i], SumOverRanks(ranks, i))
              << "rank " << rank << " element " << i << " count " << count;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, AllReduceMaxAndMin) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  const int64_t count = 37;
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<std::vector<float>> outputs(ranks, std::vector<float>(count));
    RunOnRankThreads(ranks, [&](int64_t rank) {
      CollectiveOptions options;
      options.reduce_op = op;
      std::vector<float> input = RankFloats(rank, count);
      EXPECT_TRUE(group->communicator(rank)
                      .AllReduce(input.data(), outputs[rank].data(), count, options)
                      .ok());
    });
    for (int64_t i = 0; i < count; ++i) {
      float want = Value(0, i);
      for (int64_t r = 1; r < ranks; ++r) {
        want = op == ReduceOp::kMax ? std::max(want, Value(r, i)) : std::min(want, Value(r, i));
      }
      for (int64_t rank = 0; rank < ranks; ++rank) ASSERT_EQ(outputs[rank][i], want);
    }
  }
}

TEST_P(CollectivesTest, ReduceScatterUnevenCounts) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{1500}}) {
    for (bool in_place : {false, true}) {
      const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
      int64_t total = 0;
      std::vector<int64_t> offsets;
      for (int64_t count : counts) {
        offsets.push_back(total);
        total += count;
      }
      std::vector<std::vector<float>> outputs(ranks);
      RunOnRankThreads(ranks, [&](int64_t rank) {
        std::vector<float> input = RankFloats(rank, total);
        absl::Status status;
        if (in_place) {
          float* mine = input.data() + offsets[rank];
          status = group->communicator(rank).ReduceScatter(input.data(), mine, counts, {});
          outputs[rank].assign(mine, mine + counts[rank]);
        } else {
          outputs[rank].assign(counts[rank], -1.0f);
          status = group->communicator(rank).ReduceScatter(input.data(), outputs[rank].data(),
                                                           counts, {});
        }
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < ranks; ++rank) {
        ASSERT_EQ(static_cast<int64_t>(outputs[rank].size()), counts[rank]);
        for (int64_t i = 0; i < counts[rank]; ++i) {
          ASSERT_EQ(outputs[rank][i], SumOverRanks(ranks, offsets[rank] + i)) << "rank " << rank;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, AllGatherUnevenBytes) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{3}, int64_t{40000}}) {
    for (bool in_place : {false, true}) {
      const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
      std::vector<uint8_t> want;
      std::vector<int64_t> offsets;
      for (int64_t rank = 0; rank < ranks; ++rank) {
        offsets.push_back(static_cast<int64_t>(want.size()));
        for (int64_t i = 0; i < counts[rank]; ++i) want.push_back(Byte(rank, i));
      }
      std::vector<std::vector<uint8_t>> outputs(ranks, std::vector<uint8_t>(want.size(), 0xEE));
      RunOnRankThreads(ranks, [&](int64_t rank) {
        std::vector<uint8_t> input(counts[rank]);
        for (int64_t i = 0; i < counts[rank]; ++i) input[i] = Byte(rank, i);
        const void* source = input.data();
        if (in_place) {  // The contribution already sits at its place in the output.
          std::memcpy(outputs[rank].data() + offsets[rank], input.data(), counts[rank]);
          source = outputs[rank].data() + offsets[rank];
        }
        const absl::Status status =
            group->communicator(rank).AllGather(source, outputs[rank].data(), counts, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < ranks; ++rank)
        ASSERT_EQ(outputs[rank], want) << "rank " << rank;
    }
  }
}

TEST_P(CollectivesTest, AllToAllUnevenMatrix) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{2000}}) {
    // bytes[src][dst]: uneven, with zeros on the diagonal of every third rank.
    std::vector<int64_t> matrix(ranks * ranks);
    for (int64_t s = 0; s < ranks; ++s) {
      for (int64_t d = 0; d < ranks; ++d) matrix[s * ranks + d] = ((s * 3 + d * 5) % 4) * scale;
    }
    // Byte i of the chunk s -> d is Byte(s * ranks + d, i).
    std::vector<std::vector<uint8_t>> outputs(ranks);
    RunOnRankThreads(ranks, [&](int64_t rank) {
      std::vector<uint8_t> input;
      int64_t received = 0;
      for (int64_t d = 0; d < ranks; ++d) {
        for (int64_t i = 0; i < matrix[rank * ranks + d]; ++i)
          input.push_back(Byte(rank * ranks + d, i));
        received += matrix[d * ranks + rank];
      }
      outputs[rank].assign(received, 0xEE);
      const absl::Status status =
          group->communicator(rank).AllToAll(input.data(), outputs[rank].data(), matrix, {});
      EXPECT_TRUE(status.ok()) << status;
    });
    for (int64_t rank = 0; rank < ranks; ++rank) {
      std::vector<uint8_t> want;
      for (int64_t s = 0; s < ranks; ++s) {
        for (int64_t i = 0; i < matrix[s * ranks + rank]; ++i)
          want.push_back(Byte(s * ranks + rank, i));
      }
      ASSERT_EQ(outputs[rank], want) << "rank " << rank << " scale " << scale;
    }
  }
}

TEST_P(CollectivesTest, BroadcastFromEveryRoot) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  for (int64_t bytes : {int64_t{0}, int64_t{13}, int64_t{100000}}) {
    for (int64_t root = 0; root < ranks; ++root) {
      std::vector<std::vector<uint8_t>> buffers(ranks);
      RunOnRankThreads(ranks, [&](int64_t rank) {
        buffers[rank].assign(bytes, 0xEE);
        if (rank == root) {
          for (int64_t i = 0; i < bytes; ++i) buffers[rank][i] = Byte(root, i);
        }
        const absl::Status status =
            group->communicator(rank).Broadcast(buffers[rank].data(), bytes, root, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < ranks; ++rank) {
        for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(buffers[rank][i], Byte(root, i));
      }
    }
  }
}

// Every ordered pair exchanges messages of several sizes (0 included). Each thread walks
// the same global list of (sender, receiver, size) and takes its part, so the rendezvous
// sends cannot wait on each other in a cycle.
TEST_P(CollectivesTest, SendRecvBetweenEveryPair) {
  const int64_t ranks = GetParam();
  std::unique_ptr<InProcessGroup> group = MakeGroup(ranks);
  struct Message {
    int64_t from, to, bytes;
  };
  std::vector<Message> messages;
  for (int64_t bytes : {int64_t{0}, int64_t{5}, int64_t{70000}}) {
    for (int64_t from = 0; from < ranks; ++from) {
      for (int64_t to = 0; to < ranks; ++to) {
        if (from != to) messages.push_back({from, to, bytes});
      }
    }
  }
  std::vector<int64_t> wrong(ranks, 0);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    Communicator& communicator = group->communicator(rank);
    for (const Message& message : messages) {
      std::vector<uint8_t> data(message.bytes);
      if (message.from == rank) {
        for (int64_t i = 0; i < message.bytes; ++i)
          data[i] = Byte(message.from * 100 + message.to, i);
        EXPECT_TRUE(communicator.Send(data.data(), message.bytes, message.to, {}).ok());
      } else if (message.to == rank) {
        EXPECT_TRUE(communicator.Recv(data.data(), message.bytes, message.from, {}).ok());
        for (int64_t i = 0; i < message.bytes; ++i) {
          wrong[rank] += data[i] != Byte(message.from * 100 + message.to, i);
        }
      }
    }
  });
  for (int64_t rank = 0; rank < ranks; ++rank) EXPECT_EQ(wrong[rank], 0) << "rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesTest, ::testing::Range<int64_t>(1, 9),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::to_string(info.param) + "_ranks";
                         });

TEST(InProcessGroupTest, CreateNeedsOneRank) {
  const absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(0, "tp");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(), "in-process group 'tp' of 0 ranks; a group needs >= 1");
}

TEST(InProcessGroupTest, NameSizeRank) {
  std::unique_ptr<InProcessGroup> group = MakeGroup(3);
  EXPECT_EQ(group->size(), 3);
  EXPECT_EQ(group->communicator(2).size(), 3);
  EXPECT_EQ(group->communicator(2).rank(), 2);
  EXPECT_EQ(group->communicator(2).Name(), "in-process group 'test' rank 2 of 3");
}

}  // namespace
}  // namespace oneflow
