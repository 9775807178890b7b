#include "examples/common/context_parallel.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow::examples {

namespace {

// A transpose tagged with the attention scheme (kCpAttentionAttr): the op on one side of
// each of Ulysses' all-to-alls, so that `oneflow inspect` and CpAttentionTraffic find
// them in a compiled plan. The kernel reads only perm.
Tensor TaggedTranspose(Tensor x, std::vector<int64_t> perm) {
  if (!x.valid()) return Tensor();
  return x.graph()->AddSingleOutputOp("transpose", {x},
                                      {{"perm", std::move(perm)}, {kCpAttentionAttr, std::string("ulysses")}},
                                      SourceLocation::Current());
}

// t with `sbp` as its hint (nothing for an invalid t).
Tensor Hinted(Tensor t, const NdSbp& sbp) {
  if (t.valid()) t.WithSbp(sbp);
  return t;
}

// `sbp` with its split axis moved by `by` (tp's split of a tensor that gains or loses
// leading axes); B and P unchanged.
Sbp Shifted(const Sbp& sbp, int64_t by) { return sbp.is_split() ? Sbp::Split(sbp.axis() + by) : sbp; }

// The product rows [dp * s * b/dp, n] (SequenceFirst's order: each data-parallel group's
// positions, then its batch rows; S(0) over dp and, nested, S(0) over cp) as [s, b,
// dims...] with the batch over dp (S(1)) and the positions over cp (S(0)); `model` is
// tp's SBP of the result. At dp = 1 one reshape, as before dp composed with cp. Under dp
// the batch groups come out of the positions first, [dp, s, b/dp, dims...] (S(0), S(1)):
// a reshape only the local shapes can judge (OpDefinition::attrs_for_local_shapes), then
// local transposes and a reshape that merges the groups back into the batch.
Tensor RowsToSequence(Tensor rows, int64_t s, int64_t b, const std::vector<int64_t>& dims, const Sbp& model,
                      const ParallelLayout& layout) {
  std::vector<int64_t> shape = {s, b};
  shape.insert(shape.end(), dims.begin(), dims.end());
  if (layout.dp() == 1) return Reshape(rows, shape);
  const int64_t dp = layout.dp();
  std::vector<int64_t> grouped = {dp, s, b / dp};
  grouped.insert(grouped.end(), dims.begin(), dims.end());
  Tensor t = Hinted(Reshape(rows, grouped), layout.Sbp(Sbp::Split(0), Shifted(model, 1), Sbp::Split(1)));
  std::vector<int64_t> perm = {1, 0};
  for (int64_t a = 2; a < static_cast<int64_t>(grouped.size()); ++a) perm.push_back(a);
  t = Hinted(Transpose(t, perm), layout.Sbp(Sbp::Split(1), Shifted(model, 1), Sbp::Split(0)));
  return Hinted(Reshape(t, shape), layout.Sbp(Sbp::Split(1), model, Sbp::Split(0)));
}

// RowsToSequence's inverse: t [s, b, ...] (batch S(1) over dp, positions S(0) over cp,
// `model` over tp) as rows [dp * s * b/dp, n] in SequenceFirst's order.
Tensor SequenceToRows(Tensor t, int64_t n, const Sbp& model, const ParallelLayout& layout) {
  if (!t.valid()) return Tensor();
  const int64_t s = t.shape().dim(0), b = t.shape().dim(1);
  if (layout.dp() == 1) return Reshape(t, {s * b, n});
  const int64_t dp = layout.dp();
  // tp's split lands on the merged columns (axis 3 of [s, dp, b/dp, n]).
  const Sbp columns = model.is_split() ? Sbp::Split(3) : model;
  Tensor grouped =
      Hinted(Reshape(t, {s, dp, b / dp, n}), layout.Sbp(Sbp::Split(1), columns, Sbp::Split(0)));
  grouped = Hinted(Transpose(grouped, {1, 0, 2, 3}), layout.Sbp(Sbp::Split(0), columns, Sbp::Split(1)));
  return Reshape(grouped, {s * b, n});
}

}  // namespace

