// `oneflow inspect` on a plan the compiler compressed: a 2-node x 2-device gpt (tensor
// parallel over all four devices, so every collective crosses nodes) with a slow
// inter-node link under automatic compression. The text is checked against a golden file;
// the JSON and DOT carry the same figures. To regenerate the golden file after an
// intended change, run the test with ONEFLOW_UPDATE_GOLDEN set to its directory:
//   ONEFLOW_UPDATE_GOLDEN=$PWD/tools/cli/testdata bazel-bin/tools/cli/inspect_compression_test
// and review the diff like any code change.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tools/cli/inspect.h"
#include "tools/cli/predicted_step_time.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;

constexpr char kGolden[] = "tools/cli/testdata/gpt_tp4_slow_link.txt";

proto::Plan CompressedGpt(proto::Compression::Rounding rounding = proto::Compression::NEAREST,
                          int64_t dense_warmup_iterations = 0, bool error_feedback = false,
                          bool fit_int4_gradient_scale = false) {
  examples::ParallelFlags flags;
  flags.nodes = 2;
  flags.devices_per_node = 2;
  flags.tp = 4;
  flags.inter_node_bandwidth = 1.25e8;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 32;
  CompileOptions options;
  options.cluster = layout.cluster();
  options.compression.mode = CompressionMode::kAuto;
  // Without auto's accuracy bound (sbp/codec_accuracy.h), which keeps int4 off this AdamW
  // gpt's gradients: the plan shows the two-level int8 / int4 gradient steps this file
  // checks the rendering of (tests:auto_codec_accuracy_test checks the bound's note).
  options.compression.accuracy_bound = AccuracyBound{-1, -1, -1};
  options.codec_rounding = rounding;
  options.compression_warmup_iterations = dense_warmup_iterations;
  options.error_feedback = error_feedback;
  options.fit_int4_gradient_scale = fit_int4_gradient_scale;
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(config, layout), options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

// How many times `needle` occurs in `text`.
int Occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

std::string Inspect(const proto::Plan& plan, InspectFormat format) {
  absl::StatusOr<std::string> out = InspectPlan(plan, {format, std::nullopt});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

TEST(InspectCompressionTest, TextMatchesTheGoldenFile) {
  const std::string text = Inspect(CompressedGpt(), InspectFormat::kText);
  if (const char* update = std::getenv("ONEFLOW_UPDATE_GOLDEN")) {
    std::ofstream(std::string(update) + "/gpt_tp4_slow_link.txt") << text;
    return;
  }
  std::ifstream file(kGolden);
  ASSERT_TRUE(file.good()) << "cannot read " << kGolden;
  std::stringstream golden;
  golden << file.rdbuf();
  const std::vector<std::string> want = absl::StrSplit(golden.str(), '\n');
  const std::vector<std::string> have = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < want.size() && i < have.size(); ++i) {
    ASSERT_EQ(have[i], want[i]) << kGolden << " line " << i + 1;
  }
  EXPECT_EQ(have.size(), want.size());
}

// With --codec_rounding=stochastic the int8 / int4 steps say so; fp8 steps (the
// activations' rotated fp8e4m3) keep nearest and print as before.
TEST(InspectCompressionTest, ShowsStochasticRounding) {
  const proto::Plan plan = CompressedGpt(proto::Compression::STOCHASTIC);
  const std::string text = Inspect(plan, InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr("two-level: int8 (group 512, hadamard) in-node + int4 (group 128, hadamard) "
                              "cross-node, stochastic rounding"));
  int stochastic = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::FP8_E4M3) {
        EXPECT_EQ(step.compression().rounding(), proto::Compression::NEAREST);
      }
      stochastic += step.compression().rounding() == proto::Compression::STOCHASTIC;
    }
  }
  ASSERT_GT(stochastic, 0);
  // Exactly the stochastic steps print it.
  EXPECT_EQ(Occurrences(text, "stochastic rounding"), stochastic);
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Inspect(plan, InspectFormat::kJson), &json).ok());
  int json_stochastic = 0;
  for (const auto& boxing : json.fields().at("boxings").list_value().values()) {
    for (const auto& step : boxing.struct_value().fields().at("steps").list_value().values()) {
      const auto& fields = step.struct_value().fields();
      if (fields.count("compression") == 0) continue;
      json_stochastic +=
          fields.at("compression").struct_value().fields().at("rounding").string_value() == "stochastic";
    }
  }
  EXPECT_EQ(json_stochastic, stochastic);
}

