// The acts the cost model prices for a layout (compiler/auto_parallel/act_count.h
// ActFamilyProbe, CountLayoutActs, ActsOf): each family of layouts counted in its own
// compiled plan, so data parallelism's gradient sync, ZeRO's collectives and copies and
// the micro-batches' accumulators are priced, checked against the actors of the plans
// the runtime runs. The real-run check is bench/auto_parallel:prediction_bench
// (predicted_acts_per_iteration beside acts_per_iteration).
#include <string>

#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

proto::AutoParallelLayout Layout(int64_t dp, int64_t tp, int64_t micro_batches, int32_t zero) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(tp);
  layout.set_pp(1);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

// The gpt compiled for `layout` on dp x tp devices of one node.
proto::Plan Compiled(const proto::AutoParallelLayout& layout) {
  examples::ParallelFlags flags;
  flags.devices_per_node = layout.dp() * layout.tp();
  flags.dp = layout.dp();
  flags.tp = layout.tp();
  flags.micro_batches = layout.micro_batches();
  flags.zero = layout.zero();
  absl::StatusOr<examples::ParallelLayout> parallel = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(parallel.ok()) << parallel.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(TinyGpt(), *parallel);
  EXPECT_TRUE(job.ok()) << job.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*parallel, examples::CompileSettings(), &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

// Every device's acts in one iteration of `plan`, as the runtime runs them.
int64_t PlanActs(const proto::Plan& plan, int64_t micro_batches) {
  int64_t acts = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) acts += actor.per_iteration() ? 1 : micro_batches;
  }
  return acts;
}

// The gpt's profile from the probe layout (tp = 2 on two devices) with that plan's acts
// counted, as --auto_parallel does with host terms.
auto_parallel::ModelProfile CountedProfile() {
  auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  const absl::Status counted = auto_parallel::CountActs(Compiled(Layout(1, 2, 1, 0)), &profile);
  EXPECT_TRUE(counted.ok()) << counted;
  return profile;
}

auto_parallel::PriceOptions Devices(int64_t devices) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(devices);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_intra_node_latency(1e-5);
  options.act_seconds = 1e-5;
  return options;
}

int64_t PredictedActs(const auto_parallel::ModelProfile& profile, const proto::AutoParallelLayout& layout) {
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(profile, Devices(layout.dp() * layout.tp()), layout);
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return prediction.ok() ? prediction->acts_per_iteration() : -1;
}

TEST(AutoParallelLayoutActsTest, TheFamilyProbeKeepsWhatChangesTheActors) {
  proto::AutoParallelLayout layout = Layout(4, 2, 8, 3);
  layout.set_pp(2);
  layout.set_recompute(proto::RECOMPUTE_FULL);
  EXPECT_EQ(auto_parallel::LayoutName(auto_parallel::ActFamilyProbe(layout)),
            "dp=2 tp=2 pp=1 micro_batches=2 zero=3 recompute=none");
  EXPECT_EQ(auto_parallel::LayoutName(auto_parallel::ActFamilyProbe(Layout(1, 4, 1, 0))),
            "dp=1 tp=2 pp=1 micro_batches=1 zero=0 recompute=none");
}

TEST(AutoParallelLayoutActsTest, EachFamilyIsPricedWithTheActsOfItsOwnPlan) {
  auto_parallel::ModelProfile profile = CountedProfile();
  for (const proto::AutoParallelLayout& probe :
       {Layout(2, 1, 1, 0), Layout(2, 1, 2, 0), Layout(2, 1, 2, 1), Layout(2, 1, 2, 2), Layout(2, 1, 2, 3),
        Layout(2, 2, 2, 1)}) {
    SCOPED_TRACE(auto_parallel::LayoutName(probe));
    const proto::Plan plan = Compiled(probe);
    const int64_t runs = PlanActs(plan, probe.micro_batches());
    // Without the family's own count, the probe plan's (tp = 2, one replica, one
    // micro-batch): Megatron's boxings that a dp layout does not run, and neither the
    // gradient sync, nor ZeRO's gathers and copies, nor the accumulators.
    EXPECT_NE(PredictedActs(profile, probe), runs);
    const absl::Status counted = auto_parallel::CountLayoutActs(plan, probe, &profile);
    ASSERT_TRUE(counted.ok()) << counted;
    // Every device of the probe runs what its first device runs.
    EXPECT_EQ(PredictedActs(profile, probe), runs);
  }
  // A larger layout of a counted family: its replicas run the probe's acts, its
  // micro-batches the per-micro-batch ones; the plan agrees within its few per-replica
  // differences (ZeRO's shards of uneven variables).
  const proto::AutoParallelLayout dp4 = Layout(4, 1, 2, 1);
  const int64_t runs = PlanActs(Compiled(dp4), 2);
  const int64_t predicted = PredictedActs(profile, dp4);
  EXPECT_NEAR(static_cast<double>(predicted), static_cast<double>(runs), 0.02 * static_cast<double>(runs));
}

TEST(AutoParallelLayoutActsTest, TheDriverCountsEveryFamilyTheSearchPrices) {
  auto_parallel::ModelProfile profile = CountedProfile();
  examples::ParallelFlags cluster;
  cluster.devices_per_node = 4;
  absl::StatusOr<int64_t> families = examples::CountActsOfLayoutFamilies(
      [](const examples::ParallelLayout& layout) { return examples::BuildGpt(TinyGpt(), layout); }, cluster,
      examples::CompileSettings(), 8, &profile);
  ASSERT_TRUE(families.ok()) << families.status();
  // dp 1 or 2 (with ZeRO 0-3, and 3 keeping forward's gathered copies) x tp 1 or 2 x one
  // or more micro-batches: (1 + 5) x 2 x 2, less dp = tp = 1 (pp = 4 is more stages than
  // the 3 blocks): 22.
  EXPECT_EQ(*families, 22);
  EXPECT_EQ(profile.layout_acts.size(), 22u);
  const proto::AutoParallelLayout zero2 = Layout(2, 2, 2, 2);
  EXPECT_EQ(PredictedActs(profile, zero2), PlanActs(Compiled(zero2), 2));
}

TEST(AutoParallelLayoutActsTest, ANonProbeLayoutIsRefused) {
  auto_parallel::ModelProfile profile = CountedProfile();
  const absl::Status status = auto_parallel::CountLayoutActs(Compiled(Layout(4, 1, 1, 0)), Layout(4, 1, 1, 0), &profile);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "dp=4 tp=1 pp=1 micro_batches=1 zero=0 recompute=none is no family probe; its family's is dp=2 tp=1 pp=1 "
            "micro_batches=1 zero=0 recompute=none");
  const absl::Status empty = auto_parallel::CountLayoutActs(proto::Plan(), Layout(2, 1, 1, 0), &profile);
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow
