// ZeRO as SBP (docs/zero.md), checked on compiled plans of the examples: persistent
// memory per device shrinks with the stage (stage 3 on dp=4 to about a quarter), the
// gradients travel as stage 1's all-reduce then local slice or stage 2's reduce-scatter,
// the updated shard goes back by an all-gather, stage 3 gathers each parameter once
// before use; and bad settings fail naming the flag or the field. That the plans train
// like one device is tests/layout_sweep_test.cc's (ExtraLayouts).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;
using ::testing::HasSubstr;

absl::StatusOr<ParallelLayout> Layout(int64_t dp, int64_t tp, int64_t zero) {
  ParallelFlags flags;
  flags.devices_per_node = dp * tp;
  flags.dp = dp;
  flags.tp = tp;
  flags.zero = zero;
  return ParallelLayout::Create(flags);
}

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 34;  // Uneven over 4.
  return config;
}

examples::MlpConfig SmallMlp() {
  examples::MlpConfig config;
  config.batch = 16;
  config.in_features = 16;
  config.hidden = 64;
  config.classes = 6;  // Uneven over 4.
  config.layers = 4;
  return config;
}

absl::StatusOr<proto::Plan> CompileModel(const std::string& model, int64_t dp, int64_t tp, int64_t zero,
                                         bool regather = true) {
  absl::StatusOr<ParallelLayout> layout = Layout(dp, tp, zero);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job =
      model == "gpt" ? examples::BuildGpt(SmallGpt(), *layout) : examples::BuildMlp(SmallMlp(), *layout);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  options.zero3_regather = regather;
  return Compile(*job, options);
}

// Bytes of a device's persistent memory blocks (what `oneflow inspect` prints as
// "persistent"), checked against the persistent registers they hold.
int64_t PersistentBytes(const proto::DevicePlan& device) {
  int64_t blocks = 0;
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    if (block.persistent()) blocks += block.size_bytes();
  }
  int64_t registers = 0;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.persistent()) registers += reg.count() * reg.size_bytes();
  }
  EXPECT_GE(blocks, registers);
  EXPECT_LE(blocks, registers + 64 * device.registers_size());  // Alignment only.
  return blocks;
}

std::vector<int64_t> PersistentPerDevice(const proto::Plan& plan) {
  std::vector<int64_t> bytes;
  for (const proto::DevicePlan& device : plan.devices()) bytes.push_back(PersistentBytes(device));
  return bytes;
}

class ZeroMemoryTest : public ::testing::TestWithParam<std::string> {};

// AdamW (gpt) keeps 3 copies of the parameters (param, m, v): stages 1 and 2 split two
// of them (1 + 2/4 = 0.5 of stage 0), stage 3 all three (0.25 plus the odd rows of an
// uneven split). SGD with momentum (mlp) keeps 2: 0.625 and 0.25.
TEST_P(ZeroMemoryTest, PersistentBytesPerDeviceShrinkWithTheStage) {
  const std::string model = GetParam();
  std::map<int64_t, std::vector<int64_t>> persistent;
  for (int64_t zero : {0, 1, 2, 3}) {
    absl::StatusOr<proto::Plan> plan = CompileModel(model, 4, 1, zero);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->devices_size(), 4);
    persistent[zero] = PersistentPerDevice(*plan);
  }
  const double sharded_state = model == "gpt" ? 0.5 : 0.625;
  for (int d = 0; d < 4; ++d) {
    const double zero0 = static_cast<double>(persistent[0][d]);
    EXPECT_EQ(persistent[0][d], persistent[0][0]) << "replicas hold the same";
    EXPECT_LE(persistent[3][d], 0.3 * zero0) << "device " << d;
    EXPECT_EQ(persistent[1][d], persistent[2][d]) << "stage 2 moves gradients, not state";
    EXPECT_NEAR(persistent[1][d] / zero0, sharded_state, 0.03) << "device " << d;
    EXPECT_LT(persistent[3][d], persistent[2][d]);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ZeroMemoryTest, ::testing::Values("gpt", "mlp"));

