#include "plan/plan_verifier.h"

#include <zlib.h>

#include <functional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "compiler/compilation.h"
#include "compiler/plan_verifier_test_util.h"
#include "plan/plan_checksum.h"
#include "compiler/pass_pipeline.h"
#include "compiler/passes/actor_graph_pass.h"
#include "compiler/passes/boxing_insertion_pass.h"
#include "compiler/passes/collective_ordering_pass.h"
#include "compiler/passes/lowering_pass.h"
#include "compiler/passes/memory_planning_pass.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "compiler/passes/plan_emission_pass.h"
#include "compiler/passes/sbp_choice_pass.h"
#include "compiler/passes/shape_inference_pass.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace {

// An inference MLP, tensor-parallel over 2 devices by hints (or `nodes` x
// `devices_per_node`, one group): the row-parallel matmul leaves a partial sum, so the
// plan has an all-reduce per device.
proto::Plan TensorParallelPlan(int64_t nodes = 1, int64_t devices_per_node = 2) {
  Graph graph("mlp");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w1 = graph.Variable("w1", Shape{16, 32}, Initializer::Xavier(1));
  w1.WithSbp("S(1)");
  Tensor w2 = graph.Variable("w2", Shape{32, 10}, Initializer::Xavier(2));
  w2.WithSbp("S(0)");
  Tensor y = Relu(MatMul(Relu(MatMul(x, w1)), w2));
  graph.SetLoss(ReduceMean(y));
  return Compiled(graph, nodes, devices_per_node);
}

TEST(PlanVerifierTest, CompiledPlanPasses) {
  const proto::Plan plan = TensorParallelPlan();
  ASSERT_EQ(plan.collectives_size(), 2);  // relu needs B: all-reduce; loss sink: none.
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
}

TEST(PlanVerifierTest, RejectsDevicesIssuingCollectivesInDifferentOrders) {
  proto::Plan plan = TensorParallelPlan();
  ASSERT_EQ(plan.devices(1).collective_order_size(), 2);
  plan.mutable_devices(1)->mutable_collective_order()->SwapElements(0, 1);
  const absl::Status status = VerifyCollectiveOrder(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "device 0:1 issues collective 0 (" + proto::CollectiveKind_Name(plan.collectives(0).kind()) + " of '" +
                plan.collectives(0).tensor() +
                "', group [0:0, 0:1]) at position 1 of its order [1, 0], after collective 1 of the same group, "
                "which the group issues later: members issuing a group's collectives in different orders can "
                "deadlock");
}

TEST(PlanVerifierTest, RejectsADeviceMissingACollectiveOfItsGroup) {
  proto::Plan plan = TensorParallelPlan();
  plan.mutable_devices(1)->mutable_collective_order()->RemoveLast();
  EXPECT_EQ(VerifyCollectiveOrder(plan).message(),
            "device 0:1 issues collectives [0] but the groups it belongs to need [0, 1], each once");
}

// Communication streams (CollectiveDef.stream): the compiled plan puts its one group on
// one stream, named after the group class.
TEST(PlanVerifierTest, CompiledPlanHasOneStreamPerGroupClass) {
  const proto::Plan plan = TensorParallelPlan();
  ASSERT_EQ(plan.streams_size(), 1);
  EXPECT_EQ(plan.streams(0).name(), "axis 0 of cpu{0:0-1} (1 group of 2)");
  for (const proto::CollectiveDef& collective : plan.collectives()) EXPECT_EQ(collective.stream(), 0);
}

proto::CommunicationStreamDef* AddStream(proto::Plan* plan) {
  proto::CommunicationStreamDef* stream = plan->add_streams();
  stream->set_id(plan->streams_size() - 1);
  stream->set_name("hand-made");
  return stream;
}

TEST(PlanVerifierTest, RejectsAGroupOnTwoStreams) {
  proto::Plan plan = TensorParallelPlan();
  AddStream(&plan);
  plan.mutable_collectives(1)->set_stream(1);
  EXPECT_EQ(VerifyCollectiveOrder(plan).message(),
            "collective 1 (ALL_REDUCE of '" + plan.collectives(1).tensor() +
                "', group [0:0, 0:1]) is on communication stream 1 but collective 0 of the same group is on "
                "stream 0: a group's communicator is used from one thread, so all its collectives must be on one "
                "stream");
}

