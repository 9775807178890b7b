// Every SBP signature of every registered op is consistent: running the reference
// kernel on each device's slices gives that device's slice of the logical result (for
// P results: the device results sum to it). Checked numerically on small random
// tensors with uneven sizes over 2 and 3 devices. Optimizer updates have no outputs;
// their results are the new values of the updated inputs, laid out as those inputs.
#include <algorithm>
#include <functional>
#include <set>

#include "gtest/gtest.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/testing/op_cases.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

constexpr int64_t kStep = 3;  // Iteration: dropout's stream, the learning-rate schedule.

// Whether `signature` holds on `devices` devices.
testing::AssertionResult SignatureHolds(const OpCase& c, const SbpSignature& signature,
                                        int64_t devices) {
  const OpDefinition& op = **OpRegistry::Get().Find(c.type);
  const std::vector<TensorType> out_types = *op.infer(c.inputs, c.attrs);
  const std::vector<Dense> logical_inputs = RandomInputs(c);
  ReferenceContext whole;
  whole.step = kStep;
  const std::vector<Dense> expected = *EvaluateReference(c.type, logical_inputs, c.attrs, whole);
  // The SBP and logical shape of each result: outputs, or for updates the updated inputs.
  std::vector<Sbp> result_sbps = signature.outputs;
  std::vector<Shape> result_shapes;
  for (const TensorType& type : out_types) result_shapes.push_back(type.shape);
  for (const std::string& updated : op.updated_inputs) {
    const size_t k = std::find(op.inputs.begin(), op.inputs.end(), updated) - op.inputs.begin();
    result_sbps.push_back(signature.inputs[k]);
    result_shapes.push_back(c.inputs[k].shape);
  }
  const Shape hierarchy{devices};
  std::vector<std::vector<Dense>> results;  // [rank][result]
  for (int64_t rank = 0; rank < devices; ++rank) {
    std::vector<Dense> local_inputs;
    ReferenceContext context;
    context.step = kStep;
    // ring_shift split on its axis reads what the compiler's send/recv into the rotated
    // placement delivers (compiler/ring_shift.h): the slice of the device `shift` back.
    const bool ring = c.type == "ring_shift" &&
                      signature.inputs[0] == Sbp::Split(GetIntAttr(c.attrs, "axis", 0));
    const int64_t shift = GetIntAttr(c.attrs, "shift", 1);
    const int64_t source = ring ? ((rank - shift) % devices + devices) % devices : rank;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      const TensorSlice slice =
          *DeviceSlice(c.inputs[k].shape, NdSbp{signature.inputs[k]}, hierarchy, {rank});
      Dense local = SliceOf(logical_inputs[k],
                            *DeviceSlice(c.inputs[k].shape, NdSbp{signature.inputs[k]}, hierarchy, {source}));
      if (signature.inputs[k].is_partial()) MakePartial(&local, rank, devices);
      local_inputs.push_back(std::move(local));
      context.inputs.push_back({c.inputs[k].shape, slice});
    }
    for (size_t k = 0; k < signature.outputs.size(); ++k) {
      context.outputs.push_back(
          {out_types[k].shape,
           *DeviceSlice(out_types[k].shape, NdSbp{signature.outputs[k]}, hierarchy, {rank})});
    }
    absl::StatusOr<std::vector<Dense>> local =
        EvaluateReference(c.type, local_inputs, c.attrs, context);
    if (!local.ok()) return testing::AssertionFailure() << local.status();
    results.push_back(std::move(*local));
  }
  for (size_t r = 0; r < result_sbps.size(); ++r) {
    const Dense& want = expected[r];
    for (int64_t rank = 0; rank < devices; ++rank) {
      if (result_sbps[r].is_partial()) continue;
      const Dense slice = SliceOf(
          want, *DeviceSlice(result_shapes[r], NdSbp{result_sbps[r]}, hierarchy, {rank}));
      for (size_t i = 0; i < slice.values.size(); ++i) {
        if (std::abs(results[rank][r].values[i] - slice.values[i]) > 1e-9) {
          return testing::AssertionFailure()
                 << "result " << r << " on rank " << rank << " element " << i << ": "
                 << results[rank][r].values[i] << " vs " << slice.values[i];
        }
      }
    }
    if (!result_sbps[r].is_partial()) continue;
    // P sums the devices' parts; P(max) (reduce_max over a split axis) takes their maximum.
    const ReduceOp reduction = result_sbps[r].reduce_op();
    for (size_t i = 0; i < want.values.size(); ++i) {
      double sum = 0;
      for (int64_t rank = 0; rank < devices; ++rank) {
        const double part = results[rank][r].values[i];
        sum = reduction == ReduceOp::kSum ? sum + part
              : rank == 0                 ? part
              : reduction == ReduceOp::kMax ? std::max(sum, part)
                                            : std::min(sum, part);
      }
      if (std::abs(sum - want.values[i]) > 1e-9) {
        return testing::AssertionFailure() << "partial result " << r << " element " << i
                                           << ": " << result_sbps[r].ToString() << " of the parts " << sum
                                           << " vs " << want.values[i];
      }
    }
  }
  return testing::AssertionSuccess();
}

