// Kernels that move elements without arithmetic: reshape and identity (copies),
// transpose, slice, slice_grad (zero padding) and concat. They index by physical shapes,
// like the reference: on a device an axis the op keeps whole is whole in the slice, so
// slice's `begin` applies to the physical tensor unchanged. Runs of contiguous elements
// are copied with std::copy (memmove); transposes that move the last axis go in tiles
// (transpose_plane.h).
//
// All but slice_grad (a gradient) move f32, i32 and i64 alike: ids and labels get
// reshaped, transposed, sliced and concatenated too (a token batch flattened for the
// loss). Elements are copied as 4- or 8-byte unsigned words (WithWord), whatever they mean.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_join.h"
#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/stream_store.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/transpose_plane.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

// Calls fn(T{}) with T the unsigned word of `dtype`'s size: f32 and i32 are copied as
// uint32_t, i64 as uint64_t (CheckArguments with ArgKind::kAny allows only these).
template <typename Fn>
void WithWord(DType dtype, Fn&& fn) {
  if (SizeOf(dtype) == 8) {
    fn(uint64_t{});
  } else {
    fn(uint32_t{});
  }
}

// out = x element for element, for equal element counts and dtypes.
absl::Status Copy(const KernelContext& context, const char* kernel) {
  OF_RETURN_IF_ERROR(
      CheckArguments(kernel, context, {{"x", ArgKind::kAny}}, {{"out", ArgKind::kAny}}));
  const KernelArgument& x = context.inputs[0];
  const KernelArgument& out = context.outputs[0];
  if (x.NumElements() != out.NumElements()) {
    return KernelError(kernel, "cannot copy x ", x.shape.ToString(), " (", x.NumElements(),
                       " elements) to out ", out.shape.ToString(), " (", out.NumElements(),
                       " elements)");
  }
  if (x.NumElements() > 0) {
    std::memcpy(out.data, x.data, static_cast<size_t>(x.NumElements() * SizeOf(x.dtype)));
  }
  return absl::OkStatus();
}

// Copies the index space `dims`, contiguous on the destination side, from `source`
// walked with `source_strides` (or the reverse when `scatter`: from a contiguous source
// into `destination` walked with the strides).
template <typename T>
void StridedCopy(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                 const T* source, T* destination, bool scatter) {
  const StridedLoop loop(dims, {strides});
  const int64_t n = loop.inner();
  const int64_t stride = loop.inner_stride(0);
  const int64_t run_bytes = n * static_cast<int64_t>(sizeof(T));
  if (stride == 1 && !scatter && run_bytes < 4096) {
    // Short runs gathered from strided places (attention's [0, 2, 1, 3] copies rows of
    // 64 floats, 4 KiB apart): each run starts in a new place the hardware prefetchers
    // do not predict, so the source of the run ~2 KiB ahead is prefetched.
    const int64_t ahead = std::min<int64_t>(16, 2048 / std::max<int64_t>(run_bytes, 1) + 1);
    const auto prefetch = [&](const int64_t* ahead_offsets) {
      const char* next = reinterpret_cast<const char*>(source + ahead_offsets[0]);
      for (int64_t byte = 0; byte < run_bytes; byte += 64) __builtin_prefetch(next + byte);
    };
    if constexpr (std::is_same_v<T, uint32_t>) {
      if (n % kLanes == 0 && ShouldStream(loop.runs() * run_bytes)) {
        // The runs one after another fill the destination: one streaming writer through
        // all of it (stream_store.h), the words moved as floats (bits unchanged).
        LaneWriter<true> writer(reinterpret_cast<float*>(destination));
        loop.ForEachRunLookingAhead(
            ahead, [&](int64_t, const int64_t* offsets, const int64_t* ahead_offsets) {
              prefetch(ahead_offsets);
              const float* from = reinterpret_cast<const float*>(source + offsets[0]);
              for (int64_t i = 0; i < n; i += kLanes) writer.Put(Load(from + i));
            });
        writer.Finish();
        EndStreaming();
        return;
      }
    }
    loop.ForEachRunLookingAhead(
        ahead, [&](int64_t run, const int64_t* offsets, const int64_t* ahead_offsets) {
          prefetch(ahead_offsets);
          std::copy(source + offsets[0], source + offsets[0] + n, destination + run * n);
        });
    return;
  }
  loop.ForEachRun([&](int64_t run, const int64_t* offsets) {
    const T* from = scatter ? source + run * n : source + offsets[0];
    T* to = scatter ? destination + offsets[0] : destination + run * n;
    if (stride == 1) {
      std::copy(from, from + n, to);
    } else if (scatter) {
      for (int64_t i = 0; i < n; ++i) to[i * stride] = from[i];
    } else {
      for (int64_t i = 0; i < n; ++i) to[i] = from[i * stride];
    }
  });
}

