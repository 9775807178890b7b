#include "oneflow_core/dsl/ops.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/learning_rate.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// The graph of the first valid input; an invalid tensor means an error was already
// recorded (or the user passed a default Tensor), so nothing is added.
Tensor Apply(const std::string& type, const std::vector<Tensor>& inputs, AttrMap attrs,
             Loc location) {
  for (const Tensor& input : inputs) {
    if (!input.valid()) return Tensor();
  }
  return inputs[0].graph()->AddSingleOutputOp(type, inputs, std::move(attrs), location);
}

// As Apply, for ops with several (or no) outputs.
std::vector<Tensor> ApplyN(const std::string& type, const std::vector<Tensor>& inputs,
                           AttrMap attrs, Loc location) {
  for (const Tensor& input : inputs) {
    if (!input.valid()) return {};
  }
  return inputs[0].graph()->AddOp(type, inputs, std::move(attrs), /*name=*/"", location);
}

// 1-bit Adam's frozen variance (AdamWOptimizer.variance_frozen_from). Set only when on,
// so the ops (and the plans' fingerprints) of every optimizer without it stay as they were.
void SetFrozenVariance(const proto::AdamWOptimizer& adamw, AttrMap& attrs) {
  if (adamw.variance_frozen_from() != 0) attrs["variance_frozen_from"] = adamw.variance_frozen_from();
}

}  // namespace

Tensor MatMul(Tensor a, Tensor b, bool transpose_a, bool transpose_b, Loc location) {
  AttrMap attrs;
  if (transpose_a) attrs["transpose_a"] = true;
  if (transpose_b) attrs["transpose_b"] = true;
  return Apply("matmul", {a, b}, std::move(attrs), location);
}

Tensor Add(Tensor x, Tensor y, Loc location) { return Apply("add", {x, y}, {}, location); }
Tensor Sub(Tensor x, Tensor y, Loc location) { return Apply("sub", {x, y}, {}, location); }
Tensor Mul(Tensor x, Tensor y, Loc location) { return Apply("mul", {x, y}, {}, location); }
Tensor Div(Tensor x, Tensor y, Loc location) { return Apply("div", {x, y}, {}, location); }

Tensor BiasAdd(Tensor x, Tensor bias, Loc location) {
  return Apply("bias_add", {x, bias}, {}, location);
}

Tensor Relu(Tensor x, Loc location) { return Apply("relu", {x}, {}, location); }
Tensor Gelu(Tensor x, Loc location) { return Apply("gelu", {x}, {}, location); }

Tensor ScalarMul(Tensor x, double scalar, Loc location) {
  return Apply("scalar_mul", {x}, {{"scalar", scalar}}, location);
}

Tensor ScalarAdd(Tensor x, double scalar, Loc location) {
  return Apply("scalar_add", {x}, {{"scalar", scalar}}, location);
}

Tensor Dropout(Tensor x, double rate, uint64_t seed, Loc location) {
  return Apply("dropout", {x}, {{"rate", rate}, {"seed", static_cast<int64_t>(seed)}},
               location);
}

Tensor Softmax(Tensor x, Loc location) { return Apply("softmax", {x}, {}, location); }
Tensor LogSoftmax(Tensor x, Loc location) { return Apply("log_softmax", {x}, {}, location); }

Tensor LayerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon, Loc location) {
  return Apply("layer_norm", {x, gamma, beta}, {{"epsilon", epsilon}}, location);
}

Tensor SparseSoftmaxCrossEntropy(Tensor logits, Tensor labels, Loc location) {
  return Apply("sparse_softmax_cross_entropy", {logits, labels}, {}, location);
}

Tensor Reshape(Tensor x, std::vector<int64_t> shape, Loc location) {
  return Apply("reshape", {x}, {{"shape", std::move(shape)}}, location);
}

Tensor Transpose(Tensor x, std::vector<int64_t> perm, Loc location) {
  return Apply("transpose", {x}, {{"perm", std::move(perm)}}, location);
}

Tensor ReduceSum(Tensor x, std::vector<int64_t> axes, bool keep_dims, Loc location) {
  return Apply("reduce_sum", {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}},
               location);
}

