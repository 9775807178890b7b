// Every gradient function against central finite differences, in double precision with
// the reference evaluator: for each differentiable op, loss = sum(op(inputs) * W) with
// fixed random W, gradients from AddBackward, and each input element perturbed by +-h.
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "oneflow_core/dsl/gradients/backward.h"
#include "oneflow_core/dsl/gradients/gradient.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

using Ints = std::vector<int64_t>;
using Builder = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

struct GradCase {
  std::string type;
  std::vector<TensorType> inputs;
  AttrMap attrs;
  int64_t index_limit = 0;       // Index inputs are drawn from [0, limit).
  std::vector<size_t> positive;  // Inputs drawn positive (divisors).
  Builder build;                 // Empty: one op of `type` with `attrs`.
  std::function<void(const Graph&)> inspect;  // Extra checks on the finished graph.
};

constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-6;

Dense RandomDense(const TensorType& type, std::mt19937* rng, int64_t index_limit, bool positive) {
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  Dense dense = Dense::Zeros(type.shape, type.dtype);
  for (double& v : dense.values) {
    v = IsFloating(type.dtype) ? uniform(*rng) * ((*rng)() % 2 && !positive ? -1 : 1)
                               : static_cast<double>((*rng)() % index_limit);
  }
  return dense;
}

double Loss(const Graph& graph, const std::string& loss, const TensorValues& feeds) {
  absl::StatusOr<TensorValues> values = EvaluateGraph(graph, feeds);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? values->at(loss).values[0] : 0.0;
}

void CheckGradients(const GradCase& c) {
  SCOPED_TRACE(c.type);
  Graph graph("gradient_" + c.type);
  std::mt19937 rng(7);
  TensorValues feeds;
  std::vector<Tensor> inputs, wrt;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const TensorType& type = c.inputs[k];
    const std::string name = "in" + std::to_string(k);
    const bool floating = IsFloating(type.dtype);
    Tensor input = floating ? graph.Variable(name, type.shape, Initializer::Zeros(), type.dtype)
                            : graph.Input(name, type.shape, type.dtype, "data");
    inputs.push_back(input);
    if (floating) wrt.push_back(input);
    const bool positive = std::count(c.positive.begin(), c.positive.end(), k) > 0;
    feeds[name] = RandomDense(type, &rng, c.index_limit, positive);
  }
  const std::vector<Tensor> outputs =
      c.build ? c.build(inputs)
              : graph.AddOp(c.type, inputs, c.attrs, "", SourceLocation::Current());
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  Tensor loss;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = "weight" + std::to_string(i);
    Tensor weight = graph.Input(name, outputs[i].shape(), DType::kF32, "data");
    feeds[name] = RandomDense(weight.type(), &rng, 0, false);
    Tensor term = ReduceSum(Mul(outputs[i], weight));
    loss = loss.valid() ? Add(loss, term) : term;
  }
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, wrt);
  ASSERT_TRUE(grads.ok()) << grads.status();
  absl::StatusOr<TensorValues> values = EvaluateGraph(graph, feeds);
  ASSERT_TRUE(values.ok()) << values.status();
  for (size_t k = 0; k < wrt.size(); ++k) {
    ASSERT_TRUE((*grads)[k].valid()) << wrt[k].name();
    const std::vector<double>& analytic = values->at((*grads)[k].name()).values;
    for (size_t e = 0; e < analytic.size(); ++e) {
      TensorValues plus = feeds, minus = feeds;
      plus[wrt[k].name()].values[e] += kStep;
      minus[wrt[k].name()].values[e] -= kStep;
      const double numeric =
          (Loss(graph, loss.name(), plus) - Loss(graph, loss.name(), minus)) / (2 * kStep);
      ASSERT_NEAR(analytic[e], numeric, kTolerance * std::max(1.0, std::abs(numeric)))
          << "d loss / d " << wrt[k].name() << "[" << e << "]";
    }
  }
  if (c.inspect) c.inspect(graph);
}

