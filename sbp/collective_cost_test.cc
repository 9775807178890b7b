// Dense collectives priced as the runtime runs them, against values computed by hand
// from the formulas of sbp/collective_cost.h.
#include "sbp/collective_cost.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

// alpha 1 us in the node, 100 us across; beta 1e9 B/s in the node, 1.25e8 (1 Gbit/s) across.
constexpr LinkModel kLinks{/*intra_node_bandwidth=*/1e9, /*inter_node_bandwidth=*/1.25e8,
                           /*intra_node_latency=*/1e-6, /*inter_node_latency=*/1e-4};

TEST(CollectiveCostTest, InNodeIsOneRoundAtTheIntraNodeLinks) {
  const Placement node = *Placement::Parse("cpu{0:0-3}");
  EXPECT_EQ(RouteOf(node, 0, BoxingKind::kAllReduce), CollectiveRoute::kInNode);
  // 4000 B per member; boxing counts 2 (n-1) chunks = 6000 B received: 1 us + 6 us.
  const CollectiveCost cost = PriceDenseCollective(kLinks, node, 0, BoxingKind::kAllReduce, 4000, 6000);
  EXPECT_DOUBLE_EQ(cost.latency_seconds, 1e-6);
  EXPECT_DOUBLE_EQ(cost.wire_seconds, 6e-6);
  EXPECT_EQ(cost.text, "in-node over 4 devices, 1 round");
}

TEST(CollectiveCostTest, FlatAllReduceTakesTwoRoundsOrOneWhenSmall) {
  const Placement hosts = *Placement::Parse("cpu{0:0, 1:0, 2:0}");
  EXPECT_EQ(RouteOf(hosts, 0, BoxingKind::kAllReduce), CollectiveRoute::kFlat);
  // 1 MiB per member, 2 (n-1) ceil(262144 / 3) x 4 = 1398112 B: 2 x 100 us + 11.184896 ms.
  const CollectiveCost large = PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kAllReduce, 1 << 20, 1398112);
  EXPECT_DOUBLE_EQ(large.latency_seconds, 2e-4);
  EXPECT_DOUBLE_EQ(large.wire_seconds, 1398112 / 1.25e8);
  EXPECT_EQ(large.text, "flat across nodes over 3 devices, 2 rounds");
  // 4 KiB: the whole input to both peers in one round, 8192 B: 100 us + 65.536 us.
  const CollectiveCost small = PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kAllReduce, 4096, 5464);
  EXPECT_DOUBLE_EQ(small.latency_seconds, 1e-4);
  EXPECT_DOUBLE_EQ(small.wire_seconds, 8192 / 1.25e8);
  // The limit itself is small, one byte more is not.
  EXPECT_DOUBLE_EQ(
      PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kAllReduce, kFlatOneRoundAllReduceBytes, 0).latency_seconds,
      1e-4);
  EXPECT_DOUBLE_EQ(
      PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kAllReduce, kFlatOneRoundAllReduceBytes + 4, 0)
          .latency_seconds,
      2e-4);
  // Gathers are one round of what boxing counts.
  const CollectiveCost gather = PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kAllGather, 3000, 2000);
  EXPECT_DOUBLE_EQ(gather.seconds(), 1e-4 + 2000 / 1.25e8);
}

// 2 nodes x 2 devices listed node by node: the hierarchical communicator.
TEST(CollectiveCostTest, NodeBlocksGoHierarchical) {
  const Placement blocks = *Placement::Parse("cpu{0:0-1, 1:0-1}");
  EXPECT_EQ(RouteOf(blocks, 0, BoxingKind::kAllReduce), CollectiveRoute::kHierarchical);
  EXPECT_EQ(RouteOf(blocks, 0, BoxingKind::kAllToAll), CollectiveRoute::kFlat);
  const int64_t mib = 1 << 20;
  // all_reduce: in-node reduce-scatter and all-gather, (L-1)/L T = 512 KiB each, 2 x 1 us;
  // cross-node all-reduce of T/L = 512 KiB over 2 nodes: 2 rounds, 2 (1/2) 512 KiB.
  const CollectiveCost reduce = PriceDenseCollective(kLinks, blocks, 0, BoxingKind::kAllReduce, mib, 0);
  EXPECT_DOUBLE_EQ(reduce.latency_seconds, 2e-6 + 2e-4);
  EXPECT_DOUBLE_EQ(reduce.wire_seconds, mib / 1e9 + (mib / 2) / 1.25e8);
  EXPECT_EQ(reduce.text, "hierarchical over 2 nodes x 2: in-node 1.05 ms + cross-node 4.39 ms");
  // The flat ring the model used to charge (2 (n-1)/n T = 1.5 MiB across) is 3x the
  // cross-node bytes the runtime moves.
  EXPECT_LT(reduce.seconds(), 1.5 * mib / 1.25e8 / 2);
  // reduce_scatter: in-node (1/2) T, then cross-node (1/2) T/2.
  const CollectiveCost scatter = PriceDenseCollective(kLinks, blocks, 0, BoxingKind::kReduceScatter, mib, 0);
  EXPECT_DOUBLE_EQ(scatter.latency_seconds, 1e-6 + 1e-4);
  EXPECT_DOUBLE_EQ(scatter.wire_seconds, (mib / 2) / 1e9 + (mib / 4) / 1.25e8);
}

TEST(CollectiveCostTest, LocalKindsCostNothing) {
  const Placement hosts = *Placement::Parse("cpu{0:0, 1:0}");
  EXPECT_EQ(PriceDenseCollective(kLinks, hosts, 0, BoxingKind::kLocalSlice, 4096, 0).seconds(), 0);
}

TEST(CollectiveCostTest, ATransferBetweenNodesPaysTheMeasuredTransferLatency) {
  LinkModel links{1e9, 1e6, 1e-5, 2e-4};
  links.inter_node_transfer_latency = 1e-3;
  EXPECT_DOUBLE_EQ(TransferSeconds(links, /*crosses_nodes=*/true, 4096), 1e-3 + 4096 / 1e6);
  EXPECT_DOUBLE_EQ(TransferSeconds(links, /*crosses_nodes=*/false, 4096), 1e-5 + 4096 / 1e9);
  links.inter_node_transfer_latency.reset();
  EXPECT_DOUBLE_EQ(TransferSeconds(links, /*crosses_nodes=*/true, 4096), 2e-4 + 4096 / 1e6);
  links.inter_node_transfer_latency = -1;
  EXPECT_EQ(CheckLinkModel(links).message(),
            "link model: inter_node_transfer_latency must be a finite number of seconds >= 0, got -1");
}

}  // namespace
}  // namespace oneflow
