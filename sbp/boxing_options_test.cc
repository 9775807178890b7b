#include "sbp/boxing_options.h"

#include "gtest/gtest.h"

namespace oneflow {
namespace {

using Compression = BoxingOptions::Compression;

TEST(BoxingOptionsTest, Names) {
  EXPECT_EQ(CompressionName(Compression::kNone), "none");
  EXPECT_EQ(CompressionName(Compression::kFp8E4M3), "fp8e4m3");
  EXPECT_EQ(CompressionName(Compression::kFp8E5M2), "fp8e5m2");
  EXPECT_EQ(CompressionName(Compression::kInt4), "int4");
}

TEST(BoxingOptionsTest, DenseBytesAreElementsTimesSize) {
  const WireBytes dense = CountWireBytes(1000, DType::kBF16, Compression::kNone, 128);
  EXPECT_EQ(dense.bytes, 2000);
  EXPECT_FALSE(dense.compressed);
}

TEST(BoxingOptionsTest, CompressedBytesArePayloadPlusOneScalePerBlock) {
  // 1000 elements: 8 blocks of 128 (the last partial), 8 f32 scales = 32 bytes.
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Compression::kFp8E4M3, 128).bytes, 1000 + 32);
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Compression::kFp8E5M2, 128).bytes, 1000 + 32);
  EXPECT_EQ(CountWireBytes(1000, DType::kF32, Compression::kInt4, 128).bytes, 500 + 32);
  // Odd element counts round the 4-bit payload up to whole bytes.
  EXPECT_EQ(CountWireBytes(3, DType::kF32, Compression::kInt4, 128).bytes, 2 + 4);
  EXPECT_TRUE(CountWireBytes(1000, DType::kBF16, Compression::kFp8E4M3, 128).compressed);
}

TEST(BoxingOptionsTest, CompressionThatDoesNotShrinkStaysDense) {
  // fp8 of an 8-bit tensor, and a single element whose scale outweighs the saving.
  const WireBytes same_width = CountWireBytes(1000, DType::kF8E4M3, Compression::kFp8E5M2, 128);
  EXPECT_EQ(same_width.bytes, 1000);
  EXPECT_FALSE(same_width.compressed);
  const WireBytes tiny = CountWireBytes(1, DType::kF32, Compression::kFp8E4M3, 128);
  EXPECT_EQ(tiny.bytes, 4);
  EXPECT_FALSE(tiny.compressed);
  EXPECT_EQ(CountWireBytes(0, DType::kF32, Compression::kInt4, 128).bytes, 0);
  // int4 of an 8-bit tensor does shrink.
  EXPECT_EQ(CountWireBytes(1000, DType::kF8E4M3, Compression::kInt4, 128).bytes, 532);
}

}  // namespace
}  // namespace oneflow
