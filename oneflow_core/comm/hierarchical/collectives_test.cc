// The hierarchical communicator on 2 x 2, 3 x 2, 2 x 1 and 1 x 3 (nodes x devices), every
// device a thread: in-process groups within a node, Gloo groups across nodes and flat,
// over one in-memory store. Every call against a sequential reference; sums against the
// hierarchical association (node partial sums added in node order), max and min against
// the flat one. Then failures: an abort or an invalid call stops every device promptly.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/hierarchical/communicator.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

struct Shape {
  int64_t nodes;
  int64_t local_size;
  int64_t size() const { return nodes * local_size; }
};

// Every device's hierarchical communicator, with what they are built from.
struct Hierarchy {
  Communicator& operator[](int64_t rank) { return *devices[rank]; }

  std::unique_ptr<KeyValueStore> store;  // destroyed last
  std::vector<std::unique_ptr<InProcessGroup>> nodes;
  std::vector<std::unique_ptr<Communicator>> devices;
};

std::unique_ptr<Communicator> Gloo(KeyValueStore* store, const std::string& name, int64_t rank,
                                   int64_t size) {
  GlooGroupOptions options;
  options.group_name = name;
  options.rank = rank;
  options.size = size;
  options.store = store;
  return std::move(NewGlooCommunicator(options)).value();
}

Hierarchy MakeHierarchy(Shape shape) {
  Hierarchy hierarchy;
  hierarchy.store = NewInMemoryKeyValueStore();
  for (int64_t node = 0; node < shape.nodes; ++node) {
    hierarchy.nodes.push_back(
        std::move(InProcessGroup::Create(shape.local_size, absl::StrCat("node ", node))).value());
  }
  for (int64_t rank = 0; rank < shape.size(); ++rank) {
    const int64_t node = rank / shape.local_size;
    const int64_t local = rank % shape.local_size;
    HierarchyOptions options;
    options.name = "dp";
    options.nodes = shape.nodes;
    options.local_size = shape.local_size;
    options.in_node = &hierarchy.nodes[node]->communicator(local);
    options.cross_node =
        Gloo(hierarchy.store.get(), absl::StrCat("dp/cross", local), node, shape.nodes);
    options.flat = Gloo(hierarchy.store.get(), "dp/flat", rank, shape.size());
    absl::StatusOr<std::unique_ptr<Communicator>> device =
        NewHierarchicalCommunicator(std::move(options));
    EXPECT_TRUE(device.ok()) << device.status();
    hierarchy.devices.push_back(std::move(device).value());
  }
  return hierarchy;
}

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

// Sums within each node in local order, then the node sums in node order; max and min
// over all ranks (their order does not matter).
float Reference(Shape shape, ReduceOp op, int64_t element) {
  if (op != ReduceOp::kSum) {
    float result = Value(0, element);
    for (int64_t rank = 1; rank < shape.size(); ++rank) {
      result = op == ReduceOp::kMax ? std::max(result, Value(rank, element))
                                    : std::min(result, Value(rank, element));
    }
    return result;
  }
  float total = 0;
  for (int64_t node = 0; node < shape.nodes; ++node) {
    float partial = Value(node * shape.local_size, element);
    for (int64_t local = 1; local < shape.local_size; ++local) {
      partial += Value(node * shape.local_size + local, element);
    }
    total = node == 0 ? partial : total + partial;
  }
  return total;
}

std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale) {
  std::vector<int64_t> counts(ranks);
  for (int64_t r = 0; r < ranks; ++r) counts[r] = ((r * 5 + 3) % 7 % 6) * scale;
  if (ranks > 1) counts[1] = 0;
  return counts;
}

class HierarchicalTest : public ::testing::TestWithParam<Shape> {};

TEST_P(HierarchicalTest, AllReduceEveryOpInAndOutOfPlace) {
  const Shape shape = GetParam();
  Hierarchy hierarchy = MakeHierarchy(shape);
  // Empty, fewer elements than devices on a node, uneven shards, more than one segment.
  for (int64_t count :
       {int64_t{0}, int64_t{1}, shape.local_size + 1, int64_t{1001}, int64_t{600001}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        if (count > 2000 && (op != ReduceOp::kSum || in_place)) continue;  // keep it short
        std::vector<std::vector<float>> outputs(shape.size());
        std::vector<absl::Status> statuses(shape.size());
        RunOnRankThreads(shape.size(), [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, count);
          if (in_place) {
            statuses[rank] = hierarchy[rank].AllReduce(input.data(), input.data(), count, options);
            outputs[rank] = std::move(input);
          } else {
            outputs[rank].assign(count, -1.0f);
            statuses[rank] =
                hierarchy[rank].AllReduce(input.data(), outputs[rank].data(), count, options);
          }
        });
        for (int64_t rank = 0; rank < shape.size(); ++rank) {
          ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(outputs[rank][i], Reference(shape, op, i))
                << "rank " << rank << " element " << i;
          }
        }
      }
    }
  }
}

