#include "examples/common/compression_flags.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sbp/codec_accuracy.h"

namespace oneflow::examples {
namespace {

CompressionFlags Flags(const std::string& compression) {
  CompressionFlags flags;
  flags.compression = compression;
  return flags;
}

TEST(CompressionFlagsTest, Modes) {
  EXPECT_EQ(CompressionPolicyFromFlags(Flags("off"))->mode, CompressionMode::kOff);
  EXPECT_EQ(CompressionPolicyFromFlags(Flags("auto"))->mode, CompressionMode::kAuto);
  const absl::StatusOr<CompressionPolicy> int4 = CompressionPolicyFromFlags(Flags("int4"));
  ASSERT_TRUE(int4.ok());
  EXPECT_EQ(int4->mode, CompressionMode::kForced);
  EXPECT_EQ(int4->forced, CompressionKind::kInt4);
  EXPECT_EQ(CompressionPolicyFromFlags(Flags("fp8"))->forced, CompressionKind::kFp8E4M3);
  EXPECT_EQ(CompressionPolicyFromFlags(Flags("int8"))->forced, CompressionKind::kInt8);
  const absl::StatusOr<CompressionPolicy> bad = CompressionPolicyFromFlags(Flags("fp9"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--compression=fp9 is not a choice; valid: off, auto, fp8, int8, int4");
}

TEST(CompressionFlagsTest, CodecRounding) {
  CompressionFlags flags;
  EXPECT_EQ(*CodecRoundingFromFlags(flags), proto::Compression::NEAREST);  // the default
  flags.codec_rounding = "stochastic";
  EXPECT_EQ(*CodecRoundingFromFlags(flags), proto::Compression::STOCHASTIC);
  flags.codec_rounding = "nearest";
  EXPECT_EQ(*CodecRoundingFromFlags(flags), proto::Compression::NEAREST);
  flags.codec_rounding = "up";
  const absl::StatusOr<proto::Compression::Rounding> bad = CodecRoundingFromFlags(flags);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--codec_rounding=up is not a choice; valid: nearest, stochastic");
}

TEST(CompressionFlagsTest, ErrorFeedback) {
  CompressionFlags flags;
  EXPECT_FALSE(*ErrorFeedbackFromFlags(flags));  // the default: off
  flags.error_feedback = true;
  for (const char* mode : {"auto", "fp8", "int8", "int4"}) {
    flags.compression = mode;
    EXPECT_TRUE(*ErrorFeedbackFromFlags(flags)) << mode;
  }
  flags.compression = "off";
  const absl::StatusOr<bool> bad = ErrorFeedbackFromFlags(flags);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--error_feedback acts on compressed gradient reductions, and --compression=off compresses none; use "
            "--compression=auto, fp8, int8 or int4 with it");
  flags.error_feedback = false;  // off without it is fine
  EXPECT_FALSE(*ErrorFeedbackFromFlags(flags));
}

TEST(CompressionFlagsTest, CompressInNode) {
  CompressionFlags flags;
  flags.compression = "int4";
  EXPECT_TRUE(CompressionPolicyFromFlags(flags)->forced_intra_node);  // the default: in-node too
  flags.compress_in_node = false;
  for (const char* mode : {"fp8", "int8", "int4"}) {
    flags.compression = mode;
    const absl::StatusOr<CompressionPolicy> policy = CompressionPolicyFromFlags(flags);
    ASSERT_TRUE(policy.ok()) << policy.status();
    EXPECT_FALSE(policy->forced_intra_node) << mode;
  }
  flags.compression = "auto";
  EXPECT_EQ(CompressionPolicyFromFlags(flags).status().message(),
            "--nocompress_in_node acts on a forced codec, and --compression=auto decides each in-node step by the "
            "cost model; use --compression=fp8, int8 or int4 with it");
  flags.compression = "off";
  EXPECT_EQ(CompressionPolicyFromFlags(flags).status().message(),
            "--nocompress_in_node acts on a forced codec, and --compression=off compresses none; use "
            "--compression=fp8, int8 or int4 with it");
}

TEST(CompressionFlagsTest, Int4GradientScale) {
  CompressionFlags flags;
  EXPECT_FALSE(*Int4GradientScaleFromFlags(flags));  // the default: max|x| / 7
  flags.int4_gradient_scale = "fitted";
  for (const char* mode : {"int4", "auto"}) {
    flags.compression = mode;
    EXPECT_TRUE(*Int4GradientScaleFromFlags(flags)) << mode;
  }
  flags.int4_gradient_scale = "min";
  EXPECT_EQ(Int4GradientScaleFromFlags(flags).status().message(),
            "--int4_gradient_scale=min is not a choice; valid: max, fitted");
  flags.int4_gradient_scale = "fitted";
  flags.compression = "int8";
  EXPECT_EQ(Int4GradientScaleFromFlags(flags).status().message(),
            "--int4_gradient_scale=fitted acts on int4 gradient steps, and --compression=int8 puts none; use "
            "--compression=int4 or auto with it");
  flags.compression = "int4";
  flags.codec_rounding = "stochastic";
  EXPECT_EQ(Int4GradientScaleFromFlags(flags).status().message(),
            "--int4_gradient_scale=fitted and --codec_rounding=stochastic: stochastic rounding keeps max|x| / 7 "
            "(clipping would bias it); use one");
}

TEST(CompressionFlagsTest, CompressionWarmup) {
  CompressionFlags flags;
  EXPECT_EQ(*CompressionWarmupFromFlags(flags), 0);  // the default: compressed from the start
  flags.compression_warmup = 20;
  EXPECT_EQ(*CompressionWarmupFromFlags(flags), 20);
  flags.compression_warmup = -1;
  const absl::StatusOr<int64_t> bad = CompressionWarmupFromFlags(flags);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--compression_warmup=-1 must be >= 0 (0: compressed from the first iteration)");
}

TEST(CompressionFlagsTest, CodecAccuracyBound) {
  CompressionFlags flags;
  const AccuracyBound documented;  // sbp/codec_accuracy.h's 0.5%
  const absl::StatusOr<CompressionPolicy> by_default = CompressionPolicyFromFlags(flags);
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  for (AccuracyRole role : {AccuracyRole::kActivation, AccuracyRole::kGradient, AccuracyRole::kWeight}) {
    EXPECT_EQ(by_default->accuracy_bound.For(role), documented.For(role));
  }
  flags.codec_accuracy_bound = "0.02";
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->accuracy_bound.gradient, 0.02);
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->accuracy_bound.activation, 0.02);
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->accuracy_bound.weight, 0.02);
  flags.codec_accuracy_bound = "0";  // only codecs measured exactly at dense's loss, or unmeasured
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->accuracy_bound.gradient, 0);
  // off: negative on every role, which CodecWithinBound reads as no rule.
  flags.codec_accuracy_bound = "off";
  const absl::StatusOr<CompressionPolicy> off = CompressionPolicyFromFlags(flags);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_LT(off->accuracy_bound.gradient, 0);
  EXPECT_LT(off->accuracy_bound.activation, 0);
  EXPECT_LT(off->accuracy_bound.weight, 0);
  EXPECT_TRUE(CodecWithinBound({CompressionKind::kInt4, 128, true}, AccuracyRole::kGradient, TrainingSetup(),
                               off->accuracy_bound)
                  .within_bound);
  for (const std::string bad : {"-1", "nan", "inf", "half", "", "0.5%"}) {
    flags.codec_accuracy_bound = bad;
    const absl::StatusOr<CompressionPolicy> refused = CompressionPolicyFromFlags(flags);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(refused.status().message(),
              absl::StrCat("--codec_accuracy_bound=", bad,
                           " is not a choice; valid: a final-loss gap >= 0 as a fraction of dense's (0.005 is "
                           "0.5%, the default), or off"));
  }
}

