// The cost model's GEMMs by shape (Cluster.gemm_shape_*, sbp/gemm_shape_model.h): the
// profile records each GEMM's logical shape and the dimensions a layout divides, and the
// Pricer prices each GEMM, forward and its two backward products, by its shape on one
// device. Checked by hand on the tiny gpt: the shapes of its products, a peak-only model
// pricing as the one GEMM rate on every layout, and the per-call cost counted once per
// product (forward and backward, per micro-batch).
#include <string>

#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "gtest/gtest.h"
#include "sbp/gemm_shape_model.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

using GemmDim = auto_parallel::OpWork::GemmDim;

auto_parallel::ModelProfile TinyGptProfile() {
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(TwoDeviceTpGpt(TinyGpt()), 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : auto_parallel::ModelProfile();
}

auto_parallel::PriceOptions Devices(int64_t devices) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(devices);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_intra_node_latency(1e-5);
  options.cluster.set_gemm_flops_per_second(1e11);
  options.cluster.set_memory_bytes_per_second(1e10);
  return options;
}

int64_t GemmCount(const auto_parallel::ModelProfile& profile) {
  int64_t gemms = 0;
  for (const auto_parallel::ProfileUnit& unit : profile.units) {
    for (const auto_parallel::OpWork& work : unit.op_work) gemms += work.gemm_flops > 0 ? 1 : 0;
  }
  return gemms;
}

// The tiny gpt (batch 8, seq 16, hidden 32, 2 heads, vocabulary 64): the q projection is
// one product of the 128 tokens by a column-parallel weight (rows: m, tp: n); the scores
// are 16 products (8 sequences x 2 heads) of 16 x 16 tokens over the head width 16 (rows
// and tp both the batch); the output projection is row-parallel (tp: k).
TEST(AutoParallelGemmShapeTest, TheProfileRecordsEachGemmsShapeAndItsDividedDimensions) {
  const auto_parallel::ModelProfile profile = TinyGptProfile();
  const auto_parallel::ProfileUnit* block = nullptr;
  for (const auto_parallel::ProfileUnit& unit : profile.units) {
    if (unit.stageable && block == nullptr) block = &unit;
  }
  ASSERT_NE(block, nullptr);
  std::vector<const auto_parallel::OpWork*> gemms;
  for (const auto_parallel::OpWork& work : block->op_work) {
    if (work.gemm_flops > 0) {
      gemms.push_back(&work);
      EXPECT_DOUBLE_EQ(work.gemm_shape.Flops(), work.gemm_flops);
    }
  }
  // q, k, v, scores, context, output projection, fc, proj.
  ASSERT_EQ(gemms.size(), 8u);
  const auto_parallel::OpWork& q = *gemms[0];
  EXPECT_EQ(q.gemm_shape.batch, 1);
  EXPECT_EQ(q.gemm_shape.m, 128);
  EXPECT_EQ(q.gemm_shape.n, 32);
  EXPECT_EQ(q.gemm_shape.k, 32);
  EXPECT_EQ(q.gemm_rows_dim, GemmDim::kM);
  EXPECT_EQ(q.gemm_tp_dim, GemmDim::kN);
  const auto_parallel::OpWork& scores = *gemms[3];
  EXPECT_EQ(scores.gemm_shape.batch, 16);
  EXPECT_EQ(scores.gemm_shape.m, 16);
  EXPECT_EQ(scores.gemm_shape.n, 16);
  EXPECT_EQ(scores.gemm_shape.k, 16);
  EXPECT_EQ(scores.gemm_rows_dim, GemmDim::kBatch);
  EXPECT_EQ(scores.gemm_tp_dim, GemmDim::kBatch);
  const auto_parallel::OpWork& output = *gemms[5];
  EXPECT_EQ(output.gemm_shape.m, 128);
  EXPECT_EQ(output.gemm_tp_dim, GemmDim::kK);
  const auto_parallel::OpWork& fc = *gemms[6];
  EXPECT_EQ(fc.gemm_shape.n, 128);  // 4 x hidden
  EXPECT_EQ(fc.gemm_tp_dim, GemmDim::kN);
}

