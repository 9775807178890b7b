#include "sbp/codec_throughput.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "sbp/compression_policy.h"

namespace oneflow {
namespace {

constexpr CompressionChoice kInt8Rotated{CompressionKind::kInt8, 512, true};
constexpr CompressionChoice kInt4{CompressionKind::kInt4, 128, true};

TEST(CodecThroughputTest, DefaultsCoverEveryConfigurationTheCompilerPicks) {
  const CodecThroughput defaults = CodecThroughput::Defaults();
  for (const CompressionChoice& choice : PickableCodecs()) {
    bool listed = false;
    for (const CodecThroughput::Entry& entry : defaults.entries()) listed |= entry.choice == choice;
    EXPECT_TRUE(listed) << CompressionChoiceText(choice) << " has no default throughput";
  }
  // A configuration without an entry gets the slowest default: uncalibrated errs to dense.
  double slowest = defaults.entries().front().bytes_per_second;
  for (const CodecThroughput::Entry& entry : defaults.entries()) slowest = std::min(slowest, entry.bytes_per_second);
  EXPECT_EQ(defaults.BytesPerSecond({CompressionKind::kFp8E5M2, 64, false}), slowest);
}

TEST(CodecThroughputTest, UniformGivesEveryConfigurationOneValue) {
  CodecThroughput uniform = CodecThroughput::Uniform(3e9);
  EXPECT_EQ(uniform.BytesPerSecond(kInt8Rotated), 3e9);
  EXPECT_EQ(uniform.BytesPerSecond({CompressionKind::kFp8E4M3, 128, true}), 3e9);
  uniform.Set(kInt8Rotated, 5e8);
  EXPECT_EQ(uniform.BytesPerSecond(kInt8Rotated), 5e8);
  EXPECT_EQ(uniform.BytesPerSecond({CompressionKind::kInt8, 512, false}), 3e9);  // Not rotated: another entry.
}

TEST(CodecThroughputTest, LinesRoundTrip) {
  const CodecMeasurement measured{kInt8Rotated, 1.23456789e9, 0, 0, 1048576, 7};
  const std::string line = CodecMeasurementLine(measured);
  EXPECT_EQ(line,
            "{\"codec\": \"int8\", \"group_size\": 512, \"hadamard\": true, \"bytes_per_second\": 1.23457e+09, "
            "\"elements\": 1048576, \"repetitions\": 7}");
  const absl::StatusOr<std::vector<CodecMeasurement>> parsed =
      ParseCodecCalibration(line + "\n\n" + CodecMeasurementLine({{CompressionKind::kFp8E4M3, 128, true}, 4e8, 9e8, 7.2e8, 1, 1}) + "\n",
                            "codecs.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].choice, kInt8Rotated);
  EXPECT_EQ((*parsed)[0].bytes_per_second, 1.23457e9);
  EXPECT_EQ((*parsed)[0].elements, 1048576);
  EXPECT_EQ((*parsed)[0].repetitions, 7);
  EXPECT_EQ((*parsed)[1].choice, (CompressionChoice{CompressionKind::kFp8E4M3, 128, true}));
  EXPECT_EQ((*parsed)[1].encode_bytes_per_second, 9e8);
  EXPECT_EQ((*parsed)[1].decode_bytes_per_second, 7.2e8);
  // A line written before calibrate timed the metering encode: none.
  EXPECT_EQ((*parsed)[1].encode_measured_bytes_per_second, 0);
  EXPECT_EQ(CodecMeasurementLine((*parsed)[0]), line);
}

// The metering encode (EncodeMeasured) after the two passes it comes with.
TEST(CodecThroughputTest, MeteringEncodeLinesRoundTrip) {
  CodecMeasurement measured{kInt4, 2e9, 5e9, 9e9, 1048576, 7};
  measured.encode_measured_bytes_per_second = 3.21098765e9;
  const std::string line = CodecMeasurementLine(measured);
  EXPECT_EQ(line,
            "{\"codec\": \"int4\", \"group_size\": 128, \"hadamard\": true, \"bytes_per_second\": 2e+09, "
            "\"encode_bytes_per_second\": 5e+09, \"decode_bytes_per_second\": 9e+09, "
            "\"encode_measured_bytes_per_second\": 3.21099e+09, \"elements\": 1048576, \"repetitions\": 7}");
  const absl::StatusOr<std::vector<CodecMeasurement>> parsed = ParseCodecCalibration(line, "codecs.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].encode_bytes_per_second, 5e9);
  EXPECT_EQ((*parsed)[0].decode_bytes_per_second, 9e9);
  EXPECT_EQ((*parsed)[0].encode_measured_bytes_per_second, 3.21099e9);
  EXPECT_EQ(CodecMeasurementLine((*parsed)[0]), line);
}

// The variants' encodes after the metering one; int8 has no fitted encoder.
TEST(CodecThroughputTest, VariantEncodeLinesRoundTrip) {
  CodecMeasurement measured{kInt4, 2e9, 5e9, 9e9, 1048576, 7};
  measured.encode_measured_bytes_per_second = 3e9;
  measured.encode_fitted_bytes_per_second = 1.5e9;
  measured.encode_stochastic_bytes_per_second = 1.1e9;
  const std::string line = CodecMeasurementLine(measured);
  EXPECT_EQ(line,
            "{\"codec\": \"int4\", \"group_size\": 128, \"hadamard\": true, \"bytes_per_second\": 2e+09, "
            "\"encode_bytes_per_second\": 5e+09, \"decode_bytes_per_second\": 9e+09, "
            "\"encode_measured_bytes_per_second\": 3e+09, \"encode_fitted_bytes_per_second\": 1.5e+09, "
            "\"encode_stochastic_bytes_per_second\": 1.1e+09, \"elements\": 1048576, \"repetitions\": 7}");
  const absl::StatusOr<std::vector<CodecMeasurement>> parsed = ParseCodecCalibration(line, "codecs.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].encode_fitted_bytes_per_second, 1.5e9);
  EXPECT_EQ((*parsed)[0].encode_stochastic_bytes_per_second, 1.1e9);
  EXPECT_EQ(CodecMeasurementLine((*parsed)[0]), line);

  CodecThroughput throughput = CodecThroughput::Defaults();
  AddCodecMeasurement((*parsed)[0], &throughput);
  // 5e9 bytes: the plain encode 1 s, fitted 5e9 / 1.5e9 = 3.33 s, so 2.33 s more, also
  // on top of the metering encode's 1.67 s.
  EXPECT_DOUBLE_EQ(throughput.ExtraEncodeSeconds(kInt4, 5e9, EncoderVariant::kFittedInt4Scale), 5e9 / 1.5e9 - 1);
  EXPECT_DOUBLE_EQ(throughput.EncodeSeconds(kInt4, 5e9, EncoderVariant::kFittedInt4Scale), 5e9 / 1.5e9);
  EXPECT_DOUBLE_EQ(throughput.EncodeMeasuredSeconds(kInt4, 5e9, EncoderVariant::kFittedInt4Scale),
                   5e9 / 3e9 + 5e9 / 1.5e9 - 1);
  EXPECT_DOUBLE_EQ(throughput.EncodeSeconds(kInt4, 5e9, EncoderVariant::kStochasticRounding), 5e9 / 1.1e9);
  EXPECT_DOUBLE_EQ(throughput.EncodeSeconds(kInt4, 5e9), 1);
  // Unmeasured (a default entry): the default extra rate; a codec without the variant: none.
  const CompressionChoice int8{CompressionKind::kInt8, 512, true};
  EXPECT_DOUBLE_EQ(throughput.ExtraEncodeSeconds(int8, 6e8, EncoderVariant::kStochasticRounding),
                   6e8 / DefaultExtraEncodeBytesPerSecond(EncoderVariant::kStochasticRounding));
  EXPECT_EQ(throughput.ExtraEncodeSeconds(int8, 6e8, EncoderVariant::kFittedInt4Scale), 0);
  EXPECT_EQ(throughput.EncodeSeconds(int8, 6e8, EncoderVariant::kFittedInt4Scale), throughput.EncodeSeconds(int8, 6e8));
  const CompressionChoice fp8{CompressionKind::kFp8E4M3, 128, false};
  EXPECT_EQ(throughput.ExtraEncodeSeconds(fp8, 6e8, EncoderVariant::kStochasticRounding), 0);
}

std::string ParseError(const std::string& text) {
  const absl::StatusOr<std::vector<CodecMeasurement>> parsed = ParseCodecCalibration(text, "c.jsonl");
  if (parsed.ok()) return "parsed";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(CodecThroughputTest, MalformedFilesNameTheFileAndLine) {
  const std::string good = R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 2e9})";
  EXPECT_EQ(ParseError(good), "parsed");
  EXPECT_EQ(ParseError(""), "codec calibration file 'c.jsonl' has no measurement; write one with `oneflow "
                            "calibrate --out=c.jsonl`");
  EXPECT_EQ(ParseError(good + "\nnot json"), "codec calibration file 'c.jsonl' line 2: column 1: expected '{' to "
                                             "start a JSON object");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 2e9)"),
            "codec calibration file 'c.jsonl' line 1: column 80: expected ',' or '}' after the value of "
            "\"bytes_per_second\"");
  EXPECT_EQ(ParseError(R"({"codec": "int5", "group_size": 128, "hadamard": false, "bytes_per_second": 2e9})"),
            "codec calibration file 'c.jsonl' line 1: \"codec\" is \"int5\"; valid: fp8e4m3, fp8e5m2, int4, int8, "
            "bf16");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "speed": 2e9})"),
            "codec calibration file 'c.jsonl' line 1: unknown key \"speed\"; valid keys: codec, group_size, "
            "hadamard, bytes_per_second, encode_bytes_per_second, decode_bytes_per_second, "
            "encode_measured_bytes_per_second, encode_fitted_bytes_per_second, encode_stochastic_bytes_per_second, "
            "elements, repetitions");
  EXPECT_EQ(ParseError(R"({"codec": "int8", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_bytes_per_second": 3, "decode_bytes_per_second": 3, )"
                       R"("encode_fitted_bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_fitted_bytes_per_second\" is given for codec int8, "
            "which has no fitted int4 scale encoder (int4's only)");
  EXPECT_EQ(ParseError(R"({"codec": "fp8e4m3", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_bytes_per_second": 3, "decode_bytes_per_second": 3, )"
                       R"("encode_stochastic_bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_stochastic_bytes_per_second\" is given for codec "
            "fp8e4m3, which has no stochastic rounding encoder (int4's and int8's only)");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_stochastic_bytes_per_second": 3})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_stochastic_bytes_per_second\" comes with "
            "\"encode_bytes_per_second\" and \"decode_bytes_per_second\": give all three or leave it out");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_measured_bytes_per_second": 3})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_measured_bytes_per_second\" comes with "
            "\"encode_bytes_per_second\" and \"decode_bytes_per_second\": give all three or leave it out");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_bytes_per_second": 3, "decode_bytes_per_second": 3, )"
                       R"("encode_measured_bytes_per_second": 0})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_measured_bytes_per_second\" is 0; it must be a "
            "finite number > 0");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 1, )"
                       R"("encode_bytes_per_second": 3})"),
            "codec calibration file 'c.jsonl' line 1: \"encode_bytes_per_second\" and \"decode_bytes_per_second\" "
            "go together: give both or neither");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false})"),
            "codec calibration file 'c.jsonl' line 1: missing key \"bytes_per_second\"");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": -1})"),
            "codec calibration file 'c.jsonl' line 1: \"bytes_per_second\" is -1; it must be a finite number > 0");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 12.5, "hadamard": false, "bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: \"group_size\" is 12.5; it must be an integer >= 1");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 100, "hadamard": true, "bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: compression int4 G=100 hadamard: the Walsh-Hadamard "
            "transform needs a group size that is a power of two in [32, 2048]");
  EXPECT_EQ(ParseError(R"({"codec": "int4", "group_size": 128, "hadamard": "no", "bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: \"hadamard\" is no; it must be true or false");
  EXPECT_EQ(ParseError(good + "\n" + good),
            "codec calibration file 'c.jsonl' line 2: int4 G=128 is measured twice (also on line 1); keep one "
            "line per configuration");
}