std::vector<GradCase> Cases() {
  const DType f = DType::kF32;
  const DType i32 = DType::kI32;
  return {
      {"matmul", {{Shape{3, 4}, f}, {Shape{4, 2}, f}}, {}},
      {"matmul", {{Shape{3, 4}, f}, {Shape{2, 4}, f}}, {{"transpose_b", true}}},
      {"matmul", {{Shape{4, 3}, f}, {Shape{4, 2}, f}}, {{"transpose_a", true}}},
      {"matmul", {{Shape{4, 3}, f}, {Shape{2, 4}, f}}, {{"transpose_a", true}, {"transpose_b", true}}},
      {"matmul", {{Shape{2, 3, 4}, f}, {Shape{2, 4, 2}, f}}, {}},
      {"add", {{Shape{3, 4}, f}, {Shape{4}, f}}, {}},
      {"add", {{Shape{3, 4}, f}, {Shape{3, 4}, f}}, {}},
      {"sub", {{Shape{3, 1}, f}, {Shape{3, 4}, f}}, {}},
      {"mul", {{Shape{2, 3, 4}, f}, {Shape{1, 4}, f}}, {}},
      {"div", {{Shape{3, 4}, f}, {Shape{3, 1}, f}}, {}, 0, {1}},
      {"bias_add", {{Shape{2, 3, 4}, f}, {Shape{4}, f}}, {}},
      {"bias_add", {{Shape{4}, f}, {Shape{4}, f}}, {}},
      {"relu", {{Shape{3, 4}, f}}, {}},
      {"gelu", {{Shape{3, 4}, f}}, {}},
      {"scalar_mul", {{Shape{3, 4}, f}}, {{"scalar", -1.5}}},
      {"scalar_add", {{Shape{3, 4}, f}}, {{"scalar", 0.5}}},
      {"dropout", {{Shape{3, 4}, f}}, {{"rate", 0.5}, {"seed", int64_t{3}}}},
      {"identity", {{Shape{3, 4}, f}}, {}},
      // Any fill has the same gradient; a moderate one keeps the loss, and so the
      // finite differences, well conditioned.
      {"causal_mask", {{Shape{2, 3, 3}, f}}, {{"fill", -3.0}}},
      {"softmax", {{Shape{3, 4}, f}}, {}},
      {"log_softmax", {{Shape{2, 3, 4}, f}}, {}},
      {"layer_norm", {{Shape{3, 5}, f}, {Shape{5}, f}, {Shape{5}, f}}, {{"epsilon", 1e-3}}},
      {"sparse_softmax_cross_entropy", {{Shape{3, 4}, f}, {Shape{3}, i32}}, {}, 4},
      {"reshape", {{Shape{3, 4}, f}}, {{"shape", Ints{2, 6}}}},
      {"transpose", {{Shape{2, 3, 4}, f}}, {{"perm", Ints{2, 0, 1}}}},
      {"reduce_sum", {{Shape{3, 4}, f}}, {{"axes", Ints{1}}}},
      {"reduce_sum", {{Shape{2, 3, 4}, f}}, {{"axes", Ints{0, 2}}, {"keep_dims", true}}},
      {"reduce_mean", {{Shape{3, 4}, f}}, {{"axes", Ints{}}}},
      {"reduce_mean", {{Shape{2, 3, 4}, f}}, {{"axes", Ints{-2}}}},
      {"embedding", {{Shape{5, 3}, f}, {Shape{2, 4}, i32}}, {}, 5},
      {"rms_norm", {{Shape{3, 5}, f}, {Shape{5}, f}}, {{"epsilon", 1e-3}}},
      {"rms_norm", {{Shape{2, 3, 4}, f}, {Shape{4}, f}}, {}},
      {"rotary_embedding", {{Shape{2, 5, 6}, f}}, {{"base", 100.0}}},
      {"rotary_embedding", {{Shape{2, 3, 4, 4}, f}}, {{"base", 10000.0}, {"inverse", true}}},
      {"rotary_embedding", {{Shape{2, 8, 4}, f}}, {{"base", 100.0}, {"zigzag_blocks", int64_t{2}}}},
      {"silu", {{Shape{3, 4}, f}}, {}},
      {"log", {{Shape{3, 4}, f}}, {}, 0, {0}},
      // The shift input gets no gradient (it cancels in the loss), so the op is checked
      // as the whole vocab-parallel loss: reduce_max, vocab_cross_entropy, log, sub.
      {"vocab_cross_entropy", {{Shape{3, 5}, f}, {Shape{3}, i32}}, {}, 5, {},
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{VocabParallelCrossEntropy(in[0], in[1])}; }},
      {"ring_shift", {{Shape{2, 6, 2}, f}}, {{"axis", int64_t{1}}, {"blocks", int64_t{3}}, {"shift", int64_t{1}}}},
      {"ring_causal_mask", {{Shape{2, 2, 3, 3}, f}}, {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"fill", -3.0}}},
      // Ring step 0 (every query row sees a key: a row that sees none has the constant lse
      // -1e9, which would swamp the loss's differences), zig-zag blocks of 2 chunks.
      {"ring_attention", {{Shape{2, 2, 4, 3}, f}, {Shape{2, 2, 2, 3}, f}, {Shape{2, 2, 2, 3}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{0}}, {"scale", 0.6}, {"zigzag", true}}},
      {"ring_attention", {{Shape{2, 3, 3, 2}, f}, {Shape{2, 3, 3, 2}, f}, {Shape{2, 3, 3, 2}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{0}}, {"scale", 0.6}, {"zigzag", false}}},
      // The whole ring (BlockwiseRingAttention: 3 steps over blocks of 2 positions, merged
      // online): ring_attention_result's gradient passes k, v, dk and dv around the ring
      // again and must equal the finite differences of the steps and merges it replaces.
      {"ring_attention_result", {{Shape{2, 3, 4, 2}, f}, {Shape{2, 3, 2, 2}, f}, {Shape{2, 3, 2, 2}, f}}, {}, 0, {},
       [](const std::vector<Tensor>& in) {
         BlockwiseRingOptions options;
         options.axis = 1;
         options.scale = 0.6;
         return std::vector<Tensor>{BlockwiseRingAttention(in[0], in[1], in[2], options)};
       }},
      {"ring_attention_result", {{Shape{2, 2, 4, 2}, f}, {Shape{2, 2, 4, 2}, f}, {Shape{2, 2, 4, 2}, f}}, {}, 0, {},
       [](const std::vector<Tensor>& in) {
         BlockwiseRingOptions options;
         options.axis = 1;
         options.scale = 0.6;
         options.zigzag = true;
         return std::vector<Tensor>{BlockwiseRingAttention(in[0], in[1], in[2], options)};
       }},
      {"slice", {{Shape{3, 5}, f}}, {{"begin", Ints{1, 1}}, {"end", Ints{3, 4}}}},
      {"concat", {{Shape{3, 2}, f}, {Shape{3, 4}, f}}, {{"axis", int64_t{1}}}},
      {"concat", {{Shape{1, 4}, f}, {Shape{2, 4}, f}}, {{"axis", int64_t{0}}}},
      {"expert_matmul", {{Shape{2, 3, 2, 4}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("data")}}},
      {"expert_matmul", {{Shape{2, 3, 2, 4}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("expert")}}},
      {"moe_aux_loss", {{Shape{2, 4, 3}, f}}, {}},
      // The routing ops need index and slot from moe_route: B = 2, T = 4, E = 3, K = 2,
      // C = 2, so some choices drop. probs get their gradient through the gate weights.
      {"moe_route", {{Shape{2, 3, 2, 4}, f}, {Shape{2, 4, 3}, f}}, {}, 0, {},
       [](const std::vector<Tensor>& in) {
         const MoeRouting r = MoeRoute(in[1], /*top_k=*/2, /*capacity=*/2);
         // `dropped` reaches the loss too: it has no gradient, and must not stop autograd.
         return std::vector<Tensor>{MoeCombine(in[0], in[1], r.index, r.slot), r.dropped};
       }},
      {"moe_dispatch", {{Shape{2, 4, 3}, f}, {Shape{2, 4, 3}, f}}, {}, 0, {},
       [](const std::vector<Tensor>& in) {
         const MoeRouting r = MoeRoute(in[1], 2, 2);
         const Tensor buf = MoeDispatch(in[0], r.index, r.slot, /*experts=*/3, /*capacity=*/2);
         return std::vector<Tensor>{buf, MoeCombine(buf, in[1], r.index, r.slot)};
       }},
      {"moe_combine", {{Shape{2, 3, 2, 4}, f}, {Shape{2, 4, 3}, f}}, {}, 0, {},
       [](const std::vector<Tensor>& in) {
         const MoeRouting r = MoeRoute(in[1], 1, 2);
         return std::vector<Tensor>{MoeCombine(in[0], in[1], r.index, r.slot)};
       }},
  };
}

