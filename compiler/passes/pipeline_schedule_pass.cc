#include "compiler/passes/pipeline_schedule_pass.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Which tensors hold one value per micro-batch: data-source inputs and whatever is
// computed from them, except the accumulator's output (one value per iteration). An op
// without inputs acts per micro-batch, as actor_graph counts it.
std::vector<bool> PerMicroBatchTensors(const LogicalGraph& graph) {
  std::vector<bool> per_micro_batch(graph.tensors.size(), false);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    per_micro_batch[t] = graph.tensors[t].kind == LogicalTensor::Kind::kInput;
  }
  for (const LogicalOp& op : graph.ops) {
    bool any = op.inputs.empty();
    for (int64_t t : op.inputs) any = any || per_micro_batch[t];
    if (op.type == "accumulate") any = false;
    for (int64_t t : op.outputs) per_micro_batch[t] = any;
  }
  return per_micro_batch;
}

bool OpPerMicroBatch(const LogicalOp& op, const std::vector<bool>& per_micro_batch) {
  if (op.inputs.empty() || op.type == "accumulate") return true;
  for (int64_t t : op.inputs) {
    if (per_micro_batch[t]) return true;
  }
  return false;
}

// The forward ops (those the loss depends on), and for each the most placement changes on
// a forward path from it to the loss (-1 for the other ops).
std::vector<int64_t> ForwardHops(const LogicalGraph& graph) {
  std::vector<bool> needed(graph.tensors.size(), false);
  needed[graph.loss] = true;
  std::vector<int64_t> hops(graph.ops.size(), -1);
  std::vector<std::vector<int64_t>> consumers_of(graph.tensors.size());
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    for (int64_t t : graph.ops[o].inputs) consumers_of[t].push_back(static_cast<int64_t>(o));
  }
  for (size_t o = graph.ops.size(); o-- > 0;) {
    const LogicalOp& op = graph.ops[o];
    bool forward = false;
    for (int64_t t : op.outputs) forward = forward || needed[t];
    if (!forward) continue;
    hops[o] = 0;
    for (int64_t t : op.outputs) {
      for (int64_t c : consumers_of[t]) {
        if (hops[c] < 0) continue;
        hops[o] = std::max(hops[o], hops[c] + (graph.ops[c].placement != op.placement ? 1 : 0));
      }
    }
    for (int64_t t : op.inputs) needed[t] = true;
  }
  return hops;
}

// Each device's depth: the largest hops of a forward op on a placement holding it (-1
// for a device with no forward op).
std::vector<int64_t> DeviceDepths(const Compilation& compilation, const std::vector<int64_t>& hops) {
  const LogicalGraph& graph = compilation.graph;
  std::vector<int64_t> depth(graph.placements.size(), -1);
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    if (hops[o] >= 0) depth[graph.ops[o].placement] = std::max(depth[graph.ops[o].placement], hops[o]);
  }
  std::vector<int64_t> device_depth(compilation.devices.size(), -1);
  for (size_t p = 0; p < graph.placements.size(); ++p) {
    if (depth[p] < 0) continue;
    for (const DeviceId& device : graph.placements[p].devices()) {
      for (size_t d = 0; d < compilation.devices.size(); ++d) {
        if (compilation.devices[d].device == device) device_depth[d] = std::max(device_depth[d], depth[p]);
      }
    }
  }
  return device_depth;
}

// A cast of a forward op's output that no forward op reads: activation_storage's narrowing
// cast (compiler/passes/activation_storage_pass.h), placed right after the last forward
// reader of what it keeps so that the f32 tensor dies there. It is no ancestor of the loss,
// and nothing on another stage waits for it; as a W act ZB-H1 would defer it into the
// bubbles and keep the f32 tensor live for longer, so it acts with forward.
bool NarrowsForwardOutput(const LogicalGraph& graph, const LogicalOp& op, const std::vector<int64_t>& hops) {
  if (op.type != "cast" || op.inputs.empty()) return false;
  for (int64_t t : op.inputs) {
    const LogicalTensor& tensor = graph.tensors[t];
    if (tensor.kind != LogicalTensor::Kind::kOpOutput || hops[tensor.producer] < 0) return false;
  }
  return true;
}