Tensor ReduceMean(Tensor x, std::vector<int64_t> axes, bool keep_dims, Loc location) {
  return Apply("reduce_mean", {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}},
               location);
}

Tensor Embedding(Tensor table, Tensor ids, Loc location) {
  return Apply("embedding", {table, ids}, {}, location);
}

Tensor Slice(Tensor x, std::vector<int64_t> begin, std::vector<int64_t> end, Loc location) {
  return Apply("slice", {x}, {{"begin", std::move(begin)}, {"end", std::move(end)}}, location);
}

Tensor Concat(const std::vector<Tensor>& inputs, int64_t axis, Loc location) {
  if (inputs.empty()) return Tensor();
  Tensor out = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    out = Apply("concat", {out, inputs[i]}, {{"axis", axis}}, location);
  }
  return out;
}

Tensor To(Tensor x, const Placement& placement, const NdSbp& sbp, Loc location) {
  Tensor out = Apply("identity", {x}, {}, location);
  if (!out.valid()) return out;
  const absl::Status fits = CheckNdSbpFits(x.shape(), sbp, placement.hierarchy());
  if (!fits.ok()) {
    out.graph()->RecordError(absl::InvalidArgumentError(
        absl::StrCat("op '", out.name(), "' (identity) at ", location.ToString(), ": To(",
                     x.name(), ", ", placement.ToString(), ", ", sbp.ToString(),
                     "): ", fits.message())));
    return Tensor();
  }
  out.WithPlacement(placement).WithSbp(sbp);
  return out;
}

Tensor OnesLike(Tensor x, Loc location) { return Apply("ones_like", {x}, {}, location); }

Tensor CausalMask(Tensor x, double fill, Loc location) {
  return Apply("causal_mask", {x}, {{"fill", fill}}, location);
}

Tensor CausalSelfAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                           int64_t num_heads, Loc location) {
  for (const Tensor& t : {x, w_q, w_k, w_v, w_o}) {
    if (!t.valid()) return Tensor();
  }
  const Shape& shape = x.shape();
  if (shape.rank() != 3 || num_heads <= 0 || shape.dim(2) % num_heads != 0) {
    x.graph()->RecordError(absl::InvalidArgumentError(absl::StrCat(
        "CausalSelfAttention at ", location.ToString(), ": x '", x.name(), "' ",
        x.type().ToString(), " must be [batch, seq, hidden] with hidden divisible by num_heads=",
        num_heads)));
    return Tensor();
  }
  const int64_t b = shape.dim(0), s = shape.dim(1), h = shape.dim(2);
  const int64_t nh = num_heads, hd = h / num_heads;
  // 2-D matmuls against the [h, h] weights; [b*s, h] -> [b, s, nh, hd] splits rows and
  // the hidden axis into heads in one reshape, then heads move before positions.
  Tensor rows = Reshape(x, {b * s, h}, location);
  auto heads = [&](Tensor w) {
    return Transpose(Reshape(MatMul(rows, w, false, false, location), {b, s, nh, hd}, location),
                     {0, 2, 1, 3}, location);
  };
  Tensor q = heads(w_q), k = heads(w_k), v = heads(w_v);
  // The attention core (what --recompute=selective re-runs): the [b, nh, s, s] scores
  // and probabilities, the largest activations of a block, from the small q and k.
  Tensor probs;
  {
    Graph::AttentionCoreScope core(*x.graph());
    Tensor scores = ScalarMul(MatMul(q, k, false, true, location), 1.0 / std::sqrt(double(hd)),
                              location);  // [b, nh, s, s]
    probs = Softmax(CausalMask(scores, -1e9, location), location);
  }
  Tensor context = Transpose(MatMul(probs, v, false, false, location), {0, 2, 1, 3}, location);
  Tensor merged = Reshape(context, {b * s, h}, location);
  return Reshape(MatMul(merged, w_o, false, false, location), {b, s, h}, location);
}

MoeRouting MoeRoute(Tensor probs, int64_t top_k, int64_t capacity, Loc location) {
  std::vector<Tensor> outputs =
      ApplyN("moe_route", {probs}, {{"top_k", top_k}, {"capacity", capacity}}, location);
  if (outputs.size() != 3) return {};
  return {outputs[0], outputs[1], outputs[2]};
}

