#include "actors/metrics.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

IterationMetrics Metrics(int64_t iteration) {
  IterationMetrics m;
  m.iteration = iteration;
  m.loss = 2.718281828f;
  m.step_ms = 12.3456;
  m.samples_per_s = 5184.04;
  return m;
}

TEST(MetricsTest, JsonLineFormat) {
  EXPECT_EQ(MetricsJsonLine(Metrics(3)),
            "{\"iter\": 3, \"loss\": 2.71828, \"step_ms\": 12.346, \"samples_per_s\": 5184.0}\n");
  // A launched job's merged line ends with each node's own step time.
  IterationMetrics merged = Metrics(3);
  merged.node_step_ms = {{1, 12.3456}, {0, 9.0}};
  EXPECT_EQ(MetricsJsonLine(merged),
            "{\"iter\": 3, \"loss\": 2.71828, \"step_ms\": 12.346, \"samples_per_s\": 5184.0, "
            "\"node_step_ms\": {\"0\": 9.000, \"1\": 12.346}}\n");
}

// Sums in, ratios out: rel_l2 = sqrt(error_sq / signal_sq) per codec, in key order.
TEST(MetricsTest, JsonLineWithCompression) {
  IterationMetrics m = Metrics(3);
  m.compression["int4/128"] = CodecMetrics{/*error_sq=*/0.25, /*signal_sq=*/16.0, 1234, 9876};
  m.compression["fp8e4m3/128"] = CodecMetrics{1e-6, 4.0, 520, 2048};
  EXPECT_EQ(MetricsJsonLine(m),
            "{\"iter\": 3, \"loss\": 2.71828, \"step_ms\": 12.346, \"samples_per_s\": 5184.0, "
            "\"compression\": {\"fp8e4m3/128\": {\"rel_l2\": 0.0005, \"wire_bytes\": 520, \"dense_bytes\": 2048}, "
            "\"int4/128\": {\"rel_l2\": 0.125, \"wire_bytes\": 1234, \"dense_bytes\": 9876}}}\n");
}

// Nothing encoded is no error; a NaN encoded (it decodes to NaN) has no JSON number.
TEST(MetricsTest, RelativeErrorOfNothingIsZeroAndOfNanIsNull) {
  IterationMetrics m = Metrics(0);
  m.compression["int8/512"] = CodecMetrics{};
  m.compression["int4/128"] = CodecMetrics{std::nan(""), 1.0, 8, 64};
  EXPECT_EQ(MetricsJsonLine(m),
            "{\"iter\": 0, \"loss\": 2.71828, \"step_ms\": 12.346, \"samples_per_s\": 5184.0, "
            "\"compression\": {\"int4/128\": {\"rel_l2\": null, \"wire_bytes\": 8, \"dense_bytes\": 64}, "
            "\"int8/512\": {\"rel_l2\": 0, \"wire_bytes\": 0, \"dense_bytes\": 0}}}\n");
}

TEST(MetricsTest, CodecMetricsAdd) {
  CodecMetrics sum{1.0, 4.0, 10, 40};
  sum += CodecMetrics{3.0, 12.0, 5, 20};
  EXPECT_EQ(sum.error_sq, 4.0);
  EXPECT_EQ(sum.signal_sq, 16.0);
  EXPECT_EQ(sum.wire_bytes, 15);
  EXPECT_EQ(sum.dense_bytes, 60);
  EXPECT_EQ(sum.RelativeError(), 0.5);
}

TEST(MetricsTest, LinesOnAStreamThatIsNotATerminal) {
  std::ostringstream out;
  auto reporter = MetricsReporter::Open("", 2, &out, false);
  ASSERT_TRUE(reporter.ok()) << reporter.status();
  (*reporter)->Report(Metrics(0));
  (*reporter)->Report(Metrics(1));
  (*reporter)->Finish();
  EXPECT_EQ(out.str(), MetricsJsonLine(Metrics(0)) + MetricsJsonLine(Metrics(1)));
}

TEST(MetricsTest, ProgressBarOnATerminal) {
  std::ostringstream out;
  auto reporter = MetricsReporter::Open("", 4, &out, true);
  ASSERT_TRUE(reporter.ok()) << reporter.status();
  (*reporter)->Report(Metrics(1));
  (*reporter)->Finish();
  EXPECT_EQ(out.str(), "\r[###############               ] 2/4  loss 2.7183  5184 samples/s  12.3 ms/step\n");
}

TEST(MetricsTest, FileGetsTheLinesAndABadPathIsNamed) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/metrics.jsonl";
  std::ostringstream out;
  {
    auto reporter = MetricsReporter::Open(path, 1, &out, true);
    ASSERT_TRUE(reporter.ok()) << reporter.status();
    (*reporter)->Report(Metrics(0));
    (*reporter)->Finish();
  }
  EXPECT_EQ(out.str(), "");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), MetricsJsonLine(Metrics(0)));
  auto bad = MetricsReporter::Open("/nonexistent/dir/m.jsonl", 1, &out, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--metrics='/nonexistent/dir/m.jsonl': cannot create the file");
}

}  // namespace
}  // namespace oneflow::actors
