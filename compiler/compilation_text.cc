// CompilationToText: the compiler's state as text, for dumps after a pass
// (CompileOptions::dump_after) and the per-pass tests (compiler/passes/pass_test_util.h).
// Each part of the state prints once a pass has filled it, so the text after a pass
// differs from the text before it exactly where the pass wrote.
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "compiler/compilation.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "oneflow_core/sbp.h"

namespace oneflow {
namespace {

// One physical node of a device program: what it runs and the per-device shapes it
// produces.
std::string NodeText(const Compilation& compilation, const PhysicalNode& node) {
  const LogicalGraph& graph = compilation.graph;
  std::string what;
  switch (node.kind) {
    case PhysicalNode::Kind::kDataSource:
      what = absl::StrCat("source ", compilation.job.data_sources(node.index).name());
      break;
    case PhysicalNode::Kind::kVariable:
      what = absl::StrCat("variable %", graph.tensors[node.index].name);
      break;
    case PhysicalNode::Kind::kCompute:
      what = absl::StrCat("op %", graph.ops[node.index].name);
      break;
    case PhysicalNode::Kind::kBoxingStep:
      what = absl::StrCat("boxing#", node.index, ".", node.step);
      break;
    case PhysicalNode::Kind::kSink:
      what = absl::StrCat("sink %", graph.tensors[node.index].name);
      break;
    case PhysicalNode::Kind::kBucket:
      what = absl::StrCat("bucket#", node.index);
      break;
  }
  if (node.output_shapes.empty()) return what;
  return absl::StrCat(what, ": ", absl::StrJoin(node.output_shapes, " ", [](std::string* out, const Shape& shape) {
                        absl::StrAppend(out, shape.ToString());
                      }));
}

// "r1 r2", or "-" for none.
std::string IdList(absl::string_view prefix, const google::protobuf::RepeatedField<int64_t>& ids) {
  if (ids.empty()) return "-";
  return absl::StrJoin(ids, " ", [prefix](std::string* out, int64_t id) { absl::StrAppend(out, prefix, id); });
}

// A proto enum's name without its prefix, in lower case ("ACTOR_COMPUTE" -> "compute").
std::string EnumText(const std::string& name, absl::string_view prefix) {
  return absl::AsciiStrToLower(absl::StripPrefix(name, prefix));
}

// The actors and registers of one device (actor_graph), with what memory_planning
// adds: register blocks and offsets, the memory blocks, control predecessors.
void AppendDevicePlanText(const proto::DevicePlan& device, std::string* text) {
  const std::string where = absl::StrCat(device.device().node(), ":", device.device().device());
  for (const proto::ActorDef& actor : device.actors()) {
    absl::StrAppend(text, "actor ", where, " #", actor.id(), " ", actor.name(), " ",
                    EnumText(proto::ActorKind_Name(actor.kind()), "ACTOR_"));
    if (actor.thread() != proto::THREAD_COMPUTE) {
      absl::StrAppend(text, " thread=", EnumText(proto::ThreadKind_Name(actor.thread()), "THREAD_"));
    }
    absl::StrAppend(text, " reads ", IdList("r", actor.consumed_registers()), " writes ",
                    IdList("r", actor.produced_registers()));
    if (actor.control_predecessors_size() > 0) {
      absl::StrAppend(text, " after ", IdList("#", actor.control_predecessors()));
    }
    if (actor.per_iteration()) absl::StrAppend(text, " per_iteration");
    for (const proto::KernelDef& kernel : actor.kernels()) {
      if (kernel.workspace_bytes() > 0) absl::StrAppend(text, " workspace=", kernel.workspace_bytes(), " B");
    }
    absl::StrAppend(text, "\n");
  }
  for (const proto::RegisterDef& reg : device.registers()) {
    absl::StrAppend(text, "register ", where, " r", reg.id(), " ", reg.tensor(), " ", reg.size_bytes(), " B x",
                    reg.count(), " from #", reg.producer_actor(), " to ", IdList("#", reg.consumer_actors()));
    if (reg.persistent()) absl::StrAppend(text, " persistent");
    if (reg.has_alias_of()) absl::StrAppend(text, " view of r", reg.alias_of(), " +", reg.alias_offset_bytes());
    // Placed by memory_planning, which also adds the device's memory blocks.
    if (device.memory_blocks_size() > 0) {
      absl::StrAppend(text, " at block ", reg.memory_block(), " offset ", reg.offset());
    }
    absl::StrAppend(text, "\n");
  }
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    absl::StrAppend(text, "block ", where, " #", block.id(),
                    block.persistent() ? " persistent " : block.workspace() ? " workspace " : " arena ",
                    block.size_bytes(), " B slot_stride=", block.slot_stride_bytes(),
                    block.copies() > 0 ? absl::StrCat(" copies=", block.copies()) : "", "\n");
  }
}

// What plan_emission adds to the plan: the version, the layouts of inputs and
// variables, the boxings with their collectives, the bytes on the wire, the seal.
void AppendEmittedPlanText(const proto::Plan& plan, std::string* text) {
  if (plan.format_version() == 0) return;
  absl::StrAppend(text, "plan format_version=", plan.format_version(), " nodes=", plan.cluster().num_nodes(),
                  " devices_per_node=", plan.cluster().devices_per_node(), " job_ops=", plan.job().ops_size(),
                  " op_sbps=", plan.op_sbps_size(), " ", plan.checksum() != 0 ? "sealed" : "unsealed", "\n");
  for (const proto::TensorLayout& layout : plan.tensor_layouts()) {
    std::string sbp = "?";
    absl::StatusOr<NdSbp> parsed = NdSbp::FromProto(layout.sbp());
    if (parsed.ok()) sbp = parsed->ToString();
    absl::StrAppend(text, "layout %", layout.tensor(), " ", sbp, "\n");
  }
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    absl::StrAppend(text, "emitted boxing#", boxing.id(), " %", boxing.tensor(), " ", boxing.producer_op(), " -> ",
                    boxing.consumer_op().empty() ? "sink" : boxing.consumer_op(), ":",
                    absl::StrJoin(boxing.steps(), ",", [](std::string* out, const proto::BoxingStepDef& step) {
                      absl::StrAppend(out, " collective ", step.collective_id(),
                                      step.has_bucket_id() ? absl::StrCat(" (bucket#", step.bucket_id(), ")") : "");
                    }),
                    " ", boxing.bytes_per_iter(), " B/iter\n");
  }
  for (const proto::DevicePlan& device : plan.devices()) {
    absl::StrAppend(text, "wire ", device.device().node(), ":", device.device().device(),
                    " sent=", device.bytes_sent_per_iter(), " received=", device.bytes_received_per_iter(), "\n");
  }
}

}  // namespace