// The steps of every boxing, by (consumer op, tensor).
std::map<std::pair<std::string, std::string>, std::vector<proto::BoxingStepKind>> StepsByEdge(
    const proto::Plan& plan) {
  std::map<std::pair<std::string, std::string>, std::vector<proto::BoxingStepKind>> edges;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    auto& steps = edges[{boxing.consumer_op(), boxing.tensor()}];
    for (const proto::BoxingStepDef& step : boxing.steps()) steps.push_back(step.kind());
  }
  return edges;
}

const proto::OpDef* FindOp(const proto::Plan& plan, const std::string& name) {
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.name() == name) return &op;
  }
  return nullptr;
}

// Ops of the plan's job of `type`.
std::vector<const proto::OpDef*> OpsOfType(const proto::Plan& plan, const std::string& type) {
  std::vector<const proto::OpDef*> ops;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() == type) ops.push_back(&op);
  }
  return ops;
}

// The producer of `tensor` in the plan's job.
const proto::OpDef* ProducerOf(const proto::Plan& plan, const std::string& tensor) {
  for (const proto::OpDef& op : plan.job().ops()) {
    for (const auto& [argument, name] : op.outputs()) {
      if (name == tensor) return &op;
    }
  }
  return nullptr;
}

using Steps = std::vector<proto::BoxingStepKind>;

// Every one of them is split over dp=4 in these models (no dim is below 4).
size_t TrainableVariables(const proto::Plan& plan) {
  size_t count = 0;
  for (const proto::VariableDef& variable : plan.job().variables()) count += variable.trainable();
  return count;
}