TEST(GradientTest, EveryOpMatchesFiniteDifferences) {
  for (const GradCase& c : Cases()) CheckGradients(c);
}

TEST(GradientTest, EveryDifferentiableOpHasACase) {
  std::set<std::string> covered;
  for (const GradCase& c : Cases()) covered.insert(c.type);
  for (const OpDefinition& definition : OpRegistry::Get().definitions()) {
    if (FindGradient(definition.type) == nullptr) continue;
    EXPECT_TRUE(covered.count(definition.type)) << definition.type;
  }
  EXPECT_EQ(FindGradient("sgd_update"), nullptr);
  EXPECT_EQ(FindGradient("relu_grad"), nullptr);
}

// The gradient of To() moves back to the input's placement.
TEST(GradientTest, ToMovesTheGradientBack) {
  const Placement first = *Placement::Parse("cpu{0:0-1}");
  const Placement second = *Placement::Parse("cpu{1:0-1}");
  GradCase c{"identity", {{Shape{3, 4}, DType::kF32}}, {}};
  Tensor moved;
  c.build = [&](const std::vector<Tensor>& inputs) {
    Tensor x = inputs[0];
    x.WithPlacement(first);
    moved = To(x, second, NdSbp{Sbp::Split(0)});
    return std::vector<Tensor>{moved};
  };
  c.inspect = [&](const Graph& graph) {
    EXPECT_EQ(graph.tensor(moved.id()).placement, second);
    EXPECT_EQ(graph.tensor(moved.id()).sbp_hint, (NdSbp{Sbp::Split(0)}));
    bool found = false;
    for (const Graph::OpRecord& op : graph.ops()) {
      if (op.type != "identity" || op.name.find("_grad/") == std::string::npos) continue;
      found = true;
      EXPECT_EQ(graph.tensor(op.outputs[0].second).placement, first);
    }
    EXPECT_TRUE(found);
  };
  CheckGradients(c);
}

