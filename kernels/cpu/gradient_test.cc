// The backward kernels against central finite differences of the forward kernels, both
// in float: for loss L(x) = sum(forward(x) * dy), each element of each checked forward
// input is moved by +-eps and (L+ - L-) / (x+ - x-) compared with the backward kernel's
// gradient (x+ - x- is the difference of the rounded floats, not 2 eps). With eps = 1e-2
// on inputs of magnitude 0.5..2, float rounding of L (~1e-7 relative, divided by 2 eps)
// and the O(eps^2) truncation error each stay near 1e-5; the worst case measured was
// 6e-5 (log_softmax). The tolerance, 2e-3 relative plus 2e-4 absolute, keeps a 3x margin
// and still catches a wrong term (dropping mean(g * xhat) from layer_norm_grad's dx is
// off by more than 0.5 here). Inputs stay 0.5 away from relu's kink.
#include <cmath>
#include <functional>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/testing/op_cases.h"

namespace oneflow {
namespace {

constexpr double kEpsilon = 1e-2;
constexpr double kRelativeTolerance = 2e-3;
constexpr double kAbsoluteTolerance = 2e-4;
constexpr int64_t kStep = 2;

using BackwardInputs = std::function<std::vector<Dense>(
    const std::vector<Dense>& x, const std::vector<Dense>& y, const Dense& dy)>;

struct GradientCase {
  std::string forward;
  std::vector<TensorType> inputs;
  AttrMap attrs;
  std::string backward;
  AttrMap backward_attrs;
  BackwardInputs backward_inputs;
  // (forward input, backward output holding its gradient).
  std::vector<std::pair<size_t, size_t>> gradients;
  int64_t index_limit = 0;  // Index inputs are drawn from [0, limit).
  // Rewrites the random forward inputs (valid MoE routing); may be empty.
  PrepareInputs prepare;
};

// Every routing-dependent backward input: dy then the forward's index and slot.
std::vector<Dense> WithRouting(const std::vector<Dense>& x, Dense first, Dense second,
                               size_t index_at) {
  return {std::move(first), std::move(second), x[index_at], x[index_at + 1]};
}

// Backward inputs (dy, forward tensor) for the activation and softmax gradients.
BackwardInputs DyAndOutput() {
  return [](const std::vector<Dense>&, const std::vector<Dense>& y, const Dense& dy) {
    return std::vector<Dense>{dy, y[0]};
  };
}
BackwardInputs DyAndInput() {
  return [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
    return std::vector<Dense>{dy, x[0]};
  };
}

std::vector<GradientCase> Cases() {
  const DType f = DType::kF32;
  using Ints = std::vector<int64_t>;
  const AttrMap dropout = {{"rate", 0.3}, {"seed", int64_t{5}}};
  const AttrMap layer_norm = {{"epsilon", 1e-3}};
  const AttrMap slice = {{"begin", Ints{1, 2}}, {"end", Ints{4, 6}}};
  const AttrMap ring = {{"axis", int64_t{0}}, {"step", int64_t{0}}, {"scale", 0.6}, {"zigzag", true}};
  auto RingGrad = [&ring](int64_t wrt) {
    AttrMap attrs = ring;
    attrs["wrt"] = wrt;
    return attrs;
  };
  auto RingBackwardInputs = []() -> BackwardInputs {
    return [](const std::vector<Dense>& x, const std::vector<Dense>& y, const Dense& dy) {
      return std::vector<Dense>{x[0], x[1], x[2], y[0], dy};
    };
  };
  return {
      {"relu", {{Shape{4, 6}, f}}, {}, "relu_grad", {}, DyAndOutput(), {{0, 0}}},
      {"gelu", {{Shape{4, 6}, f}}, {}, "gelu_grad", {}, DyAndInput(), {{0, 0}}},
      {"dropout", {{Shape{4, 6}, f}}, dropout, "dropout_grad", dropout,
       [](const std::vector<Dense>&, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy};
       },
       {{0, 0}}},
      {"softmax", {{Shape{3, 7}, f}}, {}, "softmax_grad", {}, DyAndOutput(), {{0, 0}}},
      {"silu", {{Shape{4, 6}, f}}, {}, "silu_grad", {}, DyAndInput(), {{0, 0}}},
      {"rms_norm", {{Shape{3, 7}, f}, {Shape{7}, f}}, {{"epsilon", 1e-3}}, "rms_norm_grad",
       {{"epsilon", 1e-3}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[0], x[1], dy};
       },
       {{0, 0}, {1, 1}}},
      // rotary_embedding's gradient is itself with the inverse rotation.
      {"rotary_embedding", {{Shape{2, 5, 6}, f}}, {{"base", 100.0}}, "rotary_embedding",
       {{"base", 100.0}, {"inverse", true}},
       [](const std::vector<Dense>&, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy};
       },
       {{0, 0}}},
      {"log_softmax", {{Shape{3, 7}, f}}, {}, "log_softmax_grad", {}, DyAndOutput(), {{0, 0}}},
      // Ring step 0 over 3 zig-zag blocks (group 2, s = 4): per block the two diagonal
      // chunk pairs (causal triangles), the late query chunk against the early key
      // chunk (whole) and the early against the late (skipped); dq, dk and dv, the
      // log-sum-exp's gradient included (dy covers the last column too). Step 0 because
      // every row sees a key: a row that sees none holds the constant lse -1e9, which
      // would swamp the float loss of the central differences.
      {"ring_attention", {{Shape{3, 2, 8, 3}, f}, {Shape{3, 2, 4, 3}, f}, {Shape{3, 2, 4, 3}, f}}, ring,
       "ring_attention_grad", RingGrad(0), RingBackwardInputs(), {{0, 0}}},
      {"ring_attention", {{Shape{3, 2, 8, 3}, f}, {Shape{3, 2, 4, 3}, f}, {Shape{3, 2, 4, 3}, f}}, ring,
       "ring_attention_grad", RingGrad(1), RingBackwardInputs(), {{1, 0}}},
      {"ring_attention", {{Shape{3, 2, 8, 3}, f}, {Shape{3, 2, 4, 3}, f}, {Shape{3, 2, 4, 3}, f}}, ring,
       "ring_attention_grad", RingGrad(2), RingBackwardInputs(), {{2, 0}}},
      {"layer_norm", {{Shape{3, 7}, f}, {Shape{7}, f}, {Shape{7}, f}}, layer_norm,
       "layer_norm_grad", layer_norm,
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[0], x[1], dy};
       },
       {{0, 0}, {1, 1}, {2, 2}}},
      {"sparse_softmax_cross_entropy", {{Shape{4, 6}, f}, {Shape{4}, DType::kI32}}, {},
       "sparse_softmax_cross_entropy_grad", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[0], x[1], dy};
       },
       {{0, 0}}, 6},
      // vocab_cross_entropy's first output (sum_exp; dtarget = 0): the target's path is
      // checked with the whole loss in VocabCrossEntropyOnSlicesMatchesFiniteDifferences.
      {"vocab_cross_entropy", {{Shape{4, 6}, f}, {Shape{4}, DType::kI32}, {Shape{4}, f}}, {},
       "vocab_cross_entropy_grad", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[0], x[1], x[2], dy, Dense::Zeros(dy.shape, dy.dtype)};
       },
       {{0, 0}}, 6},
      {"embedding", {{Shape{7, 3}, f}, {Shape{5}, DType::kI32}}, {}, "embedding_grad",
       {{"vocab", int64_t{7}}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[1], dy};
       },
       {{0, 0}}, 7},
      {"slice", {{Shape{5, 7}, f}}, slice, "slice_grad", slice,
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[0]};
       },
       {{0, 0}}},
      // reduce_sum_like is the gradient of the broadcast input of a binary op.
      {"add", {{Shape{3, 4, 5}, f}, {Shape{4, 1}, f}}, {}, "reduce_sum_like", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[1]};
       },
       {{1, 0}}},
      // broadcast_like is the gradient of a reduction, without and with kept axes.
      {"reduce_sum", {{Shape{4, 5, 3}, f}}, {{"axes", Ints{1}}}, "broadcast_like",
       {{"axes", Ints{1}}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[0]};
       },
       {{0, 0}}},
      {"reduce_sum", {{Shape{4, 5, 3}, f}}, {{"axes", Ints{0, 2}}, {"keep_dims", true}},
       "broadcast_like", {{"axes", Ints{0, 2}}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[0]};
       },
       {{0, 0}}},
      // causal_mask's gradient is causal_mask with fill 0.
      {"causal_mask", {{Shape{2, 4, 4}, f}}, {{"fill", -1e9}}, "causal_mask", {{"fill", 0.0}},
       [](const std::vector<Dense>&, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy};
       },
       {{0, 0}}},
      // Mixture of experts: B = 2, T = 5, E = 3, K = 2, C = 2 (some choices drop).
      {"moe_dispatch", {{Shape{2, 5, 4}, f}, {Shape{2, 5, 2}, DType::kI32},
                        {Shape{2, 5, 2}, DType::kI32}},
       {{"experts", int64_t{3}}, {"capacity", int64_t{2}}}, "moe_dispatch_grad", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[1], x[2]};
       },
       {{0, 0}}, 2, Routed(1, 3, 2, 2)},
      {"expert_matmul", {{Shape{2, 3, 2, 4}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("data")}}, "expert_matmul_grad_data",
       {{"parallel", std::string("data")}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[1]};
       },
       {{0, 0}}},
      {"expert_matmul", {{Shape{2, 3, 2, 4}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("expert")}}, "expert_matmul_grad_weight",
       {{"parallel", std::string("expert")}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{x[0], dy};
       },
       {{1, 0}}},
      {"moe_combine", {{Shape{2, 3, 2, 4}, f}, {Shape{2, 5, 3}, f}, {Shape{2, 5, 2}, DType::kI32},
                       {Shape{2, 5, 2}, DType::kI32}},
       {}, "moe_combine_grad_buf", {{"capacity", int64_t{2}}},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return WithRouting(x, dy, x[1], 2);
       },
       {{0, 0}}, 2, Routed(2, 3, 2, 2)},
      {"moe_combine", {{Shape{2, 3, 2, 4}, f}, {Shape{2, 5, 3}, f}, {Shape{2, 5, 2}, DType::kI32},
                       {Shape{2, 5, 2}, DType::kI32}},
       {}, "moe_combine_grad_probs", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return WithRouting(x, dy, x[0], 2);
       },
       {{1, 0}}, 2, Routed(2, 3, 2, 2)},
      // Probabilities at least 0.1 apart in every row, so no +-eps step moves an argmax.
      {"moe_aux_loss", {{Shape{2, 5, 3}, f}}, {}, "moe_aux_loss_grad", {},
       [](const std::vector<Dense>& x, const std::vector<Dense>&, const Dense& dy) {
         return std::vector<Dense>{dy, x[0]};
       },
       {{0, 0}}, 0,
       [](std::vector<Dense>* x) {
         std::vector<double>& v = (*x)[0].values;
         for (size_t i = 0; i < v.size(); ++i) {
           v[i] = 0.1 + static_cast<double>((i * 5 + i / 3 * 2) % 11) * 0.1;
         }
         *x = {RoundToFloat((*x)[0])};
       }},
  };
}

