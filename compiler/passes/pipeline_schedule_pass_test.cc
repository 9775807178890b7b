// The pipeline_schedule pass on small graphs written as text: each device's stage and
// register slots, the act kinds of ZB-H1, the interleaved chunks, AUTO, and the errors,
// read from the state dumped after the pass.
#include "compiler/passes/pipeline_schedule_pass.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

// A chain of matmul -> relu chunks, chunk k on device `chunk_devices[k]` of node 0, then
// the loss on the last chunk's device: a pipeline of as many stages as distinct devices,
// with chunks interleaved when a device comes back.
std::string ChainText(const std::vector<int>& chunk_devices) {
  auto at = [](int device) { return absl::StrCat(" placement=\"cpu{0:", device, "}\""); };
  const int last = chunk_devices.back();
  std::string text = "graph chain\nplacement cpu{0:0-1}\nsource data synthetic_classification seed=1 num_classes=4\n";
  absl::StrAppend(&text, "%x = input f32[4, 8] source=data", at(chunk_devices[0]), "\n");
  absl::StrAppend(&text, "%labels = input i32[4] source=data", at(chunk_devices[0]), "\n");
  std::string h = "%x";
  for (size_t k = 0; k < chunk_devices.size(); ++k) {
    absl::StrAppend(&text, "%w", k, " = variable f32[8, 8] init=xavier_uniform seed=", k + 1, at(chunk_devices[k]),
                    "\n");
    absl::StrAppend(&text, "%mm", k, " = matmul(a=", h, ", b=%w", k, ") f32[4, 8]", at(chunk_devices[k]), "\n");
    absl::StrAppend(&text, "%relu", k, " = relu(x=%mm", k, ") f32[4, 8]", at(chunk_devices[k]), "\n");
    h = absl::StrCat("%relu", k);
  }
  absl::StrAppend(&text, "%ce = sparse_softmax_cross_entropy(logits=", h, ", labels=%labels) f32[4]", at(last), "\n");
  absl::StrAppend(&text, "%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]", at(last), "\n");
  absl::StrAppend(&text, "optimizer sgd lr=0.1 momentum=0.0\nloss %loss\n");
  return text;
}

struct Schedule {
  proto::PipelineSchedule schedule = proto::PIPELINE_SCHEDULE_1F1B;
  int64_t virtual_stages = 1;
  int64_t micro_batches = 4;
  int64_t device_memory = 0;
  Precision precision = Precision::kFp32;
};

absl::StatusOr<proto::Plan> CompileText(const std::string& text, const Schedule& s, std::string* dump) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return job.status();
  job->set_micro_batches(s.micro_batches);
  CompileOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(2);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_inter_node_bandwidth(10e9);
  options.pp_schedule = s.schedule;
  options.virtual_stages = s.virtual_stages;
  options.device_memory = s.device_memory;
  options.precision = s.precision;
  options.dump_after = {"pipeline_schedule"};
  options.dump = dump;
  return Compile(*job, options);
}

// The dump's lines that start with `prefix`, in order.
std::vector<std::string> LinesStarting(const std::string& dump, const std::string& prefix) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(dump, '\n')) {
    if (absl::StartsWith(line, prefix)) lines.emplace_back(line);
  }
  return lines;
}

using Lines = std::vector<std::string>;

