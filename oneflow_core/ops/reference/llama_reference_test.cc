// Llama's ops (docs/llama.md) on hand-computed values: rms_norm, RoPE on known positions
// (also where a device holds later positions of a split sequence), silu and SwiGLU, and
// grouped-query attention equal to multi-head attention with each kv head repeated.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/ops/reference/evaluate_graph.h"
#include "oneflow_core/ops/reference/reference.h"

namespace oneflow {
namespace {

Dense Values(Shape shape, std::vector<double> values) {
  return Dense{std::move(shape), std::move(values), DType::kF32};
}

std::vector<double> Eval(const std::string& type, std::vector<Dense> inputs, AttrMap attrs = {},
                         size_t output = 0, const ReferenceContext& context = {}) {
  absl::StatusOr<std::vector<Dense>> out = EvaluateReference(type, inputs, attrs, context);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[output].values : std::vector<double>{};
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << "element " << i;
}

TEST(LlamaReferenceTest, RmsNormOnHandComputedValues) {
  // Row [3, 4]: mean square 12.5, so 1 / rms = 1 / sqrt(12.5); gamma [1, 2].
  const double r = 1 / std::sqrt(12.5 + 1e-12);
  ExpectNear(Eval("rms_norm", {Values({1, 2}, {3, 4}), Values({2}, {1, 2})}, {{"epsilon", 1e-12}}),
             {3 * r, 8 * r});
  // A row of equal values normalizes to ones whatever their size; epsilon 1 of row [1, 1]:
  // 1 / sqrt(1 + 1).
  ExpectNear(Eval("rms_norm", {Values({2, 2}, {-5, -5, 1, 1}), Values({2}, {1, 1})}, {{"epsilon", 1.0}}),
             {-5 / std::sqrt(26.0), -5 / std::sqrt(26.0), 1 / std::sqrt(2.0), 1 / std::sqrt(2.0)});
  // rms_norm_grad with gamma = 1 and dy = x / rms: the gradient of sum(xhat^2)/2 = h/2,
  // a constant, so dx = 0; dgamma = sum of xhat^2 over the row = h = 2.
  const std::vector<double> dx =
      Eval("rms_norm_grad", {Values({1, 2}, {3, 4}), Values({2}, {1, 1}), Values({1, 2}, {3 * r, 4 * r})},
           {{"epsilon", 1e-12}});
  ExpectNear(dx, {0, 0});
  ExpectNear(Eval("rms_norm_grad", {Values({1, 2}, {3, 4}), Values({2}, {1, 1}), Values({1, 2}, {3 * r, 4 * r})},
                  {{"epsilon", 1e-12}}, 1),
             {9 * r * r, 16 * r * r});
}

TEST(LlamaReferenceTest, RotaryEmbeddingOnKnownPositions) {
  // d = 4, base 100: pair (0, 2) turns by p, pair (1, 3) by p * 100^(-1/2) = p / 10. Rows
  // [1, 1, 0, 0] at positions 0, 1, 2 become [cos p, cos(p/10), sin p, sin(p/10)].
  const Dense x = Values({3, 4}, {1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0});
  std::vector<double> want;
  for (double p : {0.0, 1.0, 2.0}) {
    want.insert(want.end(), {std::cos(p), std::cos(p / 10), std::sin(p), std::sin(p / 10)});
  }
  ExpectNear(Eval("rotary_embedding", {x}, {{"base", 100.0}}), want);
  // The same rows as positions 5, 6, 7 of a sequence of 8 (a device's part of S(0)): the
  // angles of the logical positions.
  ReferenceContext later;
  const Shape logical{8, 4};
  later.inputs.push_back({logical, TensorSlice({{5, 8}, {0, 4}})});
  later.outputs.push_back({logical, TensorSlice({{5, 8}, {0, 4}})});
  want.clear();
  for (double p : {5.0, 6.0, 7.0}) {
    want.insert(want.end(), {std::cos(p), std::cos(p / 10), std::sin(p), std::sin(p / 10)});
  }
  ExpectNear(Eval("rotary_embedding", {x}, {{"base", 100.0}}, 0, later), want);
  // [x0, x1] = [0, 2] at position 3 (d = 2): 2 * [-sin 3, cos 3]; inverse turns it back.
  const Dense at3 = Values({4, 2}, {0, 0, 0, 0, 0, 0, 0, 2});
  const std::vector<double> turned = Eval("rotary_embedding", {at3});
  ExpectNear(turned, {0, 0, 0, 0, 0, 0, -2 * std::sin(3.0), 2 * std::cos(3.0)});
  ExpectNear(Eval("rotary_embedding", {Values({4, 2}, turned)}, {{"inverse", true}}), at3.values);
}

TEST(LlamaReferenceTest, SiluAndSwiGluOnHandComputedValues) {
  const double sigmoid1 = 1 / (1 + std::exp(-1.0));
  ExpectNear(Eval("silu", {Values({3}, {0, 1, -1})}), {0, sigmoid1, -(1 - sigmoid1)});
  // silu'(0) = 1/2.
  ExpectNear(Eval("silu_grad", {Values({1}, {3}), Values({1}, {0})}), {1.5});
  Graph graph("swiglu");
  Tensor gate = graph.Variable("gate", Shape{2}, Initializer::Zeros());
  Tensor up = graph.Variable("up", Shape{2}, Initializer::Zeros());
  Tensor out = SwiGlu(gate, up);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  absl::StatusOr<TensorValues> values =
      EvaluateGraph(graph, {{"gate", Values({2}, {1, -1})}, {"up", Values({2}, {2, 3})}});
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectNear(values->at(out.name()).values, {2 * sigmoid1, -3 * (1 - sigmoid1)});
}

// 4 query heads over 2 kv heads (hd 2, hidden 8) equal 4 query heads over 4 kv heads whose
// weights repeat each of the 2 twice: kv head j serves query heads 2j and 2j + 1.
TEST(LlamaReferenceTest, GroupedQueryAttentionEqualsMultiHeadWithRepeatedKvHeads) {
  constexpr int64_t kBatch = 2, kSeq = 3, kHidden = 8, kHeads = 4, kKvHeads = 2, kHeadDim = 2;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto random = [&](Shape shape) {
    Dense d = Dense::Zeros(shape);
    for (double& v : d.values) v = uniform(rng);
    return d;
  };
  const Dense x = random({kBatch, kSeq, kHidden});
  const Dense w_q = random({kHidden, kHidden});
  const Dense w_k = random({kHidden, kKvHeads * kHeadDim});
  const Dense w_v = random({kHidden, kKvHeads * kHeadDim});
  const Dense w_o = random({kHidden, kHidden});
  // Column c of head j (of 4) is column c of kv head j / 2.
  auto repeat = [&](const Dense& w) {
    Dense out = Dense::Zeros(Shape{kHidden, kHeads * kHeadDim});
    for (int64_t row = 0; row < kHidden; ++row) {
      for (int64_t head = 0; head < kHeads; ++head) {
        for (int64_t c = 0; c < kHeadDim; ++c) {
          out.values[row * kHeads * kHeadDim + head * kHeadDim + c] =
              w.values[row * kKvHeads * kHeadDim + (head / 2) * kHeadDim + c];
        }
      }
    }
    return out;
  };
  auto attention = [&](int64_t kv_heads, const Dense& k, const Dense& v) {
    Graph graph("attention");
    auto var = [&](const char* name, const Shape& shape) {
      return graph.Variable(name, shape, Initializer::Zeros());
    };
    Tensor out = GroupedQueryAttention(var("x", x.shape), var("w_q", w_q.shape), var("w_k", k.shape),
                                       var("w_v", v.shape), var("w_o", w_o.shape), kHeads, kv_heads);
    EXPECT_TRUE(graph.status().ok()) << graph.status();
    absl::StatusOr<TensorValues> values =
        EvaluateGraph(graph, {{"x", x}, {"w_q", w_q}, {"w_k", k}, {"w_v", v}, {"w_o", w_o}});
    EXPECT_TRUE(values.ok()) << values.status();
    return values.ok() ? values->at(out.name()).values : std::vector<double>{};
  };
  const std::vector<double> grouped = attention(kKvHeads, w_k, w_v);
  const std::vector<double> repeated = attention(kHeads, repeat(w_k), repeat(w_v));
  ASSERT_EQ(grouped.size(), static_cast<size_t>(kBatch * kSeq * kHidden));
  ExpectNear(grouped, repeated);
  // Not trivially equal: different kv weights give different outputs.
  const std::vector<double> other = attention(kHeads, repeat(w_v), repeat(w_v));
  double difference = 0;
  for (size_t i = 0; i < other.size(); ++i) difference += std::abs(other[i] - grouped[i]);
  EXPECT_GT(difference, 1e-3);
}

// The vocab-parallel cross-entropy on rows [1, 2, 3] (labels 2 and 0): with shift 3 the
// sum of exponentials is e^-2 + e^-1 + 1 = 1.503214724, its log 0.407605964; the target
// logit minus the shift is 0 (label 2) and -2 (label 0). Split [0, 2) + [2, 3) over the
// classes, each slice holds its part, and only the owner of the label its target.
TEST(LlamaReferenceTest, VocabParallelCrossEntropyOnHandComputedValues) {
  const Dense logits = Values({2, 3}, {1, 2, 3, 1, 2, 3});
  const Dense labels{Shape{2}, {2, 0}, DType::kI32};
  const Dense shift = Values({2}, {3, 3});
  const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
  ExpectNear(Eval("reduce_max", {Values({2, 3}, {1, 5, -2, -7, -3, -4})}), {5, -3});
  ExpectNear(Eval("log", {Values({2}, {1, std::exp(2.5)})}), {0, 2.5});
  ExpectNear(Eval("vocab_cross_entropy", {logits, labels, shift}), {e2 + e1 + 1, e2 + e1 + 1});
  ExpectNear(Eval("vocab_cross_entropy", {logits, labels, shift}, {}, 1), {0, -2});
  const Shape logical{2, 3};
  ReferenceContext first, second;
  first.inputs = {{logical, TensorSlice({{0, 2}, {0, 2}})}, {Shape{2}, TensorSlice({{0, 2}})},
                  {Shape{2}, TensorSlice({{0, 2}})}};
  second.inputs = {{logical, TensorSlice({{0, 2}, {2, 3}})}, {Shape{2}, TensorSlice({{0, 2}})},
                   {Shape{2}, TensorSlice({{0, 2}})}};
  const Dense left = Values({2, 2}, {1, 2, 1, 2});
  const Dense right = Values({2, 1}, {3, 3});
  ExpectNear(Eval("vocab_cross_entropy", {left, labels, shift}, {}, 0, first), {e2 + e1, e2 + e1});
  ExpectNear(Eval("vocab_cross_entropy", {left, labels, shift}, {}, 1, first), {0, -2});
  ExpectNear(Eval("vocab_cross_entropy", {right, labels, shift}, {}, 0, second), {1, 1});
  ExpectNear(Eval("vocab_cross_entropy", {right, labels, shift}, {}, 1, second), {0, 0});
  // The gradient with dsum_exp = 1 / sum_exp and dtarget = -1 (the loss's) is softmax
  // minus one-hot, on each slice: softmax([1, 2, 3]) = [0.0900306, 0.2447285, 0.6652410].
  const double sum = e2 + e1 + 1;
  const Dense dsum_exp = Values({2}, {1 / sum, 1 / sum});
  const Dense dtarget = Values({2}, {-1, -1});
  const double p0 = e2 / sum, p1 = e1 / sum, p2 = 1 / sum;
  ExpectNear(Eval("vocab_cross_entropy_grad", {logits, labels, shift, dsum_exp, dtarget}),
             {p0, p1, p2 - 1, p0 - 1, p1, p2});
  first.inputs.insert(first.inputs.end(), 2, {Shape{2}, TensorSlice({{0, 2}})});
  second.inputs.insert(second.inputs.end(), 2, {Shape{2}, TensorSlice({{0, 2}})});
  ExpectNear(Eval("vocab_cross_entropy_grad", {left, labels, shift, dsum_exp, dtarget}, {}, 0, first),
             {p0, p1, p0 - 1, p1});
  ExpectNear(Eval("vocab_cross_entropy_grad", {right, labels, shift, dsum_exp, dtarget}, {}, 0, second),
             {p2 - 1, p2});
  // The composed loss equals sparse_softmax_cross_entropy: log(sum) - 0 and log(sum) + 2.
  Graph graph("vocab_loss");
  Tensor x = graph.Variable("x", logical, Initializer::Zeros());
  Tensor y = graph.Input("y", Shape{2}, DType::kI32, "data");
  Tensor loss = VocabParallelCrossEntropy(x, y);
  Tensor whole = SparseSoftmaxCrossEntropy(x, y);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  absl::StatusOr<TensorValues> values = EvaluateGraph(graph, {{"x", logits}, {"y", labels}});
  ASSERT_TRUE(values.ok()) << values.status();
  ExpectNear(values->at(loss.name()).values, {std::log(sum), std::log(sum) + 2});
  ExpectNear(values->at(whole.name()).values, {std::log(sum), std::log(sum) + 2});
  // A label outside the logical classes, and labels of the wrong shape.
  ReferenceContext forward_first = first;
  forward_first.inputs.resize(3);
  absl::StatusOr<std::vector<Dense>> bad =
      EvaluateReference("vocab_cross_entropy", {left, Dense{Shape{2}, {3, 0}, DType::kI32}, shift}, {}, forward_first);
  EXPECT_EQ(std::string(bad.status().message()), "reference of 'vocab_cross_entropy': label 3 at index 0 is out of range; valid: 0..2");
  absl::StatusOr<std::vector<Dense>> shape =
      EvaluateReference("vocab_cross_entropy", {logits, labels, Values({3}, {3, 3, 3})}, {});
  EXPECT_EQ(std::string(shape.status().message()),
            "reference of 'vocab_cross_entropy': shift [3] must have the shape of logits [2, 3] without its last "
            "(class) axis: [2]");
}

TEST(LlamaReferenceTest, BadArgumentsNameTheArgument) {
  Graph graph("bad");
  Tensor x = graph.Variable("x", Shape{2, 3, 8}, Initializer::Zeros());
  Tensor w = graph.Variable("w", Shape{8, 8}, Initializer::Zeros());
  EXPECT_FALSE(GroupedQueryAttention(x, w, w, w, w, /*heads=*/4, /*kv_heads=*/3).valid());
  EXPECT_NE(graph.status().message().find("kv_heads=3 must divide heads"), std::string::npos)
      << graph.status();
  absl::StatusOr<std::vector<Dense>> odd =
      EvaluateReference("rotary_embedding", {Values({2, 3}, {0, 0, 0, 0, 0, 0})}, {});
  EXPECT_EQ(odd.status().message(),
            "reference of 'rotary_embedding': x [2, 3] must be [..., positions, dims] with an even "
            "last dimension (rotated in pairs), got 3");
}

}  // namespace
}  // namespace oneflow
