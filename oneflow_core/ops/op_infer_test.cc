// Shape/dtype inference of the op definitions, and the exact error messages users see
// (the graph prefixes them with the op's name, type and source line).
#include "gtest/gtest.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

using Ints = std::vector<int64_t>;
const DType f = DType::kF32;
const DType i32 = DType::kI32;

absl::StatusOr<std::vector<TensorType>> Infer(const std::string& type,
                                              std::vector<TensorType> inputs,
                                              AttrMap attrs = {}) {
  return (*OpRegistry::Get().Find(type))->infer(inputs, attrs);
}

std::string Error(const std::string& type, std::vector<TensorType> inputs, AttrMap attrs = {}) {
  absl::StatusOr<std::vector<TensorType>> result = Infer(type, std::move(inputs), std::move(attrs));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << type;
  return std::string(result.status().message());
}

Shape OutShape(const std::string& type, std::vector<TensorType> inputs, AttrMap attrs = {},
               size_t output = 0) {
  absl::StatusOr<std::vector<TensorType>> result = Infer(type, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? (*result)[output].shape : Shape{};
}

TEST(OpInferTest, ForwardShapes) {
  EXPECT_EQ(OutShape("matmul", {{Shape{2, 3, 4}, f}, {Shape{2, 4, 5}, f}}), (Shape{2, 3, 5}));
  EXPECT_EQ(OutShape("add", {{Shape{4, 1}, f}, {Shape{3}, f}}), (Shape{4, 3}));
  EXPECT_EQ(OutShape("reshape", {{Shape{4, 6}, f}}, {{"shape", Ints{-1, 3}}}), (Shape{8, 3}));
  EXPECT_EQ(OutShape("reduce_mean", {{Shape{4, 6}, f}}, {{"axes", Ints{-1}}}), (Shape{4}));
  EXPECT_EQ(OutShape("embedding", {{Shape{100, 16}, f}, {Shape{2, 8}, DType::kI64}}),
            (Shape{2, 8, 16}));
  EXPECT_EQ(OutShape("slice", {{Shape{4, 6}, f}}, {{"begin", Ints{1, 0}}, {"end", Ints{3, 6}}}),
            (Shape{2, 6}));
  EXPECT_EQ(OutShape("concat", {{Shape{4, 2}, f}, {Shape{4, 3}, f}}, {{"axis", int64_t{-1}}}),
            (Shape{4, 5}));
  EXPECT_EQ(OutShape("causal_mask", {{Shape{2, 5, 5}, f}}), (Shape{2, 5, 5}));
  EXPECT_EQ(OutShape("ones_like", {{Shape{}, f}}), (Shape{}));
  EXPECT_EQ(OutShape("identity", {{Shape{3}, i32}}), (Shape{3}));
}

TEST(OpInferTest, BackwardShapes) {
  EXPECT_EQ(OutShape("layer_norm_grad", {{Shape{4, 6}, f}, {Shape{6}, f}, {Shape{4, 6}, f}}, {}, 1),
            (Shape{6}));
  EXPECT_EQ(OutShape("embedding_grad", {{Shape{2, 3}, i32}, {Shape{2, 3, 8}, f}}, {{"vocab", int64_t{50}}}),
            (Shape{50, 8}));
  EXPECT_EQ(OutShape("slice_grad", {{Shape{2, 6}, f}, {Shape{4, 6}, f}},
                     {{"begin", Ints{1, 0}}, {"end", Ints{3, 6}}}),
            (Shape{4, 6}));
  EXPECT_EQ(OutShape("reduce_sum_like", {{Shape{4, 6}, f}, {Shape{1, 6}, f}}), (Shape{1, 6}));
  EXPECT_EQ(OutShape("broadcast_like", {{Shape{4}, f}, {Shape{4, 6}, f}}, {{"axes", Ints{1}}}),
            (Shape{4, 6}));
  EXPECT_TRUE(Infer("sgd_update", {{Shape{3}, f}, {Shape{3}, f}, {Shape{3}, f}})->empty());
}

TEST(OpInferTest, ForwardErrors) {
  EXPECT_EQ(Error("add", {{Shape{4, 2}, f}, {Shape{3}, f}}),
            "shapes x [4, 2] and y [3] do not broadcast: at output axis 1 sizes 2 and 3 differ "
            "and neither is 1");
  EXPECT_EQ(Error("reshape", {{Shape{4, 6}, f}}, {{"shape", Ints{5, -1}}}),
            "cannot reshape f32[4, 6] (24 elements) to [5, -1]");
  EXPECT_EQ(Error("transpose", {{Shape{4, 6}, f}}, {{"perm", Ints{0, 0}}}),
            "attribute perm=[0, 0] is not a permutation of 0..1 for x f32[4, 6]");
  EXPECT_EQ(Error("reduce_sum", {{Shape{4, 6}, f}}, {{"axes", Ints{2}}}),
            "attribute axes=2 is out of range for rank 2; valid: -2..1");
  EXPECT_EQ(Error("sparse_softmax_cross_entropy", {{Shape{4, 6}, f}, {Shape{4}, f}}),
            "labels must be i32 or i64 class indices, got f32[4]");
  EXPECT_EQ(Error("layer_norm", {{Shape{4, 6}, f}, {Shape{5}, f}, {Shape{6}, f}}),
            "gamma [5] must be [6], the last dimension of x [4, 6]");
  EXPECT_EQ(Error("bias_add", {{Shape{4, 6}, f}, {Shape{4}, f}}),
            "bias [4] does not match the last dimension of x [4, 6]; expected [6]");
  EXPECT_EQ(Error("relu", {{Shape{4}, i32}}),
            "input 'x' must be a floating type (f32, f16, bf16), got i32[4]");
  EXPECT_EQ(Error("dropout", {{Shape{4}, f}}, {{"rate", 1.0}}),
            "attribute rate=1 is out of range; valid: 0 <= rate < 1");
}

TEST(OpInferTest, NewOpErrors) {
  EXPECT_EQ(Error("slice", {{Shape{4, 6}, f}}, {{"begin", Ints{0}}, {"end", Ints{2}}}),
            "attributes begin=[0] end=[2] must have one entry per axis of x [4, 6] (2)");
  EXPECT_EQ(Error("slice", {{Shape{4, 6}, f}}, {{"begin", Ints{0, 5}}, {"end", Ints{4, 7}}}),
            "attributes begin=[0, 5] end=[4, 7] do not fit x [4, 6]: axis 1 needs "
            "0 <= begin <= end <= 6, got 5..7");
  EXPECT_EQ(Error("concat", {{Shape{4, 2}, f}, {Shape{3, 3}, f}}, {{"axis", int64_t{1}}}),
            "inputs a [4, 2] and b [3, 3] must match on every axis but axis=1; they differ at "
            "axis 0 (4 vs 3)");
  EXPECT_EQ(Error("concat", {{Shape{4, 2}, f}, {Shape{4, 2}, f}}, {{"axis", int64_t{2}}}),
            "attribute axis=2 is out of range for rank 2; valid: -2..1");
  EXPECT_EQ(Error("causal_mask", {{Shape{2, 4, 5}, f}}),
            "x [2, 4, 5] must be square in its last two dimensions [..., s, s] (query position "
            "x key position), got 4 x 5");
  EXPECT_EQ(Error("ones_like", {{Shape{3}, i32}}),
            "input 'x' must be a floating type (f32, f16, bf16), got i32[3]");
}

TEST(OpInferTest, BackwardErrors) {
  EXPECT_EQ(Error("relu_grad", {{Shape{4, 6}, f}, {Shape{4, 5}, f}}),
            "inputs 'dy' f32[4, 6] and 'y' f32[4, 5] must have the same type");
  EXPECT_EQ(Error("layer_norm_grad", {{Shape{4, 6}, f}, {Shape{6}, f}, {Shape{6}, f}}),
            "inputs 'dy' f32[6] and 'x' f32[4, 6] must have the same type");
  EXPECT_EQ(Error("sparse_softmax_cross_entropy_grad", {{Shape{4, 6}, f}, {Shape{4}, i32}, {Shape{6}, f}}),
            "labels [4] and dy [6] must have the shape of logits [4, 6] without its last (class) "
            "axis: [4]");
  EXPECT_EQ(Error("embedding_grad", {{Shape{4}, i32}, {Shape{4, 8}, f}}),
            "attribute vocab=0 must be > 0 (the rows of the forward table)");
  EXPECT_EQ(Error("embedding_grad", {{Shape{4}, f}, {Shape{4, 8}, f}}, {{"vocab", int64_t{9}}}),
            "input 'ids' must be i32 or i64 indices, got f32[4]");
  EXPECT_EQ(Error("slice_grad", {{Shape{2, 5}, f}, {Shape{4, 6}, f}},
                  {{"begin", Ints{1, 0}}, {"end", Ints{3, 6}}}),
            "dy [2, 5] must have the sliced shape [2, 6] of like [4, 6]");
  EXPECT_EQ(Error("reduce_sum_like", {{Shape{4, 6}, f}, {Shape{3, 1}, f}}),
            "like [3, 1] does not broadcast to x [4, 6]: like's axis 0 is 3, must be 1 or 4; "
            "like must broadcast to x (numpy rules)");
  EXPECT_EQ(Error("broadcast_like", {{Shape{6}, f}, {Shape{4, 6}, f}}, {{"axes", Ints{1}}}),
            "x [6] is not like [4, 6] reduced over axes=[1]; expected [4] or [4, 1]");
}

TEST(OpInferTest, UpdateErrors) {
  const std::vector<TensorType> three = {{Shape{4, 6}, f}, {Shape{4, 6}, f}, {Shape{4, 6}, f}};
  EXPECT_EQ(Error("sgd_update", {{Shape{4, 6}, f}, {Shape{4, 5}, f}, {Shape{4, 6}, f}}),
            "inputs 'grad' f32[4, 5] and 'param' f32[4, 6] must have the same type");
  EXPECT_EQ(Error("sgd_update", {{Shape{4}, i32}, {Shape{4}, i32}, {Shape{4}, i32}}),
            "input 'param' must be a floating type (f32, f16, bf16), got i32[4]");
  EXPECT_EQ(Error("sgd_update", three, {{"momentum", 1.0}}),
            "attribute momentum=1 is out of range; valid: 0 <= momentum < 1");
  EXPECT_EQ(Error("sgd_update", three, {{"lr_schedule", std::string("linear")}}),
            "attribute lr_schedule=\"linear\" is unknown; valid: \"constant\", \"warmup_cosine\"");
  EXPECT_EQ(Error("sgd_update", three,
                  {{"lr_schedule", std::string("warmup_cosine")}, {"base_lr", 0.1},
                   {"warmup_steps", int64_t{10}}, {"total_steps", int64_t{5}}}),
            "attributes warmup_steps=10 total_steps=5 are invalid for "
            "lr_schedule=\"warmup_cosine\"; valid: 0 <= warmup_steps <= total_steps, "
            "total_steps > 0");
  EXPECT_EQ(Error("adamw_update", {{Shape{4, 6}, f}, {Shape{4, 6}, f}, {Shape{4, 6}, f},
                                   {Shape{6}, f}}),
            "inputs 'v' f32[6] and 'param' f32[4, 6] must have the same type");
  EXPECT_EQ(Error("adamw_update", {{Shape{3}, f}, {Shape{3}, f}, {Shape{3}, f}, {Shape{3}, f}},
                  {{"beta2", -0.5}}),
            "attribute beta2=-0.5 is out of range; valid: 0 <= beta2 < 1");
  EXPECT_EQ(Error("adamw_step", {{Shape{3}, f}, {Shape{3}, f}, {Shape{3}, f}, {Shape{3}, f}},
                  {{"variance_frozen_from", int64_t{-2}}}),
            "attribute variance_frozen_from=-2 must be >= 0 (0: never frozen)");
}

TEST(OpInferTest, MixtureOfExpertsShapes) {
  const AttrMap route = {{"top_k", int64_t{2}}, {"capacity", int64_t{3}}};
  const std::vector<TensorType> probs = {{Shape{4, 6, 5}, f}};
  EXPECT_EQ(Infer("moe_route", probs, route)->at(0), (TensorType{Shape{4, 6, 2}, i32}));
  EXPECT_EQ(Infer("moe_route", probs, route)->at(1), (TensorType{Shape{4, 6, 2}, i32}));
  EXPECT_EQ(Infer("moe_route", probs, route)->at(2), (TensorType{Shape{4}, f}));
  const TensorType choices{Shape{4, 6, 2}, i32};
  EXPECT_EQ(OutShape("moe_dispatch", {{Shape{4, 6, 8}, f}, choices, choices},
                     {{"experts", int64_t{5}}, {"capacity", int64_t{3}}}),
            (Shape{4, 5, 3, 8}));
  EXPECT_EQ(OutShape("expert_matmul", {{Shape{4, 5, 3, 8}, f}, {Shape{5, 8, 16}, f}},
                     {{"parallel", std::string("expert")}}),
            (Shape{4, 5, 3, 16}));
  EXPECT_EQ(OutShape("moe_combine", {{Shape{4, 5, 3, 8}, f}, {Shape{4, 6, 5}, f}, choices, choices}),
            (Shape{4, 6, 8}));
  EXPECT_EQ(OutShape("moe_aux_loss", probs), (Shape{4}));
  EXPECT_EQ(OutShape("moe_dispatch_grad", {{Shape{4, 5, 3, 8}, f}, choices, choices}),
            (Shape{4, 6, 8}));
  EXPECT_EQ(OutShape("expert_matmul_grad_data", {{Shape{4, 5, 3, 16}, f}, {Shape{5, 8, 16}, f}}),
            (Shape{4, 5, 3, 8}));
  EXPECT_EQ(OutShape("expert_matmul_grad_weight", {{Shape{4, 5, 3, 8}, f}, {Shape{4, 5, 3, 16}, f}}),
            (Shape{5, 8, 16}));
  EXPECT_EQ(OutShape("moe_combine_grad_buf", {{Shape{4, 6, 8}, f}, {Shape{4, 6, 5}, f}, choices, choices},
                     {{"capacity", int64_t{3}}}),
            (Shape{4, 5, 3, 8}));
  EXPECT_EQ(OutShape("moe_combine_grad_probs",
                     {{Shape{4, 6, 8}, f}, {Shape{4, 5, 3, 8}, f}, choices, choices}),
            (Shape{4, 6, 5}));
  EXPECT_EQ(OutShape("moe_aux_loss_grad", {{Shape{4}, f}, {Shape{4, 6, 5}, f}}), (Shape{4, 6, 5}));
}

TEST(OpInferTest, MixtureOfExpertsErrors) {
  const std::vector<TensorType> probs = {{Shape{2, 3, 4}, f}};
  EXPECT_EQ(Error("moe_route", probs, {{"top_k", int64_t{5}}, {"capacity", int64_t{2}}}),
            "attribute top_k=5 > experts=4 (the last axis of probs f32[2, 3, 4]); valid: 1..4");
  EXPECT_EQ(Error("moe_route", probs, {{"top_k", int64_t{0}}, {"capacity", int64_t{2}}}),
            "attribute top_k=0 < 1 (the last axis of probs f32[2, 3, 4]); valid: 1..4");
  EXPECT_EQ(Error("moe_route", probs, {{"top_k", int64_t{1}}, {"capacity", int64_t{0}}}),
            "attribute capacity=0 must be > 0 (token slots per expert per sample)");
  EXPECT_EQ(Error("moe_route", {{Shape{2, 3, 4}, i32}}, {{"top_k", int64_t{1}}}),
            "input 'probs' must be a floating type (f32, f16, bf16), got i32[2, 3, 4]");
  EXPECT_EQ(Error("moe_route", {{Shape{6, 4}, f}}, {{"top_k", int64_t{1}}}),
            "input 'probs' must have rank 3, got f32[6, 4]");
  const TensorType choices{Shape{2, 3, 2}, i32};
  const AttrMap dispatch = {{"experts", int64_t{4}}, {"capacity", int64_t{2}}};
  EXPECT_EQ(Error("moe_dispatch", {{Shape{2, 5, 8}, f}, choices, choices}, dispatch),
            "index [2, 3, 2] must be [2, 5, top_k]: the batch and token axes of x [2, 5, 8]");
  EXPECT_EQ(Error("moe_dispatch", {{Shape{2, 3, 8}, f}, choices, {Shape{2, 3, 1}, i32}}, dispatch),
            "index [2, 3, 2] and slot [2, 3, 1] must have the same shape [batch, tokens, top_k]");
  EXPECT_EQ(Error("moe_dispatch", {{Shape{2, 3, 8}, f}, {Shape{2, 3, 2}, f}, choices}, dispatch),
            "input 'index' must be i32 or i64 indices, got f32[2, 3, 2]");
  EXPECT_EQ(Error("moe_dispatch", {{Shape{2, 3, 8}, f}, choices, choices},
                  {{"experts", int64_t{4}}, {"capacity", int64_t{-1}}}),
            "attribute capacity=-1 must be > 0 (token slots per expert per sample)");
  EXPECT_EQ(Error("expert_matmul", {{Shape{2, 4, 2, 8}, f}, {Shape{4, 8, 16}, f}},
                  {{"parallel", std::string("foo")}}),
            "attribute parallel=\"foo\" is unknown; valid: \"data\", \"expert\"");
  EXPECT_EQ(Error("expert_matmul", {{Shape{2, 4, 2, 8}, f}, {Shape{3, 8, 16}, f}}),
            "buf [2, 4, 2, 8] has 4 experts (axis 1) but w [3, 8, 16] has 3 (axis 0); they must "
            "be equal");
  EXPECT_EQ(Error("expert_matmul", {{Shape{2, 4, 2, 8}, f}, {Shape{4, 6, 16}, f}}),
            "buf [2, 4, 2, 8] has 8 hidden (axis 3) but w [4, 6, 16] has 6 (axis 1); they must "
            "be equal");
  EXPECT_EQ(Error("expert_matmul_grad_weight", {{Shape{2, 4, 2, 8}, f}, {Shape{2, 4, 3, 16}, f}}),
            "buf [2, 4, 2, 8] and dout [2, 4, 3, 16] must agree on [samples, experts, capacity]; "
            "they differ at axis 2");
  EXPECT_EQ(Error("moe_combine", {{Shape{2, 5, 2, 8}, f}, {Shape{2, 3, 4}, f}, choices, choices}),
            "ybuf [2, 5, 2, 8] has 5 experts (axis 1) but probs [2, 3, 4] has 4 (axis 2); they "
            "must be equal");
  EXPECT_EQ(Error("moe_aux_loss_grad", {{Shape{3}, f}, {Shape{2, 3, 4}, f}}),
            "dy [3] has 3 samples (axis 0) but probs [2, 3, 4] has 2 (axis 0); they must be equal");
}

}  // namespace
}  // namespace oneflow
