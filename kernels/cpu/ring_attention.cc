// CPU kernels of ring attention's ops (oneflow_core/ops/ring_attention.cc): ring_shift
// copies the block the compiler's send/recv delivered, or rolls a tensor whole along the
// axis; ring_causal_mask masks each block pair of one ring step by logical positions;
// ring_attention and its gradient compute one ring step's blockwise attention, only the
// keys each query row sees (the rest of the block pair is skipped, not masked).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/ops/ring_blocks.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace cpu {

absl::Status RingShift(const KernelContext& context) {
  constexpr char kKernel[] = "ring_shift";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, x.shape, "x's shape"));
  const AttrMap& attrs = AttrsOf(context);
  const int64_t axis = GetIntAttr(attrs, "axis", 0);
  const int64_t blocks = GetIntAttr(attrs, "blocks", 1);
  const int64_t shift = GetIntAttr(attrs, "shift", 1);
  if (axis < 0 || axis >= x.shape.rank() || blocks < 1) {
    return KernelError(kKernel, "axis=", axis, " and blocks=", blocks, " do not fit x ", x.shape.ToString());
  }
  const int64_t logical = x.layout.logical.rank() == x.shape.rank() ? x.layout.logical.dim(axis) : x.shape.dim(axis);
  const int64_t held = x.shape.dim(axis);
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  if (held * blocks == logical && held != logical) {
    std::memcpy(out, in, static_cast<size_t>(x.NumElements()) * sizeof(float));
    return absl::OkStatus();
  }
  if (held != logical || logical % blocks != 0) {
    return KernelError(kKernel, "x holds ", held, " of ", logical, " along axis ", axis, ", neither all nor one of ",
                       blocks, " blocks");
  }
  // Whole along the axis: rows of `inner` contiguous values, `logical` of them per outer
  // index, moved by whole blocks.
  int64_t inner = 1;
  for (int64_t a = axis + 1; a < x.shape.rank(); ++a) inner *= x.shape.dim(a);
  const int64_t outer = logical == 0 || inner == 0 ? 0 : x.NumElements() / (logical * inner);
  const int64_t by = ((shift % blocks + blocks) % blocks) * (logical / blocks);
  for (int64_t o = 0; o < outer; ++o) {
    const float* from = in + o * logical * inner;
    float* to = out + o * logical * inner;
    // Rows [0, logical - by) go to [by, logical), the rest wrap to the front.
    std::memcpy(to + by * inner, from, static_cast<size_t>((logical - by) * inner) * sizeof(float));
    std::memcpy(to, from + (logical - by) * inner, static_cast<size_t>(by * inner) * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status RingCausalMask(const KernelContext& context) {
  constexpr char kKernel[] = "ring_causal_mask";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  const int64_t rank = x.shape.rank();
  const AttrMap& attrs = AttrsOf(context);
  const int64_t axis = GetIntAttr(attrs, "axis", 0);
  if (rank < 3 || axis < 0 || axis >= rank - 2) {
    return KernelError(kKernel, "axis=", axis, " must name an axis before the last two of x ", x.shape.ToString());
  }
  OF_RETURN_IF_ERROR(CheckLayout(kKernel, "x", x));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, x.shape, "x's shape"));
  const int64_t step = GetIntAttr(attrs, "step", 0);
  const float fill = static_cast<float>(GetFloatAttr(attrs, "fill", -1e9));
  const int64_t blocks = x.layout.logical.dim(axis);
  const int64_t row_offset = x.layout.slice.range(rank - 2).begin;
  const int64_t column_offset = x.layout.slice.range(rank - 1).begin;
  const int64_t rows = x.shape.dim(rank - 2), columns = x.shape.dim(rank - 1);
  // Matrices [rows, columns] indexed (outer, block, inner) around the block axis.
  int64_t inner = 1;
  for (int64_t a = axis + 1; a < rank - 2; ++a) inner *= x.shape.dim(a);
  const int64_t local_blocks = x.shape.dim(axis);
  const int64_t matrix = rows * columns;
  const int64_t outer = matrix * local_blocks * inner == 0 ? 0 : x.NumElements() / (matrix * local_blocks * inner);
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t b = 0; b < local_blocks; ++b) {
      const int64_t query_block = b + x.layout.slice.range(axis).begin;
      const int64_t key_block = ((query_block - step) % blocks + blocks) % blocks;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = ((o * local_blocks + b) * inner + i) * matrix;
        for (int64_t r = 0; r < rows; ++r) {
          // Columns kept: all when the key block lies before, none after, the causal
          // triangle on the diagonal block.
          const int64_t kept = key_block < query_block   ? columns
                               : key_block > query_block ? 0
                                                         : std::clamp<int64_t>(r + row_offset - column_offset + 1, 0, columns);
          const float* from = in + at + r * columns;
          float* to = out + at + r * columns;
          std::copy(from, from + kept, to);
          std::fill(to + kept, to + columns, fill);
        }
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// One ring step's shapes: q [leading..., rows, hd], k and v [leading..., s, hd], rows =
// group x s; the block index on `axis` among the leading axes.
struct RingStep {
  int64_t rows = 0, s = 0, hd = 0, leading = 0;
  int64_t axis = 0, step = 0, blocks = 1, block_begin = 0;
  int64_t after_axis = 1;  // Leading elements per index on `axis` (the axes between it and the rows).
  int64_t axis_size = 1;   // Local blocks.
  bool zigzag = false;
  float scale = 1;

  int64_t QueryBlock(int64_t l) const { return (l / after_axis) % axis_size + block_begin; }
};

absl::StatusOr<RingStep> RingStepOf(const char* kernel, const KernelContext& context) {
  const KernelArgument& q = context.inputs[0];
  const KernelArgument& k = context.inputs[1];
  OF_RETURN_IF_ERROR(CheckLayout(kernel, "q", q));
  const AttrMap& attrs = AttrsOf(context);
  RingStep g;
  const int64_t rank = q.shape.rank();
  g.axis = GetIntAttr(attrs, "axis", 0);
  if (rank < 3 || k.shape.rank() != rank || g.axis < 0 || g.axis >= rank - 2) {
    return KernelError(kernel, "axis=", g.axis, " must name an axis before the rows of q ", q.shape.ToString(),
                       " and k ", k.shape.ToString());
  }
  g.rows = q.shape.dim(rank - 2);
  g.s = k.shape.dim(rank - 2);
  g.hd = q.shape.dim(rank - 1);
  g.step = GetIntAttr(attrs, "step", 0);
  g.zigzag = GetBoolAttr(attrs, "zigzag", false);
  g.scale = static_cast<float>(GetFloatAttr(attrs, "scale", 1.0));
  g.blocks = q.layout.logical.dim(g.axis);
  g.block_begin = q.layout.slice.range(g.axis).begin;
  g.axis_size = q.shape.dim(g.axis);
  for (int64_t a = g.axis + 1; a < rank - 2; ++a) g.after_axis *= q.shape.dim(a);
  g.leading = g.rows * g.hd == 0 ? 0 : q.NumElements() / (g.rows * g.hd);
  if (g.s == 0 || g.rows % g.s != 0 || (g.zigzag && g.s % 2 != 0) ||
      k.NumElements() != g.leading * g.s * g.hd) {
    return KernelError(kernel, "q ", q.shape.ToString(), " and k ", k.shape.ToString(),
                       " are not [..., group x s, hd] and [..., s, hd]");
  }
  return g;
}

// The keys query row `row` of leading index `l` sees: per key chunk, the first `count`
// keys from `first` (positions at or before the query's). At most two ranges (zig-zag).
struct VisibleKeys {
  int64_t first[2] = {0, 0};
  int64_t count[2] = {0, 0};
  int ranges = 0;
};

VisibleKeys VisibleKeysOf(const RingStep& g, int64_t l, int64_t row) {
  const int64_t query_block = g.QueryBlock(l);
  const int64_t key_block = RingKeyBlock(query_block, g.step, g.blocks);
  const int64_t query = RingPosition(query_block, row % g.s, g.s, g.blocks, g.zigzag);
  const int64_t chunk_length = g.s / RingChunks(g.zigzag);
  VisibleKeys keys;
  for (int64_t chunk = 0; chunk < RingChunks(g.zigzag); ++chunk) {
    const int64_t first = RingChunkIndex(key_block, chunk, g.blocks, g.zigzag) * chunk_length;
    const int64_t count = std::clamp<int64_t>(query - first + 1, 0, chunk_length);
    if (count == 0) continue;
    keys.first[keys.ranges] = chunk * chunk_length;
    keys.count[keys.ranges] = count;
    ++keys.ranges;
  }
  return keys;
}

float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Scores (scale x q.k) of the visible keys into `scores` (indexed by key), their max.
float VisibleScores(const RingStep& g, const VisibleKeys& keys, const float* q_row, const float* k,
                    std::vector<float>* scores) {
  float max = -INFINITY;
  for (int r = 0; r < keys.ranges; ++r) {
    for (int64_t c = keys.first[r]; c < keys.first[r] + keys.count[r]; ++c) {
      (*scores)[c] = g.scale * Dot(q_row, k + c * g.hd, g.hd);
      max = std::max(max, (*scores)[c]);
    }
  }
  return max;
}

}  // namespace

