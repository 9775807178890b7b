// The cost model's calibrated terms (compiler/auto_parallel/price.h): acts counted per unit
// in a compiled probe plan (act_count.h) and priced at PriceOptions::act_seconds, and the
// host's cores shared by every device of a one-process run (PriceOptions::host_cores).
// The real-run check of both is bench/auto_parallel:prediction_bench.
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "sbp/compute_cost.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

// The gpt built and compiled for the probe layout (tp = 2 on two devices), profiled and
// its acts counted, as the prediction bench does.
struct Probe {
  auto_parallel::ModelProfile profile;
  proto::Plan plan;
};

Probe ProbeOf(const examples::GptConfig& config) {
  const examples::ParallelLayout layout = TwoDeviceTpLayout();
  const proto::Job job = TwoDeviceTpGpt(config);
  Probe probe;
  absl::StatusOr<auto_parallel::ModelProfile> profile = auto_parallel::ProfileJob(job, 2);
  EXPECT_TRUE(profile.ok()) << profile.status();
  probe.profile = *profile;
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, examples::CompileSettings(), &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  probe.plan = *plan;
  const absl::Status counted = auto_parallel::CountActs(probe.plan, &probe.profile);
  EXPECT_TRUE(counted.ok()) << counted;
  return probe;
}

proto::AutoParallelLayout Layout(int64_t dp, int64_t tp, int64_t pp) { return LayoutOf(dp, tp, pp, 1); }

auto_parallel::PriceOptions Devices(int64_t devices) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(devices);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_intra_node_latency(1e-5);
  return options;
}

TEST(AutoParallelCostTermsTest, EveryActorOfTheProbeDeviceIsCountedOnceAndIdenticalBlocksAlike) {
  const Probe probe = ProbeOf(TinyGpt());
  ASSERT_TRUE(probe.profile.acts_counted);
  int64_t counted = 0;
  std::vector<int64_t> block_acts;
  std::vector<int64_t> block_iteration_acts;
  for (const auto_parallel::ProfileUnit& unit : probe.profile.units) {
    counted += unit.acts_per_micro_batch + unit.acts_per_iteration;
    if (unit.stageable) {
      block_acts.push_back(unit.acts_per_micro_batch);
      block_iteration_acts.push_back(unit.acts_per_iteration);
    }
  }
  EXPECT_EQ(counted, probe.plan.devices(0).actors_size());
  // Three identical blocks: the first two run the same acts (forward, backward, tp
  // all-reduces), the last one one act fewer (its output's boxing belongs to the
  // epilogue), and all three the same per-iteration acts (variables, updates).
  ASSERT_EQ(block_acts.size(), 3u);
  EXPECT_GT(block_acts[0], 0);
  EXPECT_EQ(block_acts[1], block_acts[0]);
  EXPECT_EQ(block_acts[2], block_acts[0] - 1);
  EXPECT_GT(block_iteration_acts[0], 0);
  EXPECT_EQ(block_iteration_acts[1], block_iteration_acts[0]);
  EXPECT_EQ(block_iteration_acts[2], block_iteration_acts[0]);
}

TEST(AutoParallelCostTermsTest, ActsCostActSecondsEachOnOneDevice) {
  const Probe probe = ProbeOf(TinyGpt());
  int64_t acts = 0;
  for (const auto_parallel::ProfileUnit& unit : probe.profile.units) {
    acts += unit.acts_per_micro_batch + unit.acts_per_iteration;
  }
  auto_parallel::PriceOptions free = Devices(1);
  auto_parallel::PriceOptions priced = Devices(1);
  priced.act_seconds = 1e-5;
  absl::StatusOr<proto::AutoParallelPrediction> without = PriceLayout(probe.profile, free, Layout(1, 1, 1));
  absl::StatusOr<proto::AutoParallelPrediction> with = PriceLayout(probe.profile, priced, Layout(1, 1, 1));
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  // One device, one micro-batch: every counted act once, on the compute side.
  EXPECT_NEAR(with->compute_seconds() - without->compute_seconds(), 1e-5 * static_cast<double>(acts), 1e-12);
  EXPECT_EQ(with->exposed_communication_seconds(), without->exposed_communication_seconds());

  // A profile whose acts were not counted prices none.
  auto_parallel::ModelProfile uncounted = probe.profile;
  uncounted.acts_counted = false;
  absl::StatusOr<proto::AutoParallelPrediction> uncounted_price = PriceLayout(uncounted, priced, Layout(1, 1, 1));
  ASSERT_TRUE(uncounted_price.ok());
  EXPECT_EQ(uncounted_price->compute_seconds(), without->compute_seconds());
}

