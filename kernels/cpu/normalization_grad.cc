// Backward kernels of the last-axis normalizations, row by row like the forward ones,
// computed from the forward output (softmax, log_softmax) or input (layer_norm, the
// cross-entropy's logits).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/float8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/normalization_util.h"
#include "kernels/cpu/vector_math.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// (dy, y) -> dx, all of dy's shape. row_fn(dy, y, dx, width) does one row.
template <typename RowFn>
absl::Status SoftmaxFamilyGrad(const KernelContext& context, const char* kernel, RowFn row_fn) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{"dy"}, {"y"}}, {{"dx"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kernel, "input 'dy' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kernel, "y", context.inputs[1].shape, shape, "dy's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kernel, "dx", context.outputs[0].shape, shape, "dy's shape"));
  const int64_t width = LastDim(shape);
  const float* dy = context.inputs[0].As<const float>();
  const float* y = context.inputs[1].As<const float>();
  float* dx = context.outputs[0].As<float>();
  for (int64_t row = 0; row < Rows(shape); ++row) {
    const int64_t at = row * width;
    row_fn(dy + at, y + at, dx + at, width);
  }
  return absl::OkStatus();
}

}  // namespace

// dx = y * (dy - sum_j dy_j y_j).
absl::Status SoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(
      context, "softmax_grad", [](const float* dy, const float* y, float* dx, int64_t width) {
        const float dot = RowDot(dy, y, width);
        Map(dy, y, dx, width, [dot](Float8 d, Float8 p) { return p * (d - dot); });
      });
}

// dx = dy - exp(y) * sum_j dy_j, y the log-probabilities (<= 0, so Exp is accurate).
absl::Status LogSoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(
      context, "log_softmax_grad", [](const float* dy, const float* y, float* dx, int64_t width) {
        const float sum = RowSum(dy, width);
        Map(dy, y, dx, width, [sum](Float8 d, Float8 p) { return d - Exp(p) * sum; });
      });
}