absl::Status RingAttention(const KernelContext& context) {
  constexpr char kKernel[] = "ring_attention";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"q"}, {"k"}, {"v"}}, {{"out"}}));
  OF_ASSIGN_OR_RETURN(const RingStep g, RingStepOf(kKernel, context));
  const float* q = context.inputs[0].As<const float>();
  const float* k = context.inputs[1].As<const float>();
  const float* v = context.inputs[2].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t width = g.hd + 1;
  std::vector<float> scores(g.s);
  for (int64_t l = 0; l < g.leading; ++l) {
    const float* k_block = k + l * g.s * g.hd;
    const float* v_block = v + l * g.s * g.hd;
    for (int64_t row = 0; row < g.rows; ++row) {
      float* o = out + (l * g.rows + row) * width;
      std::fill(o, o + g.hd, 0.0f);
      const VisibleKeys keys = VisibleKeysOf(g, l, row);
      if (keys.ranges == 0) {
        o[g.hd] = kMaskedRowLse;
        continue;
      }
      const float max = VisibleScores(g, keys, q + (l * g.rows + row) * g.hd, k_block, &scores);
      float sum = 0;
      for (int r = 0; r < keys.ranges; ++r) {
        for (int64_t c = keys.first[r]; c < keys.first[r] + keys.count[r]; ++c) {
          const float p = std::exp(scores[c] - max);
          sum += p;
          const float* v_row = v_block + c * g.hd;
          for (int64_t d = 0; d < g.hd; ++d) o[d] += p * v_row[d];
        }
      }
      for (int64_t d = 0; d < g.hd; ++d) o[d] /= sum;
      o[g.hd] = max + std::log(sum);
    }
  }
  return absl::OkStatus();
}

