// Every call of the Gloo backend on 1..4 ranks (threads of this process, TCP on
// 127.0.0.1, an in-memory store) against a sequential reference computed here. Counts are
// uneven and include empty ranks and sizes that span several 1 MiB segments; values are
// compared exactly, since the reductions add in rank order like the reference.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"
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

// The reduction over ranks in rank order, the reference of all-reduce and reduce-scatter.
float ReduceOverRanks(ReduceOp op, int64_t ranks, int64_t element) {
  float result = Value(0, element);
  for (int64_t rank = 1; rank < ranks; ++rank) {
    const float value = Value(rank, element);
    result = op == ReduceOp::kSum   ? result + value
             : op == ReduceOp::kMax ? std::max(result, value)
                                    : std::min(result, value);
  }
  return result;
}

// Uneven per-rank counts with zeros: e.g. 4 ranks -> {3, 0, 5, 2} times `scale`.
std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale) {
  std::vector<int64_t> counts(ranks);
  for (int64_t r = 0; r < ranks; ++r) counts[r] = ((r * 5 + 3) % 7 % 6) * scale;
  if (ranks > 1) counts[1] = 0;
  return counts;
}

class GlooCollectivesTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(GlooCollectivesTest, AllReduceEveryOpInAndOutOfPlace) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  // Empty, fewer elements than ranks, uneven, and chunks of more than one 256Ki-float
  // segment (the last one partial).
  for (int64_t count : {int64_t{0}, int64_t{1}, ranks + 2, 300001 * ranks + 5}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        if (count > 1000 && op != ReduceOp::kSum && in_place) continue;  // keep the test short
        std::vector<std::vector<float>> outputs(ranks);
        std::vector<absl::Status> statuses(ranks);
        RunOnRankThreads(ranks, [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, count);
          if (in_place) {
            statuses[rank] = group[rank].AllReduce(input.data(), input.data(), count, options);
            outputs[rank] = std::move(input);
          } else {
            outputs[rank].assign(count, -1.0f);
            statuses[rank] =
                group[rank].AllReduce(input.data(), outputs[rank].data(), count, options);
          }
        });
        for (int64_t rank = 0; rank < ranks; ++rank) {
          ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(outputs[rank][i], ReduceOverRanks(op, ranks, i))
                << "rank " << rank << " element " << i << " count " << count;
          }
        }
      }
    }
  }
}

TEST_P(GlooCollectivesTest, ReduceScatterUnevenCountsEveryOp) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{1500}, int64_t{60000}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        const std::vector<int64_t> counts = UnevenCounts(ranks, scale);
        std::vector<int64_t> offsets;
        int64_t total = 0;
        for (int64_t count : counts) {
          offsets.push_back(total);
          total += count;
        }
        std::vector<std::vector<float>> outputs(ranks);
        RunOnRankThreads(ranks, [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, total);
          absl::Status status;
          if (in_place) {
            float* mine = input.data() + offsets[rank];
            status = group[rank].ReduceScatter(input.data(), mine, counts, options);
            outputs[rank].assign(mine, mine + counts[rank]);
          } else {
            outputs[rank].assign(counts[rank], -1.0f);
            status = group[rank].ReduceScatter(input.data(), outputs[rank].data(), counts, options);
          }
          EXPECT_TRUE(status.ok()) << status;
        });
        for (int64_t rank = 0; rank < ranks; ++rank) {
          ASSERT_EQ(static_cast<int64_t>(outputs[rank].size()), counts[rank]);
          for (int64_t i = 0; i < counts[rank]; ++i) {
            ASSERT_EQ(outputs[rank][i], ReduceOverRanks(op, ranks, offsets[rank] + i))
                << "rank " << rank << " element " << i;
          }
        }
      }
    }
  }
}

TEST_P(GlooCollectivesTest, AllGatherUnevenBytes) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{3}, int64_t{400000}}) {
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
        const absl::Status status = group[rank].AllGather(source, outputs[rank].data(), counts, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < ranks; ++rank)
        ASSERT_EQ(outputs[rank], want) << "rank " << rank;
    }
  }
}

