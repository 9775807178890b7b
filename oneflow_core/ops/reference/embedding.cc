// Reference embedding and embedding_grad. The table's device slice gives the rows (and
// columns) a device holds: rows outside it gather zeros (forward) or are skipped
// (backward), which is what makes vocab-parallel tables work.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

absl::Status CheckId(double id, int64_t index, int64_t vocab) {
  if (id >= 0 && id < vocab) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("id ", id, " at index ", index,
                                                 " is out of range; valid: 0..", vocab - 1));
}

}  // namespace

Outputs Embedding(const KernelArgs& args) {
  const Dense& table = args.in(0);
  const Dense& ids = args.in(1);
  const Range rows = args.input_layouts[0].slice.range(0);
  const int64_t vocab = args.input_layouts[0].logical.dim(0);
  const int64_t hidden = table.shape.dim(1);
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < ids.shape.NumElements(); ++i) {
    if (absl::Status status = CheckId(ids.values[i], i, vocab); !status.ok()) return status;
    const int64_t row = static_cast<int64_t>(ids.values[i]);
    if (row < rows.begin || row >= rows.end) continue;
    for (int64_t j = 0; j < hidden; ++j) {
      out.values[i * hidden + j] = table.values[(row - rows.begin) * hidden + j];
    }
  }
  return std::vector<Dense>{out};
}

Outputs EmbeddingGrad(const KernelArgs& args) {
  const Dense& ids = args.in(0);
  const Dense& dy = args.in(1);
  const Range rows = args.output_layouts[0].slice.range(0);
  const int64_t vocab = GetIntAttr(args.attrs, "vocab", 0);
  Dense dtable = args.NewOutput(0);
  const int64_t hidden = dtable.shape.dim(1);
  for (int64_t i = 0; i < ids.shape.NumElements(); ++i) {
    if (absl::Status status = CheckId(ids.values[i], i, vocab); !status.ok()) return status;
    const int64_t row = static_cast<int64_t>(ids.values[i]);
    if (row < rows.begin || row >= rows.end) continue;
    for (int64_t j = 0; j < hidden; ++j) {
      dtable.values[(row - rows.begin) * hidden + j] += dy.values[i * hidden + j];
    }
  }
  return std::vector<Dense>{dtable};
}

}  // namespace reference
}  // namespace oneflow