TEST(AutoParallelCostTermsTest, DevicesSharingOneCoreTakeTheirComputeInTurn) {
  const Probe probe = ProbeOf(TinyGpt());
  auto_parallel::PriceOptions own_cores = Devices(4);
  auto_parallel::PriceOptions one_core = Devices(4);
  one_core.host_cores = 1;
  auto_parallel::PriceOptions four_cores = Devices(4);
  four_cores.host_cores = 4;
  const proto::AutoParallelLayout dp4 = Layout(4, 1, 1);
  absl::StatusOr<proto::AutoParallelPrediction> alone = PriceLayout(probe.profile, own_cores, dp4);
  absl::StatusOr<proto::AutoParallelPrediction> shared = PriceLayout(probe.profile, one_core, dp4);
  absl::StatusOr<proto::AutoParallelPrediction> enough = PriceLayout(probe.profile, four_cores, dp4);
  ASSERT_TRUE(alone.ok() && shared.ok() && enough.ok());
  // Four data-parallel devices on one core: the iteration is their four computes in turn,
  // then the gradient sync's last bucket, which every device waits on after backward (a
  // backward four times longer hides no more of it: it follows backward).
  ASSERT_GT(alone->exposed_communication_seconds(), 0);
  EXPECT_NEAR(auto_parallel::StepSeconds(*shared),
              4 * alone->compute_seconds() + alone->exposed_communication_seconds(), 1e-12);
  EXPECT_GT(auto_parallel::StepSeconds(*shared), auto_parallel::StepSeconds(*alone));
  // A core each: nothing changes.
  EXPECT_EQ(auto_parallel::StepSeconds(*enough), auto_parallel::StepSeconds(*alone));
}

TEST(AutoParallelCostTermsTest, TheDevicesComputeOverTheShareOfTheCoresTheProcessObtains) {
  const Probe probe = ProbeOf(TinyGpt());
  const proto::AutoParallelLayout dp4 = Layout(4, 1, 1);
  absl::StatusOr<proto::AutoParallelPrediction> alone = PriceLayout(probe.profile, Devices(4), dp4);
  ASSERT_TRUE(alone.ok()) << alone.status();
  // Two cores of which the process obtains half a core's worth (other programs run):
  // four data-parallel devices' compute takes 4 x compute / 0.5 of wall time, then the
  // sync's last bucket.
  auto_parallel::PriceOptions half_core = Devices(4);
  half_core.host_cores = 2;
  half_core.host_core_share = 0.5;
  absl::StatusOr<proto::AutoParallelPrediction> loaded = PriceLayout(probe.profile, half_core, dp4);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_NEAR(auto_parallel::StepSeconds(*loaded), 8 * alone->compute_seconds() + alone->exposed_communication_seconds(),
              1e-12);
  // A share above the cores (a measurement's noise) is capped at them: 4 x compute / 2.
  auto_parallel::PriceOptions above = half_core;
  above.host_core_share = 3;
  absl::StatusOr<proto::AutoParallelPrediction> capped = PriceLayout(probe.profile, above, dp4);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_NEAR(auto_parallel::StepSeconds(*capped), 2 * alone->compute_seconds() + alone->exposed_communication_seconds(),
              1e-12);
}

TEST(AutoParallelCostTermsTest, OneStageOnSharedCoresWaitsOnItsCollectivesAfterItsStretchedCompute) {
  const Probe probe = ProbeOf(TinyGpt());
  // tp = 2 on two devices, one stage: both devices run every all-reduce together, so
  // neither computes while one runs. On one core the step is their two computes in turn
  // plus every all-reduce (3 x 4 + 2 calls of c each beside the link's price), not the
  // larger of the two (which hid the all-reduces behind the other device's compute).
  auto_parallel::PriceOptions own_cores = Devices(2);
  own_cores.collective_call_seconds = 1e-3;
  auto_parallel::PriceOptions one_core = own_cores;
  one_core.host_cores = 1;
  absl::StatusOr<proto::AutoParallelPrediction> alone = PriceLayout(probe.profile, own_cores, Layout(1, 2, 1));
  absl::StatusOr<proto::AutoParallelPrediction> shared = PriceLayout(probe.profile, one_core, Layout(1, 2, 1));
  ASSERT_TRUE(alone.ok() && shared.ok());
  ASSERT_GE(alone->exposed_communication_seconds(), 14 * 1e-3);
  // (The all-reduces outweigh a device's compute, so the larger of the two was compute +
  // all-reduces: one core's turns did not show.)
  ASSERT_GT(alone->exposed_communication_seconds(), alone->compute_seconds());
  EXPECT_NEAR(shared->compute_seconds(), 2 * alone->compute_seconds(), 1e-12);
  EXPECT_NEAR(shared->exposed_communication_seconds(), alone->exposed_communication_seconds(), 1e-12);
  EXPECT_NEAR(auto_parallel::StepSeconds(*shared),
              2 * alone->compute_seconds() + alone->exposed_communication_seconds(), 1e-12);
}

