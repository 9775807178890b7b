// Pipeline stages and micro-batches (issue 12), in one process:
//   - every layout (pp, pp x tp, pp x dp, pp x dp x tp, uneven stages, micro-batches
//     alone, ZeRO with micro-batches) trains the gpt and the mlp like one device;
//   - bad flags fail with the messages that name them;
//   - stage 0's activation memory does not grow with the number of micro-batches, in the
//     compiler's figure and in what the engine allocates, and stage s of S keeps S - s
//     micro-batches of activations (1F1B);
//   - the engine never has more micro-batches in flight on a device than its activation
//     registers hold (act timestamps);
//   - a failure on one stage stops every stage and names the device and the actor.
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
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

enum class Model { kGpt, kMlp };

// A layout on one node: pp x dp x tp devices, micro-batches, ZeRO stage; written
// {name, pp, dp, tp, micro_batches, zero}. ZeRO-3 re-gathers for backward unless
// zero3_regather is false (CompileOptions::zero3_regather).
struct Layout {
  const char* name;
  int64_t pp = 1, dp = 1, tp = 1, micro_batches = 1, zero = 0;
  int64_t layers = 4;
  bool zero3_regather = true;
};

absl::StatusOr<ParallelLayout> LayoutOf(const Layout& l) {
  ParallelFlags flags;
  flags.devices_per_node = l.pp * l.dp * l.tp;
  flags.pp = l.pp;
  flags.dp = l.dp;
  flags.tp = l.tp;
  flags.micro_batches = l.micro_batches;
  flags.zero = l.zero;
  return ParallelLayout::Create(flags);
}

// Small models, 4 blocks by default (pp=3 splits them 1, 1, 2); the learning rates make
// the loss fall within a few iterations (the gpt's AdamW warms up over 2 steps).
examples::GptConfig SmallGpt(int64_t layers) {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;
  config.layers = layers;
  config.learning_rate = 1e-2;
  config.warmup_steps = 2;
  return config;
}

examples::MlpConfig SmallMlp(int64_t layers) {
  examples::MlpConfig config;
  config.batch = 16;
  config.in_features = 16;
  config.hidden = 32;
  config.classes = 4;
  config.layers = layers;
  return config;
}

// `batch` 0: the small model's.
absl::StatusOr<proto::Job> BuildModel(Model model, const ParallelLayout& layout, int64_t layers, int64_t batch = 0) {
  if (model == Model::kGpt) {
    examples::GptConfig config = SmallGpt(layers);
    if (batch > 0) config.batch = batch;
    return examples::BuildGpt(config, layout);
  }
  examples::MlpConfig config = SmallMlp(layers);
  if (batch > 0) config.batch = batch;
  return examples::BuildMlp(config, layout);
}

absl::StatusOr<proto::Plan> CompileLayout(Model model, const Layout& l, int64_t batch = 0) {
  absl::StatusOr<ParallelLayout> layout = LayoutOf(l);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job = BuildModel(model, *layout, l.layers, batch);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.zero3_regather = l.zero3_regather;
  return Compile(*job, options);
}

actors::TrainOptions Options(int64_t iterations) {
  actors::TrainOptions options;
  options.node = -1;
  options.iterations = iterations;
  options.progress_timeout = std::chrono::milliseconds(20000);
  options.collective_timeout = absl::Seconds(20);
  return options;
}

std::vector<float> Losses(const actors::TrainResult& result) {
  std::vector<float> losses;
  for (const actors::IterationMetrics& m : result.iterations) losses.push_back(m.loss);
  return losses;
}

constexpr int64_t kIterations = 6;

// The single-device curve of each model, computed once.
const std::vector<float>& Reference(Model model) {
  static std::map<Model, std::vector<float>>* references = new std::map<Model, std::vector<float>>();
  auto it = references->find(model);
  if (it != references->end()) return it->second;
  std::vector<float> losses;
  absl::StatusOr<proto::Plan> plan = CompileLayout(model, Layout{"1 device"});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (plan.ok()) {
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, Options(kIterations));
    EXPECT_TRUE(result.ok()) << result.status();
    if (result.ok()) losses = Losses(*result);
  }
  return references->emplace(model, std::move(losses)).first->second;
}