TEST_P(HierarchicalTest, ReduceScatterUnevenEveryOp) {
  const Shape shape = GetParam();
  Hierarchy hierarchy = MakeHierarchy(shape);
  for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{700}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        const std::vector<int64_t> counts = UnevenCounts(shape.size(), scale);
        std::vector<int64_t> offsets;
        int64_t total = 0;
        for (int64_t count : counts) {
          offsets.push_back(total);
          total += count;
        }
        std::vector<std::vector<float>> outputs(shape.size());
        RunOnRankThreads(shape.size(), [&](int64_t rank) {
          CollectiveOptions options;
          options.reduce_op = op;
          std::vector<float> input = RankFloats(rank, total);
          absl::Status status;
          if (in_place) {
            float* mine = input.data() + offsets[rank];
            status = hierarchy[rank].ReduceScatter(input.data(), mine, counts, options);
            outputs[rank].assign(mine, mine + counts[rank]);
          } else {
            outputs[rank].assign(counts[rank], -1.0f);
            status =
                hierarchy[rank].ReduceScatter(input.data(), outputs[rank].data(), counts, options);
          }
          EXPECT_TRUE(status.ok()) << status;
        });
        for (int64_t rank = 0; rank < shape.size(); ++rank) {
          for (int64_t i = 0; i < counts[rank]; ++i) {
            ASSERT_EQ(outputs[rank][i], Reference(shape, op, offsets[rank] + i)) << "rank " << rank;
          }
        }
      }
    }
  }
}

TEST_P(HierarchicalTest, AllGatherUnevenBytes) {
  const Shape shape = GetParam();
  Hierarchy hierarchy = MakeHierarchy(shape);
  for (int64_t scale : {int64_t{0}, int64_t{3}, int64_t{50000}}) {
    for (bool in_place : {false, true}) {
      const std::vector<int64_t> counts = UnevenCounts(shape.size(), scale);
      std::vector<uint8_t> want;
      std::vector<int64_t> offsets;
      for (int64_t rank = 0; rank < shape.size(); ++rank) {
        offsets.push_back(static_cast<int64_t>(want.size()));
        for (int64_t i = 0; i < counts[rank]; ++i) want.push_back(Byte(rank, i));
      }
      std::vector<std::vector<uint8_t>> outputs(shape.size(),
                                                std::vector<uint8_t>(want.size(), 0xEE));
      RunOnRankThreads(shape.size(), [&](int64_t rank) {
        std::vector<uint8_t> input(counts[rank]);
        for (int64_t i = 0; i < counts[rank]; ++i) input[i] = Byte(rank, i);
        const void* source = input.data();
        if (in_place) {
          std::memcpy(outputs[rank].data() + offsets[rank], input.data(), counts[rank]);
          source = outputs[rank].data() + offsets[rank];
        }
        const absl::Status status =
            hierarchy[rank].AllGather(source, outputs[rank].data(), counts, {});
        EXPECT_TRUE(status.ok()) << status;
      });
      for (int64_t rank = 0; rank < shape.size(); ++rank)
        ASSERT_EQ(outputs[rank], want) << "rank " << rank;
    }
  }
}

// All-to-all, broadcast from every root and a ring of sends, which go through `flat`.
TEST_P(HierarchicalTest, FlatCallsAllToAllBroadcastSendRecv) {
  const Shape shape = GetParam();
  const int64_t n = shape.size();
  Hierarchy hierarchy = MakeHierarchy(shape);
  std::vector<int64_t> matrix(n * n);
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t d = 0; d < n; ++d) matrix[s * n + d] = ((s * 3 + d * 5) % 4) * 1000;
  }
  std::vector<int64_t> wrong(n, 0);
  RunOnRankThreads(n, [&](int64_t rank) {
    Communicator& device = hierarchy[rank];
    std::vector<uint8_t> input;
    int64_t received = 0;
    for (int64_t d = 0; d < n; ++d) {
      for (int64_t i = 0; i < matrix[rank * n + d]; ++i) input.push_back(Byte(rank * n + d, i));
      received += matrix[d * n + rank];
    }
    std::vector<uint8_t> output(received, 0xEE);
    EXPECT_TRUE(device.AllToAll(input.data(), output.data(), matrix, {}).ok());
    int64_t at = 0;
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < matrix[s * n + rank]; ++i)
        wrong[rank] += output[at++] != Byte(s * n + rank, i);
    }
    for (int64_t root = 0; root < n; ++root) {
      std::vector<uint8_t> buffer(5000, 0xEE);
      if (rank == root) {
        for (int64_t i = 0; i < 5000; ++i) buffer[i] = Byte(root, i);
      }
      EXPECT_TRUE(device.Broadcast(buffer.data(), 5000, root, {}).ok());
      for (int64_t i = 0; i < 5000; ++i) wrong[rank] += buffer[i] != Byte(root, i);
    }
    if (n > 1) {  // rank 0 sends first; everyone else receives, then passes its own on
      std::vector<uint8_t> mine(777), theirs(777, 0);
      for (int64_t i = 0; i < 777; ++i) mine[i] = Byte(rank, i);
      const int64_t next = (rank + 1) % n;
      const int64_t previous = (rank + n - 1) % n;
      if (rank == 0) {
        EXPECT_TRUE(device.Send(mine.data(), 777, next, {}).ok());
      }
      EXPECT_TRUE(device.Recv(theirs.data(), 777, previous, {}).ok());
      if (rank != 0) {
        EXPECT_TRUE(device.Send(mine.data(), 777, next, {}).ok());
      }
      for (int64_t i = 0; i < 777; ++i) wrong[rank] += theirs[i] != Byte(previous, i);
    }
  });
  for (int64_t rank = 0; rank < n; ++rank) EXPECT_EQ(wrong[rank], 0) << "rank " << rank;
}

