// Reference kernels of ring_shift, ring_causal_mask, ring_attention and its gradient,
// ring_attention_merge and ring_attention_result
// (oneflow_core/ops/ring_attention.cc).
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/ops/ring_blocks.h"

namespace oneflow {
namespace reference {

// Whole along `axis`: the roll. One block of it (split over the ring): what the compiler's
// send/recv delivered is already the block this device holds after the shift, so a copy.
Outputs RingShift(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const int64_t axis = GetIntAttr(args.attrs, "axis", 0);
  const int64_t blocks = GetIntAttr(args.attrs, "blocks", 1);
  const int64_t shift = GetIntAttr(args.attrs, "shift", 1);
  const int64_t logical = args.input_layouts[0].logical.dim(axis);
  const int64_t held = x.shape.dim(axis);
  if (held * blocks == logical && held != logical) return std::vector<Dense>{x};
  if (held != logical) {
    return absl::InvalidArgumentError(absl::StrCat("ring_shift: x holds ", held, " of ", logical,
                                                   " along axis ", axis, ", neither all nor one of ", blocks,
                                                   " blocks"));
  }
  const int64_t block = logical / blocks;
  const int64_t by = ((shift % blocks + blocks) % blocks) * block;
  Dense out = x;
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    std::vector<int64_t> c = Unravel(i, x.shape);
    c[axis] = (c[axis] + by) % logical;
    out.values[Ravel(c, x.shape)] = x.values[i];
  }
  return std::vector<Dense>{out};
}

// Logical block index from the layout's offset on `axis`; positions within the blocks
// from the offsets of the last two axes (whole under every signature, read all the same).
Outputs RingCausalMask(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const int64_t axis = GetIntAttr(args.attrs, "axis", 0);
  const int64_t step = GetIntAttr(args.attrs, "step", 0);
  const double fill = GetFloatAttr(args.attrs, "fill", -1e9);
  const int64_t rank = x.shape.rank();
  const TensorLayout& layout = args.input_layouts[0];
  const int64_t blocks = layout.logical.dim(axis);
  Dense out = x;
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, x.shape);
    const int64_t query_block = c[axis] + layout.slice.range(axis).begin;
    const int64_t key_block = ((query_block - step) % blocks + blocks) % blocks;
    const int64_t row = c[rank - 2] + layout.slice.range(rank - 2).begin;
    const int64_t column = c[rank - 1] + layout.slice.range(rank - 1).begin;
    if (key_block > query_block || (key_block == query_block && column > row)) out.values[i] = fill;
  }
  return std::vector<Dense>{out};
}

namespace {

// One ring step's attention for every query row, dense: each (query, key) entry is
// visible when the key's logical position is at or before the query's (no tiles, no
// skipping: the reference the CPU kernel's skipping is checked against). Calls
// `row_fn(q_row, k_base, v_base, visible, probs, lse)` per row with at least one visible key.
struct RingGeometry {
  int64_t rank, rows, s, hd, blocks, axis, step;
  bool zigzag;
  double scale;
};

RingGeometry GeometryOf(const KernelArgs& args) {
  const Dense& q = args.in(0);
  const Dense& k = args.in(1);
  RingGeometry g;
  g.rank = q.shape.rank();
  g.rows = q.shape.dim(g.rank - 2);
  g.s = k.shape.dim(g.rank - 2);
  g.hd = q.shape.dim(g.rank - 1);
  g.axis = GetIntAttr(args.attrs, "axis", 0);
  g.step = GetIntAttr(args.attrs, "step", 0);
  g.zigzag = GetBoolAttr(args.attrs, "zigzag", false);
  g.scale = GetFloatAttr(args.attrs, "scale", 1.0);
  g.blocks = args.input_layouts[0].logical.dim(g.axis);
  return g;
}

// For each leading index (every axis before the rows) and query row: the visible keys'
// probabilities (softmax over them of scale x q.k) and the log-sum-exp.
template <typename RowFn>
void ForEachRow(const KernelArgs& args, const RingGeometry& g, RowFn row_fn) {
  const Dense& q = args.in(0);
  const Dense& k = args.in(1);
  const int64_t leading = q.shape.NumElements() / (g.rows * g.hd);
  std::vector<int64_t> leading_dims(q.shape.dims().begin(), q.shape.dims().end() - 2);
  const Shape leading_shape(leading_dims);
  const int64_t begin = args.input_layouts[0].slice.range(g.axis).begin;
  for (int64_t l = 0; l < leading; ++l) {
    const int64_t query_block = Unravel(l, leading_shape)[g.axis] + begin;
    const int64_t key_block = RingKeyBlock(query_block, g.step, g.blocks);
    for (int64_t r = 0; r < g.rows; ++r) {
      const int64_t query = RingPosition(query_block, r % g.s, g.s, g.blocks, g.zigzag);
      std::vector<double> scores(g.s, -std::numeric_limits<double>::infinity());
      std::vector<bool> visible(g.s, false);
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < g.s; ++c) {
        if (RingPosition(key_block, c, g.s, g.blocks, g.zigzag) > query) continue;
        visible[c] = true;
        double dot = 0;
        for (int64_t d = 0; d < g.hd; ++d) {
          dot += q.values[(l * g.rows + r) * g.hd + d] * k.values[(l * g.s + c) * g.hd + d];
        }
        scores[c] = g.scale * dot;
        max = std::max(max, scores[c]);
      }
      if (max == -std::numeric_limits<double>::infinity()) continue;
      double sum = 0;
      for (int64_t c = 0; c < g.s; ++c) sum += visible[c] ? std::exp(scores[c] - max) : 0.0;
      std::vector<double> probs(g.s, 0.0);
      for (int64_t c = 0; c < g.s; ++c) probs[c] = visible[c] ? std::exp(scores[c] - max) / sum : 0.0;
      row_fn(l, r, probs, max + std::log(sum));
    }
  }
}

}  // namespace

