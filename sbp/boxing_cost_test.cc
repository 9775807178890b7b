// Particular plans, their step kinds and their bytes, computed by hand from the
// formulas in docs/sbp_and_boxing.md (largest balanced part, n-1 rounds).
#include <string>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing.h"

namespace oneflow {
namespace {

const Shape kLogical{5, 7};  // 35 f32 elements, 140 bytes.
const LinkModel kLinks{/*intra_node_bandwidth=*/1e9, /*inter_node_bandwidth=*/1e8};

std::string Plan(const std::string& src, const std::string& src_placement, const std::string& dst,
                 const std::string& dst_placement, const LinkModel& links = kLinks,
                 const BoxingOptions& options = BoxingOptions()) {
  absl::StatusOr<BoxingPlan> plan =
      PlanBoxing(kLogical, DType::kF32, *NdSbp::Parse(src), *Placement::Parse(src_placement),
                 *NdSbp::Parse(dst), *Placement::Parse(dst_placement), links, options);
  if (!plan.ok()) return std::string(plan.status().ToString());
  return BoxingPlanToString(*plan);
}

std::string Plan1D(const std::string& src, const std::string& dst) {
  return Plan(src, "cpu{0:0-3}", dst, "cpu{0:0-3}");
}

TEST(BoxingCostTest, CanonicalOneDimensionalConversions) {
  // n = 4. P -> B: ring all-reduce of 35 elements in chunks of ceil(35/4) = 9:
  // 2 * 3 * 9 = 54 elements = 216 bytes.
  EXPECT_EQ(Plan1D("P", "B"), "all_reduce axis 0: P -> B, 216 bytes/device");
  // P -> S(0): 3 rounds of the largest row block, ceil(5/4) = 2 rows x 7 = 14: 42 = 168 B.
  EXPECT_EQ(Plan1D("P", "S(0)"), "reduce_scatter axis 0: P -> S(0), 168 bytes/device");
  // P -> S(1): 3 rounds of 5 rows x ceil(7/4) = 2 columns: 30 elements = 120 bytes.
  EXPECT_EQ(Plan1D("P", "S(1)"), "reduce_scatter axis 0: P -> S(1), 120 bytes/device");
  EXPECT_EQ(Plan1D("S(0)", "B"), "all_gather axis 0: S(0) -> B, 168 bytes/device");
  EXPECT_EQ(Plan1D("S(1)", "B"), "all_gather axis 0: S(1) -> B, 120 bytes/device");
  // S(0) -> S(1): 3 rounds of a 2 x 2 block: 12 elements = 48 bytes.
  EXPECT_EQ(Plan1D("S(0)", "S(1)"), "all_to_all axis 0: S(0) -> S(1), 48 bytes/device");
  EXPECT_EQ(Plan1D("B", "S(0)"), "local_slice axis 0: B -> S(0), 0 bytes/device");
  EXPECT_EQ(Plan1D("B", "P"), "local_partial axis 0: B -> P, 0 bytes/device");
  EXPECT_EQ(Plan1D("S(1)", "P"), "split_to_partial axis 0: S(1) -> P, 0 bytes/device");
  EXPECT_EQ(Plan1D("S(0)", "S(0)"), "");
  EXPECT_EQ(Plan1D("P", "P"), "");
}

TEST(BoxingCostTest, SecondsAreBytesOverTheAxisBandwidth) {
  const Placement one_node = *Placement::Parse("cpu{0:0-3}");
  const Placement two_nodes = *Placement::Parse("cpu{0:0-1, 1:0-1}");
  const NdSbp partial = *NdSbp::Parse("P");
  const NdSbp broadcast = *NdSbp::Parse("B");
  absl::StatusOr<BoxingPlan> inside =
      PlanBoxing(kLogical, DType::kF32, partial, one_node, broadcast, one_node, kLinks);
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_DOUBLE_EQ(inside->seconds, 216 / 1e9);
  EXPECT_EQ(inside->bytes_per_device, 216);
  absl::StatusOr<BoxingPlan> across =
      PlanBoxing(kLogical, DType::kF32, partial, two_nodes, broadcast, two_nodes, kLinks);
  ASSERT_TRUE(across.ok()) << across.status();
  // Across 2 nodes x 2 devices the runtime runs it hierarchically (sbp/collective_cost.h):
  // 140 B per member, in-node reduce-scatter + all-gather 2 x 70 B at 1e9, cross-node
  // all-reduce of the 70 B shard in one round (small) at 1e8; not the flat ring's 216 B
  // across.
  EXPECT_DOUBLE_EQ(across->seconds, 140 / 1e9 + 70 / 1e8);
  const Placement hosts = *Placement::Parse("cpu{0:0, 1:0, 2:0, 3:0}");
  absl::StatusOr<BoxingPlan> flat = PlanBoxing(kLogical, DType::kF32, partial, hosts, broadcast, hosts, kLinks);
  ASSERT_TRUE(flat.ok()) << flat.status();
  // One device per node: flat. A small all-reduce sends the whole 140 B to each of the 3
  // peers in one round (420 B); without latency a reduce-scatter to S(1) (2 columns x 5
  // rows from each of 3 peers, 120 B) and an all-gather (120 B) are cheaper: 240 B.
  EXPECT_EQ(BoxingPlanToString(*flat),
            "reduce_scatter axis 0: P -> S(1), 120 bytes/device\nall_gather axis 0: S(1) -> B, 120 bytes/device");
  EXPECT_DOUBLE_EQ(flat->seconds, 240 / 1e8);
  // With 100 us per round the one-round all-reduce wins: 100 us + 420 B, not 200 us + 240 B.
  const LinkModel slow_rounds{kLinks.intra_node_bandwidth, kLinks.inter_node_bandwidth, 0, 1e-4};
  flat = PlanBoxing(kLogical, DType::kF32, partial, hosts, broadcast, hosts, slow_rounds);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(BoxingPlanToString(*flat), "all_reduce axis 0: P -> B, 216 bytes/device");
  EXPECT_DOUBLE_EQ(flat->seconds, 1e-4 + 420 / 1e8);
  EXPECT_NE(across->steps[0].reason.find("across nodes"), std::string::npos)
      << across->steps[0].reason;
}

TEST(BoxingCostTest, OneDeviceAxisIsARelabel) {
  EXPECT_EQ(Plan("P", "cpu{0:0}", "S(1)", "cpu{0:0}"),
            "identity axis 0: P -> S(1), 0 bytes/device");
}

TEST(BoxingCostTest, DtypeScalesBytes) {
  absl::StatusOr<BoxingPlan> plan =
      PlanBoxing(kLogical, DType::kBF16, *NdSbp::Parse("P"), *Placement::Parse("cpu{0:0-3}"),
                 *NdSbp::Parse("B"), *Placement::Parse("cpu{0:0-3}"), kLinks);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes_per_device, 54 * 2);
}

// 2 nodes x 4 devices, inter-node links 10x slower: [P, P] -> [B, B] becomes the
// hierarchical all-reduce. Reduce-scatter inside nodes to S(1) (3 rounds of 5 x 2 = 30
// elements, 120 bytes), all-reduce the [5, 2] quarter across nodes (E = 10, n = 2:
// 2 * 1 * 5 = 10 elements, 40 bytes), all-gather inside nodes (120 bytes).
// Two flat all-reduces would send 144 bytes across nodes instead of 40.
TEST(BoxingCostTest, TwoDimensionalAllReduceKeepsTrafficInsideNodes) {
  const std::string grid = "cpu{0:0-3, 1:0-3}[2, 4]";
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 120 bytes/device\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 40 bytes/device\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 120 bytes/device");
  absl::StatusOr<BoxingPlan> plan =
      PlanBoxing(kLogical, DType::kF32, *NdSbp::Parse("[P, P]"), *Placement::Parse(grid),
                 *NdSbp::Parse("[B, B]"), *Placement::Parse(grid), kLinks);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan->seconds, 120 / 1e9 + 40 / 1e8 + 120 / 1e9);
}

