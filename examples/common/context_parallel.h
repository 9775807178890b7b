// Context parallelism (docs/context_parallelism.md): one long sequence split over the cp
// devices of ParallelLayout. Outside attention every op works on its own positions, so
// the models keep activations sequence-first, [s, b, h] split S(0) over cp, and multiply
// them as rows [s * b, h] (whose split over cp is S(0), contiguous; [b, s, h] flattened
// would interleave the batch); with dp, [dp * s, b / dp, h] (SequenceFirst). Attention needs every position of a head:
//   Ulysses (DeepSpeed)  the compiler's all-to-all boxing turns the position split into a
//                        head split (S(seq) -> S(heads) over cp) before the attention
//                        core and back after it; each device computes whole heads.
//   Ring                 each device keeps its queries; the K/V blocks pass around the cp
//                        ring (ring_shift ops, a send/recv each), one blockwise attention
//                        step per block, merged by the steps' log-sum-exps.
#ifndef EXAMPLES_COMMON_CONTEXT_PARALLEL_H_
#define EXAMPLES_COMMON_CONTEXT_PARALLEL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "examples/common/cp_traffic.h"
#include "examples/common/parallel_layout.h"
#include "oneflow_core/dsl/graph.h"

namespace oneflow::examples {

// What a model tells the context-parallel checks and the cost model about its attention.
struct AttentionShape {
  int64_t batch = 1;  // Rows of one micro-batch.
  int64_t seq = 1;
  int64_t hidden = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;  // heads for multi-head attention.
  // The flag that sets kv_heads, for errors: "kv_heads" (llama) or "heads" (gpt).
  const char* kv_heads_flag = "heads";
};

// Communication of one attention layer's forward pass per device under cp, in bytes
// (f32), by the formulas of the literature:
//   Ulysses: q, k, v in and the context out, each device sending (cp-1)/cp of its
//            N/cp positions x (h + 2 h_kv + h) / tp values (4 N h / cp for multi-head);
//   ring:    each device forwards the K and V blocks cp-1 times, (cp-1) x (N/cp) x
//            2 h_kv / tp values (about 2 N h_kv).
// N = batch x seq / dp tokens (one data-parallel group's).
struct CpAttentionCost {
  CpAttention choice = CpAttention::kUlysses;
  double ulysses_bytes = 0;
  double ring_bytes = 0;
  std::string reason;  // One line: why `choice`.
};
CpAttentionCost EstimateCpAttention(const AttentionShape& shape, const ParallelLayout& layout);

// The attention scheme for `shape` under `layout` (--cp_attention; auto: the cost
// model's, EstimateCpAttention), or an error naming the flags: an uneven split of the
// sequence ("--seq=10 is not divisible by --cp=4"), heads Ulysses cannot split
// ("--kv_heads=2 is not divisible by --tp=1 x --cp=4"), kv heads ring cannot keep whole
// per tp device. With cp = 1: kRing when --cp_attention=ring (the models then run
// attention as one ring step over the whole sequence, the blockwise kernel), else
// kUlysses, never used (the plain attention core).
absl::StatusOr<CpAttention> ResolveCpAttention(const AttentionShape& shape, const ParallelLayout& layout);

// Causal grouped-query self-attention over a sequence-first x [s, b, h] under Ulysses:
// w_q [h, heads * hd], w_k, w_v [h, kv_heads * hd], w_o [heads * hd, h]; rotary
// embeddings on q and k when `rope_base` is set (llama), none otherwise (gpt). The same
// arithmetic as GroupedQueryAttention (oneflow_core/dsl/ops.h) on [b, s, h]; returns
// [s, b, h]. The three transposes next to the all-to-alls carry the attribute
// kCpAttentionAttr = "ulysses" (cp_traffic.h reads it back from a plan). Hints: rows S(0) over cp (whole over tp), the heads of q, k, v and the
// context split over tp then cp (whole heads per device), back to rows S(0) over cp
// after the core; the two changes of split are the compiler's all-to-all boxings. The
// local attention on whole heads is BlockwiseRingAttention over cp blocks of the
// device's own sequence (the block axis whole: local rolls, no communication): it keeps
// q, k, v and the merged output for the backward, not the heads' [s, s] probabilities,
// and its workspace is 64 query rows x N / cp keys.
Tensor UlyssesAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o, int64_t heads, int64_t kv_heads,
                        std::optional<double> rope_base, const ParallelLayout& layout);

