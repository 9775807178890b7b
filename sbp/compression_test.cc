#include "sbp/compression.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

CompressionChoice Choice(CompressionKind kind, int64_t group = 128, bool hadamard = false) {
  return CompressionChoice{kind, group, hadamard};
}

TEST(CompressionTest, Names) {
  EXPECT_EQ(CompressionKindName(CompressionKind::kNone), "none");
  EXPECT_EQ(CompressionKindName(CompressionKind::kFp8E4M3), "fp8e4m3");
  EXPECT_EQ(CompressionKindName(CompressionKind::kFp8E5M2), "fp8e5m2");
  EXPECT_EQ(CompressionKindName(CompressionKind::kInt4), "int4");
  EXPECT_EQ(CompressionKindName(CompressionKind::kInt8), "int8");
  EXPECT_EQ(CompressionChoiceText(Choice(CompressionKind::kInt8, 512, true)), "int8 G=512 hadamard");
  // --compression=auto's activation codec (TACO's FP8 with its rotation).
  EXPECT_EQ(CompressionChoiceText(Choice(CompressionKind::kFp8E4M3, 128, true)), "fp8e4m3 G=128 hadamard");
  EXPECT_EQ(CompressionChoiceText(Choice(CompressionKind::kNone)), "none");
}

TEST(CompressionTest, DenseBytesAreElementsTimesSize) {
  const WireBytes dense = CountWireBytes(1000, DType::kBF16, Choice(CompressionKind::kNone));
  EXPECT_EQ(dense.bytes, 2000);
  EXPECT_FALSE(dense.compressed);
}

TEST(CompressionTest, CompressedBytesArePayloadPlusScalesPerGroup) {
  // 1000 elements: 8 groups of 128 (the last partial), 8 f32 scales = 32 bytes.
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kFp8E4M3)).bytes, 1000 + 32);
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kFp8E5M2)).bytes, 1000 + 32);
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kInt8)).bytes, 1000 + 32);
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kInt4)).bytes, 500 + 32);
  // The rotation adds no bytes: one f32 per group (TACO sent two, 1000 + 64 here).
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kFp8E4M3, 128, true)).bytes, 1000 + 32);
  // Groups of 512: 2 scales.
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Choice(CompressionKind::kInt8, 512, true)).bytes, 1000 + 8);
  // Odd element counts round the 4-bit payload up to whole bytes.
  EXPECT_EQ(CountWireBytes(3, DType::kF32, Choice(CompressionKind::kInt4)).bytes, 2 + 4);
  EXPECT_TRUE(CountWireBytes(1000, DType::kBF16, Choice(CompressionKind::kFp8E4M3)).compressed);
}

TEST(CompressionTest, CompressionThatDoesNotShrinkStaysDense) {
  // fp8 of an 8-bit tensor, and a single element whose scale outweighs the saving.
  const WireBytes same_width = CountWireBytes(1000, DType::kF8E4M3, Choice(CompressionKind::kFp8E5M2));
  EXPECT_EQ(same_width.bytes, 1000);
  EXPECT_FALSE(same_width.compressed);
  const WireBytes tiny = CountWireBytes(1, DType::kF32, Choice(CompressionKind::kFp8E4M3));
  EXPECT_EQ(tiny.bytes, 4);
  EXPECT_FALSE(tiny.compressed);
  EXPECT_EQ(CountWireBytes(0, DType::kF32, Choice(CompressionKind::kInt4)).bytes, 0);
  // int4 of an 8-bit tensor does shrink.
  EXPECT_EQ(CountWireBytes(1000, DType::kF8E4M3, Choice(CompressionKind::kInt4)).bytes, 532);
}

TEST(CompressionTest, ChecksWhatTheCodecsAccept) {
  EXPECT_TRUE(CheckCompressionChoice(Choice(CompressionKind::kNone, 0)).ok());
  EXPECT_TRUE(CheckCompressionChoice(Choice(CompressionKind::kInt8, 100)).ok());
  EXPECT_EQ(CheckCompressionChoice(Choice(CompressionKind::kInt8, 0)).message(),
            "compression int8 G=0: the group size must be >= 1");
  EXPECT_EQ(CheckCompressionChoice(Choice(CompressionKind::kInt4, 100, true)).message(),
            "compression int4 G=100 hadamard: the Walsh-Hadamard transform needs a group size that is a "
            "power of two in [32, 2048]");
  EXPECT_EQ(CheckCompressionChoice(Choice(CompressionKind::kFp8E4M3, 16, true)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckCompressionChoice(Choice(CompressionKind::kFp8E4M3, 2048, true)).ok());
}

// bf16 on the wire (--gradient_wire): two bytes an element, no scales, whatever the group
// size; a bf16 tensor does not shrink, so it stays dense; hadamard is refused.
TEST(CompressionTest, Bf16IsTwoBytesAnElementWithoutScales) {
  EXPECT_EQ(CompressionKindName(CompressionKind::kBf16), "bf16");
  EXPECT_EQ(CompressionChoiceText(Choice(CompressionKind::kBf16, 1)), "bf16");
  const WireBytes f32 = CountWireBytes(1001, DType::kF32, Choice(CompressionKind::kBf16, 1));
  EXPECT_EQ(f32.bytes, 2002);
  EXPECT_TRUE(f32.compressed);
  EXPECT_EQ(CountWireBytes(1001, DType::kF32, Choice(CompressionKind::kBf16, 128)).bytes, 2002);
  EXPECT_EQ(CountWireBytes(1, DType::kF32, Choice(CompressionKind::kBf16, 1)).bytes, 2);
  const WireBytes bf16 = CountWireBytes(1001, DType::kBF16, Choice(CompressionKind::kBf16, 1));
  EXPECT_EQ(bf16.bytes, 2002);
  EXPECT_FALSE(bf16.compressed);
  EXPECT_TRUE(CheckCompressionChoice(Choice(CompressionKind::kBf16, 1)).ok());
  EXPECT_EQ(CheckCompressionChoice(Choice(CompressionKind::kBf16, 1, true)).message(),
            "compression bf16 hadamard: bf16 rounds each element by itself and has no groups to rotate");
}

}  // namespace
}  // namespace oneflow