// 1F1B marks the act kinds as ZB-H1 does (the engine runs forward acts first under every
// schedule) but leaves the job's schedule unset and the program order as it was (the ops'
// order check is ZeroBubbleOrdersWeightGradientsAfterInputGradients below).
TEST(PipelineSchedulePassTest, OneFOneBGivesStageSOfSSMinusSSlotsAndMarksTheActKinds) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), Schedule{}, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(LinesStarting(dump, "pipeline_schedule"), Lines{"pipeline_schedule PIPELINE_SCHEDULE_1F1B virtual_stages=1"});
  EXPECT_EQ(LinesStarting(dump, "stage "),
            (Lines{"stage device 0:0 stage=0 slots=2", "stage device 0:1 stage=1 slots=1"}));
  Schedule zero_bubble;
  zero_bubble.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
  std::string zero_bubble_dump;
  ASSERT_TRUE(CompileText(ChainText({0, 1}), zero_bubble, &zero_bubble_dump).ok());
  EXPECT_EQ(LinesStarting(dump, "act "), LinesStarting(zero_bubble_dump, "act "));
  EXPECT_FALSE(LinesStarting(dump, "act PIPELINE_ACT_FORWARD ").empty()) << dump;
  EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_1F1B);
  EXPECT_EQ(plan->job().virtual_stages(), 0);
  EXPECT_EQ(plan->devices(0).pipeline_stage(), 0);
  EXPECT_EQ(plan->devices(1).pipeline_stage(), 1);
  // The forward ops' actors carry their kind: mm0 on the first stage, the loss on the last.
  std::map<std::string, proto::PipelineAct> act_of_actor;
  for (const proto::DevicePlan& device : plan->devices()) {
    for (const proto::ActorDef& actor : device.actors()) act_of_actor[actor.name()] = actor.pipeline_act();
  }
  EXPECT_EQ(act_of_actor["mm0"], proto::PIPELINE_ACT_FORWARD);
  EXPECT_EQ(act_of_actor["loss"], proto::PIPELINE_ACT_FORWARD);
}

TEST(PipelineSchedulePassTest, WithoutMicroBatchesEveryDeviceKeepsTheDefaultSlots) {
  std::string dump;
  Schedule s;
  s.micro_batches = 1;
  ASSERT_TRUE(CompileText(ChainText({0, 1}), s, &dump).ok());
  EXPECT_EQ(LinesStarting(dump, "stage "),
            (Lines{"stage device 0:0 stage=0 slots=2", "stage device 0:1 stage=1 slots=2"}));
}

TEST(PipelineSchedulePassTest, ZeroBubbleSplitsBackwardIntoInputAndWeightActs) {
  std::string dump;
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), s, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_ZB_H1);
  // 1F1B's slots: ZB-H1 keeps its memory.
  EXPECT_EQ(LinesStarting(dump, "stage "),
            (Lines{"stage device 0:0 stage=0 slots=2", "stage device 0:1 stage=1 slots=1"}));
  const std::string acts = absl::StrJoin(LinesStarting(dump, "act "), "\n");
  // Forward: the chunks and the loss.
  for (const char* op : {"mm0", "relu0", "mm1", "relu1", "ce", "loss"}) {
    EXPECT_NE(acts.find(absl::StrCat("act PIPELINE_ACT_FORWARD ", op, "\n")), std::string::npos) << op << "\n" << acts;
  }
  // Backward: on the last stage (device 0:1) the ops the first stage waits for (relu0's
  // gradient and what leads to it) are B and the weight gradients W; on the first stage
  // nothing waits for its backward, so all of it is W. Counted on the plan's actors.
  std::map<std::pair<int, proto::PipelineAct>, int> count;
  for (int d = 0; d < plan->devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan->devices(d).actors()) {
      if (actor.pipeline_act() != proto::PIPELINE_ACT_UNSET) ++count[{d, actor.pipeline_act()}];
      // Only per-micro-batch compute actors carry an act kind.
      if (actor.pipeline_act() != proto::PIPELINE_ACT_UNSET) {
        EXPECT_EQ(actor.kind(), proto::ACTOR_COMPUTE) << actor.name();
        EXPECT_FALSE(actor.per_iteration()) << actor.name();
      }
    }
  }
  EXPECT_EQ((count[{0, proto::PIPELINE_ACT_BACKWARD_INPUT}]), 0) << acts;
  EXPECT_GE((count[{0, proto::PIPELINE_ACT_BACKWARD_WEIGHT}]), 1) << acts;
  EXPECT_GE((count[{1, proto::PIPELINE_ACT_BACKWARD_INPUT}]), 1) << acts;
  EXPECT_GE((count[{1, proto::PIPELINE_ACT_BACKWARD_WEIGHT}]), 1) << acts;
  // mm1's two gradients are separate ops: the one reading w1 (input gradient) is B, the
  // one reading relu0 (weight gradient) W.
  bool input_gradient_is_b = false, weight_gradient_is_w = false;
  for (const std::string& line : LinesStarting(dump, "act ")) {
    if (line.find("PIPELINE_ACT_BACKWARD_INPUT") != std::string::npos) input_gradient_is_b = true;
    if (line.find("PIPELINE_ACT_BACKWARD_WEIGHT") != std::string::npos) weight_gradient_is_w = true;
  }
  EXPECT_TRUE(input_gradient_is_b && weight_gradient_is_w) << acts;
}