TEST(PlanVerifierTest, RejectsAStreamThePlanLacks) {
  proto::Plan plan = TensorParallelPlan();
  plan.mutable_collectives(1)->set_stream(3);
  EXPECT_EQ(VerifyCollectiveOrder(plan).message(),
            "collective 1 (ALL_REDUCE of '" + plan.collectives(1).tensor() +
                "', group [0:0, 0:1]) is on communication stream 3; the plan has streams 0 to 0");
  plan.mutable_collectives(1)->set_stream(0);
  plan.mutable_streams(0)->set_id(4);
  EXPECT_EQ(VerifyCollectiveOrder(plan).message(),
            "communication stream 4 ('axis 0 of cpu{0:0-1} (1 group of 2)') is at index 0; stream ids are their "
            "index in the plan");
}

// Collective 1 gets a group of its own (the same devices listed the other way round:
// another communicator, order 0 in it), and device 0:1 issues it before collective 0,
// which device 0:0 issues first: the two devices' orders cross. On one stream each
// device's thread would wait in its first collective for the other device forever; on
// two streams nothing orders the two collectives on either device.
proto::Plan CrossingPlan(bool two_streams) {
  proto::Plan plan = TensorParallelPlan();
  proto::CollectiveDef* second = plan.mutable_collectives(1);
  second->mutable_group()->SwapElements(0, 1);
  second->set_order(0);
  plan.mutable_devices(1)->mutable_collective_order()->SwapElements(0, 1);
  if (two_streams) second->set_stream(AddStream(&plan)->id());
  return plan;
}

// "device 0:0 actor 7 ('...') (collective 1, stream 0)": the verifier's name of the act
// that issues `collective` on `device`.
std::string IssuerText(const proto::Plan& plan, int device, int64_t collective) {
  for (const proto::ActorDef& actor : plan.devices(device).actors()) {
    if (actor.collective_id() != collective) continue;
    const proto::DeviceId& id = plan.devices(device).device();
    return absl::StrCat("device ", id.node(), ":", id.device(), " actor ", actor.id(), " ('", actor.name(),
                        "') (collective ", collective, ", stream ", plan.collectives(collective).stream(), ")");
  }
  return "no issuer";
}

TEST(PlanVerifierTest, RejectsStreamOrdersThatCrossBetweenDevices) {
  const proto::Plan plan = CrossingPlan(false);
  // Each group on its own is in order: only the proof over the stream orders sees it.
  EXPECT_TRUE(VerifyCollectiveOrder(plan).ok()) << VerifyCollectiveOrder(plan);
  const absl::Status status = Resealed(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(status.message(),
                               "the plan would deadlock: these acts of one iteration wait for each other in a "
                               "cycle: "))
      << status;
  // The cycle names both collectives' acts (a collective's acts on its members are one
  // event, named by its first issuer).
  EXPECT_TRUE(absl::StrContains(status.message(), IssuerText(plan, 0, 0))) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), IssuerText(plan, 0, 1))) << status;
}

TEST(PlanVerifierTest, AcceptsCrossingOrdersOnTwoStreams) {
  const proto::Plan plan = CrossingPlan(true);
  EXPECT_TRUE(Resealed(plan).ok()) << Resealed(plan);
}

TEST(PlanVerifierTest, RejectsAWrongGroupOrder) {
  proto::Plan plan = TensorParallelPlan();
  plan.mutable_collectives(1)->set_order(5);
  EXPECT_EQ(VerifyCollectiveOrder(plan).message(),
            "collective 1 (ALL_REDUCE of '" + plan.collectives(1).tensor() +
                "', group [0:0, 0:1]) has order 5 but is its group's collective number 1");
}

TEST(PlanVerifierTest, RejectsLiveRegistersSharingBytes) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  // Find two arena registers live at the same time and put them at the same offset.
  int a = -1, b = -1;
  for (int r = 0; r < device->registers_size() && b < 0; ++r) {
    const proto::RegisterDef& reg = device->registers(r);
    if (reg.persistent() || reg.consumer_actors().empty()) continue;
    if (a < 0) {
      a = r;
    } else if (reg.producer_actor() <= device->registers(a).consumer_actors(0)) {
      b = r;
    }
  }
  ASSERT_GE(b, 0);
  device->mutable_registers(b)->set_offset(device->registers(a).offset());
  const absl::Status status = VerifyMemory(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("share bytes in memory block 1 while both are live"),
            absl::string_view::npos)
      << status;
}