// Per per-micro-batch op: forward (or a forward output's narrowing cast), B (an op of
// another placement is reachable from it through per-micro-batch ops: the previous stage
// waits for it) or W.
std::vector<proto::PipelineAct> OpActs(const LogicalGraph& graph, const std::vector<int64_t>& hops) {
  const std::vector<bool> per_micro_batch = PerMicroBatchTensors(graph);
  std::vector<std::vector<int64_t>> consumers_of(graph.tensors.size());
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    for (int64_t t : graph.ops[o].inputs) consumers_of[t].push_back(static_cast<int64_t>(o));
  }
  std::vector<bool> reaches_other(graph.ops.size(), false);
  std::vector<proto::PipelineAct> acts(graph.ops.size(), proto::PIPELINE_ACT_UNSET);
  for (size_t o = graph.ops.size(); o-- > 0;) {
    const LogicalOp& op = graph.ops[o];
    if (!OpPerMicroBatch(op, per_micro_batch)) continue;
    for (int64_t t : op.outputs) {
      for (int64_t c : consumers_of[t]) {
        if (!OpPerMicroBatch(graph.ops[c], per_micro_batch)) continue;
        reaches_other[o] = reaches_other[o] || graph.ops[c].placement != op.placement || reaches_other[c];
      }
    }
    acts[o] = hops[o] >= 0 || NarrowsForwardOutput(graph, op, hops) ? proto::PIPELINE_ACT_FORWARD
              : reaches_other[o]                                    ? proto::PIPELINE_ACT_BACKWARD_INPUT
                                                                    : proto::PIPELINE_ACT_BACKWARD_WEIGHT;
  }
  return acts;
}

// ZB-H1's W acts after every B act of the device in its program order, which is the actor
// order memory planning lays lifetimes out by: the W acts' inputs then stay live until
// the end of the stage's backward and no later B act reuses their bytes. In the order the
// ops came in (each weight gradient beside its input gradient), memory planning gave a
// later B's output the bytes of a W's input and made that B wait for the W (a reuse
// control edge), so the engine ran each W inside the chain of B acts the previous stage
// waits for: on 2 stages of one micro-batch every W of the last stage ran before its last
// B. The nodes moved: the W ops before the device's last B op, and every node before it
// that reads what they make (the boxings and buckets of their gradients); no B reads
// them (an op that did would reach the previous stage through it, and be B), so the
// order stays one that producers precede consumers in.
void DeferWeightGradients(const Compilation& compilation, DeviceProgram* program) {
  const LogicalGraph& graph = compilation.graph;
  const std::vector<proto::PipelineAct>& acts = compilation.pipeline_schedule.op_act;
  std::vector<PhysicalNode>& nodes = program->nodes;
  auto act_of = [&](const PhysicalNode& node) {
    return node.kind == PhysicalNode::Kind::kCompute && node.index >= 0 &&
                   static_cast<size_t>(node.index) < acts.size()
               ? acts[static_cast<size_t>(node.index)]
               : proto::PIPELINE_ACT_UNSET;
  };
  int64_t last_input_gradient = -1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (act_of(nodes[n]) == proto::PIPELINE_ACT_BACKWARD_INPUT) last_input_gradient = static_cast<int64_t>(n);
  }
  if (last_input_gradient < 0) return;  // the first stage: all of backward is W already
  std::vector<bool> deferred_tensor(graph.tensors.size(), false);
  auto made_by_deferred = [&](int64_t tensor) {
    return tensor >= 0 && static_cast<size_t>(tensor) < deferred_tensor.size() && deferred_tensor[tensor];
  };
  std::vector<PhysicalNode> kept, moved;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const PhysicalNode& node = nodes[n];
    bool defer = false;
    if (static_cast<int64_t>(n) < last_input_gradient) {
      switch (node.kind) {
        case PhysicalNode::Kind::kCompute: {
          defer = act_of(node) == proto::PIPELINE_ACT_BACKWARD_WEIGHT;
          for (int64_t input : graph.ops[node.index].inputs) defer = defer || made_by_deferred(input);
          if (defer) {
            for (int64_t output : graph.ops[node.index].outputs) deferred_tensor[output] = true;
          }
          break;
        }
        case PhysicalNode::Kind::kBoxingStep:
          defer = made_by_deferred(compilation.boxings[node.index].tensor);
          break;
        case PhysicalNode::Kind::kBucket:
          for (const auto& [boxing, step] : compilation.buckets[node.index].members) {
            defer = defer || made_by_deferred(compilation.boxings[boxing].tensor);
          }
          break;
        default:
          break;
      }
    }
    (defer ? moved : kept).push_back(node);
    if (static_cast<int64_t>(n) == last_input_gradient) {
      // The moved nodes go right after the last B, in their order.
      kept.insert(kept.end(), moved.begin(), moved.end());
      moved.clear();
    }
  }
  nodes = std::move(kept);
}

