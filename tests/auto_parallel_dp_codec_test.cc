// The auto-parallel search prices the data-parallel gradient sync and ZeRO's collectives
// with the codec the compiler's boxing planner would choose under --compression, as it
// prices the tp edges (tests/auto_parallel_edge_codec_test.cc): a slow link between the
// nodes makes the gradient all-reduce (and ZeRO-3's reduce-scatter and weight gathers)
// compressed and shortens the prediction, a fast one keeps them dense and the prediction
// equal to --compression=off's, and the compiled plan compresses the same gradients.
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"
#include "tools/cli/inspect_auto_parallel.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;

// Pure data parallelism over 4 nodes of one device: every gradient crosses the link.
examples::ParallelFlags Cluster(double inter_node_bandwidth, int64_t zero) {
  examples::ParallelFlags flags;
  flags.nodes = 4;
  flags.devices_per_node = 1;
  flags.dp = 4;
  flags.zero = zero;
  flags.inter_node_bandwidth = inter_node_bandwidth;
  return flags;
}

CompileOptions OptionsFor(double inter_node_bandwidth, int64_t zero, const std::string& compression) {
  absl::StatusOr<examples::ParallelLayout> layout =
      examples::ParallelLayout::Create(Cluster(inter_node_bandwidth, zero));
  EXPECT_TRUE(layout.ok()) << layout.status();
  examples::CompileSettings settings;
  settings.compression.compression = compression;
  settings.links.inter_node_bandwidth = inter_node_bandwidth;
  settings.links.inter_node_bandwidth_given = true;
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  return *options;
}

proto::AutoParallelLayout DataParallel(int64_t zero) {
  proto::AutoParallelLayout layout;
  layout.set_dp(4);
  layout.set_tp(1);
  layout.set_pp(1);
  layout.set_micro_batches(1);
  layout.set_zero(zero);
  layout.set_recompute(proto::RECOMPUTE_NONE);
  return layout;
}

proto::AutoParallelPrediction Price(const auto_parallel::ModelProfile& profile, double inter_node_bandwidth,
                                    int64_t zero, const std::string& compression,
                                    const EncoderSettings& encoders = EncoderSettings(),
                                    const TrainingSetup& training = TrainingSetup()) {
  const CompileOptions compile = OptionsFor(inter_node_bandwidth, zero, compression);
  auto_parallel::PriceOptions options;
  options.cluster = compile.cluster;
  options.bucket_mb = compile.bucket_mb;
  options.compression = compile.compression;
  options.encoders = encoders;
  options.training = training;
  options.record_edges = true;
  absl::StatusOr<proto::AutoParallelPrediction> prediction =
      auto_parallel::PriceLayout(profile, options, DataParallel(zero));
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return *prediction;
}

// 1 Gbit/s between the nodes, and 100 GB/s.
constexpr double kSlow = 1.25e8;
constexpr double kFast = 1e11;

// Pure data parallelism over all of `nodes` x `devices_per_node` devices at 1 Gbit/s
// between the nodes, priced with the cluster, buckets and codecs the examples' driver gives
// `settings` (its links: the slow inter-node bandwidth added), the edges recorded.
proto::AutoParallelPrediction PriceDataParallel(const auto_parallel::ModelProfile& profile, int64_t nodes,
                                                int64_t devices_per_node, examples::CompileSettings settings,
                                                std::optional<double> bucket_mb = std::nullopt) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.dp = nodes * devices_per_node;
  flags.inter_node_bandwidth = kSlow;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  if (!layout.ok()) return {};
  settings.links.inter_node_bandwidth = kSlow;
  settings.links.inter_node_bandwidth_given = true;
  std::string dump;
  absl::StatusOr<CompileOptions> compile = examples::CompileOptionsFor(*layout, settings, &dump);
  EXPECT_TRUE(compile.ok()) << compile.status();
  if (!compile.ok()) return {};
  auto_parallel::PriceOptions options;
  options.cluster = compile->cluster;
  options.bucket_mb = bucket_mb.value_or(compile->bucket_mb);
  options.compression = compile->compression;
  options.record_edges = true;
  proto::AutoParallelLayout dp = DataParallel(0);
  dp.set_dp(flags.dp);
  absl::StatusOr<proto::AutoParallelPrediction> prediction = auto_parallel::PriceLayout(profile, options, dp);
  EXPECT_TRUE(prediction.ok()) << prediction.status();
  return prediction.ok() ? *prediction : proto::AutoParallelPrediction();
}