// A kernel's declared scratch (KernelDef.workspace_bytes) must fit the device's one
// workspace block, an unslotted buffer that holds no register.
TEST(PlanVerifierTest, KernelWorkspaceMustFitTheDevicesWorkspaceBlock) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  ASSERT_TRUE(VerifyMemory(plan).ok());
  proto::ActorDef* compute = nullptr;
  for (proto::ActorDef& actor : *device->mutable_actors()) {
    if (actor.kind() == proto::ACTOR_COMPUTE && actor.thread() == proto::THREAD_COMPUTE) compute = &actor;
  }
  ASSERT_NE(compute, nullptr);
  compute->mutable_kernels(0)->set_workspace_bytes(256);
  auto expect_refused = [&](absl::string_view text) {
    const absl::Status status = VerifyMemory(plan);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StrContains(status.message(), text)) << status;
  };
  expect_refused("declares 256 bytes of workspace, but the device's plan has no workspace block");
  proto::MemoryBlock* block = device->add_memory_blocks();
  block->set_id(device->memory_blocks_size() - 1);
  block->set_workspace(true);
  block->set_size_bytes(128);
  expect_refused("declares 256 bytes of workspace, but the device's workspace block holds 128");
  block->set_size_bytes(256);
  EXPECT_TRUE(VerifyMemory(plan).ok()) << VerifyMemory(plan);
  block->set_slot_stride_bytes(128);
  expect_refused("is the kernels' workspace but is slotted (stride 128); a workspace is one buffer");
  block->set_slot_stride_bytes(0);
  const int64_t arena = device->registers(0).memory_block();
  device->mutable_registers(0)->set_memory_block(block->id());
  expect_refused("the kernels' workspace, which holds no register");
  device->mutable_registers(0)->set_memory_block(arena);
  compute->set_thread(proto::THREAD_COMMUNICATION);
  expect_refused("declares a workspace but does not run on the compute thread");
}

TEST(PlanVerifierTest, RejectsAControlPredecessorThatComesLater) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const int64_t last = device->actors(device->actors_size() - 1).id();
  device->mutable_actors(0)->add_control_predecessors(last);
  EXPECT_EQ(VerifyPlanStructure(plan).message(),
            absl::StrCat("device 0:0: actor ", device->actors(0).id(), " ('",
                         device->actors(0).name(), "') waits for actor ", last,
                         ", which is not an earlier actor of the device"));
}

TEST(PlanVerifierTest, RejectsAnotherFormatVersion) {
  proto::Plan plan = TensorParallelPlan();
  plan.set_format_version(7);
  EXPECT_EQ(VerifyPlan(plan).message(), "plan format version 7; this build reads version 2");
}

// The first arena register of device 0 with a consumer.
int FirstArenaRegister(const proto::DevicePlan& device) {
  for (int r = 0; r < device.registers_size(); ++r) {
    if (!device.registers(r).persistent() && !device.registers(r).consumer_actors().empty()) return r;
  }
  return -1;
}

TEST(PlanVerifierTest, CompiledPlansAreSealedAndDamageIsRefused) {
  proto::Plan plan = TensorParallelPlan();
  ASSERT_NE(plan.checksum(), 0u);
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  plan.mutable_devices(0)->mutable_registers(0)->set_tensor("renamed");
  const absl::Status status = VerifyPlan(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), absl::StrFormat("plan checksum 0x%08x does not match its contents (0x%08x): "
                                              "the plan was damaged or edited after it was compiled",
                                              plan.checksum(), *PlanChecksum(plan)));
  EXPECT_TRUE(Resealed(plan).ok());  // The rename alone is harmless once resealed.
}

// The checksum is found among the plan's serialized fields rather than cleared on a
// copy: it must give the copy's CRC whatever comes after it (fields above 10, unknown
// fields) and whatever bytes equal its tag inside other fields.
TEST(PlanChecksumTest, IsTheCrcOfTheSerializationWithoutTheChecksum) {
  proto::Plan plan = TensorParallelPlan();
  plan.set_register_count(0x55);        // A value byte equal to the checksum's tag.
  plan.add_buckets()->set_id(0x55);     // Field 20, after the checksum.
  plan.set_bucket_bytes_limit(1 << 20);  // Field 21.
  plan.GetReflection()->MutableUnknownFields(&plan)->AddVarint(99, 0x55);
  plan.set_checksum(0xdeadbeef);
  proto::Plan unsealed = plan;
  unsealed.clear_checksum();
  const std::string bytes = *SerializePlanDeterministically(unsealed);
  const uint32_t expected = static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  EXPECT_EQ(*PlanChecksum(plan), expected);
  EXPECT_EQ(*PlanChecksum(unsealed), expected);
  ASSERT_TRUE(SealPlan(&unsealed).ok());
  EXPECT_EQ(unsealed.checksum(), expected);
}

