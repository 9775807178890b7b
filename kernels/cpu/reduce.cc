// Reductions and their inverse: reduce_sum and reduce_mean over attribute axes,
// reduce_sum_like (sum over the axes along which `like` broadcasts: the gradient of a
// broadcasting binary op) and broadcast_like (spread over the axes a reduction removed:
// the gradient of reduce_sum/reduce_mean).
//
// A reduction walks its input once with StridedLoop, the output at stride 0 along
// reduced axes, and accumulates in double: reductions feed losses and bias/weight
// gradients summed over a whole device batch, where float accumulation of many terms
// would drift from the reference by more than a few ulp.
#include <algorithm>

#include "absl/strings/str_join.h"
#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/stream_store.h"
#include "kernels/cpu/strided_loop.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// out = scale * sum of x over the index space of x's shape, x element c landing at
// output offset sum(c[axis] * out_strides[axis]).
void SumInto(const KernelArgument& x, const std::vector<int64_t>& out_strides, double scale,
             const KernelArgument& out) {
  std::vector<double> sums(out.NumElements(), 0.0);
  const StridedLoop loop(x.shape.dims(), {out_strides});
  const int64_t n = loop.inner();
  const float* in = x.As<const float>();
  if (loop.inner_stride(0) == 0) {
    loop.ForEachRun([&](int64_t run, const int64_t* offsets) {
      const float* from = in + run * n;
      double sum = 0.0;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < n; ++i) sum += from[i];
      sums[offsets[0]] += sum;
    });
  } else if (loop.inner_stride(0) == 1) {
    // Runs that land on the same outputs (every row of a column sum, as bias gradients
    // are) are added to the double sums one by one while those fit in the L1 cache
    // (runs of up to 2048), or else eight at a time: one pass over the sums per eight
    // runs rather than per run, which was half the time of a [4096, 4096] column sum.
    // (Several at a time reads several streams, which is slower than one when the sums
    // are cached. Eight: 0.19-0.20 ns per element on [4096, 4096]; four: 0.21-0.23.)
    constexpr int kMost = 8;
    const int group = n <= 2048 ? 1 : kMost;
    const float* pending[kMost] = {};
    int count = 0;
    int64_t pending_offset = 0;
    auto flush = [&] {
      double* to = sums.data() + pending_offset;
      if (count == kMost) {
        const float *a = pending[0], *b = pending[1], *c = pending[2], *d = pending[3];
        const float *e = pending[4], *f = pending[5], *g = pending[6], *h = pending[7];
        for (int64_t i = 0; i < n; ++i) {
          to[i] += ((static_cast<double>(a[i]) + b[i]) + (static_cast<double>(c[i]) + d[i])) +
                   ((static_cast<double>(e[i]) + f[i]) + (static_cast<double>(g[i]) + h[i]));
        }
      } else {
        for (int k = 0; k < count; ++k) {
          for (int64_t i = 0; i < n; ++i) to[i] += pending[k][i];
        }
      }
      count = 0;
    };
    loop.ForEachRun([&](int64_t run, const int64_t* offsets) {
      if (count > 0 && (count == group || offsets[0] != pending_offset)) flush();
      pending[count++] = in + run * n;
      pending_offset = offsets[0];
    });
    if (count > 0) flush();
  } else {
    // Not produced by the kernels here (the output is row-major in the kept axes), but
    // any stride is correct.
    const int64_t stride = loop.inner_stride(0);
    loop.ForEachRun([&](int64_t run, const int64_t* offsets) {
      const float* from = in + run * n;
      double* to = sums.data() + offsets[0];
      for (int64_t i = 0; i < n; ++i) to[i * stride] += from[i];
    });
  }
  float* result = out.As<float>();
  for (size_t i = 0; i < sums.size(); ++i) result[i] = static_cast<float>(sums[i] * scale);
}