// A shape model of the one rate's peak and nothing else prices every layout as the one
// rate does: the shapes' FLOPs, divided on each device, add up to the unit's, and backward's
// two products to twice the forward.
TEST(AutoParallelGemmShapeTest, APeakOnlyModelPricesAsTheOneGemmRate) {
  const auto_parallel::ModelProfile profile = TinyGptProfile();
  for (const proto::AutoParallelLayout& layout :
       {LayoutOf(1, 1, 1, 1), LayoutOf(4, 1, 1, 1), LayoutOf(1, 4, 1, 1), LayoutOf(2, 2, 1, 2), LayoutOf(2, 1, 2, 2)}) {
    const int64_t devices = layout.dp() * layout.tp() * layout.pp();
    auto_parallel::PriceOptions flat = Devices(devices);
    auto_parallel::PriceOptions shaped = Devices(devices);
    shaped.cluster.set_gemm_shape_flops_per_second(1e11);
    absl::StatusOr<proto::AutoParallelPrediction> one_rate = auto_parallel::PriceLayout(profile, flat, layout);
    absl::StatusOr<proto::AutoParallelPrediction> by_shape = auto_parallel::PriceLayout(profile, shaped, layout);
    ASSERT_TRUE(one_rate.ok()) << one_rate.status();
    ASSERT_TRUE(by_shape.ok()) << by_shape.status();
    EXPECT_NEAR(by_shape->compute_seconds(), one_rate->compute_seconds(), 1e-9 * one_rate->compute_seconds())
        << auto_parallel::LayoutName(layout);
  }
}

// With a cost per call, one device's step grows by that cost for every GEMM's forward and
// its two backward products, per micro-batch.
TEST(AutoParallelGemmShapeTest, EachProductPaysTheCallCostForwardAndTwiceInBackward) {
  const auto_parallel::ModelProfile profile = TinyGptProfile();
  const double gemms = static_cast<double>(GemmCount(profile));
  ASSERT_GT(gemms, 0);
  constexpr double kCall = 1e-4;
  for (int64_t micro_batches : {1, 2}) {
    auto_parallel::PriceOptions peak_only = Devices(1);
    peak_only.cluster.set_gemm_shape_flops_per_second(1e11);
    auto_parallel::PriceOptions with_call = peak_only;
    with_call.cluster.set_gemm_shape_call_seconds(kCall);
    const proto::AutoParallelLayout layout = LayoutOf(1, 1, 1, micro_batches);
    absl::StatusOr<proto::AutoParallelPrediction> without = auto_parallel::PriceLayout(profile, peak_only, layout);
    absl::StatusOr<proto::AutoParallelPrediction> with = auto_parallel::PriceLayout(profile, with_call, layout);
    ASSERT_TRUE(without.ok()) << without.status();
    ASSERT_TRUE(with.ok()) << with.status();
    EXPECT_NEAR(with->compute_seconds() - without->compute_seconds(),
                3 * gemms * kCall * static_cast<double>(micro_batches), 1e-9)
        << micro_batches << " micro-batches";
  }
}

// The operands' bytes do not divide as the FLOPs do: at dp = 4 each device multiplies a
// quarter of the rows by the whole weights, so its bytes' cost is more than a quarter of
// one device's, while its FLOPs' cost is exactly a quarter.
TEST(AutoParallelGemmShapeTest, OperandBytesDoNotDivideAsTheFlopsDo) {
  const auto_parallel::ModelProfile profile = TinyGptProfile();
  auto extra = [&](const proto::AutoParallelLayout& layout) {
    auto_parallel::PriceOptions peak_only = Devices(layout.dp());
    peak_only.cluster.set_gemm_shape_flops_per_second(1e11);
    auto_parallel::PriceOptions with_bytes = peak_only;
    with_bytes.cluster.set_gemm_shape_operand_bytes_per_second(1e10);
    absl::StatusOr<proto::AutoParallelPrediction> without = auto_parallel::PriceLayout(profile, peak_only, layout);
    absl::StatusOr<proto::AutoParallelPrediction> with = auto_parallel::PriceLayout(profile, with_bytes, layout);
    EXPECT_TRUE(without.ok() && with.ok());
    return with.ok() && without.ok() ? with->compute_seconds() - without->compute_seconds() : 0.0;
  };
  const double one_device = extra(LayoutOf(1, 1, 1, 1));
  const double data_parallel = extra(LayoutOf(4, 1, 1, 1));
  EXPECT_GT(one_device, 0);
  EXPECT_GT(data_parallel, 1.05 * one_device / 4);
  EXPECT_LT(data_parallel, one_device);
}

}  // namespace
}  // namespace oneflow