TEST(CompressionFlagsTest, GradientWire) {
  CompressionFlags flags;
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->gradient_wire, GradientWire::kFp32);  // the default
  flags.gradient_wire = "bf16";
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->gradient_wire, GradientWire::kBf16);
  flags.gradient_wire = "auto";
  EXPECT_EQ(CompressionPolicyFromFlags(flags)->gradient_wire, GradientWire::kAuto);
  flags.gradient_wire = "fp16";
  const absl::StatusOr<CompressionPolicy> bad = CompressionPolicyFromFlags(flags);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--gradient_wire=fp16 is not a choice; valid: fp32, bf16, auto");
}

TEST(CompressionFlagsTest, CodecThroughputs) {
  const CompressionChoice activations{CompressionKind::kFp8E4M3, 128, true};
  EXPECT_EQ(CompressionPolicyFromFlags(Flags("auto"))->codec_throughput.BytesPerSecond(activations),
            CodecThroughput::Defaults().BytesPerSecond(activations));
  CompressionFlags uniform = Flags("auto");
  uniform.codec_bytes_per_second = 4e9;
  EXPECT_EQ(CompressionPolicyFromFlags(uniform)->codec_throughput.BytesPerSecond(activations), 4e9);
  uniform.codec_bytes_per_second = -1;
  EXPECT_EQ(CompressionPolicyFromFlags(uniform).status().message(),
            "--codec_bytes_per_second=-1 must be a finite number > 0 (or 0: the per-codec table)");

  const std::string path = ::testing::TempDir() + "/codecs.jsonl";
  {
    std::ofstream out(path);
    out << R"({"codec": "fp8e4m3", "group_size": 128, "hadamard": true, "bytes_per_second": 3.5e9})" << "\n";
  }
  CompressionFlags calibrated = Flags("auto");
  calibrated.codec_calibration = path;
  EXPECT_EQ(CompressionPolicyFromFlags(calibrated)->codec_throughput.BytesPerSecond(activations), 3.5e9);
  calibrated.codec_bytes_per_second = 1e9;
  EXPECT_EQ(CompressionPolicyFromFlags(calibrated).status().message(),
            "--codec_bytes_per_second and --codec_calibration both give codec throughputs; use one");
  calibrated.codec_bytes_per_second = 0;
  calibrated.codec_calibration = path + ".absent";
  const absl::StatusOr<CompressionPolicy> missing = CompressionPolicyFromFlags(calibrated);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "--codec_calibration: codec calibration file '" + path +
                                            ".absent': cannot open: No such file or directory");
  std::remove(path.c_str());
}

TEST(CompressionFlagsTest, CalibrationSetsTheClusterWhereNoFlagWasGiven) {
  const std::string path = ::testing::TempDir() + "/links.jsonl";
  {
    std::ofstream out(path);
    out << R"({"link": "intra_node", "latency_seconds": 3e-06, "bytes_per_second": 5e9})" << "\n"
        << R"({"link": "inter_node", "latency_seconds": 0.0002, "bytes_per_second": 2e9})" << "\n"
        << R"({"compute": "gemm", "per_second": 1.5e11})" << "\n";
  }
  LinkFlags links{/*intra_node_bandwidth=*/100e9, /*inter_node_bandwidth=*/1.25e8, /*intra_node_latency=*/1e-5,
                  /*inter_node_latency=*/5e-4};
  links.inter_node_bandwidth_given = true;  // a shaped link: the flag wins over the loopback figure
  proto::Cluster cluster;
  ASSERT_TRUE(ApplyCalibrationToCluster(path, links, &cluster).ok());
  EXPECT_EQ(cluster.intra_node_bandwidth(), 5e9);
  EXPECT_EQ(cluster.intra_node_latency(), 3e-6);
  EXPECT_EQ(cluster.inter_node_bandwidth(), 1.25e8);
  EXPECT_EQ(cluster.inter_node_latency(), 2e-4);
  EXPECT_EQ(cluster.gemm_flops_per_second(), 1.5e11);
  EXPECT_EQ(cluster.memory_bytes_per_second(), 0);  // not measured: the predictor's default
  // Without a file, the flags.
  ASSERT_TRUE(ApplyCalibrationToCluster("", links, &cluster).ok());
  EXPECT_EQ(cluster.intra_node_latency(), 1e-5);
  EXPECT_EQ(cluster.inter_node_latency(), 5e-4);
  links.inter_node_latency = -1;
  EXPECT_EQ(ApplyCalibrationToCluster("", links, &cluster).message(),
            "--inter_node_latency=-1 must be a finite number of seconds >= 0");
  links.inter_node_latency = 0;
  EXPECT_EQ(ApplyCalibrationToCluster(path + ".absent", links, &cluster).code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace oneflow::examples
