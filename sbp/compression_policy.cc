#include "sbp/compression_policy.h"

namespace oneflow {
namespace {

// The group size of forced and hinted codecs is the policy's; these are the literature's.
constexpr CompressionChoice kActivationCodec{CompressionKind::kFp8E4M3, 128, true};
constexpr CompressionChoice kGradientInNode{CompressionKind::kInt8, 512, true};
constexpr CompressionChoice kGradientCrossNode{CompressionKind::kInt4, 128, true};
constexpr CompressionChoice kWeightCodec{CompressionKind::kInt8, 128, false};

// The automatic options of each role (the table of the header).
BoxingOptions AutomaticFor(TensorRole role) {
  BoxingOptions options;
  switch (role) {
    case TensorRole::kActivation:
      options = BoxingOptions::Everywhere(kActivationCodec);
      break;
    case TensorRole::kGradient:
      options.reduce_in_node = kGradientInNode;
      options.reduce_cross_node = kGradientCrossNode;
      options.two_level = true;
      options.gather = kWeightCodec;
      options.compress_intra_node = true;
      break;
    case TensorRole::kWeight:
      options = BoxingOptions::Everywhere(kWeightCodec);
      break;
    case TensorRole::kNever:
      return options;
  }
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

BoxingOptions BoxingOptionsFor(const CompressionPolicy& policy, TensorRole role,
                               std::optional<CompressionKind> hint) {
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
    }
  } else {
    options = AutomaticFor(role);
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