// With --int4_gradient_scale=fitted the gradients' int4 steps (here auto's two-level int8 /
// int4 all-reduces) say so, in text and json, and no other step does; the golden file
// above (the default) has none.
TEST(InspectCompressionTest, ShowsTheFittedInt4Scale) {
  const proto::Plan plan = CompressedGpt(proto::Compression::NEAREST, 0, false, true);
  const std::string text = Inspect(plan, InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr("int4 (group 128, hadamard) cross-node, fitted int4 scale"));
  int fitted = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) fitted += step.compression().fitted_int4_scale();
  }
  ASSERT_GT(fitted, 0);
  EXPECT_EQ(Occurrences(text, "fitted int4 scale"), fitted);
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Inspect(plan, InspectFormat::kJson), &json).ok());
  int json_fitted = 0;
  for (const auto& boxing : json.fields().at("boxings").list_value().values()) {
    for (const auto& step : boxing.struct_value().fields().at("steps").list_value().values()) {
      const auto& fields = step.struct_value().fields();
      if (fields.count("compression") == 0) continue;
      json_fitted += fields.at("compression").struct_value().fields().at("fitted_int4_scale").bool_value();
    }
  }
  EXPECT_EQ(json_fitted, fitted);
  EXPECT_EQ(Inspect(CompressedGpt(), InspectFormat::kText).find("fitted int4 scale"), std::string::npos);
}

// With --compression_warmup=N every compressed step says it runs dense for the first N
// iterations (the golden file above has none: a plan without one prints as before).
TEST(InspectCompressionTest, ShowsTheDenseWarmUp) {
  const proto::Plan plan = CompressedGpt(proto::Compression::NEAREST, 20);
  const std::string text = Inspect(plan, InspectFormat::kText);
  // After the codecs (a two-level step's line wraps before it).
  EXPECT_THAT(text, HasSubstr("compressed: int8 (group 128), dense for the first 20 iterations;"));
  EXPECT_THAT(text, HasSubstr("int4 (group 128, hadamard) cross-node,\n                  dense for the first 20 iterations;"));
  int compressed = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.compression().kind() == proto::Compression::NONE) continue;
      ++compressed;
      EXPECT_EQ(step.compression().dense_warmup_iterations(), 20);
    }
  }
  ASSERT_GT(compressed, 0);
  EXPECT_EQ(Occurrences(text, "dense for the first 20 iterations"), compressed);
  EXPECT_EQ(Inspect(CompressedGpt(), InspectFormat::kText).find("dense for the first"), std::string::npos);
}

// The same plan with every compressed step and bucket dense, as the warm-up runs them:
// each step at its compiled dense price.
proto::Plan AsInWarmup(proto::Plan plan) {
  for (proto::BoxingDef& boxing : *plan.mutable_boxings()) {
    for (proto::BoxingStepDef& step : *boxing.mutable_steps()) {
      if (step.compression().kind() == proto::Compression::NONE) continue;
      step.set_seconds(step.dense_seconds());
      step.clear_compression();
    }
  }
  for (proto::GradientBucketDef& bucket : *plan.mutable_buckets()) bucket.clear_compression();
  return plan;
}

google::protobuf::Struct ParseJson(const std::string& json);

