// Several hundred mixed calls back to back on one Gloo group of 3 ranks, each checked
// against its reference: slots of consecutive calls must never cross, scratch reuse must
// never leak values between calls, and point-to-point messages interleave with
// collectives.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "oneflow_core/comm/gloo/test_group.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

constexpr int64_t kRanks = 3;
constexpr int kCalls = 400;

float Value(int call, int64_t rank, int64_t element) {
  return static_cast<float>((element * 131 + rank * 7919 + call * 104729) % 4099) * 0.25f - 500.0f;
}

// What call `call` is, the same on every rank: kind 0..5, a size, a root, a reduction.
struct Plan {
  int kind;
  int64_t count;
  int64_t root;
  ReduceOp op;
};
Plan PlanOf(int call) {
  const uint64_t mix = static_cast<uint64_t>(call) * 0x9E3779B97F4A7C15ull;
  const int64_t sizes[] = {0, 1, 2, 7, 100, 4097, 70000};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};
  return Plan{static_cast<int>((mix >> 7) % 6), sizes[(mix >> 17) % 7],
              static_cast<int64_t>((mix >> 29) % kRanks), ops[(mix >> 37) % 3]};
}

float Reduce(ReduceOp op, int call, int64_t element) {
  float result = Value(call, 0, element);
  for (int64_t rank = 1; rank < kRanks; ++rank) {
    const float value = Value(call, rank, element);
    result = op == ReduceOp::kSum   ? result + value
             : op == ReduceOp::kMax ? std::max(result, value)
                                    : std::min(result, value);
  }
  return result;
}

// Runs call `call` on `rank` and returns how many output elements were wrong (or -1 when
// the call failed).
int64_t RunAndCheck(Communicator& communicator, int call, int64_t rank) {
  const Plan plan = PlanOf(call);
  const int64_t n = plan.count;
  auto values = [&](int64_t of_rank, int64_t count) {
    std::vector<float> data(count);
    for (int64_t i = 0; i < count; ++i) data[i] = Value(call, of_rank, i);
    return data;
  };
  int64_t wrong = 0;
  absl::Status status;
  switch (plan.kind) {
    case 0: {  // all-reduce, in place
      CollectiveOptions options;
      options.reduce_op = plan.op;
      std::vector<float> data = values(rank, n);
      status = communicator.AllReduce(data.data(), data.data(), n, options);
      for (int64_t i = 0; i < n; ++i) wrong += data[i] != Reduce(plan.op, call, i);
      break;
    }
    case 1: {  // reduce-scatter, uneven: rank r gets (r + 1) * n elements
      CollectiveOptions options;
      options.reduce_op = plan.op;
      const std::vector<int64_t> counts = {n, 2 * n, 3 * n};
      std::vector<float> input = values(rank, 6 * n);
      std::vector<float> output(counts[rank]);
      status = communicator.ReduceScatter(input.data(), output.data(), counts, options);
      const int64_t offset = rank == 0 ? 0 : rank == 1 ? n : 3 * n;
      for (int64_t i = 0; i < counts[rank]; ++i)
        wrong += output[i] != Reduce(plan.op, call, offset + i);
      break;
    }
    case 2: {  // all-gather of rank-dependent sizes
      const std::vector<int64_t> bytes = {4 * n, 0, 8 * n};
      std::vector<float> input = values(rank, bytes[rank] / 4);
      std::vector<float> output(3 * n);
      status = communicator.AllGather(input.data(), output.data(), bytes, {});
      for (int64_t i = 0; i < n; ++i) wrong += output[i] != Value(call, 0, i);
      for (int64_t i = 0; i < 2 * n; ++i) wrong += output[n + i] != Value(call, 2, i);
      break;
    }
    case 3: {  // all-to-all: n floats from every rank to every other, none to itself
      std::vector<int64_t> matrix(kRanks * kRanks, 4 * n);
      for (int64_t r = 0; r < kRanks; ++r) matrix[r * kRanks + r] = 0;
      std::vector<float> input = values(rank, 2 * n);
      std::vector<float> output(2 * n);
      status = communicator.AllToAll(input.data(), output.data(), matrix, {});
      // From src, this rank gets the chunk src sent to it: src's elements at index
      // (position of this rank among src's destinations) * n.
      int64_t at = 0;
      for (int64_t src = 0; src < kRanks; ++src) {
        if (src == rank) continue;
        const int64_t position = rank < src ? rank : rank - 1;
        for (int64_t i = 0; i < n; ++i)
          wrong += output[at + i] != Value(call, src, position * n + i);
        at += n;
      }
      break;
    }
    case 4: {  // broadcast
      std::vector<float> data = rank == plan.root ? values(rank, n) : std::vector<float>(n, -1.0f);
      status = communicator.Broadcast(data.data(), 4 * n, plan.root, {});
      for (int64_t i = 0; i < n; ++i) wrong += data[i] != Value(call, plan.root, i);
      break;
    }
    case 5: {  // a ring of sends: rank r sends to r + 1, the root's pair goes first
      const int64_t next = (rank + 1) % kRanks;
      const int64_t previous = (rank + kRanks - 1) % kRanks;
      std::vector<float> mine = values(rank, n);
      std::vector<float> theirs(n, -1.0f);
      if (rank == plan.root) {
        status = communicator.Send(mine.data(), 4 * n, next, {});
        if (status.ok()) status = communicator.Recv(theirs.data(), 4 * n, previous, {});
      } else {
        status = communicator.Recv(theirs.data(), 4 * n, previous, {});
        if (status.ok()) status = communicator.Send(mine.data(), 4 * n, next, {});
      }
      for (int64_t i = 0; i < n; ++i) wrong += theirs[i] != Value(call, previous, i);
      break;
    }
  }
  EXPECT_TRUE(status.ok()) << "call " << call << ": " << status;
  return status.ok() ? wrong : -1;
}

TEST(GlooStressTest, HundredsOfMixedCallsStayExact) {
  GlooTestGroup group = MakeGlooGroup(kRanks, "stress");
  std::vector<int64_t> wrong(kRanks, 0);
  RunOnRankThreads(kRanks, [&](int64_t rank) {
    for (int call = 0; call < kCalls; ++call) {
      const int64_t result = RunAndCheck(group[rank], call, rank);
      if (result < 0) {
        wrong[rank] = -1;
        return;
      }
      wrong[rank] += result;
    }
  });
  for (int64_t rank = 0; rank < kRanks; ++rank) EXPECT_EQ(wrong[rank], 0) << "rank " << rank;
}

}  // namespace
}  // namespace oneflow