// Devices are checked on threads (oneflow_core/run_tasks.h); the error named is still
// the first device's in device order, whichever thread finished first.
TEST(PlanVerifierTest, NamesTheFirstDamagedDeviceInDeviceOrder) {
  proto::Plan plan = TensorParallelPlan(/*nodes=*/1, /*devices_per_node=*/8);
  ASSERT_EQ(plan.devices_size(), 8);
  for (int d : {6, 2}) {
    proto::DevicePlan* device = plan.mutable_devices(d);
    device->mutable_actors(0)->add_control_predecessors(device->actors(device->actors_size() - 1).id());
  }
  const proto::DevicePlan& first = plan.devices(2);
  EXPECT_EQ(VerifyPlanStructure(plan).message(),
            absl::StrCat("device 0:2: actor ", first.actors(0).id(), " ('", first.actors(0).name(), "') waits for actor ",
                         first.actors(first.actors_size() - 1).id(), ", which is not an earlier actor of the device"));
  // Memory: registers moved past their block on devices 5 and 1.
  plan = TensorParallelPlan(1, 8);
  for (int d : {5, 1}) {
    proto::DevicePlan* device = plan.mutable_devices(d);
    proto::RegisterDef* reg = device->mutable_registers(FirstArenaRegister(*device));
    reg->set_offset(reg->offset() + 10'000'000);
  }
  EXPECT_TRUE(absl::StartsWith(VerifyMemory(plan).message(), "device 0:1: register "))
      << VerifyMemory(plan).message();
}

// Actor ids repeated across devices: found although each device is checked on its own.
TEST(PlanVerifierTest, RejectsActorIdsAnotherDeviceUses) {
  proto::Plan plan = TensorParallelPlan(/*nodes=*/1, /*devices_per_node=*/4);
  const int64_t taken = plan.devices(1).actors(0).id();
  proto::DevicePlan* device = plan.mutable_devices(3);
  for (int a = 0; a < device->actors_size(); ++a) device->mutable_actors(a)->set_id(taken + a);
  EXPECT_EQ(VerifyPlanStructure(plan).message(),
            absl::StrCat("device 0:3: actor id ", taken, " ('", device->actors(0).name(), "') is used twice in the plan"));
}

TEST(PlanVerifierTest, RejectsARegisterMovedPastItsBlock) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const int r = FirstArenaRegister(*device);
  ASSERT_GE(r, 0);
  proto::RegisterDef* reg = device->mutable_registers(r);
  reg->set_offset(reg->offset() + 10'000'000);
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: register ", r, " ('", reg->tensor(), "') at offset ", reg->offset(), " size ",
                         reg->size_bytes(), " x2 does not fit memory block 1 (", device->memory_blocks(1).size_bytes(),
                         " bytes, slot stride ", device->memory_blocks(1).slot_stride_bytes(), ")"));
}

TEST(PlanVerifierTest, RejectsANegativeRegisterSize) {
  proto::Plan plan = TensorParallelPlan();
  proto::RegisterDef* reg = plan.mutable_devices(0)->mutable_registers(0);
  const int64_t bytes = reg->size_bytes();
  reg->set_size_bytes(-64);
  EXPECT_EQ(Resealed(plan).message(), absl::StrCat("device 0:0: register 0 ('", reg->tensor(),
                                                   "') has size -64 bytes, but its shape and dtype need ", bytes));
}

TEST(PlanVerifierTest, RejectsARegisterCountTheBlocksDoNotHold) {
  proto::Plan plan = TensorParallelPlan();
  plan.set_register_count(1'000'000);
  const proto::MemoryBlock& arena = plan.devices(0).memory_blocks(1);
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: memory block 1 holds ", arena.size_bytes(), " bytes, but 1000000 slot copies "
                         "of stride ", arena.slot_stride_bytes(), " need exactly their product"));
  // The same count on one register only.
  plan = TensorParallelPlan();
  const int r = FirstArenaRegister(plan.devices(0));
  proto::RegisterDef* reg = plan.mutable_devices(0)->mutable_registers(r);
  reg->set_count(1'000'000);
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: register ", r, " ('", reg->tensor(),
                         "') has 1000000 slots, but registers in the arena have the plan's register_count 2"));
}

TEST(PlanVerifierTest, RejectsAConsumerTheRegisterDoesNotName) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const int r = FirstArenaRegister(*device);
  proto::RegisterDef* reg = device->mutable_registers(r);
  const int64_t consumer = reg->consumer_actors(0);
  reg->mutable_consumer_actors()->erase(reg->mutable_consumer_actors()->begin());
  const proto::ActorDef& actor = device->actors(static_cast<int>(consumer - device->actors(0).id()));
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: actor ", consumer, " ('", actor.name(), "') consumes register ", r,
                         ", which does not name it as a consumer"));
}

