// The node-crossing gradient reductions left when backward ends, issued in the order the
// next forward needs them (compiler/passes/reduction_tail_order.h): which ones the cost
// model puts in the tail, their order and reasons, the backward order with the option
// off, a plan the verifier accepts, and losses equal to the backward order's and to one
// device's.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "plan/plan_verifier.h"
#include "tests/gpt_plan.h"
#include "tests/plan_losses.h"
#include "tools/cli/inspect.h"

namespace oneflow {
namespace {

// The gpt of bench/auto_parallel/prediction_hosts_bench.sh at dp = `nodes` over that many
// hosts x 1 device, compiled as `examples/gpt/gpt --compression=off` compiles it (as in
// docs/gradient_buckets.md), on 200 Mbit/s links (55.3 us a round, as session 45 measured
// between 3 emulated hosts) and 0.25 MiB buckets: a dozen node-crossing reductions an
// iteration, the link slower than backward at the compiler's default compute rates.
// With `tp` > 1, each host has tp devices and the layout is dp = nodes x tp.
proto::Plan CompileAcrossHosts(const examples::GptConfig& config, int64_t nodes, bool reorder, double bucket_mb = 0.25,
                               double bandwidth = 25e6, int64_t zero = 0, int64_t tp = 1) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = tp;
  flags.dp = nodes;
  flags.tp = tp;
  flags.zero = zero;
  flags.inter_node_bandwidth = bandwidth;
  examples::CompileSettings settings;
  settings.links.inter_node_bandwidth = bandwidth;
  settings.links.inter_node_bandwidth_given = true;
  settings.links.inter_node_latency = 55.2975e-6;
  settings.links.inter_node_latency_given = true;
  settings.bucket_mb = bucket_mb;
  settings.bucket_mb_given = true;
  settings.reduction_tail = reorder ? "next_forward" : "backward";
  settings.compression.compression = "off";
  return testing::CompileGptPlan(config, flags, settings);
}

// Device 0's node-crossing collectives in its order: "tensor" or "tensor [tail N]".
std::vector<std::string> CrossingOrder(const proto::Plan& plan) {
  std::vector<std::string> order;
  for (int64_t id : plan.devices(0).collective_order()) {
    const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(id));
    if (collective.group(0).node() == collective.group(1).node()) continue;
    std::string text = collective.tensor();
    const size_t at = collective.reason().find("tail order: ");
    if (at != std::string::npos) {
      text += absl::StrCat(" [tail ", collective.reason().substr(at + 12, collective.reason().find(' ', at + 12) - at - 12),
                           "]");
    }
    order.push_back(text);
  }
  return order;
}

// The reason of device 0's collective of `tensor` ("bucket_12").
std::string ReasonOf(const proto::Plan& plan, const std::string& tensor) {
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    if (collective.tensor() == tensor) return collective.reason();
  }
  return "";
}

// At the compiler's default compute rates the 13 buckets' link time (about 150 ms) is
// far longer than backward (about 20 ms): every bucket from the third on is modelled to
// start after the last gradient exists, so those 11 go in the order the next forward reads
// their parameters. bucket_12 holds the gradients backward produces last (the embeddings'
// and block 0's) and goes first; the others follow block by block, which is backward's
// order reversed. With the option off, backward's order.
TEST(ReductionTailOrderTest, TheBenchGptOverThreeHostsIssuesItsTailAsTheNextForwardNeedsIt) {
  const proto::Plan reordered = CompileAcrossHosts(testing::HostsBenchGpt(), 3, true);
  const proto::Plan backward = CompileAcrossHosts(testing::HostsBenchGpt(), 3, false);
  ASSERT_TRUE(VerifyPlan(reordered).ok()) << VerifyPlan(reordered);
  EXPECT_EQ(absl::StrJoin(CrossingOrder(reordered), "\n"),
            "bucket_0\nbucket_1\nbucket_12 [tail 1]\nbucket_11 [tail 2]\nbucket_10 [tail 3]\nbucket_9 [tail 4]\n"
            "bucket_8 [tail 5]\nbucket_7 [tail 6]\nbucket_6 [tail 7]\nbucket_5 [tail 8]\nbucket_4 [tail 9]\n"
            "bucket_3 [tail 10]\nbucket_2 [tail 11]");
  EXPECT_EQ(absl::StrJoin(CrossingOrder(backward), "\n"),
            "bucket_0\nbucket_1\nbucket_2\nbucket_3\nbucket_4\nbucket_5\nbucket_6\nbucket_7\nbucket_8\n"
            "bucket_9\nbucket_10\nbucket_11\nbucket_12");
  EXPECT_TRUE(absl::StrContains(ReasonOf(reordered, "bucket_12"), "; tail order: 1 of the 11 node-crossing reductions left when backward ends (modelled "))
      << ReasonOf(reordered, "bucket_12");
  EXPECT_TRUE(absl::StrContains(ReasonOf(reordered, "bucket_12"), "): the next forward reads wte at op "))
      << ReasonOf(reordered, "bucket_12");
  EXPECT_EQ(ReasonOf(backward, "bucket_12").find("tail order"), std::string::npos) << ReasonOf(backward, "bucket_12");
  // `oneflow inspect` marks the bucket with it.
  absl::StatusOr<std::string> text = cli::InspectPlan(reordered, cli::InspectOptions());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "collective 2\n    limit 256.00 KiB (262144 B): --bucket_mb (given)\n"
                                       "    issued: tail order: 1 of the 11 node-crossing reductions left when backward ends"))
      << *text;
  // The same bytes cross the links either way.
  EXPECT_EQ(reordered.devices(0).bytes_sent_per_iter(), backward.devices(0).bytes_sent_per_iter());
}

