// causal_mask(x [..., s, s]; fill): entries above the diagonal (column > row) become
// `fill`, the rest pass through. Attention scores use fill = -1e9 so softmax gives those
// positions zero weight; the op's own gradient is causal_mask(dy, fill = 0).
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferCausalMask(const std::vector<TensorType>& inputs,
                                                        const AttrMap&) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 2));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  const int64_t rank = x.shape.rank();
  if (x.shape.dim(rank - 2) != x.shape.dim(rank - 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x ", x.shape.ToString(), " must be square in its last two dimensions [..., s, s] "
        "(query position x key position), got ", x.shape.dim(rank - 2), " x ",
        x.shape.dim(rank - 1)));
  }
  return inputs;
}

// The kernel compares row and column indices, so the last two axes stay whole. With
// fill = 0 the op is a linear projection and commutes with a partial sum; any other
// fill would be added once per device.
std::vector<SbpSignature> CausalMaskSignatures(const std::vector<TensorType>& inputs,
                                               const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  const bool linear = GetFloatAttr(attrs, "fill", -1e9) == 0.0;
  return op_util::UnarySignatures(rank, linear, {rank - 2, rank - 1});
}

}  // namespace

OpDefinition CausalMaskDefinition() {
  return {"causal_mask", {"x"}, {"out"}, InferCausalMask, CausalMaskSignatures, "causal_mask"};
}

}  // namespace oneflow
