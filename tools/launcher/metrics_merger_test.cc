#include "tools/launcher/metrics_merger.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow::launcher {
namespace {

proto::IterationMetrics Metrics(int64_t iteration, double loss, double step_ms) {
  proto::IterationMetrics metrics;
  metrics.set_iteration(iteration);
  metrics.set_loss(loss);
  metrics.set_step_ms(step_ms);
  metrics.set_samples_per_s(1);
  return metrics;
}

TEST(MetricsMergerTest, IterationCompletesWhenEveryNodeReported) {
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/64);
  EXPECT_TRUE(merger.Add(1, Metrics(0, 9.0, 8.0)).empty());
  EXPECT_TRUE(merger.Add(1, Metrics(1, 9.0, 4.0)).empty());  // Node 1 runs ahead.
  const std::vector<proto::IterationMetrics> first = merger.Add(0, Metrics(0, 2.5, 5.0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].iteration(), 0);
  EXPECT_EQ(first[0].loss(), 2.5);     // Node 0's loss.
  EXPECT_EQ(first[0].step_ms(), 8.0);  // The slowest node's step.
  EXPECT_DOUBLE_EQ(first[0].samples_per_s(), 64 * 1000.0 / 8.0);
  // Each node's own step, by node rank.
  ASSERT_EQ(first[0].node_step_ms().size(), 2u);
  EXPECT_EQ(first[0].node_step_ms().at(0), 5.0);
  EXPECT_EQ(first[0].node_step_ms().at(1), 8.0);
  const std::vector<proto::IterationMetrics> second = merger.Add(0, Metrics(1, 2.0, 6.0));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].iteration(), 1);
  EXPECT_EQ(second[0].step_ms(), 6.0);
}

// Node 1's daemon dropped iteration 1 (a client that read too slowly): once node 1
// reported iteration 2, iteration 1 is given up and 2 comes out; nothing waits for 1.
TEST(MetricsMergerTest, AnIterationANodeSkippedIsGivenUp) {
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/64);
  EXPECT_EQ(merger.Add(0, Metrics(0, 3.0, 1.0)).size(), 0u);
  EXPECT_EQ(merger.Add(1, Metrics(0, 3.0, 1.0)).size(), 1u);
  EXPECT_TRUE(merger.Add(0, Metrics(1, 2.9, 1.0)).empty());
  EXPECT_TRUE(merger.Add(0, Metrics(2, 2.8, 1.0)).empty());  // Node 1 may still send 1.
  const std::vector<proto::IterationMetrics> out = merger.Add(1, Metrics(2, 2.8, 2.0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].iteration(), 2);
  EXPECT_EQ(out[0].step_ms(), 2.0);
  // Iterations that every node skipped (3, 4) are passed over too.
  EXPECT_TRUE(merger.Add(0, Metrics(5, 2.5, 1.0)).empty());
  const std::vector<proto::IterationMetrics> later = merger.Add(1, Metrics(5, 2.5, 1.0));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].iteration(), 5);
  // A late report of a given-up iteration is ignored.
  EXPECT_TRUE(merger.Add(1, Metrics(1, 2.9, 1.0)).empty());
}

proto::CodecMetrics Codec(const std::string& key, double error_sq, double signal_sq, int64_t wire, int64_t dense) {
  proto::CodecMetrics codec;
  codec.set_codec(key);
  codec.set_error_sq(error_sq);
  codec.set_signal_sq(signal_sq);
  codec.set_wire_bytes(wire);
  codec.set_dense_bytes(dense);
  return codec;
}

// Each node sends its devices' sums; the job's line is their sum per codec, so its error
// is the error of everything encoded anywhere (not an average of the nodes' errors).
TEST(MetricsMergerTest, CompressionSumsOverNodesPerCodec) {
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/64);
  proto::IterationMetrics node0 = Metrics(0, 2.5, 5.0), node1 = Metrics(0, 2.5, 6.0);
  *node0.add_compression() = Codec("int4/128", 0.01, 1.0, 100, 800);
  *node0.add_compression() = Codec("int8/512", 1e-4, 1.0, 50, 200);
  *node1.add_compression() = Codec("int4/128", 0.03, 3.0, 120, 960);
  EXPECT_TRUE(merger.Add(1, node1).empty());
  const std::vector<proto::IterationMetrics> merged = merger.Add(0, node0);
  ASSERT_EQ(merged.size(), 1u);
  ASSERT_EQ(merged[0].compression_size(), 2);
  const proto::CodecMetrics& int4 = merged[0].compression(0);
  EXPECT_EQ(int4.codec(), "int4/128");
  EXPECT_DOUBLE_EQ(int4.error_sq(), 0.04);
  EXPECT_DOUBLE_EQ(int4.signal_sq(), 4.0);
  EXPECT_EQ(int4.wire_bytes(), 220);
  EXPECT_EQ(int4.dense_bytes(), 1760);
  const proto::CodecMetrics& int8 = merged[0].compression(1);
  EXPECT_EQ(int8.codec(), "int8/512");
  EXPECT_EQ(int8.error_sq(), 1e-4);
  EXPECT_EQ(int8.wire_bytes(), 50);
  // Without compression, nothing is added.
  EXPECT_EQ(merger.Add(0, Metrics(1, 2.0, 1.0)).size(), 0u);
  const std::vector<proto::IterationMetrics> plain = merger.Add(1, Metrics(1, 2.0, 1.0));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].compression_size(), 0);
}

