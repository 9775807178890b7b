// Mixture-of-experts kernels (oneflow_core/ops/moe.cc, docs/moe.md). Every kernel works
// sample by sample on physical shapes: the ops' signatures keep whole every axis a kernel
// indexes across (tokens, experts, capacity) or split the expert axis only where no
// expert id is read (expert_matmul), so none needs its layout.
//
// The expert products run one Sgemm (sgemm.h: the GEMM backend chosen for the shape, one
// BLAS thread per call) per (sample, expert) block over only the block's leading used rows: capacity slots past the last token routed there are zero (dispatch
// writes zeros, and so does the backward of combine), and a zero row's product is a zero
// row, so skipping them changes nothing but the work. It also means an expert with no
// token on the device never reads its weights: a device may hold zeros there and still
// get exact results, and its weight gradient is exactly 0.
#include <algorithm>
#include <climits>
#include <numeric>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/thread_pool.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// Work below which a ParallelFor part is not worth a helper's wake-up (as matmul.cc).
constexpr int64_t kMinMacsPerPart = int64_t{1} << 20;

// The routing of one op: index and slot [B, T, K] as int64 (either dtype), checked
// against the experts and capacity the op indexes.
struct Routing {
  int64_t batch = 0, tokens = 0, top_k = 0;
  std::vector<int64_t> index, slot;

  int64_t at(int64_t b, int64_t t, int64_t k) const { return (b * tokens + t) * top_k + k; }
};

absl::StatusOr<Routing> ReadRouting(const char* kernel, const KernelArgument& index,
                                    const KernelArgument& slot, int64_t experts,
                                    int64_t capacity) {
  if (index.shape.rank() != 3 || slot.shape != index.shape) {
    return KernelError(kernel, "inputs 'index' ", index.shape.ToString(), " and 'slot' ",
                       slot.shape.ToString(), " must have the same shape [batch, tokens, top_k]");
  }
  Routing routing{index.shape.dim(0), index.shape.dim(1), index.shape.dim(2)};
  auto copy = [](const KernelArgument& from, std::vector<int64_t>* to) {
    WithIndices(from, [&](const auto* values) {
      to->assign(values, values + from.NumElements());
      return 0;
    });
  };
  copy(index, &routing.index);
  copy(slot, &routing.slot);
  for (int64_t i = 0; i < index.NumElements(); ++i) {
    const int64_t e = routing.index[i], c = routing.slot[i];
    if ((e == -1 && c == -1) || (e >= 0 && e < experts && c >= 0 && c < capacity)) continue;
    const int64_t k = i % routing.top_k, t = i / routing.top_k % routing.tokens;
    const int64_t b = i / routing.top_k / routing.tokens;
    return KernelError(kernel, "choice [", b, ", ", t, ", ", k, "] has index ", e, " and slot ",
                       c, "; valid: both -1 (dropped) or index in 0..", experts - 1,
                       " and slot in 0..", capacity - 1);
  }
  return routing;
}

absl::Status ExpectRank(const char* kernel, const char* role, const char* name,
                        const Shape& shape, int64_t rank) {
  if (shape.rank() == rank) return absl::OkStatus();
  return KernelError(kernel, role, " '", name, "' must have rank ", rank, ", got ",
                     shape.ToString());
}

// Rows of a [rows, width] block up to and including its last row holding a nonzero.
int64_t UsedRows(const float* block, int64_t rows, int64_t width) {
  for (int64_t r = rows; r > 0; --r) {
    const float* row = block + (r - 1) * width;
    for (int64_t i = 0; i < width; ++i) {
      if (row[i] != 0.0f) return r;
    }
  }
  return 0;
}