Tensor SequenceFirst(Tensor x, const ParallelLayout& layout) {
  if (!x.valid()) return Tensor();
  const std::vector<int64_t> dims = x.shape().dims();
  const int64_t b = dims[0], s = dims[1];
  const std::vector<int64_t> rest(dims.begin() + 2, dims.end());
  if (layout.dp() == 1) {
    std::vector<int64_t> perm = {1, 0};
    for (int64_t a = 2; a < static_cast<int64_t>(dims.size()); ++a) perm.push_back(a);
    return Transpose(x, perm);
  }
  const int64_t dp = layout.dp();
  std::vector<int64_t> grouped = {dp, b / dp, s};
  grouped.insert(grouped.end(), rest.begin(), rest.end());
  std::vector<int64_t> perm = {0, 2, 1};
  for (int64_t a = 3; a < static_cast<int64_t>(grouped.size()); ++a) perm.push_back(a);
  Tensor t = Transpose(Reshape(x, grouped), perm);  // [dp, s, b/dp, ...]
  std::vector<int64_t> stacked = {dp * s, b / dp};
  stacked.insert(stacked.end(), rest.begin(), rest.end());
  return Reshape(t, stacked);
}

Tensor Pinned(Tensor x, const NdSbp& sbp) {
  if (!x.valid()) return Tensor();
  Tensor out = x.graph()->AddSingleOutputOp("identity", {x}, {{"hint_gradient", true}}, SourceLocation::Current());
  if (out.valid()) out.WithSbp(sbp);
  return out;
}

NdSbp SequenceSplit(const ParallelLayout& layout) {
  return layout.Sbp(Sbp::Split(0), Sbp::Broadcast(), Sbp::Split(0));
}

CpAttentionCost EstimateCpAttention(const AttentionShape& shape, const ParallelLayout& layout) {
  CpAttentionCost cost;
  const double cp = static_cast<double>(layout.cp());
  const double tp = static_cast<double>(layout.tp());
  // One data-parallel group's tokens: every group runs the same attention on its rows.
  const double tokens =
      static_cast<double>(shape.batch) * static_cast<double>(shape.seq) / static_cast<double>(layout.dp());
  const double head_dim = static_cast<double>(shape.hidden) / static_cast<double>(shape.heads);
  const double h = static_cast<double>(shape.heads) * head_dim / tp;
  const double h_kv = static_cast<double>(shape.kv_heads) * head_dim / tp;
  constexpr double kBytes = 4;  // f32 activations.
  cost.ulysses_bytes = (cp - 1) / cp * (tokens / cp) * (2 * h + 2 * h_kv) * kBytes;
  cost.ring_bytes = (cp - 1) * (tokens / cp) * 2 * h_kv * kBytes;
  const bool heads_divide = shape.kv_heads % (layout.tp() * layout.cp()) == 0;
  if (!heads_divide) {
    cost.choice = CpAttention::kRing;
    cost.reason = absl::StrCat("--", shape.kv_heads_flag, "=", shape.kv_heads, " is not divisible by --tp=",
                               layout.tp(), " x --cp=", layout.cp(), ", which Ulysses' head split needs");
    return cost;
  }
  // Both move their bytes once per layer over the same links; the smaller volume wins.
  // (Ring's transfers can hide behind the blockwise compute, which would favour it on
  // slow links; the estimate stays a byte count.)
  cost.choice = cost.ulysses_bytes <= cost.ring_bytes ? CpAttention::kUlysses : CpAttention::kRing;
  cost.reason = absl::StrFormat("Ulysses moves %.0f B per device per layer, ring %.0f B", cost.ulysses_bytes,
                                cost.ring_bytes);
  return cost;
}

