// Long sequences of collectives reuse the same buffers call after call: a rank that left
// a call while a peer still read its buffers, or a lost wake-up, shows up here as wrong
// values or a hang (and as a race under --config=tsan).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

float Value(int64_t iteration, int64_t rank, int64_t element) {
  return static_cast<float>((iteration * 31 + rank * 7 + element) % 97);
}

// 1000 iterations of all-reduce, reduce-scatter, all-gather, all-to-all, broadcast and a
// ring of send/recv, every result checked, on groups of 2, 3 and 4 ranks.
TEST(StressTest, ThousandMixedIterations) {
  for (int64_t ranks : {2, 3, 4}) {
    std::unique_ptr<InProcessGroup> group =
        std::move(InProcessGroup::Create(ranks, "stress")).value();
    const int64_t count = 10;  // elements per rank
    std::vector<int64_t> errors(ranks, 0);
    RunOnRankThreads(ranks, [&](int64_t rank) {
      Communicator& communicator = group->communicator(rank);
      const std::vector<int64_t> element_counts(ranks, count);
      const std::vector<int64_t> byte_counts(ranks, count * 4);
      const std::vector<int64_t> matrix(ranks * ranks, 4);
      std::vector<float> input(count * ranks);
      std::vector<float> output(count * ranks);
      for (int64_t iteration = 0; iteration < 1000; ++iteration) {
        for (int64_t i = 0; i < count * ranks; ++i) input[i] = Value(iteration, rank, i);
        auto sum = [&](int64_t element) {
          float total = 0;
          for (int64_t r = 0; r < ranks; ++r) total += Value(iteration, r, element);
          return total;
        };
        if (!communicator.AllReduce(input.data(), output.data(), count * ranks, {}).ok())
          ++errors[rank];
        for (int64_t i = 0; i < count * ranks; ++i) errors[rank] += output[i] != sum(i);

        if (!communicator.ReduceScatter(input.data(), output.data(), element_counts, {}).ok())
          ++errors[rank];
        for (int64_t i = 0; i < count; ++i) errors[rank] += output[i] != sum(rank * count + i);

        if (!communicator.AllGather(input.data(), output.data(), byte_counts, {}).ok())
          ++errors[rank];
        for (int64_t r = 0; r < ranks; ++r) {
          for (int64_t i = 0; i < count; ++i)
            errors[rank] += output[r * count + i] != Value(iteration, r, i);
        }

        if (!communicator.AllToAll(input.data(), output.data(), matrix, {}).ok()) ++errors[rank];
        for (int64_t r = 0; r < ranks; ++r) errors[rank] += output[r] != Value(iteration, r, rank);

        const int64_t root = iteration % ranks;
        output.assign(output.size(), rank == root ? Value(iteration, root, 0) : -1.0f);
        if (!communicator.Broadcast(output.data(), 4, root, {}).ok()) ++errors[rank];
        errors[rank] += output[0] != Value(iteration, root, 0);

        // Ring: rank 0 sends first, every other rank receives first, so sends never cross.
        const int64_t next = (rank + 1) % ranks;
        const int64_t previous = (rank + ranks - 1) % ranks;
        float received = -1;
        if (rank == 0) {
          errors[rank] += !communicator.Send(input.data(), 4, next, {}).ok();
          errors[rank] += !communicator.Recv(&received, 4, previous, {}).ok();
        } else {
          errors[rank] += !communicator.Recv(&received, 4, previous, {}).ok();
          errors[rank] += !communicator.Send(input.data(), 4, next, {}).ok();
        }
        errors[rank] += received != Value(iteration, previous, 0);
      }
    });
    for (int64_t rank = 0; rank < ranks; ++rank)
      EXPECT_EQ(errors[rank], 0) << ranks << " ranks, rank " << rank;
  }
}

// More ranks than cores (8 threads on the 2-core build machine): waits must yield and
// sleep rather than spin each other out.
TEST(StressTest, ThousandAllReducesOnEightRanks) {
  const int64_t ranks = 8;
  std::unique_ptr<InProcessGroup> group =
      std::move(InProcessGroup::Create(ranks, "stress8")).value();
  std::vector<int64_t> errors(ranks, 0);
  RunOnRankThreads(ranks, [&](int64_t rank) {
    std::vector<float> data(19);
    for (int64_t iteration = 0; iteration < 1000; ++iteration) {
      for (int64_t i = 0; i < 19; ++i) data[i] = Value(iteration, rank, i);
      errors[rank] += !group->communicator(rank).AllReduce(data.data(), data.data(), 19, {}).ok();
      for (int64_t i = 0; i < 19; ++i) {
        float total = 0;
        for (int64_t r = 0; r < ranks; ++r) total += Value(iteration, r, i);
        errors[rank] += data[i] != total;
      }
    }
  });
  for (int64_t rank = 0; rank < ranks; ++rank) EXPECT_EQ(errors[rank], 0) << "rank " << rank;
}

}  // namespace
}  // namespace oneflow