absl::Status CheckBlasLimits(const char* kernel, std::initializer_list<int64_t> dims) {
  for (int64_t dim : dims) {
    if (dim > INT_MAX) {
      return KernelError(kernel, "dimension ", dim, " exceeds the BLAS limit of ", INT_MAX);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MoeRoute(const KernelContext& context) {
  constexpr char kKernel[] = "moe_route";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"probs"}},
                                    {{"index", ArgKind::kIndex},
                                     {"slot", ArgKind::kIndex},
                                     {"dropped"}}));
  const Shape& shape = context.inputs[0].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "probs", shape, 3));
  const int64_t batch = shape.dim(0), tokens = shape.dim(1), experts = shape.dim(2);
  const AttrMap& attrs = AttrsOf(context);
  const int64_t top_k = GetIntAttr(attrs, "top_k", 0);
  const int64_t capacity = GetIntAttr(attrs, "capacity", 0);
  if (top_k < 1 || top_k > experts) {
    return KernelError(kKernel, "attribute top_k=", top_k, " is out of range; valid: 1..",
                       experts);
  }
  if (capacity <= 0) return KernelError(kKernel, "attribute capacity=", capacity, " must be > 0");
  const Shape choices{batch, tokens, top_k};
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.outputs[0].shape, choices));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "slot", context.outputs[1].shape, choices));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dropped", context.outputs[2].shape, Shape{batch}));
  const float* probs = context.inputs[0].As<const float>();
  // The top_k experts of every token, largest probability first, lower id on ties.
  std::vector<int64_t> ranked(tokens * top_k);
  std::vector<int64_t> order(experts);
  std::vector<int64_t> count(experts);
  std::vector<int64_t> index(tokens * top_k), slot(tokens * top_k);
  float* dropped = context.outputs[2].As<float>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      const float* row = probs + (b * tokens + t) * experts;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [row](int64_t x, int64_t y) {
                          return row[x] > row[y] || (row[x] == row[y] && x < y);
                        });
      std::copy(order.begin(), order.begin() + top_k, ranked.begin() + t * top_k);
    }
    std::fill(count.begin(), count.end(), 0);
    int64_t drops = 0;
    for (int64_t k = 0; k < top_k; ++k) {  // k-major (GShard's order).
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t at = t * top_k + k;
        const int64_t e = ranked[at];
        if (count[e] < capacity) {
          index[at] = e;
          slot[at] = count[e]++;
        } else {
          index[at] = slot[at] = -1;
          ++drops;
        }
      }
    }
    dropped[b] = static_cast<float>(drops);
    for (int o = 0; o < 2; ++o) {
      const KernelArgument& out = context.outputs[o];
      const std::vector<int64_t>& from = o == 0 ? index : slot;
      const int64_t offset = b * tokens * top_k;
      if (out.dtype == DType::kI64) {
        std::copy(from.begin(), from.end(), out.As<int64_t>() + offset);
      } else {
        std::transform(from.begin(), from.end(), out.As<int32_t>() + offset,
                       [](int64_t v) { return static_cast<int32_t>(v); });
      }
    }
  }
  return absl::OkStatus();
}

