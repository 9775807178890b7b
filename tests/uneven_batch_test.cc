// A gpt batch that the data-parallel degree does not divide (issue 24): examples/gpt
// refuses it, naming the batch, dp (and micro-batches), what each device would hold and
// the nearest valid batches, because the plan it would make boxes activations around
// every reshape of the batch ([b, s, h] -> [b*s, h] cannot keep an uneven S(0) split).
// With GptConfig::uneven_batch (--uneven_batch) it compiles that plan anyway; a batch dp
// divides gets none of those boxings. That such plans train like one device is
// tests/layout_sweep_test.cc's (gpt batch 8 over dp = 3, 5, 6, 7).
#include <string>

#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

ParallelLayout Layout(int64_t dp, int64_t micro_batches = 1) {
  ParallelFlags flags;
  flags.devices_per_node = dp;
  flags.dp = dp;
  flags.micro_batches = micro_batches;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

examples::GptConfig SmallGpt(int64_t batch, bool uneven_batch = false) {
  examples::GptConfig config;
  config.batch = batch;
  config.seq = 8;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  config.uneven_batch = uneven_batch;
  return config;
}

// Boxings that turn a split tensor into partial sums (S -> P): what an uneven batch split
// makes of the activations around each reshape. A data-parallel plan has none: its
// boxings reduce partial gradients (P -> B) and gather the targets' labels.
int SplitToPartialBoxings(const proto::Plan& plan) {
  int count = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    bool split = false, partial = false;
    for (const proto::SbpParallel& sbp : boxing.src_sbp().sbp()) split |= sbp.has_split();
    for (const proto::SbpParallel& sbp : boxing.dst_sbp().sbp()) partial |= sbp.has_partial();
    if (split && partial) ++count;
  }
  return count;
}

proto::Plan CompileGpt(const examples::GptConfig& config, const ParallelLayout& layout) {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  EXPECT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

TEST(UnevenBatchTest, ABatchDpDoesNotDivideIsRefusedNamingTheValidBatches) {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(SmallGpt(8), Layout(3));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(),
            "--batch=8 does not split evenly over --dp=3: the data-parallel devices would hold 3, 3, 2 sequences, and "
            "the model's reshapes of an uneven batch split need activation boxing (S(0) -> P and back: dozens of "
            "collectives per step instead of a few gradient reductions); use a --batch divisible by 3 (e.g. 6 or 9), "
            "or --uneven_batch to compile the uneven split anyway");
}

TEST(UnevenBatchTest, MicroBatchesCountInTheSplit) {
  // 4 rows per micro-batch over dp=3; valid batches are multiples of 3 x 2.
  absl::StatusOr<proto::Job> job = examples::BuildGpt(SmallGpt(8), Layout(3, 2));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(),
            "--batch=8 (4 per micro-batch of --micro_batches=2) does not split evenly over --dp=3: the data-parallel "
            "devices would hold 2, 1, 1 sequences of each micro-batch, and the model's reshapes of an uneven batch "
            "split need activation boxing (S(0) -> P and back: dozens of collectives per step instead of a few "
            "gradient reductions); use a --batch divisible by 6 (e.g. 6 or 12), or --uneven_batch to compile the "
            "uneven split anyway");
  // Fewer rows than devices: some would hold none; only the batch above is named.
  job = examples::BuildGpt(SmallGpt(2), Layout(4));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("would hold 1, 1, 0, 0 sequences"), std::string::npos) << job.status();
  EXPECT_NE(job.status().message().find("divisible by 4 (e.g. 4)"), std::string::npos) << job.status();
}

TEST(UnevenBatchTest, EvenBatchesHaveNoActivationBoxingTheUnevenOptInHas) {
  const proto::Plan even = CompileGpt(SmallGpt(6), Layout(3));
  const proto::Plan uneven = CompileGpt(SmallGpt(8, /*uneven_batch=*/true), Layout(3));
  EXPECT_EQ(SplitToPartialBoxings(even), 0);
  EXPECT_GT(SplitToPartialBoxings(uneven), 0);
  EXPECT_GT(uneven.boxings_size(), 2 * even.boxings_size())
      << "even " << even.boxings_size() << ", uneven " << uneven.boxings_size();
  // A batch dp divides needs no opt-in, with or without micro-batches.
  EXPECT_TRUE(examples::BuildGpt(SmallGpt(12), Layout(3, 2)).ok());
  EXPECT_TRUE(examples::BuildGpt(SmallGpt(8), Layout(1)).ok());
}

}  // namespace
}  // namespace oneflow
