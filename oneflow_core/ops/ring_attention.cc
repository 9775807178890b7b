// The ops ring attention adds (docs/context_parallelism.md):
//
// ring_shift(x; axis, blocks, shift): x rolled by `shift` blocks of dim(axis) / blocks
//   along `axis`: block r of the result is block (r - shift) mod blocks of x. Split S(axis)
//   over `blocks` devices that is each device passing its block to the device `shift`
//   places on around the ring: the compiler delivers the input through a send/recv into
//   the placement rotated by `shift` (compiler/ring_shift.h), and the kernel copies what
//   it received. Whole along `axis` (B, or split on another axis) the kernel rolls
//   locally. Its gradient is ring_shift(dy, -shift): gradients travel the ring backwards.
//
// ring_causal_mask(x [..., blocks at `axis`, ..., s, s]; axis, step, fill): the causal
//   mask of ring step `step`. Block r along `axis` holds the scores of query block r
//   against key block j = (r - step) mod blocks, each block s positions long: entry
//   (i, c) is query position r * s + i against key position j * s + c and becomes `fill`
//   when the key lies after the query (j > r, or j == r and c > i). Block r is read as
//   the LOGICAL index on `axis`, so any split of it gives the same result. fill = 0 is
//   the op's gradient.
//
// ring_attention(q [..., blocks at `axis`, ..., group x s, hd], k, v [..., s, hd]; axis,
//   step, scale, zigzag): one ring step of causal blockwise attention, fused so that what
//   the causal mask hides is not computed (oneflow_core/ops/ring_blocks.h). Query block r
//   (the LOGICAL index on `axis`) against key block j = (r - step) mod blocks, positions
//   by RingPosition (contiguous or zig-zag blocks); query row i of a block is position
//   i mod s (the groups of grouped-query attention stacked along the rows). out [...,
//   group x s, hd + 1]: the softmax over the row's visible keys of scale x q.k times v,
//   then the row's log-sum-exp of the visible scores (kMaskedRowLse where none is
//   visible; the output is 0 there). Rows with no visible key and block pairs with no
//   visible entry cost nothing.
// ring_attention_grad(q, k, v, out, dout; the same attributes, wrt): the gradient of
//   ring_attention with respect to q (wrt = 0), k (1) or v (2), given out and its
//   gradient dout (the log-sum-exp's gradient in the last column), recomputing the
//   probabilities from the saved log-sum-exp (flash attention's backward). Skips what the
//   forward skipped. Given the output and log-sum-exp of ALL the ring's steps merged
//   (and their gradient) instead of one step's, it gives that step's share of the whole
//   attention's gradient: p = exp(score - lse) is then the probability over every key,
//   and dscore = p (dout.v - dout.out + dlse) the whole softmax's gradient restricted to
//   this step's keys (Megatron's and flash attention's ring backward).
//
// ring_attention_merge(a, b [..., hd + 1]): two partial results of ring_attention over
//   disjoint key sets, merged as online softmax does: per row m = max(lse_a, lse_b), out
//   = (e^(lse_a - m) out_a + e^(lse_b - m) out_b) / (e^(lse_a - m) + e^(lse_b - m)), lse
//   = m + log(e^(lse_a - m) + e^(lse_b - m)); a row masked in one (kMaskedRowLse) is the
//   other's, masked in both stays masked. The forward's running result: one block of it
//   lives at a time instead of every step's. No gradient of its own: the ring's backward
//   is ring_attention_result's.
//
// ring_attention_result(out, q, k, v; axis, scale, zigzag): `out` unchanged (a copy),
//   declaring that out is the causal attention of q against every K/V block on `axis`,
//   the ring_attention steps 0 .. blocks-1 merged (ring_attention_merge). It exists for
//   its gradient (oneflow_core/dsl/gradients/llama_gradient.cc): the whole ring's
//   backward, which passes k and v around the ring again with dk and dv travelling
//   alongside (ring_attention_grad per step against the merged out), so the backward
//   keeps q, k, v, out and its gradient, one block each, instead of every step's K/V
//   block and partial result. No gradient reaches `out`'s producers.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/ops/ring_blocks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<int64_t> AxisAttr(const TensorType& x, const AttrMap& attrs, int64_t excluded_tail) {
  const int64_t axis = GetIntAttr(attrs, "axis", 0);
  const int64_t limit = x.shape.rank() - excluded_tail;
  if (axis < 0 || axis >= limit) {
    return absl::InvalidArgumentError(absl::StrCat("attribute axis=", axis, " must be in [0, ", limit, ") for x ",
                                                   x.shape.ToString()));
  }
  return axis;
}