absl::Status MoeDispatch(const KernelContext& context) {
  constexpr char kKernel[] = "moe_dispatch";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context, {{"x"}, {"index", ArgKind::kIndex}, {"slot", ArgKind::kIndex}},
      {{"buf"}}));
  const KernelArgument& x = context.inputs[0];
  const KernelArgument& buf = context.outputs[0];
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "x", x.shape, 3));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "output", "buf", buf.shape, 4));
  const int64_t batch = x.shape.dim(0), tokens = x.shape.dim(1), hidden = x.shape.dim(2);
  const int64_t experts = buf.shape.dim(1), capacity = buf.shape.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "buf", buf.shape,
                                Shape{batch, experts, capacity, hidden},
                                "x's samples and hidden size"));
  OF_ASSIGN_OR_RETURN(const Routing routing, ReadRouting(kKernel, context.inputs[1],
                                                         context.inputs[2], experts, capacity));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.inputs[1].shape,
                                Shape{batch, tokens, routing.top_k}, "x's samples and tokens"));
  const float* in = x.As<const float>();
  float* out = buf.As<float>();
  std::fill(out, out + buf.NumElements(), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      const float* from = in + (b * tokens + t) * hidden;
      for (int64_t k = 0; k < routing.top_k; ++k) {
        const int64_t e = routing.index[routing.at(b, t, k)];
        if (e < 0) continue;
        float* to =
            out + ((b * experts + e) * capacity + routing.slot[routing.at(b, t, k)]) * hidden;
        for (int64_t h = 0; h < hidden; ++h) to[h] += from[h];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status MoeDispatchGrad(const KernelContext& context) {
  constexpr char kKernel[] = "moe_dispatch_grad";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context, {{"dbuf"}, {"index", ArgKind::kIndex}, {"slot", ArgKind::kIndex}},
      {{"dx"}}));
  const KernelArgument& dbuf = context.inputs[0];
  const KernelArgument& dx = context.outputs[0];
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "dbuf", dbuf.shape, 4));
  const int64_t batch = dbuf.shape.dim(0), experts = dbuf.shape.dim(1);
  const int64_t capacity = dbuf.shape.dim(2), hidden = dbuf.shape.dim(3);
  OF_ASSIGN_OR_RETURN(const Routing routing, ReadRouting(kKernel, context.inputs[1],
                                                         context.inputs[2], experts, capacity));
  const int64_t tokens = routing.tokens;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", dx.shape, Shape{batch, tokens, hidden},
                                "index's samples and tokens by dbuf's hidden size"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.inputs[1].shape,
                                Shape{batch, tokens, routing.top_k}, "dbuf's samples"));
  const float* in = dbuf.As<const float>();
  float* out = dx.As<float>();
  std::fill(out, out + dx.NumElements(), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      float* to = out + (b * tokens + t) * hidden;
      for (int64_t k = 0; k < routing.top_k; ++k) {
        const int64_t e = routing.index[routing.at(b, t, k)];
        if (e < 0) continue;
        const float* from =
            in + ((b * experts + e) * capacity + routing.slot[routing.at(b, t, k)]) * hidden;
        for (int64_t h = 0; h < hidden; ++h) to[h] += from[h];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ExpertMatMul(const KernelContext& context) {
  constexpr char kKernel[] = "expert_matmul";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"buf"}, {"w"}}, {{"out"}}));
  const Shape& buf = context.inputs[0].shape;
  const Shape& w = context.inputs[1].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "buf", buf, 4));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "w", w, 3));
  const int64_t batch = buf.dim(0), experts = buf.dim(1), capacity = buf.dim(2);
  const int64_t hidden = buf.dim(3), inner = w.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "w", w, Shape{experts, hidden, inner},
                                "buf's experts by its hidden size"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape,
                                Shape{batch, experts, capacity, inner}));
  OF_RETURN_IF_ERROR(CheckBlasLimits(kKernel, {capacity, hidden, inner}));
  const float* a = context.inputs[0].As<const float>();
  const float* weights = context.inputs[1].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t grain =
      std::max<int64_t>(1, kMinMacsPerPart / std::max<int64_t>(1, capacity * hidden * inner));
  ParallelFor(context.thread_pool, batch * experts, grain, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t e = block % experts;
      const float* x = a + block * capacity * hidden;
      float* y = out + block * capacity * inner;
      const int64_t rows = hidden == 0 ? 0 : UsedRows(x, capacity, hidden);
      if (rows > 0 && inner > 0) {
        Sgemm(false, false, rows, inner, hidden, x, hidden, weights + e * hidden * inner, inner, y, inner);
      }
      std::fill(y + rows * inner, y + capacity * inner, 0.0f);
    }
  });
  return absl::OkStatus();
}

