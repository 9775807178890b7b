// The reference kernels on hand-computed values, the learning-rate schedules, the
// dropout mask, and the whole-graph evaluator.
#include <cmath>

#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/learning_rate.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

Dense Values(Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  return Dense{std::move(shape), std::move(values), dtype};
}

std::vector<double> Eval(const std::string& type, std::vector<Dense> inputs, AttrMap attrs = {},
                        size_t output = 0) {
  absl::StatusOr<std::vector<Dense>> out = EvaluateReference(type, inputs, attrs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[output].values : std::vector<double>{};
}

TEST(ReferenceTest, EveryRegisteredOpHasAKernel) {
  for (const OpDefinition& definition : OpRegistry::Get().definitions()) {
    absl::StatusOr<std::vector<Dense>> out = EvaluateReference(definition.type, {}, {});
    // Wrong arity is the expected complaint; a missing kernel would be UNIMPLEMENTED.
    EXPECT_NE(out.status().code(), absl::StatusCode::kUnimplemented) << out.status();
  }
}

TEST(ReferenceTest, HandComputedValues) {
  const Dense a = Values({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(Eval("matmul", {a, a}), (std::vector<double>{7, 10, 15, 22}));
  EXPECT_EQ(Eval("matmul", {a, a}, {{"transpose_a", true}}), (std::vector<double>{10, 14, 14, 20}));
  EXPECT_EQ(Eval("slice", {a}, {{"begin", std::vector<int64_t>{1, 0}}, {"end", std::vector<int64_t>{2, 2}}}),
            (std::vector<double>{3, 4}));
  EXPECT_EQ(Eval("slice_grad", {Values({1, 2}, {3, 4}), a},
                {{"begin", std::vector<int64_t>{1, 0}}, {"end", std::vector<int64_t>{2, 2}}}),
            (std::vector<double>{0, 0, 3, 4}));
  EXPECT_EQ(Eval("concat", {a, Values({2, 1}, {5, 6})}, {{"axis", int64_t{1}}}),
            (std::vector<double>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(Eval("causal_mask", {a}, {{"fill", -7.0}}), (std::vector<double>{1, -7, 3, 4}));
  EXPECT_EQ(Eval("reduce_sum_like", {a, Values({1, 2}, {0, 0})}), (std::vector<double>{4, 6}));
  EXPECT_EQ(Eval("broadcast_like", {Values({2}, {5, 6}), a}, {{"axes", std::vector<int64_t>{1}}}),
            (std::vector<double>{5, 5, 6, 6}));
  EXPECT_EQ(Eval("reduce_mean", {a}, {{"axes", std::vector<int64_t>{0}}}),
            (std::vector<double>{2, 3}));
  EXPECT_EQ(Eval("embedding_grad", {Values({3}, {1, 0, 1}, DType::kI32), Values({3, 1}, {1, 2, 4})},
                {{"vocab", int64_t{3}}}),
            (std::vector<double>{2, 5, 0}));
  EXPECT_EQ(Eval("ones_like", {a}), (std::vector<double>{1, 1, 1, 1}));
  // layer_norm_grad: with dy = 1 everywhere dbeta counts rows and dx vanishes.
  const std::vector<double> dx = Eval("layer_norm_grad", {a, Values({2}, {1, 1}), Values({2, 2}, {1, 1, 1, 1})});
  for (double v : dx) EXPECT_NEAR(v, 0, 1e-12);
  EXPECT_EQ(Eval("layer_norm_grad", {a, Values({2}, {1, 1}), Values({2, 2}, {1, 1, 1, 1})}, {}, 2),
            (std::vector<double>{2, 2}));
}

TEST(ReferenceTest, IndexOutOfRangeIsAnError) {
  absl::StatusOr<std::vector<Dense>> out = EvaluateReference(
      "embedding", {Values({3, 1}, {1, 2, 3}), Values({2}, {0, 3}, DType::kI32)}, {});
  EXPECT_EQ(out.status().message(),
            "reference of 'embedding': id 3 at index 1 is out of range; valid: 0..2");
}

TEST(ReferenceTest, DropoutMaskIsSharedByForwardAndBackwardAndVariesByStep) {
  const Dense ones = Values({1000}, std::vector<double>(1000, 1.0));
  const AttrMap attrs = {{"rate", 0.25}, {"seed", int64_t{3}}};
  const std::vector<double> forward = Eval("dropout", {ones}, attrs);
  EXPECT_EQ(Eval("dropout_grad", {ones}, attrs), forward);
  int kept = 0;
  for (double v : forward) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 1 / 0.75) < 1e-12);
    kept += v != 0.0;
  }
  EXPECT_NEAR(kept, 750, 60);
  ReferenceContext next;
  next.step = 1;
  EXPECT_NE((*EvaluateReference("dropout", {ones}, attrs, next))[0].values, forward);
}

TEST(ReferenceTest, LearningRateSchedules) {
  proto::LearningRateSchedule schedule;
  schedule.set_kind(proto::LearningRateSchedule::WARMUP_COSINE);
  schedule.set_base_lr(1.0);
  schedule.set_warmup_steps(4);
  schedule.set_total_steps(14);
  schedule.set_min_lr(0.1);
  const AttrMap attrs = LearningRateAttrs(schedule);
  ASSERT_TRUE(CheckLearningRateAttrs(attrs).ok());
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 4), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 9), 0.55);  // Half way: the mean of base and min.
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 14), 0.1);
  EXPECT_DOUBLE_EQ(LearningRateAt(attrs, 100), 0.1);
  schedule.set_kind(proto::LearningRateSchedule::CONSTANT);
  EXPECT_DOUBLE_EQ(LearningRateAt(LearningRateAttrs(schedule), 100), 1.0);
}

