// bf16 mixed precision end to end (--precision=bf16, compiler/passes/precision_pass.h and
// activation_storage_pass.h; docs/memory_and_precision.md, "Precision"): gpt and llama in
// bf16 on one device against dp=2 x tp=2 (and llama against pp=2 x 4 micro-batches)
// within 1e-2 relative for 20 iterations; gradient reductions in bf16 on the wire (--gradient_wire) halving the
// wire bytes of dp=2 x tp=2 and ZeRO-2 within the same tolerance of the fp32 wire; the
// activation arena with activations kept in bf16 against fp32's; the bf16 gpt's mean loss over
// iterations 150-200 within 1% of fp32's; a checkpoint of a bf16 run holds fp32 masters
// and resumes into an fp32 run; and the --precision errors. The plans are compiled
// through CompileOptions, which does not probe the CPU: on a CPU without AVX-512 the
// products take the rounded-operand fp32 route (kernels/cpu/sgemm.h), the same values.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "actors/checkpoint/checkpoint_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "tests/tiny_llama.h"

namespace oneflow {
namespace {

namespace fs = std::filesystem;
using examples::ParallelFlags;
using examples::ParallelLayout;

struct Layout {
  const char* name;
  int64_t dp = 1, tp = 1, pp = 1, micro_batches = 1, zero = 0;
};

enum class Model { kGpt, kLlama };

// The tiny configurations of train_equivalence_test (gpt) and llama_training_test.
proto::Plan CompileModel(Model model, const Layout& l, Precision precision,
                         GradientWire gradient_wire = GradientWire::kFp32) {
  ParallelFlags flags;
  flags.devices_per_node = l.dp * l.tp * l.pp;
  flags.dp = l.dp;
  flags.tp = l.tp;
  flags.pp = l.pp;
  flags.micro_batches = l.micro_batches;
  flags.zero = l.zero;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job;
  if (model == Model::kGpt) {
    examples::GptConfig config;
    config.batch = 4;
    config.seq = 8;
    config.layers = 1;
    config.hidden = 32;
    config.heads = 4;
    config.vocab = 32;
    config.learning_rate = 1e-2;
    config.warmup_steps = 5;
    job = examples::BuildGpt(config, *layout);
  } else {
    job = examples::BuildLlama(testing::TinyLlama(), *layout);
  }
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.precision = precision;
  options.compression.gradient_wire = gradient_wire;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << l.name << ": " << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::vector<double> Losses(const absl::StatusOr<actors::TrainResult>& result) {
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

actors::TrainOptions TrainFor(int64_t iterations) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  train.collective_timeout = absl::Seconds(20);
  return train;
}

std::vector<double> Train(Model model, const Layout& l, Precision precision, int64_t iterations,
                          GradientWire gradient_wire = GradientWire::kFp32) {
  const absl::StatusOr<actors::TrainResult> result =
      actors::TrainPlan(CompileModel(model, l, precision, gradient_wire), TrainFor(iterations));
  EXPECT_TRUE(result.ok()) << l.name << ": " << result.status();
  return Losses(result);
}

int CountBf16Products(const proto::Plan& plan) {
  int count = 0;
  for (const proto::OpDef& op : plan.job().ops()) {
    const auto found = op.attrs().find("compute_dtype");
    count += found != op.attrs().end() && found->second.s() == "bf16";
  }
  return count;
}

// Activations the plan keeps for backward in bf16: the narrowing casts of
// compiler/passes/activation_storage_pass.h.
int CountBf16StoredActivations(const proto::Plan& plan) {
  int count = 0;
  for (const proto::OpDef& op : plan.job().ops()) {
    const auto dtype = op.attrs().find("dtype");
    count += op.type() == "cast" && dtype != op.attrs().end() && dtype->second.s() == "bf16";
  }
  return count;
}

// The arena (memory block 1) holds every activation register of the device.
int64_t ArenaBytes(const proto::Plan& plan) { return plan.devices(0).memory_blocks(1).size_bytes(); }

// bf16 on one device against `layout` (1e-2 relative for 20 iterations), and bf16 is
// really on: the plan marks the products, and the curve differs from fp32's.
void ExpectBf16LayoutsAgree(Model model, const Layout& layout) {
  constexpr int kIterations = 20;
  const proto::Plan plan = CompileModel(model, {"1 device"}, Precision::kBf16);
  const proto::Plan split_plan = CompileModel(model, layout, Precision::kBf16);
  EXPECT_GT(CountBf16Products(split_plan), 0) << layout.name;
  EXPECT_GT(CountBf16StoredActivations(split_plan), 0) << layout.name;
  EXPECT_GT(CountBf16Products(plan), 0);
  EXPECT_EQ(CountBf16Products(CompileModel(model, {"1 device"}, Precision::kFp32)), 0);
  EXPECT_GT(CountBf16StoredActivations(plan), 0);
  EXPECT_EQ(CountBf16StoredActivations(CompileModel(model, {"1 device"}, Precision::kFp32)), 0);
  const std::vector<double> reference = Losses(actors::TrainPlan(plan, TrainFor(kIterations)));
  const std::vector<double> fp32 = Train(model, {"1 device"}, Precision::kFp32, kIterations);
  const std::vector<double> split = Losses(actors::TrainPlan(split_plan, TrainFor(kIterations)));
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(fp32.size(), reference.size());
  ASSERT_EQ(split.size(), reference.size());
  EXPECT_LT(reference.back(), reference.front() * 0.9) << "the bf16 loss does not fall";
  double largest_difference_from_fp32 = 0, largest_split_relative = 0;
  for (int i = 0; i < kIterations; ++i) {
    ASSERT_TRUE(std::isfinite(reference[i])) << "iteration " << i;
    largest_split_relative = std::max(largest_split_relative, std::abs(split[i] - reference[i]) / std::abs(reference[i]));
    EXPECT_NEAR(split[i], reference[i], 1e-2 * std::abs(reference[i])) << layout.name << ", iteration " << i;
    largest_difference_from_fp32 = std::max(largest_difference_from_fp32, std::abs(fp32[i] - reference[i]));
  }
  // bf16 operands (8 significant bits) move the losses well above fp32's rounding.
  EXPECT_GT(largest_difference_from_fp32, 1e-5);
  std::printf("bf16 %s: %s vs 1 device, largest relative difference %.3g; bf16 vs fp32 on 1 device, "
              "largest difference %.3g\n",
              model == Model::kGpt ? "gpt" : "llama", layout.name, largest_split_relative,
              largest_difference_from_fp32);
}

TEST(Bf16TrainingTest, GptDp2Tp2FollowsOneDevice) {
  ExpectBf16LayoutsAgree(Model::kGpt, {"dp=2 x tp=2", 2, 2});
}

TEST(Bf16TrainingTest, LlamaDp2Tp2FollowsOneDevice) {
  ExpectBf16LayoutsAgree(Model::kLlama, {"dp=2 x tp=2", 2, 2});
}

// Pipeline stages (llama: one block per stage; the tiny gpt has one block): the casts of
// activation storage sit on each stage with the activation they keep, and 4 micro-batches
// of 1 sample add up to the batch of 4.
TEST(Bf16TrainingTest, LlamaPp2FollowsOneDevice) {
  ExpectBf16LayoutsAgree(Model::kLlama, {"pp=2 x 4 micro-batches", 1, 1, 2, 4});
}

// Activations kept for backward in bf16 shrink the planned arena of one device: bf16 over
// fp32 at most the bound measured on these configs (below); keeping them in f32 (the pass
// switched off) gives 1. On device 0 of dp=2 x tp=2 the arena's peak lies where few kept
// activations are live, and bf16 must only not make it larger. Measured: gpt 0.834x on
// one device and 1.000x on dp=2 x tp=2; llama 0.729x and 1.000x (0.982x without gradient
// buckets). The 0.810x / 0.800x measured on dp=2 x tp=2 before compared a bucketed fp32
// plan with a bf16 plan that had lost its gradient buckets (activation_storage did not
// read the gradients).
void ExpectBf16ArenaShrinks(Model model, double bound) {
  for (const Layout& layout : {Layout{"1 device"}, Layout{"dp=2 x tp=2", 2, 2}}) {
    const proto::Plan fp32 = CompileModel(model, layout, Precision::kFp32);
    const proto::Plan bf16 = CompileModel(model, layout, Precision::kBf16);
    ASSERT_GT(ArenaBytes(fp32), 0);
    const double ratio = static_cast<double>(ArenaBytes(bf16)) / ArenaBytes(fp32);
    std::printf("%s %s: activation arena fp32 %lld B, bf16 %lld B (%.3fx)\n", model == Model::kGpt ? "gpt" : "llama",
                layout.name, static_cast<long long>(ArenaBytes(fp32)), static_cast<long long>(ArenaBytes(bf16)), ratio);
    EXPECT_LE(ratio, layout.dp == 1 ? bound : 1.0) << layout.name;
  }
}

TEST(Bf16TrainingTest, GptActivationArenaShrinks) { ExpectBf16ArenaShrinks(Model::kGpt, 0.85); }

TEST(Bf16TrainingTest, LlamaActivationArenaShrinks) { ExpectBf16ArenaShrinks(Model::kLlama, 0.82); }

double MeanOver(const std::vector<double>& losses, int begin, int end) {
  double sum = 0;
  for (int i = begin; i < end; ++i) sum += losses[i];
  return sum / (end - begin);
}

// 200 iterations of the tiny gpt: the bf16 curve's mean over iterations 150-200 is within
// 1% of the fp32 curve's.
TEST(Bf16TrainingTest, GptLateMeanLossWithinOnePercentOfFp32) {
  constexpr int kIterations = 200;
  const std::vector<double> fp32 = Train(Model::kGpt, {"1 device"}, Precision::kFp32, kIterations);
  const std::vector<double> bf16 = Train(Model::kGpt, {"1 device"}, Precision::kBf16, kIterations);
  ASSERT_EQ(fp32.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(bf16.size(), static_cast<size_t>(kIterations));
  const double fp32_mean = MeanOver(fp32, 150, 200);
  const double bf16_mean = MeanOver(bf16, 150, 200);
  EXPECT_LT(fp32_mean, 0.5 * MeanOver(fp32, 0, 10)) << "the fp32 reference does not train";
  EXPECT_NEAR(bf16_mean, fp32_mean, 0.01 * fp32_mean);
  std::printf("gpt mean loss over iterations 150-200: fp32 %.5f, bf16 %.5f (relative difference %.3g)\n", fp32_mean,
              bf16_mean, std::abs(bf16_mean - fp32_mean) / fp32_mean);
}

// A bf16 run checkpoints fp32 masters (the manifest's floating tensors are all f32), and
// an fp32 run resumes from it; a bf16 run resumed from it continues the uninterrupted bf16
// run exactly, which it would not if the checkpoint had rounded the masters.
TEST(Bf16TrainingTest, Bf16CheckpointResumesIntoFp32) {
  constexpr int kIterations = 8;
  const std::string dir = (fs::path(::testing::TempDir()) / "bf16_checkpoints").string();
  fs::remove_all(dir);
  const proto::Plan bf16 = CompileModel(Model::kGpt, {"dp=2 x tp=2", 2, 2}, Precision::kBf16);
  actors::TrainOptions options = TrainFor(kIterations);
  options.checkpoint.dir = dir;
  options.checkpoint.every = 4;
  const std::vector<double> uninterrupted = Losses(actors::TrainPlan(bf16, options));
  ASSERT_EQ(uninterrupted.size(), static_cast<size_t>(kIterations));
  const std::string after4 = (fs::path(dir) / actors::CheckpointDirName(4)).string();
  absl::StatusOr<proto::CheckpointManifest> manifest = actors::ReadManifest(after4);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_GT(manifest->tensors_size(), 0);
  for (const proto::CheckpointTensor& tensor : manifest->tensors()) {
    if (tensor.dtype() == proto::DTYPE_I32 || tensor.dtype() == proto::DTYPE_I64) continue;
    EXPECT_EQ(tensor.dtype(), proto::DTYPE_F32) << tensor.name();
  }

  actors::TrainOptions resume = TrainFor(kIterations);
  resume.resume_from = after4;
  const std::vector<double> bf16_resumed = Losses(actors::TrainPlan(bf16, resume));
  ASSERT_EQ(bf16_resumed.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bf16_resumed[i], uninterrupted[4 + i]) << "iteration " << 4 + i;

  const proto::Plan fp32 = CompileModel(Model::kGpt, {"1 device"}, Precision::kFp32);
  const absl::StatusOr<actors::TrainResult> fp32_resumed = actors::TrainPlan(fp32, resume);
  ASSERT_TRUE(fp32_resumed.ok()) << fp32_resumed.status();
  EXPECT_EQ(fp32_resumed->first_iteration, 4);
  const std::vector<double> fp32_losses = Losses(fp32_resumed);
  ASSERT_EQ(fp32_losses.size(), 4u);
  // The same weights computed in fp32: within bf16's rounding of the bf16 run's loss.
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(fp32_losses[i], uninterrupted[4 + i], 1e-2 * std::abs(uninterrupted[4 + i])) << "iteration " << 4 + i;
  }
}

// The boxings of a plan by edge (tensor, producer, consumer): the bytes their steps move
// per device, and whether some step travels in bf16.
struct EdgeBytes {
  int64_t bytes = 0;
  int64_t dense_bytes = 0;
  bool bf16 = false;
  bool bucketed = false;  // some step reduces a gradient in a bucket
};

std::map<std::string, EdgeBytes> BoxingBytesByEdge(const proto::Plan& plan) {
  std::map<std::string, EdgeBytes> edges;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    EdgeBytes& edge = edges[absl::StrCat(boxing.tensor(), " ", boxing.producer_op(), " -> ", boxing.consumer_op())];
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      edge.bytes += step.bytes_per_device();
      edge.dense_bytes += step.compression().kind() == proto::Compression::NONE ? step.bytes_per_device()
                                                                                : step.dense_bytes_per_device();
      edge.bucketed |= step.has_bucket_id();
      if (step.compression().kind() == proto::Compression::BF16) {
        edge.bf16 = true;
        EXPECT_TRUE(step.kind() == proto::STEP_ALL_REDUCE || step.kind() == proto::STEP_REDUCE_SCATTER ||
                    step.kind() == proto::STEP_ALL_GATHER)
            << boxing.tensor() << ": " << proto::BoxingStepKind_Name(step.kind());
      }
    }
  }
  return edges;
}

// --gradient_wire=bf16 (CompressionPolicy::gradient_wire): every gradient reduction of a
// bf16 llama on dp=2 x tp=2 (all-reduces) and on dp=2 with ZeRO-2 (reduce-scatters)
// moves 2 bytes an element where the fp32 wire moves 4, in the plan and in the measured
// metrics; every other boxing is unchanged; the loss curve stays within the measured
// tolerance (below) of the fp32-wire curve, and is not the same curve (the wire rounds).
TEST(Bf16TrainingTest, GradientReductionsInBf16HalveTheWireBytes) {
  constexpr int kIterations = 20;
  for (const Layout& layout : {Layout{"dp=2 x tp=2", 2, 2}, Layout{"dp=2 zero=2", 2, 1, 1, 1, 2}}) {
    const proto::Plan fp32_wire = CompileModel(Model::kLlama, layout, Precision::kBf16, GradientWire::kFp32);
    const proto::Plan bf16_wire = CompileModel(Model::kLlama, layout, Precision::kBf16, GradientWire::kBf16);
    const std::map<std::string, EdgeBytes> fp32_edges = BoxingBytesByEdge(fp32_wire);
    const std::map<std::string, EdgeBytes> bf16_edges = BoxingBytesByEdge(bf16_wire);
    ASSERT_EQ(fp32_edges.size(), bf16_edges.size()) << layout.name;
    int64_t gradient_bytes_fp32 = 0, gradient_bytes_bf16 = 0, bf16_edge_count = 0, bucketed_edges = 0;
    for (const auto& [edge, bf16] : bf16_edges) {
      const auto fp32 = fp32_edges.find(edge);
      ASSERT_NE(fp32, fp32_edges.end()) << layout.name << ": " << edge;
      EXPECT_FALSE(fp32->second.bf16) << edge;
      // The fp32 wire buckets the gradient reductions (and the loss's reduction for its
      // sink, which never compresses); each gradient one is bf16 on the other.
      if (fp32->second.bucketed && !absl::EndsWith(edge, "-> loss_sink")) {
        ++bucketed_edges;
        EXPECT_TRUE(bf16.bf16) << layout.name << ": " << edge;
      }
      if (bf16.bf16) {
        ++bf16_edge_count;
        gradient_bytes_fp32 += fp32->second.bytes;
        gradient_bytes_bf16 += bf16.bytes;
        EXPECT_EQ(2 * bf16.bytes, fp32->second.bytes) << layout.name << ": " << edge;
        EXPECT_EQ(bf16.dense_bytes, fp32->second.bytes) << layout.name << ": " << edge;
      } else {
        EXPECT_EQ(bf16.bytes, fp32->second.bytes) << layout.name << ": " << edge;
      }
    }
    // activation_storage keeps the gradients marked as such: the fp32 wire buckets them.
    EXPECT_GT(fp32_wire.buckets_size(), 0) << layout.name;
    EXPECT_GT(bucketed_edges, 0) << layout.name;
    EXPECT_GE(bf16_edge_count, bucketed_edges) << layout.name;

    const absl::StatusOr<actors::TrainResult> fp32_run = actors::TrainPlan(fp32_wire, TrainFor(kIterations));
    const absl::StatusOr<actors::TrainResult> bf16_run = actors::TrainPlan(bf16_wire, TrainFor(kIterations));
    ASSERT_TRUE(fp32_run.ok()) << fp32_run.status();
    ASSERT_TRUE(bf16_run.ok()) << bf16_run.status();
    ASSERT_EQ(fp32_run->iterations.size(), static_cast<size_t>(kIterations));
    ASSERT_EQ(bf16_run->iterations.size(), static_cast<size_t>(kIterations));
    double largest_relative = 0;
    for (int i = 0; i < kIterations; ++i) {
      const actors::IterationMetrics& fp32 = fp32_run->iterations[i];
      const actors::IterationMetrics& bf16 = bf16_run->iterations[i];
      EXPECT_TRUE(fp32.compression.empty()) << "iteration " << i;
      ASSERT_EQ(bf16.compression.size(), 1u) << "iteration " << i;
      const auto metered = bf16.compression.find("bf16/1");
      ASSERT_NE(metered, bf16.compression.end()) << bf16.compression.begin()->first;
      EXPECT_GT(metered->second.wire_bytes, 0);
      EXPECT_EQ(2 * metered->second.wire_bytes, metered->second.dense_bytes) << "iteration " << i;
      // Rounding to bf16 loses at most 2^-8 of each element.
      EXPECT_LE(metered->second.RelativeError(), std::ldexp(1.0, -8));
      largest_relative = std::max(largest_relative, std::abs(static_cast<double>(bf16.loss) - fp32.loss) / std::abs(fp32.loss));
    }
    // Measured: at most 2.95e-3 (dp=2 x tp=2) and 2.3e-3 (dp=2 zero=2); the bound is the
    // bf16 tolerance of the layouts above.
    EXPECT_LT(largest_relative, 1e-2) << layout.name;
    EXPECT_GT(largest_relative, 0.0) << layout.name << ": the bf16 wire changed nothing";
    std::printf("llama bf16 %s: gradient wire %lld B per device in fp32, %lld B in bf16 (%zu boxings); losses bf16 wire "
                "vs fp32 wire: largest relative difference %.3g\n",
                layout.name, static_cast<long long>(gradient_bytes_fp32), static_cast<long long>(gradient_bytes_bf16),
                static_cast<size_t>(bf16_edge_count), largest_relative);
  }
}

absl::Status CompileSettingsError(const std::string& precision, std::optional<CpuBf16Support> cpu) {
  ParallelFlags flags;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return layout.status();
  examples::CompileSettings settings;
  settings.precision = precision;
  settings.cpu = cpu;
  std::string dump;
  return examples::CompileOptionsFor(*layout, settings, &dump).status();
}

TEST(Bf16TrainingTest, PrecisionFlagErrors) {
  EXPECT_EQ(CompileSettingsError("fp8", std::nullopt),
            absl::InvalidArgumentError("--precision=fp8 is not one of: fp32, bf16"));
  EXPECT_EQ(CompileSettingsError("BF16", std::nullopt),
            absl::InvalidArgumentError("--precision=BF16 is not one of: fp32, bf16"));
  const CpuBf16Support avx2_only;  // neither AVX-512 BF16 nor AMX-BF16
  EXPECT_EQ(CompileSettingsError("bf16", avx2_only),
            absl::FailedPreconditionError(
                "--precision=bf16 needs a CPU with AVX-512 BF16 or AMX-BF16 instructions; this CPU has neither, so "
                "bf16 products would run as fp32 products of rounded operands, no faster than fp32; use "
                "--precision=fp32"));
  // fp32 needs nothing; either instruction set is enough for bf16.
  EXPECT_TRUE(CompileSettingsError("fp32", avx2_only).ok());
  EXPECT_TRUE(CompileSettingsError("bf16", CpuBf16Support{.avx512_bf16 = true}).ok());
  EXPECT_TRUE(CompileSettingsError("bf16", CpuBf16Support{.amx_bf16 = true}).ok());
}

}  // namespace
}  // namespace oneflow
