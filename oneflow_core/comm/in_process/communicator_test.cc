// What only the in-process backend has: its group type's creation and names, and the
// streaming path of its all-reduce (chunks of >= 4 MiB per rank are written with
// non-temporal stores, reduce.h), which the conformance suites' sizes do not reach. Its
// calls are otherwise checked with every other backend's by the suites in testing/.
#include "oneflow_core/comm/in_process/communicator.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

TEST(InProcessGroupTest, CreateNeedsOneRank) {
  const absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(0, "tp");
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(), "in-process group 'tp' of 0 ranks; a group needs >= 1");
}

TEST(InProcessGroupTest, NameSizeRank) {
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(3, "test")).value();
  EXPECT_EQ(group->size(), 3);
  EXPECT_EQ(group->communicator(2).size(), 3);
  EXPECT_EQ(group->communicator(2).rank(), 2);
  EXPECT_EQ(group->communicator(2).Name(), "in-process group 'test' rank 2 of 3");
}

// 3 ranks x 3 Mi floats: every rank's chunk is 4 MiB, the streaming threshold. Values are
// small integers, so every sum is exact whatever the order and a wrong, missing or
// half-written element shows; out of place and in place both.
TEST(InProcessGroupTest, LargeAllReduceIsExactOutOfPlaceAndInPlace) {
  constexpr int64_t kRanks = 3;
  constexpr int64_t kCount = 3 * (int64_t{1} << 20);
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(kRanks, "large")).value();
  auto value = [](int64_t rank, int64_t i) { return static_cast<float>((i * 7 + rank * 13) % 101); };
  for (const bool in_place : {false, true}) {
    std::vector<std::vector<float>> inputs(kRanks, std::vector<float>(kCount));
    std::vector<std::vector<float>> outputs(kRanks, std::vector<float>(in_place ? 0 : kCount));
    std::vector<absl::Status> statuses(kRanks);
    for (int64_t r = 0; r < kRanks; ++r) {
      for (int64_t i = 0; i < kCount; ++i) inputs[r][i] = value(r, i);
    }
    RunOnRankThreads(kRanks, [&](int64_t rank) {
      CollectiveOptions options;
      options.timeout = absl::Seconds(60);
      float* output = in_place ? inputs[rank].data() : outputs[rank].data();
      statuses[rank] = group->communicator(rank).AllReduce(inputs[rank].data(), output, kCount, options);
    });
    for (int64_t r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(statuses[r].ok()) << statuses[r];
      const std::vector<float>& result = in_place ? inputs[r] : outputs[r];
      int64_t wrong = 0;
      for (int64_t i = 0; i < kCount; ++i) wrong += result[i] != value(0, i) + value(1, i) + value(2, i);
      EXPECT_EQ(wrong, 0) << "rank " << r << (in_place ? " in place" : " out of place");
    }
  }
}

}  // namespace
}  // namespace oneflow