Tensor MoeDispatch(Tensor x, Tensor index, Tensor slot, int64_t experts, int64_t capacity,
                   Loc location) {
  return Apply("moe_dispatch", {x, index, slot}, {{"experts", experts}, {"capacity", capacity}},
               location);
}

Tensor ExpertMatMul(Tensor buf, Tensor w, const std::string& parallel, Loc location) {
  return Apply("expert_matmul", {buf, w}, {{"parallel", parallel}}, location);
}

Tensor MoeCombine(Tensor ybuf, Tensor probs, Tensor index, Tensor slot, Loc location) {
  return Apply("moe_combine", {ybuf, probs, index, slot}, {}, location);
}

Tensor MoeAuxLoss(Tensor probs, Loc location) {
  return Apply("moe_aux_loss", {probs}, {}, location);
}

Tensor ReluGrad(Tensor dy, Tensor y, Loc location) {
  return Apply("relu_grad", {dy, y}, {}, location);
}

Tensor GeluGrad(Tensor dy, Tensor x, Loc location) {
  return Apply("gelu_grad", {dy, x}, {}, location);
}

Tensor DropoutGrad(Tensor dy, double rate, uint64_t seed, Loc location) {
  return Apply("dropout_grad", {dy}, {{"rate", rate}, {"seed", static_cast<int64_t>(seed)}},
               location);
}

Tensor SoftmaxGrad(Tensor dy, Tensor y, Loc location) {
  return Apply("softmax_grad", {dy, y}, {}, location);
}

Tensor LogSoftmaxGrad(Tensor dy, Tensor y, Loc location) {
  return Apply("log_softmax_grad", {dy, y}, {}, location);
}

LayerNormGrads LayerNormGrad(Tensor x, Tensor gamma, Tensor dy, double epsilon, Loc location) {
  std::vector<Tensor> grads =
      ApplyN("layer_norm_grad", {x, gamma, dy}, {{"epsilon", epsilon}}, location);
  if (grads.size() != 3) return {};
  return {grads[0], grads[1], grads[2]};
}

Tensor SparseSoftmaxCrossEntropyGrad(Tensor logits, Tensor labels, Tensor dy, Loc location) {
  return Apply("sparse_softmax_cross_entropy_grad", {logits, labels, dy}, {}, location);
}

Tensor EmbeddingGrad(Tensor ids, Tensor dy, int64_t vocab, Loc location) {
  return Apply("embedding_grad", {ids, dy}, {{"vocab", vocab}}, location);
}

Tensor SliceGrad(Tensor dy, Tensor like, std::vector<int64_t> begin, std::vector<int64_t> end,
                 Loc location) {
  return Apply("slice_grad", {dy, like}, {{"begin", std::move(begin)}, {"end", std::move(end)}},
               location);
}

Tensor ReduceSumLike(Tensor x, Tensor like, Loc location) {
  return Apply("reduce_sum_like", {x, like}, {}, location);
}

Tensor BroadcastLike(Tensor x, Tensor like, std::vector<int64_t> axes, Loc location) {
  return Apply("broadcast_like", {x, like}, {{"axes", std::move(axes)}}, location);
}

Tensor MoeDispatchGrad(Tensor dbuf, Tensor index, Tensor slot, Loc location) {
  return Apply("moe_dispatch_grad", {dbuf, index, slot}, {}, location);
}

Tensor ExpertMatMulGradData(Tensor dout, Tensor w, const std::string& parallel, Loc location) {
  return Apply("expert_matmul_grad_data", {dout, w}, {{"parallel", parallel}}, location);
}

Tensor ExpertMatMulGradWeight(Tensor buf, Tensor dout, const std::string& parallel,
                              Loc location) {
  return Apply("expert_matmul_grad_weight", {buf, dout}, {{"parallel", parallel}}, location);
}

Tensor MoeCombineGradBuf(Tensor dy, Tensor probs, Tensor index, Tensor slot, int64_t capacity,
                         Loc location) {
  return Apply("moe_combine_grad_buf", {dy, probs, index, slot}, {{"capacity", capacity}},
               location);
}

Tensor MoeCombineGradProbs(Tensor dy, Tensor ybuf, Tensor index, Tensor slot, Loc location) {
  return Apply("moe_combine_grad_probs", {dy, ybuf, index, slot}, {}, location);
}

