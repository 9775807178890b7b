// Last-axis normalizations: softmax, log_softmax, layer_norm and the sparse softmax
// cross-entropy loss. Each works row by row (a row is the last axis, whole on every
// device) in a few passes over the row, which stays in the L1 cache: a max, a sum of
// exponentials, then the write-out, all on F32x8 (normalization_util.h). Sums keep 8
// lanes of partial sums; the order differs from the reference's by float rounding.
// Outputs larger than the caches are written with streaming stores (stream_store.h) in
// each row's last pass.
#include <algorithm>
#include <cmath>
#include <limits>
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

// Softmax or log-softmax of each row of x.
absl::Status RowSoftmax(const KernelContext& context, const char* kernel, bool log) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{"x"}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kernel, "input 'x' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kernel, "out", context.outputs[0].shape, shape, "x's shape"));
  const int64_t width = LastDim(shape);
  const float* x = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = Rows(shape);
  // log_softmax's last pass writes each output row once, from x: streamed for large
  // outputs (0.38 ns per element on [16384, 1024] against 0.67). softmax's exponentials
  // wait in the output row for their sum and are scaled there, in the L1 cache: storing
  // them to a row buffer instead and streaming the scaled row out was slower (0.39-0.45
  // against 0.35-0.36), so softmax never streams.
  const bool stream = log && ShouldStream(shape.NumElements() * int64_t{sizeof(float)});
  const bool avx512 = CpuHasAvx512();
  (void)avx512;
  WithStreaming(stream, [&](auto kStream) {
    for (int64_t row = 0; row < rows; ++row) {
      const float* in = x + row * width;
      const float* next = row + 1 < rows ? in + width : in;
      float* y = out + row * width;
      const float max = RowMax(in, width);
      if (log) {
        const float shift = max + std::log(SumExpShifted(in, width, max, next));
        MapTo<kStream()>(in, y, width, [shift](F32x8 v) { return v - shift; });
      } else {
#if defined(OF_AVX512_CODE)
        const float inverse = 1.0f / (avx512 ? ExpShifted512(in, width, max, y, next)
                                             : ExpShifted(in, width, max, y, next));
#else
        const float inverse = 1.0f / ExpShifted(in, width, max, y, next);
#endif
        Map(y, y, width, [inverse](F32x8 v) { return v * inverse; });
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status Softmax(const KernelContext& context) {
  return RowSoftmax(context, "softmax", /*log=*/false);
}

absl::Status LogSoftmax(const KernelContext& context) {
  return RowSoftmax(context, "log_softmax", /*log=*/true);
}

// out = (x - mean) / sqrt(var + epsilon) * gamma + beta over each row; the variance is
// the mean squared deviation (two passes, no E[x^2] - E[x]^2 cancellation).
absl::Status LayerNorm(const KernelContext& context) {
  constexpr char kKernel[] = "layer_norm";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"gamma"}, {"beta"}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'x' must have rank >= 1, got []");
  const int64_t h = LastDim(shape);
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "gamma", context.inputs[1].shape, Shape{h}, "the last dimension of x"));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "beta", context.inputs[2].shape, Shape{h}, "the last dimension of x"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, shape, "x's shape"));
  const double epsilon = GetFloatAttr(AttrsOf(context), "epsilon", 1e-5);
  if (!(epsilon > 0)) return KernelError(kKernel, "attribute epsilon=", epsilon, " must be > 0");
  const float* x = context.inputs[0].As<const float>();
  const float* gamma = context.inputs[1].As<const float>();
  const float* beta = context.inputs[2].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = Rows(shape);
  const bool stream = ShouldStream(shape.NumElements() * int64_t{sizeof(float)});
  WithStreaming(stream, [&](auto kStream) {
    for (int64_t row = 0; row < rows; ++row) {
      const float* in = x + row * h;
      const float* next = row + 1 < rows ? in + h : in;
      float* y = out + row * h;
      // Streamed, the output lines are not read at all (PrefetchForWriting would read them).
      if (!kStream() && row + 1 < rows) PrefetchForWriting(y + h, h);
      const RowMoments moments = Moments(in, h, static_cast<float>(epsilon), next);
      const float mean = moments.mean, rstd = moments.rstd;
      MapTo<kStream()>(in, gamma, beta, y, h, [mean, rstd](F32x8 v, F32x8 g, F32x8 b) {
        return (v - mean) * rstd * g + b;
      });
    }
  });
  return absl::OkStatus();
}