TEST(AutoParallelDpCodecTest, TheGradientAllReduceIsPricedWithTheCodecTheLinkMakesPay) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  const proto::AutoParallelPrediction slow = Price(profile, kSlow, 0, "auto");
  const proto::AutoParallelPrediction slow_off = Price(profile, kSlow, 0, "off");
  const proto::AutoParallelPrediction fast = Price(profile, kFast, 0, "auto");
  const proto::AutoParallelPrediction fast_off = Price(profile, kFast, 0, "off");
  // One stage: one data-parallel edge, the gradients' all-reduce (no tp edge at tp = 1).
  ASSERT_EQ(slow.edges_size(), 1);
  ASSERT_EQ(fast.edges_size(), 1);
  EXPECT_EQ(slow_off.edges_size(), 0);
  const proto::AutoParallelEdge& compressed = slow.edges(0);
  EXPECT_TRUE(compressed.per_iteration());
  EXPECT_EQ(compressed.unit(), "stage 0");
  EXPECT_THAT(compressed.tensor(), HasSubstr("gradients (data-parallel all_reduce in "));
  // --compression=auto's gradient codec across nodes for this AdamW gpt: int8 G=128 without
  // a rotation, because auto holds int4 gradients to their measured training gap under AdamW
  // (sbp/codec_accuracy.h), and the decision says so.
  EXPECT_THAT(compressed.codec(), HasSubstr("int8 G=128")) << compressed.decision();
  EXPECT_THAT(compressed.codec(), Not(HasSubstr("hadamard"))) << compressed.decision();
  EXPECT_THAT(compressed.decision(), HasSubstr("accuracy: not int4 G=128 hadamard on gradients under adaptive"))
      << compressed.decision();
  EXPECT_THAT(compressed.decision(), HasSubstr(": compressed, saves ")) << compressed.decision();
  EXPECT_LT(compressed.seconds(), 0.5 * compressed.dense_seconds());
  // The dense side is what --compression=off prices, so the prediction moves by the saving.
  EXPECT_NEAR(auto_parallel::StepSeconds(slow_off) - auto_parallel::StepSeconds(slow),
              compressed.dense_seconds() - compressed.seconds(), 1e-12);
  // A fast link keeps it dense: the prediction is --compression=off's, to the bit.
  const proto::AutoParallelEdge& dense = fast.edges(0);
  EXPECT_EQ(dense.codec(), "");
  EXPECT_EQ(dense.seconds(), dense.dense_seconds());
  EXPECT_THAT(dense.decision(), HasSubstr(": dense"));
  EXPECT_EQ(auto_parallel::StepSeconds(fast), auto_parallel::StepSeconds(fast_off));

  // `oneflow inspect` lists it apart from the tp edges, per iteration.
  proto::Plan plan;
  *plan.mutable_auto_parallel()->mutable_chosen() = slow;
  plan.mutable_auto_parallel()->set_candidates(1);
  std::string text;
  cli::AppendAutoParallelText(plan, &text);
  EXPECT_THAT(text, HasSubstr("    data-parallel collectives priced with codecs (1), per iteration:\n"
                              "      stage 0 "));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("tp edges")));
}