// Causal grouped-query self-attention as UlyssesAttention's (same arguments, same
// arithmetic up to rounding), by ring attention: the positions stay split over cp; q, k
// and v become blocks [b, kv_heads, cp, ..., hd] (block r = positions [r s/cp, (r+1)
// s/cp), local transposes); at step t = 0 .. cp-1 each device scores its queries against
// the K/V block it holds (block r - t, ring_causal_mask: whole, causal on the diagonal
// block, or all masked), takes that step's softmax, output and log-sum-exp, and passes
// k and v one device on (ring_shift tagged kCpAttentionAttr = "ring"); each step's
// output is merged into a running output and log-sum-exp (online softmax,
// BlockwiseRingAttention). The backward passes k and v around the ring again with dK and
// dV alongside (ring_attention_result's gradient), so per device both passes hold O(1)
// blocks of N / cp positions, however large cp. No head split: any kv_heads divisible by
// tp. Each step is one fused ring_attention op that skips the keys the causal mask hides
// (a whole block pair where the key block lies after the query block). With
// layout.cp_ring_zigzag() the input is in zig-zag order (ZigZagSequence: block r holds
// chunks r and 2cp-1-r), the rotary angles and the mask follow the logical positions,
// and every device computes as many tiles; contiguous, device r computes r + 1 blocks.
Tensor RingAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o, int64_t heads, int64_t kv_heads,
                     std::optional<double> rope_base, const ParallelLayout& layout);

// Whether the model keeps its sequence in zig-zag blocks (ZigZagSequence): ring attention
// with --cp_ring_split=zigzag (at cp = 1 the order of its two chunks is the sequence's).
bool UsesZigZag(CpAttention scheme, const ParallelLayout& layout);

// x with its positions axis `axis` (length s, a multiple of 2 x cp) reordered into the
// zig-zag blocks of ring attention's load-balanced split (oneflow_core/ops/ring_blocks.h):
// the s positions as 2 cp chunks, stored in the order 0, 2cp-1, 1, 2cp-2, ..., so that
// split S(axis) over cp, device r holds chunks r and 2cp-1-r. Slices and a concat of x,
// each hinted `whole` (x's own layout, whole along `axis` over cp: the models reorder
// the integer tokens and targets and gpt's replicated position embedding, so the reorder
// moves nothing and no activation's gradient passes through it), then the result hinted
// `positions` (split by position over cp: a local slice). Everything position-wise after
// it runs unchanged, and the losses' mean over tokens does not depend on their order.
Tensor ZigZagSequence(Tensor x, int64_t axis, int64_t cp, const NdSbp& whole, const NdSbp& positions);

// RingAttention or UlyssesAttention, by `scheme` (ResolveCpAttention's).
Tensor ContextParallelAttention(CpAttention scheme, Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                                int64_t heads, int64_t kv_heads, std::optional<double> rope_base,
                                const ParallelLayout& layout);

// x with layout `sbp` in the forward pass and, when every axis of `sbp` is a split, its
// gradient with the same layout in the backward (an identity op with the attribute
// hint_gradient, oneflow_core/dsl/gradients/elementwise_gradient.cc). The backward has no
// hints otherwise, and the compiler's greedy choice there takes free S -> P boxings that
// leave full-size partial sums (the scores' gradient, the rows' gradient) on every
// device, then reduce-scatters them: memory and bytes the all-to-alls avoid.
Tensor Pinned(Tensor x, const NdSbp& sbp);

// x [b, s, ...] sequence-first, as the models keep it under cp: [s, b, ...] at dp = 1;
// under dp, [dp * s, b / dp, ...]: each data-parallel group's positions stacked (the
// groups' batch rows b / dp each), so that the rows [dp * s * b / dp, n] the linear
// layers multiply are split S(0) over dp and, nested, S(0) over cp: device (d, c) holds
// group d's positions of block c, contiguous ([s, b] flattened with the batch split over
// dp would interleave the two splits). The attention functions take the batch groups back out of the
// positions (a reshape judged on the local shape, OpDefinition::attrs_for_local_shapes).
Tensor SequenceFirst(Tensor x, const ParallelLayout& layout);

// The position-split layout of a sequence-first activation (SequenceFirst): S(0) over
// cp and over dp (the batch groups stacked along the positions), whole over tp. (Llama's sequence parallelism over tp is off under cp: a second split
// of the positions nested in cp's would make the gathers before the column-parallel
// products general rearrangements instead of all-gathers over tp.)
NdSbp SequenceSplit(const ParallelLayout& layout);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_CONTEXT_PARALLEL_H_
