// InspectPlan on hand-built plans: the text format line by line against golden lines,
// the JSON parsed back with its stable keys, and the nodes and edges of both DOT graphs.
#include "tools/cli/inspect.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "tools/cli/sample_plan.h"

namespace oneflow::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Inspect(const proto::Plan& plan, InspectFormat format,
                    std::optional<int> device = std::nullopt) {
  absl::StatusOr<std::string> out = InspectPlan(plan, {format, device});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

// Compares line by line so that a failure names the first line that differs.
void ExpectLines(const std::string& text, const std::vector<std::string>& expected) {
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  ASSERT_EQ(lines.back(), "") << "output must end with a newline";
  for (size_t i = 0; i < expected.size() && i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i], expected[i]) << "line " << i + 1;
  }
  EXPECT_EQ(lines.size() - 1, expected.size()) << text;
}

const std::vector<std::string> kDeviceSection = {
    "    actors: 7 (data_source 1, variable 1, compute 4, boxing 1)",
    "    registers: 7, 30.00 KiB (30720 B)",
    "    memory: peak 30.00 KiB (30720 B), lower bound 20.00 KiB (20480 B), ratio 1.50",
    "    persistent: 2.00 KiB (2048 B) (variables and optimizer state)",
    "    traffic per iteration: sent 2.00 KiB (2048 B), received 2.00 KiB (2048 B)",
    "    collective order: 0 all_reduce(w_grad)",
};

