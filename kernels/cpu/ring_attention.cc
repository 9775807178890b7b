// CPU kernels of ring attention's ops (oneflow_core/ops/ring_attention.cc): ring_shift
// copies the block the compiler's send/recv delivered, or rolls a tensor whole along the
// axis; ring_causal_mask masks each block pair of one ring step by logical positions;
// ring_attention and its gradient compute one ring step's blockwise attention, only the
// key chunks each query chunk sees (the rest of the block pair is skipped, not masked),
// tile by tile on the tree's GEMM (sgemm.h): scores q k^T, the output P V and the
// gradients' products, as the attention core's matmuls run. ring_attention_merge merges
// two steps' results row by row (online softmax); ring_attention_result copies its input
// (it exists for the ring's backward, oneflow_core/ops/ring_attention.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
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

// The rows of q that share a query chunk, and the key chunks of the step's K/V block they
// see: a tile of ring attention. Contiguous blocks have one chunk, so all the rows of a
// leading index (every group's) form one tile; zig-zag blocks two, so each group's rows
// split into two tiles of a chunk each. A key chunk wholly after the query chunk is
// skipped; the one with the query chunk's own positions is the causal triangle
// (`diagonal`); an earlier one is seen whole. Each such tile is cut into tiles of at most
// kRingRowsPerTile rows (rows are independent: each row's softmax is over its own keys),
// which bounds the scratch (RingAttentionWorkspaceFloats).
struct Tile {
  int64_t first_row = 0;  // Into q's rows of the leading index; a multiple of the chunk length.
  int64_t rows = 0;
  int64_t key_chunk[2] = {0, 0};
  bool diagonal[2] = {false, false};
  int chunks = 0;
};

int64_t ChunkLength(const RingStep& g) { return g.s / RingChunks(g.zigzag); }

std::vector<Tile> TilesOf(const RingStep& g, int64_t l) {
  const int64_t query_block = g.QueryBlock(l);
  const int64_t key_block = RingKeyBlock(query_block, g.step, g.blocks);
  const int64_t chunk_length = ChunkLength(g);
  std::vector<Tile> tiles;
  const int64_t groups = g.rows / g.s;
  for (int64_t group = 0; group < (g.zigzag ? groups : 1); ++group) {
    for (int64_t query_chunk = 0; query_chunk < RingChunks(g.zigzag); ++query_chunk) {
      Tile tile;
      tile.first_row = g.zigzag ? group * g.s + query_chunk * chunk_length : 0;
      tile.rows = g.zigzag ? chunk_length : g.rows;
      const int64_t query_index = RingChunkIndex(query_block, query_chunk, g.blocks, g.zigzag);
      for (int64_t key_chunk = 0; key_chunk < RingChunks(g.zigzag); ++key_chunk) {
        const int64_t key_index = RingChunkIndex(key_block, key_chunk, g.blocks, g.zigzag);
        if (key_index > query_index) continue;
        tile.key_chunk[tile.chunks] = key_chunk;
        tile.diagonal[tile.chunks] = key_index == query_index;
        ++tile.chunks;
      }
      const int64_t first_row = tile.first_row, rows = tile.rows;
      for (int64_t row = 0; row < rows; row += kRingRowsPerTile) {
        tile.first_row = first_row + row;
        tile.rows = std::min(kRingRowsPerTile, rows - row);
        tiles.push_back(tile);
      }
    }
  }
  return tiles;
}

// The tile's scores, scale x q.k, as [tile.rows, tile.chunks x chunk length] (row stride
// `width`), one GEMM per key chunk seen; in a diagonal chunk the keys after the query
// (in-chunk index above the row's) are -inf, so their exp is exactly 0.
void TileScores(const RingStep& g, const Tile& tile, const float* q_rows, const float* k_block, float* scores) {
  const int64_t chunk_length = ChunkLength(g);
  const int64_t width = tile.chunks * chunk_length;
  for (int c = 0; c < tile.chunks; ++c) {
    Sgemm(false, true, tile.rows, chunk_length, g.hd, q_rows, g.hd, k_block + tile.key_chunk[c] * chunk_length * g.hd,
          g.hd, scores + c * chunk_length, width);
  }
  for (int64_t i = 0; i < tile.rows; ++i) {
    float* row = scores + i * width;
    for (int64_t j = 0; j < width; ++j) row[j] *= g.scale;
    const int64_t position = (tile.first_row + i) % chunk_length;
    for (int c = 0; c < tile.chunks; ++c) {
      if (!tile.diagonal[c]) continue;
      std::fill(row + c * chunk_length + position + 1, row + (c + 1) * chunk_length, -INFINITY);
    }
  }
}

