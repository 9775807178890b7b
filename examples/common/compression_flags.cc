#include "examples/common/compression_flags.h"

#include <cmath>

#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sbp/calibration.h"
#include "sbp/codec_throughput.h"

namespace oneflow::examples {

absl::StatusOr<CompressionPolicy> CompressionPolicyFromFlags(const CompressionFlags& flags) {
  CompressionPolicy policy;
  const std::string& mode = flags.compression;
  if (mode == "off") {
    policy.mode = CompressionMode::kOff;
  } else if (mode == "auto") {
    policy.mode = CompressionMode::kAuto;
  } else if (mode == "fp8" || mode == "int8" || mode == "int4") {
    policy.mode = CompressionMode::kForced;
    policy.forced = mode == "fp8"    ? CompressionKind::kFp8E4M3
                    : mode == "int8" ? CompressionKind::kInt8
                                     : CompressionKind::kInt4;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--compression=", mode, " is not a choice; valid: off, auto, fp8, int8, int4"));
  }
  if (!flags.compress_in_node) {
    if (policy.mode != CompressionMode::kForced) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nocompress_in_node acts on a forced codec, and --compression=", mode,
          mode == "auto" ? " decides each in-node step by the cost model" : " compresses none",
          "; use --compression=fp8, int8 or int4 with it"));
    }
    policy.forced_intra_node = false;
  }
  if (flags.gradient_wire == "fp32") {
    policy.gradient_wire = GradientWire::kFp32;
  } else if (flags.gradient_wire == "bf16") {
    policy.gradient_wire = GradientWire::kBf16;
  } else if (flags.gradient_wire == "auto") {
    policy.gradient_wire = GradientWire::kAuto;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--gradient_wire=", flags.gradient_wire, " is not a choice; valid: fp32, bf16, auto"));
  }
  if (flags.codec_accuracy_bound == "off") {
    policy.accuracy_bound = AccuracyBound{-1, -1, -1};
  } else {
    double bound = 0;
    if (!absl::SimpleAtod(flags.codec_accuracy_bound, &bound) || !std::isfinite(bound) || bound < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--codec_accuracy_bound=", flags.codec_accuracy_bound,
                                                     " is not a choice; valid: a final-loss gap >= 0 as a fraction "
                                                     "of dense's (0.005 is 0.5%, the default), or off"));
    }
    policy.accuracy_bound = AccuracyBound{bound, bound, bound};
  }
  const double uniform = flags.codec_bytes_per_second;
  if (!std::isfinite(uniform) || uniform < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--codec_bytes_per_second=", uniform,
                                                   " must be a finite number > 0 (or 0: the per-codec table)"));
  }
  if (uniform > 0 && !flags.codec_calibration.empty()) {
    return absl::InvalidArgumentError(
        "--codec_bytes_per_second and --codec_calibration both give codec throughputs; use one");
  }
  if (uniform > 0) policy.codec_throughput = CodecThroughput::Uniform(uniform);
  if (!flags.codec_calibration.empty()) {
    absl::StatusOr<CodecThroughput> measured = ReadCodecCalibrationFile(flags.codec_calibration);
    if (!measured.ok()) {
      return absl::Status(measured.status().code(),
                          absl::StrCat("--codec_calibration: ", measured.status().message()));
    }
    policy.codec_throughput = *std::move(measured);
  }
  return policy;
}

absl::StatusOr<int64_t> CompressionWarmupFromFlags(const CompressionFlags& flags) {
  if (flags.compression_warmup < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--compression_warmup=", flags.compression_warmup,
                                                   " must be >= 0 (0: compressed from the first iteration)"));
  }
  return flags.compression_warmup;
}

absl::StatusOr<bool> ErrorFeedbackFromFlags(const CompressionFlags& flags) {
  if (flags.error_feedback && flags.compression == "off") {
    return absl::InvalidArgumentError(
        "--error_feedback acts on compressed gradient reductions, and --compression=off compresses none; use "
        "--compression=auto, fp8, int8 or int4 with it");
  }
  return flags.error_feedback;
}

absl::StatusOr<proto::Compression::Rounding> CodecRoundingFromFlags(const CompressionFlags& flags) {
  if (flags.codec_rounding == "nearest") return proto::Compression::NEAREST;
  if (flags.codec_rounding == "stochastic") return proto::Compression::STOCHASTIC;
  return absl::InvalidArgumentError(
      absl::StrCat("--codec_rounding=", flags.codec_rounding, " is not a choice; valid: nearest, stochastic"));
}

