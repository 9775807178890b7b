#include "tools/launcher/metrics_merger.h"

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
  MetricsMerger merger(/*num_nodes=*/2, /*batch_size=*/64);
  EXPECT_TRUE(merger.Add(1, Metrics(0, 9.0, 8.0)).empty());
  EXPECT_TRUE(merger.Add(1, Metrics(1, 9.0, 4.0)).empty());  // Node 1 runs ahead.
  const std::vector<proto::IterationMetrics> first = merger.Add(0, Metrics(0, 2.5, 5.0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].iteration(), 0);
  EXPECT_EQ(first[0].loss(), 2.5);     // Node 0's loss.
  EXPECT_EQ(first[0].step_ms(), 8.0);  // The slowest node's step.
  EXPECT_DOUBLE_EQ(first[0].samples_per_s(), 64 * 1000.0 / 8.0);
  const std::vector<proto::IterationMetrics> second = merger.Add(0, Metrics(1, 2.0, 6.0));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].iteration(), 1);
  EXPECT_EQ(second[0].step_ms(), 6.0);
}

TEST(MetricsMergerTest, OneNodeEmitsEveryReport) {
  MetricsMerger merger(1, 32);
  EXPECT_EQ(merger.Add(0, Metrics(0, 1, 2)).size(), 1u);
  EXPECT_EQ(merger.Add(0, Metrics(1, 1, 2)).size(), 1u);
}

}  // namespace
}  // namespace oneflow::launcher