std::vector<std::string> Concat(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

const std::vector<std::string> kHeaderOpsAndBoxings = {
    "plan 'matmul_dp' (format version 2)",
    "cluster: 1 node x 2 devices per node, cpu",
    "links: intra-node 100 GB/s, inter-node 12.5 GB/s",
    // The sample plan's actors carry no kernels the cost model prices and its step no
    // modelled seconds (it is written by hand, not compiled).
    "predicted step time: 0 ms (device 0:0: compute 0 ms = GEMM 0 + memory-bound 0, communication 0 ms, not "
    "overlapped)",
    "",
    "ops (4)",
    "  mm         matmul      a: S(0), b: B -> out: S(0)              on cpu{0:0-1}",
    "  loss_grad  mse_grad    pred: S(0), target: S(0) -> grad: S(0)  on cpu{0:0-1}",
    "  mm_grad    matmul      a: S(0), b: S(0) -> out: P              on cpu{0:0-1}",
    "  sgd        sgd_update  grad: B, param: B -> -                  on cpu{0:0-1}",
    "",
    "boxings (1), 4.00 KiB (4096 B) per iteration in all",
    "  boxing 0: w_grad [32, 16] f32, mm_grad -> sgd, P -> B on cpu{0:0-1}",
    "    step 0: all_reduce on axis 0, P -> B, 2.00 KiB (2048 B) per device, collective 0",
    "    bytes per iteration: 4.00 KiB (4096 B)",
    "    reason: mm_grad produces P, sgd needs B",
    "",
};

TEST(InspectTextTest, DataParallelMatmulGolden) {
  ExpectLines(Inspect(SampleDataParallelPlan(), InspectFormat::kText),
              Concat({kHeaderOpsAndBoxings,
                      {"devices (2)", "  device 0 (0:0)"},
                      kDeviceSection,
                      {"  device 1 (0:1)"},
                      kDeviceSection}));
}

TEST(InspectTextTest, OneDeviceShowsOnlyItsSection) {
  ExpectLines(
      Inspect(SampleDataParallelPlan(), InspectFormat::kText, 1),
      Concat({kHeaderOpsAndBoxings, {"devices (1 of 2)", "  device 1 (0:1)"}, kDeviceSection}));
}

// A boxing across placements on a 2-D hierarchy, compressed and sparse, with a local
// step; and a device whose memory lower bound is unknown.
proto::Plan PlanWithRicherBoxing() {
  proto::Plan plan = SampleDataParallelPlan();
  proto::CollectiveDef* collective = plan.add_collectives();
  collective->set_id(1);
  collective->set_kind(proto::ALL_GATHER);
  collective->set_tensor("h");
  plan.mutable_devices(1)->add_collective_order(1);
  plan.mutable_devices(1)->set_lower_bound_bytes(0);
  proto::BoxingDef* boxing = plan.add_boxings();
  boxing->set_id(1);
  boxing->set_tensor("h");
  boxing->set_producer_op("stage0");
  boxing->set_consumer_op("stage1");
  *boxing->mutable_src_sbp() = NdSbp::Parse("[S(0), S(1)]").value().ToProto();
  *boxing->mutable_dst_sbp() = NdSbp::Parse("[S(0), B]").value().ToProto();
  *boxing->mutable_src_placement() = Placement::Parse("cpu{0:0-1, 1:0-1}[2, 2]").value().ToProto();
  *boxing->mutable_dst_placement() = Placement::Parse("cpu{0:0-3}").value().ToProto();
  proto::BoxingStepDef* gather = boxing->add_steps();
  gather->set_kind(proto::STEP_ALL_GATHER);
  gather->set_hierarchy_axis(1);
  *gather->mutable_src_sbp() = boxing->src_sbp();
  *gather->mutable_dst_sbp() = boxing->dst_sbp();
  gather->set_bytes_per_device(1536);
  gather->set_collective_id(1);
  proto::BoxingStepDef* slice = boxing->add_steps();
  slice->set_kind(proto::STEP_LOCAL_SLICE);
  slice->set_collective_id(-1);
  boxing->set_bytes_per_iter(1 << 20);
  boxing->mutable_compression()->set_kind(proto::Compression::FP8_E4M3);
  boxing->mutable_compression()->set_block_size(128);
  boxing->mutable_sparsity()->set_kind(proto::Sparsity::ROWS);
  boxing->mutable_sparsity()->set_max_rows(1000);
  return plan;
}

// A bf16 plan (compiler/passes/precision_pass.h): the products are marked in the op table
// and a precision line counts them and the tensors by dtype; an fp32 plan has neither.
TEST(InspectTextTest, Bf16ProductsAndThePrecisionLine) {
  proto::Plan plan = SampleDataParallelPlan();
  EXPECT_THAT(Inspect(plan, InspectFormat::kText), Not(HasSubstr("precision")));
  int marked = 0;
  for (proto::OpDef& op : *plan.mutable_job()->mutable_ops()) {
    if (op.type() != "matmul") continue;
    (*op.mutable_attrs())["compute_dtype"].set_s("bf16");
    ++marked;
  }
  ASSERT_EQ(marked, 2);
  int tensors = 0;
  for (const proto::TensorDef& tensor : plan.job().tensors()) tensors += tensor.dtype() == proto::DTYPE_F32;
  ASSERT_EQ(tensors, plan.job().tensors_size());
  // The precision line wraps at the terminal width; its continuation lines are indented.
  const auto unwrapped = [](const std::string& text) {
    return absl::StrReplaceAll(text, {{"\n                              ", " "}});
  };
  const std::string text = unwrapped(Inspect(plan, InspectFormat::kText));
  EXPECT_THAT(text, HasSubstr("  mm         matmul[bf16]  a: S(0), b: B -> out: S(0)"));
  EXPECT_THAT(text, HasSubstr("  mm_grad    matmul[bf16]  a: S(0), b: S(0) -> out: P"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "\nprecision (--precision=bf16): 2 of 2 matrix products on bf16 operands with fp32 "
                        "accumulation; tensors: ",
                        tensors, " f32; activations kept for backward in bf16: 0, 0 B (0 B saved against f32; master "
                        "weights, gradients and optimizer state stay f32)\n")));
  // An activation kept in bf16 (compiler/passes/activation_storage_pass.h): a cast to a
  // bf16 tensor of 8 x 16 elements, 256 B instead of 512 B.
  proto::TensorDef* stored = plan.mutable_job()->add_tensors();
  stored->set_name("x/bf16");
  stored->add_shape(8);
  stored->add_shape(16);
  stored->set_dtype(proto::DTYPE_BF16);
  proto::OpDef* cast = plan.mutable_job()->add_ops();
  cast->set_name("x/bf16");
  cast->set_type("cast");
  (*cast->mutable_inputs())["x"] = "x";
  (*cast->mutable_outputs())["out"] = "x/bf16";
  EXPECT_THAT(unwrapped(Inspect(plan, InspectFormat::kText)),
              HasSubstr(absl::StrCat("tensors: 1 bf16, ", tensors,
                                     " f32; activations kept for backward in bf16: 1, 256 B (256 B saved against f32; "
                                     "master weights, gradients and optimizer state stay f32)\n")));
}