std::string CompilationToText(const Compilation& compilation) {
  const LogicalGraph& graph = compilation.graph;
  std::string text;
  auto tensor_text = [&](int64_t t) {
    const LogicalTensor& tensor = graph.tensors[t];
    return absl::StrCat("%", tensor.name, ": ", tensor.type.ToString(),
                        tensor.sbp_chosen ? absl::StrCat(" ", tensor.sbp.ToString()) : "");
  };
  for (size_t p = 0; p < graph.placements.size(); ++p) {
    absl::StrAppend(&text, "placement #", p, " ", graph.placements[p].ToString(), "\n");
  }
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const LogicalTensor& tensor = graph.tensors[t];
    if (tensor.kind == LogicalTensor::Kind::kOpOutput) continue;
    absl::StrAppend(&text, tensor.kind == LogicalTensor::Kind::kInput ? "input " : "variable ",
                    tensor_text(t), " @", tensor.placement, "\n");
  }
  absl::flat_hash_map<std::string, const proto::OpDef*> op_defs;
  for (const proto::OpDef& def : compilation.job.ops()) op_defs[def.name()] = &def;
  for (const LogicalOp& op : graph.ops) {
    std::vector<std::string> args;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      std::string arg = absl::StrCat(op.definition->inputs[k], "=%", graph.tensors[op.inputs[k]].name);
      if (!op.input_sbps.empty()) absl::StrAppend(&arg, ":", op.input_sbps[k].ToString());
      if (!op.input_boxings.empty() && op.input_boxings[k] >= 0) {
        absl::StrAppend(&arg, " via boxing#", op.input_boxings[k]);
      }
      args.push_back(std::move(arg));
    }
    std::vector<std::string> outs;
    for (int64_t t : op.outputs) outs.push_back(tensor_text(t));
    // Ops without outputs (optimizer updates) are named by the op itself.
    if (outs.empty()) outs.push_back(absl::StrCat("op ", op.name));
    // The precision pass's mark (compiler/passes/precision_pass.h): shown only where set,
    // so fp32 dumps read as before. Looked up in the job by name: after some passes
    // LogicalOp::def is not to be followed here.
    std::string precision;
    const auto def = op_defs.find(op.name);
    if (def != op_defs.end()) {
      const auto compute = def->second->attrs().find("compute_dtype");
      if (compute != def->second->attrs().end()) precision = absl::StrCat(" compute=", compute->second.s());
    }
    absl::StrAppend(&text, absl::StrJoin(outs, ", "), " = ", op.type, "(",
                    absl::StrJoin(args, ", "), ")", precision, " @", op.placement, "\n");
  }
  for (const Boxing& boxing : compilation.boxings) {
    const LogicalTensor& tensor = graph.tensors[boxing.tensor];
    absl::StrAppend(&text, "boxing#", boxing.id, " %", tensor.name, " ", tensor.sbp.ToString(),
                    " @", tensor.placement, " -> ", boxing.dst_sbp.ToString(), " @",
                    boxing.dst_placement, ": ",
                    absl::StrJoin(boxing.plan.steps, ", ",
                                  [](std::string* out, const BoxingStep& step) {
                                    absl::StrAppend(out, BoxingKindName(step.kind));
                                    if (step.hierarchy_axis >= 0) {
                                      absl::StrAppend(out, "[axis ", step.hierarchy_axis, "]");
                                    }
                                    if (step.cross_node_compression.compressed()) {
                                      absl::StrAppend(out, "{", CompressionChoiceText(step.compression), " in-node, ",
                                                      CompressionChoiceText(step.cross_node_compression),
                                                      " cross-node}");
                                    } else if (step.compression.compressed()) {
                                      absl::StrAppend(out, "{", CompressionChoiceText(step.compression), "}");
                                    }
                                  }),
                    " (", boxing.plan.bytes_per_device, " B/device)\n");
  }
  for (const GradientBucket& bucket : compilation.buckets) {
    absl::StrAppend(&text, "bucket#", bucket.id, " level ", bucket.level, " ", BoxingKindName(bucket.kind), "[axis ",
                    bucket.hierarchy_axis,
                    "] @", bucket.placement, " after ",
                    bucket.after_op >= 0 ? absl::StrCat("%", graph.ops[bucket.after_op].name) : "start", ": ",
                    absl::StrJoin(bucket.members, ", ",
                                  [](std::string* out, const std::pair<int64_t, int64_t>& member) {
                                    absl::StrAppend(out, "boxing#", member.first, ".", member.second);
                                  }),
                    " (", bucket.size_bytes, " B)",
                    bucket.limit_bytes != BucketBytesLimit(compilation.options.bucket_mb)
                        ? absl::StrCat(" limit ", bucket.limit_bytes, " B")
                        : std::string(),
                    "\n");
  }
  // The pipeline schedule (pipeline_schedule pass), only with stages.
  const PipelineSchedulePlan& schedule = compilation.pipeline_schedule;
  if (!schedule.device_stage.empty()) {
    absl::StrAppend(&text, "pipeline_schedule ", proto::PipelineSchedule_Name(schedule.schedule),
                    " virtual_stages=", schedule.virtual_stages, "\n");
    for (size_t d = 0; d < schedule.device_stage.size() && d < compilation.devices.size(); ++d) {
      absl::StrAppend(&text, "stage device ", compilation.devices[d].device.node, ":",
                      compilation.devices[d].device.device, " stage=", schedule.device_stage[d],
                      d < compilation.device_register_count.size()
                          ? absl::StrCat(" slots=", compilation.device_register_count[d])
                          : "",
                      "\n");
    }
    for (size_t o = 0; o < schedule.op_act.size() && o < graph.ops.size(); ++o) {
      if (schedule.op_act[o] == proto::PIPELINE_ACT_UNSET) continue;
      absl::StrAppend(&text, "act ", proto::PipelineAct_Name(schedule.op_act[o]), " ", graph.ops[o].name, "\n");
    }
  }
  // The device programs (lowering), one line per node, before actor_graph turns them
  // into the plan's actors.
  for (const DeviceProgram& program : compilation.devices) {
    for (size_t n = 0; n < program.nodes.size(); ++n) {
      absl::StrAppend(&text, "node ", program.device.node, ":", program.device.device, " #", n, " ",
                      NodeText(compilation, program.nodes[n]), "\n");
    }
  }
  for (const proto::DevicePlan& device : compilation.plan.devices()) {
    absl::StrAppend(&text, "device ", device.device().node(), ":", device.device().device(),
                    " actors=", device.actors_size(), " registers=", device.registers_size(),
                    " collectives=", device.collective_order_size(),
                    " peak=", device.peak_bytes(), " lower_bound=", device.lower_bound_bytes(),
                    "\n");
  }
  for (const proto::DevicePlan& device : compilation.plan.devices()) AppendDevicePlanText(device, &text);
  AppendEmittedPlanText(compilation.plan, &text);
  return text;
}

}  // namespace oneflow