// Stage 1: each gradient is all-reduced (into the identity hinted replicated) and then
// sliced locally for the step; the new shard is all-gathered into its gathered copy (an
// identity hinted like the parameter), which is assigned to the parameter.
TEST(ZeroPlanTest, StageOneAllReducesGradientsThenSlices) {
  absl::StatusOr<proto::Plan> plan = CompileModel("gpt", 4, 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto edges = StepsByEdge(*plan);
  const std::vector<const proto::OpDef*> steps = OpsOfType(*plan, "adamw_step");
  ASSERT_EQ(steps.size(), TrainableVariables(*plan));
  EXPECT_TRUE(OpsOfType(*plan, "adamw_update").empty());
  for (const proto::OpDef* step : steps) {
    const std::string& reduced = step->inputs().at("grad");
    const proto::OpDef* identity = ProducerOf(*plan, reduced);
    ASSERT_NE(identity, nullptr) << step->name();
    ASSERT_EQ(identity->type(), "identity") << step->name();
    const std::string& gradient = identity->inputs().at("x");
    EXPECT_EQ(edges.at({identity->name(), gradient}), Steps{proto::STEP_ALL_REDUCE}) << gradient;
    EXPECT_EQ(edges.at({step->name(), reduced}), Steps{proto::STEP_LOCAL_SLICE}) << reduced;
    EXPECT_EQ(edges.at({step->name(), step->inputs().at("param")}), Steps{proto::STEP_LOCAL_SLICE});
    const std::string& new_param = step->outputs().at("new_param");
    bool gathered = false;
    for (const auto& [edge, kinds] : edges) {
      if (edge.second != new_param) continue;
      const proto::OpDef* copy = FindOp(*plan, edge.first);
      EXPECT_EQ(copy->type(), "identity");
      EXPECT_EQ(kinds, Steps{proto::STEP_ALL_GATHER}) << new_param;
      gathered = true;
    }
    EXPECT_TRUE(gathered) << new_param;
  }
  EXPECT_EQ(OpsOfType(*plan, "assign").size(), 3 * steps.size());  // param, m, v.
}

// Stages 1 and 2 emit every sharded step, then every gathered copy, then the assigns of
// the parameters: a parameter assigned right after its own step held the next
// variable's step back until its gather had run (traced on 3 emulated hosts: the gathers
// took turns with the compute thread; docs/auto_parallel_measurements.md, session 45).
TEST(ZeroPlanTest, StagesOneAndTwoGatherAfterEveryStep) {
  for (int zero : {1, 2}) {
    SCOPED_TRACE(absl::StrCat("zero=", zero));
    absl::StatusOr<proto::Plan> plan = CompileModel("gpt", 4, 1, zero);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const auto& ops = plan->job().ops();
    // Positions in the job (program order) of the steps, of the gathered copies (the
    // identities reading a step's new_param) and of the assigns reading those copies.
    absl::flat_hash_set<std::string> new_params, copies;
    int last_step = -1, first_copy = ops.size(), last_copy = -1, first_param_assign = ops.size(), param_assigns = 0;
    for (int k = 0; k < ops.size(); ++k) {
      const proto::OpDef& op = ops[k];
      if (op.type() == "adamw_step") {
        new_params.insert(op.outputs().at("new_param"));
        last_step = k;
      } else if (op.type() == "identity" && new_params.contains(op.inputs().at("x"))) {
        copies.insert(op.outputs().at("out"));
        first_copy = std::min(first_copy, k);
        last_copy = k;
      } else if (op.type() == "assign" && copies.contains(op.inputs().at("value"))) {
        first_param_assign = std::min(first_param_assign, k);
        ++param_assigns;
      }
    }
    ASSERT_EQ(new_params.size(), TrainableVariables(*plan));
    EXPECT_EQ(copies.size(), new_params.size());
    EXPECT_EQ(param_assigns, static_cast<int>(new_params.size()));
    EXPECT_LT(last_step, first_copy);
    EXPECT_LT(last_copy, first_param_assign);
  }
}

// Stage 2: the same out-of-place steps, the gradient reduce-scattered straight into them.
TEST(ZeroPlanTest, StageTwoReduceScattersGradients) {
  absl::StatusOr<proto::Plan> plan = CompileModel("gpt", 4, 1, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto edges = StepsByEdge(*plan);
  const std::vector<const proto::OpDef*> steps = OpsOfType(*plan, "adamw_step");
  ASSERT_EQ(steps.size(), TrainableVariables(*plan));
  for (const proto::OpDef* step : steps) {
    const std::string& gradient = step->inputs().at("grad");
    EXPECT_NE(ProducerOf(*plan, gradient)->type(), "identity") << gradient;
    EXPECT_EQ(edges.at({step->name(), gradient}), Steps{proto::STEP_REDUCE_SCATTER}) << gradient;
  }
  // No gradient is all-reduced: the only all-reduce left is the loss for the sink.
  int64_t all_reduces = 0;
  for (const proto::BoxingDef& boxing : plan->boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.kind() == proto::STEP_ALL_REDUCE) {
        ++all_reduces;
        EXPECT_EQ(boxing.consumer_op(), "loss_sink") << boxing.tensor() << " is all-reduced, not only the loss";
      }
    }
  }
  EXPECT_EQ(all_reduces, 1);
}