// With the fast and slow links swapped, the big steps run across nodes (now fast) and
// only the small part goes over the slow intra-node links: reduce-scatter across nodes
// to S(1) (1 round of 5 x 4 = 20 elements, 80 bytes), all-reduce the [5, 4] half inside
// nodes (E = 20, n = 4: 2 * 3 * 5 = 30 elements, 120 bytes), all-gather across nodes.
TEST(BoxingCostTest, SwappedBandwidthsSwapTheAxes) {
  const std::string grid = "cpu{0:0-3, 1:0-3}[2, 4]";
  const LinkModel slow_inside{/*intra_node_bandwidth=*/1e8, /*inter_node_bandwidth=*/1e9};
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, slow_inside),
            "reduce_scatter axis 0: [P, P] -> [S(1), P], 80 bytes/device\n"
            "all_reduce axis 1: [S(1), P] -> [S(1), B], 120 bytes/device\n"
            "all_gather axis 0: [S(1), B] -> [B, B], 80 bytes/device");
}

// Neither axis of [S(0), S(1)] -> [S(1), S(0)] can change directly: each would re-split
// a tensor axis that the other axis splits inside it. On [2, 2]: gather rows over the
// outer axis (each group holds 4 columns; 1 round of 3 x 4 = 12 elements, 48 bytes),
// all-to-all columns to rows over the inner axis on the [5, 7] tensor (1 round of a
// 3 x 4 block, 48 bytes), then slice columns locally. Gathering the inner axis first
// costs the same; the route through P (split to partial, reduce-scatter) also does, but
// loses the tie because it reduces.
TEST(BoxingCostTest, TransposedTwoDimensionalSplitGoesThroughAnIntermediate) {
  const std::string grid = "cpu{0:0-3}[2, 2]";
  EXPECT_EQ(Plan("[S(0), S(1)]", grid, "[S(1), S(0)]", grid),
            "all_gather axis 0: [S(0), S(1)] -> [B, S(1)], 48 bytes/device\n"
            "all_to_all axis 1: [B, S(1)] -> [B, S(0)], 48 bytes/device\n"
            "local_slice axis 0: [B, S(0)] -> [S(1), S(0)], 0 bytes/device");
}