TEST(AutoParallelDpCodecTest, ZeroThreeReduceScatterAndWeightGathersArePricedWithTheirCodecs) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  const proto::AutoParallelPrediction slow = Price(profile, kSlow, 3, "auto");
  const proto::AutoParallelPrediction slow_off = Price(profile, kSlow, 3, "off");
  // The gradients' reduce-scatter, and the weights gathered for forward and backward.
  ASSERT_EQ(slow.edges_size(), 2);
  const proto::AutoParallelEdge& gathers = slow.edges(0);
  const proto::AutoParallelEdge& reduce = slow.edges(1);
  EXPECT_THAT(gathers.tensor(), HasSubstr("2 x "));
  EXPECT_THAT(gathers.tensor(), HasSubstr("weights (data-parallel all_gather"));
  // ZeRO++'s qwZ: int8 weights.
  EXPECT_THAT(gathers.codec(), HasSubstr("int8")) << gathers.decision();
  EXPECT_LT(gathers.seconds(), gathers.dense_seconds());
  EXPECT_THAT(reduce.tensor(), HasSubstr("gradients (data-parallel reduce_scatter"));
  EXPECT_THAT(reduce.codec(), HasSubstr("int8 G=128")) << reduce.decision();  // AdamW: not int4
  EXPECT_LT(reduce.seconds(), reduce.dense_seconds());
  EXPECT_LT(auto_parallel::StepSeconds(slow), auto_parallel::StepSeconds(slow_off));
}

// The search prices the passes the compiled plan's steps will make (PriceOptions::encoders,
// what EncoderSettingsOf the compile options gives): under forced int4 with ZeRO-3, the
// gradients' reduce-scatter is dearer with the fitted int4 scale (its slower encoder) and
// with error feedback (the sender decodes what it sends), while the weights' gathers, not a
// gradient's, keep their price; stochastic rounding makes both dearer.
TEST(AutoParallelDpCodecTest, TheEncodersTheCompilerMarksArePriced) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  const proto::AutoParallelPrediction plain = Price(profile, kSlow, 3, "int4");
  EncoderSettings fitted;
  fitted.fit_int4_gradient_scale = true;
  EncoderSettings feedback;
  feedback.error_feedback = true;
  EncoderSettings stochastic;
  stochastic.stochastic_rounding = true;
  for (const auto& [settings, gradients_dearer, weights_dearer] :
       {std::tuple{fitted, true, false}, {feedback, true, false}, {stochastic, true, true}}) {
    const proto::AutoParallelPrediction priced = Price(profile, kSlow, 3, "int4", settings);
    ASSERT_EQ(priced.edges_size(), 2);
    ASSERT_EQ(plain.edges_size(), 2);
    const proto::AutoParallelEdge& gathers = priced.edges(0);
    const proto::AutoParallelEdge& reduce = priced.edges(1);
    EXPECT_THAT(gathers.tensor(), HasSubstr("weights (data-parallel all_gather"));
    EXPECT_THAT(reduce.tensor(), HasSubstr("gradients (data-parallel reduce_scatter"));
    EXPECT_EQ(reduce.codec(), plain.edges(1).codec());
    EXPECT_EQ(reduce.seconds() > plain.edges(1).seconds(), gradients_dearer) << reduce.codec();
    EXPECT_EQ(gathers.seconds() > plain.edges(0).seconds(), weights_dearer) << gathers.codec();
    if (!weights_dearer) EXPECT_EQ(gathers.seconds(), plain.edges(0).seconds());
    EXPECT_GT(auto_parallel::StepSeconds(priced), auto_parallel::StepSeconds(plain));
  }
}