Tensor MoeAuxLossGrad(Tensor dy, Tensor probs, Loc location) {
  return Apply("moe_aux_loss_grad", {dy, probs}, {}, location);
}

void SgdUpdate(Tensor param, Tensor grad, Tensor momentum, const proto::SgdOptimizer& sgd,
               const proto::LearningRateSchedule& schedule, Loc location) {
  AttrMap attrs = LearningRateAttrs(schedule);
  attrs["momentum"] = sgd.momentum();
  ApplyN("sgd_update", {param, grad, momentum}, std::move(attrs), location);
}

void AdamWUpdate(Tensor param, Tensor grad, Tensor m, Tensor v,
                 const proto::AdamWOptimizer& adamw, const proto::LearningRateSchedule& schedule,
                 Loc location) {
  AttrMap attrs = LearningRateAttrs(schedule);
  attrs["beta1"] = adamw.beta1();
  attrs["beta2"] = adamw.beta2();
  attrs["epsilon"] = adamw.epsilon();
  attrs["weight_decay"] = adamw.weight_decay();
  SetFrozenVariance(adamw, attrs);
  ApplyN("adamw_update", {param, grad, m, v}, std::move(attrs), location);
}

std::vector<Tensor> SgdStep(Tensor param, Tensor grad, Tensor momentum,
                            const proto::SgdOptimizer& sgd,
                            const proto::LearningRateSchedule& schedule, Loc location) {
  AttrMap attrs = LearningRateAttrs(schedule);
  attrs["momentum"] = sgd.momentum();
  return ApplyN("sgd_step", {param, grad, momentum}, std::move(attrs), location);
}

std::vector<Tensor> AdamWStep(Tensor param, Tensor grad, Tensor m, Tensor v,
                              const proto::AdamWOptimizer& adamw,
                              const proto::LearningRateSchedule& schedule, Loc location) {
  AttrMap attrs = LearningRateAttrs(schedule);
  attrs["beta1"] = adamw.beta1();
  attrs["beta2"] = adamw.beta2();
  attrs["epsilon"] = adamw.epsilon();
  attrs["weight_decay"] = adamw.weight_decay();
  SetFrozenVariance(adamw, attrs);
  return ApplyN("adamw_step", {param, grad, m, v}, std::move(attrs), location);
}

void Assign(Tensor ref, Tensor value, Loc location) {
  ApplyN("assign", {ref, value}, {}, location);
}

}  // namespace oneflow

