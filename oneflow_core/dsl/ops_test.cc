// The DSL functions added with the new ops: To, Concat, the optimizer updates, and
// causal self-attention, including that Megatron tensor parallelism is expressible with
// weight hints alone (simulated device by device with the reference kernels).
#include "oneflow_core/dsl/ops.h"

#include <cmath>
#include <map>
#include <optional>

#include "gtest/gtest.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

TEST(DslOpsTest, ToHintsTheOutputAndChecksTheSbp) {
  Graph graph("to");
  Tensor x = graph.Input("x", Shape{4, 6}, DType::kF32, "data");
  const Placement placement = *Placement::Parse("cpu{0:0-1, 1:0-1}[2, 2]");
  Tensor y = To(x, placement, *NdSbp::Parse("[S(0), B]"));
  ASSERT_TRUE(y.valid()) << graph.status();
  EXPECT_EQ(graph.ops().back().type, "identity");
  EXPECT_EQ(graph.tensor(y.id()).placement, placement);
  EXPECT_EQ(graph.tensor(y.id()).sbp_hint, *NdSbp::Parse("[S(0), B]"));
  EXPECT_FALSE(graph.tensor(x.id()).sbp_hint.has_value());

  const int line = __LINE__ + 1;
  Tensor bad = To(x, placement, NdSbp{Sbp::Split(2)});
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(graph.status().message(),
            "op 'identity_1' (identity) at ops_test.cc:" + std::to_string(line) +
                ": To(x, cpu{0:0-1, 1:0-1}[2, 2], S(2)): SBP S(2) has 1 axes but the placement "
                "hierarchy [2, 2] has 2; give one SBP per hierarchy axis");
}

TEST(DslOpsTest, ConcatFoldsPairwise) {
  Graph graph("concat");
  Tensor a = graph.Input("a", Shape{2, 1}, DType::kF32, "data");
  Tensor b = graph.Input("b", Shape{2, 2}, DType::kF32, "data");
  Tensor c = graph.Input("c", Shape{2, 3}, DType::kF32, "data");
  Tensor joined = Concat({a, b, c}, 1);
  ASSERT_TRUE(joined.valid()) << graph.status();
  EXPECT_EQ(joined.shape(), (Shape{2, 6}));
  EXPECT_EQ(graph.ops().size(), 2u);
  EXPECT_EQ(Concat({a}, 0).id(), a.id());
  EXPECT_FALSE(Concat({}, 0).valid());
}

TEST(DslOpsTest, UpdatesHaveNoOutputsAndTakeTheOptimizerSettings) {
  Graph graph("updates");
  Tensor w = graph.Variable("w", Shape{4}, Initializer::Zeros());
  Tensor g = graph.Variable("g", Shape{4}, Initializer::Zeros());
  Tensor m = graph.Variable("m", Shape{4}, Initializer::Zeros());
  Tensor v = graph.Variable("v", Shape{4}, Initializer::Zeros());
  proto::LearningRateSchedule schedule;
  schedule.set_kind(proto::LearningRateSchedule::WARMUP_COSINE);
  schedule.set_base_lr(0.1);
  schedule.set_warmup_steps(10);
  schedule.set_total_steps(100);
  proto::AdamWOptimizer adamw;
  adamw.set_beta1(0.9);
  adamw.set_beta2(0.95);
  adamw.set_epsilon(1e-8);
  adamw.set_weight_decay(0.1);
  AdamWUpdate(w, g, m, v, adamw, schedule);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  const Graph::OpRecord& op = graph.ops().back();
  EXPECT_EQ(op.type, "adamw_update");
  EXPECT_TRUE(op.outputs.empty());
  EXPECT_EQ(GetFloatAttr(op.attrs, "beta2", 0), 0.95);
  EXPECT_EQ(std::get<std::string>(op.attrs.at("lr_schedule")), "warmup_cosine");
  EXPECT_EQ(GetIntAttr(op.attrs, "total_steps", 0), 100);
  absl::StatusOr<proto::Job> job = graph.Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->ops(0).outputs_size(), 0);

  Tensor wrong = graph.Variable("wrong", Shape{5}, Initializer::Zeros());
  const int line = __LINE__ + 1;
  SgdUpdate(w, wrong, m, proto::SgdOptimizer(), schedule);
  EXPECT_EQ(graph.status().message(),
            "op 'sgd_update_1' (sgd_update) at ops_test.cc:" + std::to_string(line) +
                ": inputs 'grad' f32[5] and 'param' f32[4] must have the same type (inputs: w: "
                "f32[4], wrong: f32[5], m: f32[4])");
}

TEST(DslOpsTest, CausalSelfAttentionShapesAndErrors) {
  Graph graph("attention");
  Tensor x = graph.Input("x", Shape{2, 5, 8}, DType::kF32, "data");
  std::vector<Tensor> w;
  for (const char* name : {"w_q", "w_k", "w_v", "w_o"}) {
    w.push_back(graph.Variable(name, Shape{8, 8}, Initializer::Xavier(1)));
  }
  Tensor out = CausalSelfAttention(x, w[0], w[1], w[2], w[3], 4);
  ASSERT_TRUE(out.valid()) << graph.status();
  EXPECT_EQ(out.shape(), (Shape{2, 5, 8}));
  const int line = __LINE__ + 1;
  EXPECT_FALSE(CausalSelfAttention(x, w[0], w[1], w[2], w[3], 3).valid());
  EXPECT_EQ(graph.status().message(),
            "CausalSelfAttention at ops_test.cc:" + std::to_string(line) +
                ": x 'x' f32[2, 5, 8] must be [batch, seq, hidden] with hidden divisible by "
                "num_heads=3");
}

