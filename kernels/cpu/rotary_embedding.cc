// rotary_embedding on f32 x [..., s, d]: each row of the last axis rotated in pairs (i,
// i + d/2) by the angles of its logical position (the layout's offset on the positions
// axis plus the local index), as oneflow_core/ops/rotary_embedding.cc defines. The cos
// and sin of the s x d/2 angles are computed once per call in double, then every row
// at that position reuses them: a [b, heads, s, d] tensor repeats each position b x heads
// times.
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "oneflow_core/ops/ring_blocks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace cpu {

absl::Status RotaryEmbedding(const KernelContext& context) {
  constexpr char kKernel[] = "rotary_embedding";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  const int64_t rank = x.shape.rank();
  if (rank < 2 || x.shape.dim(rank - 1) % 2 != 0) {
    return KernelError(kKernel, "input 'x' must be [..., positions, dims] with even dims, got ",
                       x.shape.ToString());
  }
  OF_RETURN_IF_ERROR(CheckLayout(kKernel, "x", x));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, x.shape, "x's shape"));
  const double base = GetFloatAttr(AttrsOf(context), "base", 10000.0);
  if (!(base > 1)) return KernelError(kKernel, "attribute base=", base, " must be > 1");
  const double sign = GetBoolAttr(AttrsOf(context), "inverse", false) ? -1.0 : 1.0;
  const int64_t d = x.shape.dim(rank - 1);
  const int64_t half = d / 2;
  const int64_t positions = x.shape.dim(rank - 2);
  const int64_t first_position = x.layout.slice.range(rank - 2).begin;
  // Zig-zag order (ring attention's load-balanced split): the index's logical position.
  const int64_t zigzag_blocks = GetIntAttr(AttrsOf(context), "zigzag_blocks", 0);
  const int64_t length = x.layout.logical.dim(rank - 2);
  std::vector<float> cosines(positions * half), sines(positions * half);
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t position = SequencePosition(first_position + p, length, zigzag_blocks, zigzag_blocks > 0);
    for (int64_t i = 0; i < half; ++i) {
      const double theta = sign * static_cast<double>(position) *
                           std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      cosines[p * half + i] = static_cast<float>(std::cos(theta));
      sines[p * half + i] = static_cast<float>(std::sin(theta));
    }
  }
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  const int64_t rows = d == 0 ? 0 : x.NumElements() / d;
  for (int64_t row = 0; row < rows; ++row) {
    const float* c = &cosines[(row % positions) * half];
    const float* s = &sines[(row % positions) * half];
    const float* v = in + row * d;
    float* o = out + row * d;
    for (int64_t i = 0; i < half; ++i) {
      o[i] = v[i] * c[i] - v[i + half] * s[i];
      o[i + half] = v[i + half] * c[i] + v[i] * s[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