// ---------------------------------------------------------------------------------------
// 1. Every layout trains like one device.

struct EqualityCase {
  Model model;
  Layout layout;
};

std::string CaseName(const ::testing::TestParamInfo<EqualityCase>& info) {
  return absl::StrCat(info.param.model == Model::kGpt ? "gpt_" : "mlp_", info.param.layout.name);
}

class PipelineEqualityTest : public ::testing::TestWithParam<EqualityCase> {};

TEST_P(PipelineEqualityTest, LossesEqualOneDevice) {
  const EqualityCase& c = GetParam();
  const std::vector<float>& reference = Reference(c.model);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
  absl::StatusOr<proto::Plan> plan = CompileLayout(c.model, c.layout);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, Options(kIterations));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<float> losses = Losses(*result);
  ASSERT_EQ(losses.size(), reference.size());
  for (int64_t i = 0; i < kIterations; ++i) {
    EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i])) << "iteration " << i;
  }
}

std::vector<EqualityCase> EqualityCases() {
  const std::vector<Layout> layouts = {
      {"pp2_m4", 2, 1, 1, 4},
      {"pp4_m8", 4, 1, 1, 8},
      {"pp2_tp2_m2", 2, 1, 2, 2},
      {"pp2_dp2_m4", 2, 2, 1, 4},
      {"pp2_dp2_tp2_m2", 2, 2, 2, 2},
      {"uneven_pp3_m2", 3, 1, 1, 2},
      {"dp2_m4", 1, 2, 1, 4},
      {"zero2_dp4_m2", 1, 4, 1, 2, 2},
      {"zero3_dp4_m2", 1, 4, 1, 2, 3},
      // Forward's gathered copy kept: every micro-batch's forward and backward read it.
      {"zero3_kept_pp2_dp2_m2", 2, 2, 1, 2, 3, 4, /*zero3_regather=*/false},
  };
  std::vector<EqualityCase> cases;
  for (Model model : {Model::kGpt, Model::kMlp}) {
    for (const Layout& layout : layouts) cases.push_back({model, layout});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Layouts, PipelineEqualityTest, ::testing::ValuesIn(EqualityCases()), CaseName);

// The reference itself trains: its loss falls over the run, so equal curves mean equal
// training and not two runs that both do nothing.
TEST(PipelineTest, ReferenceLossFalls) {
  for (Model model : {Model::kGpt, Model::kMlp}) {
    const std::vector<float>& reference = Reference(model);
    ASSERT_EQ(reference.size(), static_cast<size_t>(kIterations));
    EXPECT_LT(reference.back(), reference.front() * 0.95)
        << (model == Model::kGpt ? "gpt" : "mlp") << ": loss does not fall: " << reference.front() << " -> "
        << reference.back();
  }
}

// ---------------------------------------------------------------------------------------
// 2. Bad flags fail naming them.

TEST(PipelineTest, MoreStagesThanBlocks) {
  absl::StatusOr<ParallelLayout> layout = LayoutOf({"", 4});
  ASSERT_TRUE(layout.ok()) << layout.status();
  const char* expected = "--pp=4 is more than --layers=2; every pipeline stage needs at least one block";
  for (Model model : {Model::kGpt, Model::kMlp}) {
    absl::StatusOr<proto::Job> job = BuildModel(model, *layout, 2);
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(job.status().message(), expected);
  }
}

TEST(PipelineTest, MicroBatchesNotDividingTheBatch) {
  absl::StatusOr<ParallelLayout> layout = LayoutOf({"", 1, 1, 1, 3});
  ASSERT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<proto::Job> gpt = BuildModel(Model::kGpt, *layout, 4);
  EXPECT_EQ(gpt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpt.status().message(),
            "--batch=8 is not divisible by --micro_batches=3; micro-batches must be of equal size");
  absl::StatusOr<proto::Job> mlp = BuildModel(Model::kMlp, *layout, 4);
  EXPECT_EQ(mlp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mlp.status().message(),
            "--batch=16 is not divisible by --micro_batches=3; micro-batches must be of equal size");
}

TEST(PipelineTest, StagesTimesDpTimesTpNotMatchingTheDevices) {
  ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.pp = 2;
  flags.dp = 2;
  flags.tp = 2;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.status().message(),
            "--pp=2 x --dp=2 x --tp=2 is 8 devices, but --nodes=1 x --devices_per_node=4 is 4; they must match");
}

