// Pipeline schedules (issue 27), in one process:
//   - every schedule (1f1b, interleaved with 2 chunks per stage, zb) at pp=2 and pp=4
//     trains the gpt and the mlp like one device, iteration for iteration, within 1e-4;
//   - from act timestamps, no device has more micro-batches in flight than its
//     schedule's bound (the device's activation slots: S - s for 1F1B and ZB-H1, V S - s
//     for interleaved), and the plans pass the verifier (its wait-cycle proof);
//   - ZB-H1 splits backward into B and W acts, interleaving puts non-adjacent chunks on a
//     stage, and bad flag combinations fail naming the flags.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "plan/plan_verifier.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

enum class Model { kGpt, kMlp, kMoeGpt };

const char* ModelName(Model model) {
  return model == Model::kGpt ? "gpt" : model == Model::kMlp ? "mlp" : "moe_gpt";
}

struct Case {
  Model model;
  const char* schedule;  // --pp_schedule
  int64_t pp = 2, virtual_stages = 1, micro_batches = 4;
  // Blocks: pp x virtual_stages at least, 4 by default.
  int64_t layers() const { return std::max<int64_t>(4, pp * virtual_stages); }
};

absl::StatusOr<ParallelLayout> LayoutOf(int64_t pp, int64_t virtual_stages, int64_t micro_batches) {
  ParallelFlags flags;
  flags.devices_per_node = pp;
  flags.pp = pp;
  flags.virtual_stages = virtual_stages;
  flags.micro_batches = micro_batches;
  return ParallelLayout::Create(flags);
}

absl::StatusOr<proto::Job> BuildModel(Model model, const ParallelLayout& layout, int64_t layers) {
  if (model == Model::kMlp) {
    examples::MlpConfig config;
    config.batch = 16;
    config.in_features = 16;
    config.hidden = 32;
    config.classes = 4;
    config.layers = layers;
    return examples::BuildMlp(config, layout);
  }
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.layers = layers;
  config.learning_rate = 1e-2;
  config.warmup_steps = 2;
  if (model == Model::kMoeGpt) {
    config.moe.experts = 4;
    config.moe.top_k = 2;
    config.moe.every = 2;
  }
  return examples::BuildGpt(config, layout);
}

// Through the examples' driver, as --pp_schedule and --virtual_stages reach the compiler.
absl::StatusOr<proto::Plan> CompileCase(const Case& c) {
  OF_ASSIGN_OR_RETURN(const ParallelLayout layout, LayoutOf(c.pp, c.virtual_stages, c.micro_batches));
  OF_ASSIGN_OR_RETURN(const proto::Job job, BuildModel(c.model, layout, c.layers()));
  examples::CompileSettings settings;
  settings.pp_schedule = c.schedule;
  OF_ASSIGN_OR_RETURN(const CompileOptions options, examples::CompileOptionsFor(layout, settings, nullptr));
  return Compile(job, options);
}

actors::TrainOptions Options(int64_t iterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  options.progress_timeout = std::chrono::milliseconds(20000);
  options.collective_timeout = absl::Seconds(20);
  return options;
}

constexpr int64_t kIterations = 6;

// One device's curve per model and depth, computed once.
const std::vector<float>& Reference(Model model, int64_t layers) {
  static auto* references = new std::map<std::pair<Model, int64_t>, std::vector<float>>();
  auto it = references->find({model, layers});
  if (it != references->end()) return it->second;
  std::vector<float> losses;
  absl::StatusOr<proto::Plan> plan = [&]() -> absl::StatusOr<proto::Plan> {
    OF_ASSIGN_OR_RETURN(const ParallelLayout layout, LayoutOf(1, 1, 1));
    OF_ASSIGN_OR_RETURN(const proto::Job job, BuildModel(model, layout, layers));
    CompileOptions options;
    options.cluster = layout.cluster();
    return Compile(job, options);
  }();
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (plan.ok()) {
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, Options(kIterations));
    EXPECT_TRUE(result.ok()) << result.status();
    if (result.ok()) {
      for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
    }
  }
  return references->emplace(std::make_pair(model, layers), std::move(losses)).first->second;
}