TEST(AutoParallelCostTermsTest, APipelineOnFewerCoresThanStagesIsPlayedOutOnThem) {
  const Probe probe = ProbeOf(TinyGpt());
  proto::AutoParallelLayout pp3 = Layout(1, 1, 3);
  pp3.set_micro_batches(4);
  auto_parallel::PriceOptions own_cores = Devices(3);
  auto_parallel::PriceOptions two_cores = Devices(3);
  two_cores.host_cores = 2;
  auto_parallel::PriceOptions enough = Devices(3);
  enough.host_cores = 3;
  absl::StatusOr<proto::AutoParallelPrediction> alone = PriceLayout(probe.profile, own_cores, pp3);
  absl::StatusOr<proto::AutoParallelPrediction> shared = PriceLayout(probe.profile, two_cores, pp3);
  absl::StatusOr<proto::AutoParallelPrediction> a_core_each = PriceLayout(probe.profile, enough, pp3);
  ASSERT_TRUE(alone.ok() && shared.ok() && a_core_each.ok());
  // The three stages' micro-batches as the schedule plays them, each device at most a core:
  // with a core each the schedule is (M + pp - 1) x the slowest stage, as without cores.
  EXPECT_NEAR(auto_parallel::StepSeconds(*a_core_each), auto_parallel::StepSeconds(*alone), 1e-12);
  // On two cores, the steady state's three runnable stages slow the critical path to 2/3
  // of a core: longer than the schedule alone and than the work over the cores. (Without
  // the play the step was the larger of those two.)
  auto_parallel::PriceOptions one_core = Devices(3);
  one_core.host_cores = 1;
  absl::StatusOr<proto::AutoParallelPrediction> serial = PriceLayout(probe.profile, one_core, pp3);
  ASSERT_TRUE(serial.ok());
  const double step = auto_parallel::StepSeconds(*shared);
  EXPECT_GT(step, 1.05 * auto_parallel::StepSeconds(*alone));
  EXPECT_GT(step, 1.05 * auto_parallel::StepSeconds(*serial) / 2);
  EXPECT_LT(step, auto_parallel::StepSeconds(*serial));
  // The excess is the devices taking turns on the cores: compute, not bubble.
  EXPECT_EQ(shared->bubble_seconds(), alone->bubble_seconds());
}