// AdamWOptimizer.variance_frozen_from as the adamw ops carry it: no line without it.
TEST(InspectTextTest, FrozenVarianceLine) {
  proto::Plan plan = SampleDataParallelPlan();
  proto::OpDef* update = nullptr;
  for (proto::OpDef& op : *plan.mutable_job()->mutable_ops()) {
    if (op.type() == "sgd_update") update = &op;
  }
  ASSERT_NE(update, nullptr);
  update->set_type("adamw_update");
  EXPECT_THAT(Inspect(plan, InspectFormat::kText), Not(HasSubstr("frozen")));
  (*update->mutable_attrs())["variance_frozen_from"].set_i(10);
  EXPECT_THAT(Inspect(plan, InspectFormat::kText),
              HasSubstr("\noptimizer (--adamw_freeze_variance_from): AdamW's second moment frozen from step 10 on "
                        "1 of 1 adamw ops (1-bit Adam's frozen variance)\n"));
}

TEST(InspectTextTest, RicherBoxingAndUnknownLowerBound) {
  const std::string text = Inspect(PlanWithRicherBoxing(), InspectFormat::kText);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  EXPECT_THAT(lines, ::testing::IsSupersetOf(std::vector<std::string>{
                         "boxings (2), 1.00 MiB (1052672 B) per iteration in all",
                         "  boxing 1: h, stage0 -> stage1, [S(0), S(1)] -> [S(0), B] from "
                         "cpu{0:0-1, 1:0-1}[2, 2] to cpu{0:0-3}",
                         "    step 0: all_gather on axis 1, [S(0), S(1)] -> [S(0), B], 1.50 KiB "
                         "(1536 B) per device, collective 1",
                         "    step 1: local_slice on axis 0, - -> -, 0 B per device, local",
                         "    bytes per iteration: 1.00 MiB (1048576 B)",
                         "    compression: fp8_e4m3, block size 128",
                         "    sparsity: rows, at most 1000 rows per device",
                         "    reason: -",
                         "    memory: peak 30.00 KiB (30720 B), lower bound 0 B, ratio n/a",
                         "    collective order: 0 all_reduce(w_grad), 1 all_gather(h)",
                     }))
      << text;
}

TEST(InspectTextTest, OutputDoesNotDependOnMapInsertionOrder) {
  proto::Plan reordered = SampleDataParallelPlan();
  auto* inputs = reordered.mutable_op_sbps(0)->mutable_signature()->mutable_inputs();
  const proto::NdSbp a = inputs->at("a");
  inputs->erase("a");
  (*inputs)["a"] = a;  // now inserted after "b"
  EXPECT_EQ(Inspect(reordered, InspectFormat::kText),
            Inspect(SampleDataParallelPlan(), InspectFormat::kText));
}

google::protobuf::Struct ParseJson(const std::string& json) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return parsed;
}

