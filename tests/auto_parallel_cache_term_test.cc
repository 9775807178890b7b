// The cost model's cache term (sbp/compute_cost.h, compiler/auto_parallel/price.h): with
// recomputation, a forward memory-bound op's output the layout does not keep for backward
// is written into bytes still in the core's cache, priced at the "memory_cached" rate;
// every other byte (a kept activation's write, every read, backward) at the memory rate.
// Worked by hand on the tiny gpt's block (batch 8, seq 16, hidden 32, 2 heads of 16), one
// device, f32: A = 8 x 16 x 32 x 4 B (a [128, 32] activation), the attention scores
// S = 8 x 2 x 16 x 16 x 4 B, the MLP's F = 8 x 16 x 128 x 4 B.
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

constexpr double kActivation = 8 * 16 * 32 * 4;
constexpr double kScores = 8 * 2 * 16 * 16 * 4;
constexpr double kMlp = 8 * 16 * 128 * 4;
constexpr int kBlocks = 3;
constexpr double kMemory = 1e10;
constexpr double kCached = 4e10;
// What one byte written at the cached rate saves.
constexpr double kSavedPerByte = 1 / kMemory - 1 / kCached;

auto_parallel::PriceOptions OneDevice(double cached_bytes_per_second, double cache_bytes) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(1);
  options.cluster.set_gemm_flops_per_second(1e11);
  options.cluster.set_memory_bytes_per_second(kMemory);
  options.memory_cached_bytes_per_second = cached_bytes_per_second;
  options.cache_bytes = cache_bytes;
  return options;
}

// Compute seconds of `recompute` on one device with the cache term less without it.
double CacheGain(const auto_parallel::ModelProfile& profile, proto::RecomputeMode recompute, double cache_bytes) {
  proto::AutoParallelLayout layout = LayoutOf(1, 1, 1, 1);
  layout.set_recompute(recompute);
  absl::StatusOr<proto::AutoParallelPrediction> without = PriceLayout(profile, OneDevice(0, 0), layout);
  absl::StatusOr<proto::AutoParallelPrediction> with = PriceLayout(profile, OneDevice(kCached, cache_bytes), layout);
  EXPECT_TRUE(without.ok()) << without.status();
  EXPECT_TRUE(with.ok()) << with.status();
  if (!without.ok() || !with.ok()) return 0;
  return without->compute_seconds() - with->compute_seconds();
}

// Selective recomputation re-makes the attention core, so its memory-bound outputs are not
// kept: the scale, the causal mask and the softmax write S each into cached bytes (the
// core's two GEMMs are priced by FLOPs). Every other output stays a kept activation.
TEST(AutoParallelCacheTermTest, SelectiveRecomputationWritesTheAttentionCoresOutputsAtTheCachedRate) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  EXPECT_NEAR(CacheGain(profile, proto::RECOMPUTE_SELECTIVE, 1 << 20), kBlocks * 3 * kScores * kSavedPerByte, 1e-12);
}

// Full recomputation keeps only what leaves the block: of its 30 forward ops the memory-
// bound ones write into cached bytes (2 layer norms A each, the 3 head transposes and the
// context's A each, scale, mask and softmax S each, the first residual add A, gelu F)
// except the second residual add, the block's output, which the next block reads (kept as
// its input) and the 10 reshapes, views of their inputs that write nothing.
TEST(AutoParallelCacheTermTest, FullRecomputationWritesEveryOutputButTheBlocksAtTheCachedRate) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  const double written = 7 * kActivation + 3 * kScores + kMlp;
  EXPECT_NEAR(CacheGain(profile, proto::RECOMPUTE_FULL, 1 << 20), kBlocks * written * kSavedPerByte, 1e-12);
  // A cache of 32 KiB holds each [128, 32] activation and each S (16 KiB) but not gelu's
  // output (64 KiB): that write stays at the memory rate.
  EXPECT_NEAR(CacheGain(profile, proto::RECOMPUTE_FULL, 32 << 10), kBlocks * (written - kMlp) * kSavedPerByte, 1e-12);
}

// Without recomputation every forward output is kept for backward (written into bytes a
// whole step old), and without a measured cache nothing fits: priced as before the term.
TEST(AutoParallelCacheTermTest, KeptActivationsAndAnUnmeasuredCacheStayAtTheMemoryRate) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  EXPECT_EQ(CacheGain(profile, proto::RECOMPUTE_NONE, 1 << 20), 0);
  EXPECT_EQ(CacheGain(profile, proto::RECOMPUTE_FULL, 0), 0);
}

// The rows of a device scale the outputs it writes: with 2 micro-batches each writes half
// of every output, which fits a cache that the whole batch's gelu output does not.
TEST(AutoParallelCacheTermTest, TheOutputThatMustFitIsOneDevicesShareOfOneMicroBatch) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  proto::AutoParallelLayout layout = LayoutOf(1, 1, 1, 2);
  layout.set_recompute(proto::RECOMPUTE_FULL);
  absl::StatusOr<proto::AutoParallelPrediction> without = PriceLayout(profile, OneDevice(0, 0), layout);
  absl::StatusOr<proto::AutoParallelPrediction> with = PriceLayout(profile, OneDevice(kCached, 32 << 10), layout);
  ASSERT_TRUE(without.ok() && with.ok());
  // Per micro-batch half of every output, all of them fitting; 2 micro-batches.
  const double written = 7 * kActivation + 3 * kScores + kMlp;
  EXPECT_NEAR(without->compute_seconds() - with->compute_seconds(), kBlocks * written * kSavedPerByte, 1e-12);
}

}  // namespace
}  // namespace oneflow
