#include "actors/compression_meter.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

CompressedTraffic Traffic(int64_t sent, int64_t dense, double error_sq, double signal_sq) {
  CompressedTraffic traffic;
  traffic.bytes_sent = sent;
  traffic.bytes_received = 2 * sent;  // received bytes are the senders' and not reported
  traffic.dense_bytes_sent = dense;
  traffic.error_sq = error_sq;
  traffic.signal_sq = signal_sq;
  return traffic;
}

TEST(CompressionMeterTest, KeysAndDocumentedBounds) {
  EXPECT_EQ(CodecMetricsKey(CodecOptions{Codec::kInt4, 128}), "int4/128");
  EXPECT_EQ(CodecMetricsKey(CodecOptions{Codec::kFp8E4M3, 32, true}), "fp8e4m3/32");
  EXPECT_EQ(DocumentedErrorBound(Codec::kNone), 0.0);
  // Each bound sits above the codec's measured Gaussian error (codec_test).
  EXPECT_GT(DocumentedErrorBound(Codec::kFp8E4M3), 0.026);
  EXPECT_GT(DocumentedErrorBound(Codec::kFp8E5M2), 0.052);
  EXPECT_GT(DocumentedErrorBound(Codec::kInt8), 0.0065);
  EXPECT_GT(DocumentedErrorBound(Codec::kInt4), 0.166);
}

TEST(CompressionMeterTest, TrafficSinceIsTheDifference) {
  const CompressedTraffic act = TrafficSince(Traffic(30, 100, 0.5, 8.0), Traffic(10, 40, 0.25, 2.0));
  EXPECT_EQ(act.bytes_sent, 20);
  EXPECT_EQ(act.bytes_received, 40);
  EXPECT_EQ(act.dense_bytes_sent, 60);
  EXPECT_EQ(act.error_sq, 0.25);
  EXPECT_EQ(act.signal_sq, 6.0);
}

// Devices of one step share a part; steps with the same codec share a key; each iteration
// is taken alone and then forgotten.
TEST(CompressionMeterTest, SumsPerCodecAndIteration) {
  std::vector<std::string> warnings;
  CompressionMeterOptions options;
  options.warn = [&](const std::string& line) { warnings.push_back(line); };
  CompressionMeter meter(options);
  const int a = meter.AddPart(0, 0, "tensor 'a'", CodecOptions{Codec::kInt4, 128});
  EXPECT_EQ(meter.AddPart(0, 0, "tensor 'a'", CodecOptions{Codec::kInt4, 128}), a);  // another device
  const int b = meter.AddPart(3, 1, "tensor 'b'", CodecOptions{Codec::kInt4, 128, true});
  const int c = meter.AddPart(3, 1, "tensor 'b'", CodecOptions{Codec::kInt8, 512, true});
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  meter.Record(a, 0, Traffic(10, 80, 0.01, 1.0));
  meter.Record(a, 0, Traffic(10, 80, 0.01, 1.0));
  meter.Record(b, 0, Traffic(5, 40, 0.02, 2.0));
  meter.Record(c, 0, Traffic(7, 24, 1e-6, 1.0));
  meter.Record(a, 1, Traffic(1, 8, 0.04, 1.0));
  const std::map<std::string, CodecMetrics> zero = meter.TakeIteration(0);
  ASSERT_EQ(zero.size(), 2u);
  const CodecMetrics& int4 = zero.at("int4/128");
  EXPECT_EQ(int4.wire_bytes, 25);
  EXPECT_EQ(int4.dense_bytes, 200);
  EXPECT_DOUBLE_EQ(int4.error_sq, 0.04);
  EXPECT_DOUBLE_EQ(int4.signal_sq, 4.0);
  EXPECT_DOUBLE_EQ(int4.RelativeError(), 0.1);
  EXPECT_EQ(zero.at("int8/512").wire_bytes, 7);
  const std::map<std::string, CodecMetrics> one = meter.TakeIteration(1);
  EXPECT_EQ(one.at("int4/128").wire_bytes, 1);
  EXPECT_EQ(one.at("int8/512").wire_bytes, 0);  // in use, but nothing this iteration
  EXPECT_EQ(meter.TakeIteration(0).at("int4/128").wire_bytes, 0);  // taken already
  EXPECT_TRUE(warnings.empty());  // 0.1 and 0.2 are within int4's bound, 0.001 in int8's
}

TEST(CompressionMeterTest, NothingCompressedNothingReported) {
  CompressionMeter meter;
  EXPECT_TRUE(meter.TakeIteration(0).empty());
}

// The first iteration over the bound warns with everything a user needs to find the edge;
// the same edge stays quiet afterwards, whichever of its codecs exceeds; other edges warn.
TEST(CompressionMeterTest, WarnsOncePerEdge) {
  std::vector<std::string> warnings;
  CompressionMeterOptions options;
  options.bound = [](const CodecOptions& codec) { return codec.codec == Codec::kInt4 ? 0.15 : 0.01; };
  options.warn = [&](const std::string& line) { warnings.push_back(line); };
  CompressionMeter meter(options);
  const int in_node = meter.AddPart(4, 0, "tensor 'w_grad' boxing 4 step 0", CodecOptions{Codec::kInt8, 512});
  const int cross = meter.AddPart(4, 0, "tensor 'w_grad' boxing 4 step 0", CodecOptions{Codec::kInt4, 128});
  const int other = meter.AddPart(5, 0, "tensor 'b_grad' boxing 5 step 0", CodecOptions{Codec::kInt4, 128});
  meter.Record(cross, 0, Traffic(1, 8, 0.01, 1.0));  // 0.1: within
  meter.TakeIteration(0);
  EXPECT_TRUE(warnings.empty());
  meter.Record(cross, 1, Traffic(1, 8, 0.04, 1.0));  // 0.2 > 0.15
  meter.Record(other, 1, Traffic(1, 8, 0.01, 1.0));
  meter.TakeIteration(1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "oneflow: warning: compressed boxing of tensor 'w_grad' boxing 4 step 0, codec int4/128: relative L2 "
            "error 0.2 in iteration 1 exceeds the bound 0.15 for int4 (docs/sbp_and_boxing.md, \"Measured error "
            "in the metrics\"); this edge does not warn again");
  meter.Record(cross, 2, Traffic(1, 8, 0.09, 1.0));
  meter.Record(in_node, 2, Traffic(1, 8, 0.04, 1.0));
  meter.TakeIteration(2);
  EXPECT_EQ(warnings.size(), 1u);
  meter.Record(other, 3, Traffic(1, 8, std::nan(""), 1.0));  // a NaN was encoded
  meter.TakeIteration(3);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("tensor 'b_grad' boxing 5 step 0, codec int4/128: relative L2 error nan in "
                             "iteration 3 exceeds the bound 0.15"),
            std::string::npos)
      << warnings[1];
}

}  // namespace
}  // namespace oneflow::actors
