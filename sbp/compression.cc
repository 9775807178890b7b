#include "sbp/compression.h"

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace {

// The Walsh-Hadamard transform of kernels/compression/hadamard.h.
constexpr int64_t kMinRotatedGroup = 32;
constexpr int64_t kMaxRotatedGroup = 2048;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

bool Rotates(const CompressionChoice& choice) {
  return choice.hadamard && choice.kind != CompressionKind::kNone && choice.kind != CompressionKind::kBf16;
}

// f32 values per group ahead of the payload: one scale; bf16 has no groups.
int64_t ParametersPerGroup(CompressionKind kind) { return kind == CompressionKind::kBf16 ? 0 : 1; }

int64_t PayloadBytes(CompressionKind kind, int64_t elements) {
  switch (kind) {
    case CompressionKind::kInt4:
      return (elements + 1) / 2;
    case CompressionKind::kBf16:
      return 2 * elements;
    default:
      return elements;
  }
}

}  // namespace

absl::string_view CompressionKindName(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone:
      return "none";
    case CompressionKind::kFp8E4M3:
      return "fp8e4m3";
    case CompressionKind::kFp8E5M2:
      return "fp8e5m2";
    case CompressionKind::kInt4:
      return "int4";
    case CompressionKind::kInt8:
      return "int8";
    case CompressionKind::kBf16:
      return "bf16";
  }
  return "?";
}

std::string CompressionChoiceText(const CompressionChoice& choice) {
  if (!choice.compressed()) return "none";
  if (choice.kind == CompressionKind::kBf16) return choice.hadamard ? "bf16 hadamard" : "bf16";
  return absl::StrCat(CompressionKindName(choice.kind), " G=", choice.group_size,
                      choice.hadamard ? " hadamard" : "");
}

absl::Status CheckCompressionChoice(const CompressionChoice& choice) {
  if (!choice.compressed()) return absl::OkStatus();
  if (choice.group_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("compression ", CompressionChoiceText(choice),
                                                   ": the group size must be >= 1"));
  }
  if (choice.kind == CompressionKind::kBf16 && choice.hadamard) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression ", CompressionChoiceText(choice),
        ": bf16 rounds each element by itself and has no groups to rotate"));
  }
  if (Rotates(choice) && (!IsPowerOfTwo(choice.group_size) || choice.group_size < kMinRotatedGroup ||
                          choice.group_size > kMaxRotatedGroup)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression ", CompressionChoiceText(choice),
        ": the Walsh-Hadamard transform needs a group size that is a power of two in [",
        kMinRotatedGroup, ", ", kMaxRotatedGroup, "]"));
  }
  return absl::OkStatus();
}

WireBytes CountWireBytes(int64_t elements, DType dtype, const CompressionChoice& choice) {
  const int64_t dense = elements * SizeOf(dtype);
  if (!choice.compressed() || elements == 0) return WireBytes{dense, false};
  const int64_t payload = PayloadBytes(choice.kind, elements);
  const int64_t groups = (elements + choice.group_size - 1) / choice.group_size;
  const int64_t encoded = payload + groups * ParametersPerGroup(choice.kind) * 4;
  if (encoded >= dense) return WireBytes{dense, false};
  return WireBytes{encoded, true};
}

}  // namespace oneflow
