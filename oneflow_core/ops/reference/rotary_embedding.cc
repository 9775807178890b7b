// Reference kernel of rotary_embedding: each row of the last axis rotated in pairs (i,
// i + d/2) by the angles of its logical position, the input layout's offset on the
// second-to-last axis plus the local index.
#include <cmath>

#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/ops/ring_blocks.h"

namespace oneflow {
namespace reference {

Outputs RotaryEmbedding(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const double base = GetFloatAttr(args.attrs, "base", 10000.0);
  const double sign = GetBoolAttr(args.attrs, "inverse", false) ? -1.0 : 1.0;
  const int64_t rank = x.shape.rank();
  const int64_t d = x.shape.dim(rank - 1);
  const int64_t positions = x.shape.dim(rank - 2);
  const int64_t first_position = args.input_layouts[0].slice.range(rank - 2).begin;
  const int64_t half = d / 2;
  const int64_t rows = d == 0 ? 0 : x.shape.NumElements() / d;
  Dense out = x;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t zigzag_blocks = GetIntAttr(args.attrs, "zigzag_blocks", 0);
    const double p = static_cast<double>(SequencePosition(
        first_position + row % positions, args.input_layouts[0].logical.dim(rank - 2), zigzag_blocks, zigzag_blocks > 0));
    const double* v = &x.values[row * d];
    double* o = &out.values[row * d];
    for (int64_t i = 0; i < half; ++i) {
      const double theta = sign * p * std::pow(base, -2.0 * static_cast<double>(i) / d);
      o[i] = v[i] * std::cos(theta) - v[i + half] * std::sin(theta);
      o[i + half] = v[i + half] * std::cos(theta) + v[i] * std::sin(theta);
    }
  }
  return std::vector<Dense>{out};
}

}  // namespace reference
}  // namespace oneflow