TEST(AutoParallelCostTermsTest, SharedHostTermsAreTheExtraCpuPerExtraActAndCpuOverWall) {
  // One micro-batch: 40 ms of wall, 48 ms of process CPU, 2000 acts; two: 60 ms of wall,
  // 78 ms of CPU, 4000 acts (the same kernels) on 2 cores: (78 - 48) ms / 2000 = 15 us per
  // act, the median of 48 / 40 and 78 / 60 = 1.25 cores.
  const auto_parallel::RunSample one{0.048, 0.040, 2000};
  const auto_parallel::RunSample two{0.078, 0.060, 4000};
  absl::StatusOr<auto_parallel::SharedHostTerms> terms = auto_parallel::FitSharedHostTerms({one, two}, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_NEAR(terms->act_seconds, 15e-6, 1e-15);
  EXPECT_NEAR(terms->host_core_share, 1.25, 1e-12);
  // A third run whose threads mostly waited (150 ms of wall for 20 ms of CPU) does not
  // set the share: the median 1.2, where the sums' ratio would be 146 / 250 = 0.58.
  absl::StatusOr<auto_parallel::SharedHostTerms> with_stall =
      auto_parallel::FitSharedHostTerms({one, two, {0.020, 0.150, 2000, 1}}, 2);
  ASSERT_TRUE(with_stall.ok()) << with_stall.status();
  EXPECT_NEAR(with_stall->host_core_share, 1.2, 1e-12);
  EXPECT_EQ(terms->slopes, 1);
  // CPU over wall above the cores is capped at them; less CPU with more acts leaves acts free.
  terms = auto_parallel::FitSharedHostTerms({{0.2, 0.05, 2000}, {0.1, 0.05, 4000}}, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->act_seconds, 0);
  EXPECT_EQ(terms->host_core_share, 2);
  const absl::StatusOr<auto_parallel::SharedHostTerms> same_acts = auto_parallel::FitSharedHostTerms({one, one}, 2);
  EXPECT_EQ(same_acts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(same_acts.status().message(),
            "shared-host terms need two runs of one reference with other act counts; 2 runs give none");
}

// With a core per device the act's cost is its device's wall time: 2 processes, a step of
// 10 ms at 2000 acts (1000 per device) and 12 ms at 4000 (2000 each): 2 us per act, where
// the CPU slope (both devices' CPU over both devices' acts) would say half of the extra
// CPU per act. The median over the pairs of one reference; another reference's runs pair
// only among themselves; a shorter step with more acts is no cost.
TEST(AutoParallelCostTermsTest, AnActOnItsOwnCoreCostsItsDevicesStep) {
  const std::vector<auto_parallel::RunSample> runs = {{0.020, 0.010, 2000}, {0.024, 0.012, 4000},
                                                      {0.032, 0.016, 8000}, {0.030, 0.015, 2000, 1}};
  absl::StatusOr<double> act = auto_parallel::FitOwnCoreActSeconds(runs, 2);
  ASSERT_TRUE(act.ok()) << act.status();
  // Slopes 2e-3 / 1000, 6e-3 / 3000, 4e-3 / 2000: all 2 us.
  EXPECT_NEAR(*act, 2e-6, 1e-15);
  // One process per device, 4 of them: the same steps are 4 us per act (each device has a
  // quarter of the acts).
  act = auto_parallel::FitOwnCoreActSeconds(runs, 4);
  ASSERT_TRUE(act.ok()) << act.status();
  EXPECT_NEAR(*act, 4e-6, 1e-15);
  // A fifth run slowed by 44 ms (a neighbour's burst): its four slopes are 12.5-44 us, the
  // other six 2 us; the median stays 2 us where the mean would be 10.75.
  act = auto_parallel::FitOwnCoreActSeconds({{0.02, 0.010, 2000},
                                             {0.02, 0.012, 4000},
                                             {0.02, 0.014, 6000},
                                             {0.02, 0.016, 8000},
                                             {0.02, 0.060, 10000}},
                                            2);
  ASSERT_TRUE(act.ok()) << act.status();
  EXPECT_NEAR(*act, 2e-6, 1e-15);
  act = auto_parallel::FitOwnCoreActSeconds({{0.02, 0.012, 2000}, {0.02, 0.010, 4000}}, 2);
  ASSERT_TRUE(act.ok()) << act.status();
  EXPECT_EQ(*act, 0);
  EXPECT_EQ(auto_parallel::FitOwnCoreActSeconds({{0.02, 0.010, 2000}, {0.03, 0.015, 2000, 1}}, 2).status().message(),
            "an act's cost on its own core: shared-host terms need two runs of one reference with other act "
            "counts; 2 runs give none");
  EXPECT_EQ(auto_parallel::FitOwnCoreActSeconds({{0.02, 0.0, 2000}, {0.02, 0.01, 4000}}, 2).status().message(),
            "an act's cost on its own core: shared-host terms need positive CPU and wall times, not 0 s of CPU in "
            "a 0 s step");
  EXPECT_EQ(auto_parallel::FitOwnCoreActSeconds(runs, 0).status().message(),
            "an act's cost on its own core needs devices >= 1, not 0");
}

TEST(AutoParallelCostTermsTest, BoxingActsGetTheirOwnCostFromReferencesThatAddThemAtOtherRates) {
  // 5 us per act, 20 us per boxing act. A data-parallel reference adds 1000 acts with
  // micro-batches and no boxing act: 50 -> 55 ms of CPU. A tensor-parallel one adds 600
  // acts, 300 of them boxing (all-reduces): 60 -> 60 + 300 x 5 + 300 x 20 us = 67.5 ms.
  // Solved together: 5 and 20 us. One cost for both (the median of the slopes 5 and
  // 7.5 / 600 = 12.5 us) is 8.75 us.
  std::vector<auto_parallel::RunSample> runs = {{0.050, 0.05, 1000, 0, 100},
                                                {0.055, 0.05, 2000, 0, 100},
                                                {0.060, 0.05, 1000, 1, 200},
                                                {0.0675, 0.05, 1600, 1, 500}};
  absl::StatusOr<auto_parallel::SharedHostTerms> terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  ASSERT_TRUE(terms->boxing_act_seconds.has_value());
  EXPECT_NEAR(*terms->boxing_act_seconds, 20e-6, 1e-12);
  EXPECT_NEAR(terms->act_seconds, 5e-6, 1e-12);
  EXPECT_EQ(terms->solutions, 1);
  EXPECT_NEAR(terms->one_cost_act_seconds, 8.75e-6, 1e-12);
  // References that add boxing acts in nearly one proportion (0 and 4%) tell nothing
  // apart: one cost, no boxing cost.
  runs[3] = {0.0625, 0.05, 1500, 1, 220};
  terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_FALSE(terms->boxing_act_seconds.has_value());
  EXPECT_NEAR(terms->act_seconds, terms->one_cost_act_seconds, 0);
  // Nor do pairs of one reference, whatever their proportions.
  runs = {{0.050, 0.05, 1000, 0, 100}, {0.055, 0.05, 2000, 0, 100}, {0.0675, 0.05, 2600, 0, 400}};
  terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_FALSE(terms->boxing_act_seconds.has_value());
  // More boxing acts than acts is no run.
  const absl::StatusOr<auto_parallel::SharedHostTerms> bad =
      auto_parallel::FitSharedHostTerms({{0.05, 0.05, 100, 0, 101}, {0.06, 0.05, 200, 0, 0}}, 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "shared-host terms need 0 to 100 boxing acts in a run of 100 acts, not 101");
}

TEST(AutoParallelCostTermsTest, BoxingActsCostBoxingActSecondsEach) {
  const Probe probe = ProbeOf(TinyGpt());
  // The boxing actors of the tp = 2 probe plan's first device (one micro-batch: each once)
  // whose ranks meet; those of local steps alone (a slice of a replicated tensor to its
  // split) cost an ordinary act.
  int64_t boxing = 0;
  int64_t local = 0;
  for (const proto::ActorDef& actor : probe.plan.devices(0).actors()) {
    if (actor.kind() != proto::ACTOR_BOXING) continue;
    ++(auto_parallel::BoxingActMeetsPeers(probe.plan, actor) ? boxing : local);
  }
  ASSERT_GE(boxing, 3 * 4 + 2);  // Megatron's all-reduces at least
  EXPECT_GT(local, 0);
  auto_parallel::PriceOptions one_cost = Devices(2);
  one_cost.act_seconds = 1e-5;
  auto_parallel::PriceOptions same = one_cost;
  same.boxing_act_seconds = 1e-5;
  auto_parallel::PriceOptions dearer = one_cost;
  dearer.boxing_act_seconds = 1e-5 + 1e-3;
  absl::StatusOr<proto::AutoParallelPrediction> base = PriceLayout(probe.profile, one_cost, Layout(1, 2, 1));
  absl::StatusOr<proto::AutoParallelPrediction> alike = PriceLayout(probe.profile, same, Layout(1, 2, 1));
  absl::StatusOr<proto::AutoParallelPrediction> boxed = PriceLayout(probe.profile, dearer, Layout(1, 2, 1));
  ASSERT_TRUE(base.ok() && alike.ok() && boxed.ok());
  EXPECT_EQ(auto_parallel::StepSeconds(*alike), auto_parallel::StepSeconds(*base));
  // Every boxing act whose ranks meet 1 ms dearer, on the compute side, each once.
  EXPECT_NEAR(boxed->compute_seconds() - base->compute_seconds(), 1e-3 * static_cast<double>(boxing), 1e-9);
  EXPECT_EQ(boxed->exposed_communication_seconds(), base->exposed_communication_seconds());
}

TEST(AutoParallelCostTermsTest, OneRunMeasuredInABadMomentDoesNotSetTheActCost) {
  // Kernels of 30 ms and 10 us per act, with 1, 2, 4 and 8 micro-batches (1000 acts each),
  // but the 1-micro-batch run caught a burst of spinning: 80 ms of CPU instead of 40. The
  // difference of the first two runs alone would give (50 - 80) / 1000 < 0, i.e. acts
  // free (docs/auto_parallel_measurements.md, run 11 on 4 devices); the median of the 6 pairwise
  // slopes (-30, -3.3, 30/7 = 4.3, 10, 10, 10 us) is (30/7 + 10) / 2 = 7.1 us; with a fifth
  // run (16 micro-batches, 190 ms) the median of 10 slopes is the true 10 us.
  std::vector<auto_parallel::RunSample> runs = {
      {0.080, 0.05, 1000}, {0.050, 0.05, 2000}, {0.070, 0.05, 4000}, {0.110, 0.05, 8000}};
  absl::StatusOr<auto_parallel::SharedHostTerms> terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_NEAR(terms->act_seconds, (30e-3 / 7000 + 10e-6) / 2, 1e-12);
  EXPECT_EQ(terms->slopes, 6);
  runs.push_back({0.190, 0.05, 16000});
  terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_NEAR(terms->act_seconds, 10e-6, 1e-12);
  // Runs of another reference (other kernels: 100 ms) pair only among themselves.
  runs.push_back({0.110, 0.05, 1000, 1});
  runs.push_back({0.120, 0.05, 2000, 1});
  terms = auto_parallel::FitSharedHostTerms(runs, 2);
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->slopes, 11);
  EXPECT_NEAR(terms->act_seconds, 10e-6, 1e-12);
}

TEST(AutoParallelCostTermsTest, EveryCollectiveCallCostsCollectiveCallSeconds) {
  const Probe probe = ProbeOf(TinyGpt());
  // Megatron's all-reduces of tp = 2 on two devices, one micro-batch, no data parallelism:
  // every one of them once per iteration, on the critical path.
  int64_t calls = 0;
  for (const auto_parallel::ProfileUnit& unit : probe.profile.units) {
    calls += static_cast<int64_t>(unit.tp_forward_all_reduce_bytes.size() + unit.tp_backward_all_reduce_bytes.size());
  }
  // Per block 2 forward + 2 backward; the vocabulary-parallel embedding all-reduces its
  // output, and the tied output projection (column-parallel over the vocabulary) its
  // input's gradient.
  ASSERT_EQ(calls, 3 * 4 + 2);
  auto_parallel::PriceOptions free = Devices(2);
  auto_parallel::PriceOptions priced = Devices(2);
  priced.collective_call_seconds = 1e-4;
  absl::StatusOr<proto::AutoParallelPrediction> without = PriceLayout(probe.profile, free, Layout(1, 2, 1));
  absl::StatusOr<proto::AutoParallelPrediction> with = PriceLayout(probe.profile, priced, Layout(1, 2, 1));
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_NEAR(with->exposed_communication_seconds() - without->exposed_communication_seconds(),
              1e-4 * static_cast<double>(calls), 1e-12);
  EXPECT_EQ(with->compute_seconds(), without->compute_seconds());
}

TEST(AutoParallelCostTermsTest, APipelinesTensorParallelAllReducesAreWaitingNotSharedWork) {
  const Probe probe = ProbeOf(TinyGpt());
  // tp = 2 x pp = 2 with one micro-batch on one core: one stage at a time, its 2 devices
  // computing at half speed, so the play (then the optimizer, all 4 devices at once) is
  // the step. Each of the model's 14 all-reduces (3 x 4 + 2) costs a call of c more wall
  // time once, where the devices wait on it, not 2 x c (the 2 devices' turns on the core,
  // as when the play counted it as their compute). The pipeline's two transfers across
  // the cut (the activation and its gradient) are calls too, on the thread that leads the
  // compute: each device's forward and backward task grows by c, and the play runs the
  // four tasks one after another with both devices of a stage on the one core, 8 c more.
  // (c small beside the compute, so the play stays the step's bound.)
  auto_parallel::PriceOptions free = Devices(4);
  free.host_cores = 1;
  auto_parallel::PriceOptions priced = free;
  const double c = 1e-6;
  priced.collective_call_seconds = c;
  absl::StatusOr<proto::AutoParallelPrediction> without = PriceLayout(probe.profile, free, Layout(1, 2, 2));
  absl::StatusOr<proto::AutoParallelPrediction> with = PriceLayout(probe.profile, priced, Layout(1, 2, 2));
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_NEAR(auto_parallel::StepSeconds(*with) - auto_parallel::StepSeconds(*without), 14 * c + 8 * c, 1e-12);
}

// The tiny gpt on one device compiled with `recompute` ("none", "full").
proto::Plan OneDevicePlan(const std::string& recompute) {
  examples::ParallelFlags flags;
  flags.devices_per_node = 1;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(TinyGpt(), *layout);
  EXPECT_TRUE(job.ok()) << job.status();
  examples::CompileSettings settings;
  settings.recompute = recompute;
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

TEST(AutoParallelCostTermsTest, FullRecomputationIsPricedAsTheOpsThePassReRuns) {
  Probe probe = ProbeOf(TinyGpt());
  const proto::Plan full = OneDevicePlan("full");
  absl::flat_hash_set<std::string> copies;
  for (const proto::ActorDef& actor : full.devices(0).actors()) {
    for (const proto::KernelDef& kernel : actor.kernels()) {
      if (absl::EndsWith(kernel.op_name(), "/recompute")) copies.insert(kernel.op_name());
    }
  }
  ASSERT_FALSE(copies.empty());
  auto_parallel::ModelProfile whole_forward = probe.profile;
  ASSERT_TRUE(auto_parallel::CountFullRecomputation(full, &probe.profile).ok());
  EXPECT_TRUE(probe.profile.full_recompute_counted);
  // Every copy the pass made is one forward op of a block, and each block re-runs some of
  // its forward ops but not all (an op whose output only the next forward op reads is
  // not re-run), so less work than its whole forward.
  int64_t counted = 0;
  for (const auto_parallel::ProfileUnit& unit : probe.profile.units) {
    counted += unit.full_recompute_ops;
    if (!unit.stageable) {
      EXPECT_EQ(unit.full_recompute_ops, 0) << unit.name;
      continue;
    }
    EXPECT_GT(unit.full_recompute_ops, 0) << unit.name;
    EXPECT_LT(unit.full_recompute_ops, static_cast<int64_t>(unit.op_names.size())) << unit.name;
    EXPECT_GT(unit.full_recompute.gemm_flops, 0) << unit.name;
    EXPECT_LE(unit.full_recompute.gemm_flops, unit.gemm_flops) << unit.name;
    EXPECT_LT(unit.full_recompute.memory_bytes, unit.memory_bytes) << unit.name;
  }
  EXPECT_EQ(counted, static_cast<int64_t>(copies.size()));

  // Priced (acts free, so only the kernels differ): full recomputation adds the re-run
  // ops' work, less than the whole forward again that an uncounted profile prices, and
  // their acts.
  const auto_parallel::PriceOptions priced = Devices(1);
  proto::AutoParallelLayout none = Layout(1, 1, 1);
  proto::AutoParallelLayout recompute_full = none;
  recompute_full.set_recompute(proto::RECOMPUTE_FULL);
  absl::StatusOr<proto::AutoParallelPrediction> base = PriceLayout(probe.profile, priced, none);
  absl::StatusOr<proto::AutoParallelPrediction> counted_full = PriceLayout(probe.profile, priced, recompute_full);
  absl::StatusOr<proto::AutoParallelPrediction> whole = PriceLayout(whole_forward, priced, recompute_full);
  ASSERT_TRUE(base.ok() && counted_full.ok() && whole.ok());
  EXPECT_GT(counted_full->compute_seconds(), base->compute_seconds());
  EXPECT_LT(counted_full->compute_seconds(), whole->compute_seconds());
  EXPECT_EQ(counted_full->acts_per_iteration() - base->acts_per_iteration(), counted);

  // A plan compiled without recomputation re-runs nothing: refused, naming the fix.
  const absl::Status refused = auto_parallel::CountFullRecomputation(OneDevicePlan("none"), &whole_forward);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("compile it with --recompute=full"), std::string::npos);
}

// The tiny gpt's block (batch 8, seq 16, hidden 32, 2 heads of 16) re-runs 27 of its 30
// forward ops under full recomputation (not the second MLP GEMM, its output's reshape
// and the residual add after it). Nine of the copies are reshapes, which the plan runs as
// views of their inputs (RegisterDef.alias_of): acts without work. By hand, f32, with
// T = 8 x 16 = 128 rows, A = T x 32 x 4 B (a [128, 32] activation), the attention
// scores S = 8 x 2 x 16 x 16 x 4 B and the MLP's F = T x 128 x 4 B:
//   GEMMs: q, k, v and the projection 4 x 2 T 32 32, the scores and their product with
//     v 2 x 2 x (8 x 2) x 16 x 16 x 16, the first MLP GEMM 2 T 32 128: 2,359,296 FLOPs;
//   memory-bound: 2 layer norms (x, out, gamma and beta) 2 x (2 A + 256), 4 transposes
//     4 x 2 A, scale, causal mask and softmax 3 x 2 S, the residual add 3 A, gelu 2 F:
//     475,648 bytes;
//   the 9 reshapes, 7 of [128, 32] and 2 of [128, 128], 7 x 2 A + 2 x 2 F = 491,520
//     bytes, which priced as memory traffic would have doubled the memory-bound part.
constexpr int64_t kTinyBlockCopies = 27;
constexpr double kTinyBlockRecomputeFlops = 4 * 2.0 * 128 * 32 * 32 + 2 * 2.0 * 16 * 16 * 16 * 16 + 2.0 * 128 * 32 * 128;
constexpr double kTinyActivation = 128 * 32 * 4;
constexpr double kTinyScores = 8 * 2 * 16 * 16 * 4;
constexpr double kTinyMlp = 128 * 128 * 4;
constexpr double kTinyBlockRecomputeBytes = 2 * (2 * kTinyActivation + 256) + 4 * 2 * kTinyActivation +
                                            3 * 2 * kTinyScores + 3 * kTinyActivation + 2 * kTinyMlp;

TEST(AutoParallelCostTermsTest, FullRecomputationChargesNoWorkForTheViewsItReRuns) {
  static_assert(kTinyBlockRecomputeFlops == 2359296);
  static_assert(kTinyBlockRecomputeBytes == 475648);
  auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  ASSERT_TRUE(auto_parallel::CountFullRecomputation(OneDevicePlan("full"), &profile).ok());
  int64_t blocks = 0;
  for (const auto_parallel::ProfileUnit& unit : profile.units) {
    if (!unit.stageable) continue;
    ++blocks;
    EXPECT_EQ(unit.full_recompute_ops, kTinyBlockCopies) << unit.name;
    EXPECT_DOUBLE_EQ(unit.full_recompute.gemm_flops, kTinyBlockRecomputeFlops) << unit.name;
    EXPECT_DOUBLE_EQ(unit.full_recompute.memory_bytes, kTinyBlockRecomputeBytes) << unit.name;
  }
  EXPECT_EQ(blocks, 3);
}

// --predict_step without a calibration file (no host terms: no acts priced) counts what
// full recomputation re-runs too: on one device the step grows by the three blocks'
// copies above at the cluster's rates, not by their whole forward again (which is
// 1,048,576 FLOPs and 573,440 bytes more per block).
TEST(AutoParallelCostTermsTest, FullRecomputationIsCountedWithoutHostTerms) {
  const examples::GptConfig config = TinyGpt();
  const examples::JobBuilder build = [config](const examples::ParallelLayout& layout) {
    return examples::BuildGpt(config, layout);
  };
  examples::AutoParallelRequest request;
  request.cluster.nodes = 1;
  request.cluster.devices_per_node = 1;
  request.settings.compression.compression = "off";
  proto::AutoParallelLayout none = Layout(1, 1, 1);
  proto::AutoParallelLayout full = none;
  full.set_recompute(proto::RECOMPUTE_FULL);
  absl::StatusOr<proto::AutoParallelDecision> without = examples::PriceGivenLayout(build, request, none);
  absl::StatusOr<proto::AutoParallelDecision> with = examples::PriceGivenLayout(build, request, full);
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_FALSE(with->has_host_terms());
  // The rates every compile of this cluster sees.
  absl::StatusOr<examples::ParallelLayout> one_device = examples::ParallelLayout::Create(request.cluster);
  ASSERT_TRUE(one_device.ok()) << one_device.status();
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*one_device, request.settings, &dump);
  ASSERT_TRUE(options.ok()) << options.status();
  const ComputeRates rates = WithDefaults(
      ComputeRates{options->cluster.gemm_flops_per_second(), options->cluster.memory_bytes_per_second()});
  const double recomputed = 3 * (GemmSeconds(rates, kTinyBlockRecomputeFlops) +
                                 MemoryBoundSeconds(rates, kTinyBlockRecomputeBytes));
  EXPECT_NEAR(auto_parallel::StepSeconds(with->chosen()) - auto_parallel::StepSeconds(without->chosen()), recomputed,
              1e-9);
}

TEST(AutoParallelCostTermsTest, APlanWithoutActorsIsRefused) {
  auto_parallel::ModelProfile profile;
  profile.job_name = "empty";
  const absl::Status status = auto_parallel::CountActs(proto::Plan(), &profile);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()), "the probe plan of 'empty' has no actor to count on its first device");
}

}  // namespace
}  // namespace oneflow
