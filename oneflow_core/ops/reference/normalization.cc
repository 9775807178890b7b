// Reference kernels of the last-axis normalizations and their gradients. Every op
// works row by row, a row being the last axis (always whole on a device).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

int64_t Width(const Dense& x) { return x.shape.dim(x.shape.rank() - 1); }
int64_t Rows(const Dense& x) {
  const int64_t width = Width(x);
  return width == 0 ? 0 : x.shape.NumElements() / width;
}

// Softmax (or log-softmax) of each row, shifted by the row maximum for stability.
Dense RowSoftmax(const Dense& x, bool log) {
  Dense out = x;
  const int64_t width = Width(x);
  for (int64_t row = 0; row < Rows(x); ++row) {
    double* v = &out.values[row * width];
    double max = v[0], sum = 0;
    for (int64_t j = 0; j < width; ++j) max = std::max(max, v[j]);
    for (int64_t j = 0; j < width; ++j) sum += std::exp(v[j] - max);
    for (int64_t j = 0; j < width; ++j) {
      v[j] = log ? v[j] - max - std::log(sum) : std::exp(v[j] - max) / sum;
    }
  }
  return out;
}

absl::Status CheckClass(double label, int64_t index, int64_t classes) {
  if (label >= 0 && label < classes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("label ", label, " at index ", index,
                                                 " is out of range; valid: 0..", classes - 1));
}

}  // namespace

Outputs Softmax(const KernelArgs& args) {
  return std::vector<Dense>{RowSoftmax(args.in(0), /*log=*/false)};
}

Outputs LogSoftmax(const KernelArgs& args) {
  return std::vector<Dense>{RowSoftmax(args.in(0), /*log=*/true)};
}

Outputs LayerNorm(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const double epsilon = GetFloatAttr(args.attrs, "epsilon", 1e-5);
  const int64_t h = Width(x);
  Dense out = x;
  for (int64_t row = 0; row < Rows(x); ++row) {
    const double* v = &x.values[row * h];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < h; ++j) mean += v[j] / h;
    for (int64_t j = 0; j < h; ++j) var += (v[j] - mean) * (v[j] - mean) / h;
    const double rstd = 1 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < h; ++j) {
      out.values[row * h + j] = (v[j] - mean) * rstd * args.in(1).values[j] + args.in(2).values[j];
    }
  }
  return std::vector<Dense>{out};
}

Outputs SparseSoftmaxCrossEntropy(const KernelArgs& args) {
  const Dense log_probs = RowSoftmax(args.in(0), /*log=*/true);
  const int64_t classes = Width(args.in(0));
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    const double label = args.in(1).values[i];
    if (absl::Status status = CheckClass(label, i, classes); !status.ok()) return status;
    out.values[i] = -log_probs.values[i * classes + static_cast<int64_t>(label)];
  }
  return std::vector<Dense>{out};
}

// dx = y * (dy - sum_j dy_j y_j).
Outputs SoftmaxGrad(const KernelArgs& args) {
  const Dense& dy = args.in(0);
  const Dense& y = args.in(1);
  const int64_t width = Width(dy);
  Dense dx = dy;
  for (int64_t row = 0; row < Rows(dy); ++row) {
    double dot = 0;
    for (int64_t j = 0; j < width; ++j) dot += dy.values[row * width + j] * y.values[row * width + j];
    for (int64_t j = 0; j < width; ++j) {
      const int64_t i = row * width + j;
      dx.values[i] = y.values[i] * (dy.values[i] - dot);
    }
  }
  return std::vector<Dense>{dx};
}

// dx = dy - exp(y) * sum_j dy_j.
Outputs LogSoftmaxGrad(const KernelArgs& args) {
  const Dense& dy = args.in(0);
  const Dense& y = args.in(1);
  const int64_t width = Width(dy);
  Dense dx = dy;
  for (int64_t row = 0; row < Rows(dy); ++row) {
    double sum = 0;
    for (int64_t j = 0; j < width; ++j) sum += dy.values[row * width + j];
    for (int64_t j = 0; j < width; ++j) {
      const int64_t i = row * width + j;
      dx.values[i] = dy.values[i] - std::exp(y.values[i]) * sum;
    }
  }
  return std::vector<Dense>{dx};
}

// With xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum over rows of dy * xhat,  dbeta = sum over rows of dy.
Outputs LayerNormGrad(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const Dense& gamma = args.in(1);
  const Dense& dy = args.in(2);
  const double epsilon = GetFloatAttr(args.attrs, "epsilon", 1e-5);
  const int64_t h = Width(x);
  Dense dx = x;
  Dense dgamma = args.NewOutput(1);
  Dense dbeta = args.NewOutput(2);
  std::vector<double> xhat(h), g(h);
  for (int64_t row = 0; row < Rows(x); ++row) {
    const double* v = &x.values[row * h];
    const double* d = &dy.values[row * h];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < h; ++j) mean += v[j] / h;
    for (int64_t j = 0; j < h; ++j) var += (v[j] - mean) * (v[j] - mean) / h;
    const double rstd = 1 / std::sqrt(var + epsilon);
    double mean_g = 0, mean_gx = 0;
    for (int64_t j = 0; j < h; ++j) {
      xhat[j] = (v[j] - mean) * rstd;
      g[j] = d[j] * gamma.values[j];
      mean_g += g[j] / h;
      mean_gx += g[j] * xhat[j] / h;
      dgamma.values[j] += d[j] * xhat[j];
      dbeta.values[j] += d[j];
    }
    for (int64_t j = 0; j < h; ++j) {
      dx.values[row * h + j] = rstd * (g[j] - mean_g - xhat[j] * mean_gx);
    }
  }
  return std::vector<Dense>{dx, dgamma, dbeta};
}

// dlogits = (softmax(logits) - one_hot(labels)) * dy.
Outputs SparseSoftmaxCrossEntropyGrad(const KernelArgs& args) {
  Dense dlogits = RowSoftmax(args.in(0), /*log=*/false);
  const int64_t classes = Width(args.in(0));
  for (int64_t row = 0; row < Rows(args.in(0)); ++row) {
    const double label = args.in(1).values[row];
    if (absl::Status status = CheckClass(label, row, classes); !status.ok()) return status;
    dlogits.values[row * classes + static_cast<int64_t>(label)] -= 1;
    for (int64_t j = 0; j < classes; ++j) dlogits.values[row * classes + j] *= args.in(2).values[row];
  }
  return std::vector<Dense>{dlogits};
}

}  // namespace reference
}  // namespace oneflow
