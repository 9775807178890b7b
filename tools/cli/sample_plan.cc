#include "tools/cli/sample_plan.h"

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"

namespace oneflow::cli {
namespace {

// Test data: the spellings are fixed, so a parse failure is a bug in this file.
proto::NdSbp Sbp(const char* text) { return NdSbp::Parse(text).value().ToProto(); }
proto::Placement TwoCpus() { return Placement::Parse("cpu{0:0-1}").value().ToProto(); }

void AddTensor(proto::Job* job, const std::string& name, std::vector<int64_t> shape) {
  proto::TensorDef* tensor = job->add_tensors();
  tensor->set_name(name);
  for (int64_t dim : shape) tensor->add_shape(dim);
  tensor->set_dtype(proto::DTYPE_F32);
}

struct Argument {
  const char* name;
  const char* tensor;
  const char* sbp;
};

void AddOp(proto::Plan* plan, const std::string& name, const std::string& type,
           std::vector<Argument> inputs, std::vector<Argument> outputs) {
  proto::OpDef* op = plan->mutable_job()->add_ops();
  proto::LogicalOpSbp* chosen = plan->add_op_sbps();
  op->set_name(name);
  op->set_type(type);
  chosen->set_op_name(name);
  *chosen->mutable_placement() = TwoCpus();
  for (const Argument& input : inputs) {
    (*op->mutable_inputs())[input.name] = input.tensor;
    (*chosen->mutable_signature()->mutable_inputs())[input.name] = Sbp(input.sbp);
  }
  for (const Argument& output : outputs) {
    (*op->mutable_outputs())[output.name] = output.tensor;
    (*chosen->mutable_signature()->mutable_outputs())[output.name] = Sbp(output.sbp);
  }
}

void AddActor(proto::DevicePlan* device, int64_t id, const std::string& name, proto::ActorKind kind,
              std::vector<int64_t> consumed, std::vector<int64_t> produced) {
  proto::ActorDef* actor = device->add_actors();
  actor->set_id(id);
  actor->set_name(name);
  actor->set_kind(kind);
  actor->set_thread(kind == proto::ACTOR_BOXING ? proto::THREAD_COMMUNICATION
                                                : proto::THREAD_COMPUTE);
  actor->set_collective_id(kind == proto::ACTOR_BOXING ? 0 : -1);
  for (int64_t r : consumed) actor->add_consumed_registers(r);
  for (int64_t r : produced) actor->add_produced_registers(r);
  if (kind == proto::ACTOR_COMPUTE) {
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name(name);
    kernel->set_op_name(name);
  }
}

// Activation registers get kRegisterCount slots in block 1 (the arena, one layout per
// slot copy); the variable one slot in block 0 (persistent).
constexpr int64_t kRegisterCount = 2;

void AddRegister(proto::DevicePlan* device, int64_t id, const std::string& tensor,
                 std::vector<int64_t> shape, bool persistent, int64_t producer,
                 std::vector<int64_t> consumers, int64_t* offset) {
  proto::RegisterDef* reg = device->add_registers();
  reg->set_id(id);
  reg->set_tensor(tensor);
  reg->set_producer_actor(producer);
  for (int64_t c : consumers) reg->add_consumer_actors(c);
  reg->set_count(persistent ? 1 : kRegisterCount);
  reg->set_persistent(persistent);
  int64_t elements = 1;
  for (int64_t dim : shape) {
    reg->add_shape(dim);
    elements *= dim;
  }
  reg->set_size_bytes(elements * 4);
  reg->set_dtype(proto::DTYPE_F32);
  reg->set_memory_block(persistent ? 0 : 1);
  reg->set_offset(*offset);
  *offset += reg->size_bytes();
}

// Actor ids start at `a`: 0 on device 0, 10 on device 1; register ids are 0-6 on both.
void AddDevice(proto::Plan* plan, int64_t device_index) {
  const int64_t a = 10 * device_index;
  const int64_t r = 0;
  proto::DevicePlan* device = plan->add_devices();
  device->mutable_device()->set_node(0);
  device->mutable_device()->set_device(device_index);
  AddActor(device, a + 0, "data", proto::ACTOR_DATA_SOURCE, {}, {r + 0, r + 1});
  AddActor(device, a + 1, "w", proto::ACTOR_VARIABLE, {}, {r + 2});
  AddActor(device, a + 2, "mm", proto::ACTOR_COMPUTE, {r + 0, r + 2}, {r + 3});
  AddActor(device, a + 3, "loss_grad", proto::ACTOR_COMPUTE, {r + 3, r + 1}, {r + 4});
  AddActor(device, a + 4, "mm_grad", proto::ACTOR_COMPUTE, {r + 0, r + 4}, {r + 5});
  AddActor(device, a + 5, "w_grad all_reduce", proto::ACTOR_BOXING, {r + 5}, {r + 6});
  AddActor(device, a + 6, "sgd", proto::ACTOR_COMPUTE, {r + 6, r + 2}, {});
  int64_t persistent_bytes = 0;
  int64_t arena_stride = 0;
  AddRegister(device, r + 0, "x", {32, 32}, false, a + 0, {a + 2, a + 4}, &arena_stride);
  AddRegister(device, r + 1, "t", {32, 16}, false, a + 0, {a + 3}, &arena_stride);
  AddRegister(device, r + 2, "w", {32, 16}, true, a + 1, {a + 2, a + 6}, &persistent_bytes);
  AddRegister(device, r + 3, "y", {32, 16}, false, a + 2, {a + 3}, &arena_stride);
  AddRegister(device, r + 4, "y_grad", {32, 16}, false, a + 3, {a + 4}, &arena_stride);
  AddRegister(device, r + 5, "w_grad", {32, 16}, false, a + 4, {a + 5}, &arena_stride);
  AddRegister(device, r + 6, "w_grad", {32, 16}, false, a + 5, {a + 6}, &arena_stride);
  proto::MemoryBlock* persistent = device->add_memory_blocks();
  persistent->set_id(0);
  persistent->set_size_bytes(persistent_bytes);
  persistent->set_persistent(true);
  proto::MemoryBlock* arena = device->add_memory_blocks();
  arena->set_id(1);
  arena->set_size_bytes(kRegisterCount * arena_stride);
  arena->set_slot_stride_bytes(arena_stride);
  device->add_collective_order(0);
  device->set_peak_bytes(persistent_bytes + kRegisterCount * arena_stride);
  device->set_lower_bound_bytes(20480);
  device->set_bytes_sent_per_iter(2048);
  device->set_bytes_received_per_iter(2048);
}

}  // namespace

proto::Plan SampleDataParallelPlan() {
  proto::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_register_count(kRegisterCount);
  proto::Cluster* cluster = plan.mutable_cluster();
  cluster->set_num_nodes(1);
  cluster->set_devices_per_node(2);
  cluster->set_device_type(proto::DEVICE_CPU);
  cluster->set_intra_node_bandwidth(100e9);
  cluster->set_inter_node_bandwidth(12.5e9);

  proto::Job* job = plan.mutable_job();
  job->set_name("matmul_dp");
  job->set_batch_size(64);
  *job->mutable_default_placement() = TwoCpus();
  AddTensor(job, "x", {64, 32});
  AddTensor(job, "t", {64, 16});
  AddTensor(job, "w", {32, 16});
  AddTensor(job, "y", {64, 16});
  AddTensor(job, "y_grad", {64, 16});
  AddTensor(job, "w_grad", {32, 16});
  proto::VariableDef* w = job->add_variables();
  w->set_tensor("w");
  w->set_trainable(true);
  w->mutable_initializer()->set_kind(proto::Initializer::XAVIER_UNIFORM);
  w->mutable_initializer()->set_seed(7);
  proto::DataSourceDef* data = job->add_data_sources();
  data->set_name("data");
  data->mutable_synthetic()->set_seed(1);
  data->add_outputs("x");
  data->add_outputs("t");
  job->mutable_optimizer()->mutable_schedule()->set_base_lr(0.1);
  job->mutable_optimizer()->mutable_sgd();

  AddOp(&plan, "mm", "matmul", {{"a", "x", "S(0)"}, {"b", "w", "B"}}, {{"out", "y", "S(0)"}});
  AddOp(&plan, "loss_grad", "mse_grad", {{"pred", "y", "S(0)"}, {"target", "t", "S(0)"}},
        {{"grad", "y_grad", "S(0)"}});
  AddOp(&plan, "mm_grad", "matmul", {{"a", "x", "S(0)"}, {"b", "y_grad", "S(0)"}},
        {{"out", "w_grad", "P"}});
  (*plan.mutable_job()->mutable_ops(2)->mutable_attrs())["transpose_a"].set_b(true);
  AddOp(&plan, "sgd", "sgd_update", {{"param", "w", "B"}, {"grad", "w_grad", "B"}}, {});

  proto::CollectiveDef* all_reduce = plan.add_collectives();
  all_reduce->set_id(0);
  all_reduce->set_kind(proto::ALL_REDUCE);
  for (int64_t d = 0; d < 2; ++d) all_reduce->add_group()->set_device(d);
  all_reduce->set_order(0);
  all_reduce->set_tensor("w_grad");
  *all_reduce->mutable_src_sbp() = Sbp("P");
  *all_reduce->mutable_dst_sbp() = Sbp("B");
  all_reduce->set_bytes_per_device(2048);
  all_reduce->set_reason("mm_grad produces P, sgd needs B");

  proto::BoxingDef* boxing = plan.add_boxings();
  boxing->set_id(0);
  boxing->set_tensor("w_grad");
  boxing->set_producer_op("mm_grad");
  boxing->set_consumer_op("sgd");
  *boxing->mutable_src_sbp() = Sbp("P");
  *boxing->mutable_dst_sbp() = Sbp("B");
  *boxing->mutable_src_placement() = TwoCpus();
  *boxing->mutable_dst_placement() = TwoCpus();
  proto::BoxingStepDef* step = boxing->add_steps();
  step->set_kind(proto::STEP_ALL_REDUCE);
  step->set_hierarchy_axis(0);
  *step->mutable_src_sbp() = Sbp("P");
  *step->mutable_dst_sbp() = Sbp("B");
  step->set_bytes_per_device(2048);
  step->set_collective_id(0);
  boxing->set_bytes_per_iter(4096);
  boxing->set_reason("mm_grad produces P, sgd needs B");

  AddDevice(&plan, 0);
  AddDevice(&plan, 1);
  // Sealed like a compiled plan; the spellings above are fixed, so failing is a bug here.
  SealPlan(&plan).IgnoreError();
  return plan;
}

}  // namespace oneflow::cli