absl::Status ExpertMatMulGradData(const KernelContext& context) {
  constexpr char kKernel[] = "expert_matmul_grad_data";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"dout"}, {"w"}}, {{"dbuf"}}));
  const Shape& dout = context.inputs[0].shape;
  const Shape& w = context.inputs[1].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "dout", dout, 4));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "w", w, 3));
  const int64_t batch = dout.dim(0), experts = dout.dim(1), capacity = dout.dim(2);
  const int64_t inner = dout.dim(3), hidden = w.dim(1);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "w", w, Shape{experts, hidden, inner},
                                "dout's experts by its output size"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dbuf", context.outputs[0].shape,
                                Shape{batch, experts, capacity, hidden}));
  OF_RETURN_IF_ERROR(CheckBlasLimits(kKernel, {capacity, hidden, inner}));
  const float* dy = context.inputs[0].As<const float>();
  const float* weights = context.inputs[1].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t grain =
      std::max<int64_t>(1, kMinMacsPerPart / std::max<int64_t>(1, capacity * hidden * inner));
  ParallelFor(context.thread_pool, batch * experts, grain, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t e = block % experts;
      const float* g = dy + block * capacity * inner;
      float* dx = out + block * capacity * hidden;
      const int64_t rows = inner == 0 ? 0 : UsedRows(g, capacity, inner);
      if (rows > 0 && hidden > 0) {  // dx = g . w[e]^T
        Sgemm(false, true, rows, hidden, inner, g, inner, weights + e * hidden * inner, inner, dx, hidden);
      }
      std::fill(dx + rows * hidden, dx + capacity * hidden, 0.0f);
    }
  });
  return absl::OkStatus();
}

absl::Status ExpertMatMulGradWeight(const KernelContext& context) {
  constexpr char kKernel[] = "expert_matmul_grad_weight";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"buf"}, {"dout"}}, {{"dw"}}));
  const Shape& buf = context.inputs[0].shape;
  const Shape& dout = context.inputs[1].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "buf", buf, 4));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "dout", dout, 4));
  const int64_t batch = buf.dim(0), experts = buf.dim(1), capacity = buf.dim(2);
  const int64_t hidden = buf.dim(3), inner = dout.dim(3);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dout", dout, Shape{batch, experts, capacity, inner},
                                "buf's samples, experts and capacity"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dw", context.outputs[0].shape,
                                Shape{experts, hidden, inner}));
  OF_RETURN_IF_ERROR(CheckBlasLimits(kKernel, {batch * capacity, hidden, inner}));
  const float* x = context.inputs[0].As<const float>();
  const float* dy = context.inputs[1].As<const float>();
  float* dw = context.outputs[0].As<float>();
  const int64_t grain = std::max<int64_t>(
      1, kMinMacsPerPart / std::max<int64_t>(1, batch * capacity * hidden * inner));
  // Experts are independent. Each gathers the used rows of its blocks, sample after
  // sample, and takes dw[e] = a^T . g over all of them in one product (Sgemm overwrites
  // its output: one product per expert, not one accumulated per sample).
  ParallelFor(context.thread_pool, experts, grain, [&](int64_t first, int64_t last) {
    std::vector<float> rows_a, rows_g;
    for (int64_t e = first; e < last; ++e) {
      float* to = dw + e * hidden * inner;
      rows_a.clear();
      rows_g.clear();
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t block = b * experts + e;
        const float* a = x + block * capacity * hidden;
        const float* g = dy + block * capacity * inner;
        // Row r adds outer(a[r], g[r]): rows past either block's last nonzero add nothing.
        const int64_t rows = std::min(hidden == 0 ? 0 : UsedRows(a, capacity, hidden),
                                      inner == 0 ? 0 : UsedRows(g, capacity, inner));
        rows_a.insert(rows_a.end(), a, a + rows * hidden);
        rows_g.insert(rows_g.end(), g, g + rows * inner);
      }
      const int64_t rows = hidden == 0 ? 0 : static_cast<int64_t>(rows_a.size()) / hidden;
      if (rows == 0 || inner == 0) {
        std::fill(to, to + hidden * inner, 0.0f);  // No token: exactly 0.
        continue;
      }
      Sgemm(true, false, hidden, inner, rows, rows_a.data(), hidden, rows_g.data(), inner, to, inner);
    }
  });
  return absl::OkStatus();
}

