// The pipeline without autograd, on inference graphs built with the DSL.
#include <iostream>

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

PassPipeline ForwardPipeline() {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<SbpChoicePass>();
  pipeline.AddPass<BoxingInsertionPass>();
  pipeline.AddPass<LoweringPass>();
  pipeline.AddPass<ActorGraphPass>();
  pipeline.AddPass<CollectiveOrderingPass>();
  pipeline.AddPass<MemoryPlanningPass>();
  pipeline.AddPass<PlanEmissionPass>();
  return pipeline;
}

TEST(ForwardPipelineTest, MlpTensorParallel) {
  Graph graph("mlp");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w1 = graph.Variable("w1", Shape{16, 32}, Initializer::Xavier(1));
  w1.WithSbp("S(1)");
  Tensor w2 = graph.Variable("w2", Shape{32, 10}, Initializer::Xavier(2));
  w2.WithSbp("S(0)");
  Tensor out = MatMul(Relu(MatMul(x, w1)), w2);
  Tensor loss = ReduceMean(out);
  graph.SetLoss(loss);
  absl::StatusOr<proto::Job> job = graph.Build();
  ASSERT_TRUE(job.ok()) << job.status();
  Compilation compilation;
  compilation.job = *job;
  compilation.options.cluster.set_num_nodes(1);
  compilation.options.cluster.set_devices_per_node(4);
  compilation.options.cluster.set_intra_node_bandwidth(100e9);
  compilation.options.cluster.set_inter_node_bandwidth(10e9);
  compilation.options.dump_after = {"all"};
  std::string dump;
  compilation.options.dump = &dump;
  compilation.links = LinkModel{100e9, 10e9};
  compilation.cluster_placement = *Placement::Grid(DeviceType::kCpu, 1, 4);
  compilation.default_placement = compilation.cluster_placement;
  absl::Status status = ForwardPipeline().Run(&compilation);
  std::cout << dump;
  ASSERT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace oneflow
