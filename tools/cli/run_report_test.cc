#include "tools/cli/run_report.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli/html_escape.h"
#include "tools/cli/line_chart.h"

namespace oneflow::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

MetricsLine Line(int64_t iteration, double loss, double step_ms, double samples_per_s) {
  MetricsLine line;
  line.iteration = iteration;
  line.loss = loss;
  line.step_ms = step_ms;
  line.samples_per_s = samples_per_s;
  return line;
}

// Iteration 0's step counts from the start (100 ms); the others 10, 20, 30, 40 ms.
std::vector<MetricsLine> FiveLines() {
  return {Line(0, 2, 100, 1000), Line(1, 1.5, 10, 8000), Line(2, 1, 20, 3000), Line(3, 0.5, 30, 2000),
          Line(4, 0.25, 40, 1000)};
}

TEST(QuantileTest, InterpolatesBetweenTheNearestRanks) {
  EXPECT_EQ(Quantile({10, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({10, 1, 3, 2}, 0.9), 7.9);
  EXPECT_EQ(Quantile({4}, 0.9), 4);
  EXPECT_EQ(Quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9), 10);
  EXPECT_TRUE(std::isnan(Quantile({}, 0.5)));
}

TEST(NiceAxisTest, RoundsOutToOneTwoOrFiveTimesAPowerOfTen) {
  Axis axis = NiceAxis(0.25, 2, /*integer=*/false);
  EXPECT_EQ(axis.step, 0.5);
  EXPECT_THAT(axis.ticks, ElementsAre(0, 0.5, 1, 1.5, 2));
  axis = NiceAxis(10, 100, false);
  EXPECT_EQ(axis.step, 20);
  EXPECT_EQ(axis.lo, 0);
  EXPECT_EQ(axis.hi, 100);
  // Iterations 0..3: whole ticks only, not 0.5 apart.
  axis = NiceAxis(0, 3, /*integer=*/true);
  EXPECT_THAT(axis.ticks, ElementsAre(0, 1, 2, 3));
  // One value: an axis around it.
  axis = NiceAxis(5, 5, true);
  EXPECT_EQ(axis.lo, 4);
  EXPECT_EQ(axis.hi, 6);
}

TEST(LineChartTest, PointsAreTheValuesInTheFrame) {
  // x axis 0..4 over 64..624 px (140 px per iteration); y axis 0..2 over 200..16 px.
  const std::string svg = RenderLineChart({"loss", "iteration", "loss", {0, 1, 2, 3, 4}, {2, 1.5, 1, 0.5, 0.25}});
  EXPECT_THAT(svg, HasSubstr("<polyline class=\"data\" points=\"64.0,16.0 204.0,62.0 344.0,108.0 484.0,154.0 "
                             "624.0,177.0\"/>"));
  EXPECT_THAT(svg, HasSubstr(">1.5</text>"));
  EXPECT_THAT(svg, HasSubstr("text-anchor=\"middle\">4</text>"));
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
}

TEST(LineChartTest, ANonFiniteValueBreaksTheLine) {
  const std::string svg = RenderLineChart({"loss", "iteration", "loss", {0, 1, 2, 3}, {1, NAN, 0.5, 0}});
  // y axis 0..1 (step 0.2).
  EXPECT_THAT(svg, HasSubstr("points=\"64.0,16.0\"/>"));
  EXPECT_THAT(svg, HasSubstr("points=\"437.3,108.0 624.0,200.0\"/>"));
}

TEST(RunReportTest, SummaryIsWhatTheValuesGive) {
  const RunSummary s = SummarizeRun(FiveLines());
  EXPECT_EQ(s.lines, 5);
  EXPECT_EQ(s.first_loss, 2);
  EXPECT_EQ(s.last_loss, 0.25);
  EXPECT_EQ(s.min_loss, 0.25);
  EXPECT_EQ(s.min_loss_iteration, 4);
  EXPECT_EQ(s.timed_lines, 4);
  EXPECT_EQ(s.median_step_ms, 25);
  EXPECT_DOUBLE_EQ(s.p90_step_ms, 37);
  EXPECT_EQ(s.median_samples_per_s, 2500);

  const std::string html = RenderRunReport({"run.jsonl", FiveLines(), nullptr});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_THAT(html, HasSubstr("<tr><th>iterations</th><td>0..4 (5 lines)</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>first loss</th><td>2 (iteration 0)</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>last loss</th><td>0.25 (iteration 4)</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>min loss</th><td>0.25 (iteration 4)</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>median step time</th><td>25.000 ms</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>p90 step time</th><td>37.000 ms</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>median samples/s</th><td>2500.0</td></tr>"));
  // The loss curve, then the step-time curve: y axis 0..100 ms, the warm-up at the top.
  EXPECT_THAT(html, HasSubstr("points=\"64.0,16.0 204.0,62.0 344.0,108.0 484.0,154.0 624.0,177.0\""));
  EXPECT_THAT(html, HasSubstr("points=\"64.0,16.0 204.0,181.6 344.0,163.2 484.0,144.8 624.0,126.4\""));
  EXPECT_THAT(html, Not(HasSubstr("<h2>Compression</h2>")));
  EXPECT_THAT(html, Not(HasSubstr("<h2>Profile</h2>")));
  EXPECT_THAT(html, Not(HasSubstr("http")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST(RunReportTest, OneLineIsItsOwnStep) {
  const RunSummary s = SummarizeRun({Line(0, 1, 7, 70)});
  EXPECT_EQ(s.timed_lines, 1);
  EXPECT_EQ(s.median_step_ms, 7);
  EXPECT_EQ(s.p90_step_ms, 7);
}

// A launched job's lines carry each node's step: per node over the timed lines (not the
// first), which node was slowest how often, and a chart per node.
TEST(RunReportTest, PerNodeStepTimesOfALaunchedJob) {
  std::vector<MetricsLine> lines = FiveLines();
  lines[0].node_step_ms = {{0, 100}, {1, 90}};
  lines[1].node_step_ms = {{0, 8}, {1, 10}};
  lines[2].node_step_ms = {{0, 20}, {1, 12}};
  lines[3].node_step_ms = {{0, 30}, {1, 30}};
  lines[4].node_step_ms = {{0, 10}, {1, 40}};
  const RunSummary s = SummarizeRun(lines);
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].node, 0);
  EXPECT_EQ(s.nodes[0].lines, 4);
  EXPECT_EQ(s.nodes[0].median_step_ms, 15);  // of 8, 20, 30, 10
  EXPECT_EQ(s.nodes[0].max_step_ms, 30);
  EXPECT_EQ(s.nodes[0].slowest_lines, 2);  // iterations 2 and 3 (a tie)
  EXPECT_EQ(s.nodes[1].median_step_ms, 21);  // of 10, 12, 30, 40
  EXPECT_DOUBLE_EQ(s.nodes[1].p90_step_ms, 37);
  EXPECT_EQ(s.nodes[1].slowest_lines, 3);  // iterations 1, 3 and 4
  const std::string html = RenderRunReport({"launch.jsonl", lines, nullptr});
  EXPECT_THAT(html, HasSubstr("<h2>Per node</h2>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>0</td><td>4</td><td>15.000 ms</td><td>27.000 ms</td><td>30.000 ms</td>"
                              "<td>2 of 4 lines</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>1</td><td>4</td><td>21.000 ms</td><td>37.000 ms</td><td>40.000 ms</td>"
                              "<td>3 of 4 lines</td></tr>"));
  EXPECT_THAT(html, HasSubstr("node 1: step time per iteration (ms)"));
  // Without node step times (oneflow run), no such section.
  EXPECT_THAT(RenderRunReport({"run.jsonl", FiveLines(), nullptr}), Not(HasSubstr("<h2>Per node</h2>")));
}

TEST(RunReportTest, CompressionPerCodecAndNamesEscaped) {
  std::vector<MetricsLine> lines = FiveLines();
  const std::string codec = "<int4>&\"q'/128";
  lines[0].compression[codec] = {0.25, 100, 800};
  lines[1].compression[codec] = {NAN, 100, 800};
  lines[2].compression[codec] = {0.5, 100, 800};
  lines[3].compression[codec] = {0.125, 100, 800};
  const std::string html = RenderRunReport({"a<b>&c.jsonl", lines, nullptr});
  EXPECT_THAT(html, HasSubstr("<title>oneflow report: a&lt;b&gt;&amp;c.jsonl</title>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>&lt;int4&gt;&amp;&quot;q&#39;/128</td><td>4</td><td>0.25</td><td>0.125</td>"
                              "<td>0.5 (1 non-finite)</td><td>400 B</td><td>3.12 KiB (3200 B)</td>"
                              "<td>0.125</td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr(codec)));
  EXPECT_THAT(html, Not(HasSubstr("a<b>")));
}

TEST(RunReportTest, ProfileTablesAreEscapedHtmlTables) {
  ProfileTables profile;
  profile.heading = {"profile of plan 'p<1>'"};
  ProfileSection& section = profile.sections.emplace_back();
  section.title = "actors, per iteration (top 1 of 1)";
  section.notes = {"a & b"};
  section.rows = {{"device", "actor"}, {"0:0", "mm<1>&\"x\""}};
  const std::string html = RenderRunReport({"run.jsonl", FiveLines(), &profile});
  EXPECT_THAT(html, HasSubstr("<h2>Profile</h2>\n<p>profile of plan &#39;p&lt;1&gt;&#39;</p>\n"
                              "<h3>actors, per iteration (top 1 of 1)</h3>\n<p>a &amp; b</p>\n<table>\n"
                              "<thead><tr><th>device</th><th>actor</th></tr></thead>\n"
                              "<tbody><tr><td>0:0</td><td>mm&lt;1&gt;&amp;&quot;x&quot;</td></tr></tbody>\n"
                              "</table>\n"));
}

TEST(HtmlEscapeTest, EscapesWhatHtmlGivesMeaning) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'd é"), "a&lt;b&gt;&amp;&quot;c&#39;d é");
}

}  // namespace
}  // namespace oneflow::cli