TEST(InspectJsonTest, ParsesBackWithTheSameContent) {
  const google::protobuf::Struct json =
      ParseJson(Inspect(SampleDataParallelPlan(), InspectFormat::kJson));
  const auto& top = json.fields();
  EXPECT_EQ(top.at("format_version").number_value(), 2);
  EXPECT_EQ(top.at("job").string_value(), "matmul_dp");
  EXPECT_EQ(top.at("cluster").struct_value().fields().at("inter_node_gb_per_s").number_value(),
            12.5);
  const auto& ops = top.at("ops").list_value().values();
  ASSERT_EQ(ops.size(), 4);
  const auto& mm = ops[0].struct_value().fields();
  EXPECT_EQ(mm.at("type").string_value(), "matmul");
  EXPECT_EQ(mm.at("inputs").struct_value().fields().at("a").string_value(), "S(0)");
  EXPECT_EQ(mm.at("placement").string_value(), "cpu{0:0-1}");
  const auto& boxing = top.at("boxings").list_value().values(0).struct_value().fields();
  EXPECT_EQ(boxing.at("src_sbp").string_value(), "P");
  EXPECT_EQ(boxing.at("dst_sbp").string_value(), "B");
  EXPECT_EQ(boxing.at("bytes_per_iter").number_value(), 4096);
  EXPECT_EQ(
      boxing.at("steps").list_value().values(0).struct_value().fields().at("kind").string_value(),
      "all_reduce");
  const auto& devices = top.at("devices").list_value().values();
  ASSERT_EQ(devices.size(), 2);
  const auto& device = devices[1].struct_value().fields();
  EXPECT_EQ(device.at("device").string_value(), "0:1");
  EXPECT_EQ(device.at("register_bytes").number_value(), 30720);
  EXPECT_EQ(device.at("persistent_bytes").number_value(), 2048);  // w
  EXPECT_EQ(device.at("peak_to_lower_bound").number_value(), 1.5);
  EXPECT_EQ(device.at("actors_by_kind").struct_value().fields().at("compute").number_value(), 4);
  EXPECT_EQ(device.at("collective_order").list_value().values_size(), 1);
}

TEST(InspectJsonTest, KeysComeInTheDocumentedOrder) {
  const std::string json = Inspect(SampleDataParallelPlan(), InspectFormat::kJson);
  const std::vector<std::string> top_keys = {
      "\n  \"format_version\"",        "\n  \"job\"",     "\n  \"cluster\"",     "\n  \"ops\"",
      "\n  \"boxing_bytes_per_iter\"", "\n  \"boxings\"", "\n  \"num_devices\"", "\n  \"devices\""};
  size_t previous = 0;
  for (const std::string& key : top_keys) {
    const size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GT(at, previous) << key;
    previous = at;
  }
  EXPECT_THAT(json, HasSubstr("\"peak_to_lower_bound\": 1.5,\n"));
}

// Plan.sbp_search as --sbp_search records it: no line or key without it.
TEST(InspectTextTest, SbpSearchLine) {
  proto::Plan plan = SampleDataParallelPlan();
  EXPECT_THAT(Inspect(plan, InspectFormat::kText), Not(HasSubstr("sbp search")));
  EXPECT_THAT(Inspect(plan, InspectFormat::kJson), Not(HasSubstr("sbp_search")));
  proto::SbpSearchRecord& search = *plan.mutable_sbp_search();
  search.set_moved_ops(28);
  search.set_rounds(4);
  search.set_greedy_seconds(0.01141);
  search.set_searched_seconds(0.0107);
  EXPECT_THAT(Inspect(plan, InspectFormat::kText),
              HasSubstr("\nsbp search: 28 ops moved off the greedy choice in 4 rounds; modelled boxing + kernel "
                        "seconds summed over the ops 11.41 ms greedy -> 10.7 ms searched\n"));
  const google::protobuf::Struct json = ParseJson(Inspect(plan, InspectFormat::kJson));
  const google::protobuf::Struct& record = json.fields().at("sbp_search").struct_value();
  EXPECT_EQ(record.fields().at("moved_ops").number_value(), 28);
  EXPECT_EQ(record.fields().at("rounds").number_value(), 4);
  EXPECT_EQ(record.fields().at("greedy_seconds").number_value(), 0.01141);
  EXPECT_EQ(record.fields().at("searched_seconds").number_value(), 0.0107);
  EXPECT_EQ(record.fields().at("composed_blocks").number_value(), 0);
  EXPECT_THAT(Inspect(plan, InspectFormat::kText), Not(HasSubstr("identical blocks")));
  // Identical blocks searched once (compiler/passes/identical_blocks.h).
  search.set_block_classes(1);
  search.set_composed_blocks(46);
  EXPECT_THAT(Inspect(plan, InspectFormat::kText),
              HasSubstr("10.7 ms searched\n  identical blocks searched once: 1 class(es), 46 block(s) took the "
                        "moves of their class's searched block\n"));
  const google::protobuf::Struct composed = ParseJson(Inspect(plan, InspectFormat::kJson));
  EXPECT_EQ(composed.fields().at("sbp_search").struct_value().fields().at("block_classes").number_value(), 1);
  EXPECT_EQ(composed.fields().at("sbp_search").struct_value().fields().at("composed_blocks").number_value(), 46);
}