// Llama's ops (docs/llama.md).
namespace oneflow {

Tensor RmsNorm(Tensor x, Tensor gamma, double epsilon, Loc location) {
  return Apply("rms_norm", {x, gamma}, {{"epsilon", epsilon}}, location);
}

Tensor RotaryEmbedding(Tensor x, double base, bool inverse, Loc location) {
  AttrMap attrs = {{"base", base}};
  if (inverse) attrs["inverse"] = true;
  return Apply("rotary_embedding", {x}, std::move(attrs), location);
}

Tensor ZigZagRotaryEmbedding(Tensor x, double base, int64_t zigzag_blocks, bool inverse, Loc location) {
  AttrMap attrs = {{"base", base}};
  if (inverse) attrs["inverse"] = true;
  if (zigzag_blocks > 0) attrs["zigzag_blocks"] = zigzag_blocks;
  return Apply("rotary_embedding", {x}, std::move(attrs), location);
}

Tensor RingShift(Tensor x, int64_t axis, int64_t blocks, int64_t shift, Loc location) {
  return Apply("ring_shift", {x}, {{"axis", axis}, {"blocks", blocks}, {"shift", shift}}, location);
}

Tensor RingCausalMask(Tensor x, int64_t axis, int64_t step, double fill, Loc location) {
  return Apply("ring_causal_mask", {x}, {{"axis", axis}, {"step", step}, {"fill", fill}}, location);
}

Tensor RingAttentionStep(Tensor q, Tensor k, Tensor v, int64_t axis, int64_t step, double scale, bool zigzag,
                         Loc location) {
  return Apply("ring_attention", {q, k, v},
               {{"axis", axis}, {"step", step}, {"scale", scale}, {"zigzag", zigzag}}, location);
}

Tensor RingAttentionStepGrad(Tensor q, Tensor k, Tensor v, Tensor out, Tensor dout, int64_t axis, int64_t step,
                             double scale, bool zigzag, int64_t wrt, Loc location) {
  return Apply("ring_attention_grad", {q, k, v, out, dout},
               {{"axis", axis}, {"step", step}, {"scale", scale}, {"zigzag", zigzag}, {"wrt", wrt}}, location);
}

Tensor RingAttentionMerge(Tensor a, Tensor b, Loc location) {
  return Apply("ring_attention_merge", {a, b}, {}, location);
}

Tensor RingAttentionResult(Tensor out, Tensor q, Tensor k, Tensor v, int64_t axis, double scale, bool zigzag,
                           Loc location) {
  return Apply("ring_attention_result", {out, q, k, v}, {{"axis", axis}, {"scale", scale}, {"zigzag", zigzag}},
               location);
}

Tensor BlockwiseRingAttention(Tensor q, Tensor k, Tensor v, const BlockwiseRingOptions& options, Loc location) {
  for (const Tensor& t : {q, k, v}) {
    if (!t.valid()) return Tensor();
  }
  auto hinted = [&](Tensor t) {
    if (t.valid() && options.block_sbp) t.WithSbp(*options.block_sbp);
    return t;
  };
  const int64_t axis = options.axis;
  if (axis < 0 || axis >= k.shape().rank()) {
    // The step reports the bad axis with its shapes.
    return RingAttentionStep(q, k, v, axis, 0, options.scale, options.zigzag, location);
  }
  const int64_t blocks = k.shape().dim(axis);
  AttrMap shift = options.shift_attrs;
  shift["axis"] = axis;
  shift["blocks"] = blocks;
  shift["shift"] = int64_t{1};
  Tensor block_k = k, block_v = v, merged;
  for (int64_t t = 0; t < blocks; ++t) {
    if (t > 0) {
      // Depends on the previous block only, not on its step: the send can overlap the step.
      block_k = hinted(Apply("ring_shift", {block_k}, shift, location));
      block_v = hinted(Apply("ring_shift", {block_v}, shift, location));
    }
    Tensor step = hinted(RingAttentionStep(q, block_k, block_v, axis, t, options.scale, options.zigzag, location));
    merged = t == 0 ? step : hinted(RingAttentionMerge(merged, step, location));
  }
  return hinted(RingAttentionResult(merged, q, k, v, axis, options.scale, options.zigzag, location));
}

Tensor Silu(Tensor x, Loc location) { return Apply("silu", {x}, {}, location); }

Tensor SwiGlu(Tensor gate, Tensor up, Loc location) {
  return Mul(Silu(gate, location), up, location);
}

Tensor GroupedQueryAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                             int64_t heads, int64_t kv_heads, double rope_base,
                             const AttentionHints& hints, Loc location) {
  for (const Tensor& t : {x, w_q, w_k, w_v, w_o}) {
    if (!t.valid()) return Tensor();
  }
  const Shape& shape = x.shape();
  if (shape.rank() != 3 || heads <= 0 || kv_heads <= 0 || shape.dim(2) % heads != 0 ||
      heads % kv_heads != 0) {
    x.graph()->RecordError(absl::InvalidArgumentError(absl::StrCat(
        "GroupedQueryAttention at ", location.ToString(), ": x '", x.name(), "' ",
        x.type().ToString(), " must be [batch, seq, hidden] with hidden divisible by heads=",
        heads, ", and kv_heads=", kv_heads, " must divide heads")));
    return Tensor();
  }
  const int64_t b = shape.dim(0), s = shape.dim(1), h = shape.dim(2);
  const int64_t hd = h / heads, group = heads / kv_heads;
  auto hinted = [](Tensor t, const std::optional<NdSbp>& sbp) {
    if (sbp && t.valid()) t.WithSbp(*sbp);
    return t;
  };
  Tensor rows = hinted(Reshape(x, {b * s, h}, location), hints.rows);
  // Query head j * group + i reads kv head j. Every tensor keeps the kv-head axis at 1, so
  // a split of it (whole heads per device) passes through every reshape and transpose.
  //   q: [b*s, heads*hd] -> [b, s, kv_heads, group, hd] -> [b, kv_heads, group, s, hd]
  //   k, v: [b*s, kv_heads*hd] -> [b, s, kv_heads, hd] -> [b, kv_heads, s, hd]
  // The queries of a group are stacked along the positions ([b, kv_heads, group * s, hd])
  // and multiply their kv head once.
  auto product = [&](Tensor w, const std::optional<NdSbp>& sbp) {
    return hinted(MatMul(rows, w, false, false, location), sbp);
  };
  Tensor q = RotaryEmbedding(Transpose(Reshape(product(w_q, hints.query), {b, s, kv_heads, group, hd}, location),
                                       {0, 2, 3, 1, 4}, location),
                             rope_base, false, location);
  auto kv = [&](Tensor w) {
    return Transpose(Reshape(product(w, hints.key_value), {b, s, kv_heads, hd}, location), {0, 2, 1, 3},
                     location);
  };
  Tensor k = hinted(RotaryEmbedding(kv(w_k), rope_base, false, location), hints.heads);
  Tensor v = hinted(kv(w_v), hints.heads);
  Tensor grouped_q = hinted(Reshape(q, {b, kv_heads, group * s, hd}, location), hints.heads);
  // The attention core (what --recompute=selective re-runs), as in CausalSelfAttention.
  Tensor probs;
  {
    Graph::AttentionCoreScope core(*x.graph());
    Tensor scores = ScalarMul(MatMul(grouped_q, k, false, true, location),
                              1.0 / std::sqrt(static_cast<double>(hd)), location);
    Tensor masked = CausalMask(Reshape(scores, {b, kv_heads, group, s, s}, location), -1e9, location);
    probs = Reshape(Softmax(masked, location), {b, kv_heads, group * s, s}, location);
  }
  Tensor context = hinted(MatMul(probs, v, false, false, location), hints.heads);  // [b, kv, group*s, hd]
  Tensor merged = hinted(Reshape(Transpose(Reshape(context, {b, kv_heads, group, s, hd}, location),
                                           {0, 3, 1, 2, 4}, location),
                                 {b * s, heads * hd}, location),
                         hints.context);
  return Reshape(hinted(MatMul(merged, w_o, false, false, location), hints.output), {b, s, h}, location);
}

