#include "sbp/link_model.h"

#include <limits>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(LinkModelTest, NodeMajorGridCrossesNodesOnTheOuterAxisOnly) {
  const Placement grid = *Placement::Parse("cpu{0:0-3, 1:0-3}[2, 4]");
  EXPECT_TRUE(AxisCrossesNodes(grid, 0));
  EXPECT_FALSE(AxisCrossesNodes(grid, 1));
  const LinkModel links{/*intra_node_bandwidth=*/100, /*inter_node_bandwidth=*/10};
  EXPECT_EQ(AxisBandwidth(links, grid, 0), 10);
  EXPECT_EQ(AxisBandwidth(links, grid, 1), 100);
}

TEST(LinkModelTest, AnAxisCrossesNodesWhenAnyOfItsGroupsDoes) {
  // [4, 2] over 2 nodes of 4: inner pairs (0,1) (2,3) (4,5) (6,7) share a node; outer
  // groups {0, 2, 4, 6} span both nodes.
  const Placement tall = *Placement::Parse("cpu{0:0-3, 1:0-3}[4, 2]");
  EXPECT_TRUE(AxisCrossesNodes(tall, 0));
  EXPECT_FALSE(AxisCrossesNodes(tall, 1));
  // 1-D over two nodes, and over one node.
  EXPECT_TRUE(AxisCrossesNodes(*Placement::Parse("cpu{0:0-1, 1:0-1}"), 0));
  EXPECT_FALSE(AxisCrossesNodes(*Placement::Parse("cuda{0:0-7}"), 0));
  // Node-minor order 0:0 1:0 0:1 1:1 as [2, 2]: now the inner axis crosses nodes.
  const Placement node_minor = *Placement::Parse("cpu{0:0, 1:0, 0:1, 1:1}[2, 2]");
  EXPECT_FALSE(AxisCrossesNodes(node_minor, 0));
  EXPECT_TRUE(AxisCrossesNodes(node_minor, 1));
}

// Two-level collectives need each group as equal runs of > 1 devices on > 1 nodes,
// listed node by node.
TEST(LinkModelTest, NodeBlocksOfAnAxis) {
  const std::optional<NodeBlocks> flat = AxisNodeBlocks(*Placement::Parse("cpu{0:0-1, 1:0-1}"), 0);
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(flat->nodes, 2);
  EXPECT_EQ(flat->per_node, 2);
  // [4, 2] over 2 nodes of 4: outer groups {0, 2, 4, 6} are 2 devices on each node.
  const std::optional<NodeBlocks> tall = AxisNodeBlocks(*Placement::Parse("cpu{0:0-3, 1:0-3}[4, 2]"), 0);
  ASSERT_TRUE(tall.has_value());
  EXPECT_EQ(tall->nodes, 2);
  EXPECT_EQ(tall->per_node, 2);
  const Placement grid = *Placement::Parse("cpu{0:0-1, 1:0-1}[2, 2]");
  EXPECT_FALSE(AxisNodeBlocks(grid, 0).has_value());  // One device per node.
  EXPECT_FALSE(AxisNodeBlocks(grid, 1).has_value());  // Inside one node.
  // Uneven: 3 devices on node 0, 1 on node 1.
  EXPECT_FALSE(AxisNodeBlocks(*Placement::Parse("cpu{0:0-2, 1:0}"), 0).has_value());
  // Interleaved 0:0 1:0 0:1 1:1: runs of one device that return to node 0.
  EXPECT_FALSE(AxisNodeBlocks(*Placement::Parse("cpu{0:0, 1:0, 0:1, 1:1}"), 0).has_value());
  // Back to node 0 after node 1, in runs of two.
  EXPECT_FALSE(AxisNodeBlocks(*Placement::Parse("cpu{0:0-1, 1:0-1, 0:2-3}"), 0).has_value());
}

TEST(LinkModelTest, PairBandwidthDependsOnNodes) {
  const LinkModel links{/*intra_node_bandwidth=*/100, /*inter_node_bandwidth=*/10};
  EXPECT_EQ(PairBandwidth(links, DeviceId{0, 0}, DeviceId{0, 3}), 100);
  EXPECT_EQ(PairBandwidth(links, DeviceId{0, 0}, DeviceId{1, 0}), 10);
}

TEST(LinkModelTest, RejectsNonPositiveOrInfiniteBandwidth) {
  EXPECT_TRUE(CheckLinkModel(LinkModel{1e9, 1e8}).ok());
  const absl::Status zero = CheckLinkModel(LinkModel{1e9, 0});
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(zero.message(),
            "link model: inter_node_bandwidth must be a finite number of bytes/s > 0, got 0");
  EXPECT_EQ(CheckLinkModel(LinkModel{-1, 1}).message(),
            "link model: intra_node_bandwidth must be a finite number of bytes/s > 0, got -1");
  EXPECT_EQ(CheckLinkModel(LinkModel{std::numeric_limits<double>::infinity(), 1}).message(),
            "link model: intra_node_bandwidth must be a finite number of bytes/s > 0, got inf");
}

}  // namespace
}  // namespace oneflow