// ZB-H1's split of backward: each op's act kind, and every device's W ops after its B ops.
void SplitBackward(const std::vector<int64_t>& hops, Compilation* compilation) {
  compilation->pipeline_schedule.op_act = OpActs(compilation->graph, hops);
  for (DeviceProgram& program : compilation->devices) DeferWeightGradients(*compilation, &program);
}

// Bytes of one micro-batch's non-persistent outputs on each device (an upper bound of its
// activations: no reuse), and of its variables (persistent).
void DeviceBytes(const Compilation& compilation, std::vector<int64_t>* activation, std::vector<int64_t>* persistent) {
  const LogicalGraph& graph = compilation.graph;
  activation->assign(compilation.devices.size(), 0);
  persistent->assign(compilation.devices.size(), 0);
  for (size_t d = 0; d < compilation.devices.size(); ++d) {
    for (const PhysicalNode& node : compilation.devices[d].nodes) {
      if (node.kind == PhysicalNode::Kind::kVariable) {
        (*persistent)[d] += node.output_shapes[0].NumElements() * SizeOf(graph.tensors[node.index].type.dtype);
      } else if (node.kind == PhysicalNode::Kind::kCompute) {
        const LogicalOp& op = graph.ops[node.index];
        for (size_t k = 0; k < op.outputs.size() && k < node.output_shapes.size(); ++k) {
          (*activation)[d] += node.output_shapes[k].NumElements() * SizeOf(graph.tensors[op.outputs[k]].type.dtype);
        }
      }
    }
  }
}

}  // namespace

absl::string_view PipelineScheduleName(proto::PipelineSchedule schedule) {
  switch (schedule) {
    case proto::PIPELINE_SCHEDULE_INTERLEAVED:
      return "interleaved";
    case proto::PIPELINE_SCHEDULE_ZB_H1:
      return "zb";
    case proto::PIPELINE_SCHEDULE_AUTO:
      return "auto";
    default:
      return "1f1b";
  }
}