TEST(PlanVerifierTest, RejectsAWaitCycle) {
  proto::Plan plan = TensorParallelPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  // Actor x reads register r0 (made by y) and makes r1; let y also wait for r1.
  const int64_t first = device->actors(0).id();
  for (const proto::ActorDef& x : device->actors()) {
    if (x.consumed_registers().empty() || x.produced_registers().empty()) continue;
    const int64_t r1 = x.produced_registers(0);
    const int64_t y = device->registers(static_cast<int>(x.consumed_registers(0))).producer_actor();
    device->mutable_actors(static_cast<int>(y - first))->add_consumed_registers(r1);
    device->mutable_registers(static_cast<int>(r1))->add_consumer_actors(y);
    const std::string x_text = absl::StrCat("device 0:0 actor ", x.id(), " ('", x.name(), "')");
    const std::string y_text =
        absl::StrCat("device 0:0 actor ", y, " ('", device->actors(static_cast<int>(y - first)).name(), "')");
    const absl::Status status = Resealed(plan);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(status.message() == absl::StrCat("the plan would deadlock: these acts of one iteration wait for "
                                                 "each other in a cycle: ", x_text, " -> ", y_text, " -> ", x_text) ||
                status.message() == absl::StrCat("the plan would deadlock: these acts of one iteration wait for "
                                                 "each other in a cycle: ", y_text, " -> ", x_text, " -> ", y_text))
        << status;
    return;
  }
  FAIL() << "no actor both reads and writes a register";
}

TEST(PlanVerifierTest, RejectsAReductionTheRuntimeLacks) {
  proto::Plan plan = TensorParallelPlan();
  ASSERT_GT(plan.boxings_size(), 0);
  const proto::BoxingDef& boxing = plan.boxings(0);
  const proto::BoxingStepDef& step = boxing.steps(0);
  ASSERT_TRUE(step.kind() == proto::STEP_ALL_REDUCE || step.kind() == proto::STEP_REDUCE_SCATTER) << step.kind();
  const std::string kind = step.kind() == proto::STEP_ALL_REDUCE ? "all_reduce" : "reduce_scatter";
  const std::string to = NdSbp::FromProto(step.dst_sbp())->at(step.hierarchy_axis()).ToString();
  for (proto::TensorDef& tensor : *plan.mutable_job()->mutable_tensors()) {
    if (tensor.name() == boxing.tensor()) tensor.set_dtype(proto::DTYPE_F16);
  }
  const absl::Status status = Resealed(plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), absl::StrCat("boxing 0 of '", boxing.tensor(), "' (", boxing.producer_op(), " -> ",
                                           boxing.consumer_op(), ") step 0 (", kind, "): ", kind,
                                           " P -> ", to, " of f16 is not supported: reductions are implemented for "
                                           "f32, i32, i64 and u8"));
}

TEST(PlanVerifierTest, RejectsAnUnknownStepKind) {
  proto::Plan plan = TensorParallelPlan();
  plan.mutable_boxings(0)->mutable_steps(0)->set_kind(static_cast<proto::BoxingStepKind>(12));
  const absl::Status status = Resealed(plan);
  EXPECT_NE(status.message().find("step 0 (kind 12): unknown step kind 12; this build runs identity, all_reduce, "),
            absl::string_view::npos)
      << status;
}

TEST(PlanVerifierTest, ChecksAStepsCompression) {
  const proto::Plan original = TensorParallelPlan();
  const proto::BoxingDef& boxing = original.boxings(0);
  const std::string who = absl::StrCat("boxing 0 of '", boxing.tensor(), "' (", boxing.producer_op(), " -> ",
                                       boxing.consumer_op(), ") step 0 (",
                                       boxing.steps(0).kind() == proto::STEP_ALL_REDUCE ? "all_reduce" : "reduce_scatter",
                                       ")");
  auto with = [&](proto::Compression::Kind kind, int64_t group, proto::DataType dtype) -> std::string {
    proto::Plan plan = original;
    proto::Compression* compression = plan.mutable_boxings(0)->mutable_steps(0)->mutable_compression();
    compression->set_kind(kind);
    compression->set_block_size(group);
    for (proto::TensorDef& tensor : *plan.mutable_job()->mutable_tensors()) {
      if (tensor.name() == boxing.tensor()) tensor.set_dtype(dtype);
    }
    return std::string(Resealed(plan).message());
  };
  EXPECT_EQ(with(static_cast<proto::Compression::Kind>(9), 128, proto::DTYPE_F32),
            who + " is compressed with codec 9, which this build does not know");
  EXPECT_EQ(with(proto::Compression::INT4, 128, proto::DTYPE_I32),
            who + " compresses a i32 tensor with INT4; only floating tensors compress");
  EXPECT_EQ(with(proto::Compression::FP8_E4M3, 0, proto::DTYPE_F32),
            who + " has compression group size 0; it must be >= 1");
  EXPECT_EQ(with(proto::Compression::FP8_E4M3, 128, proto::DTYPE_F16),
            who + " compresses a f16 tensor; compressed collectives are implemented for f32");
  EXPECT_EQ(with(proto::Compression::FP8_E4M3, 128, proto::DTYPE_F32), "");  // What the runtime runs.
  EXPECT_TRUE(Resealed(original).ok());
}

