// The pipeline_schedule pass on small graphs written as text: each device's stage and
// register slots, the act kinds of ZB-H1, the interleaved chunks, AUTO, and the errors,
// read from the state dumped after the pass.
#include "compiler/passes/pipeline_schedule_pass.h"

#include <string>
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
  absl::StrAppend(&text, "%labels = input i32[4] source=data", at(last), "\n");
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

TEST(PipelineSchedulePassTest, OneFOneBGivesStageSOfSSMinusSSlotsAndNoActKinds) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(ChainText({0, 1}), Schedule{}, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(LinesStarting(dump, "pipeline_schedule"), Lines{"pipeline_schedule PIPELINE_SCHEDULE_1F1B virtual_stages=1"});
  EXPECT_EQ(LinesStarting(dump, "stage "),
            (Lines{"stage device 0:0 stage=0 slots=2", "stage device 0:1 stage=1 slots=1"}));
  EXPECT_TRUE(LinesStarting(dump, "act ").empty()) << dump;
  // 1F1B leaves the job as it was, so plans are byte-identical to those before schedules.
  EXPECT_FALSE(plan->job().has_pipeline_schedule() && plan->job().pipeline_schedule() != 0);
  EXPECT_EQ(plan->job().virtual_stages(), 0);
  EXPECT_EQ(plan->devices(0).pipeline_stage(), 0);
  EXPECT_EQ(plan->devices(1).pipeline_stage(), 1);
  for (const proto::DevicePlan& device : plan->devices()) {
    for (const proto::ActorDef& actor : device.actors()) EXPECT_EQ(actor.pipeline_act(), proto::PIPELINE_ACT_UNSET);
  }
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
  ASSERT_TRUE(false) << acts;
}

}  // namespace
}  // namespace oneflow
