// The collective calls the cost model prices for data parallelism and ZeRO
// (compiler/auto_parallel/price.h): the gradient reductions one call per bucket as
// compiler/passes/gradient_bucketing packs them (the first bucket at most 1 MiB, ZeRO's
// reductions too), the updated shards' gathers (ZeRO 1, 2) one per variable, and ZeRO-3's
// parameter gathers twice per iteration whatever the micro-batches, checked against the
// plans the compiler emits.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// Parameters of several MiB: more than DDP's 1 MiB first bucket.
examples::GptConfig Gpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.layers = 4;
  config.hidden = 128;
  config.heads = 4;
  config.vocab = 512;
  return config;
}

examples::ParallelLayout LayoutOf(int64_t dp, int64_t tp, int64_t micro_batches, int32_t zero) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp * tp;
  flags.dp = dp;
  flags.tp = tp;
  flags.micro_batches = micro_batches;
  flags.zero = zero;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan Compiled(int64_t dp, int64_t micro_batches, int32_t zero) {
  const examples::ParallelLayout layout = LayoutOf(dp, 1, micro_batches, zero);
  absl::StatusOr<proto::Job> job = examples::BuildGpt(Gpt(), layout);
  EXPECT_TRUE(job.ok()) << job.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, examples::CompileSettings(), &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

auto_parallel::ModelProfile Profile() {
  absl::StatusOr<proto::Job> job = examples::BuildGpt(Gpt(), LayoutOf(1, 2, 1, 0));
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(*job, 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return *profile;
}

int64_t Variables(const auto_parallel::ModelProfile& profile) {
  int64_t tensors = 0;
  for (const auto_parallel::ProfileUnit& unit : profile.units) tensors += unit.parameter_tensors;
  return tensors;
}

// The collective calls priced for `layout` on two devices: the exposed communication a
// call cost of 1 ms adds, over 1 ms. Compute is made free, so backward hides nothing and
// every data-parallel call is exposed.
double PricedCalls(const auto_parallel::ModelProfile& profile, int64_t micro_batches, int32_t zero) {
  proto::AutoParallelLayout layout;
  layout.set_dp(2);
  layout.set_tp(1);
  layout.set_pp(1);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  auto_parallel::PriceOptions free;
  free.cluster.set_num_nodes(1);
  free.cluster.set_devices_per_node(2);
  free.cluster.set_intra_node_bandwidth(100e9);
  free.cluster.set_intra_node_latency(1e-5);
  free.cluster.set_gemm_flops_per_second(1e30);
  free.cluster.set_memory_bytes_per_second(1e30);
  auto_parallel::PriceOptions priced = free;
  priced.collective_call_seconds = 1e-3;
  absl::StatusOr<proto::AutoParallelPrediction> without = auto_parallel::PriceLayout(profile, free, layout);
  absl::StatusOr<proto::AutoParallelPrediction> with = auto_parallel::PriceLayout(profile, priced, layout);
  EXPECT_TRUE(without.ok() && with.ok());
  return (with->exposed_communication_seconds() - without->exposed_communication_seconds()) / 1e-3;
}

TEST(AutoParallelZeroCallsTest, GradientReductionsRunOneCallPerBucketOfTheCompiledPlan) {
  const auto_parallel::ModelProfile profile = Profile();
  const int64_t variables = Variables(profile);
  for (int32_t zero : {0, 1, 2, 3}) {
    SCOPED_TRACE(absl::StrCat("zero=", zero));
    const proto::Plan plan = Compiled(2, 1, zero);
    // The gpt's gradients (several MiB) fill DDP's 1 MiB first bucket and one more.
    ASSERT_EQ(plan.buckets_size(), 2);
    // The reductions one call per bucket; ZeRO 1 and 2 gather each updated shard, ZeRO 3
    // each parameter for forward and again for backward.
    const int64_t gathers = zero == 0 ? 0 : zero == 3 ? 2 * variables : variables;
    EXPECT_NEAR(PricedCalls(profile, 1, zero), static_cast<double>(plan.buckets_size() + gathers), 1e-6);
  }
}

TEST(AutoParallelZeroCallsTest, ZeroThreeGathersOncePerIterationWhateverTheMicroBatches) {
  const auto_parallel::ModelProfile profile = Profile();
  EXPECT_NEAR(PricedCalls(profile, 4, 3), PricedCalls(profile, 1, 3), 1e-6);
  // The plan agrees: every gather of a parameter for forward or backward acts once per
  // iteration (its input is a variable's shard), with 4 micro-batches as with 1, two per
  // variable but for those backward does not read (the layer norms' biases: one each;
  // the model prices two, a few calls of the ~90).
  auto gathers_of = [](const proto::Plan& plan) {
    int64_t gathers = 0;
    for (const proto::ActorDef& actor : plan.devices(0).actors()) {
      if (actor.kind() != proto::ACTOR_BOXING || actor.boxing_id() < 0) continue;  // buckets have none
      const proto::BoxingDef& boxing = plan.boxings(actor.boxing_id());
      if (boxing.steps().empty() || boxing.steps(0).kind() != proto::STEP_ALL_GATHER) continue;
      ++gathers;
      EXPECT_TRUE(actor.per_iteration()) << boxing.tensor() << " into " << boxing.consumer_op();
    }
    return gathers;
  };
  const int64_t gathers = gathers_of(Compiled(2, 4, 3));
  EXPECT_EQ(gathers, gathers_of(Compiled(2, 2, 3)));
  EXPECT_GT(gathers, 3 * Variables(profile) / 2);
  EXPECT_LE(gathers, 2 * Variables(profile));
}

}  // namespace
}  // namespace oneflow
