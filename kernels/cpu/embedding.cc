// embedding(table, ids) gathers table rows; embedding_grad(ids, dy; vocab) scatter-adds
// dy's rows into a zeroed table gradient. Both know which rows of the logical table
// their device holds (the table's, or the gradient's, layout slice), so a vocab-parallel
// table (S(0)) works: the forward writes zeros for ids it does not hold (a partial sum
// over devices) and the backward adds only the rows it holds. Ids are checked against
// the logical vocabulary, not the device's rows.
#include <algorithm>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {
namespace {

template <typename Index>
absl::Status CheckId(const char* kernel, Index id, int64_t index, int64_t vocab) {
  if (id >= 0 && id < vocab) return absl::OkStatus();
  return KernelError(kernel, "id ", id, " at index ", index, " is out of range; valid: 0..",
                     vocab - 1);
}

// ids' shape plus a trailing axis of `hidden`.
Shape WithHidden(const Shape& ids, int64_t hidden) {
  std::vector<int64_t> dims = ids.dims();
  dims.push_back(hidden);
  return Shape(std::move(dims));
}

}  // namespace

absl::Status Embedding(const KernelContext& context) {
  constexpr char kKernel[] = "embedding";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"table"}, {"ids", ArgKind::kIndex}}, {{"out"}}));
  const KernelArgument& table = context.inputs[0];
  if (table.shape.rank() != 2) {
    return KernelError(kKernel, "input 'table' must have rank 2, got ", table.shape.ToString());
  }
  OF_RETURN_IF_ERROR(CheckLayout(kKernel, "table", table));
  const int64_t hidden = table.shape.dim(1);
  const Shape& ids_shape = context.inputs[1].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape,
                                WithHidden(ids_shape, hidden), "ids' shape plus table columns"));
  const Range rows = table.layout.slice.range(0);
  const int64_t vocab = table.layout.logical.dim(0);
  const float* weights = table.As<const float>();
  float* out = context.outputs[0].As<float>();
  return WithIndices(context.inputs[1], [&](const auto* ids) -> absl::Status {
    for (int64_t i = 0; i < ids_shape.NumElements(); ++i) {
      OF_RETURN_IF_ERROR(CheckId(kKernel, ids[i], i, vocab));
      float* to = out + i * hidden;
      const int64_t row = ids[i];
      if (row < rows.begin || row >= rows.end) {
        std::fill(to, to + hidden, 0.0f);
      } else {
        const float* from = weights + (row - rows.begin) * hidden;
        std::copy(from, from + hidden, to);
      }
    }
    return absl::OkStatus();
  });
}

absl::Status EmbeddingGrad(const KernelContext& context) {
  constexpr char kKernel[] = "embedding_grad";
  OF_RETURN_IF_ERROR(
      CheckArguments(kKernel, context, {{"ids", ArgKind::kIndex}, {"dy"}}, {{"dtable"}}));
  const KernelArgument& dtable = context.outputs[0];
  if (dtable.shape.rank() != 2) {
    return KernelError(kKernel, "output 'dtable' must have rank 2, got ", dtable.shape.ToString());
  }
  OF_RETURN_IF_ERROR(CheckLayout(kKernel, "dtable", dtable));
  const int64_t hidden = dtable.shape.dim(1);
  const Shape& ids_shape = context.inputs[0].shape;
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "dy", context.inputs[1].shape,
                                WithHidden(ids_shape, hidden), "ids' shape plus dtable columns"));
  const int64_t vocab = GetIntAttr(AttrsOf(context), "vocab", 0);
  if (vocab <= 0) return KernelError(kKernel, "attribute vocab=", vocab, " must be > 0");
  const Range rows = dtable.layout.slice.range(0);
  const float* dy = context.inputs[1].As<const float>();
  float* out = dtable.As<float>();
  std::fill(out, out + dtable.NumElements(), 0.0f);
  return WithIndices(context.inputs[0], [&](const auto* ids) -> absl::Status {
    for (int64_t i = 0; i < ids_shape.NumElements(); ++i) {
      OF_RETURN_IF_ERROR(CheckId(kKernel, ids[i], i, vocab));
      const int64_t row = ids[i];
      if (row < rows.begin || row >= rows.end) continue;
      float* to = out + (row - rows.begin) * hidden;
      const float* from = dy + i * hidden;
      for (int64_t j = 0; j < hidden; ++j) to[j] += from[j];
    }
    return absl::OkStatus();
  });
}

}  // namespace cpu
}  // namespace oneflow