// The slots of a device's activation registers (neither persistent nor per iteration;
// views share their source's): the schedule's bound on its micro-batches in flight.
int64_t ActivationSlots(const proto::DevicePlan& device) {
  int64_t most = 0;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.persistent() || reg.per_iteration() || reg.has_alias_of()) continue;
    most = std::max(most, reg.count());
  }
  return most;
}

// The most micro-batches in flight at once on device `d`: micro-batch n (act index) is in
// flight from the first start of any of the device's per-micro-batch acts on it to the
// last end of those acts. Receiving transfers buffer the next inputs in registers of
// their own (outside the gate) and do not count.
int MostInFlight(const proto::Plan& plan, const std::vector<actors::ActRecord>& acts, int d, int64_t micro_batches) {
  std::map<int64_t, bool> per_micro_batch;
  for (const proto::ActorDef& actor : plan.devices(d).actors()) {
    const bool receiver = actor.thread() == proto::THREAD_TRANSFER && actor.consumed_registers_size() == 0;
    per_micro_batch[actor.id()] = !actor.per_iteration() && !receiver;
  }
  std::vector<int64_t> first(micro_batches, INT64_MAX), last(micro_batches, INT64_MIN);
  for (const actors::ActRecord& act : acts) {
    if (act.device_index != d || !per_micro_batch[act.actor_id] || act.iteration >= micro_batches) continue;
    first[act.iteration] = std::min(first[act.iteration], act.start_ns);
    last[act.iteration] = std::max(last[act.iteration], act.end_ns);
  }
  std::vector<std::pair<int64_t, int>> events;  // At equal times the end goes first.
  for (int64_t n = 0; n < micro_batches; ++n) {
    if (first[n] == INT64_MAX) continue;
    events.push_back({first[n], +1});
    events.push_back({last[n], -1});
  }
  std::sort(events.begin(), events.end());
  int in_flight = 0, most = 0;
  for (const auto& [time, delta] : events) {
    in_flight += delta;
    most = std::max(most, in_flight);
  }
  return most;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return absl::StrCat(ModelName(c.model), "_", c.schedule, c.virtual_stages > 1 ? absl::StrCat("_v", c.virtual_stages) : "",
                      "_pp", c.pp, "_m", c.micro_batches);
}

class PipelineScheduleTest : public ::testing::TestWithParam<Case> {};

