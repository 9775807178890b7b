// The auto-parallel search prices each tensor-parallel all-reduce with the codec the
// compiler's boxing planner would choose under --compression (PriceOptions::compression):
// a slow link makes the edge compressed, a fast one keeps it dense, the prediction moves
// with the choice, and `oneflow inspect` prints both sides of each edge.
#include <string>
#include <vector>

#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/auto_parallel/candidate.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"
#include "tools/cli/inspect_auto_parallel.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// tp = 4 over 4 nodes of one device: every tp all-reduce crosses the inter-node link.
proto::AutoParallelLayout TensorParallelOverFourNodes() {
  proto::AutoParallelLayout layout;
  layout.set_dp(1);
  layout.set_tp(4);
  layout.set_pp(1);
  layout.set_micro_batches(1);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

// 50 us between the nodes (Ethernet), so the tensors of a small gpt are not all latency.
constexpr double kInterNodeLatency = 5e-5;

// The cluster and compression as the examples' driver gives them to the search.
examples::ParallelFlags Cluster(double inter_node_bandwidth) {
  examples::ParallelFlags flags;
  flags.nodes = 4;
  flags.devices_per_node = 1;
  flags.tp = 4;
  flags.inter_node_bandwidth = inter_node_bandwidth;
  return flags;
}

CompileOptions OptionsFor(double inter_node_bandwidth, const std::string& compression) {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(Cluster(inter_node_bandwidth));
  EXPECT_TRUE(layout.ok()) << layout.status();
  examples::CompileSettings settings;
  settings.compression.compression = compression;
  // The link flags as given on the command line (they override the layout's cluster).
  settings.links.inter_node_bandwidth = inter_node_bandwidth;
  settings.links.inter_node_bandwidth_given = true;
  settings.links.inter_node_latency = kInterNodeLatency;
  settings.links.inter_node_latency_given = true;
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  return *options;
}

proto::AutoParallelPrediction Price(const auto_parallel::ModelProfile& profile, double inter_node_bandwidth,
                                    const std::string& compression) {
  const CompileOptions compile = OptionsFor(inter_node_bandwidth, compression);
  auto_parallel::PriceOptions options;
  options.cluster = compile.cluster;
  options.compression = compile.compression;
  options.record_edges = true;
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(profile, options, TensorParallelOverFourNodes());
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return *prediction;
}

std::string InspectText(const proto::AutoParallelPrediction& chosen) {
  proto::Plan plan;
  *plan.mutable_auto_parallel()->mutable_chosen() = chosen;
  plan.mutable_auto_parallel()->set_candidates(1);
  std::string text;
  cli::AppendAutoParallelText(plan, &text);
  return text;
}

// 1 Gbit/s between the nodes, and 100 GB/s.
constexpr double kSlow = 1.25e8;
constexpr double kFast = 1e11;

TEST(AutoParallelEdgeCodecTest, ALinkSpeedFlipsEachTensorParallelEdgeBetweenCompressedAndDense) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  const proto::AutoParallelPrediction slow = Price(profile, kSlow, "auto");
  const proto::AutoParallelPrediction fast = Price(profile, kFast, "auto");
  // Per block: the attention and mlp outputs all-reduced in forward (row-parallel), the
  // normed inputs' gradients in backward (column-parallel); the vocabulary-parallel
  // embedding's output; the two blocks share a price but the last hands its output on.
  ASSERT_GE(slow.edges_size(), 5);
  ASSERT_EQ(slow.edges_size(), fast.edges_size());
  for (int i = 0; i < slow.edges_size(); ++i) {
    const proto::AutoParallelEdge& compressed = slow.edges(i);
    const proto::AutoParallelEdge& dense = fast.edges(i);
    EXPECT_EQ(compressed.tensor(), dense.tensor());
    // The activation codec of --compression=auto (rotated fp8, TACO's codec) where the
    // slow link makes it pay.
    EXPECT_EQ(compressed.codec(), "fp8e4m3 G=128 hadamard") << compressed.tensor();
    EXPECT_LT(compressed.seconds(), 0.9 * compressed.dense_seconds()) << compressed.tensor();
    EXPECT_THAT(compressed.decision(), HasSubstr(": compressed, saves ")) << compressed.tensor();
    EXPECT_EQ(dense.codec(), "") << dense.tensor();
    EXPECT_EQ(dense.seconds(), dense.dense_seconds()) << dense.tensor();
    EXPECT_THAT(dense.decision(), HasSubstr(": dense")) << dense.tensor();
  }

  // `oneflow inspect` prints both sides of each edge, and the flip.
  const std::string slow_text = InspectText(slow);
  const std::string fast_text = InspectText(fast);
  EXPECT_THAT(slow_text, HasSubstr(absl::StrCat("    tp edges priced with codecs (", slow.edges_size(),
                                                "), per micro-batch:\n")));
  const std::string first = absl::StrCat("      ", slow.edges(0).unit(), " ", slow.edges(0).tensor(), ": ");
  EXPECT_THAT(slow_text, HasSubstr(absl::StrCat(first, "fp8e4m3 G=128 hadamard ")));
  EXPECT_THAT(fast_text, HasSubstr(absl::StrCat(first, "dense ")));
  EXPECT_THAT(fast_text, Not(HasSubstr("fp8e4m3 G=128 hadamard ")));
}

