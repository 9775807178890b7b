// CPU kernels of ring attention's ops (oneflow_core/ops/ring_attention.cc): ring_shift
// copies the block the compiler's send/recv delivered, or rolls a tensor whole along the
// axis; ring_causal_mask masks each block pair of one ring step by logical positions.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
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

}  // namespace cpu
}  // namespace oneflow
