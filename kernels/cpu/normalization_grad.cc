// Backward kernels of the last-axis normalizations, row by row like the forward ones,
// computed from the forward output (softmax, log_softmax) or input (layer_norm, the
// cross-entropy's logits). Outputs larger than the caches are written with streaming
// stores (stream_store.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/normalization_util.h"
#include "kernels/cpu/stream_store.h"
#include "kernels/cpu/vector_math.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// (dy, y) -> dx, all of dy's shape. row_fn(dy, y, dx, width, stream) does one row, stream
// std::true_type where dx is streamed.
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
  WithStreaming(ShouldStream(shape.NumElements() * int64_t{sizeof(float)}), [&](auto stream) {
    for (int64_t row = 0; row < Rows(shape); ++row) {
      const int64_t at = row * width;
      row_fn(dy + at, y + at, dx + at, width, stream);
    }
  });
  return absl::OkStatus();
}

}  // namespace

// dx = y * (dy - sum_j dy_j y_j).
absl::Status SoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(
      context, "softmax_grad",
      [](const float* dy, const float* y, float* dx, int64_t width, auto stream) {
        const float dot = RowDot(dy, y, width);
        MapTo<stream()>(dy, y, dx, width, [dot](F32x8 d, F32x8 p) { return p * (d - dot); });
      });
}

