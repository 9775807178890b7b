// The DSL's op functions. Each adds one op to the graph of its first input and returns
// its output; errors are recorded in the graph (see graph.h) and name the call site.
//
//   Tensor h = Relu(BiasAdd(MatMul(x, w1), b1));
//   Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(MatMul(h, w2), labels));
#ifndef ONEFLOW_CORE_DSL_OPS_H_
#define ONEFLOW_CORE_DSL_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oneflow_core/dsl/graph.h"

namespace oneflow {

using Loc = SourceLocation;

Tensor MatMul(Tensor a, Tensor b, bool transpose_a = false, bool transpose_b = false,
              Loc location = Loc::Current());
Tensor Add(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Sub(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Mul(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Div(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor BiasAdd(Tensor x, Tensor bias, Loc location = Loc::Current());
Tensor Relu(Tensor x, Loc location = Loc::Current());
Tensor Gelu(Tensor x, Loc location = Loc::Current());
Tensor ScalarMul(Tensor x, double scalar, Loc location = Loc::Current());
Tensor ScalarAdd(Tensor x, double scalar, Loc location = Loc::Current());
// Zeroes each element with probability `rate` (mask from seed and logical index) and
// scales the rest by 1 / (1 - rate).
Tensor Dropout(Tensor x, double rate, uint64_t seed, Loc location = Loc::Current());
Tensor Softmax(Tensor x, Loc location = Loc::Current());
Tensor LogSoftmax(Tensor x, Loc location = Loc::Current());
Tensor LayerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon = 1e-5,
                 Loc location = Loc::Current());
// Per-example loss: logits [..., classes], labels [...] -> [...].
Tensor SparseSoftmaxCrossEntropy(Tensor logits, Tensor labels, Loc location = Loc::Current());
Tensor Reshape(Tensor x, std::vector<int64_t> shape, Loc location = Loc::Current());
Tensor Transpose(Tensor x, std::vector<int64_t> perm, Loc location = Loc::Current());
// `axes` empty reduces over all axes.
Tensor ReduceSum(Tensor x, std::vector<int64_t> axes = {}, bool keep_dims = false,
                 Loc location = Loc::Current());
Tensor ReduceMean(Tensor x, std::vector<int64_t> axes = {}, bool keep_dims = false,
                  Loc location = Loc::Current());
// Rows of table [vocab, hidden] selected by ids [...] -> [..., hidden].
Tensor Embedding(Tensor table, Tensor ids, Loc location = Loc::Current());
// x[begin[0]:end[0], begin[1]:end[1], ...] (one entry per axis, step 1).
Tensor Slice(Tensor x, std::vector<int64_t> begin, std::vector<int64_t> end,
             Loc location = Loc::Current());
// Joins tensors along `axis` (pairwise concat ops, left to right). One tensor is returned
// as is; an empty list gives an invalid Tensor.
Tensor Concat(const std::vector<Tensor>& inputs, int64_t axis, Loc location = Loc::Current());
// x moved to `placement` with layout `sbp`: an identity op whose output carries both as
// hints, so the compiler boxes into them (pipeline stages, explicit resharding).
Tensor To(Tensor x, const Placement& placement, const NdSbp& sbp, Loc location = Loc::Current());
// Ones of x's type (the autograd seed of the loss).
Tensor OnesLike(Tensor x, Loc location = Loc::Current());
// x [..., s, s] with entries above the diagonal (column > row) set to `fill`.
Tensor CausalMask(Tensor x, double fill = -1e9, Loc location = Loc::Current());

// Causal multi-head self-attention, composed of the ops above (no op of its own):
// x [b, s, h], weights [h, h], h divisible by num_heads; returns [b, s, h].
//   q, k, v = heads(x . w_q), heads(x . w_k), heads(x . w_v)   heads: [b, nh, s, hd]
//   out = merge(softmax(causal_mask(q . k^T / sqrt(hd))) . v) . w_o
// Megatron tensor parallelism needs only hints: w_q, w_k, w_v S(1) and w_o S(0) keep
// every op on its device's heads (head axis split) and leave the output P, when the
// devices divide num_heads (the reshapes' condition, see SbpSignature).
Tensor CausalSelfAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                           int64_t num_heads, Loc location = Loc::Current());

// Llama's ops (docs/llama.md).
// x [..., h] / sqrt(mean(x^2, last axis) + epsilon) * gamma [h]; the statistics in f32
// or wider whatever x's dtype.
Tensor RmsNorm(Tensor x, Tensor gamma, double epsilon = 1e-6, Loc location = Loc::Current());
// Rotary position embeddings of x [..., positions, d] (d even): each row rotated in the
// pairs (i, i + d/2) by p * base^(-2i/d), p the row's LOGICAL position on the
// second-to-last axis (so any split of that axis gives the same values); `inverse`
// rotates by the negated angles (the op's gradient).
Tensor RotaryEmbedding(Tensor x, double base = 10000.0, bool inverse = false,
                       Loc location = Loc::Current());
// RotaryEmbedding of x whose positions axis holds the sequence in the zig-zag order of
// `zigzag_blocks` blocks (ring attention's load-balanced split: block r = chunks r and
// 2 x blocks - 1 - r, oneflow_core/ops/ring_blocks.h): each index rotated by the angle
// of its logical position. zigzag_blocks = 0 is RotaryEmbedding.
Tensor ZigZagRotaryEmbedding(Tensor x, double base, int64_t zigzag_blocks, bool inverse = false,
                             Loc location = Loc::Current());
// Ring attention's ops (docs/context_parallelism.md, oneflow_core/ops/ring_attention.cc).
// x rolled by `shift` blocks of dim(axis) / blocks along `axis` (block r of the result is
// block r - shift of x). Split over `blocks` devices on `axis`, each device passes its
// block `shift` devices on around the ring (the compiler's send/recv into the rotated
// placement); the gradient is the shift back.
Tensor RingShift(Tensor x, int64_t axis, int64_t blocks, int64_t shift = 1, Loc location = Loc::Current());
// Ring step `step`'s causal mask of scores x [..., blocks at `axis`, ..., s, s]: block r
// holds query block r against key block (r - step) mod blocks; entries whose key position
// lies after the query position become `fill`.
Tensor RingCausalMask(Tensor x, int64_t axis, int64_t step, double fill = -1e9, Loc location = Loc::Current());
// One ring step of causal blockwise attention, fused: q [..., blocks at `axis`, ...,
// group x s, hd] against k, v [..., s, hd] (block r against key block (r - step) mod
// blocks; contiguous or zig-zag blocks, oneflow_core/ops/ring_blocks.h); returns [...,
// group x s, hd + 1]: each row's softmax(scale q.k) v over the keys it sees, then its
// log-sum-exp. What the causal mask hides is skipped, in the backward too.
Tensor RingAttentionStep(Tensor q, Tensor k, Tensor v, int64_t axis, int64_t step, double scale, bool zigzag,
                         Loc location = Loc::Current());
// RingAttentionStep's gradient with respect to q (wrt = 0), k (1) or v (2).
Tensor RingAttentionStepGrad(Tensor q, Tensor k, Tensor v, Tensor out, Tensor dout, int64_t axis, int64_t step,
                             double scale, bool zigzag, int64_t wrt, Loc location = Loc::Current());
// Online softmax's merge of two ring steps' results a, b [..., hd + 1] over disjoint keys
// (ring_attention_merge, oneflow_core/ops/ring_attention.cc). No gradient of its own.
Tensor RingAttentionMerge(Tensor a, Tensor b, Loc location = Loc::Current());
// `out` unchanged, declared the merged ring attention of q, k, v over every block on
// `axis`: its gradient is the whole ring's backward (ring_attention_result).
Tensor RingAttentionResult(Tensor out, Tensor q, Tensor k, Tensor v, int64_t axis, double scale, bool zigzag,
                           Loc location = Loc::Current());
// How BlockwiseRingAttention runs: the block axis, the scores' scale, the split of the
// blocks; `block_sbp`, when set, the hint of every block tensor it adds (k and v after
// each shift, each step's result, the running merge); `shift_attrs` added to its forward
// ring_shift ops (a model's tag).
struct BlockwiseRingOptions {
  int64_t axis = 0;
  double scale = 1.0;
  bool zigzag = false;
  std::optional<NdSbp> block_sbp;
  AttrMap shift_attrs;
};
// Causal attention of q [..., blocks at `axis`, ..., group x s, hd] against every K/V
// block of k, v [..., s, hd] by ring attention: at step t = 0 .. blocks-1 block r of q
// against block r - t of k and v (RingAttentionStep), which then pass one block on
// (RingShift: over the ring, a send/recv to the next device), each step merged into one
// running result (RingAttentionMerge); returns RingAttentionResult of it, [..., group x s,
// hd + 1] (outputs, then the log-sum-exp). Its gradient (dsl/gradients/llama_gradient.cc)
// passes k and v around the ring again with dk and dv travelling alongside, so a device
// holds O(1) blocks of K/V and of results in either pass, however many steps: the forward
// keeps nothing of a step for the backward, the backward recomputes each step's
// probabilities from the merged log-sum-exp.
Tensor BlockwiseRingAttention(Tensor q, Tensor k, Tensor v, const BlockwiseRingOptions& options,
                              Loc location = Loc::Current());
// x * sigmoid(x).
Tensor Silu(Tensor x, Loc location = Loc::Current());
// SwiGLU's activation: silu(gate) * up (two ops, silu and mul).
Tensor SwiGlu(Tensor gate, Tensor up, Loc location = Loc::Current());
// Megatron's vocab-parallel cross-entropy (oneflow_core/ops/vocab_cross_entropy.cc):
// logits [..., c], labels [...] -> loss [...], equal to SparseSoftmaxCrossEntropy, made of
// reduce_max, vocab_cross_entropy, log and sub so that logits split on the class axis stay
// split (the parts and maxima are reduced across devices, not the logits gathered).
// `parts_sbp`, when given, hints the per-row parts (sum_exp, target): P over the tensor-
// parallel axis pins Megatron's layout where the cost model would rather gather small
// logits (one collective instead of two all-reduces).
Tensor VocabParallelCrossEntropy(Tensor logits, Tensor labels, std::optional<NdSbp> parts_sbp = std::nullopt,
                                 Loc location = Loc::Current());
// The maximum over the last axis: [..., c] -> [...].
Tensor ReduceMax(Tensor x, Loc location = Loc::Current());
// The natural logarithm, elementwise.
Tensor Log(Tensor x, Loc location = Loc::Current());
struct VocabCrossEntropyParts {
  Tensor sum_exp, target;  // sum_j exp(logits_j - shift); logits[label] - shift.
};
VocabCrossEntropyParts VocabCrossEntropy(Tensor logits, Tensor labels, Tensor shift,
                                         Loc location = Loc::Current());
// Causal grouped-query self-attention with rotary embeddings, composed of the ops above:
// x [b, s, h], w_q [h, heads * hd], w_k and w_v [h, kv_heads * hd], w_o [heads * hd, h],
// hd = h / heads; kv_heads divides heads and query head j reads kv head j / (heads /
// kv_heads), which equals multi-head attention with each kv head repeated that many
// times, without materializing the repeats: the queries of a group are stacked along the
// positions axis ([b, kv_heads, group * s, hd]) and multiply their kv head once. Returns
// [b, s, h]. For Megatron's tensor parallelism give w_q (and w_k, w_v when the devices
// divide kv_heads) S(1), w_o S(0), and pin the products with `hints` (the compiler's cost
// model alone may prefer gathering the weights to splitting the heads).
struct AttentionHints {
  std::optional<NdSbp> rows;     // x flattened [b * s, h]: B over tensor-parallel devices.
  std::optional<NdSbp> query;    // x . w_q  [b * s, heads * hd]: column-parallel S(1).
  std::optional<NdSbp> key_value;  // x . w_k, x . w_v [b * s, kv_heads * hd].
  // The grouped queries [b, kv_heads, group * s, hd], k and v [b, kv_heads, s, hd] and the
  // attention context [b, kv_heads, group * s, hd]: S(1) when the devices divide kv_heads.
  std::optional<NdSbp> heads;
  std::optional<NdSbp> context;  // the heads merged [b * s, heads * hd] before w_o: S(1).
  std::optional<NdSbp> output;   // . w_o [b * s, h]: row-parallel, P.
};
Tensor GroupedQueryAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                             int64_t heads, int64_t kv_heads, double rope_base = 10000.0,
                             const AttentionHints& hints = {}, Loc location = Loc::Current());

// Mixture of experts (docs/moe.md). B samples (one routing group each), T tokens, H
// hidden, E experts, K = top_k, C = capacity (slots per expert per sample), F = the
// experts' inner size. A dropped choice has index = slot = -1.
struct MoeRouting {
  Tensor index;    // i32 [B, T, K]: the expert of each choice, -1 if dropped.
  Tensor slot;     // i32 [B, T, K]: its position in the expert's capacity, -1 if dropped.
  Tensor dropped;  // f32 [B]: dropped choices per sample (a count; no gradient).
};
// probs [B, T, E]: per sample, choice k of token t is its k-th largest probability (ties:
// lower expert id), taken k-major (all first choices in token order, then all second
// ones, ...); a choice whose expert already holds `capacity` tokens is dropped.
MoeRouting MoeRoute(Tensor probs, int64_t top_k, int64_t capacity, Loc location = Loc::Current());
// x [B, T, H] -> buf [B, experts, capacity, H]: each kept choice's token row at its
// (expert, slot); zeros in unused slots.
Tensor MoeDispatch(Tensor x, Tensor index, Tensor slot, int64_t experts, int64_t capacity,
                   Loc location = Loc::Current());
// buf [B, E, C, H] . w [E, H, F] per expert -> [B, E, C, F]. parallel = "data" (w
// replicated, samples split: S(0), B) or "expert" (experts split: S(1), S(0)).
Tensor ExpertMatMul(Tensor buf, Tensor w, const std::string& parallel,
                    Loc location = Loc::Current());
// y [B, T, H] = sum over kept choices of probs[b, t, e] * ybuf[b, e, slot].
Tensor MoeCombine(Tensor ybuf, Tensor probs, Tensor index, Tensor slot,
                  Loc location = Loc::Current());
// Switch Transformer load-balancing loss per sample [B]: E * sum_e f_e * P_e, f_e the
// fraction of tokens whose argmax is e, P_e the mean probability of e.
Tensor MoeAuxLoss(Tensor probs, Loc location = Loc::Current());

// Backward ops, as the gradient functions (dsl/gradients/) add them. Each takes the
// incoming gradient dy and what the forward op saved.
Tensor ReluGrad(Tensor dy, Tensor y, Loc location = Loc::Current());
Tensor GeluGrad(Tensor dy, Tensor x, Loc location = Loc::Current());
// Same rate and seed as the forward dropout: the same mask.
Tensor DropoutGrad(Tensor dy, double rate, uint64_t seed, Loc location = Loc::Current());
Tensor SoftmaxGrad(Tensor dy, Tensor y, Loc location = Loc::Current());
Tensor LogSoftmaxGrad(Tensor dy, Tensor y, Loc location = Loc::Current());
struct LayerNormGrads {
  Tensor dx, dgamma, dbeta;
};
LayerNormGrads LayerNormGrad(Tensor x, Tensor gamma, Tensor dy, double epsilon,
                             Loc location = Loc::Current());
Tensor SparseSoftmaxCrossEntropyGrad(Tensor logits, Tensor labels, Tensor dy,
                                     Loc location = Loc::Current());
// d(table) [vocab, hidden] from ids [...] and dy [..., hidden].
Tensor EmbeddingGrad(Tensor ids, Tensor dy, int64_t vocab, Loc location = Loc::Current());
// dy zero-padded back to like's shape (the gradient of Slice(like, begin, end)).
Tensor SliceGrad(Tensor dy, Tensor like, std::vector<int64_t> begin, std::vector<int64_t> end,
                 Loc location = Loc::Current());
// x summed over the axes along which `like` broadcasts to x's shape; like's shape.
Tensor ReduceSumLike(Tensor x, Tensor like, Loc location = Loc::Current());
// x (like reduced over `axes`, with or without kept dims) spread back to like's shape.
Tensor BroadcastLike(Tensor x, Tensor like, std::vector<int64_t> axes,
                     Loc location = Loc::Current());

struct RmsNormGrads {
  Tensor dx, dgamma;
};
RmsNormGrads RmsNormGrad(Tensor x, Tensor gamma, Tensor dy, double epsilon,
                         Loc location = Loc::Current());
// dy * silu'(x), x the forward input.
Tensor SiluGrad(Tensor dy, Tensor x, Loc location = Loc::Current());
// dsum_exp * exp(logits - shift) + dtarget * one_hot(labels): vocab_cross_entropy's
// gradient with respect to the logits (the shift held constant).
Tensor VocabCrossEntropyGrad(Tensor logits, Tensor labels, Tensor shift, Tensor dsum_exp,
                             Tensor dtarget, Loc location = Loc::Current());

// Mixture-of-experts backward ops (docs/moe.md).
// dx [B, T, H]: the sum over kept choices of dbuf[b, index, slot].
Tensor MoeDispatchGrad(Tensor dbuf, Tensor index, Tensor slot, Loc location = Loc::Current());
// dbuf [B, E, C, H] = dout[b, e] . w[e]^T.
Tensor ExpertMatMulGradData(Tensor dout, Tensor w, const std::string& parallel,
                            Loc location = Loc::Current());
// dw [E, H, F] = sum over b of buf[b, e]^T . dout[b, e].
Tensor ExpertMatMulGradWeight(Tensor buf, Tensor dout, const std::string& parallel,
                              Loc location = Loc::Current());
// dybuf [B, E, capacity, H]: probs[b, t, e] * dy[b, t] at each kept choice, zeros elsewhere.
Tensor MoeCombineGradBuf(Tensor dy, Tensor probs, Tensor index, Tensor slot, int64_t capacity,
                         Loc location = Loc::Current());
// dprobs [B, T, E]: dot(dy[b, t], ybuf[b, e, slot]) for each kept choice, 0 elsewhere.
Tensor MoeCombineGradProbs(Tensor dy, Tensor ybuf, Tensor index, Tensor slot,
                           Loc location = Loc::Current());
// dprobs [B, T, E] = dy[b] * E * f_e / T (the argmax fractions f held constant).
Tensor MoeAuxLossGrad(Tensor dy, Tensor probs, Loc location = Loc::Current());

// Optimizer updates: no outputs; they update param and the state tensors in place at the
// learning rate `schedule` gives for the iteration. Errors are recorded in the graph.
void SgdUpdate(Tensor param, Tensor grad, Tensor momentum, const proto::SgdOptimizer& sgd,
               const proto::LearningRateSchedule& schedule, Loc location = Loc::Current());
void AdamWUpdate(Tensor param, Tensor grad, Tensor m, Tensor v,
                 const proto::AdamWOptimizer& adamw, const proto::LearningRateSchedule& schedule,
                 Loc location = Loc::Current());
// Their out-of-place twins: the new parameter then the new state as outputs (sgd_step:
// {new_param, new_momentum}; adamw_step: {new_param, new_m, new_v}), nothing written in
// place; empty after an error. The compiler uses them to update a shard of a parameter
// (docs/zero.md).
std::vector<Tensor> SgdStep(Tensor param, Tensor grad, Tensor momentum,
                            const proto::SgdOptimizer& sgd,
                            const proto::LearningRateSchedule& schedule,
                            Loc location = Loc::Current());
std::vector<Tensor> AdamWStep(Tensor param, Tensor grad, Tensor m, Tensor v,
                              const proto::AdamWOptimizer& adamw,
                              const proto::LearningRateSchedule& schedule,
                              Loc location = Loc::Current());
// ref <- value, in place (an update: no outputs); value has ref's type.
void Assign(Tensor ref, Tensor value, Loc location = Loc::Current());

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_OPS_H_