// bf16 keeps activations for backward as bf16 casts (activation_storage): each narrowing
// cast acts with forward, right after the last forward reader of its f32 tensor, where
// as a W act ZB-H1 would defer it into a bubble and keep the f32 tensor; the widening
// cast, read by backward, is backward.
TEST(PipelineSchedulePassTest, ZeroBubbleRunsNarrowingCastsWithForward) {
  std::string dump;
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
  s.precision = Precision::kBf16;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), s, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string acts = absl::StrJoin(LinesStarting(dump, "act "), "\n") + "\n";
  int narrowing = 0;
  for (const std::string& line : LinesStarting(dump, "act ")) {
    if (absl::EndsWith(line, "/bf16")) {
      ++narrowing;
      EXPECT_TRUE(absl::StartsWith(line, "act PIPELINE_ACT_FORWARD ")) << line;
    }
    if (absl::EndsWith(line, "/f32")) {
      EXPECT_FALSE(absl::StartsWith(line, "act PIPELINE_ACT_FORWARD ")) << line;
    }
  }
  EXPECT_GE(narrowing, 1) << acts;
}

// ZB-H1 puts each device's W ops after its last B op in the device program (the order
// memory planning lays lifetimes out by), with what reads their outputs; 1F1B leaves the
// ops' order, where the second chunk's weight gradient on the last stage comes before the
// first chunk's input gradient.
TEST(PipelineSchedulePassTest, ZeroBubbleOrdersWeightGradientsAfterInputGradients) {
  std::map<std::string, proto::PipelineAct> act_of;  // op name -> act kind
  auto positions = [&](const std::string& dump, const std::string& device) {
    std::vector<std::pair<int, std::string>> ops;  // (node index, op name) of compute nodes
    for (const std::string& line : LinesStarting(dump, absl::StrCat("node ", device, " #"))) {
      const size_t hash = line.find('#');
      const size_t op = line.find(" op %");
      if (op == std::string::npos) continue;
      const size_t end = line.find_first_of(": ", op + 5);
      ops.emplace_back(std::stoi(line.substr(hash + 1)), line.substr(op + 5, end - op - 5));
    }
    return ops;
  };
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
  std::string dump;
  ASSERT_TRUE(CompileText(ChainText({0, 1, 1}), s, &dump).ok());
  for (const std::string& line : LinesStarting(dump, "act ")) {
    const std::vector<std::string> parts = absl::StrSplit(line, ' ');
    ASSERT_EQ(parts.size(), 3u) << line;
    proto::PipelineAct act;
    ASSERT_TRUE(proto::PipelineAct_Parse(parts[1], &act)) << line;
    act_of[parts[2]] = act;
  }
  auto last_input_then_first_weight = [&](const std::vector<std::pair<int, std::string>>& ops) {
    int last_input = -1, first_weight = 1 << 30;
    for (const auto& [index, name] : ops) {
      const auto it = act_of.find(name);
      if (it == act_of.end()) continue;
      if (it->second == proto::PIPELINE_ACT_BACKWARD_INPUT) last_input = std::max(last_input, index);
      if (it->second == proto::PIPELINE_ACT_BACKWARD_WEIGHT) first_weight = std::min(first_weight, index);
    }
    return std::make_pair(last_input, first_weight);
  };
  const auto [zb_last_input, zb_first_weight] = last_input_then_first_weight(positions(dump, "0:1"));
  ASSERT_GE(zb_last_input, 0) << dump;
  EXPECT_LT(zb_last_input, zb_first_weight) << dump;
  s.schedule = proto::PIPELINE_SCHEDULE_1F1B;
  std::string one_forward_one_backward;
  ASSERT_TRUE(CompileText(ChainText({0, 1, 1}), s, &one_forward_one_backward).ok());
  const auto [last_input, first_weight] = last_input_then_first_weight(positions(one_forward_one_backward, "0:1"));
  EXPECT_GT(last_input, first_weight) << one_forward_one_backward;
}