absl::Status MoeCombine(const KernelContext& context) {
  constexpr char kKernel[] = "moe_combine";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context,
      {{"ybuf"}, {"probs"}, {"index", ArgKind::kIndex}, {"slot", ArgKind::kIndex}}, {{"y"}}));
  const KernelArgument& ybuf = context.inputs[0];
  const KernelArgument& probs = context.inputs[1];
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "ybuf", ybuf.shape, 4));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "probs", probs.shape, 3));
  const int64_t batch = ybuf.shape.dim(0), experts = ybuf.shape.dim(1);
  const int64_t capacity = ybuf.shape.dim(2), hidden = ybuf.shape.dim(3);
  const int64_t tokens = probs.shape.dim(1);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "probs", probs.shape, Shape{batch, tokens, experts},
                                "ybuf's samples and experts"));
  OF_ASSIGN_OR_RETURN(const Routing routing, ReadRouting(kKernel, context.inputs[2],
                                                         context.inputs[3], experts, capacity));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.inputs[2].shape,
                                Shape{batch, tokens, routing.top_k}, "probs' samples and tokens"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "y", context.outputs[0].shape, Shape{batch, tokens, hidden}));
  const float* in = ybuf.As<const float>();
  const float* p = probs.As<const float>();
  float* out = context.outputs[0].As<float>();
  std::fill(out, out + context.outputs[0].NumElements(), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      float* to = out + (b * tokens + t) * hidden;
      for (int64_t k = 0; k < routing.top_k; ++k) {
        const int64_t e = routing.index[routing.at(b, t, k)];
        if (e < 0) continue;
        const float weight = p[(b * tokens + t) * experts + e];
        const float* from =
            in + ((b * experts + e) * capacity + routing.slot[routing.at(b, t, k)]) * hidden;
        for (int64_t h = 0; h < hidden; ++h) to[h] += weight * from[h];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status MoeCombineGradBuf(const KernelContext& context) {
  constexpr char kKernel[] = "moe_combine_grad_buf";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context,
      {{"dy"}, {"probs"}, {"index", ArgKind::kIndex}, {"slot", ArgKind::kIndex}}, {{"dybuf"}}));
  const KernelArgument& dy = context.inputs[0];
  const KernelArgument& probs = context.inputs[1];
  const KernelArgument& dybuf = context.outputs[0];
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "dy", dy.shape, 3));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "probs", probs.shape, 3));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "output", "dybuf", dybuf.shape, 4));
  const int64_t batch = dy.shape.dim(0), tokens = dy.shape.dim(1), hidden = dy.shape.dim(2);
  const int64_t experts = probs.shape.dim(2), capacity = dybuf.shape.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "probs", probs.shape, Shape{batch, tokens, experts},
                                "dy's samples and tokens"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dybuf", dybuf.shape,
                                Shape{batch, experts, capacity, hidden}));
  OF_ASSIGN_OR_RETURN(const Routing routing, ReadRouting(kKernel, context.inputs[2],
                                                         context.inputs[3], experts, capacity));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.inputs[2].shape,
                                Shape{batch, tokens, routing.top_k}, "dy's samples and tokens"));
  const float* g = dy.As<const float>();
  const float* p = probs.As<const float>();
  float* out = dybuf.As<float>();
  std::fill(out, out + dybuf.NumElements(), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      const float* from = g + (b * tokens + t) * hidden;
      for (int64_t k = 0; k < routing.top_k; ++k) {
        const int64_t e = routing.index[routing.at(b, t, k)];
        if (e < 0) continue;
        const float weight = p[(b * tokens + t) * experts + e];
        float* to =
            out + ((b * experts + e) * capacity + routing.slot[routing.at(b, t, k)]) * hidden;
        for (int64_t h = 0; h < hidden; ++h) to[h] += weight * from[h];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status MoeCombineGradProbs(const KernelContext& context) {
  constexpr char kKernel[] = "moe_combine_grad_probs";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context,
      {{"dy"}, {"ybuf"}, {"index", ArgKind::kIndex}, {"slot", ArgKind::kIndex}}, {{"dprobs"}}));
  const KernelArgument& dy = context.inputs[0];
  const KernelArgument& ybuf = context.inputs[1];
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "dy", dy.shape, 3));
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "ybuf", ybuf.shape, 4));
  const int64_t batch = dy.shape.dim(0), tokens = dy.shape.dim(1), hidden = dy.shape.dim(2);
  const int64_t experts = ybuf.shape.dim(1), capacity = ybuf.shape.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "ybuf", ybuf.shape,
                                Shape{batch, experts, capacity, hidden},
                                "dy's samples and hidden size"));
  OF_ASSIGN_OR_RETURN(const Routing routing, ReadRouting(kKernel, context.inputs[2],
                                                         context.inputs[3], experts, capacity));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "index", context.inputs[2].shape,
                                Shape{batch, tokens, routing.top_k}, "dy's samples and tokens"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dprobs", context.outputs[0].shape,
                                Shape{batch, tokens, experts}));
  const float* g = dy.As<const float>();
  const float* in = ybuf.As<const float>();
  float* out = context.outputs[0].As<float>();
  std::fill(out, out + context.outputs[0].NumElements(), 0.0f);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      const float* grad = g + (b * tokens + t) * hidden;
      for (int64_t k = 0; k < routing.top_k; ++k) {
        const int64_t e = routing.index[routing.at(b, t, k)];
        if (e < 0) continue;
        const float* y =
            in + ((b * experts + e) * capacity + routing.slot[routing.at(b, t, k)]) * hidden;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t h = 0; h < hidden; ++h) dot += grad[h] * y[h];
        out[(b * tokens + t) * experts + e] += dot;
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// Fraction of a sample's tokens whose argmax (lowest id on ties) is each expert.
void ArgmaxFractions(const float* probs, int64_t tokens, int64_t experts,
                     std::vector<double>* fraction) {
  fraction->assign(experts, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = probs + t * experts;
    (*fraction)[std::max_element(row, row + experts) - row] += 1.0;
  }
  for (double& f : *fraction) f /= static_cast<double>(tokens);
}

}  // namespace