TEST(ReferenceTest, OptimizerUpdates) {
  const Dense param = Values({2}, {1.0, -2.0});
  const Dense grad = Values({2}, {0.5, -4.0});
  AttrMap sgd = {{"momentum", 0.5}, {"base_lr", 0.1}};
  // buffer = 0.5 * [2, 2] + grad = [1.5, -3]; param -= 0.1 * buffer.
  const std::vector<double> new_param = Eval("sgd_update", {param, grad, Values({2}, {2, 2})}, sgd);
  EXPECT_NEAR(new_param[0], 0.85, 1e-12);
  EXPECT_NEAR(new_param[1], -1.7, 1e-12);
  EXPECT_EQ(Eval("sgd_update", {param, grad, Values({2}, {2, 2})}, sgd, 1),
            (std::vector<double>{1.5, -3.0}));
  // AdamW's first step moves each parameter by lr * sign(grad), after the decay.
  AttrMap adamw = {{"base_lr", 0.01}, {"weight_decay", 0.1}, {"epsilon", 1e-12}};
  const Dense zeros = Values({2}, {0, 0});
  const std::vector<double> adam = Eval("adamw_update", {param, grad, zeros, zeros}, adamw);
  EXPECT_NEAR(adam[0], 1.0 * (1 - 0.001) - 0.01, 1e-9);
  EXPECT_NEAR(adam[1], -2.0 * (1 - 0.001) + 0.01, 1e-9);
  EXPECT_NEAR(Eval("adamw_update", {param, grad, zeros, zeros}, adamw, 2)[1], 0.001 * 16, 1e-12);
}

TEST(ReferenceTest, EvaluateGraphRunsOpsAndAppliesUpdates) {
  Graph graph("g");
  // Graph::FromJob rebuilds inputs from their data source.
  graph.AddDataSource("data", DataSource::SyntheticClassification(/*seed=*/1, /*num_classes=*/2));
  Tensor x = graph.Input("x", Shape{2}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{2}, Initializer::Zeros());
  Tensor m = graph.Variable("m", Shape{2}, Initializer::Zeros(), DType::kF32, false);
  Tensor y = Mul(x, w);
  proto::SgdOptimizer sgd;
  proto::LearningRateSchedule schedule;
  schedule.set_base_lr(0.5);
  SgdUpdate(w, y, m, sgd, schedule);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  absl::StatusOr<TensorValues> values =
      EvaluateGraph(graph, {{"x", Values({2}, {1, 2})}, {"w", Values({2}, {3, 4})},
                            {"m", Values({2}, {0, 0})}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at(y.name()).values, (std::vector<double>{3, 8}));
  EXPECT_EQ(values->at("w").values, (std::vector<double>{1.5, 0}));  // w - 0.5 * y.
  EXPECT_EQ(values->at("m").values, (std::vector<double>{3, 8}));

  absl::StatusOr<TensorValues> missing = EvaluateGraph(graph, {{"x", Values({2}, {1, 2})}});
  EXPECT_EQ(missing.status().message(),
            "op 'mul_0' reads tensor 'w' (f32[2]), which is neither fed nor computed");
  absl::StatusOr<TensorValues> from_job =
      EvaluateJob(*graph.Build(), {{"x", Values({2}, {1, 2})}, {"w", Values({2}, {3, 4})},
                                   {"m", Values({2}, {0, 0})}});
  ASSERT_TRUE(from_job.ok()) << from_job.status();
  EXPECT_EQ(from_job->at("w").values, (std::vector<double>{1.5, 0}));
}

}  // namespace
}  // namespace oneflow