// Equal losses to one device, the bound on micro-batches in flight from act timestamps,
// and the verifier's proof (TrainPlan verifies too; here it is explicit).
TEST_P(PipelineScheduleTest, EqualsOneDeviceWithinTheScheduleBound) {
  const Case& c = GetParam();
  const std::vector<float>& reference = Reference(c.model, c.layers());
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  absl::StatusOr<proto::Plan> plan = CompileCase(c);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyPlan(*plan).ok()) << VerifyPlan(*plan);
  actors::TrainOptions options = Options(kIterations);
  options.record_acts = true;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->iterations.size(), reference.size());
  for (int64_t i = 0; i < kIterations; ++i) {
    EXPECT_NEAR(result->iterations[i].loss, reference[i], 1e-4 * std::abs(reference[i])) << "iteration " << i;
  }
  for (int d = 0; d < plan->devices_size(); ++d) {
    const proto::DevicePlan& device = plan->devices(d);
    const int64_t stage = device.pipeline_stage();
    // The schedule's stated bound: S - s slots, times the chunks for interleaved.
    const int64_t bound = c.virtual_stages * c.pp - stage;
    EXPECT_EQ(ActivationSlots(device), bound) << "device " << d;
    const int most = MostInFlight(*plan, result->engine.acts, d, kIterations * c.micro_batches);
    EXPECT_LE(most, bound) << "device " << d << " (stage " << stage << ") had " << most << " micro-batches in flight";
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (Model model : {Model::kGpt, Model::kMlp}) {
    for (int64_t pp : {2, 4}) {
      const int64_t m = 2 * pp;
      cases.push_back({model, "1f1b", pp, 1, m});
      cases.push_back({model, "interleaved", pp, 2, m});
      cases.push_back({model, "zb", pp, 1, m});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineScheduleTest, ::testing::ValuesIn(Cases()), CaseName);

// Forward first (actors/engine.h): on the first stage, each micro-batch's forward acts
// that read the iteration's variables run back to back, no backward act and no such act
// of another micro-batch between them, though the stage has two micro-batches in flight
// and the backward of the one before becomes ready while it runs forward (1F1B's order:
// the next stage waits for that forward). Forward acts that read no variable (the labels'
// reshape) may run ahead and are left out. The engine's old pick ran an actor ready for
// two micro-batches twice in a row and interleaved a forward with a backward op by op.
TEST(PipelineScheduleTest, TheFirstStageRunsEachMicroBatchsForwardInOneRun) {
  for (const char* schedule : {"1f1b", "zb"}) {
    const Case c{Model::kGpt, schedule, 2, 1, 4};
    absl::StatusOr<proto::Plan> plan = CompileCase(c);
    ASSERT_TRUE(plan.ok()) << plan.status();
    actors::TrainOptions options = Options(3);
    options.record_acts = true;
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, options);
    ASSERT_TRUE(result.ok()) << result.status();
    int first_stage = -1;
    for (int d = 0; d < plan->devices_size(); ++d) {
      if (plan->devices(d).pipeline_stage() == 0) first_stage = d;
    }
    ASSERT_GE(first_stage, 0);
    const proto::DevicePlan& device = plan->devices(first_stage);
    std::map<int64_t, const proto::ActorDef*> actor_of;
    std::map<int64_t, int64_t> producer_of;  // register id -> actor id
    for (const proto::ActorDef& actor : device.actors()) actor_of[actor.id()] = &actor;
    for (const proto::RegisterDef& reg : device.registers()) producer_of[reg.id()] = reg.producer_actor();
    // Actors that read a variable, directly or through others (the plan's actors are in
    // topological order, so one pass sees every producer first).
    std::map<int64_t, bool> reads_variable;
    for (const proto::ActorDef& actor : device.actors()) {
      bool reads = false;
      for (int64_t r : actor.consumed_registers()) {
        const auto producer = producer_of.find(r);
        if (producer == producer_of.end()) continue;
        const proto::ActorDef& from = *actor_of.at(producer->second);
        reads = reads || from.per_iteration() || reads_variable[from.id()];
      }
      reads_variable[actor.id()] = reads;
    }
    // The stage's compute acts that carry an act kind, but forward acts that read no
    // variable, in the order they started.
    std::vector<actors::ActRecord> acts;
    for (const actors::ActRecord& act : result->engine.acts) {
      if (act.device_index != first_stage) continue;
      const proto::ActorDef& actor = *actor_of.at(act.actor_id);
      if (actor.thread() != proto::THREAD_COMPUTE || actor.pipeline_act() == proto::PIPELINE_ACT_UNSET) continue;
      if (actor.pipeline_act() == proto::PIPELINE_ACT_FORWARD && !reads_variable[actor.id()]) continue;
      acts.push_back(act);
    }
    std::sort(acts.begin(), acts.end(),
              [](const actors::ActRecord& a, const actors::ActRecord& b) { return a.start_ns < b.start_ns; });
    std::map<int64_t, std::pair<size_t, size_t>> forward_span;  // micro-batch -> first, last position
    std::map<int64_t, size_t> forward_count;
    for (size_t k = 0; k < acts.size(); ++k) {
      if (actor_of.at(acts[k].actor_id)->pipeline_act() != proto::PIPELINE_ACT_FORWARD) continue;
      auto [it, inserted] = forward_span.try_emplace(acts[k].iteration, k, k);
      it->second.second = k;
      ++forward_count[acts[k].iteration];
    }
    ASSERT_EQ(forward_span.size(), 3u * 4u) << schedule;
    for (const auto& [micro_batch, span] : forward_span) {
      EXPECT_EQ(span.second - span.first + 1, forward_count[micro_batch])
          << schedule << ": micro-batch " << micro_batch << "'s forward acts are interleaved with "
          << span.second - span.first + 1 - forward_count[micro_batch] << " other acts";
    }
  }
}

// ZB-H1 marks acts on every stage: W everywhere, B on all but the first (nothing waits
// for the first stage's backward); interleaving puts non-adjacent blocks on a stage.
TEST(PipelineScheduleTest, ZeroBubbleMarksActsAndInterleavedPlacesChunks) {
  absl::StatusOr<proto::Plan> zb = CompileCase({Model::kGpt, "zb", 4, 1, 8});
  ASSERT_TRUE(zb.ok()) << zb.status();
  for (const proto::DevicePlan& device : zb->devices()) {
    int b = 0, w = 0;
    for (const proto::ActorDef& actor : device.actors()) {
      b += actor.pipeline_act() == proto::PIPELINE_ACT_BACKWARD_INPUT;
      w += actor.pipeline_act() == proto::PIPELINE_ACT_BACKWARD_WEIGHT;
    }
    EXPECT_GT(w, 0) << "stage " << device.pipeline_stage();
    if (device.pipeline_stage() == 0) {
      EXPECT_EQ(b, 0);
    } else {
      EXPECT_GT(b, 0) << "stage " << device.pipeline_stage();
    }
  }
  absl::StatusOr<ParallelLayout> layout = LayoutOf(2, 2, 4);
  ASSERT_TRUE(layout.ok());
  std::vector<int64_t> stages;
  for (int64_t block = 0; block < 8; ++block) stages.push_back(layout->StageOf(block, 8));
  EXPECT_EQ(stages, (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
}

// ZB-H1 asked for with one micro-batch: no slots beyond the default (nothing to keep in
// flight), but its act kinds and its program order (W after B), so each stage's weight
// gradients (W) wait until its input gradients (B) have gone to the stage before: on the
// last stage every W act starts after the last B act of its iteration. Equal to one
// device; 1F1B's plan at one micro-batch has no act kinds.
TEST(PipelineScheduleTest, ZeroBubbleWithOneMicroBatchMovesWeightGradientsOffThePath) {
  for (int64_t pp : {2, 4}) {
    const Case c{Model::kGpt, "zb", pp, 1, 1};
    absl::StatusOr<proto::Plan> plan = CompileCase(c);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_ZB_H1);
    ASSERT_TRUE(VerifyPlan(*plan).ok()) << VerifyPlan(*plan);
    actors::TrainOptions options = Options(kIterations);
    options.record_acts = true;
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, options);
    ASSERT_TRUE(result.ok()) << result.status();
    const std::vector<float>& reference = Reference(c.model, c.layers());
    ASSERT_EQ(result->iterations.size(), reference.size());
    for (int64_t i = 0; i < kIterations; ++i) {
      EXPECT_NEAR(result->iterations[i].loss, reference[i], 1e-4 * std::abs(reference[i])) << "pp " << pp << " iteration " << i;
    }
    int last = -1;
    for (int d = 0; d < plan->devices_size(); ++d) {
      if (plan->devices(d).pipeline_stage() == pp - 1) last = d;
    }
    ASSERT_GE(last, 0);
    const proto::DevicePlan& device = plan->devices(last);
    const int64_t first_actor = device.actors(0).id();
    for (int64_t iteration = 0; iteration < kIterations; ++iteration) {
      int64_t last_input_gradient_end = -1;
      int64_t first_weight_gradient_start = INT64_MAX;
      int weights = 0;
      for (const actors::ActRecord& act : result->engine.acts) {
        if (act.device_index != last || act.iteration != iteration) continue;
        const proto::ActorDef& actor = device.actors(static_cast<int>(act.actor_id - first_actor));
        ASSERT_EQ(actor.id(), act.actor_id);
        if (actor.pipeline_act() == proto::PIPELINE_ACT_BACKWARD_INPUT) {
          last_input_gradient_end = std::max(last_input_gradient_end, act.end_ns);
        } else if (actor.pipeline_act() == proto::PIPELINE_ACT_BACKWARD_WEIGHT) {
          first_weight_gradient_start = std::min(first_weight_gradient_start, act.start_ns);
          ++weights;
        }
      }
      ASSERT_GT(weights, 0) << "pp " << pp;
      ASSERT_GE(last_input_gradient_end, 0) << "pp " << pp;
      EXPECT_GE(first_weight_gradient_start, last_input_gradient_end) << "pp " << pp << " iteration " << iteration;
    }
  }
  absl::StatusOr<proto::Plan> one_forward_one_backward = CompileCase({Model::kGpt, "1f1b", 2, 1, 1});
  ASSERT_TRUE(one_forward_one_backward.ok()) << one_forward_one_backward.status();
  for (const proto::DevicePlan& device : one_forward_one_backward->devices()) {
    for (const proto::ActorDef& actor : device.actors()) EXPECT_EQ(actor.pipeline_act(), proto::PIPELINE_ACT_UNSET);
  }
}

// ZB-H1 beside data and tensor parallelism: dp = 2 x tp = 2 x pp = 2 with 4 micro-batches
// (the W ops moved after the B ops take their gradients' tp and dp reductions with them)
// and tp = 2 x pp = 2 with one, both equal to one device.
TEST(PipelineScheduleTest, ZeroBubbleWithDataAndTensorParallelismEqualsOneDevice) {
  const std::vector<float>& reference = Reference(Model::kGpt, 4);
  for (const auto& [dp, micro_batches] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {1, 1}}) {
    ParallelFlags flags;
    flags.devices_per_node = dp * 2 * 2;
    flags.dp = dp;
    flags.tp = 2;
    flags.pp = 2;
    flags.micro_batches = micro_batches;
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<proto::Job> job = BuildModel(Model::kGpt, *layout, 4);
    ASSERT_TRUE(job.ok()) << job.status();
    examples::CompileSettings settings;
    settings.pp_schedule = "zb";
    absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(*layout, settings, nullptr);
    ASSERT_TRUE(options.ok()) << options.status();
    absl::StatusOr<proto::Plan> plan = Compile(*job, *options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_ZB_H1);
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, Options(kIterations));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->iterations.size(), reference.size());
    for (int64_t i = 0; i < kIterations; ++i) {
      EXPECT_NEAR(result->iterations[i].loss, reference[i], 1e-4 * std::abs(reference[i]))
          << "dp " << dp << " micro-batches " << micro_batches << " iteration " << i;
    }
  }
}