TEST(PipelineTest, ZeroThreeWithoutDataParallelism) {
  ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.pp = 2;
  flags.zero = 3;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.status().message(),
            "--zero=3 shards over the data-parallel axis, but --dp=1 has none; use --dp > 1 or --zero=0");
}

// ---------------------------------------------------------------------------------------
// 3. Memory.

// Devices (indices into plan.devices()) of `stage` of `layout`.
std::vector<int> StageDevices(const proto::Plan& plan, const ParallelLayout& layout, int64_t stage) {
  std::vector<int> result;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DeviceId& id = plan.devices(d).device();
    for (const DeviceId& member : layout.StagePlacement(stage).devices()) {
      if (member.node == id.node() && member.device == id.device()) result.push_back(d);
    }
  }
  return result;
}

// The slot counts of a device's activation registers (neither persistent nor per
// iteration; views share their source's slots, so they are left out).
std::vector<int64_t> ActivationCounts(const proto::DevicePlan& device) {
  std::vector<int64_t> counts;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.persistent() || reg.per_iteration() || reg.has_alias_of()) continue;
    counts.push_back(reg.count());
  }
  return counts;
}

int64_t ActivationRegisterCount(const proto::DevicePlan& device) {
  const std::vector<int64_t> counts = ActivationCounts(device);
  return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

int64_t BlockBytes(const proto::DevicePlan& device, bool persistent_block) {
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    if (persistent_block ? block.persistent() : block.id() == 1) return block.size_bytes();
  }
  return 0;
}

constexpr Layout kPp4M4{"pp4_m4", 4, 1, 1, 4};
constexpr Layout kPp4M16{"pp4_m16", 4, 1, 1, 16};
// Micro-batches of 2 sequences: the batch is 2 M, so that M=4 and M=16 have the same
// micro-batch (the graph is one micro-batch's) and differ only in how many there are.
constexpr int64_t kMicroBatchRows = 2;

// The arena holds the device's register count of micro-batches, not M of them: 4 or 16
// micro-batches per iteration plan the same bytes on stage 0 (GPipe would hold 16).
TEST(PipelineTest, StageZeroActivationMemoryDoesNotGrowWithMicroBatches) {
  absl::StatusOr<ParallelLayout> layout = LayoutOf(kPp4M4);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<proto::Plan> m4 = CompileLayout(Model::kGpt, kPp4M4, kMicroBatchRows * kPp4M4.micro_batches);
  absl::StatusOr<proto::Plan> m16 = CompileLayout(Model::kGpt, kPp4M16, kMicroBatchRows * kPp4M16.micro_batches);
  ASSERT_TRUE(m4.ok()) << m4.status();
  ASSERT_TRUE(m16.ok()) << m16.status();
  const std::vector<int> stage0 = StageDevices(*m4, *layout, 0);
  ASSERT_FALSE(stage0.empty());
  for (int d : stage0) {
    const proto::DevicePlan& a = m4->devices(d);
    const proto::DevicePlan& b = m16->devices(d);
    EXPECT_GT(BlockBytes(a, false), 0) << "device " << d;
    EXPECT_EQ(BlockBytes(a, false), BlockBytes(b, false)) << "arena of device " << d;
    EXPECT_EQ(a.peak_bytes() - BlockBytes(a, true), b.peak_bytes() - BlockBytes(b, true))
        << "peak minus persistent of device " << d << ": M=4 " << a.peak_bytes() << " - " << BlockBytes(a, true)
        << ", M=16 " << b.peak_bytes() << " - " << BlockBytes(b, true);
  }

  // What the engine allocates on those devices, for one iteration of each.
  absl::StatusOr<actors::TrainResult> r4 = actors::TrainPlan(*m4, Options(1));
  absl::StatusOr<actors::TrainResult> r16 = actors::TrainPlan(*m16, Options(1));
  ASSERT_TRUE(r4.ok()) << r4.status();
  ASSERT_TRUE(r16.ok()) << r16.status();
  for (int d : stage0) {
    ASSERT_LT(d, static_cast<int>(r4->engine.allocated_bytes.size()));
    ASSERT_LT(d, static_cast<int>(r16->engine.allocated_bytes.size()));
    EXPECT_GT(r4->engine.allocated_bytes[d], 0) << "device " << d;
    EXPECT_EQ(r4->engine.allocated_bytes[d], r16->engine.allocated_bytes[d]) << "allocated on device " << d;
  }
}