absl::StatusOr<std::vector<TensorType>> InferRingShift(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  OF_ASSIGN_OR_RETURN(const int64_t axis, AxisAttr(x, attrs, 0));
  const int64_t blocks = GetIntAttr(attrs, "blocks", 1);
  if (blocks < 1 || x.shape.dim(axis) % blocks != 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute blocks=", blocks, " must be >= 1 and divide dim ", axis,
                                                   " of x ", x.shape.ToString()));
  }
  return inputs;
}

// A permutation of blocks: linear (P -> P), any axis split. Split on `axis` the devices
// must be the blocks (devices_must_divide: the compiler refuses fewer, see ring_shift.h).
std::vector<SbpSignature> RingShiftSignatures(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  std::vector<SbpSignature> signatures = op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/true, {});
  const Sbp split = Sbp::Split(GetIntAttr(attrs, "axis", 0));
  for (SbpSignature& signature : signatures) {
    if (signature.inputs[0] == split) signature.devices_must_divide = GetIntAttr(attrs, "blocks", 1);
  }
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferRingCausalMask(const std::vector<TensorType>& inputs,
                                                            const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  OF_RETURN_IF_ERROR(AxisAttr(x, attrs, 2).status());
  const int64_t rank = x.shape.rank();
  if (x.shape.dim(rank - 2) != x.shape.dim(rank - 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x ", x.shape.ToString(), " must be square in its last two dimensions [..., s, s] (a query block x a key "
        "block), got ", x.shape.dim(rank - 2), " x ", x.shape.dim(rank - 1)));
  }
  if (GetIntAttr(attrs, "step", 0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute step=", GetIntAttr(attrs, "step", 0), " must be >= 0"));
  }
  return inputs;
}

// As causal_mask: the last two axes whole, linear only with fill = 0.
std::vector<SbpSignature> RingCausalMaskSignatures(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  return op_util::UnarySignatures(rank, GetFloatAttr(attrs, "fill", -1e9) == 0.0, {rank - 2, rank - 1});
}

absl::Status ExpectRingAttentionInputs(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& q = inputs[0];
  const TensorType& k = inputs[1];
  const TensorType& v = inputs[2];
  for (const auto& [name, type] : {std::pair<const char*, const TensorType&>{"q", q}, {"k", k}, {"v", v}}) {
    OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast(name, type, 3));
    OF_RETURN_IF_ERROR(op_util::ExpectFloating(name, type));
  }
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("k", k, "v", v));
  const int64_t rank = q.shape.rank();
  bool same_leading = k.shape.rank() == rank;
  for (int64_t a = 0; same_leading && a < rank - 2; ++a) same_leading = q.shape.dim(a) == k.shape.dim(a);
  const int64_t rows = q.shape.dim(rank - 2), s = k.shape.dim(k.shape.rank() - 2);
  if (!same_leading || q.shape.dim(rank - 1) != k.shape.dim(rank - 1) || s == 0 || rows % s != 0) {
    return absl::InvalidArgumentError(absl::StrCat("q ", q.shape.ToString(), " and k ", k.shape.ToString(),
                                                   " must be [..., group x s, hd] and [..., s, hd] with the same "
                                                   "leading dimensions"));
  }
  OF_RETURN_IF_ERROR(AxisAttr(q, attrs, 2).status());
  if (GetBoolAttr(attrs, "zigzag", false) && s % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("zig-zag blocks hold two chunks each, but k's block of ", s, " positions is odd"));
  }
  if (GetIntAttr(attrs, "step", 0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute step=", GetIntAttr(attrs, "step", 0), " must be >= 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferRingAttention(const std::vector<TensorType>& inputs,
                                                           const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(ExpectRingAttentionInputs(inputs, attrs));
  TensorType out = inputs[0];
  const int64_t last = out.shape.rank() - 1;
  out.shape.set_dim(last, out.shape.dim(last) + 1);  // hd outputs, then the log-sum-exp.
  return std::vector<TensorType>{out};
}

absl::StatusOr<std::vector<TensorType>> InferRingAttentionGrad(const std::vector<TensorType>& inputs,
                                                               const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(ExpectRingAttentionInputs(inputs, attrs));
  OF_ASSIGN_OR_RETURN(const std::vector<TensorType> forward, InferRingAttention(inputs, attrs));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("out", inputs[3], "forward output", forward[0]));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("dout", inputs[4], "out", inputs[3]));
  const int64_t wrt = GetIntAttr(attrs, "wrt", 0);
  if (wrt < 0 || wrt > 2) {
    return absl::InvalidArgumentError(absl::StrCat("attribute wrt=", wrt, " must be 0 (q), 1 (k) or 2 (v)"));
  }
  return std::vector<TensorType>{inputs[wrt]};
}

