// A step's compression read from the plan: both levels of the two-level form, and the
// errors for codecs this build does not know or options the codecs refuse.
#include "kernels/boxing/step_proto.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

proto::Compression TwoLevel() {
  proto::Compression compression;
  compression.set_kind(proto::Compression::INT8);
  compression.set_block_size(512);
  compression.set_hadamard(true);
  compression.set_cross_node_kind(proto::Compression::INT4);
  compression.set_cross_node_block_size(128);
  compression.set_cross_node_hadamard(true);
  return compression;
}

TEST(StepCompressionTest, ReadsBothLevels) {
  const absl::StatusOr<StepCompression> step = StepCompressionFromProto(TwoLevel());
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(step->two_level());
  EXPECT_EQ(step->codec.codec, Codec::kInt8);
  EXPECT_EQ(step->codec.group_size, 512);
  EXPECT_TRUE(step->codec.hadamard);
  EXPECT_EQ(step->cross_node.codec, Codec::kInt4);
  EXPECT_EQ(step->cross_node.group_size, 128);
  EXPECT_TRUE(step->cross_node.hadamard);
}

TEST(StepCompressionTest, OneLevelWhenTheCrossNodeKindIsNone) {
  proto::Compression compression = TwoLevel();
  compression.set_cross_node_kind(proto::Compression::NONE);
  const absl::StatusOr<StepCompression> step = StepCompressionFromProto(compression);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_FALSE(step->two_level());
  EXPECT_EQ(step->codec.codec, Codec::kInt8);
  EXPECT_EQ(step->cross_node.codec, Codec::kNone);
  // Unset: dense.
  const absl::StatusOr<StepCompression> dense = StepCompressionFromProto(proto::Compression());
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(dense->codec.codec, Codec::kNone);
  EXPECT_FALSE(dense->two_level());
}

TEST(StepCompressionTest, StochasticRoundingReachesBothLevels) {
  proto::Compression compression = TwoLevel();
  EXPECT_FALSE(StepCompressionFromProto(compression)->codec.stochastic_rounding);
  compression.set_rounding(proto::Compression::STOCHASTIC);
  compression.set_rounding_seed(77);
  const absl::StatusOr<StepCompression> step = StepCompressionFromProto(compression);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(step->codec.stochastic_rounding);
  EXPECT_TRUE(step->cross_node.stochastic_rounding);
  // One level: the dense cross-node level has no rounding.
  compression.set_cross_node_kind(proto::Compression::NONE);
  const absl::StatusOr<StepCompression> flat = StepCompressionFromProto(compression);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_TRUE(flat->codec.stochastic_rounding);
  EXPECT_FALSE(flat->cross_node.stochastic_rounding);
  // The act's seed: the step's seed mixed with the act, a different stream per act.
  EXPECT_EQ(StochasticRoundingSeed(compression, 5), MixSeed(77, 5));
  EXPECT_NE(StochasticRoundingSeed(compression, 5), StochasticRoundingSeed(compression, 6));
  compression.set_rounding_seed(78);
  EXPECT_NE(StochasticRoundingSeed(compression, 5), MixSeed(77, 5));
}

TEST(StepCompressionTest, FittedInt4ScaleReachesBothLevels) {
  proto::Compression compression = TwoLevel();
  EXPECT_FALSE(StepCompressionFromProto(compression)->cross_node.fitted_int4_scale);
  compression.set_fitted_int4_scale(true);
  const absl::StatusOr<StepCompression> step = StepCompressionFromProto(compression);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(step->codec.fitted_int4_scale);
  EXPECT_TRUE(step->cross_node.fitted_int4_scale);
  EXPECT_EQ(CodecFromProto(compression)->fitted_int4_scale, true);
}

TEST(StepCompressionTest, StochasticRoundingNeedsAnIntegerCodec) {
  proto::Compression compression = TwoLevel();
  compression.set_rounding(proto::Compression::STOCHASTIC);
  compression.set_kind(proto::Compression::FP8_E4M3);
  compression.set_hadamard(false);
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError(
                "codec fp8e4m3: stochastic_rounding is set; only int4 and int8 round stochastically"));
  proto::Compression dense;
  dense.set_rounding(proto::Compression::STOCHASTIC);
  EXPECT_EQ(CodecFromProto(dense).status(),
            absl::InvalidArgumentError("rounding STOCHASTIC on a dense step; only int4 and int8 encoders round"));
  compression = TwoLevel();
  compression.set_rounding(static_cast<proto::Compression::Rounding>(7));
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError("rounding 7 is not one this build knows (NEAREST, STOCHASTIC)"));
}

// Plans written before the rename carry kind 5 (TACO_FP8, now reserved): the bytes of
// such a step still parse (proto3 keeps the unknown value), and the step is refused with
// what to do.
TEST(StepCompressionTest, RemovedTacoFp8SaysToRecompile) {
  proto::Compression old_step;
  old_step.set_kind(static_cast<proto::Compression::Kind>(5));
  old_step.set_block_size(128);
  proto::Compression read;
  ASSERT_TRUE(read.ParseFromString(old_step.SerializeAsString()));
  EXPECT_EQ(static_cast<int>(read.kind()), 5);
  const absl::Status refused = StepCompressionFromProto(read).status();
  EXPECT_EQ(refused, absl::InvalidArgumentError(
                         "codec 5 (TACO_FP8) is no longer run: it was FP8_E4M3 with hadamard and a second scale "
                         "per group; recompile the plan (its activation steps become FP8_E4M3 with hadamard)"));
  proto::Compression cross_node = TwoLevel();
  cross_node.set_cross_node_kind(static_cast<proto::Compression::Kind>(5));
  EXPECT_THAT(std::string(StepCompressionFromProto(cross_node).status().message()),
              ::testing::StartsWith("cross-node codec 5 (TACO_FP8) is no longer run"));
}

TEST(StepCompressionTest, ErrorsNameTheLevel) {
  proto::Compression compression = TwoLevel();
  compression.set_cross_node_kind(static_cast<proto::Compression::Kind>(9));
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError("cross-node codec 9 is not one this build knows"));
  compression = TwoLevel();
  compression.set_cross_node_block_size(100);
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError("cross-node codec int4 with hadamard: group_size is 100; the Walsh-Hadamard "
                                       "transform needs a power of two in [32, 2048]"));
  compression = TwoLevel();
  compression.set_block_size(0);
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError("codec int8: group_size is 0; it must be >= 1"));
  compression = TwoLevel();
  compression.set_kind(proto::Compression::NONE);
  EXPECT_EQ(StepCompressionFromProto(compression).status(),
            absl::InvalidArgumentError(
                "cross-node codec int4 without an in-node codec; a two-level step compresses both levels"));
}

}  // namespace
}  // namespace oneflow