Dense Random(const TensorType& type, int64_t index_limit, std::mt19937* rng) {
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  Dense dense = Dense::Zeros(type.shape, type.dtype);
  for (double& v : dense.values) {
    v = IsFloating(type.dtype) ? uniform(*rng) * ((*rng)() % 2 ? -1 : 1)
                               : static_cast<double>((*rng)() % index_limit);
  }
  return RoundToFloat(std::move(dense));
}

std::vector<Dense> RunKernel(const std::string& type, const std::vector<Dense>& inputs,
                       const AttrMap& attrs) {
  ReferenceContext context;
  context.step = kStep;
  absl::StatusOr<std::vector<Dense>> out = RunCpuKernel(type, inputs, attrs, context);
  EXPECT_TRUE(out.ok()) << type << ": " << out.status();
  return out.ok() ? *out : std::vector<Dense>{};
}

// sum(forward(x)[0] * dy), accumulated in double.
double Loss(const GradientCase& c, const std::vector<Dense>& x, const Dense& dy) {
  const std::vector<Dense> y = RunKernel(c.forward, x, c.attrs);
  double loss = 0;
  for (size_t i = 0; !y.empty() && i < dy.values.size(); ++i) loss += y[0].values[i] * dy.values[i];
  return loss;
}

TEST(CpuGradientTest, BackwardKernelsMatchFiniteDifferencesOfForwardKernels) {
  for (const GradientCase& c : Cases()) {
    SCOPED_TRACE(c.backward + " as the gradient of " + c.forward);
    std::mt19937 rng(7);
    std::vector<Dense> x;
    for (const TensorType& type : c.inputs) x.push_back(Random(type, c.index_limit, &rng));
    if (c.prepare) c.prepare(&x);
    const std::vector<Dense> y = RunKernel(c.forward, x, c.attrs);
    ASSERT_FALSE(y.empty());
    const Dense dy = Random(y[0].type(), 0, &rng);
    const std::vector<Dense> grads =
        RunKernel(c.backward, c.backward_inputs(x, y, dy), c.backward_attrs);
    ASSERT_FALSE(grads.empty());
    for (const auto& [input, output] : c.gradients) {
      ASSERT_EQ(grads[output].shape, x[input].shape);
      for (size_t i = 0; i < x[input].values.size(); ++i) {
        std::vector<Dense> plus = x, minus = x;
        plus[input].values[i] = static_cast<float>(x[input].values[i] + kEpsilon);
        minus[input].values[i] = static_cast<float>(x[input].values[i] - kEpsilon);
        const double numeric = (Loss(c, plus, dy) - Loss(c, minus, dy)) /
                               (plus[input].values[i] - minus[input].values[i]);
        const double analytic = grads[output].values[i];
        EXPECT_NEAR(analytic, numeric, kRelativeTolerance * std::abs(numeric) + kAbsoluteTolerance)
            << "input " << input << " element " << i;
      }
    }
  }
}