// A transpose that moves the source's contiguous axis away from the end: the plane of the
// output's last axis q and the source's contiguous axis p is copied by TransposePlane
// (transpose_plane.h: tiles, 8 x 8 register blocks). The other axes are walked by an
// odometer.
template <bool kStream, typename T>
void TiledTranspose(const StridedLoop& loop, const T* source, T* destination) {
  const std::vector<int64_t>& dims = loop.dims();
  const std::vector<int64_t>& source_strides = loop.strides(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t q = rank - 1;
  const int64_t p = std::find(source_strides.begin(), source_strides.end(), 1) -
                    source_strides.begin();  // < q: the caller checked inner_stride != 1.
  const std::vector<int64_t> destination_strides = Shape(dims).Strides();
  std::vector<int64_t> outer;  // The axes other than p and q.
  for (int64_t axis = 0; axis < q; ++axis) {
    if (axis != p) outer.push_back(axis);
  }
  std::vector<int64_t> index(outer.size(), 0);
  int64_t from = 0, to = 0;
  while (true) {
    TransposePlane<kStream>(source + from, source_strides[q], destination + to,
                            destination_strides[p], dims[p], dims[q]);
    int64_t k = static_cast<int64_t>(outer.size()) - 1;
    for (; k >= 0; --k) {
      const int64_t axis = outer[k];
      from += source_strides[axis];
      to += destination_strides[axis];
      if (++index[k] < dims[axis]) break;
      from -= source_strides[axis] * dims[axis];
      to -= destination_strides[axis] * dims[axis];
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

// begin (one entry per axis) places a box of shape `box` inside `whole`.
absl::Status CheckBox(const char* kernel, const std::vector<int64_t>& begin, const Shape& box,
                      const Shape& whole) {
  bool fits = static_cast<int64_t>(begin.size()) == whole.rank() && box.rank() == whole.rank();
  for (int64_t axis = 0; fits && axis < whole.rank(); ++axis) {
    fits = begin[axis] >= 0 && begin[axis] + box.dim(axis) <= whole.dim(axis);
  }
  if (fits) return absl::OkStatus();
  return KernelError(kernel, "a box of shape ", box.ToString(), " at begin=[",
                     absl::StrJoin(begin, ", "), "] does not fit in ", whole.ToString());
}

// Offset of `begin` and the row-major strides of `whole`.
int64_t BoxOffset(const std::vector<int64_t>& begin, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t axis = 0; axis < begin.size(); ++axis) offset += begin[axis] * strides[axis];
  return offset;
}

}  // namespace

absl::Status Reshape(const KernelContext& context) { return Copy(context, "reshape"); }

absl::Status Identity(const KernelContext& context) {
  if (context.inputs.size() == 1 && context.outputs.size() == 1) {
    OF_RETURN_IF_ERROR(CheckShape("identity", "out", context.outputs[0].shape,
                                  context.inputs[0].shape, "x's shape"));
  }
  return Copy(context, "identity");
}

// out.dim(j) = x.dim(perm[j]): walk the output in order, x at its permuted strides.
absl::Status Transpose(const KernelContext& context) {
  constexpr char kKernel[] = "transpose";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"x", ArgKind::kAny}}, {{"out", ArgKind::kAny}}));
  const Shape& x = context.inputs[0].shape;
  const std::vector<int64_t> perm = GetIntsAttr(AttrsOf(context), "perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = static_cast<int64_t>(perm.size()) == x.rank();
  for (int64_t i = 0; is_permutation && i < x.rank(); ++i) is_permutation = sorted[i] == i;
  if (!is_permutation) {
    return KernelError(kKernel, "attribute perm=[", absl::StrJoin(perm, ", "),
                       "] is not a permutation of the axes of x ", x.ToString());
  }
  const std::vector<int64_t> x_strides = x.Strides();
  std::vector<int64_t> dims, strides;
  for (int64_t axis : perm) {
    dims.push_back(x.dim(axis));
    strides.push_back(x_strides[axis]);
  }
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "out", context.outputs[0].shape, Shape(dims), "x's dimensions permuted"));
  const StridedLoop loop(dims, {strides});
  WithWord(context.inputs[0].dtype, [&](auto word) {
    using T = decltype(word);
    const T* in = context.inputs[0].As<const T>();
    T* out = context.outputs[0].As<T>();
    if (loop.runs() > 0 && loop.inner_stride(0) != 1) {
      WithStreaming(ShouldStream(context.outputs[0].NumElements() * int64_t{sizeof(T)}),
                    [&](auto stream) { TiledTranspose<stream()>(loop, in, out); });
    } else {
      StridedCopy(dims, strides, in, out, /*scatter=*/false);
    }
  });
  return absl::OkStatus();
}

