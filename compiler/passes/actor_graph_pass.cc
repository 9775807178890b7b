#include "compiler/passes/actor_graph_pass.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "compiler/passes/per_iteration.h"
#include "compiler/passes/view_kernel.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/run_tasks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Which tensors hold one value per iteration (PerIterationTensors), computed once for
// every device.
struct IterationMarks {
  std::vector<bool> accumulated;
  std::vector<bool> per_iteration;
};

// An actor of a boxing step (Compilation::boxing_step_actors) as one device's builder
// found it: boxing id, step, actor index on the device.
struct StepActor {
  int64_t boxing;
  int64_t step;
  int actor;
};

// Builds one device's actors and registers into `plan`. Devices are built on separate
// threads: a builder reads the compilation and writes only its device's plan and its own
// list of step actors, which the pass merges in device order.
class DeviceActorBuilder {
 public:
  DeviceActorBuilder(const Compilation& compilation, const IterationMarks& marks, int32_t device_index,
                     int64_t first_actor_id, proto::DevicePlan* plan)
      : compilation_(compilation),
        graph_(compilation.graph),
        device_index_(device_index),
        next_actor_id_(first_actor_id),
        plan_(*plan),
        tensor_register_(graph_.tensors.size(), -1),
        boxing_register_(compilation.boxings.size(), -1),
        op_input_registers_(graph_.ops.size()),
        accumulated_(marks.accumulated),
        per_iteration_(marks.per_iteration) {
    const DeviceId& device = compilation.devices[device_index].device;
    plan_.mutable_device()->set_node(device.node);
    plan_.mutable_device()->set_device(device.device);
  }

  // The boxing steps' actors this device has, in the order they were built.
  std::vector<StepActor> TakeStepActors() { return std::move(step_actors_); }

  absl::Status Run() {
    const DeviceProgram& program = compilation_.devices[device_index_];
    plan_.mutable_actors()->Reserve(static_cast<int>(program.nodes.size()));
    size_t registers = 0;  // One per output, and a bucket's register beside its members' views.
    for (const PhysicalNode& node : program.nodes) {
      registers += node.output_shapes.size() + (node.kind == PhysicalNode::Kind::kBucket ? 1 : 0);
    }
    plan_.mutable_registers()->Reserve(static_cast<int>(registers));
    const std::vector<PhysicalNode>& nodes = program.nodes;
    for (size_t n = 0; n < nodes.size(); ++n) {
      // The shapes lie apart in memory: fetch those of the nodes just ahead (their
      // lists first, then the dimensions) while this one is built.
      if (n + 4 < nodes.size()) __builtin_prefetch(nodes[n + 4].output_shapes.data());
      if (n + 2 < nodes.size()) {
        for (const Shape& shape : nodes[n + 2].output_shapes) __builtin_prefetch(shape.dims().data());
      }
      const PhysicalNode& node = nodes[n];
      switch (node.kind) {
        case PhysicalNode::Kind::kDataSource:
          AddDataSource(node);
          break;
        case PhysicalNode::Kind::kVariable:
          AddVariable(node);
          break;
        case PhysicalNode::Kind::kCompute:
          OF_RETURN_IF_ERROR(AddCompute(node));
          break;
        case PhysicalNode::Kind::kBoxingStep:
          OF_RETURN_IF_ERROR(AddBoxingStep(node));
          break;
        case PhysicalNode::Kind::kSink:
          OF_RETURN_IF_ERROR(AddSink(node));
          break;
        case PhysicalNode::Kind::kBucket:
          OF_RETURN_IF_ERROR(AddBucket(node));
          break;
      }
    }
    AddUpdateOrdering();
    return absl::OkStatus();
  }

 private:
  proto::ActorDef* NewActor(std::string name, proto::ActorKind kind, proto::ThreadKind thread) {
    proto::ActorDef* actor = plan_.add_actors();
    actor->set_id(next_actor_id_++);
    actor->set_name(std::move(name));
    actor->set_kind(kind);
    actor->set_thread(thread);
    actor->set_collective_id(-1);
    return actor;
  }

  int64_t NewRegister(proto::ActorDef* producer, std::string tensor, const Shape& shape, DType dtype,
                      bool persistent) {
    proto::RegisterDef* reg = plan_.add_registers();
    const int64_t id = plan_.registers_size() - 1;
    reg->set_id(id);
    reg->set_tensor(std::move(tensor));
    reg->set_producer_actor(producer->id());
    reg->set_count(persistent ? 1 : compilation_.device_register_count[device_index_]);
    reg->set_size_bytes(shape.NumElements() * SizeOf(dtype));
    reg->mutable_shape()->Reserve(static_cast<int>(shape.rank()));
    for (int64_t dim : shape.dims()) reg->add_shape(dim);
    reg->set_dtype(ToProto(dtype));
    reg->set_persistent(persistent);
    producer->add_produced_registers(id);
    return id;
  }

