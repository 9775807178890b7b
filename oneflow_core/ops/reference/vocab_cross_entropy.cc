// Reference kernels of the vocab-parallel cross-entropy's ops
// (oneflow_core/ops/vocab_cross_entropy.cc). vocab_cross_entropy and its gradient read
// the logits' offset on the class axis from the input layout: labels are logical classes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

int64_t Width(const Dense& x) { return x.shape.dim(x.shape.rank() - 1); }

// The logits' class columns [begin, begin + width) within `classes` logical ones.
struct ClassSlice {
  int64_t begin = 0;
  int64_t width = 0;
  int64_t classes = 0;
};

ClassSlice ClassesOf(const KernelArgs& args) {
  const int64_t last = args.in(0).shape.rank() - 1;
  return {args.input_layouts[0].slice.range(last).begin, Width(args.in(0)),
          args.input_layouts[0].logical.dim(last)};
}

absl::Status CheckLabel(double label, int64_t row, int64_t classes) {
  if (label >= 0 && label < classes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("label ", label, " at index ", row,
                                                 " is out of range; valid: 0..", classes - 1));
}

}  // namespace

Outputs ReduceMax(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const int64_t width = Width(x);
  Dense out = args.NewOutput(0);
  for (int64_t row = 0; row < out.shape.NumElements(); ++row) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < width; ++j) max = std::max(max, x.values[row * width + j]);
    out.values[row] = max;
  }
  return std::vector<Dense>{out};
}

Outputs Log(const KernelArgs& args) {
  return std::vector<Dense>{Map(args.in(0), [](double x) { return std::log(x); })};
}

Outputs VocabCrossEntropy(const KernelArgs& args) {
  const Dense& logits = args.in(0);
  const ClassSlice slice = ClassesOf(args);
  Dense sum_exp = args.NewOutput(0);
  Dense target = args.NewOutput(1);
  for (int64_t row = 0; row < sum_exp.shape.NumElements(); ++row) {
    const double shift = args.in(2).values[row];
    const double* x = &logits.values[row * slice.width];
    for (int64_t j = 0; j < slice.width; ++j) sum_exp.values[row] += std::exp(x[j] - shift);
    const double label = args.in(1).values[row];
    if (absl::Status status = CheckLabel(label, row, slice.classes); !status.ok()) return status;
    const int64_t local = static_cast<int64_t>(label) - slice.begin;
    if (local >= 0 && local < slice.width) target.values[row] = x[local] - shift;
  }
  return std::vector<Dense>{sum_exp, target};
}

Outputs VocabCrossEntropyGrad(const KernelArgs& args) {
  const ClassSlice slice = ClassesOf(args);
  Dense dlogits = args.in(0);
  for (int64_t row = 0; row < args.in(1).shape.NumElements(); ++row) {
    const double shift = args.in(2).values[row];
    const double dsum_exp = args.in(3).values[row];
    double* x = &dlogits.values[row * slice.width];
    for (int64_t j = 0; j < slice.width; ++j) x[j] = dsum_exp * std::exp(x[j] - shift);
    const double label = args.in(1).values[row];
    if (absl::Status status = CheckLabel(label, row, slice.classes); !status.ok()) return status;
    const int64_t local = static_cast<int64_t>(label) - slice.begin;
    if (local >= 0 && local < slice.width) x[local] += args.in(4).values[row];
  }
  return std::vector<Dense>{dlogits};
}

}  // namespace reference
}  // namespace oneflow