// Runs the graph on `devices` devices with no boxing at all: each op takes the first
// signature whose input SBPs are exactly its inputs' (and that is valid for the device
// count). Fails if some op has none. Returns each tensor's device values and SBP.
struct Simulation {
  std::map<int64_t, Sbp> sbp;
  std::map<int64_t, std::vector<Dense>> values;  // Per device.
};

Simulation RunWithoutBoxing(const Graph& graph, const std::map<int64_t, Sbp>& hints,
                            const TensorValues& logical, int64_t devices) {
  Simulation sim;
  const Shape hierarchy{devices};
  auto ensure = [&](int64_t id) {
    if (sim.sbp.count(id)) return;
    const Sbp sbp = hints.count(id) ? hints.at(id) : Sbp::Broadcast();
    sim.sbp.emplace(id, sbp);
    const Graph::TensorRecord& tensor = graph.tensor(id);
    for (int64_t rank = 0; rank < devices; ++rank) {
      sim.values[id].push_back(SliceOf(logical.at(tensor.name),
                                       *DeviceSlice(tensor.type.shape, NdSbp{sbp}, hierarchy, {rank})));
    }
  };
  for (const Graph::OpRecord& op : graph.ops()) {
    std::vector<TensorType> types;
    std::vector<Sbp> have;
    for (const auto& [arg, id] : op.inputs) {
      ensure(id);
      types.push_back(graph.tensor(id).type);
      have.push_back(sim.sbp.at(id));
    }
    const OpDefinition& definition = **OpRegistry::Get().Find(op.type);
    std::optional<SbpSignature> chosen;
    for (const SbpSignature& s : definition.signatures(types, op.attrs)) {
      if (s.inputs == have && s.ValidFor(devices)) {
        chosen = s;
        break;
      }
    }
    EXPECT_TRUE(chosen.has_value()) << op.name << " has no signature for its inputs' SBPs";
    if (!chosen) return sim;
    for (int64_t rank = 0; rank < devices; ++rank) {
      ReferenceContext context;
      std::vector<Dense> inputs;
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int64_t id = op.inputs[k].second;
        inputs.push_back(sim.values[id][rank]);
        context.inputs.push_back({types[k].shape, *DeviceSlice(types[k].shape, NdSbp{have[k]},
                                                                hierarchy, {rank})});
      }
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        const Shape& shape = graph.tensor(op.outputs[k].second).type.shape;
        context.outputs.push_back(
            {shape, *DeviceSlice(shape, NdSbp{chosen->outputs[k]}, hierarchy, {rank})});
      }
      absl::StatusOr<std::vector<Dense>> out = EvaluateReference(op.type, inputs, op.attrs, context);
      EXPECT_TRUE(out.ok()) << out.status();
      if (!out.ok()) return sim;
      for (size_t k = 0; k < op.outputs.size(); ++k) {
        sim.values[op.outputs[k].second].push_back((*out)[k]);
      }
    }
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      sim.sbp.emplace(op.outputs[k].second, chosen->outputs[k]);
    }
  }
  return sim;
}

TEST(DslOpsTest, MegatronAttentionNeedsOnlyWeightHints) {
  Graph graph("megatron");
  Tensor x = graph.Input("x", Shape{2, 3, 8}, DType::kF32, "data");
  std::map<int64_t, Sbp> hints;
  std::vector<Tensor> w;
  for (const char* name : {"w_q", "w_k", "w_v", "w_o"}) {
    w.push_back(graph.Variable(name, Shape{8, 8}, Initializer::Xavier(1)));
    hints.emplace(w.back().id(), std::string(name) == "w_o" ? Sbp::Split(0) : Sbp::Split(1));
  }
  Tensor out = CausalSelfAttention(x, w[0], w[1], w[2], w[3], /*num_heads=*/4);
  ASSERT_TRUE(out.valid()) << graph.status();
  TensorValues feeds;
  int seed = 1;
  for (const Tensor& t : {x, w[0], w[1], w[2], w[3]}) {
    Dense dense = Dense::Zeros(t.shape());
    for (size_t i = 0; i < dense.values.size(); ++i) {
      dense.values[i] = std::sin(0.37 * static_cast<double>(i) + seed);
    }
    feeds[t.name()] = dense;
    ++seed;
  }
  absl::StatusOr<TensorValues> logical = EvaluateGraph(graph, feeds);
  ASSERT_TRUE(logical.ok()) << logical.status();
  for (int64_t devices : {2, 4}) {
    SCOPED_TRACE(std::to_string(devices) + " devices");
    const Simulation sim = RunWithoutBoxing(graph, hints, *logical, devices);
    ASSERT_TRUE(sim.sbp.count(out.id()));
    EXPECT_TRUE(sim.sbp.at(out.id()).is_partial()) << sim.sbp.at(out.id()).ToString();
    const std::vector<double>& want = logical->at(out.name()).values;
    for (size_t i = 0; i < want.size(); ++i) {
      double sum = 0;
      for (int64_t rank = 0; rank < devices; ++rank) sum += sim.values.at(out.id())[rank].values[i];
      ASSERT_NEAR(sum, want[i], 1e-9) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace oneflow