// The two-level form as the compiler writes it for data-parallel gradients: int8 in
// groups of 512 in the node, int4 in groups of 128 across nodes, both rotated.
proto::Compression TwoLevel() {
  proto::Compression compression;
  compression.set_kind(proto::Compression::INT8);
  compression.set_block_size(512);
  compression.set_hadamard(true);
  compression.set_cross_node_kind(proto::Compression::INT4);
  compression.set_cross_node_block_size(128);
  compression.set_cross_node_hadamard(true);
  return compression;
}

// "boxing 0 of 't' (a -> b) step 0 (all_reduce)": how the verifier names step 0 of boxing 0.
std::string FirstStep(const proto::Plan& plan) {
  const proto::BoxingDef& boxing = plan.boxings(0);
  return absl::StrCat("boxing 0 of '", boxing.tensor(), "' (", boxing.producer_op(), " -> ", boxing.consumer_op(),
                      ") step 0 (", boxing.steps(0).kind() == proto::STEP_ALL_REDUCE ? "all_reduce" : "reduce_scatter",
                      ")");
}

TEST(PlanVerifierTest, ChecksAStepsRounding) {
  const proto::Plan original = TensorParallelPlan();
  const std::string who = FirstStep(original);
  auto with = [&](proto::Compression::Kind kind, proto::Compression::Rounding rounding) -> std::string {
    proto::Plan plan = original;
    proto::Compression* compression = plan.mutable_boxings(0)->mutable_steps(0)->mutable_compression();
    compression->set_kind(kind);
    compression->set_block_size(kind == proto::Compression::NONE ? 0 : 32);
    compression->set_rounding(rounding);
    compression->set_rounding_seed(5);
    return std::string(Resealed(plan).message());
  };
  EXPECT_EQ(with(proto::Compression::INT4, proto::Compression::STOCHASTIC), "");  // What the runtime runs.
  EXPECT_EQ(with(proto::Compression::INT8, proto::Compression::STOCHASTIC), "");
  EXPECT_EQ(with(proto::Compression::FP8_E4M3, proto::Compression::STOCHASTIC),
            who + " has rounding STOCHASTIC with codec FP8_E4M3; only INT4 and INT8 encoders round stochastically");
  EXPECT_EQ(with(proto::Compression::NONE, proto::Compression::STOCHASTIC),
            who + " has rounding STOCHASTIC with codec NONE; only INT4 and INT8 encoders round stochastically");
  EXPECT_EQ(with(proto::Compression::INT4, static_cast<proto::Compression::Rounding>(4)),
            who + " has rounding 4, which this build does not know (NEAREST, STOCHASTIC)");
}

// A dense warm-up (Compression.dense_warmup_iterations) belongs on a compressed step only,
// and is never negative.
TEST(PlanVerifierTest, ChecksAStepsDenseWarmUp) {
  const proto::Plan original = TensorParallelPlan();
  const std::string who = FirstStep(original);
  auto with = [&](proto::Compression::Kind kind, int64_t warmup) -> std::string {
    proto::Plan plan = original;
    proto::Compression* compression = plan.mutable_boxings(0)->mutable_steps(0)->mutable_compression();
    compression->set_kind(kind);
    compression->set_block_size(kind == proto::Compression::NONE ? 0 : 32);
    compression->set_dense_warmup_iterations(warmup);
    return std::string(Resealed(plan).message());
  };
  EXPECT_EQ(with(proto::Compression::INT4, 20), "");  // What the runtime runs.
  EXPECT_EQ(with(proto::Compression::INT4, -1),
            who + " has dense_warmup_iterations -1; it must be >= 0, and 0 on a dense step (nothing to warm up before)");
  EXPECT_EQ(with(proto::Compression::NONE, 20),
            who + " has dense_warmup_iterations 20; it must be >= 0, and 0 on a dense step (nothing to warm up before)");
}