absl::StatusOr<CpAttention> ResolveCpAttention(const AttentionShape& shape, const ParallelLayout& layout) {
  // One device: the plain attention core (reported as Ulysses, which at cp = 1 is that
  // core), unless ring is asked for: then one ring step over the whole sequence, the
  // blockwise kernel whose scratch is linear in the sequence (no [s, s] scores kept).
  if (layout.cp() == 1 && layout.cp_attention() != CpAttention::kRing) return CpAttention::kUlysses;
  if (shape.seq % layout.cp() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--seq=", shape.seq, " is not divisible by --cp=", layout.cp(),
                                                   ": every context-parallel device needs as many positions; use a "
                                                   "--seq that is a multiple of ",
                                                   layout.cp()));
  }
  if (shape.batch % layout.dp() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch gives ", shape.batch, " rows per micro-batch, not divisible by --dp=", layout.dp(),
        ": with --cp every data-parallel group holds whole sequences of an equal share of the batch; use a --batch "
        "that is a multiple of --dp x --micro_batches"));
  }
  const CpAttentionCost cost = EstimateCpAttention(shape, layout);
  CpAttention choice = layout.cp_attention();
  // auto: the cost model's choice (ring where the heads do not divide, else the fewer bytes).
  if (choice == CpAttention::kAuto) choice = cost.choice;
  if (choice == CpAttention::kUlysses && shape.kv_heads % (layout.tp() * layout.cp()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cp_attention=ulysses splits the ", shape.kv_heads_flag == std::string("heads") ? "" : "kv ",
        "heads over --tp=", layout.tp(), " x --cp=", layout.cp(), ", but --", shape.kv_heads_flag, "=",
        shape.kv_heads, " is not divisible by ", layout.tp() * layout.cp(), "; use a --cp that divides --",
        shape.kv_heads_flag, " / --tp"));
  }
  if (UsesZigZag(choice, layout) && shape.seq % (2 * layout.cp()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cp_ring_split=zigzag gives every context-parallel device two chunks of the sequence, but --seq=",
        shape.seq, " is not divisible by 2 x --cp=", 2 * layout.cp(), "; use a --seq that is a multiple of ",
        2 * layout.cp(), ", or --cp_ring_split=contiguous"));
  }
  if (choice == CpAttention::kRing && shape.kv_heads % layout.tp() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--cp_attention=ring keeps whole kv heads on each --tp device, but --",
                                                   shape.kv_heads_flag, "=", shape.kv_heads,
                                                   " is not divisible by --tp=", layout.tp()));
  }
  return choice;
}