absl::StatusOr<proto::PipelineSchedule> ParsePipelineSchedule(absl::string_view name) {
  for (proto::PipelineSchedule schedule : {proto::PIPELINE_SCHEDULE_1F1B, proto::PIPELINE_SCHEDULE_INTERLEAVED,
                                           proto::PIPELINE_SCHEDULE_ZB_H1, proto::PIPELINE_SCHEDULE_AUTO}) {
    if (PipelineScheduleName(schedule) == name) return schedule;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--pp_schedule=", name, " is not one of: 1f1b, interleaved, zb, auto"));
}

absl::StatusOr<bool> PipelineSchedulePass::Run(Compilation* compilation) {
  const CompileOptions& options = compilation->options;
  const LogicalGraph& graph = compilation->graph;
  PipelineSchedulePlan& plan = compilation->pipeline_schedule;
  plan = PipelineSchedulePlan{};
  compilation->device_register_count.assign(compilation->devices.size(), options.register_count);
  const int64_t v = options.virtual_stages;
  if (v < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--virtual_stages=", v, " must be >= 1"));
  }
  if (options.pp_schedule == proto::PIPELINE_SCHEDULE_INTERLEAVED && v < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--pp_schedule=interleaved needs --virtual_stages >= 2 chunks per stage (got --virtual_stages=", v, ")"));
  }
  if (v > 1 && (options.pp_schedule == proto::PIPELINE_SCHEDULE_1F1B ||
                options.pp_schedule == proto::PIPELINE_SCHEDULE_ZB_H1)) {
    return absl::InvalidArgumentError(absl::StrCat("--virtual_stages=", v, " is for --pp_schedule=interleaved (or auto), not --pp_schedule=",
                                                   PipelineScheduleName(options.pp_schedule)));
  }
  if (graph.placements.size() <= 1 || graph.loss < 0) return false;
  const std::vector<int64_t> hops = ForwardHops(graph);
  const std::vector<int64_t> depths = DeviceDepths(*compilation, hops);
  const int64_t deepest = *std::max_element(depths.begin(), depths.end());
  if (deepest <= 0) return false;
  int64_t stages = 0;  // Placements with forward ops.
  {
    std::vector<bool> forward_placement(graph.placements.size(), false);
    for (size_t o = 0; o < graph.ops.size(); ++o) {
      if (hops[o] >= 0) forward_placement[graph.ops[o].placement] = true;
    }
    stages = std::count(forward_placement.begin(), forward_placement.end(), true);
  }
  if (v > 1 && deepest + 1 != v * stages) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--virtual_stages=", v, ": the model's forward path crosses ", deepest, " stage boundaries over ", stages,
        " stages, but ", v, " chunks per stage need ", v * stages - 1,
        "; build the model with the same --virtual_stages (ParallelFlags::virtual_stages)"));
  }
  plan.device_stage.assign(depths.size(), -1);
  for (size_t d = 0; d < depths.size(); ++d) {
    if (depths[d] >= 0) plan.device_stage[d] = deepest - depths[d];
  }
  const int64_t m = compilation->job.micro_batches();
  if (m <= 1) {
    // One micro-batch needs no slots beyond the default, but ZB-H1's act kinds still take
    // each stage's weight gradients (W) off the path: they run beside the previous stage's
    // B instead of before its input gradient is sent. Only when asked for: AUTO keeps
    // 1F1B here, as before.
    if (options.pp_schedule == proto::PIPELINE_SCHEDULE_ZB_H1) {
      plan.schedule = proto::PIPELINE_SCHEDULE_ZB_H1;
      compilation->job.set_pipeline_schedule(plan.schedule);
      SplitBackward(hops, compilation);
    }
    return true;
  }
  for (size_t d = 0; d < depths.size(); ++d) {
    if (depths[d] >= 0) compilation->device_register_count[d] = depths[d] + 1;
  }
  proto::PipelineSchedule schedule = options.pp_schedule;
  if (schedule == proto::PIPELINE_SCHEDULE_AUTO) {
    // The chunks are the model's: interleaved is the only schedule of an interleaved
    // layout; otherwise ZB-H1 has 1F1B's memory and a smaller bubble.
    schedule = v > 1 ? proto::PIPELINE_SCHEDULE_INTERLEAVED : proto::PIPELINE_SCHEDULE_ZB_H1;
    if (options.device_memory > 0) {
      std::vector<int64_t> activation, persistent;
      DeviceBytes(*compilation, &activation, &persistent);
      for (size_t d = 0; d < depths.size(); ++d) {
        const int64_t need = persistent[d] + compilation->device_register_count[d] * activation[d];
        if (need > options.device_memory) {
          const DeviceId& device = compilation->devices[d].device;
          return absl::ResourceExhaustedError(absl::StrCat(
              "--pp_schedule=auto: no schedule fits --device_memory=", options.device_memory, " bytes: device ",
              device.node, ":", device.device, " (pipeline stage ", plan.device_stage[d], ") needs about ", need,
              " bytes with ", PipelineScheduleName(schedule), " (", compilation->device_register_count[d],
              " micro-batches of ", activation[d], " activation bytes, ", persistent[d],
              " persistent); use more stages, more --micro_batches, or --recompute"));
        }
      }
    }
  }
  plan.schedule = schedule;
  plan.virtual_stages = schedule == proto::PIPELINE_SCHEDULE_INTERLEAVED ? v : 1;
  if (schedule != proto::PIPELINE_SCHEDULE_1F1B) compilation->job.set_pipeline_schedule(schedule);
  if (plan.virtual_stages > 1) compilation->job.set_virtual_stages(plan.virtual_stages);
  if (schedule == proto::PIPELINE_SCHEDULE_ZB_H1) {
    SplitBackward(hops, compilation);
  } else {
    // 1F1B's and the interleaved schedule's act kinds too, the program order kept: the
    // engine defers W acts only under ZB-H1 (the job's schedule), and under every schedule
    // runs a ready forward act before any other act of its thread, so a stage hands the
    // next its activation as soon as the schedule lets it instead of interleaving that
    // forward op by op with a backward whose gradient arrived meanwhile (traced on 2
    // emulated hosts, the gpt at pp=2 M=8: the last stage idled 2.2 ms an iteration
    // waiting for an activation delayed so; docs/pipeline.md, "Forward first").
    compilation->pipeline_schedule.op_act = OpActs(compilation->graph, hops);
  }
  return true;
}

}  // namespace oneflow
