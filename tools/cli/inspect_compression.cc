#include "tools/cli/inspect_compression.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oneflow::cli {

std::string CodecText(proto::Compression::Kind kind) {
  switch (kind) {
    case proto::Compression::NONE:
      return "none";
    case proto::Compression::FP8_E4M3:
      return "fp8e4m3";
    case proto::Compression::FP8_E5M2:
      return "fp8e5m2";
    case proto::Compression::INT4:
      return "int4";
    case proto::Compression::INT8:
      return "int8";
    case proto::Compression::BF16:
      return "bf16";
    default:
      return absl::StrCat("unknown(", static_cast<int>(kind), ")");
  }
}

namespace {

std::string LevelText(proto::Compression::Kind kind, int64_t group_size, bool hadamard) {
  // bf16 rounds each element by itself: no groups to name.
  if (kind == proto::Compression::BF16) return CodecText(kind);
  return absl::StrCat(CodecText(kind), " (group ", group_size, hadamard ? ", hadamard" : "", ")");
}

}  // namespace

bool IsCompressed(const proto::BoxingStepDef& step) {
  return step.compression().kind() != proto::Compression::NONE;
}

bool IsTwoLevel(const proto::BoxingStepDef& step) {
  return IsCompressed(step) && step.compression().cross_node_kind() != proto::Compression::NONE;
}

std::string RoundingText(proto::Compression::Rounding rounding) {
  switch (rounding) {
    case proto::Compression::NEAREST:
      return "nearest";
    case proto::Compression::STOCHASTIC:
      return "stochastic";
    default:
      return absl::StrCat("unknown(", static_cast<int>(rounding), ")");
  }
}

std::string StepCodecText(const proto::BoxingStepDef& step) {
  const proto::Compression& compression = step.compression();
  // Nearest is the default and says nothing, so plans without the field print as before.
  std::string rounding = compression.rounding() == proto::Compression::NEAREST
                             ? ""
                             : absl::StrCat(", ", RoundingText(compression.rounding()), " rounding");
  // The int4 scale chosen by error (--int4_gradient_scale=fitted), likewise.
  if (compression.fitted_int4_scale()) absl::StrAppend(&rounding, ", fitted int4 scale");
  // The dense warm-up, likewise printed only where the plan has one.
  if (compression.dense_warmup_iterations() > 0) {
    absl::StrAppend(&rounding, ", dense for the first ", compression.dense_warmup_iterations(), " iterations");
  }
  const std::string in_node = LevelText(compression.kind(), compression.block_size(), compression.hadamard());
  if (!IsTwoLevel(step)) return absl::StrCat(in_node, rounding);
  return absl::StrCat("two-level: ", in_node, " in-node + ",
                      LevelText(compression.cross_node_kind(), compression.cross_node_block_size(),
                                compression.cross_node_hadamard()),
                      " cross-node", rounding);
}

std::optional<double> SecondsSaved(const proto::BoxingStepDef& step) {
  if (!IsCompressed(step)) return std::nullopt;
  return step.seconds_saved();
}

CompressionFigures::CompressionFigures(const proto::Plan& plan, const PlanIndex& /*index*/)
    : dense_steps_(plan.boxings_size()),
      dense_boxings_(plan.boxings_size(), 0),
      dense_sent_(plan.devices_size(), 0),
      dense_received_(plan.devices_size(), 0) {
  for (int d = 0; d < plan.devices_size(); ++d) {
    dense_sent_[d] = plan.devices(d).bytes_sent_per_iter();
    dense_received_[d] = plan.devices(d).bytes_received_per_iter();
  }
  for (int b = 0; b < plan.boxings_size(); ++b) {
    const proto::BoxingDef& boxing = plan.boxings(b);
    const proto::Placement* placement = &boxing.src_placement();
    dense_boxings_[b] = boxing.bytes_per_iter();
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.kind() == proto::STEP_SEND_RECV) placement = &boxing.dst_placement();
      std::optional<int64_t> dense = step.bytes_per_device();
      if (IsCompressed(step)) dense = step.dense_bytes_per_device();
      dense_steps_[b].push_back(dense);
      if (!IsCompressed(step) || !dense.has_value()) continue;
      const int64_t saved = *dense - step.bytes_per_device();
      dense_boxings_[b] += saved * placement->devices_size();
      for (int d = 0; d < plan.devices_size(); ++d) {
        for (const proto::DeviceId& member : placement->devices()) {
          if (member.node() != plan.devices(d).device().node() ||
              member.device() != plan.devices(d).device().device()) {
            continue;
          }
          dense_sent_[d] += saved;
          dense_received_[d] += saved;
        }
      }
    }
  }
}

std::optional<int64_t> CompressionFigures::DenseStepBytes(int boxing, int step) const {
  return dense_steps_[boxing][step];
}

int64_t CompressionFigures::DenseBoxingBytes(int boxing) const { return dense_boxings_[boxing]; }

int64_t CompressionFigures::DenseBoxingBytesInAll() const {
  int64_t total = 0;
  for (int64_t bytes : dense_boxings_) total += bytes;
  return total;
}

}  // namespace oneflow::cli
