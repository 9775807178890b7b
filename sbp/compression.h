// The formats a compressed boxing step moves a floating tensor in, and their bytes.
//
// kernels/compression/codec.h runs these formats; this header is what the cost model and
// the plan need to know about them: a name, the group size (values sharing one scale),
// whether groups are Walsh-Hadamard rotated, and the bytes `elements` values take on the
// wire. The byte count mirrors the codec's EncodedBytes exactly: for ng = ceil(E / G)
// groups, one f32 scale per group and the payload (one byte per element; int4 packs two
// per byte):
//   fp8e4m3, fp8e5m2, int8   E + 4 ng          int4   ceil(E / 2) + 4 ng
//   bf16                     2 E               (no groups: each element rounded by itself;
//                                              `group_size` unused, `hadamard` refused)
#ifndef SBP_COMPRESSION_H_
#define SBP_COMPRESSION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/dtype.h"

namespace oneflow {

// TACO's activation codec is kFp8E4M3 with hadamard (its pre-scale cancels against the
// group scale; kernels/compression/taco_equivalence_test.cc): --compression=auto's
// activations travel as "fp8e4m3 G=128 hadamard".
enum class CompressionKind { kNone, kFp8E4M3, kFp8E5M2, kInt4, kInt8, kBf16 };

// "none", "fp8e4m3", "fp8e5m2", "int4", "int8", "bf16" (the codec's own names).
absl::string_view CompressionKindName(CompressionKind kind);

// One codec configuration: the format, its group size and whether groups are rotated.
struct CompressionChoice {
  CompressionKind kind = CompressionKind::kNone;
  int64_t group_size = 128;
  bool hadamard = false;

  bool compressed() const { return kind != CompressionKind::kNone; }
  bool operator==(const CompressionChoice& other) const {
    return kind == other.kind && group_size == other.group_size && hadamard == other.hadamard;
  }
  bool operator!=(const CompressionChoice& other) const { return !(*this == other); }
};

// "none", or "int8 G=512 hadamard", "fp8e4m3 G=128", "bf16" (no groups): how reasons and
// keys spell a choice.
std::string CompressionChoiceText(const CompressionChoice& choice);

// OK for kNone and for a configuration the codecs accept: group_size >= 1, and a power of
// two in [32, 2048] when the groups are rotated (hadamard); bf16
// without hadamard.
// INVALID_ARGUMENT naming the codec otherwise:
//   compression int4 G=100 hadamard: the Walsh-Hadamard transform needs a group size
//   that is a power of two in [32, 2048]
absl::Status CheckCompressionChoice(const CompressionChoice& choice);

// The bytes that carry `elements` elements of `dtype` on the wire.
struct WireBytes {
  int64_t bytes = 0;
  // True when the bytes were counted compressed: a non-kNone format that is smaller than
  // the dense bytes for these elements.
  bool compressed = false;
};

// Dense bytes (elements * SizeOf(dtype)), or the encoded bytes of the top of this file
// when `choice` compresses and the encoding is smaller than the dense bytes (fp8 of an
// 8-bit tensor, or one element whose scale outweighs the saving, stays dense).
// Preconditions: elements >= 0 and CheckCompressionChoice(choice) is OK.
WireBytes CountWireBytes(int64_t elements, DType dtype, const CompressionChoice& choice);

}  // namespace oneflow

#endif  // SBP_COMPRESSION_H_