  // Micro-batch marks (ActorDef/RegisterDef.per_iteration), set only when true so plans
  // without micro-batches are unchanged.
  static void MarkPerIteration(proto::ActorDef* actor, bool per_iteration) {
    if (per_iteration) actor->set_per_iteration(true);
  }
  void MarkRegister(int64_t reg, int64_t tensor) {
    if (!per_iteration_.empty() && per_iteration_[tensor]) {
      plan_.mutable_registers(static_cast<int>(reg))->set_per_iteration(true);
    }
  }

  void Consume(proto::ActorDef* actor, int64_t reg) {
    actor->add_consumed_registers(reg);
    plan_.mutable_registers(static_cast<int>(reg))->add_consumer_actors(actor->id());
  }

  void AddDataSource(const PhysicalNode& node) {
    const proto::DataSourceDef& source = compilation_.job.data_sources(static_cast<int>(node.index));
    proto::ActorDef* actor = NewActor(absl::StrCat("data_source/", source.name()),
                                      proto::ACTOR_DATA_SOURCE, proto::THREAD_COMPUTE);
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name("data_source");
    kernel->set_op_name(source.name());
    for (int k = 0; k < source.outputs_size(); ++k) {
      const int64_t t = graph_.tensor_index.at(source.outputs(k));
      const LogicalTensor& tensor = graph_.tensors[t];
      tensor_register_[t] =
          NewRegister(actor, tensor.name, node.output_shapes[k], tensor.type.dtype, false);
      (*kernel->mutable_outputs())[tensor.name] = tensor_register_[t];
    }
  }

  void AddVariable(const PhysicalNode& node) {
    const LogicalTensor& tensor = graph_.tensors[node.index];
    proto::ActorDef* actor = NewActor(tensor.name, proto::ACTOR_VARIABLE, proto::THREAD_COMPUTE);
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name("variable");
    kernel->set_op_name(tensor.name);
    tensor_register_[node.index] =
        NewRegister(actor, tensor.name, node.output_shapes[0], tensor.type.dtype, true);
    (*kernel->mutable_outputs())["out"] = tensor_register_[node.index];
    MarkPerIteration(actor, per_iteration_.empty() ? false : per_iteration_[node.index]);
    MarkRegister(tensor_register_[node.index], node.index);
  }