std::vector<OpCase> Cases() {
  const DType f = DType::kF32;
  const DType i32 = DType::kI32;
  using Ints = std::vector<int64_t>;
  AttrMap sgd = {{"momentum", 0.9}, {"lr_schedule", std::string("constant")}, {"base_lr", 0.1}};
  AttrMap adamw = {{"beta1", 0.9},          {"beta2", 0.99},    {"epsilon", 1e-8},
                   {"weight_decay", 0.01},  {"base_lr", 0.01},  {"lr_schedule", std::string("warmup_cosine")},
                   {"warmup_steps", int64_t{2}}, {"total_steps", int64_t{10}}, {"min_lr", 0.001}};
  return {
      {"matmul", {{Shape{5, 7}, f}, {Shape{7, 3}, f}}, {}},
      {"matmul", {{Shape{7, 5}, f}, {Shape{3, 7}, f}}, {{"transpose_a", true}, {"transpose_b", true}}},
      {"matmul", {{Shape{3, 5, 4}, f}, {Shape{3, 4, 5}, f}}, {}},
      // Attention's batched matmuls: [b, heads, s, hd] x [b, heads, s, hd]^T.
      {"matmul", {{Shape{2, 3, 4, 5}, f}, {Shape{2, 3, 4, 5}, f}}, {{"transpose_b", true}}},
      {"fused_matmul_bias", {{Shape{5, 7}, f}, {Shape{7, 3}, f}, {Shape{3}, f}}, {}},
      {"fused_matmul_bias", {{Shape{7, 5}, f}, {Shape{3, 7}, f}, {Shape{3}, f}},
       {{"transpose_a", true}, {"transpose_b", true}, {"relu", true}}},
      {"fused_matmul_bias", {{Shape{3, 5, 4}, f}, {Shape{3, 4, 6}, f}, {Shape{6}, f}}, {{"relu", true}}},
      {"add", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"add", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"sub", {{Shape{5, 1}, f}, {Shape{5, 7}, f}}, {}},
      {"mul", {{Shape{5, 7}, f}, {Shape{1, 7}, f}}, {}},
      {"div", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}, 0, {0, 1}},
      {"bias_add", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"relu", {{Shape{5, 7}, f}}, {}},
      {"gelu", {{Shape{5, 7}, f}}, {}},
      {"scalar_mul", {{Shape{5, 7}, f}}, {{"scalar", 0.5}}},
      {"scalar_add", {{Shape{5, 7}, f}}, {{"scalar", 0.5}}},
      {"dropout", {{Shape{5, 7}, f}}, {{"rate", 0.4}, {"seed", int64_t{9}}}},
      {"identity", {{Shape{5, 7}, f}}, {}},
      {"accumulate", {{Shape{5, 7}, f}}, {{"micro_batches", int64_t{4}}}},
      {"ones_like", {{Shape{5, 7}, f}}, {}},
      {"causal_mask", {{Shape{3, 2, 4, 4}, f}}, {{"fill", -1e9}}},
      {"causal_mask", {{Shape{5, 4, 4}, f}}, {{"fill", 0.0}}},
      // Rolled by one block of 3 (blocks = 2, so S(1) runs on 2 devices only) and back.
      {"ring_shift", {{Shape{2, 6, 3}, f}}, {{"axis", int64_t{1}}, {"blocks", int64_t{2}}, {"shift", int64_t{1}}}},
      {"ring_shift", {{Shape{6, 5}, f}}, {{"axis", int64_t{0}}, {"blocks", int64_t{3}}, {"shift", int64_t{-1}}}},
      // Scores [b, blocks, s, s] of ring steps 1 and 2 over 3 blocks of 4 positions.
      {"ring_causal_mask", {{Shape{2, 3, 4, 4}, f}}, {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"fill", -1e9}}},
      {"ring_causal_mask", {{Shape{3, 2, 4, 4}, f}}, {{"axis", int64_t{0}}, {"step", int64_t{2}}, {"fill", 0.0}}},
      // One ring step: q [b, blocks, group x s, hd] (3 blocks, group 2, s = 4) against k,
      // v [b, blocks, s, hd]; contiguous and zig-zag blocks, and the three gradients.
      {"ring_attention", {{Shape{2, 3, 8, 3}, f}, {Shape{2, 3, 4, 3}, f}, {Shape{2, 3, 4, 3}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{1}}, {"scale", 0.5}, {"zigzag", false}}},
      {"ring_attention", {{Shape{2, 3, 8, 3}, f}, {Shape{2, 3, 4, 3}, f}, {Shape{2, 3, 4, 3}, f}},
       {{"axis", int64_t{1}}, {"step", int64_t{2}}, {"scale", 0.5}, {"zigzag", true}}},
      {"ring_attention_grad",
       {{Shape{3, 2, 4, 3}, f}, {Shape{3, 2, 2, 3}, f}, {Shape{3, 2, 2, 3}, f}, {Shape{3, 2, 4, 4}, f},
        {Shape{3, 2, 4, 4}, f}},
       {{"axis", int64_t{0}}, {"step", int64_t{1}}, {"scale", 0.7}, {"zigzag", true}, {"wrt", int64_t{1}}}},
      // Two steps' results [b, blocks, rows, hd + 1], rows masked on one side, both, neither.
      {"ring_attention_merge", {{Shape{2, 3, 4, 4}, f}, {Shape{2, 3, 4, 4}, f}}, {}, 0, {}, MaskedRingRows({2, 3})},
      {"ring_attention_result",
       {{Shape{2, 3, 8, 4}, f}, {Shape{2, 3, 8, 3}, f}, {Shape{2, 3, 4, 3}, f}, {Shape{2, 3, 4, 3}, f}},
       {{"axis", int64_t{1}}, {"scale", 0.5}, {"zigzag", false}}},
      {"softmax", {{Shape{5, 7}, f}}, {}},
      {"log_softmax", {{Shape{3, 5, 7}, f}}, {}},
      {"layer_norm", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{7}, f}}, {{"epsilon", 1e-3}}},
      {"sparse_softmax_cross_entropy", {{Shape{5, 7}, f}, {Shape{5}, i32}}, {}, 7},
      {"reshape", {{Shape{5, 6}, f}}, {{"shape", Ints{5, 2, 3}}}},
      // Heads: [b*s, h] -> [b, s, nh, hd] and back; valid where the devices divide b, nh.
      {"reshape", {{Shape{4, 12}, f}}, {{"shape", Ints{2, 2, 6, 2}}}},
      {"reshape", {{Shape{2, 2, 6, 2}, f}}, {{"shape", Ints{4, 12}}}},
      {"reshape", {{Shape{6, 2, 5}, f}}, {{"shape", Ints{12, 5}}}},
      {"transpose", {{Shape{5, 7, 2}, f}}, {{"perm", Ints{2, 0, 1}}}},
      {"reduce_sum", {{Shape{5, 7}, f}}, {{"axes", Ints{1}}}},
      {"reduce_sum", {{Shape{5, 7, 3}, f}}, {{"axes", Ints{0, 2}}, {"keep_dims", true}}},
      {"reduce_mean", {{Shape{5, 7}, f}}, {{"axes", Ints{0}}}},
      {"reduce_mean", {{Shape{5, 7, 3}, f}}, {{"axes", Ints{}}}},
      {"embedding", {{Shape{9, 4}, f}, {Shape{5}, i32}}, {}, 9},
      {"slice", {{Shape{5, 7}, f}}, {{"begin", Ints{0, 2}}, {"end", Ints{5, 6}}}},
      {"slice", {{Shape{5, 7, 3}, f}}, {{"begin", Ints{1, 0, 0}}, {"end", Ints{4, 7, 3}}}},
      {"concat", {{Shape{5, 3}, f}, {Shape{5, 4}, f}}, {{"axis", int64_t{1}}}},
      {"concat", {{Shape{2, 7}, f}, {Shape{3, 7}, f}}, {{"axis", int64_t{-2}}}},
      // Llama's ops: RoPE's positions axis (1 of [2, 5, 4]) may be split.
      {"rms_norm", {{Shape{5, 7}, f}, {Shape{7}, f}}, {{"epsilon", 1e-3}}},
      {"rms_norm_grad", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{5, 7}, f}}, {{"epsilon", 1e-3}}},
      {"rotary_embedding", {{Shape{2, 5, 4}, f}}, {{"base", 100.0}}},
      {"rotary_embedding", {{Shape{2, 8, 2}, f}}, {{"base", 100.0}, {"zigzag_blocks", int64_t{2}}}},
      {"silu", {{Shape{5, 7}, f}}, {}},
      {"cast", {{Shape{5, 7}, f}}, {{"dtype", std::string("bf16")}}},
      {"cast", {{Shape{5, 7}, DType::kBF16}}, {{"dtype", std::string("f32")}}},
      {"cast", {{Shape{5, 7}, f}}, {{"dtype", std::string("f16")}}},
      {"silu_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      // The vocab-parallel cross-entropy: the class axis (7) split, labels logical.
      {"reduce_max", {{Shape{5, 7}, f}}, {}},
      {"reduce_max", {{Shape{2, 3, 7}, f}}, {}},
      {"log", {{Shape{5, 7}, f}}, {}, 0, {0}},
      {"vocab_cross_entropy", {{Shape{5, 7}, f}, {Shape{5}, i32}, {Shape{5}, f}}, {}, 7},
      {"vocab_cross_entropy", {{Shape{2, 3, 7}, f}, {Shape{2, 3}, i32}, {Shape{2, 3}, f}}, {}, 7},
      {"vocab_cross_entropy_grad",
       {{Shape{5, 7}, f}, {Shape{5}, i32}, {Shape{5}, f}, {Shape{5}, f}, {Shape{5}, f}}, {}, 7},
      {"relu_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"gelu_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"dropout_grad", {{Shape{5, 7}, f}}, {{"rate", 0.4}, {"seed", int64_t{9}}}},
      {"softmax_grad", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      {"log_softmax_grad", {{Shape{3, 5, 7}, f}, {Shape{3, 5, 7}, f}}, {}},
      {"layer_norm_grad", {{Shape{5, 7}, f}, {Shape{7}, f}, {Shape{5, 7}, f}}, {{"epsilon", 1e-3}}},
      {"sparse_softmax_cross_entropy_grad", {{Shape{5, 7}, f}, {Shape{5}, i32}, {Shape{5}, f}}, {}, 7},
      {"embedding_grad", {{Shape{5}, i32}, {Shape{5, 4}, f}}, {{"vocab", int64_t{9}}}, 9},
      {"embedding_grad", {{Shape{2, 3}, i32}, {Shape{2, 3, 4}, f}}, {{"vocab", int64_t{7}}}, 7},
      {"slice_grad", {{Shape{5, 4}, f}, {Shape{5, 7}, f}}, {{"begin", Ints{0, 2}}, {"end", Ints{5, 6}}}},
      {"reduce_sum_like", {{Shape{5, 7}, f}, {Shape{7}, f}}, {}},
      {"reduce_sum_like", {{Shape{3, 5, 7}, f}, {Shape{5, 1}, f}}, {}},
      {"broadcast_like", {{Shape{5}, f}, {Shape{5, 7}, f}}, {{"axes", Ints{1}}}},
      {"broadcast_like", {{Shape{1, 7, 1}, f}, {Shape{5, 7, 3}, f}}, {{"axes", Ints{0, 2}}}},
      {"sgd_update", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}}, sgd},
      {"adamw_update", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw, 0, {3}},
      {"sgd_step", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}}, sgd},
      {"adamw_step", {{Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}, {Shape{5, 7}, f}},
       adamw, 0, {3}},
      {"assign", {{Shape{5, 7}, f}, {Shape{5, 7}, f}}, {}},
      // Mixture of experts: B = 5 samples, T = 4 tokens, E = 3 experts, K = 2, C = 2.
      {"moe_route", {{Shape{5, 4, 3}, f}}, {{"top_k", int64_t{2}}, {"capacity", int64_t{2}}}},
      {"moe_dispatch", {{Shape{5, 4, 7}, f}, {Shape{5, 4, 2}, i32}, {Shape{5, 4, 2}, i32}},
       {{"experts", int64_t{3}}, {"capacity", int64_t{2}}}, 2, {}, Routed(1, 3, 2, 2)},
      {"expert_matmul", {{Shape{5, 3, 2, 4}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul", {{Shape{2, 5, 2, 4}, f}, {Shape{5, 4, 3}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0})},
      {"moe_combine", {{Shape{5, 3, 2, 7}, f}, {Shape{5, 4, 3}, f}, {Shape{5, 4, 2}, i32},
                       {Shape{5, 4, 2}, i32}},
       {}, 2, {}, Routed(2, 3, 2, 2)},
      {"moe_aux_loss", {{Shape{5, 4, 3}, f}}, {}},
      {"moe_dispatch_grad", {{Shape{5, 3, 2, 7}, f}, {Shape{5, 4, 2}, i32}, {Shape{5, 4, 2}, i32}},
       {}, 2, {}, Routed(1, 3, 2, 2)},
      {"expert_matmul_grad_data", {{Shape{5, 3, 2, 5}, f}, {Shape{3, 4, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul_grad_data", {{Shape{2, 5, 2, 3}, f}, {Shape{5, 4, 3}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0})},
      {"expert_matmul_grad_weight", {{Shape{5, 3, 2, 4}, f}, {Shape{5, 3, 2, 5}, f}},
       {{"parallel", std::string("data")}}, 0, {}, UnusedSlots({0, 1})},
      {"expert_matmul_grad_weight", {{Shape{2, 5, 2, 4}, f}, {Shape{2, 5, 2, 3}, f}},
       {{"parallel", std::string("expert")}}, 0, {}, UnusedSlots({0, 1})},
      {"moe_combine_grad_buf", {{Shape{5, 4, 7}, f}, {Shape{5, 4, 3}, f}, {Shape{5, 4, 2}, i32},
                                {Shape{5, 4, 2}, i32}},
       {{"capacity", int64_t{2}}}, 2, {}, Routed(2, 3, 2, 2)},
      {"moe_combine_grad_probs", {{Shape{5, 4, 7}, f}, {Shape{5, 3, 2, 7}, f},
                                  {Shape{5, 4, 2}, i32}, {Shape{5, 4, 2}, i32}},
       {}, 2, {}, Routed(2, 3, 2, 2)},
      {"moe_aux_loss_grad", {{Shape{5}, f}, {Shape{5, 4, 3}, f}}, {}},
  };
}

TEST(OpSignaturesTest, EverySignatureGivesTheSliceOfTheLogicalResult) {
  for (const OpCase& c : Cases()) {
    const OpDefinition& op = **OpRegistry::Get().Find(c.type);
    const std::vector<SbpSignature> signatures = op.signatures(c.inputs, c.attrs);
    ASSERT_FALSE(signatures.empty()) << c.type;
    for (int64_t devices : {2, 3}) {
      for (const SbpSignature& signature : signatures) {
        if (!signature.ValidFor(devices)) continue;
        EXPECT_TRUE(SignatureHolds(c, signature, devices))
            << c.type << " signature " << signature.ToString() << " on " << devices << " devices";
      }
    }
  }
}

TEST(OpSignaturesTest, EveryRegisteredOpHasACase) {
  std::set<std::string> covered;
  for (const OpCase& c : Cases()) covered.insert(c.type);
  for (const OpDefinition& definition : OpRegistry::Get().definitions()) {
    EXPECT_TRUE(covered.count(definition.type)) << definition.type << " has no signature case";
    EXPECT_FALSE(definition.kernel.empty()) << definition.type;
  }
}

// The divisibility condition is needed, not just cautious: reshaping [4, 12] to
// [2, 2, 6, 2] with h split over 4 devices puts half a head on some devices.
TEST(OpSignaturesTest, HeadSplitNeedsDevicesDividingHeads) {
  const OpCase c{"reshape", {{Shape{4, 12}, DType::kF32}}, {{"shape", std::vector<int64_t>{2, 2, 6, 2}}}};
  const SbpSignature head_split{{Sbp::Split(1)}, {Sbp::Split(2)}, 6};
  const std::vector<SbpSignature> offered = (*OpRegistry::Get().Find("reshape"))->signatures(c.inputs, c.attrs);
  ASSERT_NE(std::find(offered.begin(), offered.end(), head_split), offered.end());
  EXPECT_EQ(head_split.ToString(), "S(1) -> S(2) if devices divide 6");
  EXPECT_TRUE(SignatureHolds(c, head_split, 3));
  EXPECT_FALSE(head_split.ValidFor(4));
  EXPECT_FALSE(SignatureHolds(c, head_split, 4));
}

// The parallel attribute is how a model picks data-parallel experts or expert parallelism.
TEST(OpSignaturesTest, ExpertMatMulSignaturesFollowTheParallelAttribute) {
  auto printed = [](const std::string& type, std::vector<TensorType> inputs,
                    const std::string& parallel) {
    std::vector<std::string> out;
    const AttrMap attrs = {{"parallel", parallel}};
    for (const SbpSignature& s : (*OpRegistry::Get().Find(type))->signatures(inputs, attrs)) {
      out.push_back(s.ToString());
    }
    return out;
  };
  const DType f = DType::kF32;
  const std::vector<TensorType> matmul = {{Shape{2, 3, 4, 5}, f}, {Shape{3, 5, 6}, f}};
  EXPECT_EQ(printed("expert_matmul", matmul, "data"),
            (std::vector<std::string>{"S(0), B -> S(0)", "B, B -> B"}));
  EXPECT_EQ(printed("expert_matmul", matmul, "expert"),
            (std::vector<std::string>{"S(1), S(0) -> S(1)", "B, B -> B"}));
  const std::vector<TensorType> grad_data = {{Shape{2, 3, 4, 6}, f}, {Shape{3, 5, 6}, f}};
  EXPECT_EQ(printed("expert_matmul_grad_data", grad_data, "data"),
            (std::vector<std::string>{"S(0), B -> S(0)", "B, B -> B"}));
  EXPECT_EQ(printed("expert_matmul_grad_data", grad_data, "expert"),
            (std::vector<std::string>{"S(1), S(0) -> S(1)", "B, B -> B"}));
  const std::vector<TensorType> grad_weight = {{Shape{2, 3, 4, 5}, f}, {Shape{2, 3, 4, 6}, f}};
  EXPECT_EQ(printed("expert_matmul_grad_weight", grad_weight, "data"),
            (std::vector<std::string>{"S(0), S(0) -> P", "B, B -> B"}));
  EXPECT_EQ(printed("expert_matmul_grad_weight", grad_weight, "expert"),
            (std::vector<std::string>{"S(1), S(1) -> S(0)", "B, B -> B"}));
  EXPECT_EQ(printed("moe_route", {{Shape{2, 4, 3}, f}}, "data"),
            (std::vector<std::string>{"S(0) -> S(0), S(0), S(0)", "B -> B, B, B"}));
}

TEST(OpSignaturesTest, EmbeddingAndMatMulOfferTheMegatronSets) {
  auto printed = [](const std::string& type, std::vector<TensorType> inputs, AttrMap attrs) {
    std::vector<std::string> out;
    for (const SbpSignature& s : (*OpRegistry::Get().Find(type))->signatures(inputs, attrs)) {
      out.push_back(s.ToString());
    }
    return out;
  };
  const DType f = DType::kF32;
  EXPECT_EQ(printed("embedding", {{Shape{9, 4}, f}, {Shape{5}, DType::kI32}}, {}),
            (std::vector<std::string>{"B, S(0) -> S(0)", "S(1), B -> S(1)", "S(0), B -> P",
                                      "P, B -> P", "B, B -> B"}));
  EXPECT_EQ(printed("embedding_grad", {{Shape{5}, DType::kI32}, {Shape{5, 4}, f}},
                    {{"vocab", int64_t{9}}}),
            (std::vector<std::string>{"S(0), S(0) -> P", "B, S(1) -> S(1)", "B, B -> S(0)",
                                      "B, P -> P", "B, B -> B"}));
  EXPECT_EQ(printed("matmul", {{Shape{4, 8}, f}, {Shape{8, 2}, f}}, {}),
            (std::vector<std::string>{"S(0), B -> S(0)", "B, S(1) -> S(1)", "S(1), S(0) -> P",
                                      "P, B -> P", "B, P -> P", "B, B -> B"}));
  EXPECT_EQ(printed("layer_norm_grad", {{Shape{4, 8}, f}, {Shape{8}, f}, {Shape{4, 8}, f}}, {}),
            (std::vector<std::string>{"S(0), B, S(0) -> S(0), P, P", "B, B, B -> B, B, B",
                                      "B, B, P -> P, P, P"}));
  EXPECT_EQ(printed("sgd_update", {{Shape{4, 8}, f}, {Shape{4, 8}, f}, {Shape{4, 8}, f}}, {}),
            (std::vector<std::string>{"S(0), S(0), S(0) -> ()", "S(1), S(1), S(1) -> ()",
                                      "B, B, B -> ()"}));
}

}  // namespace
}  // namespace oneflow