// `auto`'s accuracy bound reads the rows of the training the job runs (PriceOptions::training,
// TrainingSetupOf the job and the compile options), in the search as in the compiler: under
// SGD with error feedback int4 gradients measured +0.04% (sbp/codec_accuracy.cc), so the
// gradients cross the slow link in int4 where AdamW's keep them int8; and the compiled plan
// of that training compresses them in int4 too.
TEST(AutoParallelDpCodecTest, TheSearchReadsTheAccuracyRowsOfTheJobsTraining) {
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(SmallGpt());
  EXPECT_THAT(Price(profile, kSlow, 0, "auto").edges(0).codec(), HasSubstr("int8 G=128"));
  TrainingSetup sgd_with_feedback;
  sgd_with_feedback.optimizer = OptimizerKind::kLinear;
  sgd_with_feedback.error_feedback = true;
  EncoderSettings feedback;
  feedback.error_feedback = true;
  const proto::AutoParallelPrediction sgd = Price(profile, kSlow, 0, "auto", feedback, sgd_with_feedback);
  ASSERT_EQ(sgd.edges_size(), 1);
  EXPECT_THAT(sgd.edges(0).codec(), HasSubstr("int4 G=128 hadamard")) << sgd.edges(0).decision();

  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(Cluster(kSlow, 0));
  ASSERT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(SmallGpt(), *layout);
  ASSERT_TRUE(job.ok()) << job.status();
  job->mutable_optimizer()->mutable_sgd()->set_momentum(0.9);
  CompileOptions options = OptionsFor(kSlow, 0, "auto");
  options.error_feedback = true;
  EXPECT_EQ(TrainingSetupOf(*job, options).optimizer, OptimizerKind::kLinear);
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int int4_reductions = 0;
  for (const proto::GradientBucketDef& bucket : plan->buckets()) {
    int4_reductions += bucket.compression().kind() == proto::Compression::INT4;
  }
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      int4_reductions += step.kind() == proto::STEP_ALL_REDUCE && step.compression().kind() == proto::Compression::INT4;
    }
  }
  EXPECT_GT(int4_reductions, 0);

  // The search of the examples' driver reads the job's own optimizer (its probe job's):
  // the chosen layout's data-parallel edge is int4 too.
  const examples::JobBuilder sgd_gpt = [](const examples::ParallelLayout& any) -> absl::StatusOr<proto::Job> {
    absl::StatusOr<proto::Job> built = examples::BuildGpt(SmallGpt(), any);
    if (built.ok()) built->mutable_optimizer()->mutable_sgd()->set_momentum(0.9);
    return built;
  };
  examples::AutoParallelRequest request;
  request.cluster = Cluster(kSlow, 0);
  request.settings.compression.compression = "auto";
  request.settings.compression.error_feedback = true;
  request.settings.links.inter_node_bandwidth = kSlow;
  request.settings.links.inter_node_bandwidth_given = true;
  absl::StatusOr<examples::AutoParallelResult> searched = examples::AutoParallelCompile(sgd_gpt, request);
  ASSERT_TRUE(searched.ok()) << searched.status();
  const proto::AutoParallelPrediction& chosen = searched->plan.auto_parallel().chosen();
  int int4_edges = 0;
  for (const proto::AutoParallelEdge& edge : chosen.edges()) {
    int4_edges += edge.tensor().find("gradients (data-parallel") != std::string::npos &&
                  edge.codec().find("int4") != std::string::npos;
  }
  EXPECT_GT(int4_edges, 0) << chosen.DebugString();
}

// Buckets share the latency of their members' calls, never more than a compressed call
// costs: with a slow intra-node hop (a loaded host's calibration measured 17.9 ms) the
// dense collective's latency exceeds the whole compressed collective of one variable, and
// subtracting it per bucketed variable once priced dp=6's gradient sync at -1054 ms
// (bench/auto_parallel/prediction_hosts_bench.sh), so the search chose it.
TEST(AutoParallelDpCodecTest, BucketsNeverMakeTheCompressedSyncCostLessThanOneCallPerBucket) {
  examples::GptConfig config = SmallGpt();
  config.batch = 12;  // dp = 6 divides it
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  examples::CompileSettings settings;
  settings.compression.compression = "auto";
  settings.links.intra_node_latency = 0.0179;
  settings.links.intra_node_latency_given = true;
  const proto::AutoParallelPrediction dp6 = PriceDataParallel(profile, 3, 2, settings);
  ASSERT_EQ(dp6.edges_size(), 1);
  const proto::AutoParallelEdge& sync = dp6.edges(0);
  ASSERT_NE(sync.codec(), "") << sync.decision();
  EXPECT_GT(sync.seconds(), 0) << sync.tensor();
  EXPECT_GE(dp6.exposed_communication_seconds(), 0);
}