// Flash attention's backward per row: p_c = exp(score_c - lse), dscore_c = p_c (dout.v_c
// - dout.out + dlse); dq = scale sum_c dscore_c k_c, dk_c += scale dscore_c q, dv_c +=
// p_c dout. Only the requested input's gradient is accumulated.
absl::Status RingAttentionGrad(const KernelContext& context) {
  constexpr char kKernel[] = "ring_attention_grad";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"q"}, {"k"}, {"v"}, {"out"}, {"dout"}}, {{"dx"}}));
  OF_ASSIGN_OR_RETURN(const RingStep g, RingStepOf(kKernel, context));
  const int64_t wrt = GetIntAttr(AttrsOf(context), "wrt", 0);
  if (wrt < 0 || wrt > 2) return KernelError(kKernel, "wrt=", wrt, " must be 0, 1 or 2");
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", context.outputs[0].shape, context.inputs[wrt].shape));
  const float* q = context.inputs[0].As<const float>();
  const float* k = context.inputs[1].As<const float>();
  const float* v = context.inputs[2].As<const float>();
  const float* out = context.inputs[3].As<const float>();
  const float* dout = context.inputs[4].As<const float>();
  float* dx = context.outputs[0].As<float>();
  std::fill(dx, dx + context.outputs[0].NumElements(), 0.0f);
  const int64_t width = g.hd + 1;
  std::vector<float> scores(g.s);
  for (int64_t l = 0; l < g.leading; ++l) {
    const float* k_block = k + l * g.s * g.hd;
    const float* v_block = v + l * g.s * g.hd;
    for (int64_t row = 0; row < g.rows; ++row) {
      const VisibleKeys keys = VisibleKeysOf(g, l, row);
      if (keys.ranges == 0) continue;
      const float* q_row = q + (l * g.rows + row) * g.hd;
      const float* dy = dout + (l * g.rows + row) * width;
      const float lse = out[(l * g.rows + row) * width + g.hd];
      const float dot_out = Dot(dy, out + (l * g.rows + row) * width, g.hd);
      VisibleScores(g, keys, q_row, k_block, &scores);
      for (int r = 0; r < keys.ranges; ++r) {
        for (int64_t c = keys.first[r]; c < keys.first[r] + keys.count[r]; ++c) {
          const float p = std::exp(scores[c] - lse);
          if (wrt == 2) {
            float* dv = dx + (l * g.s + c) * g.hd;
            for (int64_t d = 0; d < g.hd; ++d) dv[d] += p * dy[d];
            continue;
          }
          const float dscore = g.scale * p * (Dot(dy, v_block + c * g.hd, g.hd) - dot_out + dy[g.hd]);
          if (wrt == 0) {
            float* dq = dx + (l * g.rows + row) * g.hd;
            const float* k_row = k_block + c * g.hd;
            for (int64_t d = 0; d < g.hd; ++d) dq[d] += dscore * k_row[d];
          } else {
            float* dk = dx + (l * g.s + c) * g.hd;
            for (int64_t d = 0; d < g.hd; ++d) dk[d] += dscore * q_row[d];
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