TEST(PlanVerifierTest, ChecksTheTwoLevelForm) {
  // 2 nodes x 2 devices: the all-reduce's group is [0:0, 0:1, 1:0, 1:1].
  const proto::Plan original = TensorParallelPlan(2, 2);
  const proto::BoxingStepKind kind = original.boxings(0).steps(0).kind();
  ASSERT_TRUE(kind == proto::STEP_ALL_REDUCE || kind == proto::STEP_REDUCE_SCATTER) << kind;
  const std::string who = FirstStep(original);
  auto with = [&](const std::function<void(proto::Compression*, proto::BoxingStepDef*)>& change) {
    proto::Plan plan = original;
    proto::BoxingStepDef* step = plan.mutable_boxings(0)->mutable_steps(0);
    *step->mutable_compression() = TwoLevel();
    change(step->mutable_compression(), step);
    return std::string(Resealed(plan).message());
  };
  EXPECT_EQ(with([](proto::Compression*, proto::BoxingStepDef*) {}), "");  // What the runtime runs.
  EXPECT_EQ(with([](proto::Compression* c, proto::BoxingStepDef*) {
              c->set_cross_node_kind(static_cast<proto::Compression::Kind>(9));
            }),
            who + " is compressed across nodes with codec 9, which this build does not know");
  EXPECT_EQ(with([](proto::Compression* c, proto::BoxingStepDef*) { c->set_kind(proto::Compression::NONE); }),
            who + " has cross-node codec INT4 but in-node codec NONE; a two-level step compresses both levels");
  EXPECT_EQ(with([](proto::Compression* c, proto::BoxingStepDef*) { c->set_cross_node_block_size(0); }),
            who + " has cross-node compression group size 0; it must be >= 1");
  EXPECT_EQ(with([](proto::Compression* c, proto::BoxingStepDef*) { c->set_cross_node_block_size(100); }),
            who + ": cross-node codec int4 with hadamard: group_size is 100; the Walsh-Hadamard transform needs a "
                  "power of two in [32, 2048]");
  EXPECT_EQ(with([](proto::Compression* c, proto::BoxingStepDef*) { c->set_block_size(48); }),
            who + ": codec int8 with hadamard: group_size is 48; the Walsh-Hadamard transform needs a power of "
                  "two in [32, 2048]");
  const std::string gather = who.substr(0, who.rfind('(')) + "(all_gather)";
  EXPECT_EQ(with([](proto::Compression*, proto::BoxingStepDef* step) { step->set_kind(proto::STEP_ALL_GATHER); }),
            gather + " is compressed in two levels (INT8 in the node, INT4 across nodes), but only all_reduce and "
                     "reduce_scatter have a two-level form");
  EXPECT_TRUE(Resealed(original).ok());
}

TEST(PlanVerifierTest, RefusesTwoLevelStepsOnGroupsThatAreNotRegularAcrossNodes) {
  // One node: nothing crosses nodes.
  proto::Plan plan = TensorParallelPlan();
  *plan.mutable_boxings(0)->mutable_steps(0)->mutable_compression() = TwoLevel();
  const int64_t collective = plan.boxings(0).steps(0).collective_id();
  EXPECT_EQ(std::string(Resealed(plan).message()),
            absl::StrCat(FirstStep(plan), " is compressed in two levels, but the group of collective ", collective,
                         ", [0:0, 0:1], cannot run them: its members are on nodes [0, 0]; a two-level step needs more "
                         "than one node and more than one member per node (1 node of 2)"));
  // 2 nodes x 2, the group listed across the nodes instead of node by node.
  plan = TensorParallelPlan(2, 2);
  *plan.mutable_boxings(0)->mutable_steps(0)->mutable_compression() = TwoLevel();
  proto::CollectiveDef* group = plan.mutable_collectives(static_cast<int>(plan.boxings(0).steps(0).collective_id()));
  ASSERT_EQ(group->group_size(), 4);
  group->mutable_group()->SwapElements(1, 2);
  EXPECT_EQ(std::string(VerifyRuntimeSupport(plan).message()),
            absl::StrCat(FirstStep(plan), " is compressed in two levels, but the group of collective ", group->id(),
                         ", [0:0, 1:0, 0:1, 1:1], cannot run them: its members are on nodes [0, 1, 0, 1]; a two-level "
                         "step needs them listed node by node"));
}

