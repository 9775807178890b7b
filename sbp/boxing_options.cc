#include "sbp/boxing_options.h"

namespace oneflow {

absl::string_view CompressionName(BoxingOptions::Compression compression) {
  switch (compression) {
    case BoxingOptions::Compression::kNone:
      return "none";
    case BoxingOptions::Compression::kFp8E4M3:
      return "fp8e4m3";
    case BoxingOptions::Compression::kFp8E5M2:
      return "fp8e5m2";
    case BoxingOptions::Compression::kInt4:
      return "int4";
    case BoxingOptions::Compression::kInt8:
      return "int8";
  }
  return "?";
}

int64_t CompressionBits(BoxingOptions::Compression compression) {
  switch (compression) {
    case BoxingOptions::Compression::kNone:
      return 0;
    case BoxingOptions::Compression::kFp8E4M3:
    case BoxingOptions::Compression::kFp8E5M2:
    case BoxingOptions::Compression::kInt8:
      return 8;
    case BoxingOptions::Compression::kInt4:
      return 4;
  }
  return 0;
}

WireBytes CountWireBytes(int64_t elements, DType dtype, BoxingOptions::Compression compression,
                         int64_t block_elements) {
  const int64_t dense = elements * SizeOf(dtype);
  const int64_t bits = CompressionBits(compression);
  if (bits == 0 || elements == 0 || bits >= 8 * SizeOf(dtype)) return WireBytes{dense, false};
  constexpr int64_t kScaleBytes = 4;  // One f32 scale per block.
  const int64_t payload = (elements * bits + 7) / 8;
  const int64_t scales = (elements + block_elements - 1) / block_elements * kScaleBytes;
  if (payload + scales >= dense) return WireBytes{dense, false};
  return WireBytes{payload + scales, true};
}

}  // namespace oneflow