// With --compression_warmup=N the predicted step has two parts: the steady compressed
// step, and the step of the N dense iterations, which is the step of the same plan with
// every compressed collective dense. Text and JSON carry both; a plan without a warm-up
// prints only the steady one.
TEST(InspectCompressionTest, PredictsTheDenseWarmUpBesideTheSteadyStep) {
  const proto::Plan plan = CompressedGpt(proto::Compression::NEAREST, 20);
  const absl::StatusOr<StepTimePrediction> prediction = PredictStepTime(plan);
  ASSERT_TRUE(prediction.ok()) << prediction.status();
  EXPECT_EQ(prediction->dense_warmup_iterations, 20);
  ASSERT_EQ(prediction->warmup_devices.size(), prediction->devices.size());
  const absl::StatusOr<StepTimePrediction> dense = PredictStepTime(AsInWarmup(plan));
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(dense->dense_warmup_iterations, 0);
  for (size_t d = 0; d < prediction->devices.size(); ++d) {
    EXPECT_NEAR(prediction->warmup_devices[d].communication_seconds, dense->devices[d].communication_seconds, 1e-12);
    EXPECT_EQ(prediction->warmup_devices[d].compute_seconds(), prediction->devices[d].compute_seconds());
  }
  // At 1 Gbit/s the codecs pay: the dense warm-up is the slower step.
  EXPECT_GT(prediction->warmup_seconds(), prediction->seconds());
  EXPECT_NEAR(prediction->warmup_seconds(), dense->seconds(), 1e-12);

  const std::string text = Inspect(plan, InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr("\npredicted step time of the first 20 iterations (dense warm-up, --compression_warmup): "));
  EXPECT_THAT(text, HasSubstr(StepTimeText(plan, *prediction)));
  const google::protobuf::Struct json = ParseJson(Inspect(plan, InspectFormat::kJson));
  const auto& step = json.fields().at("predicted_step").struct_value().fields();
  EXPECT_DOUBLE_EQ(step.at("seconds").number_value(), prediction->seconds());
  EXPECT_EQ(step.at("dense_warmup_iterations").number_value(), 20);
  EXPECT_DOUBLE_EQ(step.at("dense_warmup_seconds").number_value(), prediction->warmup_seconds());
  EXPECT_FALSE(step.at("dense_warmup_slowest_device").string_value().empty());

  const proto::Plan steady_only = CompressedGpt();
  EXPECT_EQ(Inspect(steady_only, InspectFormat::kText).find("(dense warm-up, --compression_warmup)"),
            std::string::npos);
  const google::protobuf::Struct without = ParseJson(Inspect(steady_only, InspectFormat::kJson));
  const auto& without_step = without.fields().at("predicted_step").struct_value().fields();
  EXPECT_EQ(without_step.at("dense_warmup_iterations").number_value(), 0);
  EXPECT_TRUE(without_step.at("dense_warmup_seconds").has_null_value());
  EXPECT_GT(without_step.at("seconds").number_value(), 0);
}

google::protobuf::Struct ParseJson(const std::string& json) {
  google::protobuf::Struct parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  return parsed;
}

// The boxing of `tensor` in the JSON.
const google::protobuf::Struct* Boxing(const google::protobuf::Struct& json, const std::string& tensor) {
  for (const auto& boxing : json.fields().at("boxings").list_value().values()) {
    if (boxing.struct_value().fields().at("tensor").string_value() == tensor) return &boxing.struct_value();
  }
  return nullptr;
}

// Each bucket's kind in the JSON is its collective's, as the text says (golden file: bucket
// 0 an all-reduce, bucket 1 a reduce-scatter); it once read "all_reduce" for every bucket.
TEST(InspectCompressionTest, JsonNamesEachBucketsCollective) {
  const google::protobuf::Struct json = ParseJson(Inspect(CompressedGpt(), InspectFormat::kJson));
  std::vector<std::string> kinds;
  for (const auto& bucket : json.fields().at("buckets").list_value().values()) {
    kinds.push_back(bucket.struct_value().fields().at("kind").string_value());
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"all_reduce", "reduce_scatter"}));
}

