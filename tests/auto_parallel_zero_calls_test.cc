// The collective calls the cost model prices for data parallelism and ZeRO
// (compiler/auto_parallel/price.h): the gradient reductions one call per bucket as
// compiler/passes/gradient_bucketing packs them (the first bucket at most 1 MiB, ZeRO's
// reductions too), the updated shards' gathers (ZeRO 1, 2) one per variable, and ZeRO-3's
// parameter gathers twice per iteration whatever the micro-batches, checked against the
// plans the compiler emits; those gathers hidden only behind the first micro-batch, on
// shared cores waited on by every stage of a pipeline, and across nodes backward waiting
// on every re-gather; the updated shards' gathers dense whatever --compression says, and
// exposed whole after the optimizer.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"
#include "sbp/compression_policy.h"
#include "tests/auto_parallel_testing.h"

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

examples::ParallelLayout LayoutOf(int64_t dp, int64_t tp, int64_t micro_batches, int32_t zero, int64_t pp = 1) {
  examples::ParallelFlags flags;
  flags.devices_per_node = dp * tp * pp;
  flags.dp = dp;
  flags.tp = tp;
  flags.pp = pp;
  flags.micro_batches = micro_batches;
  flags.zero = zero;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

proto::Plan Compiled(int64_t dp, int64_t micro_batches, int32_t zero, int64_t pp = 1, bool zero3_kept = false) {
  const examples::ParallelLayout layout = LayoutOf(dp, 1, micro_batches, zero, pp);
  absl::StatusOr<proto::Job> job = examples::BuildGpt(Gpt(), layout);
  EXPECT_TRUE(job.ok()) << job.status();
  std::string dump;
  examples::CompileSettings settings;
  settings.zero3_regather = !zero3_kept;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

auto_parallel::ModelProfile Profile() { return ProfileOfTwoDevices(Gpt()); }

int64_t Variables(const auto_parallel::ModelProfile& profile) {
  int64_t tensors = 0;
  for (const auto_parallel::ProfileUnit& unit : profile.units) tensors += unit.parameter_tensors;
  return tensors;
}

// dp x pp devices, tp 1, as the search names a layout.
proto::AutoParallelLayout Layout(int64_t dp, int64_t pp, int64_t micro_batches, int32_t zero,
                                 bool zero3_kept = false) {
  proto::AutoParallelLayout layout;
  layout.set_zero3_kept(zero3_kept);
  layout.set_dp(dp);
  layout.set_tp(1);
  layout.set_pp(pp);
  layout.set_micro_batches(micro_batches);
  layout.set_zero(zero);
  return layout;
}

// 1 Gbit/s in bytes per second.
constexpr double kGigabit = 1.25e8;

// One node of `devices` on links of 100 GB/s and 10 us, GEMMs at `gemm_flops_per_second`,
// memory-bound work free.
auto_parallel::PriceOptions OneNode(int64_t devices, double gemm_flops_per_second) {
  auto_parallel::PriceOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(devices);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_intra_node_latency(1e-5);
  options.cluster.set_gemm_flops_per_second(gemm_flops_per_second);
  options.cluster.set_memory_bytes_per_second(1e30);
  return options;
}

// The collective calls priced for `layout` on two devices: the exposed communication a
// call cost of 1 ms adds, over 1 ms. Compute is made free, so backward hides nothing and
// every data-parallel call is exposed.
double PricedCalls(const auto_parallel::ModelProfile& profile, int64_t micro_batches, int32_t zero,
                   bool zero3_kept = false) {
  const proto::AutoParallelLayout layout = Layout(2, 1, micro_batches, zero, zero3_kept);
  const auto_parallel::PriceOptions free = OneNode(2, 1e30);
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

// ZeRO-3 keeping forward's gathered copies (--zero3_regather=false) gathers each
// parameter once: the model prices one gather per variable beside the buckets, and the
// plan runs as many gathers as it reads parameters in forward, about half of re-gathering's.
TEST(AutoParallelZeroCallsTest, ZeroThreeKeepingForwardsCopiesGathersEachParameterOnce) {
  const auto_parallel::ModelProfile profile = Profile();
  const int64_t variables = Variables(profile);
  const proto::Plan kept = Compiled(2, 1, 3, 1, /*zero3_kept=*/true);
  EXPECT_NEAR(PricedCalls(profile, 1, 3, /*zero3_kept=*/true), static_cast<double>(kept.buckets_size() + variables),
              1e-6);
  EXPECT_NEAR(PricedCalls(profile, 1, 3) - PricedCalls(profile, 1, 3, /*zero3_kept=*/true),
              static_cast<double>(variables), 1e-6);
  auto gathers_of = [](const proto::Plan& plan) {
    int64_t gathers = 0;
    for (const proto::ActorDef& actor : plan.devices(0).actors()) {
      if (actor.kind() != proto::ACTOR_BOXING || actor.boxing_id() < 0) continue;
      const proto::BoxingDef& boxing = plan.boxings(actor.boxing_id());
      gathers += !boxing.steps().empty() && boxing.steps(0).kind() == proto::STEP_ALL_GATHER;
    }
    return gathers;
  };
  EXPECT_EQ(gathers_of(kept), variables);
  EXPECT_GT(gathers_of(Compiled(2, 1, 3)), 3 * variables / 2);
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

// The collective calls on the critical path of dp = 2 x pp = 2, one micro-batch, on 4 host
// cores (the devices share the host's cores: the 1F1B play), compute and acts free: the
// step with a call cost of 2 ms less the step with 1 ms, over 1 ms.
double PipelineCriticalCalls(const auto_parallel::ModelProfile& profile, int32_t zero) {
  const proto::AutoParallelLayout layout = Layout(2, 2, 1, zero);
  auto_parallel::PriceOptions options = OneNode(4, 1e30);
  options.host_cores = 4;
  double steps[2];
  for (int i = 0; i < 2; ++i) {
    options.collective_call_seconds = (i + 1) * 1e-3;
    absl::StatusOr<proto::AutoParallelPrediction> prediction = auto_parallel::PriceLayout(profile, options, layout);
    EXPECT_TRUE(prediction.ok()) << prediction.status();
    steps[i] = prediction.ok() ? auto_parallel::StepSeconds(*prediction) : 0;
  }
  return (steps[1] - steps[0]) / 1e-3;
}

TEST(AutoParallelZeroCallsTest, OnSharedCoresEveryStageOfAPipelineWaitsOnItsZeroThreeGathers) {
  const auto_parallel::ModelProfile profile = Profile();
  const int64_t variables = Variables(profile);
  // One micro-batch runs one stage at a time, and each stage gathers its own parameters
  // for forward and again for backward: ZeRO-3 adds every variable's two gathers to the
  // critical path (the gradient reductions, one call per bucket, are as many as zero = 0's
  // all-reduces). Hidden behind compute, or priced for the slowest stage only (before:
  // its gathers in the tail after the drain), it added one stage's.
  EXPECT_NEAR(PipelineCriticalCalls(profile, 3) - PipelineCriticalCalls(profile, 0), 2.0 * static_cast<double>(variables),
              1e-6);
  // The plan agrees: every stage's devices run gathers of their own stage's parameters,
  // once per iteration, two per variable but for those backward does not read. (Compiled
  // with 2 micro-batches, so that the plan marks the acts run once per iteration.)
  const proto::Plan plan = Compiled(2, 2, 3, 2);
  ASSERT_EQ(plan.devices_size(), 4);
  int64_t gathers = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    int64_t own = 0;
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.kind() != proto::ACTOR_BOXING || actor.boxing_id() < 0) continue;
      const proto::BoxingDef& boxing = plan.boxings(actor.boxing_id());
      if (boxing.steps().empty() || boxing.steps(0).kind() != proto::STEP_ALL_GATHER) continue;
      EXPECT_TRUE(actor.per_iteration()) << boxing.tensor();
      ++own;
    }
    EXPECT_GT(own, 0) << "device " << device.device().DebugString();
    gathers += own;
  }
  // Summed over the devices, each stage counted once per dp rank.
  EXPECT_GT(gathers / 2, 3 * variables / 2);
  EXPECT_LE(gathers / 2, 2 * variables);
}

// Exposed communication of dp = 2 ZeRO-3 with `micro_batches` on two devices with cores of
// their own: every variable its own call (no buckets, so backward hides none of the
// reductions and they do not depend on the micro-batches), a call cost of 1 ms (the
// gathers far longer than a micro-batch's compute), GEMMs at 100 GFLOP/s, the rest free.
double ZeroThreeExposed(const auto_parallel::ModelProfile& profile, int64_t micro_batches, double* compute) {
  const proto::AutoParallelLayout layout = Layout(2, 1, micro_batches, 3);
  auto_parallel::PriceOptions options = OneNode(2, 1e11);
  options.bucket_mb = 0;
  options.collective_call_seconds = 1e-3;
  absl::StatusOr<proto::AutoParallelPrediction> prediction = auto_parallel::PriceLayout(profile, options, layout);
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  if (!prediction.ok()) return 0;
  *compute = prediction->compute_seconds();
  return prediction->exposed_communication_seconds();
}

TEST(AutoParallelZeroCallsTest, ZeroThreeGathersHideOnlyBehindTheFirstMicroBatch) {
  const auto_parallel::ModelProfile profile = Profile();
  double one = 0, four = 0;
  const double exposed_one = ZeroThreeExposed(profile, 1, &one);
  const double exposed_four = ZeroThreeExposed(profile, 4, &four);
  // The iteration's compute is the same (its optimizer free), in 4 micro-batches of a
  // quarter each. The gathers serve every micro-batch, so only the first one's forward and
  // backward hide them: 4 micro-batches hide a quarter of what one does, and expose
  // three quarters of the compute more. (Hidden behind every micro-batch, they exposed the
  // same.)
  ASSERT_GT(one, 0);
  EXPECT_NEAR(four, one, 1e-9 * one);
  EXPECT_NEAR(exposed_four - exposed_one, 0.75 * one, 1e-9 * one + 1e-12);
}

// Exposed communication of dp = 2 with ZeRO stage `zero` on 2 devices, one a node (the dp
// group crosses the link: its collectives are calls between processes) or both on one
// node, every link 1 Gbit/s without latency and calls free, so a collective costs its
// wire bytes over the rate; every variable its own call (no buckets: backward hides none
// of the reductions), GEMMs at 1 GFLOP/s (the forward and backward far longer than any
// collective), the rest free.
double Exposed(const auto_parallel::ModelProfile& profile, bool across_nodes, int32_t zero,
               CompressionMode compression = CompressionMode::kOff, int64_t host_cores = 0) {
  auto_parallel::PriceOptions options = OneNode(2, 1e9);
  options.host_cores = host_cores;
  if (across_nodes) {
    options.cluster.set_num_nodes(2);
    options.cluster.set_devices_per_node(1);
  }
  options.cluster.set_intra_node_bandwidth(kGigabit);
  options.cluster.set_intra_node_latency(0);
  options.cluster.set_inter_node_bandwidth(kGigabit);
  options.cluster.set_inter_node_latency(0);
  options.bucket_mb = 0;
  options.compression.mode = compression;
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(profile, options, Layout(2, 1, 1, zero));
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return prediction.ok() ? prediction->exposed_communication_seconds() : 0;
}

double ParameterBytes(const auto_parallel::ModelProfile& profile) {
  double bytes = 0;
  for (const auto_parallel::ProfileUnit& unit : profile.units) bytes += unit.parameter_bytes;
  return bytes;
}

TEST(AutoParallelZeroCallsTest, AcrossNodesBackwardWaitsOnEveryZeroThreeRegather) {
  const auto_parallel::ModelProfile profile = Profile();
  // One gather of every parameter moves half of them over the link (dp = 2).
  const double regathers = ParameterBytes(profile) / 2 / kGigabit;
  ASSERT_GT(regathers, 1e-3);
  // In one node backward hides the re-gathers (and the forward its gathers): exposed is
  // the reduce-scatter alone, half the parameters over the link, as zero = 0's all-reduce
  // is all of them.
  EXPECT_NEAR(Exposed(profile, false, 3), regathers, 1e-9);
  EXPECT_NEAR(Exposed(profile, false, 0), 2 * regathers, 1e-9);
  // Across the nodes each re-gather is a call between processes, prefetched one op ahead:
  // backward waits on every one (traced on 2 emulated hosts, docs/auto_parallel_measurements.md). The
  // forward's gathers still hide. So ZeRO-3 exposes its reduce-scatter and its re-gathers,
  // as many bytes as zero = 0's all-reduce. (Hidden behind backward, it exposed half.)
  EXPECT_NEAR(Exposed(profile, true, 3) - Exposed(profile, false, 3), regathers, 1e-9);
  EXPECT_NEAR(Exposed(profile, true, 3), Exposed(profile, true, 0), 1e-9);
  // Emulated hosts sharing this machine's cores (a host line: host_cores) run the same
  // calls between processes: the forward's gathers still hide, where the one-process rule
  // (every gather exposed, as in one node on 2 cores) would add them.
  EXPECT_NEAR(Exposed(profile, true, 3, CompressionMode::kOff, 2), 2 * regathers, 1e-9);
  EXPECT_NEAR(Exposed(profile, false, 3, CompressionMode::kOff, 2), 3 * regathers, 1e-9);
  // But not where the devices outnumber the cores (2 processes on 1 core): the
  // communication thread that would run the forward's gathers ahead waits for the core the
  // compute threads fill, so the forward waits on every gather too and ZeRO-3 exposes its
  // reduce-scatter, its gathers and its re-gathers (3 emulated hosts on 2 cores, traced:
  // all 64 forward gathers on the critical path; docs/auto_parallel_measurements.md,
  // session 46). (Hidden behind the forward, it exposed 2 x the re-gathers.)
  EXPECT_NEAR(Exposed(profile, true, 3, CompressionMode::kOff, 1), 3 * regathers, 1e-9);
}

TEST(AutoParallelZeroCallsTest, UpdatedShardGathersOfZeroOneAndTwoStayDenseUnderCompression) {
  const auto_parallel::ModelProfile profile = Profile();
  const double gathers = ParameterBytes(profile) / 2 / kGigabit;
  // Two processes on one core, where the gathers are exposed whole (below).
  const int64_t one_core = 1;
  auto exposed = [&](int32_t zero, CompressionMode compression) {
    return Exposed(profile, true, zero, compression, one_core);
  };
  // With --compression=auto over 1 Gbit/s the reductions are compressed alike (ZeRO-1 and
  // zero = 0 all-reduce, ZeRO-2 and ZeRO-3 reduce-scatter), and the gathers of the updated
  // shards run dense, as the compiler runs them (docs/zero.md): ZeRO-1 and 2 each add the
  // dense gather of every shard. (Priced with the weight codec, int8, a quarter of it.)
  EXPECT_NEAR(exposed(1, CompressionMode::kAuto) - exposed(0, CompressionMode::kAuto), gathers, 1e-9);
  // ZeRO-2: its compressed reduce-scatter (more than nothing, less than the dense one,
  // which moves as many bytes as a gather) and the dense gathers.
  const double zero2 = exposed(2, CompressionMode::kAuto);
  EXPECT_GT(zero2 - gathers, 0);
  EXPECT_LT(zero2 - gathers, gathers);
  EXPECT_NEAR(exposed(2, CompressionMode::kOff) - gathers, gathers, 1e-9);
}

// ZeRO-1 and 2's gathers of the updated shards, one call per variable after the optimizer:
// across processes with a core per device the next forward computes on the first gathered
// layers while the rest cross the link (traced on 2 emulated hosts, session 60), so here,
// where the forward (GEMMs at 1 GFLOP/s) is far longer than the gathers, only the first
// gather's share is exposed. Where the devices outnumber the cores (2 processes on one),
// and in one node, they stay exposed whole. (Exposed whole everywhere, ZeRO-1 added every
// gather's seconds with a core each.)
TEST(AutoParallelZeroCallsTest, WithACorePerDeviceTheNextForwardHidesTheUpdatedShardsGathers) {
  const auto_parallel::ModelProfile profile = Profile();
  const double gathers = ParameterBytes(profile) / 2 / kGigabit;
  const double calls = static_cast<double>(Variables(profile));
  ASSERT_GT(calls, 1);
  for (int64_t host_cores : {0, 2}) {
    EXPECT_NEAR(Exposed(profile, true, 1, CompressionMode::kOff, host_cores) -
                    Exposed(profile, true, 0, CompressionMode::kOff, host_cores),
                gathers / calls, 1e-9)
        << "host_cores " << host_cores;
  }
  EXPECT_NEAR(Exposed(profile, true, 1, CompressionMode::kOff, 1) - Exposed(profile, true, 0, CompressionMode::kOff, 1),
              gathers, 1e-9);
  EXPECT_NEAR(Exposed(profile, false, 1) - Exposed(profile, false, 0), gathers, 1e-9);
}

// Exposed communication of dp = 2 with ZeRO stage `zero` on one node of 2 devices, links
// of 1 Gbit/s without latency, calls free, the default gradient buckets (backward hides
// all of the reduction but its last bucket), GEMMs at 1 GFLOP/s (backward far longer than
// any collective), the rest free.
double ExposedWithBuckets(const auto_parallel::ModelProfile& profile, int32_t zero) {
  auto_parallel::PriceOptions options = OneNode(2, 1e9);
  options.cluster.set_intra_node_bandwidth(kGigabit);
  options.cluster.set_intra_node_latency(0);
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(profile, options, Layout(2, 1, 1, zero));
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return prediction.ok() ? prediction->exposed_communication_seconds() : 0;
}

TEST(AutoParallelZeroCallsTest, UpdatedShardGathersOfZeroOneAndTwoFollowTheOptimizerExposedWhole) {
  const auto_parallel::ModelProfile profile = Profile();
  const double parameters = ParameterBytes(profile);
  // Worked by hand: the gradients' all-reduce over 2 devices in one round moves all the
  // parameter bytes; backward hides all of it but the last bucket's share (the first
  // bucket 1 MiB, the rest in one bucket of the 25 MiB limit).
  const double first_bucket = 1 << 20;
  ASSERT_GT(parameters, first_bucket);
  const double reduction_tail = (parameters - first_bucket) / kGigabit;
  EXPECT_NEAR(ExposedWithBuckets(profile, 0), reduction_tail, 1e-9);
  // ZeRO-1 reduces alike, then gathers each updated shard (half the parameters over the
  // link) after the optimizer steps, which wait for the reduced gradients: backward is
  // over, so the gathers are exposed whole (traced on 3 emulated hosts, session 45). With
  // the gathers counted into the reduction that backward hides, only their last-bucket
  // share was exposed.
  const double gathers = parameters / 2 / kGigabit;
  EXPECT_NEAR(ExposedWithBuckets(profile, 1), reduction_tail + gathers, 1e-9);
  // ZeRO-2: the reduce-scatter (half the bytes of the all-reduce) hidden but its last
  // bucket's share, then the whole gathers.
  EXPECT_NEAR(ExposedWithBuckets(profile, 2), reduction_tail / 2 + gathers, 1e-9);
}

}  // namespace
}  // namespace oneflow
