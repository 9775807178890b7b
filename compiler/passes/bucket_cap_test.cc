// The bucket's collective priced alone on the link and with the node link shared by the
// groups that cross it at once (bucket_cap.h), worked by hand from the formulas of
// sbp/collective_cost.h.
#include "compiler/passes/bucket_cap.h"

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"

namespace oneflow {
namespace {

// 10 GB/s and 10 us a round inside a node; 1 Gbit/s (1.25e8 B/s) and 0.5 ms across.
LinkModel Links() {
  return LinkModel{.intra_node_bandwidth = 1e10,
                   .inter_node_bandwidth = 1.25e8,
                   .intra_node_latency = 1e-5,
                   .inter_node_latency = 5e-4};
}

Placement Grid(int64_t nodes, int64_t devices_per_node, Shape hierarchy) {
  absl::StatusOr<Placement> placement = Placement::Grid(DeviceType::kCpu, nodes, devices_per_node, hierarchy);
  EXPECT_TRUE(placement.ok()) << placement.status();
  return *placement;
}

TEST(BucketCapTest, DevicesSharingNodeLink) {
  // gpt_dp3tp2: the dp rings (axis 0) of both tp ranks of a host cross its link; the tp
  // groups (axis 1) stay inside it.
  const Placement dp3tp2 = Grid(3, 2, Shape({3, 2}));
  EXPECT_EQ(DevicesSharingNodeLink(dp3tp2, 0), 2);
  EXPECT_EQ(DevicesSharingNodeLink(dp3tp2, 1), 1);
  // One device per host: the ring has the link to itself.
  EXPECT_EQ(DevicesSharingNodeLink(Grid(3, 1, Shape({3})), 0), 1);
  // A hierarchical group: one cross-node sub-ring per local index, both on the link.
  EXPECT_EQ(DevicesSharingNodeLink(Grid(2, 2, Shape({4})), 0), 2);
}

// A 3 MiB (3145728 B) bucket over the dp rings of 3 hosts x 2 devices: flat across the
// nodes, all-reduce in 2 rounds, the busiest device receiving 2(3-1)/3 x 3 MiB = 4194304
// B: alone 2 x 0.5 ms + 4194304 / 1.25e8 = 1 + 33.554432 ms; the two rings of a host share
// its link, so each gets 6.25e7 B/s: 1 + 67.108864 ms. A reduce-scatter (1 round,
// 2/3 x 3 MiB = 2097152 B): 0.5 + 16.777216 ms alone, 0.5 + 33.554432 ms shared.
TEST(BucketCapTest, TheGroupsOfAHostShareItsLink) {
  const Placement dp3tp2 = Grid(3, 2, Shape({3, 2}));
  const int64_t bytes = 3 << 20;
  EXPECT_DOUBLE_EQ(PriceBucketCollective(Links(), dp3tp2, 0, BoxingKind::kAllReduce, bytes).seconds(), 0.034554432);
  EXPECT_DOUBLE_EQ(PriceBucketCollectiveOnSharedLink(Links(), dp3tp2, 0, BoxingKind::kAllReduce, bytes).seconds(),
                   0.068108864);
  EXPECT_DOUBLE_EQ(PriceBucketCollective(Links(), dp3tp2, 0, BoxingKind::kReduceScatter, bytes).seconds(),
                   0.017277216);
  EXPECT_DOUBLE_EQ(
      PriceBucketCollectiveOnSharedLink(Links(), dp3tp2, 0, BoxingKind::kReduceScatter, bytes).seconds(),
      0.034054432);
  // The tp axis stays in the node: 1 round of 2(2-1)/2 x 3 MiB at 10 GB/s, shared or not.
  EXPECT_DOUBLE_EQ(PriceBucketCollectiveOnSharedLink(Links(), dp3tp2, 1, BoxingKind::kAllReduce, bytes).seconds(),
                   1e-5 + 3145728 / 1e10);
}

// A hierarchical all-reduce of 4 MiB over 2 nodes x 2: in-node reduce-scatter and
// all-gather (2 rounds of 10 us, 2 x 2 MiB at 10 GB/s = 0.4394304 ms), cross-node a flat
// all-reduce of 2 MiB between 2 nodes (2 rounds of 0.5 ms + 2 MiB at the link's rate:
// 16.777216 ms alone; both local indices' sub-rings cross at once: 33.554432 ms).
TEST(BucketCapTest, AHierarchicalGroupsSubRingsShareTheLink) {
  const Placement four = Grid(2, 2, Shape({4}));
  const int64_t bytes = 4 << 20;
  EXPECT_DOUBLE_EQ(PriceBucketCollective(Links(), four, 0, BoxingKind::kAllReduce, bytes).seconds(),
                   0.0004394304 + 0.017777216);
  EXPECT_DOUBLE_EQ(PriceBucketCollectiveOnSharedLink(Links(), four, 0, BoxingKind::kAllReduce, bytes).seconds(),
                   0.0004394304 + 0.034554432);
}

}  // namespace
}  // namespace oneflow