TEST(InspectCompressionTest, JsonCarriesBothLevelsDenseAndWireBytesAndTheSaving) {
  const google::protobuf::Struct json = ParseJson(Inspect(CompressedGpt(), InspectFormat::kJson));
  // The gradient of w_q: reduce-scatter of [32, 32] over 2 nodes x 2 devices, 3 chunks of
  // 256 elements dense (3072 B); two-level: in-node 2 chunks as int8 G=512 (512 + 4 B),
  // cross-node 1 chunk as int4 G=128 (128 + 2 x 4 B): 652 B.
  const google::protobuf::Struct* gradient = Boxing(json, "matmul_4_grad/matmul_80");
  ASSERT_NE(gradient, nullptr);
  const auto& step = gradient->fields().at("steps").list_value().values(0).struct_value().fields();
  const auto& compression = step.at("compression").struct_value().fields();
  EXPECT_EQ(compression.at("codec").string_value(), "int8");
  EXPECT_EQ(compression.at("group_size").number_value(), 512);
  EXPECT_TRUE(compression.at("hadamard").bool_value());
  EXPECT_EQ(compression.at("cross_node_codec").string_value(), "int4");
  EXPECT_EQ(compression.at("cross_node_group_size").number_value(), 128);
  EXPECT_TRUE(compression.at("cross_node_hadamard").bool_value());
  EXPECT_EQ(compression.at("dense_bytes_per_device").number_value(), 3072);
  EXPECT_EQ(compression.at("wire_bytes_per_device").number_value(), 652);
  EXPECT_EQ(compression.at("rounding").string_value(), "nearest");
  // Dense, as the runtime runs it (hierarchical): 2048 B in the node at 1e11 B/s plus
  // 1024 B across at 1.25e8 = 8.21248 us. Two-level: 516 B in the node + 136 B across =
  // 1.09316 us of wire, and the codec passes at the default 2e9 B/s round trips (4e9 a
  // pass; no error feedback, so the encodes meter as they go, at the encode's rate
  // without a calibrated figure): encode 512 + 256 elements, the receivers decode as
  // many, 6144 B = 1.536 us. Saves 5.58332 us (with error feedback the senders' decode,
  // 0.768 us more, would leave 4.81532).
  EXPECT_NEAR(compression.at("seconds_saved").number_value(), 5.58332e-6, 1e-10);
  EXPECT_THAT(compression.at("reason").string_value(), HasSubstr(": compressed, saves "));
  // An activation's reduce-scatter over the same devices stays dense: rotated fp8 has no
  // two-level form, so its 816 B would all cross the slow link (6.528 us) plus 2.048 us
  // of codec (768 elements encoded and decoded at the default 3e9 B/s a pass), against
  // the hierarchical dense step's 8.21 us.
  const google::protobuf::Struct* activation = Boxing(json, "add_1");
  ASSERT_NE(activation, nullptr);
  const auto& dense_step = activation->fields().at("steps").list_value().values(0).struct_value().fields();
  EXPECT_EQ(dense_step.count("compression"), 0u);
  // Totals: every device sends less than dense, and the dense figures are the plan's
  // bytes plus what compression saved.
  const auto& device = json.fields().at("devices").list_value().values(0).struct_value().fields();
  EXPECT_LT(device.at("bytes_sent_per_iter").number_value(), device.at("dense_bytes_sent_per_iter").number_value());
  EXPECT_LT(json.fields().at("boxing_bytes_per_iter").number_value(),
            json.fields().at("boxing_dense_bytes_per_iter").number_value());
}

// --error_feedback marks the gradient reductions (Compression.error_feedback), whose
// senders then decode what they send for the residual: the w_q gradient's step above
// pays 512 + 256 elements decoded once more at 4e9 B/s a pass, 0.768 us, and saves
// 4.81532 us instead of 5.58332. An activation's step has no error feedback and keeps
// its price.
TEST(InspectCompressionTest, ErrorFeedbackPricesTheSendersDecode) {
  const google::protobuf::Struct json =
      ParseJson(Inspect(CompressedGpt(proto::Compression::NEAREST, 0, /*error_feedback=*/true), InspectFormat::kJson));
  const google::protobuf::Struct* gradient = Boxing(json, "matmul_4_grad/matmul_80");
  ASSERT_NE(gradient, nullptr);
  const auto& step = gradient->fields().at("steps").list_value().values(0).struct_value().fields();
  const auto& compression = step.at("compression").struct_value().fields();
  EXPECT_NEAR(compression.at("seconds_saved").number_value(), 4.81532e-6, 1e-10);
  EXPECT_THAT(compression.at("reason").string_value(), HasSubstr("decode 0.00154 + latency 0 ms"));
  const std::string text = Inspect(CompressedGpt(proto::Compression::NEAREST, 0, true), InspectFormat::kText);
  EXPECT_THAT(text, HasSubstr("fp8e4m3 G=128 hadamard: 0.00838 ms (encode 0.00102 + wire 0.00634 + decode 0.00102"));
}

TEST(InspectCompressionTest, DotLabelsCompressedBoxingsWithTheirCodecs) {
  const std::string dot = Inspect(CompressedGpt(), InspectFormat::kDot);
  EXPECT_THAT(dot, HasSubstr("step 0: two-level: int8 (group 512, hadamard) in-node + int4 (group 128, hadamard) "
                             "cross-node\\n3.00 KiB -> 652 B/device, saves 0.00558 ms"));
}

}  // namespace
}  // namespace oneflow::cli
