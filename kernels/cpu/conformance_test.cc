// One conformance test body, run for every kernel name of the op registry: for each
// case of an op using the kernel, random inputs are run through the CPU kernel and the
// double-precision reference (EvaluateReference) on the same values, first as whole
// tensors, then on every device's slices under every SBP signature of the op on 2 and 3
// devices (uneven splits: sizes 5, 7, ... do not divide). Partial (P) inputs are split
// into parts of differing signs, as ops_test does. Results must agree to 1e-5 relative
// (absolute below magnitude 1): float rounding, not a different formula.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "kernels/cpu/registry.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/ops/testing/op_cases.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// Divides input `at` by 16 (exact in float), as weights are ~1/sqrt(k) at initialization:
// a product over k 128 of the default values (0.5 to 2 in size) sums terms of total size
// ~200 that cancel to O(1), and their float rounding (1.5e-5 on oneDNN's primitive) would
// exceed the absolute 1e-5 that applies below magnitude 1; with weights of a layer's
// size the same sums stay a rounding test (largest error measured: under 2e-6).
std::function<void(std::vector<Dense>*)> WeightScale(size_t at) {
  return [=](std::vector<Dense>* inputs) {
    for (double& v : (*inputs)[at].values) v /= 16;
  };
}

constexpr int64_t kStep = 3;  // Dropout's stream, the learning-rate schedules, Adam's t.
constexpr double kTolerance = 1e-5;