Outputs RingAttention(const KernelArgs& args) {
  const RingGeometry g = GeometryOf(args);
  const Dense& v = args.in(2);
  Dense out = args.NewOutput(0);
  const int64_t width = g.hd + 1;
  const int64_t leading = args.in(0).shape.NumElements() / (g.rows * g.hd);
  for (int64_t l = 0; l < leading; ++l) {
    for (int64_t r = 0; r < g.rows; ++r) out.values[(l * g.rows + r) * width + g.hd] = kMaskedRowLse;
  }
  ForEachRow(args, g, [&](int64_t l, int64_t r, const std::vector<double>& probs, double lse) {
    double* row = &out.values[(l * g.rows + r) * width];
    for (int64_t c = 0; c < g.s; ++c) {
      for (int64_t d = 0; d < g.hd; ++d) row[d] += probs[c] * v.values[(l * g.s + c) * g.hd + d];
    }
    row[g.hd] = lse;
  });
  return std::vector<Dense>{out};
}

// d score_c = p_c (dout.v_c - dout.out + dlse); dq = scale sum_c dscore_c k_c, dk_c =
// scale dscore_c q, dv_c = p_c dout.
Outputs RingAttentionGrad(const KernelArgs& args) {
  const RingGeometry g = GeometryOf(args);
  const Dense& q = args.in(0);
  const Dense& k = args.in(1);
  const Dense& v = args.in(2);
  const Dense& out = args.in(3);
  const Dense& dout = args.in(4);
  const int64_t wrt = GetIntAttr(args.attrs, "wrt", 0);
  Dense dx = args.NewOutput(0);
  const int64_t width = g.hd + 1;
  ForEachRow(args, g, [&](int64_t l, int64_t r, std::vector<double> probs, double lse) {
    const double* dy = &dout.values[(l * g.rows + r) * width];
    // The probabilities from the log-sum-exp `out` holds (the op's definition).
    for (double& p : probs) p *= std::exp(lse - out.values[(l * g.rows + r) * width + g.hd]);
    double dot_out = 0;
    for (int64_t d = 0; d < g.hd; ++d) dot_out += dy[d] * out.values[(l * g.rows + r) * width + d];
    for (int64_t c = 0; c < g.s; ++c) {
      if (probs[c] == 0) continue;
      double dp = 0;
      for (int64_t d = 0; d < g.hd; ++d) dp += dy[d] * v.values[(l * g.s + c) * g.hd + d];
      const double dscore = probs[c] * (dp - dot_out + dy[g.hd]);
      for (int64_t d = 0; d < g.hd; ++d) {
        if (wrt == 0) dx.values[(l * g.rows + r) * g.hd + d] += g.scale * dscore * k.values[(l * g.s + c) * g.hd + d];
        if (wrt == 1) dx.values[(l * g.s + c) * g.hd + d] += g.scale * dscore * q.values[(l * g.rows + r) * g.hd + d];
        if (wrt == 2) dx.values[(l * g.s + c) * g.hd + d] += probs[c] * dy[d];
      }
    }
  });
  return std::vector<Dense>{dx};
}

// Per row (the last axis: hd outputs, then the log-sum-exp): online softmax's merge of two
// disjoint key sets; a masked side (kMaskedRowLse) weighs exactly 0.
Outputs RingAttentionMerge(const KernelArgs& args) {
  const Dense& a = args.in(0);
  const Dense& b = args.in(1);
  Dense out = args.NewOutput(0);
  const int64_t width = a.shape.dim(a.shape.rank() - 1);
  const int64_t hd = width - 1;
  for (int64_t row = 0; width > 0 && row < a.shape.NumElements() / width; ++row) {
    const double* x = &a.values[row * width];
    const double* y = &b.values[row * width];
    double* o = &out.values[row * width];
    const bool x_masked = x[hd] <= kMaskedRowLse, y_masked = y[hd] <= kMaskedRowLse;
    if (x_masked || y_masked) {
      std::copy(x_masked ? y : x, (x_masked ? y : x) + width, o);
      continue;
    }
    const double max = std::max(x[hd], y[hd]);
    const double wx = std::exp(x[hd] - max), wy = std::exp(y[hd] - max);
    for (int64_t d = 0; d < hd; ++d) o[d] = (wx * x[d] + wy * y[d]) / (wx + wy);
    o[hd] = max + std::log(wx + wy);
  }
  return std::vector<Dense>{out};
}

// `out` itself: the op carries the ring's backward, not a computation.
Outputs RingAttentionResult(const KernelArgs& args) { return std::vector<Dense>{args.in(0)}; }

}  // namespace reference
}  // namespace oneflow
