// The CPU kernels composed: a one-block GPT (embedding plus positions, layer norms,
// causal self-attention, dropout, a GELU MLP with bias, tied output embedding, mean
// cross-entropy), its backward pass from AddBackward and an AdamW update per variable,
// trained for 30 steps op by op with the CPU kernels and with the double-precision
// reference evaluator from the same start. The float loss curve must follow the double
// one (measured within 1e-6 relative; held to 1e-4) and fall: every forward, backward
// and update kernel of a transformer takes part, chained as training chains them.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "oneflow_core/dsl/gradients/backward.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"

namespace oneflow {
namespace {

constexpr int64_t kBatch = 4, kSeq = 8, kHidden = 32, kHeads = 4, kVocab = 32;
constexpr int64_t kSteps = 30;

struct Model {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>("gpt");
  std::vector<Tensor> parameters;
  // Per parameter: initial values N(0, stddev) when stddev > 0, else all `constant`.
  std::vector<std::pair<double, double>> init;  // (stddev, constant)
  std::vector<Tensor> state;                    // Adam's m and v, zero at the start.
};

Model BuildModel() {
  Model model;
  Graph& graph = *model.graph;
  graph.AddDataSource("data", DataSource::SyntheticTokens(1, kVocab));
  Tensor tokens = graph.Input("tokens", Shape{kBatch, kSeq}, DType::kI32, "data");
  Tensor targets = graph.Input("targets", Shape{kBatch, kSeq}, DType::kI32, "data");
  auto parameter = [&](const std::string& name, Shape shape, double stddev, double constant = 0.0) {
    Tensor t = graph.Variable(name, shape, Initializer::Zeros());
    model.parameters.push_back(t);
    model.init.push_back({stddev, constant});
    return t;
  };
  const int64_t rows = kBatch * kSeq;
  Tensor wte = parameter("wte", Shape{kVocab, kHidden}, 0.02);
  Tensor x = Add(Embedding(wte, tokens), parameter("wpe", Shape{kSeq, kHidden}, 0.02));
  Tensor h = LayerNorm(x, parameter("ln1/g", Shape{kHidden}, 0.0, 1.0),
                       parameter("ln1/b", Shape{kHidden}, 0.0));
  Tensor attention = CausalSelfAttention(h, parameter("w_q", Shape{kHidden, kHidden}, 0.02),
                                         parameter("w_k", Shape{kHidden, kHidden}, 0.02),
                                         parameter("w_v", Shape{kHidden, kHidden}, 0.02),
                                         parameter("w_o", Shape{kHidden, kHidden}, 0.02), kHeads);
  x = Add(x, Dropout(attention, 0.1, /*seed=*/7));
  h = Reshape(LayerNorm(x, parameter("ln2/g", Shape{kHidden}, 0.0, 1.0),
                        parameter("ln2/b", Shape{kHidden}, 0.0)),
              {rows, kHidden});
  h = Gelu(BiasAdd(MatMul(h, parameter("w_fc", Shape{kHidden, 4 * kHidden}, 0.02)),
                   parameter("b_fc", Shape{4 * kHidden}, 0.0)));
  x = Add(x, Reshape(MatMul(h, parameter("w_proj", Shape{4 * kHidden, kHidden}, 0.02)),
                     {kBatch, kSeq, kHidden}));
  Tensor final_x = Reshape(LayerNorm(x, parameter("lnf/g", Shape{kHidden}, 0.0, 1.0),
                                     parameter("lnf/b", Shape{kHidden}, 0.0)),
                           {rows, kHidden});
  Tensor logits = MatMul(final_x, wte, /*transpose_a=*/false, /*transpose_b=*/true);
  Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(logits, Reshape(targets, {rows})));
  graph.SetLoss(loss);
  absl::StatusOr<std::vector<Tensor>> grads = AddBackward(graph, loss, model.parameters);
  EXPECT_TRUE(grads.ok()) << grads.status();
  proto::AdamWOptimizer adamw;
  adamw.set_beta1(0.9);
  adamw.set_beta2(0.999);
  adamw.set_epsilon(1e-8);
  adamw.set_weight_decay(0.01);
  proto::LearningRateSchedule schedule;
  schedule.set_kind(proto::LearningRateSchedule::WARMUP_COSINE);
  schedule.set_base_lr(1e-2);
  schedule.set_warmup_steps(5);
  schedule.set_total_steps(10000);
  schedule.set_min_lr(1e-3);
  for (size_t i = 0; grads.ok() && i < model.parameters.size(); ++i) {
    const Tensor& p = model.parameters[i];
    Tensor m = graph.Variable(p.name() + "/m", p.shape(), Initializer::Zeros(), DType::kF32,
                              /*trainable=*/false);
    Tensor v = graph.Variable(p.name() + "/v", p.shape(), Initializer::Zeros(), DType::kF32,
                              /*trainable=*/false);
    model.state.push_back(m);
    model.state.push_back(v);
    AdamWUpdate(p, (*grads)[i], m, v, adamw, schedule);
  }
  return model;
}

TEST(CpuKernelGraphTest, GptTrainsLikeTheReference) {
  Model model = BuildModel();
  ASSERT_TRUE(model.graph->status().ok()) << model.graph->status();
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 1);
  std::map<std::string, Dense> reference_vars, cpu_vars;
  for (size_t i = 0; i < model.parameters.size(); ++i) {
    const Tensor& p = model.parameters[i];
    Dense value = Dense::Zeros(p.shape());
    for (double& v : value.values) {
      v = model.init[i].first > 0 ? model.init[i].first * normal(rng) : model.init[i].second;
    }
    reference_vars[p.name()] = cpu_vars[p.name()] = RoundToFloat(std::move(value));
  }
  for (const Tensor& s : model.state)
    reference_vars[s.name()] = cpu_vars[s.name()] = Dense::Zeros(s.shape());
  const std::string loss = model.graph->loss().name();
  std::vector<double> losses;
  for (int64_t step = 0; step < kSteps; ++step) {
    // The synthetic rule the model can learn: each target is its token plus one.
    Dense tokens = Dense::Zeros(Shape{kBatch, kSeq}, DType::kI32);
    Dense targets = tokens;
    for (int64_t b = 0; b < kBatch; ++b) {
      const int64_t first = static_cast<int64_t>(rng() % kVocab);
      for (int64_t s = 0; s < kSeq; ++s) {
        tokens.values[b * kSeq + s] = static_cast<double>((first + s) % kVocab);
        targets.values[b * kSeq + s] = static_cast<double>((first + s + 1) % kVocab);
      }
    }
    for (auto* feeds : {&reference_vars, &cpu_vars}) {
      (*feeds)["tokens"] = tokens;
      (*feeds)["targets"] = targets;
    }
    absl::StatusOr<TensorValues> want = EvaluateGraph(*model.graph, reference_vars, step);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::map<std::string, Dense>> got =
        EvaluateGraphWithCpuKernels(*model.graph, cpu_vars, step);
    ASSERT_TRUE(got.ok()) << got.status();
    const double want_loss = want->at(loss).values[0];
    EXPECT_NEAR(got->at(loss).values[0], want_loss, 1e-4 * want_loss) << "step " << step;
    losses.push_back(want_loss);
    // Carry each side's updated parameters and state into the next step.
    for (auto& [name, value] : reference_vars) value = want->at(name);
    for (auto& [name, value] : cpu_vars) value = got->at(name);
  }
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "the model does not learn the +1 rule";
}

}  // namespace
}  // namespace oneflow