Tensor UlyssesAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o, int64_t heads, int64_t kv_heads,
                        std::optional<double> rope_base, const ParallelLayout& layout) {
  for (const Tensor& t : {x, w_q, w_k, w_v, w_o}) {
    if (!t.valid()) return Tensor();
  }
  // x is [dp * s, b / dp, h] (SequenceFirst); s and b are one group's positions and the batch.
  const int64_t s = x.shape().dim(0) / layout.dp(), b = x.shape().dim(1) * layout.dp(), h = x.shape().dim(2);
  const int64_t hd = h / heads, group = heads / kv_heads;
  const Sbp B = Sbp::Broadcast();
  const Sbp S0 = Sbp::Split(0);
  auto hinted = Hinted;
  // Rows [s * b, n]: positions over cp (and, outside them, batch groups over dp); the
  // products column-parallel over tp.
  const NdSbp rows_sbp = layout.Sbp(S0, B, S0);
  const NdSbp column_sbp = layout.Sbp(S0, Sbp::Split(1), S0);
  // The head layouts [b, kv_heads, ...]: the batch over dp, kv heads over tp, then each
  // tp device's over cp.
  const NdSbp heads_sbp = layout.Sbp(S0, Sbp::Split(1), Sbp::Split(1));
  Tensor rows = hinted(Reshape(x, {s * b, h}), rows_sbp);
  auto product = [&](Tensor w) { return Pinned(hinted(MatMul(rows, w), column_sbp), column_sbp); };
  // q: [s*b, heads*hd] -> [s, b, kv, group, hd] -> [b, kv, group, s, hd]; the hint on the
  // transposed q is Ulysses' first all-to-all (positions over cp -> kv heads over cp).
  Tensor q = hinted(
      TaggedTranspose(RowsToSequence(product(w_q), s, b, {kv_heads, group, hd}, Sbp::Split(2), layout), {1, 2, 3, 0, 4}),
      heads_sbp);
  if (rope_base) q = hinted(RotaryEmbedding(q, *rope_base), heads_sbp);
  auto kv = [&](Tensor w) {
    return hinted(TaggedTranspose(RowsToSequence(product(w), s, b, {kv_heads, hd}, Sbp::Split(2), layout), {1, 2, 0, 3}),
                  heads_sbp);
  };
  Tensor k = kv(w_k);
  if (rope_base) k = hinted(RotaryEmbedding(k, *rope_base), heads_sbp);
  Tensor v = kv(w_v);
  // The local attention on whole heads, blockwise: ring attention over cp blocks of the
  // device's own sequence (BlockwiseRingAttention with the block axis whole, so its
  // shifts are local rolls, no communication), each step's tiles at most
  // kRingRowsPerTile query rows against one block's keys in the planned workspace. It
  // keeps q, k, v and the merged output with its log-sum-exp for the backward, which
  // recomputes the probabilities: O(N / cp) per device, where GroupedQueryAttention's
  // core keeps the heads' [s, s] probabilities and one step over the whole sequence a
  // workspace of 64 rows x N keys.
  const int64_t blocks = layout.cp(), sb = s / blocks;
  Tensor q_blocks = hinted(Reshape(q, {b, kv_heads, group, blocks, sb, hd}), heads_sbp);
  q_blocks = hinted(Transpose(q_blocks, {0, 1, 3, 2, 4, 5}), heads_sbp);  // [b, kv, blocks, group, sb, hd]
  q_blocks = hinted(Reshape(q_blocks, {b, kv_heads, blocks, group * sb, hd}), heads_sbp);
  BlockwiseRingOptions local;
  local.axis = 2;
  local.scale = 1.0 / std::sqrt(static_cast<double>(hd));
  local.block_sbp = heads_sbp;  // Heads over tp and cp; the blocks whole.
  Tensor result = BlockwiseRingAttention(q_blocks, hinted(Reshape(k, {b, kv_heads, blocks, sb, hd}), heads_sbp),
                                         hinted(Reshape(v, {b, kv_heads, blocks, sb, hd}), heads_sbp), local);
  Tensor context = hinted(Reshape(Slice(result, std::vector<int64_t>(5, 0), {b, kv_heads, blocks, group * sb, hd}),
                                  {b, kv_heads, blocks, group, sb, hd}),
                          heads_sbp);
  context = hinted(Transpose(context, {0, 1, 3, 2, 4, 5}), heads_sbp);  // [b, kv, group, blocks, sb, hd]
  context = hinted(Reshape(context, {b, kv_heads, group * s, hd}), heads_sbp);
  // Back to positions: [b, kv, group, s, hd] -> [s, b, kv, group, hd], positions over cp
  // (Ulysses' second all-to-all), kv heads still over tp.
  Tensor positions = hinted(TaggedTranspose(Pinned(Reshape(context, {b, kv_heads, group, s, hd}), heads_sbp), {3, 0, 1, 2, 4}),
                            layout.Sbp(Sbp::Split(1), Sbp::Split(2), S0));
  Tensor merged = hinted(SequenceToRows(positions, heads * hd, Sbp::Split(2), layout), column_sbp);
  Tensor out = hinted(MatMul(merged, w_o), layout.Sbp(S0, Sbp::Partial(), S0));
  return Reshape(out, x.shape().dims());
}