LinkFlags LinkFlagsFromCommandLine(double intra_node_bandwidth, double inter_node_bandwidth,
                                   double intra_node_latency, double inter_node_latency) {
  auto given = [](const char* name) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    return flag != nullptr && flag->CurrentValue() != flag->DefaultValue();
  };
  LinkFlags links;
  links.intra_node_bandwidth = intra_node_bandwidth;
  links.inter_node_bandwidth = inter_node_bandwidth;
  links.intra_node_latency = intra_node_latency;
  links.inter_node_latency = inter_node_latency;
  links.intra_node_bandwidth_given = given("intra_node_bandwidth");
  links.inter_node_bandwidth_given = given("inter_node_bandwidth");
  links.intra_node_latency_given = given("intra_node_latency");
  links.inter_node_latency_given = given("inter_node_latency");
  return links;
}

absl::Status ApplyCalibrationToCluster(const std::string& calibration, const LinkFlags& links,
                                       proto::Cluster* cluster) {
  for (const auto& [name, value] : {std::pair<const char*, double>{"intra_node_latency", links.intra_node_latency},
                                    {"inter_node_latency", links.inter_node_latency}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, " must be a finite number of seconds >= 0"));
    }
  }
  cluster->set_intra_node_bandwidth(links.intra_node_bandwidth);
  cluster->set_inter_node_bandwidth(links.inter_node_bandwidth);
  cluster->set_intra_node_latency(links.intra_node_latency);
  cluster->set_inter_node_latency(links.inter_node_latency);
  if (calibration.empty()) return absl::OkStatus();
  absl::StatusOr<Calibration> measured = ReadCalibrationFile(calibration);
  if (!measured.ok()) {
    return absl::Status(measured.status().code(), absl::StrCat("--codec_calibration: ", measured.status().message()));
  }
  if (measured->intra_node.has_value()) {
    if (!links.intra_node_bandwidth_given) cluster->set_intra_node_bandwidth(measured->intra_node->bytes_per_second);
    if (!links.intra_node_latency_given) cluster->set_intra_node_latency(measured->intra_node->latency_seconds);
  }
  if (measured->inter_node.has_value()) {
    if (!links.inter_node_bandwidth_given) cluster->set_inter_node_bandwidth(measured->inter_node->bytes_per_second);
    if (!links.inter_node_latency_given) cluster->set_inter_node_latency(measured->inter_node->latency_seconds);
  }
  // A pipeline's transfer between nodes: its own measured latency (sbp/link_model.h).
  if (measured->inter_node_transfer.has_value()) {
    cluster->set_inter_node_transfer_latency(measured->inter_node_transfer->latency_seconds);
  }
  cluster->set_gemm_flops_per_second(measured->compute.gemm_flops_per_second);
  cluster->set_memory_bytes_per_second(measured->compute.memory_bytes_per_second);
  // A GEMM's seconds by its shape (compiler/cluster_compute_rates.h reads them back).
  cluster->set_gemm_shape_flops_per_second(measured->compute.gemm_shape.flops_per_second);
  cluster->set_gemm_shape_operand_bytes_per_second(measured->compute.gemm_shape.operand_bytes_per_second);
  cluster->set_gemm_shape_call_seconds(measured->compute.gemm_shape.call_seconds);
  return absl::OkStatus();
}

absl::StatusOr<bool> Int4GradientScaleFromFlags(const CompressionFlags& flags) {
  const std::string& scale = flags.int4_gradient_scale;
  if (scale == "max") return false;
  if (scale != "fitted") {
    return absl::InvalidArgumentError(
        absl::StrCat("--int4_gradient_scale=", scale, " is not a choice; valid: max, fitted"));
  }
  if (flags.compression != "int4" && flags.compression != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("--int4_gradient_scale=fitted acts on int4 gradient steps, and "
                                                   "--compression=",
                                                   flags.compression,
                                                   " puts none; use --compression=int4 or auto with it"));
  }
  if (flags.codec_rounding == "stochastic") {
    return absl::InvalidArgumentError(
        "--int4_gradient_scale=fitted and --codec_rounding=stochastic: stochastic rounding keeps max|x| / 7 "
        "(clipping would bias it); use one");
  }
  return true;
}

}  // namespace oneflow::examples