TEST(CodecThroughputTest, ReadingAFileOverridesTheDefaultsItMeasures) {
  const std::string path = ::testing::TempDir() + "/codecs.jsonl";
  {
    std::ofstream out(path);
    CodecMeasurement measured{kInt8Rotated, 7e9};
    measured.elements = 1048576;
    measured.repetitions = 5;
    out << CodecMeasurementLine(measured) << "\n";
    // Both passes timed apart: encode 1e10, decode 2e10 B/s.
    CodecMeasurement passes{kInt4, 6e9, 1e10, 2e10, 1048576, 5};
    out << CodecMeasurementLine(passes) << "\n";
    // And the metering encode: 8e9 B/s.
    CodecMeasurement metering{{CompressionKind::kFp8E4M3, 128, false}, 6e9, 1e10, 2e10, 1048576, 5};
    metering.encode_measured_bytes_per_second = 8e9;
    out << CodecMeasurementLine(metering) << "\n";
  }
  const absl::StatusOr<CodecThroughput> read = ReadCodecCalibrationFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->BytesPerSecond(kInt8Rotated), 7e9);
  const CompressionChoice activations{CompressionKind::kFp8E4M3, 128, true};
  EXPECT_EQ(read->BytesPerSecond(activations), CodecThroughput::Defaults().BytesPerSecond(activations));
  // Without separate figures each pass takes half the round trip: 1 MB encodes in 1/14 ms.
  EXPECT_DOUBLE_EQ(read->EncodeSeconds(kInt8Rotated, 1e6), 1e6 / 14e9);
  EXPECT_DOUBLE_EQ(read->DecodeSeconds(kInt8Rotated, 1e6), 1e6 / 14e9);
  // With them, each pass at its own rate; the round trip from both, 1 / (1e-10 + 5e-11).
  EXPECT_DOUBLE_EQ(read->EncodeSeconds(kInt4, 1e6), 1e-4);
  EXPECT_DOUBLE_EQ(read->DecodeSeconds(kInt4, 1e6), 5e-5);
  EXPECT_NEAR(read->BytesPerSecond(kInt4), 1 / 1.5e-10, 1);
  // The metering encode at its own rate where the line gives one, else the encode's.
  EXPECT_DOUBLE_EQ(read->EncodeMeasuredSeconds({CompressionKind::kFp8E4M3, 128, false}, 1e6), 1.25e-4);
  EXPECT_DOUBLE_EQ(read->EncodeSeconds({CompressionKind::kFp8E4M3, 128, false}, 1e6), 1e-4);
  EXPECT_DOUBLE_EQ(read->EncodeMeasuredSeconds(kInt4, 1e6), 1e-4);
  EXPECT_DOUBLE_EQ(read->EncodeMeasuredSeconds(kInt8Rotated, 1e6), 1e6 / 14e9);

  const absl::StatusOr<CodecThroughput> missing = ReadCodecCalibrationFile(path + ".absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "codec calibration file '" + path + ".absent': cannot open: No such file or directory");
  const absl::StatusOr<CodecThroughput> directory = ReadCodecCalibrationFile(::testing::TempDir());
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(directory.status().message(),
            "codec calibration file '" + ::testing::TempDir() + "': is a directory, not a calibration file");
  std::remove(path.c_str());
}