// A whole MoE layer: route, dispatch, one expert product, combine, plus the aux loss.
TEST(GradientTest, MixtureOfExpertsLayerMatchesFiniteDifferences) {
  const DType f = DType::kF32;
  for (const std::string parallel : {"data", "expert"}) {
    GradCase c{"moe_layer_" + parallel,
               {{Shape{2, 5, 3}, f}, {Shape{2, 5, 4}, f}, {Shape{4, 3, 2}, f}}, {}};
    c.build = [parallel](const std::vector<Tensor>& in) {
      const MoeRouting r = MoeRoute(in[1], /*top_k=*/2, /*capacity=*/2);
      const Tensor buf = MoeDispatch(in[0], r.index, r.slot, /*experts=*/4, /*capacity=*/2);
      const Tensor y = MoeCombine(ExpertMatMul(buf, in[2], parallel), in[1], r.index, r.slot);
      return std::vector<Tensor>{y, MoeAuxLoss(in[1])};
    };
    CheckGradients(c);
  }
}

// Build-time errors name the op, its type and the value.
TEST(GradientTest, MixtureOfExpertsBuildErrorsNameTheOpAndValue) {
  Graph graph("moe_errors");
  Tensor probs = graph.Input("probs", Shape{2, 3, 4}, DType::kF32, "data");
  MoeRoute(probs, /*top_k=*/5, /*capacity=*/2);
  EXPECT_NE(graph.status().message().find("(moe_route) at "), std::string::npos)
      << graph.status();
  EXPECT_NE(graph.status().message().find(
                "attribute top_k=5 > experts=4 (the last axis of probs f32[2, 3, 4]); valid: 1..4"),
            std::string::npos)
      << graph.status();
  Graph other("moe_errors_2");
  Tensor buf = other.Input("buf", Shape{2, 4, 2, 8}, DType::kF32, "data");
  Tensor w = other.Variable("w", Shape{4, 8, 16}, Initializer::Zeros());
  ExpertMatMul(buf, w, "foo");
  EXPECT_NE(other.status().message().find(
                "(expert_matmul) at "),
            std::string::npos)
      << other.status();
  EXPECT_NE(other.status().message().find(
                "attribute parallel=\"foo\" is unknown; valid: \"data\", \"expert\""),
            std::string::npos)
      << other.status();
}

// Grouped-query attention with RoPE: 4 query heads sharing 2 kv heads (hd = 2).
TEST(GradientTest, GroupedQueryAttentionMatchesFiniteDifferences) {
  const DType f = DType::kF32;
  GradCase c{"grouped_query_attention",
             {{Shape{2, 3, 8}, f}, {Shape{8, 8}, f}, {Shape{8, 4}, f}, {Shape{8, 4}, f},
              {Shape{8, 8}, f}},
             {}};
  c.build = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{GroupedQueryAttention(in[0], in[1], in[2], in[3], in[4],
                                                     /*heads=*/4, /*kv_heads=*/2, 100.0)};
  };
  CheckGradients(c);
}

TEST(GradientTest, CausalSelfAttentionMatchesFiniteDifferences) {
  const DType f = DType::kF32;
  GradCase c{"causal_self_attention",
             {{Shape{2, 3, 4}, f}, {Shape{4, 4}, f}, {Shape{4, 4}, f}, {Shape{4, 4}, f},
              {Shape{4, 4}, f}},
             {}};
  c.build = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{
        CausalSelfAttention(in[0], in[1], in[2], in[3], in[4], /*num_heads=*/2)};
  };
  CheckGradients(c);
}

}  // namespace
}  // namespace oneflow