// c[rows, hd] (row stride ldc) += a[rows, chunks x chunk length] (row stride lda) . the
// tile's key chunks of `block` ([s, hd]), one GEMM per chunk into `scratch` (rows x hd).
void AddTimesChunks(const RingStep& g, const Tile& tile, const float* a, int64_t lda, const float* block, float* c,
                    int64_t ldc, float* scratch) {
  const int64_t chunk_length = ChunkLength(g);
  for (int k = 0; k < tile.chunks; ++k) {
    Sgemm(false, false, tile.rows, g.hd, chunk_length, a + k * chunk_length, lda,
          block + tile.key_chunk[k] * chunk_length * g.hd, g.hd, scratch, g.hd);
    for (int64_t i = 0; i < tile.rows; ++i) {
      for (int64_t d = 0; d < g.hd; ++d) c[i * ldc + d] += scratch[i * g.hd + d];
    }
  }
}

// The key chunks of `block` ([s, hd]) += a[rows, chunks x chunk length]^T . b[rows, hd]
// (row strides lda, ldb): the gradients of the keys' and values' rows, through `scratch`
// (chunk length x hd).
void AddTransposedTimes(const RingStep& g, const Tile& tile, const float* a, int64_t lda, const float* b, int64_t ldb,
                        float* block, float* scratch) {
  const int64_t chunk_length = ChunkLength(g);
  for (int k = 0; k < tile.chunks; ++k) {
    Sgemm(true, false, chunk_length, g.hd, tile.rows, a + k * chunk_length, lda, b, ldb, scratch, g.hd);
    float* to = block + tile.key_chunk[k] * chunk_length * g.hd;
    for (int64_t i = 0; i < chunk_length * g.hd; ++i) to[i] += scratch[i];
  }
}

// The act's scratch, RingAttentionWorkspaceFloats floats carved from the context's
// workspace (the plan's workspace block): the kernel allocates nothing of its own, so
// the planned peak is what it uses.
absl::StatusOr<float*> Workspace(const char* kernel, const KernelContext& context, const RingStep& g, bool grad) {
  const int64_t needed =
      RingAttentionWorkspaceFloats(g.rows, g.s, g.hd, g.zigzag, grad) * static_cast<int64_t>(sizeof(float));
  if (context.workspace == nullptr || context.workspace_bytes < needed) {
    return KernelError(kernel, "needs ", needed, " bytes of workspace for q of ", g.rows, " rows, key blocks of ", g.s,
                       " positions and head dimension ", g.hd, ", but the context gives ", context.workspace_bytes,
                       " (memory planning reserves it: KernelDef.workspace_bytes)");
  }
  return static_cast<float*>(context.workspace);
}

float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

// Per tile: the scores by GEMM, each row's softmax over the keys it sees, its output
// P V by GEMM, and its log-sum-exp in the last column.
absl::Status RingAttention(const KernelContext& context) {
  constexpr char kKernel[] = "ring_attention";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"q"}, {"k"}, {"v"}}, {{"out"}}));
  OF_ASSIGN_OR_RETURN(const RingStep g, RingStepOf(kKernel, context));
  const float* q = context.inputs[0].As<const float>();
  const float* k = context.inputs[1].As<const float>();
  const float* v = context.inputs[2].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t width = g.hd + 1;
  // The declared workspace (RingAttentionWorkspaceFloats): a tile's scores, then the
  // rows x hd of one P V product.
  OF_ASSIGN_OR_RETURN(float* const scores, Workspace(kKernel, context, g, /*grad=*/false));
  for (int64_t l = 0; l < g.leading; ++l) {
    const float* k_block = k + l * g.s * g.hd;
    const float* v_block = v + l * g.s * g.hd;
    for (const Tile& tile : TilesOf(g, l)) {
      float* o = out + (l * g.rows + tile.first_row) * width;
      for (int64_t i = 0; i < tile.rows; ++i) {
        std::fill(o + i * width, o + i * width + g.hd, 0.0f);
        o[i * width + g.hd] = kMaskedRowLse;
      }
      if (tile.chunks == 0) continue;
      TileScores(g, tile, q + (l * g.rows + tile.first_row) * g.hd, k_block, scores);
      const int64_t columns = tile.chunks * ChunkLength(g);
      float* const scratch = scores + tile.rows * columns;
      for (int64_t i = 0; i < tile.rows; ++i) {
        float* p = scores + i * columns;
        const float max = *std::max_element(p, p + columns);
        float sum = 0;
        for (int64_t j = 0; j < columns; ++j) {
          p[j] = std::exp(p[j] - max);
          sum += p[j];
        }
        for (int64_t j = 0; j < columns; ++j) p[j] /= sum;
        o[i * width + g.hd] = max + std::log(sum);
      }
      AddTimesChunks(g, tile, scores, columns, v_block, o, width, scratch);
    }
  }
  return absl::OkStatus();
}