TEST(MetricsMergerTest, OneNodeEmitsEveryReport) {
  MetricsMerger merger({0}, 32);
  EXPECT_EQ(merger.Add(0, Metrics(0, 1, 2)).size(), 1u);
  EXPECT_EQ(merger.Add(0, Metrics(1, 1, 2)).size(), 1u);
}

// Pipeline stages on two nodes: only node 1 holds the last stage and its loss sink, so
// only node 1 reports, and its reports alone complete the iterations.
TEST(MetricsMergerTest, OnlyTheNodesWithALossSinkReport) {
  proto::Plan plan;
  for (int64_t node : {0, 0, 1, 1}) {
    proto::DevicePlan* device = plan.add_devices();
    device->mutable_device()->set_node(node);
    device->add_actors()->set_kind(proto::ACTOR_COMPUTE);
    if (node == 1) device->add_actors()->set_kind(proto::ACTOR_SINK);
  }
  EXPECT_EQ(ReportingNodes(plan), std::vector<int64_t>{1});
  // A plan without any sink (the launcher's fake-worker plans): every node reports.
  proto::Plan no_sink = plan;
  for (proto::DevicePlan& device : *no_sink.mutable_devices()) {
    device.clear_actors();
    device.add_actors()->set_kind(proto::ACTOR_BOXING);
  }
  EXPECT_EQ(ReportingNodes(no_sink), (std::vector<int64_t>{0, 1}));
  plan.mutable_devices(0)->add_actors()->set_kind(proto::ACTOR_SINK);
  EXPECT_EQ(ReportingNodes(plan), (std::vector<int64_t>{0, 1}));

  MetricsMerger merger(/*reporting_nodes=*/{1}, /*batch_size=*/64);
  EXPECT_TRUE(merger.Add(0, Metrics(0, 9.0, 50.0)).empty());  // Ignored: node 0 has no sink.
  const std::vector<proto::IterationMetrics> merged = merger.Add(1, Metrics(0, 2.5, 5.0));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].loss(), 2.5);
  EXPECT_EQ(merged[0].step_ms(), 5.0);
}

// A failed attempt: node 0 (the one whose loss the lines carry) was lost after it reported
// iteration 1; nodes 1 and 2 reported 2 and 3, node 1 also 5, nobody 4. The incomplete
// iterations come out merged from the nodes that reported, naming the missing ones, and
// the one nobody reported is named as such.
TEST(MetricsMergerTest, IncompleteIterationsOfAFailedAttemptComeFromTheSurvivors) {
  MetricsMerger merger(/*reporting_nodes=*/{0, 1, 2}, /*batch_size=*/30);
  for (int64_t iteration : {0, 1}) {
    for (int64_t node : {0, 1, 2}) {
      EXPECT_EQ(merger.Add(node, Metrics(iteration, 3.0, 5.0)).size(), node == 2 ? 1u : 0u);
    }
  }
  for (int64_t iteration : {2, 3}) {
    EXPECT_TRUE(merger.Add(2, Metrics(iteration, 2.0 - iteration * 0.1, 7.0)).empty());
    EXPECT_TRUE(merger.Add(1, Metrics(iteration, 2.0 - iteration * 0.1, 4.0)).empty());
  }
  EXPECT_TRUE(merger.Add(1, Metrics(5, 1.5, 4.0)).empty());
  std::vector<int64_t> unreported;
  const std::vector<MetricsMerger::Incomplete> taken = merger.TakeIncomplete(&unreported);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].metrics.iteration(), 2);
  EXPECT_DOUBLE_EQ(taken[0].metrics.loss(), 1.8);  // Node 1's: node 0's report is lost.
  EXPECT_EQ(taken[0].metrics.step_ms(), 7.0);
  EXPECT_DOUBLE_EQ(taken[0].metrics.samples_per_s(), 30 * 1000.0 / 7.0);
  EXPECT_EQ(taken[0].metrics.node_step_ms().size(), 2u);
  EXPECT_EQ(taken[0].missing_nodes, std::vector<int64_t>{0});
  EXPECT_EQ(taken[1].metrics.iteration(), 3);
  EXPECT_EQ(taken[1].missing_nodes, std::vector<int64_t>{0});
  EXPECT_EQ(taken[2].metrics.iteration(), 5);
  EXPECT_EQ(taken[2].metrics.loss(), 1.5);
  EXPECT_EQ(taken[2].metrics.node_step_ms().size(), 1u);
  EXPECT_EQ(taken[2].missing_nodes, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(unreported, std::vector<int64_t>{4});
  // Taken: nothing is left to take.
  unreported.clear();
  EXPECT_TRUE(merger.TakeIncomplete(&unreported).empty());
  EXPECT_TRUE(unreported.empty());
}

}  // namespace
}  // namespace oneflow::launcher
