#include "actors/metrics.h"

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