// Megatron's vocab-parallel loss on every slicing of the class axis (whole, 2 and 3
// parts): shift = the maximum of the parts' reduce_max, sum_exp and target the sums of
// the parts' vocab_cross_entropy, L = sum_rows dy * (log(sum_exp) - target). The gradient
// assembled from each part's vocab_cross_entropy_grad (dsum_exp = dy / sum_exp, dtarget
// = -dy, the shift held constant) must match central differences of L, where moving a
// logit also moves the shift: the shift's path contributes nothing to the true gradient.
// The loss itself equals sparse_softmax_cross_entropy's.
struct VocabLoss {
  double loss = 0;
  std::vector<double> sum_exp;  // per row
  std::vector<double> shift;
};

VocabLoss VocabLossOnSlices(const Dense& logits, const Dense& labels, const Dense& dy,
                            const std::vector<Range>& parts) {
  const int64_t rows = logits.shape.dim(0);
  VocabLoss result;
  result.sum_exp.assign(rows, 0);
  result.shift.assign(rows, -1e30);
  std::vector<double> target(rows, 0);
  const Shape rows_shape{rows};
  const TensorLayout whole_rows{rows_shape, TensorSlice({{0, rows}})};
  for (const Range& part : parts) {
    const TensorSlice slice({{0, rows}, part});
    ReferenceContext context;
    context.inputs = {{logits.shape, slice}};
    const absl::StatusOr<std::vector<Dense>> max = RunCpuKernel("reduce_max", {SliceOf(logits, slice)}, {}, context);
    EXPECT_TRUE(max.ok()) << max.status();
    if (!max.ok()) return result;
    for (int64_t r = 0; r < rows; ++r) result.shift[r] = std::max(result.shift[r], (*max)[0].values[r]);
  }
  const Dense shift{rows_shape, result.shift, DType::kF32};
  for (const Range& part : parts) {
    const TensorSlice slice({{0, rows}, part});
    ReferenceContext context;
    context.inputs = {{logits.shape, slice}, whole_rows, whole_rows};
    const absl::StatusOr<std::vector<Dense>> out =
        RunCpuKernel("vocab_cross_entropy", {SliceOf(logits, slice), labels, shift}, {}, context);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return result;
    for (int64_t r = 0; r < rows; ++r) {
      result.sum_exp[r] += (*out)[0].values[r];
      target[r] += (*out)[1].values[r];
    }
  }
  for (int64_t r = 0; r < rows; ++r) result.loss += dy.values[r] * (std::log(result.sum_exp[r]) - target[r]);
  return result;
}