absl::Status MoeAuxLoss(const KernelContext& context) {
  constexpr char kKernel[] = "moe_aux_loss";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"probs"}}, {{"loss"}}));
  const Shape& shape = context.inputs[0].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "probs", shape, 3));
  const int64_t batch = shape.dim(0), tokens = shape.dim(1), experts = shape.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "loss", context.outputs[0].shape, Shape{batch}));
  const float* probs = context.inputs[0].As<const float>();
  float* loss = context.outputs[0].As<float>();
  std::vector<double> fraction;
  std::vector<double> mean(experts);
  for (int64_t b = 0; b < batch; ++b) {
    const float* sample = probs + b * tokens * experts;
    ArgmaxFractions(sample, tokens, experts, &fraction);
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t e = 0; e < experts; ++e) mean[e] += sample[t * experts + e];
    }
    double sum = 0;
    for (int64_t e = 0; e < experts; ++e) sum += fraction[e] * mean[e] / tokens;
    loss[b] = static_cast<float>(experts * sum);
  }
  return absl::OkStatus();
}

absl::Status MoeAuxLossGrad(const KernelContext& context) {
  constexpr char kKernel[] = "moe_aux_loss_grad";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"dy"}, {"probs"}}, {{"dprobs"}}));
  const Shape& shape = context.inputs[1].shape;
  OF_RETURN_IF_ERROR(ExpectRank(kKernel, "input", "probs", shape, 3));
  const int64_t batch = shape.dim(0), tokens = shape.dim(1), experts = shape.dim(2);
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[0].shape, Shape{batch},
                                "probs' samples"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dprobs", context.outputs[0].shape, shape));
  const float* dy = context.inputs[0].As<const float>();
  const float* probs = context.inputs[1].As<const float>();
  float* out = context.outputs[0].As<float>();
  std::vector<double> fraction;
  for (int64_t b = 0; b < batch; ++b) {
    ArgmaxFractions(probs + b * tokens * experts, tokens, experts, &fraction);
    float* sample = out + b * tokens * experts;
    for (int64_t e = 0; e < experts; ++e) {
      const float value =
          static_cast<float>(static_cast<double>(dy[b]) * experts * fraction[e] / tokens);
      for (int64_t t = 0; t < tokens; ++t) sample[t * experts + e] = value;
    }
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