// Every input and output split alike on an axis before the rows (batch, heads, blocks),
// or all whole. Not linear (softmax), and the rows stay whole (each row's softmax needs
// all of its block's keys).
std::vector<SbpSignature> RingAttentionSignatures(const std::vector<TensorType>& inputs, const AttrMap&) {
  std::vector<SbpSignature> signatures;
  const size_t arity = inputs.size();
  signatures.push_back({std::vector<Sbp>(arity, Sbp::Broadcast()), {Sbp::Broadcast()}});
  for (int64_t a = 0; a < inputs[0].shape.rank() - 2; ++a) {
    signatures.push_back({std::vector<Sbp>(arity, Sbp::Split(a)), {Sbp::Split(a)}});
  }
  return signatures;
}

// The kernels' scratch for the inputs a device holds: RingAttentionWorkspaceFloats of
// q's rows, the key block's positions and the head dimension, in f32.
WorkspaceFn RingAttentionWorkspace(bool grad) {
  return [grad](const std::vector<TensorType>& inputs, const AttrMap& attrs) -> int64_t {
    const Shape& q = inputs[0].shape;
    const Shape& k = inputs[1].shape;
    if (q.rank() < 2 || k.rank() < 2) return 0;
    return RingAttentionWorkspaceFloats(q.dim(q.rank() - 2), k.dim(k.rank() - 2), q.dim(q.rank() - 1),
                                        GetBoolAttr(attrs, "zigzag", false), grad) *
           static_cast<int64_t>(sizeof(float));
  };
}

absl::StatusOr<std::vector<TensorType>> InferRingAttentionMerge(const std::vector<TensorType>& inputs,
                                                                const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("a", inputs[0], 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("a", inputs[0]));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("b", inputs[1], "a", inputs[0]));
  if (inputs[0].shape.dim(inputs[0].shape.rank() - 1) < 2) {
    return absl::InvalidArgumentError(absl::StrCat("a ", inputs[0].shape.ToString(),
                                                   " must be [..., hd + 1]: outputs then the log-sum-exp, hd >= 1"));
  }
  return std::vector<TensorType>{inputs[0]};
}

// Row by row: every axis but the last (a row's outputs and its log-sum-exp) splits, or all
// whole. Not linear.
std::vector<SbpSignature> RingAttentionMergeSignatures(const std::vector<TensorType>& inputs, const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  std::vector<SbpSignature> signatures = op_util::UnarySignatures(rank, /*linear=*/false, {rank - 1});
  for (SbpSignature& signature : signatures) signature.inputs.push_back(signature.inputs[0]);
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferRingAttentionResult(const std::vector<TensorType>& inputs,
                                                                 const AttrMap& attrs) {
  const std::vector<TensorType> qkv(inputs.begin() + 1, inputs.end());
  OF_RETURN_IF_ERROR(ExpectRingAttentionInputs(qkv, attrs));
  OF_ASSIGN_OR_RETURN(const std::vector<TensorType> attention, InferRingAttention(qkv, attrs));
  OF_RETURN_IF_ERROR(op_util::ExpectSameType("out", inputs[0], "ring_attention's output of q, k, v", attention[0]));
  return std::vector<TensorType>{inputs[0]};
}

}  // namespace

OpDefinition RingAttentionMergeDefinition() {
  return {"ring_attention_merge", {"a", "b"}, {"out"}, InferRingAttentionMerge, RingAttentionMergeSignatures,
          "ring_attention_merge"};
}

OpDefinition RingAttentionResultDefinition() {
  return {"ring_attention_result", {"out", "q", "k", "v"}, {"y"}, InferRingAttentionResult,
          RingAttentionSignatures, "ring_attention_result"};
}

OpDefinition RingAttentionDefinition() {
  OpDefinition definition{"ring_attention", {"q", "k", "v"}, {"out"}, InferRingAttention, RingAttentionSignatures,
                          "ring_attention"};
  definition.workspace_bytes = RingAttentionWorkspace(/*grad=*/false);
  return definition;
}

OpDefinition RingAttentionGradDefinition() {
  OpDefinition definition{"ring_attention_grad", {"q", "k", "v", "out", "dout"}, {"dx"}, InferRingAttentionGrad,
                          RingAttentionSignatures, "ring_attention_grad"};
  definition.workspace_bytes = RingAttentionWorkspace(/*grad=*/true);
  return definition;
}

OpDefinition RingShiftDefinition() {
  return {"ring_shift", {"x"}, {"out"}, InferRingShift, RingShiftSignatures, "ring_shift"};
}

OpDefinition RingCausalMaskDefinition() {
  return {"ring_causal_mask", {"x"}, {"out"}, InferRingCausalMask, RingCausalMaskSignatures, "ring_causal_mask"};
}

}  // namespace oneflow