// reduce_sum / reduce_mean: `axes` (empty: all) with or without keep_dims. The mean
// divides by the logical count of reduced elements, so devices holding parts of a
// reduced axis produce partial sums that add up to the mean.
absl::Status Reduce(const KernelContext& context, const char* kernel, bool mean) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{"x"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  const AttrMap& attrs = AttrsOf(context);
  absl::StatusOr<std::vector<int64_t>> axes = op_util::NormalizeAxes(
      "axes", GetIntsAttr(attrs, "axes"), x.shape.rank(), /*empty_means_all=*/true);
  if (!axes.ok()) return KernelError(kernel, axes.status().message());
  const bool keep_dims = GetBoolAttr(attrs, "keep_dims", false);
  std::vector<int64_t> dims;
  std::vector<bool> reduced(x.shape.rank());
  for (int64_t axis = 0; axis < x.shape.rank(); ++axis) {
    reduced[axis] = std::binary_search(axes->begin(), axes->end(), axis);
    if (!reduced[axis] || keep_dims) dims.push_back(reduced[axis] ? 1 : x.shape.dim(axis));
  }
  const Shape out_shape(dims);
  OF_RETURN_IF_ERROR(CheckShape(kernel, "out", context.outputs[0].shape, out_shape,
                                absl::StrCat("x ", x.shape.ToString(), " reduced over axes [",
                                             absl::StrJoin(*axes, ", "), "]")));
  // Output strides per input axis: 0 on reduced axes.
  const std::vector<int64_t> out_strides_by_out_axis = out_shape.Strides();
  std::vector<int64_t> out_strides(x.shape.rank(), 0);
  int64_t out_axis = 0;
  for (int64_t axis = 0; axis < x.shape.rank(); ++axis) {
    if (!reduced[axis]) out_strides[axis] = out_strides_by_out_axis[out_axis];
    if (!reduced[axis] || keep_dims) ++out_axis;
  }
  double scale = 1.0;
  if (mean) {
    OF_RETURN_IF_ERROR(CheckLayout(kernel, "x", x));
    double count = 1.0;
    for (int64_t axis : *axes) count *= static_cast<double>(x.layout.logical.dim(axis));
    scale = 1.0 / count;
  }
  SumInto(x, out_strides, scale, context.outputs[0]);
  return absl::OkStatus();
}

}  // namespace

absl::Status ReduceSum(const KernelContext& context) {
  return Reduce(context, "reduce_sum", /*mean=*/false);
}

absl::Status ReduceMean(const KernelContext& context) {
  return Reduce(context, "reduce_mean", /*mean=*/true);
}

// out (like's shape) = x summed over x's leading axes that like lacks and the axes where
// like has size 1.
absl::Status ReduceSumLike(const KernelContext& context) {
  constexpr char kKernel[] = "reduce_sum_like";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"like"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  const Shape& out = context.outputs[0].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", out, context.inputs[1].shape, "like's shape"));
  if (!BroadcastsTo(out, x.shape)) {
    return KernelError(kKernel, "like ", out.ToString(), " does not broadcast to x ",
                       x.shape.ToString());
  }
  SumInto(x, BroadcastStrides(out, x.shape.rank()), 1.0, context.outputs[0]);
  return absl::OkStatus();
}

// out[c] = x[c without the reduced axes], or with them at 0 when x kept them as size 1.
absl::Status BroadcastLike(const KernelContext& context) {
  constexpr char kKernel[] = "broadcast_like";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}, {"like"}}, {{"out"}}));
  const Shape& x = context.inputs[0].shape;
  const Shape& out = context.outputs[0].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", out, context.inputs[1].shape, "like's shape"));
  absl::StatusOr<std::vector<int64_t>> axes = op_util::NormalizeAxes(
      "axes", GetIntsAttr(AttrsOf(context), "axes"), out.rank(), /*empty_means_all=*/false);
  if (!axes.ok()) return KernelError(kKernel, axes.status().message());
  const bool keep_dims = x.rank() == out.rank();
  std::vector<int64_t> x_dims;     // The shape x must have.
  std::vector<int64_t> x_axis_of;  // For each output axis, x's axis or -1.
  for (int64_t axis = 0; axis < out.rank(); ++axis) {
    const bool reduced = std::binary_search(axes->begin(), axes->end(), axis);
    x_axis_of.push_back(reduced && !keep_dims ? -1 : static_cast<int64_t>(x_dims.size()));
    if (!reduced || keep_dims) x_dims.push_back(reduced ? 1 : out.dim(axis));
  }
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "x", x, Shape(x_dims),
                                absl::StrCat("like ", out.ToString(), " reduced over axes [",
                                             absl::StrJoin(*axes, ", "), "]")));
  const std::vector<int64_t> x_strides = x.Strides();
  std::vector<int64_t> strides(out.rank(), 0);
  for (int64_t axis = 0; axis < out.rank(); ++axis) {
    if (x_axis_of[axis] >= 0 && x.dim(x_axis_of[axis]) != 1) {
      strides[axis] = x_strides[x_axis_of[axis]];
    }
  }
  const StridedLoop loop(out.dims(), {strides});
  const int64_t n = loop.inner();
  const float* in = context.inputs[0].As<const float>();
  float* result = context.outputs[0].As<float>();
  const bool contiguous = loop.inner_stride(0) == 1;
  // Vector loops rather than memmove per run (runs of a few KiB, where memmove is slower
  // than a plain loop here), streaming when the output is large (stream_store.h).
  WithStreaming(ShouldStream(out.NumElements() * int64_t{sizeof(float)}), [&](auto stream) {
    loop.ForEachRun([&](int64_t run, const int64_t* offsets) {
      float* to = result + run * n;
      const float* from = in + offsets[0];
      if (contiguous) {
        WriteLanes<stream()>(
            to, n, [from](int64_t i, int64_t count) { return LoadLanes(from, i, count); });
      } else {
        const F32x8 value = Splat<F32x8>(*from);
        WriteLanes<stream()>(to, n, [value](int64_t, int64_t) { return value; });
      }
    });
  });
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
