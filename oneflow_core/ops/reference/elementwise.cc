// Reference kernels of the elementwise ops and their gradients.
#include <cmath>

#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/random.h"

namespace oneflow {
namespace reference {
namespace {

// The tanh approximation of GELU (Hendrycks & Gimpel), as GPT-2 uses.
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

double GeluValue(double x) {
  return 0.5 * x * (1 + std::tanh(kGeluScale * (x + kGeluCubic * x * x * x)));
}

double GeluDerivative(double x) {
  const double t = std::tanh(kGeluScale * (x + kGeluCubic * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kGeluScale * (1 + 3 * kGeluCubic * x * x);
}

Outputs Binary(const KernelArgs& args, const std::function<double(double, double)>& fn) {
  return std::vector<Dense>{
      BroadcastBinary(args.in(0), args.in(1), args.output_layouts[0].slice.shape(), fn)};
}

// dropout's mask times 1 / (1 - rate): an element of logical index i is kept iff
// LogicalRandom(seed, stream = step).BulkUniform(i) >= rate (word i mod 4 of Philox block
// i / 4), the same on every layout.
Dense ApplyDropoutMask(const Dense& x, const TensorLayout& layout, const AttrMap& attrs,
                       int64_t step) {
  const double rate = GetFloatAttr(attrs, "rate", 0.0);
  const LogicalRandom random(static_cast<uint64_t>(GetIntAttr(attrs, "seed", 0)),
                             static_cast<uint64_t>(step));
  Dense out = x;
  ForEachContiguousRun(layout.logical, layout.slice,
                       [&](int64_t local, int64_t offset, int64_t length) {
                         for (int64_t i = 0; i < length; ++i) {
                           const bool keep =
                               static_cast<double>(random.BulkUniform(offset + i)) >= rate;
                           out.values[local + i] = keep ? x.values[local + i] / (1 - rate) : 0.0;
                         }
                       });
  return out;
}

}  // namespace

Dense BroadcastBinary(const Dense& x, const Dense& y, const Shape& out_shape,
                      const std::function<double(double, double)>& fn) {
  Dense out = Dense::Zeros(out_shape, x.dtype);
  const Dense* in[2] = {&x, &y};
  for (int64_t i = 0; i < out_shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, out_shape);
    double args[2];
    for (int k = 0; k < 2; ++k) {
      const Shape& shape = in[k]->shape;
      std::vector<int64_t> ck(shape.rank());
      for (int64_t axis = 0; axis < shape.rank(); ++axis) {
        ck[axis] = shape.dim(axis) == 1 ? 0 : c[axis + out_shape.rank() - shape.rank()];
      }
      args[k] = in[k]->values[Ravel(ck, shape)];
    }
    out.values[i] = fn(args[0], args[1]);
  }
  return out;
}

Dense Map(const Dense& x, const std::function<double(double)>& fn) {
  Dense out = x;
  for (double& v : out.values) v = fn(v);
  return out;
}

Outputs Add(const KernelArgs& args) { return Binary(args, std::plus<double>()); }
Outputs Sub(const KernelArgs& args) { return Binary(args, std::minus<double>()); }
Outputs Mul(const KernelArgs& args) { return Binary(args, std::multiplies<double>()); }
Outputs Div(const KernelArgs& args) { return Binary(args, std::divides<double>()); }
Outputs BiasAdd(const KernelArgs& args) { return Binary(args, std::plus<double>()); }

Outputs Relu(const KernelArgs& args) {
  return std::vector<Dense>{Map(args.in(0), [](double x) { return x > 0 ? x : 0.0; })};
}

Outputs Gelu(const KernelArgs& args) { return std::vector<Dense>{Map(args.in(0), GeluValue)}; }

Outputs ScalarMul(const KernelArgs& args) {
  const double scalar = GetFloatAttr(args.attrs, "scalar", 0.0);
  return std::vector<Dense>{Map(args.in(0), [scalar](double x) { return x * scalar; })};
}

Outputs ScalarAdd(const KernelArgs& args) {
  const double scalar = GetFloatAttr(args.attrs, "scalar", 0.0);
  return std::vector<Dense>{Map(args.in(0), [scalar](double x) { return x + scalar; })};
}

Outputs Dropout(const KernelArgs& args) {
  return std::vector<Dense>{
      ApplyDropoutMask(args.in(0), args.input_layouts[0], args.attrs, args.step)};
}

Outputs DropoutGrad(const KernelArgs& args) {
  return std::vector<Dense>{
      ApplyDropoutMask(args.in(0), args.input_layouts[0], args.attrs, args.step)};
}

Outputs Identity(const KernelArgs& args) { return std::vector<Dense>{args.in(0)}; }

Outputs OnesLike(const KernelArgs& args) {
  Dense out = args.NewOutput(0);
  for (double& v : out.values) v = 1.0;
  return std::vector<Dense>{out};
}

// Compares logical row and column indices (the slice offsets of the last two axes).
Outputs CausalMask(const KernelArgs& args) {
  const double fill = GetFloatAttr(args.attrs, "fill", -1e9);
  const Dense& x = args.in(0);
  const int64_t rank = x.shape.rank();
  const int64_t row_offset = args.input_layouts[0].slice.range(rank - 2).begin;
  const int64_t col_offset = args.input_layouts[0].slice.range(rank - 1).begin;
  Dense out = x;
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, x.shape);
    if (c[rank - 1] + col_offset > c[rank - 2] + row_offset) out.values[i] = fill;
  }
  return std::vector<Dense>{out};
}

Outputs ReluGrad(const KernelArgs& args) {
  return Binary(args, [](double dy, double y) { return y > 0 ? dy : 0.0; });
}

Outputs GeluGrad(const KernelArgs& args) {
  return Binary(args, [](double dy, double x) { return dy * GeluDerivative(x); });
}

}  // namespace reference
}  // namespace oneflow
