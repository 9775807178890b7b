#include "compiler/plan_verifier.h"

#include "compiler/compilation.h"
#include "compiler/pass_pipeline.h"
#include "compiler/passes/actor_graph_pass.h"
#include "compiler/passes/boxing_insertion_pass.h"
#include "compiler/passes/collective_ordering_pass.h"
#include "compiler/passes/lowering_pass.h"
#include "compiler/passes/memory_planning_pass.h"
#include "compiler/passes/plan_emission_pass.h"
#include "compiler/passes/sbp_choice_pass.h"
#include "compiler/passes/shape_inference_pass.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace {

// An inference MLP, tensor-parallel over 2 devices by hints: the row-parallel matmul
// leaves a partial sum, so the plan has an all-reduce per device.
proto::Plan TensorParallelPlan() {
  Graph graph("mlp");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w1 = graph.Variable("w1", Shape{16, 32}, Initializer::Xavier(1));
  w1.WithSbp("S(1)");
  Tensor w2 = graph.Variable("w2", Shape{32, 10}, Initializer::Xavier(2));
  w2.WithSbp("S(0)");
  Tensor y = Relu(MatMul(Relu(MatMul(x, w1)), w2));
  graph.SetLoss(ReduceMean(y));
  Compilation compilation;
  compilation.job = *graph.Build();
  compilation.options.cluster.set_num_nodes(1);
  compilation.options.cluster.set_devices_per_node(2);
  compilation.links = LinkModel{100e9, 10e9};
  compilation.cluster_placement = *Placement::Grid(DeviceType::kCpu, 1, 2);
  compilation.default_placement = compilation.cluster_placement;
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<SbpChoicePass>();
  pipeline.AddPass<BoxingInsertionPass>();
  pipeline.AddPass<LoweringPass>();
  pipeline.AddPass<ActorGraphPass>();
  pipeline.AddPass<CollectiveOrderingPass>();
  pipeline.AddPass<MemoryPlanningPass>();
  pipeline.AddPass<PlanEmissionPass>();
  absl::Status status = pipeline.Run(&compilation);
  EXPECT_TRUE(status.ok()) << status;
  return compilation.plan;
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
            "device 0:1 issues collectives [1, 0] but the groups it belongs to need [0, 1] (in "
            "increasing id); they first differ at position 0: devices issuing a group's "
            "collectives in different orders can deadlock");
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
  EXPECT_EQ(VerifyPlan(plan).message(), "plan format version 7; this build reads version 1");
}

}  // namespace
}  // namespace oneflow