TEST(InspectJsonTest, OneDeviceAndNullsAndEscaping) {
  proto::Plan plan = PlanWithRicherBoxing();
  plan.mutable_boxings(0)->set_reason("needs \"B\"\nnow");
  const google::protobuf::Struct json = ParseJson(Inspect(plan, InspectFormat::kJson, 1));
  const auto& devices = json.fields().at("devices").list_value().values();
  ASSERT_EQ(devices.size(), 1);
  const auto& device = devices[0].struct_value().fields();
  EXPECT_EQ(device.at("index").number_value(), 1);
  EXPECT_EQ(device.at("peak_to_lower_bound").kind_case(), google::protobuf::Value::kNullValue);
  const auto& boxings = json.fields().at("boxings").list_value().values();
  EXPECT_EQ(boxings[0].struct_value().fields().at("reason").string_value(), "needs \"B\"\nnow");
  const auto& rich = boxings[1].struct_value().fields();
  EXPECT_EQ(rich.at("tensor_shape").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_EQ(rich.at("steps")
                .list_value()
                .values(1)
                .struct_value()
                .fields()
                .at("collective_id")
                .kind_case(),
            google::protobuf::Value::kNullValue);
  EXPECT_EQ(rich.at("compression").struct_value().fields().at("kind").string_value(), "fp8_e4m3");
}

TEST(InspectDotTest, LogicalGraph) {
  const std::string dot = Inspect(SampleDataParallelPlan(), InspectFormat::kDot);
  EXPECT_EQ(dot.rfind("digraph \"matmul_dp\" {\n", 0), 0u) << dot;
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  for (
      const char* line : {
          R"dot(  "op:mm" [shape=ellipse, label="mm\nmatmul\ncpu{0:0-1}"];)dot",
          R"dot(  "tensor:x" [shape=invhouse, label="x\n[64, 32] f32\ndata source"];)dot",
          R"dot(  "tensor:w" [shape=cylinder, label="w\n[32, 16] f32\nvariable"];)dot",
          R"dot(  "boxing:0" [shape=box, style="filled,bold", fillcolor="#ffe08a", label="boxing 0\nall_reduce\nP -> B\n4.00 KiB/iter"];)dot",
          R"dot(  "tensor:x" -> "op:mm" [label="x\nS(0)"];)dot",
          R"dot(  "op:mm" -> "op:loss_grad" [label="y\nS(0)"];)dot",
          R"dot(  "op:mm_grad" -> "boxing:0" [label="w_grad\nP"];)dot",
          R"dot(  "boxing:0" -> "op:sgd" [label="w_grad\nB"];)dot",
      }) {
    EXPECT_THAT(dot, HasSubstr(std::string(line) + "\n"));
  }
  // The boxed edge is drawn through the boxing only.
  EXPECT_THAT(dot, Not(HasSubstr(R"dot("op:mm_grad" -> "op:sgd")dot")));
}

TEST(InspectDotTest, DeviceActorGraph) {
  const std::string dot = Inspect(SampleDataParallelPlan(), InspectFormat::kDot, 1);
  EXPECT_EQ(dot.rfind("digraph \"device 1 (0:1)\" {\n", 0), 0u) << dot;
  for (
      const char* line : {
          R"dot(  "actor:12" [shape=box, style=rounded, label="12 compute\nmm"];)dot",
          R"dot(  "actor:15" [shape=box, style="filled,bold", fillcolor="#ffe08a", label="15 boxing\nw_grad all_reduce\ncollective 0 all_reduce\n(communication thread)"];)dot",
          // Register ids are per device (0-6 on each), actor ids plan-wide.
          R"dot(  "actor:10" -> "actor:12" [label="r0 x\n[32, 32] f32\n4.00 KiB x 2"];)dot",
          R"dot(  "actor:10" -> "actor:14" [label="r0 x\n[32, 32] f32\n4.00 KiB x 2"];)dot",
          R"dot(  "actor:11" -> "actor:12" [label="r2 w\n[32, 16] f32\n2.00 KiB x 1"];)dot",
          R"dot(  "actor:14" -> "actor:15" [label="r5 w_grad\n[32, 16] f32\n2.00 KiB x 2"];)dot",
      }) {
    EXPECT_THAT(dot, HasSubstr(std::string(line) + "\n"));
  }
  EXPECT_THAT(dot, Not(HasSubstr("\"actor:2\"")));  // device 0's actors stay out
  EXPECT_THAT(dot, HasSubstr(R"dot(  "actor:10" -> "actor:13" [label="r1 t)dot"));
  EXPECT_THAT(dot, Not(::testing::ContainsRegex("label=\"r1[0-9] ")));  // no r10-r16 now
}

TEST(InspectDotTest, ForeignActorsAndUnconsumedRegistersAndQuotes) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_registers(0)->add_consumer_actors(12);
  plan.mutable_devices(0)->mutable_registers(6)->clear_consumer_actors();
  plan.mutable_devices(0)->mutable_actors(0)->set_name("say \"hi\"");
  const std::string dot = Inspect(plan, InspectFormat::kDot, 0);
  EXPECT_THAT(
      dot,
      HasSubstr(
          R"dot(  "actor:12" [shape=box, style=dashed, label="12 compute\nmm\non device 1 (0:1)"];)dot"));
  EXPECT_THAT(dot, HasSubstr(R"dot(  "actor:0" -> "actor:12" [label="r0 x)dot"));
  EXPECT_THAT(dot, HasSubstr(R"dot(  "register:6" [shape=point];)dot"));
  EXPECT_THAT(dot, HasSubstr(R"dot(  "actor:5" -> "register:6" [label="r6 w_grad)dot"));
  EXPECT_THAT(dot, HasSubstr(R"dot(label="0 data_source\nsay \"hi\""];)dot"));
}

TEST(InspectTest, RefusesWhatTheCheckRefuses) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(2)->add_consumed_registers(9);
  EXPECT_EQ(InspectPlan(plan, {}).status().message(),
            "device 0 (0:0) actor 2 'mm' consumes register 9, which device 0 does not define");
  EXPECT_EQ(InspectPlan(SampleDataParallelPlan(), {InspectFormat::kDot, 2}).status().message(),
            "--device='2' is out of range; valid: 0..1 (or a node:device id: 0:0, 0:1)");
}

TEST(InspectTest, FlagParsing) {
  EXPECT_EQ(ParseInspectFormat("json").value(), InspectFormat::kJson);
  EXPECT_EQ(ParseInspectFormat("xml").status().message(),
            "--format='xml' is not a format; valid: text, json, dot, html");
  const proto::Plan plan = SampleDataParallelPlan();
  EXPECT_EQ(ParseDeviceFlag("", plan).value(), std::nullopt);
  EXPECT_EQ(ParseDeviceFlag("1", plan).value(), 1);
  EXPECT_EQ(ParseDeviceFlag("0:1", plan).value(), 1);
  EXPECT_EQ(ParseDeviceFlag("-1", plan).status().message(),
            "--device='-1' is out of range; valid: 0..1 (or a node:device id: 0:0, 0:1)");
  EXPECT_EQ(ParseDeviceFlag("1:0", plan).status().message(),
            "--device='1:0' names no device of the plan; valid: 0..1 (or a node:device id: "
            "0:0, 0:1)");
  EXPECT_EQ(ParseDeviceFlag("gpu0", plan).status().message(),
            "--device='gpu0' is not a device index or node:device id; valid: 0..1 (or a "
            "node:device id: 0:0, 0:1)");
  EXPECT_EQ(ParseDeviceFlag("0", proto::Plan()).status().message(),
            "--device='0' is out of range; valid: none (the plan has no devices)");
}

}  // namespace
}  // namespace oneflow::cli
