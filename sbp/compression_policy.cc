#include "sbp/compression_policy.h"

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace {

// The group size of forced and hinted codecs is the policy's; these are the literature's.
constexpr CompressionChoice kActivationCodec{CompressionKind::kFp8E4M3, 128, true};
constexpr CompressionChoice kGradientInNode{CompressionKind::kInt8, 512, true};
constexpr CompressionChoice kGradientCrossNode{CompressionKind::kInt4, 128, true};
// Across nodes where int4 is refused (AdamW without a dense warm-up): int8 without the
// rotation. Its groups of 128 put 2.3% more on the wire than int8 G=512 hadamard (1.031
// against 1.008 bytes an element) for a quarter of the encode's CPU (calibrated on the
// 2-core VM: 19 against 4.6 GB/s); on a host whose cores the step's compute fills, that CPU
// is step time (dp3_h512 `auto` on 3 emulated hosts, alternated pairs: launched 485 / 549
// and 446 / 500 ms, in one process 398-403 against 449-454; docs/sbp_and_boxing.md), and
// the rotation buys nothing measurable at 8 bits (final-loss gap under AdamW -0.12% +- 0.10
// against +0.03% +- 0.15, codec_accuracy.cc).
constexpr CompressionChoice kGradientCrossNodeInt8{CompressionKind::kInt8, 128, false};
constexpr CompressionChoice kWeightCodec{CompressionKind::kInt8, 128, false};

AccuracyRole AccuracyRoleOf(TensorRole role) {
  switch (role) {
    case TensorRole::kActivation:
      return AccuracyRole::kActivation;
    case TensorRole::kWeight:
      return AccuracyRole::kWeight;
    default:
      return AccuracyRole::kGradient;
  }
}

// The first of the slot's candidates within the bound; kNone (dense) when none is. When
// a candidate was refused, `refused` holds the first one refused and why, and what was
// used instead.
CompressionChoice PickWithinBound(const CompressionPolicy& policy, TensorRole role, CodecSlot slot,
                                  const TrainingSetup& setup, BoxingOptions::AccuracyRefusal* refused) {
  std::string why;
  for (const CompressionChoice& candidate : AutomaticCandidates(role, slot)) {
    const AccuracyVerdict verdict = CodecWithinBound(candidate, AccuracyRoleOf(role), setup, policy.accuracy_bound);
    if (verdict.within_bound) {
      if (refused->codec.compressed()) {
        refused->note = absl::StrCat(why, "; so ", CompressionChoiceText(candidate), " (", verdict.text, ")");
      }
      return candidate;
    }
    if (!refused->codec.compressed()) refused->codec = candidate;
    absl::StrAppend(&why, why.empty() ? "accuracy: not " : "; not ", verdict.text);
  }
  if (refused->codec.compressed()) refused->note = absl::StrCat(why, "; so dense");
  return CompressionChoice{CompressionKind::kNone, 128, false};
}

// The automatic options of each role (the table of the header), each slot's codec the
// first candidate within the accuracy bound.
BoxingOptions AutomaticFor(const CompressionPolicy& policy, TensorRole role, const TrainingSetup& setup) {
  BoxingOptions options;
  if (role == TensorRole::kNever) return options;
  options.reduce_in_node =
      PickWithinBound(policy, role, CodecSlot::kReduceInNode, setup, &options.reduce_in_node_refused);
  options.reduce_cross_node =
      PickWithinBound(policy, role, CodecSlot::kReduceCrossNode, setup, &options.reduce_cross_node_refused);
  options.gather = PickWithinBound(policy, role, CodecSlot::kGather, setup, &options.gather_refused);
  options.two_level = role == TensorRole::kGradient;
  options.compress_intra_node = true;
  options.automatic = true;
  return options;
}

}  // namespace

absl::string_view TensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kActivation:
      return "activation";
    case TensorRole::kGradient:
      return "gradient";
    case TensorRole::kWeight:
      return "weight";
    case TensorRole::kNever:
      return "never";
  }
  return "?";
}

std::vector<CompressionChoice> AutomaticCandidates(TensorRole role, CodecSlot slot) {
  switch (role) {
    case TensorRole::kActivation:
      return {kActivationCodec, kWeightCodec};
    case TensorRole::kGradient:
      if (slot == CodecSlot::kReduceCrossNode) return {kGradientCrossNode, kGradientCrossNodeInt8};
      if (slot == CodecSlot::kReduceInNode) return {kGradientInNode};
      return {kWeightCodec};
    case TensorRole::kWeight:
      return {kWeightCodec};
    case TensorRole::kNever:
      return {};
  }
  return {};
}

BoxingOptions BoxingOptionsFor(const CompressionPolicy& policy, TensorRole role,
                               std::optional<CompressionKind> hint, const TrainingSetup& setup) {
  BoxingOptions options;
  if (role == TensorRole::kGradient && !hint.has_value() && policy.gradient_wire != GradientWire::kFp32) {
    options = BoxingOptions::Everywhere({CompressionKind::kBf16, 1, false});
    options.automatic = policy.gradient_wire == GradientWire::kAuto;
    options.codec_throughput = policy.codec_throughput;
    return options;
  }
  if (policy.mode == CompressionMode::kOff) return options;
  // Forced and hinted codecs do not rotate: on the gpt of tests/compression_test.cc a
  // rotated forced int4 trained worse (+3.7% vs +2.5% mean loss over 200 iterations).
  auto group_of = [&](CompressionKind kind) {
    return kind == CompressionKind::kInt4 ? policy.int4_group_size : policy.group_size;
  };
  if (hint.has_value()) {
    if (*hint != CompressionKind::kNone) options = BoxingOptions::Everywhere({*hint, group_of(*hint), false});
  } else if (policy.mode == CompressionMode::kForced) {
    if (role != TensorRole::kNever) {
      options = BoxingOptions::Everywhere({policy.forced, group_of(policy.forced), false});
      options.compress_intra_node = policy.forced_intra_node;
    }
  } else {
    options = AutomaticFor(policy, role, setup);
  }
  options.codec_throughput = policy.codec_throughput;
  return options;
}

std::vector<CompressionChoice> PickableCodecs() {
  return {kActivationCodec,
          kGradientInNode,
          kGradientCrossNode,
          kWeightCodec,
          {CompressionKind::kFp8E4M3, 128, false},
          {CompressionKind::kInt4, 32, false},
          {CompressionKind::kBf16, 1, false}};
}

}  // namespace oneflow
