#include "sbp/calibration.h"

#include <string>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::string Error(const std::string& text) {
  const absl::StatusOr<Calibration> parsed = ParseCalibration(text, "c.jsonl");
  return parsed.ok() ? "parsed" : std::string(parsed.status().message());
}

TEST(CalibrationTest, LinkAndComputeLinesRoundTripBesideCodecLines) {
  const std::string text =
      LinkMeasurementLine("intra_node", {3.25e-6, 5.5e9, "in-process"}) + "\n" +
      LinkMeasurementLine("inter_node", {4.5e-4, 1.5e9, "gloo"}) + "\n" +
      R"({"codec": "int4", "group_size": 128, "hadamard": true, "bytes_per_second": 3e9})" + "\n" +
      ComputeMeasurementLine("gemm", 1.2e11, "sgemm") + "\n" + ComputeMeasurementLine("memory", 1.4e10, "memcpy");
  EXPECT_EQ(LinkMeasurementLine("inter_node", {4.5e-4, 1.5e9, "gloo"}),
            R"({"link": "inter_node", "latency_seconds": 0.00045, "bytes_per_second": 1.5e+09, "method": "gloo"})");
  const absl::StatusOr<Calibration> parsed = ParseCalibration(text, "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->intra_node.has_value());
  EXPECT_EQ(parsed->intra_node->latency_seconds, 3.25e-6);
  EXPECT_EQ(parsed->intra_node->bytes_per_second, 5.5e9);
  ASSERT_TRUE(parsed->inter_node.has_value());
  EXPECT_EQ(parsed->inter_node->latency_seconds, 4.5e-4);
  EXPECT_EQ(parsed->inter_node->method, "gloo");
  EXPECT_EQ(parsed->compute.gemm_flops_per_second, 1.2e11);
  EXPECT_EQ(parsed->compute.memory_bytes_per_second, 1.4e10);
  EXPECT_EQ(parsed->codecs.BytesPerSecond({CompressionKind::kInt4, 128, true}), 3e9);
  // A file of link lines only leaves the codecs at their defaults.
  const absl::StatusOr<Calibration> links_only =
      ParseCalibration(LinkMeasurementLine("intra_node", {1e-6, 1e10, ""}), "c.jsonl");
  ASSERT_TRUE(links_only.ok()) << links_only.status();
  EXPECT_FALSE(links_only->inter_node.has_value());
  EXPECT_EQ(links_only->compute.gemm_flops_per_second, 0);
}

TEST(CalibrationTest, BadLinesNameTheFileAndLine) {
  const std::string link = LinkMeasurementLine("intra_node", {1e-6, 1e10, ""});
  EXPECT_EQ(Error(""), "calibration file 'c.jsonl' has no measurement; write one with `oneflow calibrate --out=c.jsonl`");
  EXPECT_EQ(Error(R"({"link": "wan", "latency_seconds": 0, "bytes_per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"link\" is \"wan\"; valid: intra_node, inter_node");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": -1, "bytes_per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"latency_seconds\" is -1; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: missing key \"bytes_per_second\"");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": 0, "bytes_per_second": 1, "rtt": 2})"),
            "calibration file 'c.jsonl' line 1: unknown key \"rtt\"; valid keys: link, latency_seconds, "
            "bytes_per_second, method");
  EXPECT_EQ(Error(link + "\n" + link), "calibration file 'c.jsonl' line 2: link intra_node is measured twice");
  EXPECT_EQ(Error(R"({"compute": "fft", "per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"compute\" is \"fft\"; valid: gemm, memory");
  EXPECT_EQ(Error(R"({"compute": "gemm", "per_second": 0})"),
            "calibration file 'c.jsonl' line 1: \"per_second\" is 0; it must be a finite number > 0");
  // Codec lines keep their own checks.
  EXPECT_EQ(Error(link + "\n" + R"({"codec": "int4", "group_size": 128, "hadamard": true})"),
            "codec calibration file 'c.jsonl' line 2: missing key \"bytes_per_second\"");
}

TEST(CalibrationTest, MissingFileIsNotFound) {
  const absl::StatusOr<Calibration> missing = ReadCalibrationFile(::testing::TempDir() + "/absent.jsonl");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace oneflow