// Files written before the rename name fp8e4m3 with hadamard "taco_fp8" (with "hadamard":
// false: TACO rotated by design). They read as the rotated fp8e4m3 G=128 that auto's
// activations use, with one warning for the file naming the new spelling.
TEST(CodecThroughputTest, TacoFp8IsADeprecatedNameOfRotatedFp8E4M3) {
  const std::string old_line =
      R"({"codec": "taco_fp8", "group_size": 128, "hadamard": false, "bytes_per_second": 2.9e9})";
  const std::string int8 = R"({"codec": "int8", "group_size": 128, "hadamard": false, "bytes_per_second": 5e9})";
  const std::string old_g64 =
      R"({"codec": "taco_fp8", "group_size": 64, "hadamard": false, "bytes_per_second": 2e9})";
  ::testing::internal::CaptureStderr();
  const absl::StatusOr<std::vector<CodecMeasurement>> parsed =
      ParseCodecCalibration(int8 + "\n" + old_line + "\n" + old_g64 + "\n", "old.jsonl");
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[1].choice, (CompressionChoice{CompressionKind::kFp8E4M3, 128, true}));
  EXPECT_EQ((*parsed)[1].bytes_per_second, 2.9e9);
  EXPECT_EQ((*parsed)[2].choice, (CompressionChoice{CompressionKind::kFp8E4M3, 64, true}));
  EXPECT_EQ(warnings,
            "warning: codec calibration file 'old.jsonl' line 2: codec \"taco_fp8\" is deprecated; it is fp8e4m3 "
            "with hadamard and is read as such: write \"codec\": \"fp8e4m3\", \"hadamard\": true (`oneflow "
            "calibrate --out=FILE` does)\n");
  // What it measured prices auto's activation codec.
  CodecThroughput throughput = CodecThroughput::Defaults();
  throughput.Set((*parsed)[1].choice, (*parsed)[1].bytes_per_second);
  CompressionPolicy automatic;
  automatic.mode = CompressionMode::kAuto;
  const BoxingOptions activations = BoxingOptionsFor(automatic, TensorRole::kActivation, std::nullopt);
  EXPECT_EQ(activations.reduce_in_node, (*parsed)[1].choice);
  EXPECT_EQ(throughput.BytesPerSecond(activations.reduce_in_node), 2.9e9);
  // Its rotation needs a power-of-two group, and it is the same configuration as the
  // new spelling's.
  EXPECT_EQ(ParseError(R"({"codec": "taco_fp8", "group_size": 100, "hadamard": false, "bytes_per_second": 1})"),
            "codec calibration file 'c.jsonl' line 1: compression fp8e4m3 G=100 hadamard: the Walsh-Hadamard "
            "transform needs a group size that is a power of two in [32, 2048]");
  EXPECT_EQ(ParseError(old_line + "\n" +
                       R"({"codec": "fp8e4m3", "group_size": 128, "hadamard": true, "bytes_per_second": 3e9})"),
            "codec calibration file 'c.jsonl' line 2: fp8e4m3 G=128 hadamard is measured twice (also on line 1); "
            "keep one line per configuration");
  // A file without the old name warns of nothing.
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(ParseCodecCalibration(int8 + "\n", "new.jsonl").ok());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace oneflow