// An abort of one device stops every device promptly, on its node through the in-node
// group and on the other nodes through the Gloo groups; later calls are refused.
TEST_P(HierarchicalTest, AbortOfOneDeviceStopsEveryDevice) {
  const Shape shape = GetParam();
  if (shape.size() < 2) GTEST_SKIP();
  Hierarchy hierarchy = MakeHierarchy(shape);
  const int64_t last = shape.size() - 1;
  std::vector<absl::Status> statuses(shape.size());
  std::vector<double> seconds(shape.size());
  RunOnRankThreads(shape.size(), [&](int64_t rank) {
    CollectiveOptions options;
    options.timeout = absl::Seconds(60);
    options.description = absl::StrCat("device ", rank);
    std::vector<float> data(100, 1.0f);
    // One good call connects everything; then the last device aborts instead of calling.
    EXPECT_TRUE(hierarchy[rank].AllReduce(data.data(), data.data(), 100, options).ok());
    const auto start = std::chrono::steady_clock::now();
    if (rank == last) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      hierarchy[rank].Abort(absl::CancelledError("device failed"));
      statuses[rank] = hierarchy[rank].AllReduce(data.data(), data.data(), 100, options);
    } else {
      statuses[rank] = hierarchy[rank].AllReduce(data.data(), data.data(), 100, options);
    }
    seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  for (int64_t rank = 0; rank < shape.size(); ++rank) {
    EXPECT_LT(seconds[rank], 5.0) << "rank " << rank;
    EXPECT_THAT(statuses[rank].code(),
                AnyOf(absl::StatusCode::kCancelled, absl::StatusCode::kFailedPrecondition))
        << statuses[rank];
    EXPECT_THAT(std::string(statuses[rank].message()), HasSubstr("device failed"))
        << "rank " << rank;
    EXPECT_THAT(std::string(statuses[rank].message()),
                ::testing::StartsWith(
                    absl::StrCat("device ", rank, ": hierarchical group 'dp' rank ", rank)));
  }
  EXPECT_EQ(statuses[last].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(statuses[last].message()),
              HasSubstr("all_reduce call 2: the group was aborted earlier: device failed"));
}

INSTANTIATE_TEST_SUITE_P(Shapes, HierarchicalTest,
                         ::testing::Values(Shape{2, 2}, Shape{3, 2}, Shape{2, 1}, Shape{1, 3}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return absl::StrCat(info.param.nodes, "x", info.param.local_size);
                         });

TEST(HierarchicalCommunicatorTest, NameAndShapeChecks) {
  Hierarchy hierarchy = MakeHierarchy(Shape{2, 2});
  EXPECT_EQ(hierarchy[3].Name(), "hierarchical group 'dp' rank 3 of 4 (2 nodes x 2)");
  EXPECT_EQ(hierarchy[3].size(), 4);
  EXPECT_EQ(hierarchy[3].rank(), 3);

  std::unique_ptr<KeyValueStore> store = NewInMemoryKeyValueStore();
  std::unique_ptr<InProcessGroup> node = std::move(InProcessGroup::Create(2, "node")).value();
  HierarchyOptions options;
  options.name = "bad";
  options.nodes = 2;
  options.local_size = 2;
  options.in_node = &node->communicator(1);
  options.cross_node = Gloo(store.get(), "bad/cross", 0, 2);
  options.flat = Gloo(store.get(), "bad/flat", 2, 4);  // node 0, local 1 is flat rank 1
  absl::StatusOr<std::unique_ptr<Communicator>> wrong_rank =
      NewHierarchicalCommunicator(std::move(options));
  EXPECT_EQ(wrong_rank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong_rank.status().message(),
            "hierarchical group 'bad' of 2 nodes x 2: flat rank 2 is not node 0 * local_size 2 + "
            "local 1 = 1");

  HierarchyOptions sizes;
  sizes.name = "bad";
  sizes.nodes = 3;
  sizes.local_size = 2;
  sizes.in_node = &node->communicator(0);
  sizes.cross_node = Gloo(store.get(), "bad/cross", 0, 2);
  sizes.flat = Gloo(store.get(), "bad/flat", 0, 6);
  EXPECT_EQ(NewHierarchicalCommunicator(std::move(sizes)).status().message(),
            "hierarchical group 'bad' of 3 nodes x 2: cross_node (gloo group 'bad/cross' rank 0 of "
            "2) has 2 "
            "ranks; the shape needs 3");
}

}  // namespace
}  // namespace oneflow