TEST(PipelineScheduleTest, BadFlagsFailNamingThem) {
  Case c{Model::kGpt, "interleaved", 2, 1, 4};
  EXPECT_EQ(CompileCase(c).status().message(), "--pp_schedule=interleaved needs --virtual_stages >= 2 (got --virtual_stages=1)");
  c = {Model::kGpt, "zb", 2, 2, 4};
  EXPECT_EQ(CompileCase(c).status().message(), "--virtual_stages=2 is for --pp_schedule=interleaved or auto, not --pp_schedule=zb");
  c = {Model::kGpt, "gpipe", 2, 1, 4};
  EXPECT_EQ(CompileCase(c).status().message(), "--pp_schedule=gpipe is not one of: 1f1b, interleaved, zb, auto");
  absl::StatusOr<ParallelLayout> layout = LayoutOf(2, 2, 4);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(BuildModel(Model::kGpt, *layout, 6).status().message(),
            "--layers=6 is not divisible by --pp=2 x --virtual_stages=2; interleaved stages need chunks of equal blocks");
  EXPECT_EQ(LayoutOf(1, 2, 4).status().message(),
            "--virtual_stages=2 interleaves chunks over pipeline stages, but --pp=1 has none; use --pp > 1 or "
            "--virtual_stages=1");
  EXPECT_EQ(LayoutOf(2, 0, 4).status().message(), "--virtual_stages=0 must be >= 1");
}

}  // namespace
}  // namespace oneflow