// dx = dy - exp(y) * sum_j dy_j, y the log-probabilities (<= 0, so Exp is accurate).
absl::Status LogSoftmaxGrad(const KernelContext& context) {
  return SoftmaxFamilyGrad(
      context, "log_softmax_grad",
      [](const float* dy, const float* y, float* dx, int64_t width, auto stream) {
        const float sum = RowSum(dy, width);
        MapTo<stream()>(dy, y, dx, width, [sum](F32x8 d, F32x8 p) { return d - Exp(p) * sum; });
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
  // The current group's float sums, padded to whole vectors, away from dx's page offset
  // (and from each other's, by 64 bytes): ScratchAwayFrom (normalization_util.h).
  const int64_t padded = (h + kLanes - 1) / kLanes * kLanes;
  std::vector<float> dgamma_storage, dbeta_storage;
  float* const group_dgamma = ScratchAwayFrom(&dgamma_storage, padded, dx);
  float* const group_dbeta = ScratchAwayFrom(&dbeta_storage, padded, dx, 64);
  const float inverse_h = 1.0f / static_cast<float>(h);
  const int64_t rows = Rows(shape);
  constexpr int64_t kGroup = 4;
  // Rows ahead whose x and dy are prefetched into L2 during this row's passes: 1 to 4 all
  // gave 0.61-0.71 ns per element on [16384, 1024] (without any prefetch: 0.75).
  constexpr int64_t kAhead = 2;
  WithStreaming(ShouldStream(shape.NumElements() * int64_t{sizeof(float)}), [&](auto stream) {
    for (int64_t row = 0; row < rows; ++row) {
      const float* in = x + row * h;
      const float* d = dy + row * h;
      float* out = dx + row * h;
      // A later row comes into the L2 cache during this row's arithmetic, which works on
      // the L1 cache: its x during the sums, its dy during dx; without streaming, the next
      // row's dx lines ahead of the stores (normalization_util.h).
      const int64_t ahead = row + kAhead < rows ? kAhead * h : 0;
      const float* next_in = in + ahead;
      const float* next_d = d + ahead;
      // Streamed, the dx lines are not read at all (PrefetchForWriting would read them).
      if (!stream() && row + 1 < rows) PrefetchForWriting(out + h, h);
      // The mean, then in one pass the squares of x - mean, g and g * (x - mean): with
      // rstd known only after that pass, mean(g * xhat) = rstd * mean(g * (x - mean)).
      const float mean = RowSum(in, h) / static_cast<float>(h);  // As Moments computes it.
      // Two sets of sums, for even and odd vectors: each sum waits on its previous value
      // (4 cycles per multiply-add), so one set took 4 cycles per vector.
      F32x8 squares0{}, sum_g0{}, sum_gd0{}, squares1{}, sum_g1{}, sum_gd1{};
      // Lanes j..j+7 added to one set; tail lanes: x = mean and dy = 0 add nothing.
      const auto add = [&](int64_t j, F32x8& squares, F32x8& sum_g, F32x8& sum_gd) {
        const int64_t n = h - j;
        const F32x8 centered = (n >= kLanes ? Load(in + j) : LoadPartial(in + j, n, mean)) - mean;
        const F32x8 g = n >= kLanes
                             ? Load(d + j) * Load(gamma + j)
                             : LoadPartial(d + j, n, 0.0f) * LoadPartial(gamma + j, n, 0.0f);
        squares += centered * centered;
        sum_g += g;
        sum_gd += g * centered;
      };
      int64_t j = 0;
      for (; j + 2 * kLanes <= h; j += 2 * kLanes) {
        PrefetchAt(next_in, j);
        add(j, squares0, sum_g0, sum_gd0);
        add(j + kLanes, squares1, sum_g1, sum_gd1);
      }
      if (j < h) {
        PrefetchAt(next_in, j);
        add(j, squares0, sum_g0, sum_gd0);
        if (j + kLanes < h) add(j + kLanes, squares1, sum_g1, sum_gd1);
      }
      const float rstd = 1.0f / std::sqrt(Sum(squares0 + squares1) / static_cast<float>(h) +
                                          static_cast<float>(epsilon));
      const float mean_g = Sum(sum_g0 + sum_g1) * inverse_h;
      const float mean_gx = rstd * (Sum(sum_gd0 + sum_gd1) * inverse_h);
      // dx column by column, and dy * xhat and dy added to the group's float sums, in groups
      // of lanes that WriteLanes aligns to dx for streaming: each column's value and sums
      // are the same whichever group it falls in. Lanes past `count` get x = mean and
      // dy = 0, and the sums are stored back in part.
      float* group_dgamma_row = group_dgamma;
      float* group_dbeta_row = group_dbeta;
      WriteLanes<stream()>(out, h, [&](int64_t j, int64_t count) {
        const bool whole = count == kLanes;
        const F32x8 xhat =
            ((whole ? Load(in + j) : LoadPartial(in + j, count, mean)) - mean) * rstd;
        const F32x8 dy_j = whole ? Load(d + j) : LoadPartial(d + j, count, 0.0f);
        const F32x8 g = dy_j * (whole ? Load(gamma + j) : LoadPartial(gamma + j, count, 0.0f));
        if (j % 16 < kLanes) PrefetchAt(next_d, j);  // Every other group: a line.
        float* sum_dgamma = group_dgamma_row + j;
        float* sum_dbeta = group_dbeta_row + j;
        if (whole) {
          Store(sum_dgamma, Load(sum_dgamma) + dy_j * xhat);
          Store(sum_dbeta, Load(sum_dbeta) + dy_j);
        } else {
          StorePartial(sum_dgamma, count, LoadPartial(sum_dgamma, count, 0.0f) + dy_j * xhat);
          StorePartial(sum_dbeta, count, LoadPartial(sum_dbeta, count, 0.0f) + dy_j);
        }
        return rstd * (g - mean_g - xhat * mean_gx);
      });
      if (row % kGroup == kGroup - 1 || row + 1 == rows) {
        for (int64_t j = 0; j < h; ++j) {
          dgamma[j] += group_dgamma[j];
          dbeta[j] += group_dbeta[j];
        }
        std::fill(group_dgamma, group_dgamma + padded, 0.0f);
        std::fill(group_dbeta, group_dbeta + padded, 0.0f);
      }
    }
  });
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
  // The exponentials wait for their sum in the output row, in the cache; streamed, in a
  // row buffer instead, and the scaling pass streams them out (as softmax).
  const bool stream = ShouldStream(shape.NumElements() * int64_t{sizeof(float)});
  std::vector<float> storage;
  float* const buffer = stream ? ScratchAwayFrom(&storage, classes, dlogits) : nullptr;
  absl::Status status;
  const bool avx512 = CpuHasAvx512();
  (void)avx512;
  WithStreaming(stream, [&](auto kStream) {
    status = WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
      const int64_t rows = rows_shape.NumElements();
      for (int64_t row = 0; row < rows; ++row) {
        OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
        const float* in = logits + row * classes;
        const float* next = row + 1 < rows ? in + classes : in;
        float* out = dlogits + row * classes;
        float* exps = kStream() ? buffer : out;
        const float d = dy[row];
        const float max = RowMax(in, classes);
#if defined(OF_AVX512_CODE)
        const float scale = d / (avx512 ? ExpShifted512(in, classes, max, exps, next)
                                        : ExpShifted(in, classes, max, exps, next));
#else
        const float scale = d / ExpShifted(in, classes, max, exps, next);
#endif
        const int64_t label = static_cast<int64_t>(labels[row]);
        // exp * scale, and at the label exp * scale - dy.
        WriteLanes<kStream()>(out, classes, [&](int64_t i, int64_t count) {
          F32x8 value = LoadLanes(exps, i, count) * scale;
          if (label >= i && label < i + count) value[label - i] -= d;
          return value;
        });
      }
      return absl::OkStatus();
    });
  });
  return status;
}

}  // namespace cpu
}  // namespace oneflow
