#include "tools/cli/metrics_file.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "actors/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(MetricsFileTest, ReadsBackWhatTheWriterWrites) {
  actors::IterationMetrics m;
  m.iteration = 7;
  m.loss = 2.5f;
  m.step_ms = 12.25;
  m.samples_per_s = 5184.5;
  m.compression["int4/128"] = {/*error_sq=*/1, /*signal_sq=*/4, /*wire_bytes=*/1234, /*dense_bytes=*/9876};
  m.compression["fp8"] = {std::nan(""), 1, 10, 40};
  m.node_step_ms = {{0, 11.5}, {1, 12.25}};
  absl::StatusOr<MetricsLine> line = ParseMetricsLine(actors::MetricsJsonLine(m));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->iteration, 7);
  EXPECT_EQ(line->loss, 2.5);
  EXPECT_EQ(line->step_ms, 12.25);
  EXPECT_EQ(line->samples_per_s, 5184.5);
  ASSERT_EQ(line->compression.size(), 2u);
  EXPECT_EQ(line->compression["int4/128"].rel_l2, 0.5);
  EXPECT_EQ(line->compression["int4/128"].wire_bytes, 1234);
  EXPECT_EQ(line->compression["int4/128"].dense_bytes, 9876);
  // A NaN was encoded: the writer puts null.
  EXPECT_TRUE(std::isnan(line->compression["fp8"].rel_l2));
  EXPECT_EQ(line->compression["fp8"].wire_bytes, 10);
  EXPECT_EQ(line->node_step_ms, (std::map<int64_t, double>{{0, 11.5}, {1, 12.25}}));
}

TEST(MetricsFileTest, ReadsTheNonFiniteLossPrintfWrites) {
  actors::IterationMetrics m;
  m.loss = std::numeric_limits<float>::quiet_NaN();
  absl::StatusOr<MetricsLine> line = ParseMetricsLine(actors::MetricsJsonLine(m));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_TRUE(std::isnan(line->loss));
  m.loss = -std::numeric_limits<float>::infinity();
  line = ParseMetricsLine(actors::MetricsJsonLine(m));
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->loss, -std::numeric_limits<double>::infinity());
  // Inside a string the words stay words: a codec may be named "inf".
  line = ParseMetricsLine(
      R"({"iter": 0, "loss": inf, "step_ms": 1, "samples_per_s": 2, "compression": {"inf": {"rel_l2": 0.5, "wire_bytes": 1, "dense_bytes": 4}}})");
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->loss, std::numeric_limits<double>::infinity());
  EXPECT_EQ(line->compression.count("inf"), 1u);
}

TEST(MetricsFileTest, IgnoresKeysItDoesNotKnow) {
  absl::StatusOr<MetricsLine> line =
      ParseMetricsLine(R"({"iter": 1, "loss": 1, "step_ms": 1, "samples_per_s": 1, "later_field": [1]})");
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_TRUE(line->compression.empty());
}

TEST(MetricsFileTest, SaysWhatALineLacks) {
  EXPECT_EQ(ParseMetricsLine("step 3 done").status().message(), "not a JSON object");
  EXPECT_EQ(ParseMetricsLine(R"({"iter": 1, "step_ms": 1, "samples_per_s": 1})").status().message(),
            "no \"loss\"");
  EXPECT_EQ(ParseMetricsLine(R"({"iter": 1.5, "loss": 1, "step_ms": 1, "samples_per_s": 1})").status().message(),
            "\"iter\" is not an integer");
  EXPECT_EQ(ParseMetricsLine(R"({"iter": 1, "loss": "x", "step_ms": 1, "samples_per_s": 1})").status().message(),
            "\"loss\" is not a number");
  EXPECT_EQ(ParseMetricsLine(
                R"({"iter": 1, "loss": 1, "step_ms": 1, "samples_per_s": 1, "compression": {"q": {"rel_l2": 1}}})")
                .status()
                .message(),
            "no \"wire_bytes\" of codec \"q\"");
  EXPECT_EQ(ParseMetricsLine(R"({"iter": 1, "loss": 1, "step_ms": 1, "samples_per_s": 1, "node_step_ms": {"a": 1}})")
                .status()
                .message(),
            "\"node_step_ms\" entry \"a\" is not a node rank with a number");
}

TEST(MetricsFileTest, ReadsEveryNonBlankLineInOrder) {
  const std::string path = WriteFile("ok.jsonl",
                                     "{\"iter\": 0, \"loss\": 3, \"step_ms\": 9, \"samples_per_s\": 1}\n\n"
                                     "{\"iter\": 1, \"loss\": 2, \"step_ms\": 8, \"samples_per_s\": 2}\n");
  absl::StatusOr<std::vector<MetricsLine>> lines = ReadMetricsFile(path);
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].iteration, 1);
  EXPECT_EQ((*lines)[1].loss, 2);
}

TEST(MetricsFileTest, ErrorsNameTheFile) {
  const std::string missing = std::string(::testing::TempDir()) + "/missing.jsonl";
  absl::StatusOr<std::vector<MetricsLine>> lines = ReadMetricsFile(missing);
  EXPECT_EQ(lines.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(lines.status().message(),
            "metrics file '" + missing + "': cannot open: No such file or directory");

  const std::string empty = WriteFile("empty.jsonl", "\n  \n");
  lines = ReadMetricsFile(empty);
  EXPECT_EQ(lines.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lines.status().message(), "metrics file '" + empty +
                                          "': the file is empty (no metrics lines); write one with `oneflow run "
                                          "PLAN --metrics=FILE`");

  const std::string bad = WriteFile("bad.jsonl",
                                    "{\"iter\": 0, \"loss\": 3, \"step_ms\": 9, \"samples_per_s\": 1}\n"
                                    "oneflow run: job started\n");
  lines = ReadMetricsFile(bad);
  EXPECT_EQ(lines.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lines.status().message(), "metrics file '" + bad +
                                          "': line 2 is not a metrics line of `oneflow run --metrics` (not a JSON "
                                          "object): oneflow run: job started");
  lines = ReadMetricsFile(WriteFile("long.jsonl", std::string(100, 'x') + "\n"));
  EXPECT_THAT(lines.status().message(), HasSubstr("object): " + std::string(60, 'x') + "..."));
}

}  // namespace
}  // namespace oneflow::cli