// [S(0), S(0)] -> [B, S(0)]: the outer axis cannot gather while the inner one splits the
// same rows. The obvious route, gather inner (1 round of 2 x 7, 56 bytes), gather outer
// (1 round of 3 x 7, 84 bytes), slice (0): 140 bytes. The search finds a cheaper one
// by moving the inner split out of the way onto columns: all-to-all inside each row
// half [3, 7] (1 round of a 2 x 4 block, 32 bytes), gather rows over the outer axis
// (1 round of 3 x 4, 48 bytes), all-to-all back to rows on [5, 7] (1 round of a 3 x 4
// block, 48 bytes): 128 bytes.
TEST(BoxingCostTest, NestedSplitMovesTheInnerSplitAside) {
  const std::string grid = "cpu{0:0-3}[2, 2]";
  EXPECT_EQ(Plan("[S(0), S(0)]", grid, "[B, S(0)]", grid),
            "all_to_all axis 1: [S(0), S(0)] -> [S(0), S(1)], 32 bytes/device\n"
            "all_gather axis 0: [S(0), S(1)] -> [B, S(1)], 48 bytes/device\n"
            "all_to_all axis 1: [B, S(1)] -> [B, S(0)], 48 bytes/device");
}

TEST(BoxingCostTest, CompressionShrinksNodeCrossingStepsOnly) {
  const std::string grid = "cpu{0:0-3, 1:0-3}[2, 4]";
  BoxingOptions options = BoxingOptions::Everywhere({CompressionKind::kFp8E4M3, 128, false});
  options.compress_intra_node = false;
  // The 10-element inter-node all-reduce: 10 one-byte values + one 4-byte scale.
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, kLinks, options),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 120 bytes/device\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 14 bytes/device (fp8e4m3 G=128)\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 120 bytes/device");
  options = BoxingOptions::Everywhere({CompressionKind::kInt4, 128, false});
  // Inside a node too: 30 elements = 15 payload bytes + 4 = 19; 10 elements = 5 + 4 = 9.
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, kLinks, options),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 19 bytes/device (int4 G=128)\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 9 bytes/device (int4 G=128)\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 19 bytes/device (int4 G=128)");
}