// 1F1B: stage s of S keeps S - s micro-batches of activations (issue 12): every
// activation register of its devices has S - s slots.
TEST(PipelineTest, StageRegisterCountsFollow1F1B) {
  absl::StatusOr<ParallelLayout> layout = LayoutOf(kPp4M16);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<proto::Plan> plan = CompileLayout(Model::kGpt, kPp4M16, kMicroBatchRows * kPp4M16.micro_batches);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (int64_t s = 0; s < layout->pp(); ++s) {
    for (int d : StageDevices(*plan, *layout, s)) {
      const proto::DevicePlan& device = plan->devices(d);
      for (const proto::RegisterDef& reg : device.registers()) {
        if (reg.persistent() || reg.per_iteration() || reg.has_alias_of()) continue;
        EXPECT_EQ(reg.count(), layout->pp() - s)
            << "stage " << s << " device " << d << " register " << reg.id() << " ('" << reg.tensor() << "')";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// 4. The engine keeps at most the register count of micro-batches in flight.

// The most micro-batches in flight at once on device `d`: micro-batch n (act index:
// iteration x M + m) is in flight from the first start of any of the device's
// per-micro-batch acts on it to the last end of those acts. Receiving transfers do not
// count: they buffer the next micro-batches' inputs in registers of their own (memory
// block 2, bounded by those registers' slots), outside the activations the gate bounds.
int MostInFlight(const proto::Plan& plan, const std::vector<actors::ActRecord>& acts, int d, int64_t micro_batches) {
  std::map<int64_t, bool> per_micro_batch;  // Actor id -> acts once per micro-batch on activations.
  for (const proto::ActorDef& actor : plan.devices(d).actors()) {
    const bool receiver = actor.thread() == proto::THREAD_TRANSFER && actor.consumed_registers_size() == 0;
    per_micro_batch[actor.id()] = !actor.per_iteration() && !receiver;
  }
  std::vector<int64_t> first(micro_batches, INT64_MAX), last(micro_batches, INT64_MIN);
  for (const actors::ActRecord& act : acts) {
    if (act.device_index != d || !per_micro_batch[act.actor_id]) continue;
    EXPECT_LT(act.iteration, micro_batches) << "device " << d << " actor " << act.actor_id;
    if (act.iteration >= micro_batches) continue;
    first[act.iteration] = std::min(first[act.iteration], act.start_ns);
    last[act.iteration] = std::max(last[act.iteration], act.end_ns);
  }
  // +1 at a start, -1 at an end; at equal times the end goes first (it happened before
  // the start it allowed).
  std::vector<std::pair<int64_t, int>> events;
  for (int64_t n = 0; n < micro_batches; ++n) {
    EXPECT_NE(first[n], INT64_MAX) << "device " << d << " never acted on micro-batch " << n;
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

// gpt pp=4 with 8 micro-batches, 2 iterations: on every device (stage 0 above all, which
// runs furthest ahead) the micro-batches in flight never exceed its activation registers'
// slots; and stage 0 does run ahead (the stages overlap: it starts micro-batch 1 before
// micro-batch 0's backward came back from the last stage).
TEST(PipelineTest, NoStageHoldsMoreMicroBatchesThanItsRegisters) {
  const Layout l{"pp4_m8", 4, 1, 1, 8};
  absl::StatusOr<ParallelLayout> layout = LayoutOf(l);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<proto::Plan> plan = CompileLayout(Model::kGpt, l);
  ASSERT_TRUE(plan.ok()) << plan.status();
  constexpr int64_t kTrainIterations = 2;
  actors::TrainOptions options = Options(kTrainIterations);
  options.record_acts = true;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (int64_t s = 0; s < layout->pp(); ++s) {
    for (int d : StageDevices(*plan, *layout, s)) {
      const int most = MostInFlight(*plan, result->engine.acts, d, kTrainIterations * l.micro_batches);
      const int64_t bound = ActivationRegisterCount(plan->devices(d));
      EXPECT_LE(most, bound) << "stage " << s << " device " << d << " had " << most
                             << " micro-batches in flight with " << bound << " activation slots";
      if (s == 0) {
        EXPECT_GE(most, 2) << "stage 0 device " << d << " never ran ahead of the later stages";
      }
      RecordProperty(absl::StrCat("stage_", s, "_device_", d, "_most_in_flight"), most);
      RecordProperty(absl::StrCat("stage_", s, "_device_", d, "_activation_slots"), static_cast<int>(bound));
    }
  }
}

// ---------------------------------------------------------------------------------------
// 5. A failure on one stage stops all of them.

TEST(PipelineTest, FailureOnOneStageStopsEveryStageNamingIt) {
  const Layout l{"pp2_m4", 2, 1, 1, 4};
  absl::StatusOr<ParallelLayout> layout = LayoutOf(l);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<proto::Plan> plan = CompileLayout(Model::kGpt, l);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<int> stage1 = StageDevices(*plan, *layout, 1);
  ASSERT_EQ(stage1.size(), 1u);
  const proto::DevicePlan& device = plan->devices(stage1[0]);
  const proto::ActorDef* target = nullptr;
  for (const proto::ActorDef& actor : device.actors()) {
    if (actor.kind() == proto::ACTOR_COMPUTE && !actor.per_iteration()) {
      target = &actor;
      break;
    }
  }
  ASSERT_NE(target, nullptr);
  const int64_t target_id = target->id();
  const int target_device = stage1[0];
  actors::TrainOptions options = Options(20);
  // Short enough that a stage left waiting would fail the test on time, long enough that
  // only the abort, not a timeout, can end the run inside the bound below.
  options.progress_timeout = std::chrono::milliseconds(15000);
  options.collective_timeout = absl::Seconds(15);
  options.wrap_act = [&](const actors::ActorBinding& binding, actors::ActFunction act) -> actors::ActFunction {
    if (binding.device_index != target_device || binding.actor->id() != target_id) return act;
    return [act](int64_t iteration, const actors::ActContext& context) -> absl::Status {
      if (iteration == 2) return absl::DataLossError("injected failure at micro-batch 2");
      return act(iteration, context);
    };
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << result.status();
  const std::string message(result.status().message());
  const proto::DeviceId& id = device.device();
  EXPECT_NE(message.find(absl::StrCat("device ", id.node(), ":", id.device(), " (pipeline stage 1) ")),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(absl::StrCat("'", target->name(), "'")), std::string::npos) << message;
  EXPECT_NE(message.find("iteration 2: injected failure at micro-batch 2"), std::string::npos) << message;
  EXPECT_LT(seconds, 10.0) << "stages waited out their timeouts instead of stopping: " << message;
}

}  // namespace
}  // namespace oneflow