// Stage 3: the parameters are split and updated in place; every reader reads the
// gathered copy, which one all-gather per parameter makes.
// Each parameter is gathered for forward ("<param>/gathered") and again for backward
// ("<param>/regathered", from "<param>/shard_copy", a copy of the shard), by one
// all-gather each; forward reads only the first, backward only the second.
TEST(ZeroPlanTest, StageThreeGathersEachParameterForForwardAndAgainForBackward) {
  absl::StatusOr<proto::Plan> plan = CompileModel("gpt", 4, 1, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto edges = StepsByEdge(*plan);
  const std::vector<const proto::OpDef*> updates = OpsOfType(*plan, "adamw_update");
  ASSERT_EQ(updates.size(), TrainableVariables(*plan));
  EXPECT_TRUE(OpsOfType(*plan, "adamw_step").empty());
  std::set<std::string> parameters;
  int regathered = 0;
  for (const proto::OpDef* update : updates) {
    const std::string& param = update->inputs().at("param");
    parameters.insert(param);
    EXPECT_EQ(edges.at({update->name(), update->inputs().at("grad")}), Steps{proto::STEP_REDUCE_SCATTER});
    EXPECT_EQ(edges.at({param + "/gathered", param}), Steps{proto::STEP_ALL_GATHER}) << param;
    // Parameters that backward reads (not wpe, the layer-norm betas) are gathered again.
    if (FindOp(*plan, param + "/regathered") == nullptr) continue;
    ++regathered;
    EXPECT_EQ(edges.count({param + "/shard_copy", param}), 0u) << param;  // The shard as it lies.
    EXPECT_EQ(edges.at({param + "/regathered", param + "/shard_copy"}), Steps{proto::STEP_ALL_GATHER}) << param;
  }
  EXPECT_GT(regathered, 0);
  // Nothing but its gathers and its update reads a parameter itself; forward (up to the
  // loss) reads the forward copy, backward the re-gathered one.
  int position = 0, loss_position = -1;
  for (const proto::OpDef& op : plan->job().ops()) {
    for (const auto& [argument, tensor] : op.outputs()) {
      if (tensor == plan->job().loss()) loss_position = position;
    }
    ++position;
  }
  ASSERT_GE(loss_position, 0);
  position = 0;
  int backward_reads = 0;
  for (const proto::OpDef& op : plan->job().ops()) {
    for (const auto& [argument, tensor] : op.inputs()) {
      if (parameters.count(tensor) > 0) {
        EXPECT_TRUE(op.type() == "adamw_update" || op.name() == tensor + "/gathered" ||
                    op.name() == tensor + "/shard_copy")
            << op.name();
      }
      const size_t slash = tensor.rfind('/');
      if (slash == std::string::npos || parameters.count(tensor.substr(0, slash)) == 0) continue;
      const std::string copy = tensor.substr(slash + 1);
      if (copy == "gathered") {
        EXPECT_LE(position, loss_position) << op.name() << " reads " << tensor;
      }
      if (copy == "regathered") {
        EXPECT_GT(position, loss_position) << op.name() << " reads " << tensor;
        ++backward_reads;
      }
    }
    ++position;
  }
  EXPECT_GT(backward_reads, 0);
}

// Re-gathering for backward frees the forward copies at the end of forward: the gpt's
// planned peak on every device is lower than with one copy kept from forward to
// backward; the persistent bytes (shards and optimizer state) are the same. (The small
// mlp's weights are a minor part of its peak: there the prefetched copy and the shard
// copies make it about 1% higher; docs/zero.md.)
TEST(ZeroPlanTest, StageThreeRegatherLowersThePlannedPeak) {
  for (const std::string model : {"gpt"}) {
    absl::StatusOr<proto::Plan> kept = CompileModel(model, 4, 1, 3, /*regather=*/false);
    absl::StatusOr<proto::Plan> again = CompileModel(model, 4, 1, 3, /*regather=*/true);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(PersistentPerDevice(*again), PersistentPerDevice(*kept)) << model;
    for (int d = 0; d < again->devices_size(); ++d) {
      EXPECT_LT(again->devices(d).peak_bytes(), kept->devices(d).peak_bytes()) << model << " device " << d;
      std::printf("%s device %d: planned peak %lld B with re-gather, %lld B keeping the forward copy\n",
                  model.c_str(), d, static_cast<long long>(again->devices(d).peak_bytes()),
                  static_cast<long long>(kept->devices(d).peak_bytes()));
    }
  }
}

// Keeping forward's gathered copy for backward (--zero3_regather=false) sends stage 0's
// bytes: a reduce-scatter of each gradient and one gather of each parameter are its
// all-reduce, split in two (docs/zero.md). Re-gathering sends a second gather: more.
TEST(ZeroPlanTest, StageThreeKeepingTheForwardCopySendsStageZerosBytes) {
  absl::StatusOr<proto::Plan> plain = CompileModel("gpt", 4, 1, 0);
  absl::StatusOr<proto::Plan> kept = CompileModel("gpt", 4, 1, 3, /*regather=*/false);
  absl::StatusOr<proto::Plan> again = CompileModel("gpt", 4, 1, 3, /*regather=*/true);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(again.ok()) << again.status();
  for (int d = 0; d < plain->devices_size(); ++d) {
    const int64_t zero0 = plain->devices(d).bytes_sent_per_iter();
    const int64_t zero3_kept = kept->devices(d).bytes_sent_per_iter();
    const int64_t zero3_again = again->devices(d).bytes_sent_per_iter();
    std::printf("device %d sends %lld B at zero 0, %lld B at zero 3 keeping the copy, %lld B re-gathering\n", d,
                static_cast<long long>(zero0), static_cast<long long>(zero3_kept),
                static_cast<long long>(zero3_again));
    EXPECT_NEAR(static_cast<double>(zero3_kept), static_cast<double>(zero0), 0.02 * zero0) << "device " << d;
    EXPECT_GT(zero3_again, zero3_kept + zero0 / 5) << "device " << d;
  }
}

// tp beside dp: the shard splits the tensor axis tp leaves whole, and the plan compiles
// for every stage.
TEST(ZeroPlanTest, ShardsBesideTensorParallelism) {
  for (int64_t zero : {1, 2, 3}) {
    absl::StatusOr<proto::Plan> plan = CompileModel("gpt", 2, 2, zero);
    ASSERT_TRUE(plan.ok()) << "zero=" << zero << ": " << plan.status();
    absl::StatusOr<proto::Plan> plain = CompileModel("gpt", 2, 2, 0);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_LT(PersistentBytes(plan->devices(0)), PersistentBytes(plain->devices(0))) << "zero=" << zero;
  }
}

TEST(ZeroErrorsTest, TheFlagsAreChecked) {
  EXPECT_THAT(Layout(4, 1, 4).status().message(),
              HasSubstr("--zero=4 is not a ZeRO stage; valid: 0 (off), 1, 2, 3"));
  EXPECT_EQ(Layout(4, 1, -1).status().code(), absl::StatusCode::kInvalidArgument);
  for (int64_t zero : {1, 3}) {
    const absl::Status status = Layout(1, 4, zero).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), absl::StrCat("--zero=", zero,
                                             " shards over the data-parallel axis, but --dp=1 has none; "
                                             "use --dp > 1 or --zero=0"));
  }
  EXPECT_TRUE(Layout(4, 1, 0).ok());
}

TEST(ZeroErrorsTest, TheJobFieldsAreChecked) {
  absl::StatusOr<ParallelLayout> layout = Layout(4, 1, 0);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<proto::Job> job = examples::BuildMlp(SmallMlp(), *layout);
  ASSERT_TRUE(job.ok());
  CompileOptions options;
  options.cluster = layout->cluster();
  proto::Job bad = *job;
  bad.mutable_optimizer()->set_zero_stage(5);
  absl::Status status = Compile(bad, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("optimizer zero_stage=5 is invalid; valid: 0 (off), 1, 2, 3"));
  bad = *job;
  bad.mutable_optimizer()->set_zero_stage(2);
  bad.mutable_optimizer()->set_zero_axis(1);
  status = Compile(bad, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("optimizer zero_axis=1 is not a hierarchy axis of placement "
                                          "cpu{0:0-3} of variable 'layer0/weight' (1 axes)"));
}

}  // namespace
}  // namespace oneflow