// Automatic: a step compresses only where the link time it saves exceeds the codec's
// time. A [2, 4] grid, [P, P] -> [B, B] of [5, 7] f32: the inter-node all-reduce moves
// 10 elements (40 bytes dense, 14 as fp8), the codec passes over the 40 dense bytes.
TEST(BoxingCostTest, AutomaticCompressesOnlyWhereTheLinkIsSlowEnough) {
  const std::string grid = "cpu{0:0-3, 1:0-3}[2, 4]";
  BoxingOptions options = BoxingOptions::Everywhere({CompressionKind::kFp8E4M3, 128, false});
  options.automatic = true;
  options.codec_throughput = CodecThroughput::Uniform(1e9);  // 40 bytes: 40 ns of codec.
  // Inter-node at 1e9 B/s: 40 ns dense vs 14 ns + 40 ns: stays dense. Inside nodes
  // (100e9 B/s) the codec never pays.
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, LinkModel{100e9, 1e9}, options),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 120 bytes/device\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 40 bytes/device\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 120 bytes/device");
  // Inter-node at 1e8 B/s: 400 ns dense vs 140 ns + 40 ns: compresses, and only there.
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, LinkModel{100e9, 1e8}, options),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 120 bytes/device\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 14 bytes/device (fp8e4m3 G=128)\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 120 bytes/device");
  // A slower codec (10 bytes/us: 4 us) no longer pays even there.
  options.codec_throughput = CodecThroughput::Uniform(1e7);
  EXPECT_EQ(Plan("[P, P]", grid, "[B, B]", grid, LinkModel{100e9, 1e8}, options),
            "reduce_scatter axis 1: [P, P] -> [P, S(1)], 120 bytes/device\n"
            "all_reduce axis 0: [P, S(1)] -> [B, S(1)], 40 bytes/device\n"
            "all_gather axis 1: [B, S(1)] -> [B, B], 120 bytes/device");
}

TEST(BoxingCostTest, SendRecvMovesOnlyTheDestinationSlices) {
  // 5 rows over 3 destination devices: 2, 2, 1 rows; the busiest receives 2 x 7 = 14.
  EXPECT_EQ(Plan("S(0)", "cpu{0:0-1}", "S(0)", "cpu{0:2-4}"),
            "send_recv: S(0) -> S(0), 56 bytes/device");
  // Same devices re-shaped: [4] rows 2,1,1,1 equal [2, 2] nested rows 2,1 | 1,1.
  EXPECT_EQ(Plan("S(0)", "cpu{0:0-3}", "[S(0), S(0)]", "cpu{0:0-3}[2, 2]"),
            "send_recv: S(0) -> [S(0), S(0)], 0 bytes/device");
}

TEST(BoxingCostTest, SendRecvAcrossNodesScattersThenGathersInside) {
  // Broadcast to all 4 devices of another node: sending each the whole 140 bytes over
  // the slow link takes 1.4 us; sending each 5 x 2 columns (40 bytes, 0.4 us) and
  // all-gathering inside the node (3 x 10 elements = 120 bytes, 0.12 us) is faster.
  EXPECT_EQ(Plan("B", "cpu{0:0-3}", "B", "cpu{1:0-3}"),
            "send_recv: B -> S(1), 40 bytes/device\n"
            "all_gather axis 0: S(1) -> B, 120 bytes/device");
}

TEST(BoxingCostTest, PartialSourceIsReducedBeforeSending) {
  // Reduce-scatter to columns (1 round of 5 x 4 = 20 elements, 80 bytes), then each
  // destination device fetches the whole tensor (35 elements, 140 bytes).
  EXPECT_EQ(Plan("P", "cpu{0:0-1}", "B", "cpu{0:2-3}"),
            "reduce_scatter axis 0: P -> S(1), 80 bytes/device\n"
            "send_recv: S(1) -> B, 140 bytes/device");
}

}  // namespace
}  // namespace oneflow