RmsNormGrads RmsNormGrad(Tensor x, Tensor gamma, Tensor dy, double epsilon, Loc location) {
  std::vector<Tensor> grads = ApplyN("rms_norm_grad", {x, gamma, dy}, {{"epsilon", epsilon}}, location);
  if (grads.size() != 2) return {};
  return {grads[0], grads[1]};
}

Tensor SiluGrad(Tensor dy, Tensor x, Loc location) { return Apply("silu_grad", {dy, x}, {}, location); }

Tensor ReduceMax(Tensor x, Loc location) { return Apply("reduce_max", {x}, {}, location); }

Tensor Log(Tensor x, Loc location) { return Apply("log", {x}, {}, location); }

VocabCrossEntropyParts VocabCrossEntropy(Tensor logits, Tensor labels, Tensor shift, Loc location) {
  std::vector<Tensor> parts = ApplyN("vocab_cross_entropy", {logits, labels, shift}, {}, location);
  if (parts.size() != 2) return {};
  return {parts[0], parts[1]};
}

Tensor VocabParallelCrossEntropy(Tensor logits, Tensor labels, std::optional<NdSbp> parts_sbp, Loc location) {
  VocabCrossEntropyParts parts = VocabCrossEntropy(logits, labels, ReduceMax(logits, location), location);
  if (parts_sbp.has_value() && parts.sum_exp.valid()) {
    parts.sum_exp.WithSbp(*parts_sbp);
    parts.target.WithSbp(*parts_sbp);
  }
  return Sub(Log(parts.sum_exp, location), parts.target, location);
}

Tensor VocabCrossEntropyGrad(Tensor logits, Tensor labels, Tensor shift, Tensor dsum_exp, Tensor dtarget,
                             Loc location) {
  return Apply("vocab_cross_entropy_grad", {logits, labels, shift, dsum_exp, dtarget}, {}, location);
}

}  // namespace oneflow