// out = x[begin : begin + out.shape].
absl::Status Slice(const KernelContext& context) {
  constexpr char kKernel[] = "slice";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"x", ArgKind::kAny}}, {{"out", ArgKind::kAny}}));
  const Shape& x = context.inputs[0].shape;
  const Shape& out = context.outputs[0].shape;
  const std::vector<int64_t> begin = GetIntsAttr(AttrsOf(context), "begin");
  OF_RETURN_IF_ERROR(CheckBox(kKernel, begin, out, x));
  const std::vector<int64_t> strides = x.Strides();
  WithWord(context.inputs[0].dtype, [&](auto word) {
    using T = decltype(word);
    StridedCopy(out.dims(), strides, context.inputs[0].As<const T>() + BoxOffset(begin, strides),
                context.outputs[0].As<T>(), /*scatter=*/false);
  });
  return absl::OkStatus();
}

// dx = zeros of like's shape with dy placed at begin.
absl::Status SliceGrad(const KernelContext& context) {
  constexpr char kKernel[] = "slice_grad";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"dy"}, {"like"}}, {{"dx"}}));
  const Shape& dy = context.inputs[0].shape;
  const Shape& dx = context.outputs[0].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dx", dx, context.inputs[1].shape, "like's shape"));
  const std::vector<int64_t> begin = GetIntsAttr(AttrsOf(context), "begin");
  OF_RETURN_IF_ERROR(CheckBox(kKernel, begin, dy, dx));
  float* out = context.outputs[0].As<float>();
  std::fill(out, out + dx.NumElements(), 0.0f);
  const std::vector<int64_t> strides = dx.Strides();
  StridedCopy(dy.dims(), strides, context.inputs[0].As<const float>(),
              out + BoxOffset(begin, strides), /*scatter=*/true);
  return absl::OkStatus();
}

// out = [a, b] along `axis`: per index of the axes before it, a's block then b's.
absl::Status Concat(const KernelContext& context) {
  constexpr char kKernel[] = "concat";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"a", ArgKind::kAny}, {"b", ArgKind::kAny}},
                                    {{"out", ArgKind::kAny}}));
  const Shape& a = context.inputs[0].shape;
  const Shape& b = context.inputs[1].shape;
  if (a.rank() < 1 || b.rank() != a.rank()) {
    return KernelError(kKernel, "inputs 'a' ", a.ToString(), " and 'b' ", b.ToString(),
                       " must have the same rank >= 1");
  }
  absl::StatusOr<int64_t> axis =
      op_util::NormalizeAxis("axis", GetIntAttr(AttrsOf(context), "axis", 0), a.rank());
  if (!axis.ok()) return KernelError(kKernel, axis.status().message());
  std::vector<int64_t> dims = a.dims();
  dims[*axis] += b.dim(*axis);
  Shape b_expected = Shape(dims);
  b_expected.set_dim(*axis, b.dim(*axis));
  OF_RETURN_IF_ERROR(
      CheckShape(kKernel, "b", b, b_expected, "a's shape except along the concat axis"));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, Shape(dims),
                                "a and b joined along axis"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < *axis; ++i) outer *= a.dim(i);
  for (int64_t i = *axis + 1; i < a.rank(); ++i) inner *= a.dim(i);
  // Blocks in bytes: the copy is the same for every dtype.
  const int64_t size = SizeOf(context.inputs[0].dtype);
  const int64_t a_block = a.dim(*axis) * inner * size;
  const int64_t b_block = b.dim(*axis) * inner * size;
  const char* a_data = context.inputs[0].As<const char>();
  const char* b_data = context.inputs[1].As<const char>();
  char* out = context.outputs[0].As<char>();
  for (int64_t o = 0; o < outer; ++o) {
    char* to = out + o * (a_block + b_block);
    std::copy(a_data + o * a_block, a_data + (o + 1) * a_block, to);
    std::copy(b_data + o * b_block, b_data + (o + 1) * b_block, to + a_block);
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