Tensor RingAttention(Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o, int64_t heads, int64_t kv_heads,
                     std::optional<double> rope_base, const ParallelLayout& layout) {
  for (const Tensor& t : {x, w_q, w_k, w_v, w_o}) {
    if (!t.valid()) return Tensor();
  }
  // x is [dp * s, b / dp, h] (SequenceFirst); s and b are one group's positions and the batch.
  const int64_t s = x.shape().dim(0) / layout.dp(), b = x.shape().dim(1) * layout.dp(), h = x.shape().dim(2);
  const int64_t hd = h / heads, group = heads / kv_heads;
  const int64_t cp = layout.cp(), sq = s / cp;
  const bool zigzag = layout.cp_ring_zigzag();
  // Rotary angles of the logical positions (in zig-zag order, those of the chunks held).
  auto rotate = [&](Tensor t) { return ZigZagRotaryEmbedding(t, *rope_base, zigzag ? cp : 0); };
  const Sbp B = Sbp::Broadcast();
  const Sbp S0 = Sbp::Split(0);
  auto hinted = Hinted;
  const NdSbp rows_sbp = layout.Sbp(S0, B, S0);
  const NdSbp column_sbp = layout.Sbp(S0, Sbp::Split(1), S0);
  // Whole sequences [b, kv, (group,) s, hd] and blocks [b, kv, cp, ...]: the batch over
  // dp, kv heads over tp, positions (blocks) over cp; the transposes between them and the
  // rows are local.
  const NdSbp query_positions = layout.Sbp(S0, Sbp::Split(1), Sbp::Split(3));
  const NdSbp positions = layout.Sbp(S0, Sbp::Split(1), Sbp::Split(2));
  const NdSbp blocks = layout.Sbp(S0, Sbp::Split(1), Sbp::Split(2));
  Tensor rows = hinted(Reshape(x, {s * b, h}), rows_sbp);
  auto product = [&](Tensor w) { return Pinned(hinted(MatMul(rows, w), column_sbp), column_sbp); };
  // q: [s*b, heads*hd] -> [b, kv, group, s, hd] (rotary angles of logical positions) ->
  // blocks [b, kv, cp, group * sq, hd]; this device's queries stay here for every step.
  Tensor q = hinted(
      Transpose(RowsToSequence(product(w_q), s, b, {kv_heads, group, hd}, Sbp::Split(2), layout), {1, 2, 3, 0, 4}),
      query_positions);
  if (rope_base) q = hinted(rotate(q), query_positions);
  q = hinted(Reshape(q, {b, kv_heads, group, cp, sq, hd}), layout.Sbp(S0, Sbp::Split(1), Sbp::Split(3)));
  q = Pinned(hinted(Reshape(hinted(Transpose(q, {0, 1, 3, 2, 4, 5}), blocks), {b, kv_heads, cp, group * sq, hd}),
                    blocks),
             blocks);
  auto kv = [&](Tensor w, bool rotary) {
    Tensor t = hinted(Transpose(RowsToSequence(product(w), s, b, {kv_heads, hd}, Sbp::Split(2), layout), {1, 2, 0, 3}),
                      positions);
    if (rotary && rope_base) t = hinted(rotate(t), positions);
    return Pinned(hinted(Reshape(t, {b, kv_heads, cp, sq, hd}), blocks), blocks);
  };
  Tensor k = kv(w_k, true);
  Tensor v = kv(w_v, false);
  // Step t: block r of k and v is block r - t of the sequence; one fused op per step
  // scores the local queries against it, skipping the keys that lie after them (a whole
  // block pair on the devices the step gives a later block), and is merged into the
  // running output and log-sum-exp (online softmax); the shifts carry the tag "ring"
  // (cp_traffic.h counts their send/recvs as the layer's traffic). The backward passes
  // k, v and their gradients around the ring again (BlockwiseRingAttention): no step's
  // K/V block or result is kept between the passes.
  BlockwiseRingOptions ring;
  ring.axis = 2;
  ring.scale = 1.0 / std::sqrt(static_cast<double>(hd));
  ring.zigzag = zigzag;
  ring.block_sbp = blocks;
  ring.shift_attrs[kCpAttentionAttr] = std::string("ring");
  // Not an attention core (what --recompute=selective re-runs): the backward keeps only
  // q, k, v and the result, nothing of the steps to recompute; re-running the result
  // would re-run the ring's shifts.
  Tensor result = BlockwiseRingAttention(q, k, v, ring);  // [b, kv, cp, group * sq, hd + 1]
  Tensor context = Reshape(Slice(result, std::vector<int64_t>(5, 0), {b, kv_heads, cp, group * sq, hd}),
                           {b, kv_heads, cp, group, sq, hd});
  context = Pinned(hinted(context, blocks), blocks);  // [b, kv, cp, group, sq, hd]
  // Back to rows [s * b, heads * hd], positions over cp (local), kv heads over tp.
  Tensor back = hinted(Transpose(context, {2, 4, 0, 1, 3, 5}), layout.Sbp(Sbp::Split(2), Sbp::Split(3), S0));
  if (layout.dp() > 1) {
    // [cp, sq, b, kv, group, hd] -> [s, b, ...], then rows in SequenceFirst's order.
    back = hinted(Reshape(back, {s, b, kv_heads, group, hd}), layout.Sbp(Sbp::Split(1), Sbp::Split(2), S0));
  }
  Tensor merged = hinted(layout.dp() > 1 ? SequenceToRows(back, heads * hd, Sbp::Split(2), layout)
                                         : Reshape(back, {s * b, heads * hd}),
                         column_sbp);
  Tensor out = hinted(MatMul(merged, w_o), layout.Sbp(S0, Sbp::Partial(), S0));
  return Reshape(out, x.shape().dims());
}