// With xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum over rows of dy * xhat,  dbeta = sum over rows of dy.
// The column sums over rows accumulate in double: a data-parallel device may sum tens of
// thousands of rows, and float accumulation would lose digits the reference keeps. Rows
// go in groups of kGroup: a group's dy * xhat (and dy) are first summed in float, then
// added to the double sums once per group, which takes most of the double arithmetic
// (a third of the kernel's time when done for every row) away.
// The error of a group's float sum is at most kGroup ulp of its terms' magnitudes, so
// dgamma and dbeta stay within ~kGroup * 6e-8 of the sum of |terms|, however many rows.
absl::Status LayerNormGrad(const KernelContext& context) {
  constexpr char kKernel[] = "layer_norm_grad";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"gamma"}, {"dy"}},
                                    {{"dx"}, {"dgamma"}, {"dbeta"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'x' must have rank >= 1, got []");
  const int64_t h = LastDim(shape);
  const Shape row_shape{h};
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "gamma", context.inputs[1].shape, row_shape, "the last dimension of x"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[2].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", context.outputs[0].shape, shape, "x's shape"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dgamma", context.outputs[1].shape, row_shape, "gamma's shape"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dbeta", context.outputs[2].shape, row_shape, "gamma's shape"));
  const double epsilon = GetFloatAttr(AttrsOf(context), "epsilon", 1e-5);
  if (!(epsilon > 0)) return KernelError(kKernel, "attribute epsilon=", epsilon, " must be > 0");
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  const float* dy = context.inputs[2].As<const float>();
  float* dx = context.outputs[0].As<float>();
  std::vector<double> dgamma(h, 0.0), dbeta(h, 0.0);
  // The current group's float sums; padded to whole vectors.
  const int64_t padded = (h + kLanes - 1) / kLanes * kLanes;
  std::vector<float> group_dgamma(padded, 0.0f), group_dbeta(padded, 0.0f);
  const float inverse_h = 1.0f / static_cast<float>(h);
  const int64_t rows = Rows(shape);
  constexpr int64_t kGroup = 4;
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * h;
    const float* d = dy + row * h;
    float* out = dx + row * h;
    // The next row comes into the L2 cache during this row's arithmetic, which works on
    // the L1 cache: its x and dy during the sums, its dx lines ahead of the stores
    // (normalization_util.h).
    const float* next_in = row + 1 < rows ? in + h : in;
    const float* next_d = row + 1 < rows ? d + h : d;
    if (row + 1 < rows) PrefetchForWriting(out + h, h);
    // The mean, then in one pass the squares of x - mean, g and g * (x - mean): with
    // rstd known only after that pass, mean(g * xhat) = rstd * mean(g * (x - mean)).
    const float mean = RowSum(in, h) / static_cast<float>(h);  // As Moments computes it.
    Float8 squares{}, sum_g{}, sum_gd{};
    for (int64_t j = 0; j < h; j += kLanes) {
      PrefetchAt(next_in, j);
      PrefetchAt(next_d, j);
      const int64_t n = h - j;
      // Tail lanes: x = mean and dy = 0 add nothing.
      const Float8 centered = (n >= kLanes ? Load(in + j) : LoadPartial(in + j, n, mean)) - mean;
      const Float8 g = n >= kLanes ? Load(d + j) * Load(gamma + j)
                                   : LoadPartial(d + j, n, 0.0f) * LoadPartial(gamma + j, n, 0.0f);
      squares += centered * centered;
      sum_g += g;
      sum_gd += g * centered;
    }
    const float rstd =
        1.0f / std::sqrt(Sum(squares) / static_cast<float>(h) + static_cast<float>(epsilon));
    // Lanes j..j+7 of the row: xhat, dy and g = dy * gamma. Tail lanes (past n valid
    // ones) get x = mean and dy = 0, so xhat = 0 and g = 0: they add nothing.
    struct Lanes {
      Float8 xhat, dy, g;
    };
    auto lanes = [&](int64_t j, int64_t n) {
      Lanes l;
      if (n >= kLanes) {
        l.xhat = (Load(in + j) - mean) * rstd;
        l.dy = Load(d + j);
        l.g = l.dy * Load(gamma + j);
      } else {
        l.xhat = (LoadPartial(in + j, n, mean) - mean) * rstd;
        l.dy = LoadPartial(d + j, n, 0.0f);
        l.g = l.dy * LoadPartial(gamma + j, n, 0.0f);
      }
      return l;
    };
    const float mean_g = Sum(sum_g) * inverse_h;
    const float mean_gx = rstd * (Sum(sum_gd) * inverse_h);
    for (int64_t j = 0; j < h; j += kLanes) {
      const Lanes l = lanes(j, h - j);
      const Float8 dx_j = rstd * (l.g - mean_g - l.xhat * mean_gx);
      if (j + kLanes <= h) {
        Store(out + j, dx_j);
      } else {
        StorePartial(out + j, h - j, dx_j);
      }
      Store(group_dgamma.data() + j, Load(group_dgamma.data() + j) + l.dy * l.xhat);
      Store(group_dbeta.data() + j, Load(group_dbeta.data() + j) + l.dy);
    }
    if (row % kGroup == kGroup - 1 || row + 1 == rows) {
      for (int64_t j = 0; j < h; ++j) {
        dgamma[j] += group_dgamma[j];
        dbeta[j] += group_dbeta[j];
      }
      std::fill(group_dgamma.begin(), group_dgamma.end(), 0.0f);
      std::fill(group_dbeta.begin(), group_dbeta.end(), 0.0f);
    }
  }
  float* dgamma_out = context.outputs[1].As<float>();
  float* dbeta_out = context.outputs[2].As<float>();
  for (int64_t j = 0; j < h; ++j) {
    dgamma_out[j] = static_cast<float>(dgamma[j]);
    dbeta_out[j] = static_cast<float>(dbeta[j]);
  }
  return absl::OkStatus();
}

// dlogits = (softmax(logits) - one_hot(labels)) * dy.
absl::Status SparseSoftmaxCrossEntropyGrad(const KernelContext& context) {
  constexpr char kKernel[] = "sparse_softmax_cross_entropy_grad";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context, {{"logits"}, {"labels", ArgKind::kIndex}, {"dy"}}, {{"dlogits"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'logits' must have rank >= 1, got []");
  const Shape rows_shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "labels", context.inputs[1].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[2].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "dlogits", context.outputs[0].shape, shape, "logits' shape"));
  const int64_t classes = LastDim(shape);
  const float* logits = context.inputs[0].As<const float>();
  const float* dy = context.inputs[2].As<const float>();
  float* dlogits = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    const int64_t rows = rows_shape.NumElements();
    for (int64_t row = 0; row < rows; ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = logits + row * classes;
      const float* next = row + 1 < rows ? in + classes : in;
      float* out = dlogits + row * classes;
      const float scale = dy[row] / ExpShifted(in, classes, RowMax(in, classes), out, next);
      Map(out, out, classes, [scale](Float8 v) { return v * scale; });
      out[labels[row]] -= dy[row];
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
