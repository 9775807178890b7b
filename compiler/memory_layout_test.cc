#include "compiler/memory_layout.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(MemoryLayoutTest, DisjointLifetimesShareMemory) {
  // A chain a -> b -> c: a and c never live together, so c reuses a's bytes.
  const std::vector<RegisterLifetime> registers = {
      {640, 0, 1},  // a: produced at 0, read at 1
      {640, 1, 2},  // b
      {640, 2, 3},  // c
  };
  const MemoryLayout layout = LayOutRegisters(registers);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{0, 640, 0}));
  EXPECT_EQ(layout.size_bytes, 1280);
  EXPECT_EQ(layout.lower_bound_bytes, 1280);
  EXPECT_EQ(layout.reuses, (std::vector<std::pair<int64_t, int64_t>>{{0, 2}}));
}

TEST(MemoryLayoutTest, LargestFirstAndAlignment) {
  // 100 bytes round up to 128; the 1000-byte register (1024) is placed first.
  const std::vector<RegisterLifetime> registers = {
      {100, 0, 5},
      {1000, 0, 5},
      {64, 6, 7},
  };
  const MemoryLayout layout = LayOutRegisters(registers);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{1024, 0, 0}));
  EXPECT_EQ(layout.size_bytes, 1152);
  EXPECT_EQ(layout.lower_bound_bytes, 1152);
}

TEST(MemoryLayoutTest, NoTwoLiveRegistersOverlapOnARandomProblem) {
  std::vector<RegisterLifetime> registers;
  uint64_t state = 12345;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>(state >> 33);
  };
  for (int i = 0; i < 300; ++i) {
    const int64_t first = next() % 200;
    registers.push_back({1 + next() % 5000, first, first + next() % 30});
  }
  const MemoryLayout layout = LayOutRegisters(registers);
  for (size_t a = 0; a < registers.size(); ++a) {
    for (size_t b = a + 1; b < registers.size(); ++b) {
      const bool live_together =
          !(registers[a].last < registers[b].first || registers[b].last < registers[a].first);
      const bool share = layout.offsets[a] < layout.offsets[b] + AlignUp(registers[b].size_bytes) &&
                         layout.offsets[b] < layout.offsets[a] + AlignUp(registers[a].size_bytes);
      EXPECT_FALSE(live_together && share) << a << " and " << b;
    }
  }
  EXPECT_GE(layout.size_bytes, layout.lower_bound_bytes);
  // First fit by decreasing size stays close to the bound on such problems.
  EXPECT_LE(layout.size_bytes, layout.lower_bound_bytes * 13 / 10);
}

}  // namespace
}  // namespace oneflow