TEST(PipelineSchedulePassTest, InterleavedChunksCountEveryChunkBoundary) {
  std::string dump;
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_INTERLEAVED;
  s.virtual_stages = 2;
  // Chunks on devices 0, 1, 0, 1: 2 stages x 2 chunks.
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1, 0, 1}), s, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(LinesStarting(dump, "pipeline_schedule"),
            Lines{"pipeline_schedule PIPELINE_SCHEDULE_INTERLEAVED virtual_stages=2"});
  EXPECT_EQ(LinesStarting(dump, "stage "),
            (Lines{"stage device 0:0 stage=0 slots=4", "stage device 0:1 stage=1 slots=3"}));
  EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_INTERLEAVED);
  EXPECT_EQ(plan->job().virtual_stages(), 2);
}

TEST(PipelineSchedulePassTest, AutoPicksZeroBubbleWithoutChunksAndInterleavedWithThem) {
  std::string dump;
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_AUTO;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), s, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_ZB_H1);
  s.virtual_stages = 2;
  plan = CompileText(ChainText({0, 1, 0, 1}), s, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->job().pipeline_schedule(), proto::PIPELINE_SCHEDULE_INTERLEAVED);
  // A memory budget below the estimate fails naming the flag and the device.
  s.virtual_stages = 1;
  s.device_memory = 1024;
  plan = CompileText(ChainText({0, 1}), s, &dump);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "--pp_schedule=auto: no schedule fits --device_memory=1024 bytes: device 0:0 (pipeline stage 0)"))
      << plan.status();
  s.device_memory = int64_t{1} << 30;
  EXPECT_TRUE(CompileText(ChainText({0, 1}), s, &dump).ok());
}

TEST(PipelineSchedulePassTest, ErrorsNameTheFlags) {
  std::string dump;
  Schedule s;
  s.schedule = proto::PIPELINE_SCHEDULE_INTERLEAVED;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), s, &dump);
  EXPECT_EQ(plan.status().message(),
            "--pp_schedule=interleaved needs --virtual_stages >= 2 chunks per stage (got --virtual_stages=1)");
  s.virtual_stages = 2;
  plan = CompileText(ChainText({0, 1}), s, &dump);
  EXPECT_EQ(plan.status().message(),
            "--virtual_stages=2: the model's forward path crosses 1 stage boundaries over 2 stages, but 2 chunks "
            "per stage need 3; build the model with the same --virtual_stages (ParallelFlags::virtual_stages)");
  s.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
  plan = CompileText(ChainText({0, 1, 0, 1}), s, &dump);
  EXPECT_EQ(plan.status().message(), "--virtual_stages=2 is for --pp_schedule=interleaved (or auto), not --pp_schedule=zb");
  EXPECT_EQ(ParsePipelineSchedule("gpipe").status().message(),
            "--pp_schedule=gpipe is not one of: 1f1b, interleaved, zb, auto");
}

}  // namespace
}  // namespace oneflow