  absl::Status AddCompute(const PhysicalNode& node) {
    const LogicalOp& op = graph_.ops[node.index];
    proto::ActorDef* actor = NewActor(op.name, proto::ACTOR_COMPUTE, proto::THREAD_COMPUTE);
    const bool op_per_iteration = OpPerIteration(op, per_iteration_);
    if (!per_iteration_.empty() && !op_per_iteration && !op.definition->updated_inputs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op.name, "' (", op.type, ") updates its input '", op.definition->updated_inputs[0],
          "' in place but reads per-micro-batch values; with micro_batches=", compilation_.job.micro_batches(),
          " an in-place update must read only variables and accumulated gradients"));
    }
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name(op.definition->kernel);
    kernel->set_op_name(op.name);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int64_t reg = op.input_boxings[k] >= 0 ? boxing_register_[op.input_boxings[k]]
                                                   : tensor_register_[op.inputs[k]];
      if (reg < 0) {
        return absl::InternalError(absl::StrCat("op '", op.name, "' input '",
                                                op.definition->inputs[k], "' has no register on device ",
                                                device_index_));
      }
      Consume(actor, reg);
      (*kernel->mutable_inputs())[op.definition->inputs[k]] = reg;
      op_input_registers_[node.index].push_back(reg);
      for (const std::string& updated : op.definition->updated_inputs) {
        if (updated == op.definition->inputs[k]) updates_.push_back({actor->id(), reg});
      }
    }
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      const LogicalTensor& tensor = graph_.tensors[op.outputs[k]];
      tensor_register_[op.outputs[k]] =
          NewRegister(actor, tensor.name, node.output_shapes[k], tensor.type.dtype, false);
      (*kernel->mutable_outputs())[op.definition->outputs[k]] = tensor_register_[op.outputs[k]];
    }
    MarkPerIteration(actor, op_per_iteration);
    const std::vector<proto::PipelineAct>& acts = compilation_.pipeline_schedule.op_act;
    if (!acts.empty() && acts[node.index] != proto::PIPELINE_ACT_UNSET) actor->set_pipeline_act(acts[node.index]);
    bool after = op_per_iteration && !op.definition->updated_inputs.empty();
    for (int64_t t : op.inputs) after = after || (op_per_iteration && accumulated_[t]);
    if (after) actor->set_after_micro_batches(true);
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      MarkRegister(tensor_register_[op.outputs[k]], op.outputs[k]);
    }
    if (IsViewKernel(op.definition->kernel) && op.inputs.size() == 1 && op.outputs.size() == 1) {
      MakeViewIfSameBytes(kernel->inputs().begin()->second, tensor_register_[op.outputs[0]]);
    }
    return absl::OkStatus();
  }

  // Makes `out` a view of `in` when they hold the same bytes: the kernel would copy them
  // unchanged. Not for a variable: its update writes it in place and waits only for its
  // own readers (AddUpdateOrdering), not for a view's. Different sizes mean the kernel
  // must fail as it always did, so the copy stays.
  void MakeViewIfSameBytes(int64_t in, int64_t out) {
    const proto::RegisterDef& source = plan_.registers(static_cast<int>(in));
    proto::RegisterDef& view = *plan_.mutable_registers(static_cast<int>(out));
    if (source.persistent() || source.size_bytes() != view.size_bytes() || source.dtype() != view.dtype()) return;
    // Nor for what a transfer receives: the receiver runs ahead of the device's gate,
    // which is what keeps a view's bytes from being overwritten while the view is read.
    const int64_t first_actor = plan_.actors(0).id();
    if (plan_.actors(static_cast<int>(source.producer_actor() - first_actor)).thread() == proto::THREAD_TRANSFER) return;
    view.set_alias_of(in);
  }

  // A row-sparse step also reads the ids listing this device's rows ("rows"): the
  // register of the ids, or the one its reader op read them from.
  absl::Status ConsumeRows(proto::ActorDef* actor, proto::KernelDef* kernel, const SparseBoxing& sparse) {
    int64_t reg = tensor_register_[sparse.rows_tensor];
    if (sparse.rows_reader_op >= 0) {
      const std::vector<int64_t>& inputs = op_input_registers_[sparse.rows_reader_op];
      reg = sparse.rows_reader_input < static_cast<int64_t>(inputs.size()) ? inputs[sparse.rows_reader_input] : -1;
    }
    if (reg < 0) {
      return absl::InternalError(absl::StrCat("sparse boxing of '", kernel->op_name(), "' has no register of ids '",
                                              graph_.tensors[sparse.rows_tensor].name, "' on device ", device_index_));
    }
    Consume(actor, reg);
    (*kernel->mutable_inputs())["rows"] = reg;
    return absl::OkStatus();
  }

  absl::Status AddBoxingStep(const PhysicalNode& node) {
    const Boxing& boxing = compilation_.boxings[node.index];
    const BoxingStep& step = boxing.plan.steps[node.step];
    const LogicalTensor& tensor = graph_.tensors[boxing.tensor];
    proto::ActorDef* actor = NewActor(
        absl::StrCat(tensor.name, "/boxing_", boxing.id, "/", BoxingKindName(step.kind)),
        proto::ACTOR_BOXING,
        step.kind == BoxingKind::kSendRecv ? proto::THREAD_TRANSFER
        : IsCollective(step.kind)          ? proto::THREAD_COMMUNICATION
                                           : proto::THREAD_COMPUTE);
    actor->set_boxing_id(boxing.id);
    actor->set_boxing_step(node.step);
    MarkPerIteration(actor, per_iteration_.empty() ? false : per_iteration_[boxing.tensor]);
    if (!per_iteration_.empty() && per_iteration_[boxing.tensor] && accumulated_[boxing.tensor]) {
      actor->set_after_micro_batches(true);
    }
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name(std::string(BoxingKindName(step.kind)));
    kernel->set_op_name(tensor.name);
    const int64_t in = node.step == 0 ? tensor_register_[boxing.tensor] : boxing_register_[boxing.id];
    if (in >= 0) {
      Consume(actor, in);
      (*kernel->mutable_inputs())["in"] = in;
    }
    if (boxing.sparse.has_value()) OF_RETURN_IF_ERROR(ConsumeRows(actor, kernel, *boxing.sparse));
    boxing_register_[boxing.id] = -1;
    if (!node.output_shapes.empty()) {
      boxing_register_[boxing.id] =
          NewRegister(actor, absl::StrCat(tensor.name, "/boxing_", boxing.id, "/", node.step),
                      node.output_shapes[0], tensor.type.dtype, false);
      (*kernel->mutable_outputs())["out"] = boxing_register_[boxing.id];
      MarkRegister(boxing_register_[boxing.id], boxing.tensor);
    }
    step_actors_.push_back({boxing.id, node.step, plan_.actors_size() - 1});
    return absl::OkStatus();
  }

  // A gradient bucket (gradient_bucketing_pass.h): one actor on the communication thread
  // that consumes every member's input ("in_<k>"), packs them into the bucket register
  // ("bucket": f32, members at 64-byte aligned offsets) and all-reduces it in place; each
  // member's output ("out_<k>") is a view of its bytes there (alias_offset_bytes), which
  // the member's consumers read as they would the step's own output. A reduce-scatter
  // bucket's register is one chunk per rank of the group (GradientBucket::chunk_bytes,
  // part_offsets); it is reduce-scattered in place, and a member's view is its part in
  // this device's chunk.
  absl::Status AddBucket(const PhysicalNode& node) {
    const GradientBucket& bucket = compilation_.buckets[node.index];
    const bool scatter = bucket.kind == BoxingKind::kReduceScatter;
    proto::ActorDef* actor =
        NewActor(absl::StrCat("bucket_", bucket.id, "/", BoxingKindName(bucket.kind)), proto::ACTOR_BOXING,
                 proto::THREAD_COMMUNICATION);
    actor->set_bucket_id(bucket.id);
    actor->set_boxing_id(-1);
    actor->set_boxing_step(-1);
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name(absl::StrCat("bucket_", BoxingKindName(bucket.kind)));
    kernel->set_op_name(absl::StrCat("bucket_", bucket.id));
    std::vector<int64_t> offsets;
    int64_t end = 0;
    bool per_iteration = false, after = false;
    for (size_t k = 0; k < bucket.members.size(); ++k) {
      const Boxing& boxing = compilation_.boxings[bucket.members[k].first];
      const int64_t step = bucket.members[k].second;
      const int64_t in = step == 0 ? tensor_register_[boxing.tensor] : boxing_register_[boxing.id];
      if (in < 0) {
        return absl::InternalError(absl::StrCat("bucket ", bucket.id, " member '", graph_.tensors[boxing.tensor].name,
                                                "' has no input register on device ", device_index_));
      }
      Consume(actor, in);
      (*kernel->mutable_inputs())[absl::StrCat("in_", k)] = in;
      offsets.push_back(scatter ? bucket.part_offsets[k] : BucketMemberOffset(end));
      end = offsets.back() + node.output_shapes[k].NumElements() * SizeOf(DType::kF32);
      per_iteration = per_iteration || (!per_iteration_.empty() && per_iteration_[boxing.tensor]);
      after = after || (!per_iteration_.empty() && per_iteration_[boxing.tensor] && accumulated_[boxing.tensor]);
    }
    MarkPerIteration(actor, per_iteration);
    if (after) actor->set_after_micro_batches(true);
    if (scatter) {
      // This device's chunk: its coordinate on the bucket's axis.
      const Placement& where = graph_.placements[bucket.placement];
      const int64_t rank = where.RankOf(compilation_.devices[device_index_].device);
      if (rank < 0) {
        return absl::InternalError(absl::StrCat("bucket ", bucket.id, " runs on device ", device_index_,
                                                " outside its placement ", where.ToString()));
      }
      const int64_t chunk_start = where.Coordinate(rank)[bucket.hierarchy_axis] * bucket.chunk_bytes;
      for (int64_t& offset : offsets) offset += chunk_start;
      end = bucket.size_bytes;
    }
    const int64_t whole = NewRegister(actor, absl::StrCat("bucket_", bucket.id), Shape{end / 4}, DType::kF32, false);
    (*kernel->mutable_outputs())["bucket"] = whole;
    if (per_iteration) plan_.mutable_registers(static_cast<int>(whole))->set_per_iteration(true);
    for (size_t k = 0; k < bucket.members.size(); ++k) {
      const Boxing& boxing = compilation_.boxings[bucket.members[k].first];
      const int64_t step = bucket.members[k].second;
      const LogicalTensor& tensor = graph_.tensors[boxing.tensor];
      const int64_t view = NewRegister(actor, absl::StrCat(tensor.name, "/boxing_", boxing.id, "/", step),
                                       node.output_shapes[k], tensor.type.dtype, false);
      proto::RegisterDef& reg = *plan_.mutable_registers(static_cast<int>(view));
      reg.set_alias_of(whole);
      reg.set_alias_offset_bytes(offsets[k]);
      if (per_iteration) reg.set_per_iteration(true);
      (*kernel->mutable_outputs())[absl::StrCat("out_", k)] = view;
      boxing_register_[boxing.id] = view;
    }
    return absl::OkStatus();
  }

  absl::Status AddSink(const PhysicalNode& node) {
    proto::ActorDef* actor = NewActor("loss_sink", proto::ACTOR_SINK, proto::THREAD_COMPUTE);
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name("loss_sink");
    kernel->set_op_name(graph_.tensors[node.index].name);
    int64_t reg = tensor_register_[node.index];
    for (const Boxing& boxing : compilation_.boxings) {
      if (boxing.first_consumer == -1 && boxing.tensor == node.index) reg = boxing_register_[boxing.id];
    }
    if (reg < 0) return absl::InternalError("the loss has no register for the sink");
    Consume(actor, reg);
    (*kernel->mutable_inputs())["loss"] = reg;
    return absl::OkStatus();
  }

  // An update writes its variable in place: every other reader of that iteration's value
  // must have acted first.
  void AddUpdateOrdering() {
    const int64_t first_actor = plan_.actors_size() > 0 ? plan_.actors(0).id() : 0;
    for (const auto& [update_actor, reg] : updates_) {
      proto::ActorDef* actor = plan_.mutable_actors(static_cast<int>(update_actor - first_actor));
      for (int64_t reader : plan_.registers(static_cast<int>(reg)).consumer_actors()) {
        if (reader != update_actor) actor->add_control_predecessors(reader);
      }
    }
  }

  const Compilation& compilation_;
  const LogicalGraph& graph_;
  const int32_t device_index_;
  int64_t next_actor_id_;
  proto::DevicePlan& plan_;
  std::vector<int64_t> tensor_register_;
  // The register holding the latest step's output of each boxing on this device.
  std::vector<int64_t> boxing_register_;
  // The registers each op's kernel read on this device, in input order.
  std::vector<std::vector<int64_t>> op_input_registers_;
  std::vector<std::pair<int64_t, int64_t>> updates_;  // (update actor id, register id)
  std::vector<StepActor> step_actors_;
  // PerIterationTensors: empty without micro-batches.
  const std::vector<bool>& accumulated_;
  const std::vector<bool>& per_iteration_;
};

}  // namespace