// loss[row] = -log_softmax(x)[label] = (max - x[label]) + log(sum_j exp(x_j - max)).
// Rows go in segments of kCrossEntropySegment elements with a running maximum (the sum
// rescaled when a segment raises it), in one pass over each segment, which also finds the
// next segment's maximum: a row's maximum pass over 16 KiB fresh from memory and then its
// exponentials on the L1 cache left the memory idle half the time (0.33 ns per element on
// [4096, 4096] against 0.25 with the data in L2), and with the next row's maximum in the
// exponentials' loop two 16 KiB rows no longer fit the L1 cache together. Segments of 512
// (2 KiB): 0.25; 1024: 0.31; 2048: 0.31, in a loop written for the measurement. Rescaling
// adds at most one rounding and one exp per segment (8.8e-8 each) to the sum's error.
constexpr int64_t kCrossEntropySegment = 512;
absl::Status SparseSoftmaxCrossEntropy(const KernelContext& context) {
  constexpr char kKernel[] = "sparse_softmax_cross_entropy";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"logits"}, {"labels", ArgKind::kIndex}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'logits' must have rank >= 1, got []");
  const Shape rows_shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "labels", context.inputs[1].shape, rows_shape,
                                "logits without the class axis"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, rows_shape,
                                "logits without the class axis"));
  const int64_t classes = LastDim(shape);
  const float* logits = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    const int64_t rows = rows_shape.NumElements();
    if (rows == 0 || classes == 0) {
      for (int64_t row = 0; row < rows; ++row) {
        OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      }
      return absl::OkStatus();
    }
    // The logits as one sequence of segments (a row's last may be shorter); each
    // segment's maximum comes from the loop over the segment before it.
    const int64_t segment = std::min(kCrossEntropySegment, classes);
    const bool avx512 = CpuHasAvx512();
    float next_max = RowMax(logits, segment);
    for (int64_t row = 0; row < rows; ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = logits + row * classes;
      // The sum of exp(x - max) so far, and max: the maximum so far.
      float max = -std::numeric_limits<float>::infinity();
      F32x8 sum{};
      for (int64_t begin = 0; begin < classes; begin += segment) {
        const int64_t length = std::min(segment, classes - begin);
        const float segment_max = next_max;
        if (segment_max > max) {
          // The sum so far, rescaled to the new maximum: exp(old - new) < 1, at most once
          // per segment (sum is 0 before the first).
          if (begin > 0) sum *= Exp(Splat<F32x8>(max - segment_max));
          max = segment_max;
        }
        // The next segment: the rest of this row, else the next row's first.
        const float* next = in + begin + length;
        int64_t next_length = std::min(segment, classes - begin - length);
        if (next_length == 0 && row + 1 < rows) next_length = segment;
        if (max == -std::numeric_limits<float>::infinity()) {
          // Every logit so far -inf (masked): they add 0, and x - max would be NaN.
          next_max = RowMax(next, next_length);
          continue;
        }
#if defined(OF_AVX512_CODE)
        if (avx512) {
          sum += SumExpShiftedAndMax512(in + begin, length, max, next, next_length, &next_max);
          continue;
        }
#endif
        sum += SumExpShiftedAndMax(in + begin, length, max, next, next_length, &next_max);
      }
      out[row] = (max - in[labels[row]]) + std::log(Sum(sum));
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
