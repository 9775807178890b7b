// The vocab-parallel cross-entropy's kernels on f32 (oneflow_core/ops/vocab_cross_entropy.cc):
// reduce_max and log, and vocab_cross_entropy(_grad), which work on the local slice of the
// class axis: the labels are logical classes, the slice's first class comes from the
// logits' layout, and a device adds the label's logit only when it owns that class.
// Sums of exponentials go 8 lanes at a time (vector_math.h's Exp) into double per row.
#include <cmath>
#include <limits>

#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/normalization_util.h"
#include "kernels/cpu/vector_math.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

Shape RowsShape(const Shape& shape) {
  return Shape(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
}

// Checks the shapes and layout shared by vocab_cross_entropy and its gradient: logits
// [..., c] (a slice of the class axis), labels and the other row inputs [...].
absl::Status CheckVocabArguments(const char* kernel, const KernelContext& context,
                                 const char* const* row_names, size_t row_inputs) {
  const KernelArgument& logits = context.inputs[0];
  if (logits.shape.rank() < 1) return KernelError(kernel, "input 'logits' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckLayout(kernel, "logits", logits));
  const Shape rows = RowsShape(logits.shape);
  for (size_t k = 1; k < row_inputs; ++k) {
    OF_RETURN_IF_ERROR(CheckShape(kernel, row_names[k], context.inputs[k].shape, rows,
                                  "logits without the class axis"));
  }
  return absl::OkStatus();
}

// sum_j exp(x_j - shift) over n floats: whole vectors through Exp, the tail scalar.
double SumExpShifted(const float* x, int64_t n, float shift) {
  const F32x8 shift8 = Splat<F32x8>(shift);
  F32x8 sum{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) sum += Exp(Load(x + j) - shift8);
  double total = Sum(sum);
  for (; j < n; ++j) total += std::exp(static_cast<double>(x[j]) - shift);
  return total;
}

}  // namespace

absl::Status ReduceMax(const KernelContext& context) {
  constexpr char kKernel[] = "reduce_max";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  const Shape& shape = context.inputs[0].shape;
  if (shape.rank() < 1) return KernelError(kKernel, "input 'x' must have rank >= 1, got []");
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, RowsShape(shape),
                                "x without its last axis"));
  const int64_t width = LastDim(shape);
  const float* x = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = context.outputs[0].NumElements();
  for (int64_t row = 0; row < rows; ++row) out[row] = RowMax(x + row * width, width);
  return absl::OkStatus();
}

absl::Status Log(const KernelContext& context) {
  constexpr char kKernel[] = "log";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, context.inputs[0].shape,
                                "the shape of x"));
  const float* x = context.inputs[0].As<const float>();
  float* out = context.outputs[0].As<float>();
  for (int64_t i = 0; i < context.inputs[0].NumElements(); ++i) out[i] = std::log(x[i]);
  return absl::OkStatus();
}

absl::Status VocabCrossEntropy(const KernelContext& context) {
  constexpr char kKernel[] = "vocab_cross_entropy";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context,
                                    {{"logits"}, {"labels", ArgKind::kIndex}, {"shift"}},
                                    {{"sum_exp"}, {"target"}}));
  static const char* const kNames[] = {"logits", "labels", "shift"};
  OF_RETURN_IF_ERROR(CheckVocabArguments(kKernel, context, kNames, 3));
  const KernelArgument& logits = context.inputs[0];
  const Shape rows_shape = RowsShape(logits.shape);
  for (int k = 0; k < 2; ++k) {
    OF_RETURN_IF_ERROR(CheckShape(kKernel, k == 0 ? "sum_exp" : "target", context.outputs[k].shape,
                                  rows_shape, "logits without the class axis"));
  }
  const int64_t last = logits.shape.rank() - 1;
  const int64_t width = LastDim(logits.shape);
  const int64_t begin = logits.layout.slice.range(last).begin;
  const int64_t classes = logits.layout.logical.dim(last);
  const float* x = logits.As<const float>();
  const float* shift = context.inputs[2].As<const float>();
  float* sum_exp = context.outputs[0].As<float>();
  float* target = context.outputs[1].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    const int64_t rows = rows_shape.NumElements();
    for (int64_t row = 0; row < rows; ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = x + row * width;
      sum_exp[row] = static_cast<float>(SumExpShifted(in, width, shift[row]));
      const int64_t local = static_cast<int64_t>(labels[row]) - begin;
      target[row] = local >= 0 && local < width ? in[local] - shift[row] : 0.0f;
    }
    return absl::OkStatus();
  });
}

absl::Status VocabCrossEntropyGrad(const KernelContext& context) {
  constexpr char kKernel[] = "vocab_cross_entropy_grad";
  OF_RETURN_IF_ERROR(CheckArguments(
      kKernel, context,
      {{"logits"}, {"labels", ArgKind::kIndex}, {"shift"}, {"dsum_exp"}, {"dtarget"}},
      {{"dlogits"}}));
  static const char* const kNames[] = {"logits", "labels", "shift", "dsum_exp", "dtarget"};
  OF_RETURN_IF_ERROR(CheckVocabArguments(kKernel, context, kNames, 5));
  const KernelArgument& logits = context.inputs[0];
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dlogits", context.outputs[0].shape, logits.shape,
                                "the shape of logits"));
  const int64_t last = logits.shape.rank() - 1;
  const int64_t width = LastDim(logits.shape);
  const int64_t begin = logits.layout.slice.range(last).begin;
  const int64_t classes = logits.layout.logical.dim(last);
  const float* x = logits.As<const float>();
  const float* shift = context.inputs[2].As<const float>();
  const float* dsum_exp = context.inputs[3].As<const float>();
  const float* dtarget = context.inputs[4].As<const float>();
  float* dx = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* labels) -> absl::Status {
    const int64_t rows = RowsShape(logits.shape).NumElements();
    for (int64_t row = 0; row < rows; ++row) {
      OF_RETURN_IF_ERROR(CheckClass(kKernel, labels[row], row, classes));
      const float* in = x + row * width;
      float* out = dx + row * width;
      const F32x8 shift8 = Splat<F32x8>(shift[row]);
      const F32x8 scale8 = Splat<F32x8>(dsum_exp[row]);
      int64_t j = 0;
      for (; j + kLanes <= width; j += kLanes) Store(out + j, scale8 * Exp(Load(in + j) - shift8));
      for (; j < width; ++j) out[j] = dsum_exp[row] * std::exp(in[j] - shift[row]);
      const int64_t local = static_cast<int64_t>(labels[row]) - begin;
      if (local >= 0 && local < width) out[local] += dtarget[row];
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