// A gradient bucket's compressed all-reduce makes one reduce-scatter call and one
// all-gather call for all its members (kernels/compression/compressed_collectives.h,
// CompressedBucketAllReduce), so bucketing T variables into B buckets saves (T - B) x
// those two calls' latency, 2 x alpha across 3 nodes of one device (one round each),
// against every variable making its own calls (--bucket_mb=0). Worked by hand with alpha =
// 1 ms and no collective call cost: the difference of the two syncs is (T - B) x 2 ms.
// Before session 46 a member saved the latency of the dense all-reduce of one variable
// (one round: every rank sends to every peer), half of that, and the compressed sync was
// priced (T - B) x alpha long (3 emulated hosts, the bench's gpt: 13.6 ms where the
// buckets ran 9.5 ms, traced; docs/auto_parallel_measurements.md, session 46).
TEST(AutoParallelDpCodecTest, ABucketsCompressedAllReduceSharesItsTwoCallsLatencyAmongItsMembers) {
  examples::GptConfig config = SmallGpt();
  config.batch = 12;  // dp = 3 divides it
  // Variables of 17 KB on average, under kFlatOneRoundAllReduceBytes: the dense all-reduce
  // of one would be a single round, the compressed one is two calls.
  config.hidden = 64;
  const auto_parallel::ModelProfile profile = ProfileOfTwoDevices(config);
  constexpr double kAlpha = 1e-3;
  const auto sync_of = [&](double bucket_mb, int64_t* tensors, int64_t* calls, std::string* codec) {
    examples::CompileSettings settings;
    settings.compression.compression = "int8";
    settings.links.inter_node_latency = kAlpha;
    settings.links.inter_node_latency_given = true;
    const proto::AutoParallelPrediction prediction = PriceDataParallel(profile, 3, 1, settings, bucket_mb);
    EXPECT_EQ(prediction.edges_size(), 1);
    if (prediction.edges_size() != 1) return 0.0;
    const proto::AutoParallelEdge& sync = prediction.edges(0);
    // "N gradients (data-parallel all_reduce in B calls, ...)"
    EXPECT_EQ(std::sscanf(sync.tensor().c_str(), "%ld gradients (data-parallel all_reduce in %ld calls", tensors,
                          calls),
              2)
        << sync.tensor();
    *codec = sync.codec();
    return sync.seconds();
  };
  int64_t tensors = 0, calls = 0, unbucketed_tensors = 0, unbucketed_calls = 0;
  std::string codec, unbucketed_codec;
  const double bucketed = sync_of(25, &tensors, &calls, &codec);
  const double unbucketed = sync_of(0, &unbucketed_tensors, &unbucketed_calls, &unbucketed_codec);
  EXPECT_THAT(codec, HasSubstr("int8"));
  EXPECT_EQ(codec, unbucketed_codec);
  EXPECT_EQ(tensors, unbucketed_tensors);
  EXPECT_EQ(unbucketed_calls, tensors);
  ASSERT_GT(tensors, calls);
  EXPECT_NEAR(unbucketed - bucketed, static_cast<double>(tensors - calls) * 2 * kAlpha, 1e-9)
      << tensors << " gradients in " << calls << " buckets";
}

// The compiled plan of the same layout compresses its gradient reductions on the slow link
// and none on the fast one, as priced.
TEST(AutoParallelDpCodecTest, TheCompiledPlanCompressesTheSameGradients) {
  auto compressed_gradient_steps = [](double bandwidth) {
    absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(Cluster(bandwidth, 0));
    EXPECT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<proto::Job> job = examples::BuildGpt(SmallGpt(), *layout);
    EXPECT_TRUE(job.ok()) << job.status();
    absl::StatusOr<proto::Plan> plan = Compile(*job, OptionsFor(bandwidth, 0, "auto"));
    EXPECT_TRUE(plan.ok()) << plan.status();
    int64_t compressed = 0;
    for (const proto::BoxingDef& boxing : plan->boxings()) {
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        if (step.kind() == proto::STEP_ALL_REDUCE && step.compression().kind() != proto::Compression::NONE) {
          ++compressed;
        }
      }
    }
    return compressed;
  };
  EXPECT_GT(compressed_gradient_steps(kSlow), 0);
  EXPECT_EQ(compressed_gradient_steps(kFast), 0);
}

}  // namespace
}  // namespace oneflow