TEST(CpuGradientTest, VocabCrossEntropyOnSlicesMatchesFiniteDifferences) {
  std::mt19937 rng(11);
  const Dense logits = Random({Shape{4, 10}, DType::kF32}, 0, &rng);
  const Dense labels{Shape{4}, {0, 3, 7, 9}, DType::kI32};
  const Dense dy = Random({Shape{4}, DType::kF32}, 0, &rng);
  const std::vector<double> expected_loss =
      RunKernel("sparse_softmax_cross_entropy", {logits, labels}, {})[0].values;
  for (const std::vector<Range>& parts : {std::vector<Range>{{0, 10}}, std::vector<Range>{{0, 4}, {4, 10}},
                                          std::vector<Range>{{0, 3}, {3, 7}, {7, 10}}}) {
    SCOPED_TRACE(absl::StrCat(parts.size(), " parts"));
    const VocabLoss at = VocabLossOnSlices(logits, labels, dy, parts);
    double want = 0;
    for (int64_t r = 0; r < 4; ++r) want += dy.values[r] * expected_loss[r];
    EXPECT_NEAR(at.loss, want, 1e-5);
    Dense dsum_exp = Dense::Zeros(Shape{4}, DType::kF32), dtarget = dsum_exp;
    for (int64_t r = 0; r < 4; ++r) {
      dsum_exp.values[r] = dy.values[r] / at.sum_exp[r];
      dtarget.values[r] = -dy.values[r];
    }
    const Dense shift{Shape{4}, at.shift, DType::kF32};
    Dense gradient = Dense::Zeros(logits.shape, DType::kF32);
    const TensorLayout whole_rows{Shape{4}, TensorSlice({{0, 4}})};
    for (const Range& part : parts) {
      const TensorSlice slice({{0, 4}, part});
      ReferenceContext context;
      context.inputs = {{logits.shape, slice}, whole_rows, whole_rows, whole_rows, whole_rows};
      context.outputs = {{logits.shape, slice}};
      const absl::StatusOr<std::vector<Dense>> local = RunCpuKernel(
          "vocab_cross_entropy_grad", {SliceOf(logits, slice), labels, shift, dsum_exp, dtarget}, {}, context);
      ASSERT_TRUE(local.ok()) << local.status();
      const int64_t width = part.end - part.begin;
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t j = 0; j < width; ++j) {
          gradient.values[r * 10 + part.begin + j] = (*local)[0].values[r * width + j];
        }
      }
    }
    for (size_t i = 0; i < logits.values.size(); ++i) {
      Dense plus = logits, minus = logits;
      plus.values[i] = static_cast<float>(logits.values[i] + kEpsilon);
      minus.values[i] = static_cast<float>(logits.values[i] - kEpsilon);
      const double numeric = (VocabLossOnSlices(plus, labels, dy, parts).loss -
                              VocabLossOnSlices(minus, labels, dy, parts).loss) /
                             (plus.values[i] - minus.values[i]);
      EXPECT_NEAR(gradient.values[i], numeric, kRelativeTolerance * std::abs(numeric) + kAbsoluteTolerance)
          << "logit " << i;
    }
  }
}

}  // namespace
}  // namespace oneflow