TEST(AutoParallelEdgeCodecTest, TheCompressedEdgesShortenThePredictionByWhatTheySave) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  const proto::AutoParallelPrediction compressed = Price(profile, kSlow, "auto");
  const proto::AutoParallelPrediction dense = Price(profile, kSlow, "off");
  EXPECT_EQ(dense.edges_size(), 0);  // off: the dense all-reduces, nothing to choose
  EXPECT_LT(compressed.exposed_communication_seconds(), 0.7 * dense.exposed_communication_seconds());
  EXPECT_EQ(compressed.compute_seconds(), dense.compute_seconds());
}

// The search plans each distinct tp edge once and reuses its price for every layout that
// boxes the same tensor on the same group (edge_price_cache.h): the ranking, prediction
// for prediction, and the decision record are the bytes of a search that plans every
// layout's edges itself.
TEST(AutoParallelEdgeCodecTest, TheEdgeCacheGivesTheSameSearchBytesAsPlanningEveryLayout) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  auto_parallel::SearchOptions options;
  options.price.cluster = OptionsFor(kSlow, "auto").cluster;
  // 4 nodes of 2: tp groups inside a node and across the slow link, so edges of one size
  // are priced on groups whose routes differ (a key without the group would mix them).
  options.price.cluster.set_num_nodes(4);
  options.price.cluster.set_devices_per_node(2);
  options.price.compression = OptionsFor(kSlow, "auto").compression;
  options.max_micro_batches = 8;
  absl::StatusOr<auto_parallel::SearchResult> cached = auto_parallel::Search(profile, options);
  ASSERT_TRUE(cached.ok()) << cached.status();
  options.cache_edge_prices = false;
  absl::StatusOr<auto_parallel::SearchResult> uncached = auto_parallel::Search(profile, options);
  ASSERT_TRUE(uncached.ok()) << uncached.status();

  EXPECT_GT(cached->edges_planned, 0);
  EXPECT_GT(cached->edges_reused, cached->edges_planned);  // most layouts reuse
  EXPECT_EQ(uncached->edges_planned + uncached->edges_reused, 0);
  ASSERT_EQ(cached->fitting.size(), uncached->fitting.size());
  int compressed_layouts = 0;
  for (size_t i = 0; i < cached->fitting.size(); ++i) {
    EXPECT_EQ(cached->fitting[i].SerializeAsString(), uncached->fitting[i].SerializeAsString())
        << auto_parallel::LayoutName(uncached->fitting[i].layout());
  }
  const std::vector<proto::AutoParallelPrediction> none;
  EXPECT_EQ(auto_parallel::DecisionRecord(*cached, 0, 0, 5, none).SerializeAsString(),
            auto_parallel::DecisionRecord(*uncached, 0, 0, 5, none).SerializeAsString());
  // The search did price compressed edges (the cache matters only where the planner runs):
  // some of its layouts, re-priced with their edges, have a codec on one.
  auto_parallel::PriceOptions recorded = options.price;
  recorded.record_edges = true;
  for (const proto::AutoParallelPrediction& prediction : cached->fitting) {
    absl::StatusOr<proto::AutoParallelPrediction> priced =
        auto_parallel::PriceLayout(profile, recorded, prediction.layout());
    ASSERT_TRUE(priced.ok()) << priced.status();
    bool compressed = false;
    for (const proto::AutoParallelEdge& edge : priced->edges()) compressed |= !edge.codec().empty();
    compressed_layouts += compressed ? 1 : 0;
  }
  EXPECT_GT(compressed_layouts, 0);
}

TEST(AutoParallelEdgeCodecTest, ACacheMadeForOtherOptionsIsRefused) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  auto_parallel::PriceOptions options;
  options.cluster = OptionsFor(kSlow, "auto").cluster;
  const auto_parallel::PriceOptions other = options;
  auto_parallel::EdgePriceCache cache(other);
  absl::StatusOr<proto::AutoParallelPrediction> priced =
      auto_parallel::PriceLayout(profile, options, TensorParallelOverFourNodes(), &cache);
  EXPECT_EQ(priced.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(priced.status().message(), HasSubstr("EdgePriceCache made for other PriceOptions"));
}

}  // namespace
}  // namespace oneflow