// A pass that breaks an invariant an earlier pass established (every op's SBPs, from
// sbp_choice) is caught after the last pass even without verification between passes:
// the pipeline accumulates each pass's checks (CompilerPass::Checks), whatever the
// passes are called.
class DropSbpsPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "drop_sbps"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override {
    compilation->graph.ops[0].input_sbps.clear();
    return true;
  }
  StateParts Reads() const override { return {StatePart::kGraph}; }
  StateParts Writes() const override { return {StatePart::kGraph}; }
};

TEST(PassPipelineTest, ChecksAccumulateToTheLastPass) {
  Graph graph("mlp");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{16, 10}, Initializer::Xavier(1));
  MatMul(x, w);
  Compilation compilation;
  compilation.job = *graph.Build();
  compilation.options.verify_each_pass = false;
  compilation.cluster_placement = *Placement::Grid(DeviceType::kCpu, 1, 2);
  compilation.default_placement = compilation.cluster_placement;
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<SbpChoicePass>();
  pipeline.AddPass<DropSbpsPass>();
  const absl::Status status = pipeline.Run(&compilation);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("compiler bug: the state after pass 'drop_sbps' fails verification: "),
            std::string::npos)
      << status;
}

// A row-sharded table gathered data-parallel for the rows each device's tokens list
// (Tensor::WithSparseRows): one row-sparse all_gather on 4 devices.
proto::Plan SparseGatherPlan() {
  Graph graph("table");
  graph.AddDataSource("data", DataSource::SyntheticTokens(1, 64));
  Tensor tokens = graph.Input("tokens", Shape{8, 4}, DType::kI32, "data");
  tokens.WithSbp("S(0)");
  Tensor table = graph.Variable("table", Shape{64, 8}, Initializer::Normal(0, 1, 1));
  table.WithSbp("S(0)").WithSparseRows(tokens);
  Tensor x = Embedding(table, tokens);
  x.WithSbp("S(0)");
  return Compiled(graph, 1, 4);
}

TEST(PlanVerifierTest, ChecksARowSparseStep) {
  const proto::Plan original = SparseGatherPlan();
  ASSERT_EQ(original.boxings_size(), 1);
  const proto::BoxingStepDef& step = original.boxings(0).steps(0);
  ASSERT_EQ(step.kind(), proto::STEP_ALL_GATHER);
  ASSERT_EQ(step.sparsity().kind(), proto::Sparsity::ROWS);
  EXPECT_EQ(step.sparsity().rows_tensor(), "tokens");
  EXPECT_EQ(step.sparsity().rows(), 64);
  EXPECT_EQ(step.sparsity().row_bytes(), 32);
  EXPECT_EQ(step.sparsity().max_rows(), 8);  // 2 samples of 4 tokens per device
  EXPECT_EQ(original.collectives(static_cast<int>(step.collective_id())).kind(), proto::SPARSE_ALL_GATHER);
  EXPECT_TRUE(VerifyPlan(original).ok()) << VerifyPlan(original);
  const std::string who = absl::StrCat("boxing 0 of 'table' (table -> ", original.boxings(0).consumer_op(),
                                       ") step 0 (all_gather)");
  proto::Plan compressed = original;
  compressed.mutable_boxings(0)->mutable_steps(0)->mutable_compression()->set_kind(proto::Compression::FP8_E4M3);
  compressed.mutable_boxings(0)->mutable_steps(0)->mutable_compression()->set_block_size(128);
  EXPECT_EQ(Resealed(compressed).message(), who + " is both row-sparse and compressed; a step is one or the other");
  proto::Plan float_ids = original;
  float_ids.mutable_boxings(0)->mutable_steps(0)->mutable_sparsity()->set_rows_tensor("table");
  EXPECT_EQ(Resealed(float_ids).message(),
            who + " takes its rows from 'table', which is not an i32/i64 tensor of the job");
  proto::Plan dense_collective = original;
  dense_collective.mutable_collectives(static_cast<int>(step.collective_id()))->set_kind(proto::ALL_GATHER);
  EXPECT_NE(Resealed(dense_collective).message().find("is row-sparse but its collective"), std::string::npos)
      << Resealed(dense_collective);
  proto::Plan no_rows = original;
  for (proto::ActorDef& actor : *no_rows.mutable_devices(0)->mutable_actors()) {
    if (actor.kind() == proto::ACTOR_BOXING) actor.mutable_kernels(0)->mutable_inputs()->erase("rows");
  }
  EXPECT_NE(Resealed(no_rows).message().find("but reads no i32/i64 register of row ids as \"rows\""),
            std::string::npos)
      << Resealed(no_rows);
}

}  // namespace
}  // namespace oneflow