bool UsesZigZag(CpAttention scheme, const ParallelLayout& layout) {
  return scheme == CpAttention::kRing && layout.cp_ring_zigzag();
}

Tensor ZigZagSequence(Tensor x, int64_t axis, int64_t cp, const NdSbp& whole, const NdSbp& positions) {
  if (!x.valid()) return Tensor();
  const int64_t chunk = x.shape().dim(axis) / (2 * cp);
  std::vector<Tensor> chunks;
  for (int64_t r = 0; r < cp; ++r) {
    for (int64_t index : {r, 2 * cp - 1 - r}) {
      std::vector<int64_t> begin(x.shape().rank(), 0), end = x.shape().dims();
      begin[axis] = index * chunk;
      end[axis] = (index + 1) * chunk;
      chunks.push_back(Hinted(Slice(x, begin, end), whole));
    }
  }
  // Concat splits only along other axes; behind an identity a position-split hint on the
  // result is the compiler's B -> S boxing of the whole concat (a local slice). Without
  // the hints the greedy choice splits the slices by some axis (free from a whole x) and
  // then needs all-to-alls to put the positions over cp.
  // (Concat of a list is a chain of pairwise concats: each link hinted.)
  Tensor reordered = chunks[0];
  for (size_t i = 1; i < chunks.size(); ++i) reordered = Hinted(Concat({reordered, chunks[i]}, axis), whole);
  return Hinted(x.graph()->AddSingleOutputOp("identity", {reordered}, {}, SourceLocation::Current()), positions);
}

Tensor ContextParallelAttention(CpAttention scheme, Tensor x, Tensor w_q, Tensor w_k, Tensor w_v, Tensor w_o,
                                int64_t heads, int64_t kv_heads, std::optional<double> rope_base,
                                const ParallelLayout& layout) {
  return scheme == CpAttention::kRing ? RingAttention(x, w_q, w_k, w_v, w_o, heads, kv_heads, rope_base, layout)
                                      : UlyssesAttention(x, w_q, w_k, w_v, w_o, heads, kv_heads, rope_base, layout);
}

}  // namespace oneflow::examples