TEST_P(GlooCollectivesTest, AllToAllUnevenMatrix) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{200000}}) {
    // bytes[src][dst]: uneven, with zeros.
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
          group[rank].AllToAll(input.data(), outputs[rank].data(), matrix, {});
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

TEST_P(GlooCollectivesTest, BroadcastFromEveryRoot) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  for (int64_t bytes : {int64_t{0}, int64_t{13}, int64_t{1000000}}) {
    for (int64_t root = 0; root < ranks; ++root) {
      std::vector<std::vector<uint8_t>> buffers(ranks);
      RunOnRankThreads(ranks, [&](int64_t rank) {
        buffers[rank].assign(bytes, 0xEE);
        if (rank == root) {
          for (int64_t i = 0; i < bytes; ++i) buffers[rank][i] = Byte(root, i);
        }
        const absl::Status status = group[rank].Broadcast(buffers[rank].data(), bytes, root, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < ranks; ++rank) {
        for (int64_t i = 0; i < bytes; ++i)
          ASSERT_EQ(buffers[rank][i], Byte(root, i)) << "rank " << rank;
      }
    }
  }
}

// Every ordered pair exchanges messages of several sizes (0 included). Each thread walks
// the same global list of (sender, receiver, size) and takes its part, so the rendezvous
// sends cannot wait on each other in a cycle.
TEST_P(GlooCollectivesTest, SendRecvBetweenEveryPair) {
  const int64_t ranks = GetParam();
  GlooTestGroup group = MakeGlooGroup(ranks);
  struct Message {
    int64_t from, to, bytes;
  };
  std::vector<Message> messages;
  for (int64_t bytes : {int64_t{0}, int64_t{5}, int64_t{700000}}) {
    for (int64_t from = 0; from < ranks; ++from) {
      for (int64_t to = 0; to < ranks; ++to) {
        if (from != to) messages.push_back({from, to, bytes});
      }
    }
  }
  std::vector<int64_t> wrong(ranks, 0);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    for (const Message& message : messages) {
      std::vector<uint8_t> data(message.bytes);
      if (message.from == rank) {
        for (int64_t i = 0; i < message.bytes; ++i)
          data[i] = Byte(message.from * 100 + message.to, i);
        const absl::Status status = group[rank].Send(data.data(), message.bytes, message.to, {});
        EXPECT_TRUE(status.ok()) << status;
      } else if (message.to == rank) {
        const absl::Status status = group[rank].Recv(data.data(), message.bytes, message.from, {});
        EXPECT_TRUE(status.ok()) << status;
        for (int64_t i = 0; i < message.bytes; ++i) {
          wrong[rank] += data[i] != Byte(message.from * 100 + message.to, i);
        }
      }
    }
  });
  for (int64_t rank = 0; rank < ranks; ++rank) EXPECT_EQ(wrong[rank], 0) << "rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCollectivesTest, ::testing::Range<int64_t>(1, 5),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::to_string(info.param) + "_ranks";
                         });

TEST(GlooCommunicatorTest, NameSizeRank) {
  GlooTestGroup group = MakeGlooGroup(3, "tp0");
  EXPECT_EQ(group[2].size(), 3);
  EXPECT_EQ(group[2].rank(), 2);
  EXPECT_EQ(group[2].Name(), "gloo group 'tp0' rank 2 of 3");
}

TEST(GlooCommunicatorTest, CreateChecksItsOptions) {
  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  auto create = [&](const std::string& name, int64_t rank, int64_t size, KeyValueStore* with) {
    GlooGroupOptions options;
    options.group_name = name;
    options.rank = rank;
    options.size = size;
    options.store = with;
    return NewGlooCommunicator(options).status();
  };
  EXPECT_EQ(create("", 0, 2, store.get()).message(),
            "gloo group: group_name is empty; it names the group's keys in the store and must be "
            "unique in the job");
  EXPECT_EQ(create("g", 0, 0, store.get()).message(),
            "gloo group 'g' of 0 ranks; a group needs >= 1");
  EXPECT_EQ(create("g", 2, 2, store.get()).message(),
            "gloo group 'g': rank 2 is outside the group of 2 ranks");
  EXPECT_EQ(create("g", 0, 2, nullptr).message(),
            "gloo group 'g' of 2 ranks needs a rendezvous store; store is null");
  EXPECT_EQ(create("g", 0, 2, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(create("g", 0, 1, nullptr).ok());  // one rank talks to nobody
}

}  // namespace
}  // namespace oneflow
