// The codec passes a compressed step is charged, worked by hand from the passes the
// runtime makes (kernels/compression/compressed_collectives.h; the top of
// step_compression.h): with error feedback a reduction decodes what it sends once more
// (the residual), without it the encoder meters its error as it encodes.
#include "sbp/boxing/step_compression.h"

#include <optional>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"

namespace oneflow {
namespace boxing {
namespace {

const CompressionChoice kInt8{CompressionKind::kInt8, 128, false};
const CompressionChoice kInt4{CompressionKind::kInt4, 128, false};

// Round numbers, the metering encode slower than the encode (it reads each group's codes
// back): int8 encode 1e9, decode 2e9, metering encode 8e8 B/s; int4 1e9, 4e9, 5e8.
CodecThroughput Throughput() {
  CodecThroughput throughput = CodecThroughput::Uniform(1e9);
  throughput.SetPasses(kInt8, 1e9, 2e9, 8e8);
  throughput.SetPasses(kInt4, 1e9, 4e9, 5e8);
  return throughput;
}

BoxingContext Context(bool error_feedback) {
  BoxingContext context;
  context.logical = Shape{6144};
  context.links = LinkModel{/*intra_node_bandwidth=*/1e10, /*inter_node_bandwidth=*/1e9};
  context.options = BoxingOptions::Everywhere(kInt8);
  context.options.reduce_cross_node = kInt8;
  context.options.codec_throughput = Throughput();
  context.options.error_feedback = error_feedback;
  return context;
}

// Four devices, one per node: every step crosses nodes, flat.
const Placement kFourNodes = *Placement::Parse("cpu{0:0, 1:0, 2:0, 3:0}");

// 2 nodes x 2 devices, reduced two-level: int8 in the node, int4 across, no error feedback.
const Placement kTwoNodesOfTwo = *Placement::Parse("cpu{0:0-1, 1:0-1}");
BoxingContext TwoLevelContext() {
  BoxingContext context = Context(false);
  context.options.reduce_cross_node = kInt4;
  context.options.two_level = true;
  return context;
}

PricedCompression Price(bool error_feedback, BoxingKind kind, int64_t elements) {
  const std::optional<PricedCompression> priced =
      PriceCompression(Context(error_feedback), kFourNodes, 0, kind, elements);
  EXPECT_TRUE(priced.has_value());
  return priced.value_or(PricedCompression());
}

// A reduce-scatter over n = 4 receiving E = (n-1) c = 3072 elements (c = 1024): the
// sender encodes (n-1) c = 3072 elements (12288 B) and the receiver decodes as many.
// Without error feedback the encode meters: 12288 B / 8e8 = 15.36 us, decode 12288 B /
// 2e9 = 6.144 us. With it a plain encode, 12288 B / 1e9 = 12.288 us, and the sender's
// decode for the residual on top of the receiver's: 2 x 6.144 = 12.288 us.
TEST(StepCompressionTest, ReduceScatterDecodesOnceMoreWithErrorFeedback) {
  const PricedCompression metered = Price(false, BoxingKind::kReduceScatter, 3072);
  EXPECT_DOUBLE_EQ(metered.encode_seconds, 15.36e-6);
  EXPECT_DOUBLE_EQ(metered.decode_seconds, 6.144e-6);
  const PricedCompression feedback = Price(true, BoxingKind::kReduceScatter, 3072);
  EXPECT_DOUBLE_EQ(feedback.encode_seconds, 12.288e-6);
  EXPECT_DOUBLE_EQ(feedback.decode_seconds, 12.288e-6);
  // Exactly one decode of what is sent apart; the wire and the call the same.
  EXPECT_DOUBLE_EQ(feedback.decode_seconds - metered.decode_seconds, 3072 * 4 / 2e9);
  EXPECT_EQ(feedback.wire_bytes, metered.wire_bytes);
  EXPECT_DOUBLE_EQ(feedback.wire_seconds, metered.wire_seconds);
  EXPECT_DOUBLE_EQ(feedback.latency_seconds, metered.latency_seconds);
}

// An all-reduce over 4 of E = 2 (n-1) c = 6144 elements (c = 1024). Reduce phase:
// encode 3072 elements, decode 3072 (x 2 with error feedback); gather phase: encode the
// shard, 1024, decode every shard, 4096. Without error feedback both encodes meter:
// (3072 + 1024) x 4 B / 8e8 = 20.48 us; decode (3072 + 4096) x 4 B / 2e9 = 14.336 us.
// With it: 16384 B / 1e9 = 16.384 us; decode (6144 + 4096) x 4 B / 2e9 = 20.48 us. The
// wire: 6144 codes + 48 group scales = 6336 B at 1e9 = 6.336 us.
TEST(StepCompressionTest, AllReduceBothPhasesFollowErrorFeedback) {
  const PricedCompression metered = Price(false, BoxingKind::kAllReduce, 6144);
  EXPECT_DOUBLE_EQ(metered.encode_seconds, 20.48e-6);
  EXPECT_DOUBLE_EQ(metered.decode_seconds, 14.336e-6);
  const PricedCompression feedback = Price(true, BoxingKind::kAllReduce, 6144);
  EXPECT_DOUBLE_EQ(feedback.encode_seconds, 16.384e-6);
  EXPECT_DOUBLE_EQ(feedback.decode_seconds, 20.48e-6);
  EXPECT_EQ(feedback.text,
            "int8 G=128: 0.0432 ms (encode 0.0164 + wire 0.00634 + decode 0.0205 + latency 0 ms)");
}

// An all-gather over 4 of E = (n-1) c = 3072 (c = 1024): encode the shard, decode every
// shard, 16384 B / 2e9 = 8.192 us, either way. Without error feedback the encode meters,
// 4096 B / 8e8 = 5.12 us; with it (a gradient's all-gather: the shard owner keeps the
// residual) a plain encode, 4096 B / 1e9 = 4.096 us, and no extra decode: the residual
// reads the own shard's decode the output needs anyway. The wire: 3072 codes + 24 4-byte scales
// = 3168 B at 1e9 = 3.168 us, one call, the same both ways.
TEST(StepCompressionTest, AllGatherOfAGradientEncodesPlainlyWithErrorFeedback) {
  const PricedCompression metered = Price(false, BoxingKind::kAllGather, 3072);
  EXPECT_DOUBLE_EQ(metered.encode_seconds, 5.12e-6);
  EXPECT_DOUBLE_EQ(metered.decode_seconds, 8.192e-6);
  const PricedCompression feedback = Price(true, BoxingKind::kAllGather, 3072);
  EXPECT_DOUBLE_EQ(feedback.encode_seconds, 4.096e-6);
  EXPECT_DOUBLE_EQ(feedback.decode_seconds, 8.192e-6);
  EXPECT_EQ(feedback.wire_bytes, 3168);
  EXPECT_DOUBLE_EQ(feedback.wire_seconds, 3.168e-6);
  EXPECT_EQ(feedback.wire_bytes, metered.wire_bytes);
  EXPECT_DOUBLE_EQ(feedback.latency_seconds, metered.latency_seconds);
}

// Two-level all-reduce over 2 nodes x 2 devices, int8 in the node, int4 across, of E =
// 2 (n-1) c = 6144 (c = 1024): in-node (L-1) M c = 2048 elements (8192 B), cross-node
// (M-1) c = 1024 (4096 B), then the gather phase in the in-node codec: encode c = 1024
// (4096 B), decode n c = 4096 (16384 B).
//   without error feedback: encode 8192 / 8e8 + 4096 / 5e8 + 4096 / 8e8 = 10.24 + 8.192
//     + 5.12 = 23.552 us; decode 8192 / 2e9 + 4096 / 4e9 + 16384 / 2e9 = 4.096 + 1.024 +
//     8.192 = 13.312 us
//   with it: encode 8192 / 1e9 + 4096 / 1e9 + 4096 / 1e9 = 16.384 us; decode 2 x 4.096 +
//     2 x 1.024 + 8.192 = 18.432 us: one more decode per level, each in its own codec.
TEST(StepCompressionTest, TwoLevelDecodesOnceMorePerLevelWithErrorFeedback) {
  BoxingContext context = TwoLevelContext();
  const std::optional<PricedCompression> metered =
      PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  ASSERT_TRUE(metered.has_value());
  EXPECT_EQ(metered->cross_node, kInt4);
  EXPECT_DOUBLE_EQ(metered->encode_seconds, 23.552e-6);
  EXPECT_DOUBLE_EQ(metered->decode_seconds, 13.312e-6);
  context.options.error_feedback = true;
  const std::optional<PricedCompression> feedback =
      PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  ASSERT_TRUE(feedback.has_value());
  EXPECT_DOUBLE_EQ(feedback->encode_seconds, 16.384e-6);
  EXPECT_DOUBLE_EQ(feedback->decode_seconds, 18.432e-6);
  EXPECT_DOUBLE_EQ(feedback->decode_seconds - metered->decode_seconds, 8192 / 2e9 + 4096 / 4e9);
}

// A codec measured without a metering-encode figure (the defaults, files written before
// calibrate timed it) prices the metering encode at the encode's rate.
TEST(StepCompressionTest, WithoutAMeteringFigureTheEncodeRateStandsIn) {
  BoxingContext context = Context(false);
  context.options.codec_throughput.SetPasses(kInt8, 1e9, 2e9);
  const std::optional<PricedCompression> priced =
      PriceCompression(context, kFourNodes, 0, BoxingKind::kReduceScatter, 3072);
  ASSERT_TRUE(priced.has_value());
  EXPECT_DOUBLE_EQ(priced->encode_seconds, 12.288e-6);
  EXPECT_DOUBLE_EQ(priced->decode_seconds, 6.144e-6);
}

// The encoder a step runs changes only its encodes: int4's fitted scale adds the fitted
// encode's extra time over the plain encode to each int4 encode (here int4 encode 1e9,
// fitted 4e8 B/s: 1.5 ns per byte more), metering or not; a level whose codec is not int4
// encodes plainly. The two-level all-reduce of TwoLevelDecodesOnceMorePerLevelWithErrorFeedback
// encodes 4096 B in int4 (its cross-node reduce phase), so +6.144 us, and nothing else.
TEST(StepCompressionTest, TheFittedInt4ScaleAddsItsExtraEncodeToInt4Levels) {
  BoxingContext context = TwoLevelContext();
  context.options.codec_throughput.SetVariantEncode(kInt4, EncoderVariant::kFittedInt4Scale, 4e8);
  const std::optional<PricedCompression> plain = PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  context.options.fitted_int4_scale = true;
  const std::optional<PricedCompression> fitted = PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(fitted.has_value());
  EXPECT_DOUBLE_EQ(fitted->encode_seconds - plain->encode_seconds, 4096 * (1 / 4e8 - 1 / 1e9));
  EXPECT_DOUBLE_EQ(fitted->decode_seconds, plain->decode_seconds);
  EXPECT_EQ(fitted->wire_bytes, plain->wire_bytes);
  // An int8 step has no fitted encoder: priced as ReduceScatterDecodesOnceMoreWithErrorFeedback's.
  context.options.reduce_cross_node = kInt8;
  const std::optional<PricedCompression> int8 =
      PriceCompression(context, kFourNodes, 0, BoxingKind::kReduceScatter, 3072);
  ASSERT_TRUE(int8.has_value());
  EXPECT_DOUBLE_EQ(int8->encode_seconds, 15.36e-6);
}

// Stochastic rounding draws a random number per element in every level's encoder, each
// level charged its codec's extra; unmeasured (int8 here), the default extra rate. A
// step with a level that cannot round stochastically (fp8) rounds to nearest everywhere
// (plan_emission_pass.cc), so it is priced plainly; and stochastic rounding wins over the
// fitted scale, as in the plan.
TEST(StepCompressionTest, StochasticRoundingChargesEveryLevelOrNone) {
  BoxingContext context = TwoLevelContext();
  context.options.codec_throughput.SetVariantEncode(kInt4, EncoderVariant::kStochasticRounding, 2e8);
  const std::optional<PricedCompression> plain = PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  context.options.stochastic_rounding = true;
  context.options.fitted_int4_scale = true;
  const std::optional<PricedCompression> stochastic =
      PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(stochastic.has_value());
  // int8: 8192 B reduced + 4096 B gathered at the default extra rate; int4: 4096 B at
  // 1 / 2e8 - 1 / 1e9.
  const double int8_extra = (8192 + 4096) / DefaultExtraEncodeBytesPerSecond(EncoderVariant::kStochasticRounding);
  EXPECT_DOUBLE_EQ(stochastic->encode_seconds - plain->encode_seconds, int8_extra + 4096 * (1 / 2e8 - 1 / 1e9));
  EXPECT_DOUBLE_EQ(stochastic->decode_seconds, plain->decode_seconds);
  const CompressionChoice fp8{CompressionKind::kFp8E4M3, 128, false};
  context.options.codec_throughput.SetPasses(fp8, 1e9, 2e9, 8e8);
  context.options.reduce_in_node = fp8;
  context.options.stochastic_rounding = false;
  context.options.fitted_int4_scale = false;
  const std::optional<PricedCompression> nearest = PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  context.options.stochastic_rounding = true;
  const std::optional<PricedCompression> mixed = PriceCompression(context, kTwoNodesOfTwo, 0, BoxingKind::kAllReduce, 6144);
  ASSERT_TRUE(nearest.has_value());
  ASSERT_TRUE(mixed.has_value());
  EXPECT_DOUBLE_EQ(mixed->encode_seconds, nearest->encode_seconds);
}

}  // namespace
}  // namespace boxing
}  // namespace oneflow