// dp = 3 across 3 hosts x tp = 2 (distributed_bench.sh's gpt_dp3tp2 layout, a smaller
// gpt): the gradients of the tp-split weights reduce by one bucket over the nodes each, and
// those of the replicated ones (layer norms, the embeddings, the attention's output
// projections, ...) by a 2-D chain: an in-node reduce-scatter bucket, a node-crossing
// all-reduce bucket, an in-node all-gather. The last chain's node-crossing bucket holds
// wte's gradient, produced last, and its in-node level is issued after the tail's other
// reductions were met. It must still go first, and the tail in the order its reasons give:
// before session 68 the in-node level cut the tail there, the held ones went in need
// order and the wte bucket last, while each reason still named the intended place (the
// 1 of N was missing), and the next forward waited for the whole tail (gpt_dp3tp2 at 1
// Gbit/s: 265 ms after backward against 117 ms).
TEST(ReductionTailOrderTest, ATwoDimensionalChainsNodeCrossingLevelTakesItsPlaceInTheTail) {
  examples::GptConfig gpt;
  gpt.layers = 4;
  gpt.hidden = 128;
  gpt.heads = 4;
  gpt.seq = 32;
  gpt.batch = 12;
  gpt.vocab = 256;
  const proto::Plan plan = CompileAcrossHosts(gpt, 3, true, /*bucket_mb=*/0.25, /*bandwidth=*/1.25e7, /*zero=*/0,
                                              /*tp=*/2);
  ASSERT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  EXPECT_EQ(absl::StrJoin(CrossingOrder(plan), "\n"),
            "bucket_0\nbucket_13 [tail 1]\nbucket_9 [tail 2]\nbucket_4 [tail 3]\nbucket_11 [tail 4]\nbucket_7 [tail 5]\n"
            "bucket_5 [tail 6]\nbucket_2 [tail 7]");
  EXPECT_TRUE(absl::StrContains(ReasonOf(plan, "bucket_13"), "): a step on another stream follows it")) << ReasonOf(plan, "bucket_13");
  // bucket_13 is the wte chain's node-crossing level; bucket_12, its in-node level, is
  // issued before it on the other stream.
  EXPECT_TRUE(absl::StrContains(ReasonOf(plan, "bucket_13"), "wte_grad/")) << ReasonOf(plan, "bucket_13");
  EXPECT_TRUE(absl::StrContains(ReasonOf(plan, "bucket_12"), "wte_grad/")) << ReasonOf(plan, "bucket_12");
}

// A link that keeps up with backward (10 GB/s: each bucket about 0.2 ms) leaves no tail:
// backward's order.
TEST(ReductionTailOrderTest, ALinkFasterThanBackwardLeavesBackwardsOrder) {
  const proto::Plan plan = CompileAcrossHosts(testing::HostsBenchGpt(), 3, true, /*bucket_mb=*/0.25, /*bandwidth=*/1e10);
  EXPECT_EQ(CrossingOrder(plan).size(), 13u);
  for (const std::string& collective : CrossingOrder(plan)) {
    EXPECT_EQ(collective.find("[tail"), std::string::npos) << collective;
  }
}

// Under ZeRO the parameters' all-gathers follow every reduction on the same stream, so
// the next forward waits for the whole stream whatever the reductions' order: none is
// reordered (the same links and buckets as the first test, where eleven are).
TEST(ReductionTailOrderTest, ZeroKeepsBackwardsOrder) {
  for (int64_t zero : {1, 2, 3}) {
    const proto::Plan plan = CompileAcrossHosts(testing::HostsBenchGpt(), 3, true, 0.25, 25e6, zero);
    ASSERT_GT(plan.collectives_size(), 0) << "zero " << zero;
    for (const std::string& collective : CrossingOrder(plan)) {
      EXPECT_EQ(collective.find("[tail"), std::string::npos) << "zero " << zero << ": " << collective;
    }
  }
}

// The order changes when the reductions run, not what they compute: the reordered plan
// trains exactly like backward's order and like one device (1e-4 relative).
TEST(ReductionTailOrderTest, TheReorderedPlanTrainsLikeBackwardsOrderAndOneDevice) {
  const examples::GptConfig gpt = testing::TinyTrainingGpt(3);
  constexpr int64_t kIterations = 4;
  // A 2 MB/s link: the reordered tail ends the modelled next forward sooner.
  const proto::Plan reordered = CompileAcrossHosts(gpt, 3, true, /*bucket_mb=*/0.05, /*bandwidth=*/2e6);
  int tail = 0;
  for (const std::string& collective : CrossingOrder(reordered)) tail += collective.find("[tail") != std::string::npos;
  ASSERT_GE(tail, 2) << absl::StrJoin(CrossingOrder(reordered), ", ");
  const std::vector<float> one_device = testing::TrainedLosses(CompileAcrossHosts(gpt, 1, true), kIterations);
  const std::vector<float> backward =
      testing::TrainedLosses(CompileAcrossHosts(gpt, 3, false, 0.05, 2e6), kIterations);
  const std::vector<float> losses = testing::TrainedLosses(reordered, kIterations);
  ASSERT_EQ(losses.size(), kIterations);
  EXPECT_EQ(losses, backward);
  testing::ExpectLossesNear(losses, one_device, 1e-4, "reordered tail, dp = 3");
}

}  // namespace
}  // namespace oneflow