std::vector<OpCase> Cases() {
  const DType f = DType::kF32;
  const DType i32 = DType::kI32;
  const DType i64 = DType::kI64;
  using Ints = std::vector<int64_t>;
  const AttrMap sgd = {{"momentum", 0.9}, {"lr_schedule", std::string("constant")},
                       {"base_lr", 0.1}};
  const AttrMap sgd_cosine = {{"momentum", 0.0},       {"base_lr", 0.5},
                              {"lr_schedule", std::string("warmup_cosine")},
                              {"warmup_steps", int64_t{1}}, {"total_steps", int64_t{8}},
                              {"min_lr", 0.01}};
  const AttrMap adamw = {{"beta1", 0.9},         {"beta2", 0.99},   {"epsilon", 1e-8},
                         {"weight_decay", 0.01}, {"base_lr", 0.01},
                         {"lr_schedule", std::string("warmup_cosine")},
                         {"warmup_steps", int64_t{2}}, {"total_steps", int64_t{10}},
                         {"min_lr", 0.001}};
  AttrMap adamw_frozen = adamw;
  adamw_frozen["variance_frozen_from"] = int64_t{2};
  return {
      {"matmul", {{Shape{5, 7}, f}, {Shape{7, 3}, f}}, {}},
      {"matmul", {{Shape{7, 5}, f}, {Shape{3, 7}, f}},
       {{"transpose_a", true}, {"transpose_b", true}}},
      {"matmul", {{Shape{33, 17}, f}, {Shape{17, 29}, f}}, {}},
      {"matmul", {{Shape{3, 5, 4}, f}, {Shape{3, 4, 5}, f}}, {}},
      {"matmul", {{Shape{2, 3, 5, 4}, f}, {Shape{2, 3, 5, 6}, f}}, {{"transpose_a", true}}},
      {"matmul", {{Shape{2, 3, 4, 5}, f}, {Shape{2, 3, 4, 5}, f}}, {{"transpose_b", true}}},
      {"fused_matmul_bias", {{Shape{5, 7}, f}, {Shape{7, 3}, f}, {Shape{3}, f}}, {}},
      {"fused_matmul_bias", {{Shape{7, 5}, f}, {Shape{3, 7}, f}, {Shape{3}, f}},
       {{"transpose_a", true}, {"transpose_b", true}, {"relu", true}}},
      {"fused_matmul_bias", {{Shape{33, 17}, f}, {Shape{29, 17}, f}, {Shape{29}, f}},
       {{"transpose_b", true}, {"relu", true}}},
      // Past 2^20 multiply-adds, on oneDNN (EpilogueRouteFor): 128 x 96 over k 128 on
      // dnnl_sgemm then the pass; 64 x 256 over k 128 with b transposed on the matmul
      // primitive with the bias and relu as its post-ops. Device parts of a split may fall
      // below 2^20 and run OpenBLAS. b is scaled to 1/16 (WeightScale) as a layer's weights
      // are.
      {"fused_matmul_bias", {{Shape{128, 128}, f}, {Shape{128, 96}, f}, {Shape{96}, f}},
       {{"relu", true}}, 0, {}, WeightScale(1)},
      {"fused_matmul_bias", {{Shape{64, 128}, f}, {Shape{256, 128}, f}, {Shape{256}, f}},
       {{"transpose_b", true}, {"relu", true}}, 0, {}, WeightScale(1)},
      {"fused_matmul_bias", {{Shape{3, 5, 4}, f}, {Shape{3, 4, 6}, f}, {Shape{6}, f}},
       {{"relu", true}}},
      {"fused_matmul_bias", {{Shape{2, 3, 5, 4}, f}, {Shape{2, 3, 5, 6}, f}, {Shape{6}, f}},
       {{"transpose_a", true}}},
      // k = 0: every row is the bias, relu'd.
      {"fused_matmul_bias", {{Shape{4, 0}, f}, {Shape{0, 6}, f}, {Shape{6}, f}},
       {{"relu", true}}},
      {"add", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"add", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"add", {{Shape{5, 7}, f}, {Shape{}, f}}, {}},
      {"add", {{Shape{2, 1, 7}, f}, {Shape{3, 1}, f}}, {}},
      {"sub", {{Shape{5, 1}, f}, {Shape{5, 7}, f}}, {}},
      {"mul", {{Shape{5, 7}, f}, {Shape{1, 7}, f}}, {}},
      {"mul", {{Shape{4, 5, 6}, f}, {Shape{5, 1}, f}}, {}},
      {"div", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}, 0, {0, 1}},
      {"div", {{Shape{3, 1, 4}, f}, {Shape{1, 5, 4}, f}}, {}, 0, {1}},
      {"bias_add", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"bias_add", {{Shape{3, 4, 37}, f}, {Shape{37}, f}}, {}},
      {"relu", {{Shape{7, 37}, f}}, {}},
      {"gelu", {{Shape{7, 37}, f}}, {}},
      {"scalar_mul", {{Shape{5, 7}, f}}, {{"scalar", 0.5}}},
      {"scalar_add", {{Shape{5, 7}, f}}, {{"scalar", 0.5}}},
      {"dropout", {{Shape{5, 7}, f}}, {{"rate", 0.4}, {"seed", int64_t{9}}}},
      {"dropout", {{Shape{3, 4, 9}, f}}, {{"rate", 0.1}, {"seed", int64_t{2}}}},
      {"dropout", {{Shape{5, 113}, f}}, {{"rate", 0.3}, {"seed", int64_t{4}}}},
      {"identity", {{Shape{5, 7}, f}}, {}},
      {"accumulate", {{Shape{5, 7}, f}}, {{"micro_batches", int64_t{1}}}},
      {"identity", {{Shape{5, 7}, i64}}, {}, 50},
      {"ones_like", {{Shape{5, 7}, f}}, {}},
      {"causal_mask", {{Shape{3, 2, 4, 4}, f}}, {{"fill", -1e9}}},
      {"causal_mask", {{Shape{5, 4, 4}, f}}, {{"fill", 0.0}}},
      {"causal_mask", {{Shape{2, 21, 21}, f}}, {{"fill", -1e9}}},
      {"softmax", {{Shape{5, 7}, f}}, {}},
      {"softmax", {{Shape{4, 67}, f}}, {}},
      {"log_softmax", {{Shape{3, 5, 7}, f}}, {}},
      {"log_softmax", {{Shape{4, 67}, f}}, {}},
      {"layer_norm", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{7}, f}}, {{"epsilon", 1e-3}}},
      {"layer_norm", {{Shape{2, 3, 37}, f}, {Shape{37}, f}, {Shape{37}, f}}, {}},
      {"sparse_softmax_cross_entropy", {{Shape{5, 7}, f}, {Shape{5}, i32}}, {}, 7},
      {"sparse_softmax_cross_entropy", {{Shape{2, 3, 11}, f}, {Shape{2, 3}, i64}}, {}, 11},
      // Rows in segments of 512 (normalization.cc), 16-lane steps on AVX-512 and 8-lane
      // tails: 1100 = 512 + 512 + 76.
      {"sparse_softmax_cross_entropy", {{Shape{3, 1100}, f}, {Shape{3}, i32}}, {}, 1100},
      // Masked logits: row 0's first 600 (its first segment whole) and row 1's last 200
      // are -inf, the labels where they are not.
      {"sparse_softmax_cross_entropy", {{Shape{3, 1100}, f}, {Shape{3}, i32}}, {}, 1100, {},
       [](std::vector<Dense>* inputs) {
         Dense& logits = (*inputs)[0];
         for (int64_t j = 0; j < 600; ++j) logits.values[j] = -INFINITY;
         for (int64_t j = 900; j < 1100; ++j) logits.values[1100 + j] = -INFINITY;
         (*inputs)[1].values = {700, 3, 5};
       }},
      {"reshape", {{Shape{5, 6}, f}}, {{"shape", Ints{5, 2, 3}}}},
      {"reshape", {{Shape{4, 12}, f}}, {{"shape", Ints{2, 2, 6, 2}}}},
      {"reshape", {{Shape{2, 2, 6, 2}, f}}, {{"shape", Ints{4, 12}}}},
      // Kernels that only move elements take ids and labels too.
      {"reshape", {{Shape{4, 6}, i32}}, {{"shape", Ints{24}}}, 50},
      {"transpose", {{Shape{5, 7}, i32}}, {{"perm", Ints{1, 0}}}, 50},
      {"transpose", {{Shape{3, 40, 33}, i64}}, {{"perm", Ints{2, 1, 0}}}, 1000},
      {"slice", {{Shape{5, 7}, i32}}, {{"begin", Ints{1, 2}}, {"end", Ints{5, 6}}}, 50},
      {"concat", {{Shape{2, 5}, i64}, {Shape{3, 5}, i64}}, {{"axis", int64_t{0}}}, 50},
      {"transpose", {{Shape{5, 7, 2}, f}}, {{"perm", Ints{2, 0, 1}}}},
      {"transpose", {{Shape{2, 3, 4, 5}, f}}, {{"perm", Ints{0, 2, 1, 3}}}},
      {"transpose", {{Shape{9, 13}, f}}, {{"perm", Ints{1, 0}}}},
      // Past the 32 x 32 tiles of transposes that move the last axis, with outer axes.
      {"transpose", {{Shape{37, 70}, f}}, {{"perm", Ints{1, 0}}}},
      {"transpose", {{Shape{3, 40, 33}, f}}, {{"perm", Ints{0, 2, 1}}}},
      {"transpose", {{Shape{3, 40, 33}, f}}, {{"perm", Ints{2, 1, 0}}}},
      // Past the 64 x 64 tiles and through whole 8 x 8 register blocks (transpose_plane.h).
      {"transpose", {{Shape{70, 131}, f}}, {{"perm", Ints{1, 0}}}},
      // Destination rows of 64 floats: with streaming stores (conformance_streaming_test),
      // the strips of 8 x 16 blocks, the columns before a 64-byte boundary and the rows
      // past the last whole 8 through overlapping blocks.
      {"transpose", {{Shape{64, 50}, f}}, {{"perm", Ints{1, 0}}}},
      // Source rows of 48: the row blocks start at the source's first 32-byte boundary.
      {"transpose", {{Shape{64, 48}, f}}, {{"perm", Ints{1, 0}}}},
      // Gathered runs of 16 floats filling the output (one streaming writer through it).
      {"transpose", {{Shape{2, 3, 4, 16}, f}}, {{"perm", Ints{0, 2, 1, 3}}}},
      {"transpose", {{Shape{2, 17, 24}, i32}}, {{"perm", Ints{0, 2, 1}}}, 1000},
      {"reduce_sum", {{Shape{5, 7}, f}}, {{"axes", Ints{1}}}},
      {"reduce_sum", {{Shape{5, 7, 3}, f}}, {{"axes", Ints{0, 2}}, {"keep_dims", true}}},
      {"reduce_sum", {{Shape{4, 5, 6}, f}}, {{"axes", Ints{}}}},
      {"reduce_mean", {{Shape{5, 7}, f}}, {{"axes", Ints{0}}}},
      {"reduce_mean", {{Shape{5, 7, 3}, f}}, {{"axes", Ints{}}}},
      {"reduce_mean", {{Shape{5, 7, 3}, f}}, {{"axes", Ints{-2}}, {"keep_dims", true}}},
      {"embedding", {{Shape{9, 4}, f}, {Shape{5}, i32}}, {}, 9},
      {"embedding", {{Shape{11, 6}, f}, {Shape{2, 3}, i64}}, {}, 11},
      {"slice", {{Shape{5, 7}, f}}, {{"begin", Ints{0, 2}}, {"end", Ints{5, 6}}}},
      {"slice", {{Shape{5, 7, 3}, f}}, {{"begin", Ints{1, 0, 0}}, {"end", Ints{4, 7, 3}}}},
      {"concat", {{Shape{5, 3}, f}, {Shape{5, 4}, f}}, {{"axis", int64_t{1}}}},
      {"concat", {{Shape{2, 7}, f}, {Shape{3, 7}, f}}, {{"axis", int64_t{-2}}}},
      {"concat", {{Shape{2, 5, 3}, f}, {Shape{2, 5, 2}, f}}, {{"axis", int64_t{2}}}},
      {"relu_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"gelu_grad", {{Shape{7, 37}, f}, {Shape{7, 37}, f}}, {}},
      {"dropout_grad", {{Shape{5, 7}, f}}, {{"rate", 0.4}, {"seed", int64_t{9}}}},
      {"softmax_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"log_softmax_grad", {{Shape{3, 5, 7}, f}, {Shape{3, 5, 7}, f}}, {}},
      {"layer_norm_grad", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{5, 7}, f}}, {{"epsilon", 1e-3}}},
      {"layer_norm_grad", {{Shape{2, 3, 37}, f}, {Shape{37}, f}, {Shape{2, 3, 37}, f}}, {}},
      {"sparse_softmax_cross_entropy_grad",
       {{Shape{5, 7}, f}, {Shape{5}, i32}, {Shape{5}, f}}, {}, 7},
      {"sparse_softmax_cross_entropy_grad",
       {{Shape{2, 3, 11}, f}, {Shape{2, 3}, i64}, {Shape{2, 3}, f}}, {}, 11},
      {"sparse_softmax_cross_entropy_grad",
       {{Shape{3, 70}, f}, {Shape{3}, i32}, {Shape{3}, f}}, {}, 70},
      {"embedding_grad", {{Shape{5}, i32}, {Shape{5, 4}, f}}, {{"vocab", int64_t{9}}}, 9},
      {"embedding_grad", {{Shape{2, 3}, i64}, {Shape{2, 3, 4}, f}}, {{"vocab", int64_t{7}}}, 7},
      {"slice_grad", {{Shape{5, 4}, f}, {Shape{5, 7}, f}},
       {{"begin", Ints{0, 2}}, {"end", Ints{5, 6}}}},
      {"slice_grad", {{Shape{3, 7, 2}, f}, {Shape{5, 7, 3}, f}},
       {{"begin", Ints{1, 0, 1}}, {"end", Ints{4, 7, 3}}}},
      {"reduce_sum_like", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"reduce_sum_like", {{Shape{3, 5, 7}, f}, {Shape{5, 1}, f}}, {}},
      {"reduce_sum_like", {{Shape{4, 5, 6}, f}, {Shape{1, 1, 1}, f}}, {}},
      // Rows longer than 2048 are summed four at a time (reduce.cc); 9 rows: 4, 4 and 1.
      {"reduce_sum_like", {{Shape{9, 2050}, f}, {Shape{2050}, f}}, {}},
      {"broadcast_like", {{Shape{5}, f}, {Shape{5, 7}, f}}, {{"axes", Ints{1}}}},
      {"broadcast_like", {{Shape{1, 7, 1}, f}, {Shape{5, 7, 3}, f}}, {{"axes", Ints{0, 2}}}},
      {"broadcast_like", {{Shape{7}, f}, {Shape{5, 7, 3}, f}}, {{"axes", Ints{0, 2}}}},
      {"broadcast_like", {{Shape{37}, f}, {Shape{5, 37}, f}}, {{"axes", Ints{0}}}},
      {"sgd_update", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}}, sgd},
      {"sgd_update", {{Shape{3, 4}, f}, {Shape{3, 4}, f}, {Shape{3, 4}, f}}, sgd_cosine},
      {"adamw_update", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw, 0, {3}},
      // Frozen variance (from step 2, so frozen at kStep) against the reference's formula.
      {"adamw_update", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw_frozen, 0, {3}},
      {"adamw_step", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw_frozen, 0, {3}},
      {"sgd_step", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}}, sgd},
      {"adamw_step", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw, 0, {3}},
      {"assign", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      // Mixture of experts: B = 5 samples, T = 6 tokens, E = 4 experts, K = 2, C = 2 (so
      // some choices drop), index and slot from moe_route.
      {"moe_route", {{Shape{5, 6, 4}, f}}, {{"top_k", int64_t{2}}, {"capacity", int64_t{2}}}},
      {"moe_route", {{Shape{3, 9, 5}, f}}, {{"top_k", int64_t{1}}, {"capacity", int64_t{3}}}},
      {"moe_dispatch", {{Shape{5, 6, 7}, f}, {Shape{5, 6, 2}, i32}, {Shape{5, 6, 2}, i32}},
       {{"experts", int64_t{4}}, {"capacity", int64_t{2}}}, 2, {}, Routed(1, 4, 2, 2)},
      {"moe_dispatch", {{Shape{3, 6, 5}, f}, {Shape{3, 6, 3}, i64}, {Shape{3, 6, 3}, i64}},
       {{"experts", int64_t{4}}, {"capacity", int64_t{4}}}, 2, {}, Routed(1, 4, 3, 4)},
      {"expert_matmul", {{Shape{5, 4, 3, 6}, f}, {Shape{4, 6, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul", {{Shape{2, 5, 3, 6}, f}, {Shape{5, 6, 7}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0})},
      // Blocks of 40 x 33 rows: past OpenBLAS's small-matrix paths.
      {"expert_matmul", {{Shape{2, 3, 40, 33}, f}, {Shape{3, 33, 20}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0})},
      {"moe_combine", {{Shape{5, 4, 2, 7}, f}, {Shape{5, 6, 4}, f}, {Shape{5, 6, 2}, i32},
                       {Shape{5, 6, 2}, i32}},
       {}, 2, {}, Routed(2, 4, 2, 2)},
      {"moe_aux_loss", {{Shape{5, 6, 4}, f}}, {}},
      {"moe_dispatch_grad", {{Shape{5, 4, 2, 7}, f}, {Shape{5, 6, 2}, i32}, {Shape{5, 6, 2}, i32}},
       {}, 2, {}, Routed(1, 4, 2, 2)},
      {"expert_matmul_grad_data", {{Shape{5, 4, 3, 5}, f}, {Shape{4, 6, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul_grad_data", {{Shape{2, 5, 3, 7}, f}, {Shape{5, 6, 7}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul_grad_weight", {{Shape{5, 4, 3, 6}, f}, {Shape{5, 4, 3, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0, 1})},
      {"expert_matmul_grad_weight", {{Shape{2, 5, 3, 6}, f}, {Shape{2, 5, 3, 7}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0, 1})},
      {"moe_combine_grad_buf", {{Shape{5, 6, 7}, f}, {Shape{5, 6, 4}, f}, {Shape{5, 6, 2}, i32},
                                {Shape{5, 6, 2}, i32}},
       {{"capacity", int64_t{2}}}, 2, {}, Routed(2, 4, 2, 2)},
      {"moe_combine_grad_probs", {{Shape{5, 6, 7}, f}, {Shape{5, 4, 2, 7}, f},
                                  {Shape{5, 6, 2}, i32}, {Shape{5, 6, 2}, i32}},
       {}, 2, {}, Routed(2, 4, 2, 2)},
      {"moe_aux_loss_grad", {{Shape{5}, f}, {Shape{5, 6, 4}, f}}, {}},
      // Llama's ops: rows of 7 and 37; RoPE on [b, heads, positions, d] and [positions, d]
      // (the positions axis split by the signatures: logical offsets), both directions.
      {"rms_norm", {{Shape{5, 7}, f}, {Shape{7}, f}}, {{"epsilon", 1e-3}}},
      {"rms_norm", {{Shape{2, 3, 37}, f}, {Shape{37}, f}}, {}},
      {"rms_norm_grad", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{5, 7}, f}}, {{"epsilon", 1e-3}}},
      {"rms_norm_grad", {{Shape{2, 3, 37}, f}, {Shape{37}, f}, {Shape{2, 3, 37}, f}}, {}},
      {"rotary_embedding", {{Shape{2, 3, 7, 8}, f}}, {{"base", 10000.0}}},
      {"ring_shift", {{Shape{2, 6, 5}, f}}, {{"axis", int64_t{1}}, {"blocks", int64_t{3}}, {"shift", int64_t{1}}}},
      {"ring_shift", {{Shape{8, 3}, f}}, {{"axis", int64_t{0}}, {"blocks", int64_t{2}}, {"shift", int64_t{-1}}}},
      {"ring_causal_mask", {{Shape{2, 3, 2, 5, 5}, f}}, {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"fill", -1e9}}},
      {"ring_causal_mask", {{Shape{4, 3, 3}, f}}, {{"axis", int64_t{0}}, {"step", int64_t{3}}, {"fill", 0.0}}},
      // Ring steps over 4 blocks (group 3, s = 6), contiguous and zig-zag, every step of
      // the zig-zag split (block pairs fully, partly and not masked) and the gradients.
      {"ring_attention", {{Shape{2, 4, 18, 5}, f}, {Shape{2, 4, 6, 5}, f}, {Shape{2, 4, 6, 5}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"scale", 0.4}, {"zigzag", false}}},
      {"ring_attention", {{Shape{2, 4, 18, 5}, f}, {Shape{2, 4, 6, 5}, f}, {Shape{2, 4, 6, 5}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{0}}, {"scale", 0.4}, {"zigzag", true}}},
      {"ring_attention", {{Shape{2, 4, 18, 5}, f}, {Shape{2, 4, 6, 5}, f}, {Shape{2, 4, 6, 5}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{3}}, {"scale", 0.4}, {"zigzag", true}}},
      {"ring_attention_grad",
       {{Shape{2, 4, 12, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 12, 4}, f},
        {Shape{2, 4, 12, 4}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{2}}, {"scale", 0.4}, {"zigzag", true}, {"wrt", int64_t{0}}}},
      {"ring_attention_grad",
       {{Shape{2, 4, 12, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 12, 4}, f},
        {Shape{2, 4, 12, 4}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"scale", 0.4}, {"zigzag", false}, {"wrt", int64_t{1}}}},
      {"ring_attention_grad",
       {{Shape{2, 4, 12, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 12, 4}, f},
        {Shape{2, 4, 12, 4}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{3}}, {"scale", 0.4}, {"zigzag", true}, {"wrt", int64_t{2}}}},
      // Merged rows of 5 (hd 4 and the log-sum-exp), masked on one side, both or neither.
      {"ring_attention_merge", {{Shape{2, 4, 6, 5}, f}, {Shape{2, 4, 6, 5}, f}}, {}, 0, {}, MaskedRingRows({2, 3})},
      {"ring_attention_result",
       {{Shape{2, 4, 12, 4}, f}, {Shape{2, 4, 12, 3}, f}, {Shape{2, 4, 6, 3}, f}, {Shape{2, 4, 6, 3}, f}},
       {{"axis", int64_t{1}}, {"scale", 0.4}, {"zigzag", true}}},
      {"rotary_embedding", {{Shape{11, 6}, f}}, {{"base", 500.0}, {"inverse", true}}},
      {"rotary_embedding", {{Shape{2, 12, 4}, f}}, {{"base", 100.0}, {"zigzag_blocks", int64_t{3}}}},
      {"silu", {{Shape{7, 37}, f}}, {}},
      {"cast", {{Shape{7, 37}, f}}, {{"dtype", std::string("bf16")}}},
      {"cast", {{Shape{7, 37}, DType::kBF16}}, {{"dtype", std::string("f32")}}},
      {"cast", {{Shape{7, 37}, f}}, {{"dtype", std::string("f16")}}},
      {"silu_grad", {{Shape{7, 37}, f}, {Shape{7, 37}, f}}, {}},
      // The vocab-parallel cross-entropy: rows of 37 classes (vector lanes and a tail),
      // split 19 + 18 and 13 + 12 + 12 on the class axis with logical labels.
      {"reduce_max", {{Shape{7, 37}, f}}, {}},
      {"reduce_max", {{Shape{2, 3, 5}, f}}, {}},
      {"log", {{Shape{7, 37}, f}}, {}, 0, {0}},
      {"vocab_cross_entropy", {{Shape{7, 37}, f}, {Shape{7}, i32}, {Shape{7}, f}}, {}, 37},
      {"vocab_cross_entropy", {{Shape{2, 3, 37}, f}, {Shape{2, 3}, i64}, {Shape{2, 3}, f}}, {}, 37},
      {"vocab_cross_entropy_grad",
       {{Shape{7, 37}, f}, {Shape{7}, i32}, {Shape{7}, f}, {Shape{7}, f}, {Shape{7}, f}}, {}, 37},
  };
}

// The case's random inputs rounded to float, as the kernels see them. (Rounded after the
// case's prepare: every prepare writes float-exact values, ints, zeros, -inf, x / 16.)
std::vector<Dense> RandomFloatInputs(const OpCase& c) {
  std::vector<Dense> inputs = RandomInputs(c);
  for (Dense& input : inputs) input = RoundToFloat(std::move(input));
  return inputs;
}

testing::AssertionResult RunsLikeReference(const OpCase& c, const std::vector<Dense>& inputs,
                                           const ReferenceContext& context) {
  const absl::StatusOr<std::vector<Dense>> want =
      EvaluateReference(c.type, inputs, c.attrs, context);
  if (!want.ok()) return testing::AssertionFailure() << "reference: " << want.status();
  const absl::StatusOr<std::vector<Dense>> got = RunCpuKernel(c.type, inputs, c.attrs, context);
  if (!got.ok()) return testing::AssertionFailure() << "kernel: " << got.status();
  if (got->size() != want->size()) {
    return testing::AssertionFailure() << got->size() << " results vs " << want->size();
  }
  for (size_t r = 0; r < want->size(); ++r) {
    const Dense& g = (*got)[r];
    const Dense& w = (*want)[r];
    if (g.shape != w.shape) {
      return testing::AssertionFailure() << "result " << r << " has shape "
                                         << g.shape.ToString() << " vs " << w.shape.ToString();
    }
    for (size_t i = 0; i < w.values.size(); ++i) {
      // Written as a negated <= so that a NaN (an element the kernel never wrote) fails.
      const double tolerance = kTolerance * std::max(1.0, std::abs(w.values[i]));
      if (!(std::abs(g.values[i] - w.values[i]) <= tolerance)) {
        return testing::AssertionFailure() << "result " << r << " element " << i << ": kernel "
                                           << g.values[i] << " vs reference " << w.values[i];
      }
    }
  }
  return testing::AssertionSuccess();
}

// The inputs and context of device `rank` of `devices` under `signature`.
void DeviceArguments(const OpCase& c, const SbpSignature& signature, int64_t devices,
                     int64_t rank, std::vector<Dense>* inputs, ReferenceContext* context) {
  const OpDefinition& op = **OpRegistry::Get().Find(c.type);
  const std::vector<TensorType> out_types = *op.infer(c.inputs, c.attrs);
  const std::vector<Dense> logical = RandomFloatInputs(c);
  const Shape hierarchy{devices};
  context->step = kStep;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const TensorSlice slice =
        *DeviceSlice(c.inputs[k].shape, NdSbp{signature.inputs[k]}, hierarchy, {rank});
    Dense local = SliceOf(logical[k], slice);
    if (signature.inputs[k].is_partial()) MakePartial(&local, rank, devices);
    inputs->push_back(RoundToFloat(std::move(local)));
    context->inputs.push_back({c.inputs[k].shape, slice});
  }
  for (size_t k = 0; k < signature.outputs.size(); ++k) {
    context->outputs.push_back(
        {out_types[k].shape,
         *DeviceSlice(out_types[k].shape, NdSbp{signature.outputs[k]}, hierarchy, {rank})});
  }
}

// Whether the signature makes an index input partial: a sum of id tensors means nothing
// (the reshapes and copies that move ids offer P -> P only because they are linear).
bool PartialIndices(const OpCase& c, const SbpSignature& signature) {
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    if (signature.inputs[k].is_partial() && !IsFloating(c.inputs[k].dtype)) return true;
  }
  return false;
}

class CpuKernelConformanceTest : public testing::TestWithParam<std::string> {};

TEST_P(CpuKernelConformanceTest, MatchesTheReferenceOnEverySignatureAndDevice) {
  int cases = 0;
  for (const OpCase& c : Cases()) {
    const OpDefinition& op = **OpRegistry::Get().Find(c.type);
    if (op.kernel != GetParam()) continue;
    ++cases;
    ReferenceContext whole;
    whole.step = kStep;
    EXPECT_TRUE(RunsLikeReference(c, RandomFloatInputs(c), whole))
        << c.type << " on whole tensors";
    for (int64_t devices : {2, 3}) {
      for (const SbpSignature& signature : op.signatures(c.inputs, c.attrs)) {
        if (!signature.ValidFor(devices) || PartialIndices(c, signature)) continue;
        for (int64_t rank = 0; rank < devices; ++rank) {
          std::vector<Dense> inputs;
          ReferenceContext context;
          DeviceArguments(c, signature, devices, rank, &inputs, &context);
          EXPECT_TRUE(RunsLikeReference(c, inputs, context))
              << c.type << " signature " << signature.ToString() << ", device " << rank
              << " of " << devices;
        }
      }
    }
  }
  EXPECT_GT(cases, 0) << "no conformance case runs kernel '" << GetParam() << "'";
}

// causal_mask's signatures keep the last two axes whole, so the cases above never give
// it a row or column offset; the reference accepts any layout, so compare on slices that
// cut the rows and the columns of the masked axes directly.
TEST(CpuKernelLayoutTest, CausalMaskComparesLogicalRowsAndColumns) {
  const OpCase c{"causal_mask", {{Shape{2, 6, 6}, DType::kF32}}, {{"fill", -5.0}}};
  const Dense logical = RandomFloatInputs(c)[0];
  for (const std::vector<Range>& ranges :
       {std::vector<Range>{{0, 2}, {2, 5}, {0, 6}}, std::vector<Range>{{0, 2}, {0, 6}, {3, 6}},
        std::vector<Range>{{1, 2}, {1, 4}, {2, 5}}}) {
    const TensorSlice slice(ranges);
    ReferenceContext context;
    context.inputs.push_back({logical.shape, slice});
    context.outputs.push_back({logical.shape, slice});
    EXPECT_TRUE(RunsLikeReference(c, {SliceOf(logical, slice)}, context)) << slice.ToString();
  }
}

std::vector<std::string> RegistryKernelNames() {
  std::vector<std::string> names;
  for (const OpDefinition& definition : OpRegistry::Get().definitions()) {
    if (std::find(names.begin(), names.end(), definition.kernel) == names.end()) {
      names.push_back(definition.kernel);
    }
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryKernel, CpuKernelConformanceTest,
                         testing::ValuesIn(RegistryKernelNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(CpuKernelRegistryTest, EveryOpOfTheRegistryHasACpuKernel) {
  for (const OpDefinition& definition : OpRegistry::Get().definitions()) {
    EXPECT_TRUE(FindCpuKernel(definition.kernel).ok())
        << "op '" << definition.type << "' names kernel '" << definition.kernel
        << "', which has no CPU kernel";
  }
}

TEST(CpuKernelRegistryTest, EveryCpuKernelBelongsToAnOp) {
  const std::vector<std::string> used = RegistryKernelNames();
  for (const std::string& name : CpuKernelNames()) {
    EXPECT_NE(std::find(used.begin(), used.end(), name), used.end())
        << "CPU kernel '" << name << "' is no op's kernel";
  }
}

}  // namespace
}  // namespace oneflow
