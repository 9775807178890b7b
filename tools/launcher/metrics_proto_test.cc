#include "tools/launcher/metrics_proto.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/launcher/metrics_merger.h"

namespace oneflow::launcher {
namespace {

actors::IterationMetrics NodeMetrics(double error_sq, double signal_sq, int64_t wire, int64_t dense) {
  actors::IterationMetrics m;
  m.iteration = 7;
  m.loss = 1.25f;
  m.step_ms = 10.0;
  m.samples_per_s = 3200.0;
  m.compression["int4/128"] = actors::CodecMetrics{error_sq, signal_sq, wire, dense};
  return m;
}

TEST(MetricsProtoTest, RoundTripKeepsTheLine) {
  actors::IterationMetrics m = NodeMetrics(0.0144, 1.0, 1234, 9876);
  m.compression["fp8e4m3/128"] = actors::CodecMetrics{1e-6, 4.0, 520, 2048};
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(MetricsToProto(m))), actors::MetricsJsonLine(m));
  actors::IterationMetrics plain = m;
  plain.compression.clear();
  EXPECT_EQ(MetricsToProto(plain).compression_size(), 0);
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(MetricsToProto(plain))), actors::MetricsJsonLine(plain));
  plain.node_step_ms = {{0, 9.5}, {3, 10.25}};
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(MetricsToProto(plain))), actors::MetricsJsonLine(plain));
}

// What `oneflow launch` prints for two nodes is what `oneflow run` prints for the same
// devices in one process: the sums of all of them; and then each node's own step time.
TEST(MetricsProtoTest, TwoNodesMergeToTheOneProcessLine) {
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/32);
  EXPECT_TRUE(merger.Add(0, MetricsToProto(NodeMetrics(0.01, 1.0, 100, 800))).empty());
  const std::vector<proto::IterationMetrics> merged = merger.Add(1, MetricsToProto(NodeMetrics(0.03, 3.0, 120, 960)));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(merged[0])),
            "{\"iter\": 7, \"loss\": 1.25, \"step_ms\": 10.000, \"samples_per_s\": 3200.0, \"compression\": "
            "{\"int4/128\": {\"rel_l2\": 0.1, \"wire_bytes\": 220, \"dense_bytes\": 1760}}, "
            "\"node_step_ms\": {\"0\": 10.000, \"1\": 10.000}}\n");
}

// The transport of a multi-node job travels with each node's metrics, comes out of the
// merge once, last on the line; one process's line has none.
TEST(MetricsProtoTest, TransportRoundTripsAndEndsTheMergedLine) {
  actors::IterationMetrics m = NodeMetrics(0.01, 1.0, 100, 800);
  m.compression.clear();
  EXPECT_EQ(actors::MetricsJsonLine(m).find("transport"), std::string::npos);
  m.transport = "ucx";
  EXPECT_EQ(MetricsFromProto(MetricsToProto(m)).transport, "ucx");
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/32);
  EXPECT_TRUE(merger.Add(0, MetricsToProto(m)).empty());
  const std::vector<proto::IterationMetrics> merged = merger.Add(1, MetricsToProto(m));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(merged[0])),
            "{\"iter\": 7, \"loss\": 1.25, \"step_ms\": 10.000, \"samples_per_s\": 3200.0, "
            "\"node_step_ms\": {\"0\": 10.000, \"1\": 10.000}, \"transport\": \"ucx\"}\n");
}

// The transport's settings travel beside it; the merged line carries the lowest node's
// (nodes may run with different environments).
TEST(MetricsProtoTest, TransportSettingsRoundTripAndTheLowestNodeNamesThem) {
  actors::IterationMetrics m = NodeMetrics(0.01, 1.0, 100, 800);
  m.compression.clear();
  m.transport = "ucx";
  m.transport_settings = "RNDV_THRESH=inf";
  EXPECT_EQ(MetricsFromProto(MetricsToProto(m)).transport_settings, "RNDV_THRESH=inf");
  actors::IterationMetrics overridden = m;
  overridden.transport_settings = "RNDV_THRESH=auto (environment)";
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/32);
  EXPECT_TRUE(merger.Add(1, MetricsToProto(overridden)).empty());
  const std::vector<proto::IterationMetrics> merged = merger.Add(0, MetricsToProto(m));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(merged[0])),
            "{\"iter\": 7, \"loss\": 1.25, \"step_ms\": 10.000, \"samples_per_s\": 3200.0, "
            "\"node_step_ms\": {\"0\": 10.000, \"1\": 10.000}, \"transport\": \"ucx\", "
            "\"transport_settings\": \"RNDV_THRESH=inf\"}\n");
}

// The priority lead of the communication threads travels with each node's metrics and
// comes out of the merge after the transport; unset, the line has none (0 is a value).
TEST(MetricsProtoTest, CommunicationPriorityLevelsRoundTripAndFollowTheTransport) {
  actors::IterationMetrics m = NodeMetrics(0.01, 1.0, 100, 800);
  m.compression.clear();
  m.transport = "ucx";
  EXPECT_FALSE(MetricsToProto(m).has_communication_priority_levels());
  EXPECT_EQ(actors::MetricsJsonLine(m).find("communication_priority_levels"), std::string::npos);
  for (int64_t levels : {int64_t{0}, int64_t{10}}) {
    m.communication_priority_levels = levels;
    EXPECT_EQ(MetricsFromProto(MetricsToProto(m)).communication_priority_levels, levels);
    MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/32);
    EXPECT_TRUE(merger.Add(0, MetricsToProto(m)).empty());
    const std::vector<proto::IterationMetrics> merged = merger.Add(1, MetricsToProto(m));
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(merged[0])),
              absl::StrCat("{\"iter\": 7, \"loss\": 1.25, \"step_ms\": 10.000, \"samples_per_s\": 3200.0, "
                           "\"node_step_ms\": {\"0\": 10.000, \"1\": 10.000}, \"transport\": \"ucx\", "
                           "\"communication_priority_levels\": ",
                           levels, "}\n"));
  }
}

// Row-sparse boxing bytes travel with the metrics and add up over nodes; a node without
// row-sparse boxings sends none.
TEST(MetricsProtoTest, SparseBytesRoundTripAndAddUp) {
  actors::IterationMetrics m = NodeMetrics(0.01, 1.0, 100, 800);
  m.compression.clear();
  m.sparse = actors::SparseMetrics{1040, 6, 12288, 4, 2, 0};
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(MetricsToProto(m))), actors::MetricsJsonLine(m));
  actors::IterationMetrics plain = m;
  plain.sparse = {};
  EXPECT_FALSE(MetricsToProto(plain).has_sparse());
  MetricsMerger merger(/*reporting_nodes=*/{0, 1}, /*batch_size=*/32);
  EXPECT_TRUE(merger.Add(0, MetricsToProto(m)).empty());
  actors::IterationMetrics other = m;
  other.sparse = actors::SparseMetrics{520, 6, 12288, 2, 1, 1};
  const std::vector<proto::IterationMetrics> merged = merger.Add(1, MetricsToProto(other));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(actors::MetricsJsonLine(MetricsFromProto(merged[0])),
            "{\"iter\": 7, \"loss\": 1.25, \"step_ms\": 10.000, \"samples_per_s\": 3200.0, \"sparse\": "
            "{\"payload_bytes\": 1560, \"metadata_bytes\": 12, \"dense_bytes\": 24576, \"rows_sent\": 6, "
            "\"sparse_calls\": 3, \"dense_calls\": 1}, \"node_step_ms\": {\"0\": 10.000, \"1\": 10.000}}\n");
}

}  // namespace
}  // namespace oneflow::launcher