absl::StatusOr<bool> ActorGraphPass::Run(Compilation* compilation) {
  compilation->plan.clear_devices();
  compilation->boxing_step_actors.assign(compilation->boxings.size(), {});
  for (const Boxing& boxing : compilation->boxings) {
    compilation->boxing_step_actors[boxing.id].resize(boxing.plan.steps.size());
  }
  // Actor ids run on from device to device, one actor per node of the device's program:
  // each device's first id is known before any is built, so devices build in parallel
  // and the plan is the same as built one after another.
  const int devices = static_cast<int>(compilation->devices.size());
  std::vector<int64_t> first_actor_id(devices + 1, 0);
  for (int d = 0; d < devices; ++d) {
    first_actor_id[d + 1] = first_actor_id[d] + static_cast<int64_t>(compilation->devices[d].nodes.size());
    compilation->plan.add_devices();
  }
  IterationMarks marks;
  marks.per_iteration = PerIterationTensors(*compilation, &marks.accumulated);
  std::vector<absl::Status> built(devices);
  std::vector<std::vector<StepActor>> step_actors(devices);
  RunTasksOnThreads(devices, TaskThreads(), [&](int d) {
    DeviceActorBuilder builder(*compilation, marks, d, first_actor_id[d], compilation->plan.mutable_devices(d));
    built[d] = builder.Run();
    step_actors[d] = builder.TakeStepActors();
  });
  for (int d = 0; d < devices; ++d) {
    OF_RETURN_IF_ERROR(built[d]);  // The first device's error, as if built in order.
    for (const StepActor& actor : step_actors[d]) {
      compilation->boxing_step_actors[actor.boxing][actor.step].push_back({d, actor.actor});
    }
  }
  // Pipeline stages (pipeline_schedule), for errors and traces.
  const std::vector<int64_t>& stages = compilation->pipeline_schedule.device_stage;
  for (size_t d = 0; d < stages.size(); ++d) {
    if (stages[d] >= 0) compilation->plan.mutable_devices(static_cast<int>(d))->set_pipeline_stage(stages[d]);
  }
  return true;
}

}  // namespace oneflow