// Flash attention's backward per tile: p = exp(score - lse), dscore = p (dout.v - dout.out
// + dlse); dq = scale dscore k, dk = scale dscore^T q, dv = p^T dout, each by GEMM over
// the key chunks the tile sees. Only the requested input's gradient is accumulated.
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
  // The declared workspace (RingAttentionWorkspaceFloats): a tile's probabilities, their
  // gradients, then the rows x hd or chunk x hd of one product.
  OF_ASSIGN_OR_RETURN(float* const workspace, Workspace(kKernel, context, g, /*grad=*/true));
  for (int64_t l = 0; l < g.leading; ++l) {
    const float* k_block = k + l * g.s * g.hd;
    const float* v_block = v + l * g.s * g.hd;
    for (const Tile& tile : TilesOf(g, l)) {
      if (tile.chunks == 0) continue;
      const int64_t row0 = l * g.rows + tile.first_row;
      const float* q_rows = q + row0 * g.hd;
      const float* dy = dout + row0 * width;
      const float* y = out + row0 * width;
      const int64_t columns = tile.chunks * ChunkLength(g);
      float* const probs = workspace;
      float* const dscores = probs + tile.rows * columns;
      float* const scratch = dscores + tile.rows * columns;
      TileScores(g, tile, q_rows, k_block, probs);
      for (int64_t i = 0; i < tile.rows; ++i) {
        const float lse = y[i * width + g.hd];
        for (int64_t j = 0; j < columns; ++j) probs[i * columns + j] = std::exp(probs[i * columns + j] - lse);
      }
      if (wrt == 2) {
        AddTransposedTimes(g, tile, probs, columns, dy, width, dx + l * g.s * g.hd, scratch);
        continue;
      }
      // dout . v^T over the chunks seen, then dscore in place.
      for (int c = 0; c < tile.chunks; ++c) {
        Sgemm(false, true, tile.rows, ChunkLength(g), g.hd, dy, width, v_block + tile.key_chunk[c] * ChunkLength(g) * g.hd,
              g.hd, dscores + c * ChunkLength(g), columns);
      }
      for (int64_t i = 0; i < tile.rows; ++i) {
        const float shift = Dot(dy + i * width, y + i * width, g.hd) - dy[i * width + g.hd];
        for (int64_t j = 0; j < columns; ++j) {
          float& ds = dscores[i * columns + j];
          ds = g.scale * probs[i * columns + j] * (ds - shift);
        }
      }
      if (wrt == 0) {
        AddTimesChunks(g, tile, dscores, columns, k_block, dx + row0 * g.hd, g.hd, scratch);
      } else {
        AddTransposedTimes(g, tile, dscores, columns, q_rows, g.hd, dx + l * g.s * g.hd, scratch);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RingAttentionMerge(const KernelContext& context) {
  constexpr char kKernel[] = "ring_attention_merge";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"a"}, {"b"}}, {{"out"}}));
  const KernelArgument& a = context.inputs[0];
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "b", context.inputs[1].shape, a.shape, "a's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, a.shape, "a's shape"));
  const int64_t width = a.shape.rank() == 0 ? 0 : a.shape.dim(a.shape.rank() - 1);
  if (width < 2) return KernelError(kKernel, "a ", a.shape.ToString(), " is not [..., hd + 1] with hd >= 1");
  const int64_t hd = width - 1;
  const float* x_all = a.As<const float>();
  const float* y_all = context.inputs[1].As<const float>();
  float* out = context.outputs[0].As<float>();
  for (int64_t row = 0; row < a.NumElements() / width; ++row) {
    const float* x = x_all + row * width;
    const float* y = y_all + row * width;
    float* o = out + row * width;
    // A row one side saw no key of: the other side's result, exactly (its weight is 0).
    const bool x_masked = x[hd] <= kMaskedRowLse, y_masked = y[hd] <= kMaskedRowLse;
    if (x_masked || y_masked) {
      std::copy(x_masked ? y : x, (x_masked ? y : x) + width, o);
      continue;
    }
    const float max = std::max(x[hd], y[hd]);
    const float wx = std::exp(x[hd] - max), wy = std::exp(y[hd] - max);
    const float inverse = 1.0f / (wx + wy);
    for (int64_t d = 0; d < hd; ++d) o[d] = (wx * x[d] + wy * y[d]) * inverse;
    o[hd] = max + std::log(wx + wy);
  }
  return absl::OkStatus();
}

absl::Status RingAttentionResult(const KernelContext& context) {
  constexpr char kKernel[] = "ring_attention_result";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"out"}, {"q"}, {"k"}, {"v"}}, {{"y"}}));
  const KernelArgument& out = context.inputs[0];
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "y", context.outputs[0].shape, out.shape, "out's shape"));
  std::memcpy(context.outputs[0].As<float>(), out.As<const float>(), static_cast<size_t>(out.NumElements()) * sizeof(float));
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
