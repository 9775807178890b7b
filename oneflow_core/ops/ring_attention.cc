// The two ops ring attention adds (docs/context_parallelism.md):
//
// ring_shift(x; axis, blocks, shift): x rolled by `shift` blocks of dim(axis) / blocks
//   along `axis`: block r of the result is block (r - shift) mod blocks of x. Split S(axis)
//   over `blocks` devices that is each device passing its block to the device `shift`
//   places on around the ring: the compiler delivers the input through a send/recv into
//   the placement rotated by `shift` (compiler/ring_shift.h), and the kernel copies what
//   it received. Whole along `axis` (B, or split on another axis) the kernel rolls
//   locally. Its gradient is ring_shift(dy, -shift): gradients travel the ring backwards.
//
// ring_causal_mask(x [..., blocks at `axis`, ..., s, s]; axis, step, fill): the causal
//   mask of ring step `step`. Block r along `axis` holds the scores of query block r
//   against key block j = (r - step) mod blocks, each block s positions long: entry
//   (i, c) is query position r * s + i against key position j * s + c and becomes `fill`
//   when the key lies after the query (j > r, or j == r and c > i). Block r is read as
//   the LOGICAL index on `axis`, so any split of it gives the same result. fill = 0 is
//   the op's gradient.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<int64_t> AxisAttr(const TensorType& x, const AttrMap& attrs, int64_t excluded_tail) {
  const int64_t axis = GetIntAttr(attrs, "axis", 0);
  const int64_t limit = x.shape.rank() - excluded_tail;
  if (axis < 0 || axis >= limit) {
    return absl::InvalidArgumentError(absl::StrCat("attribute axis=", axis, " must be in [0, ", limit, ") for x ",
                                                   x.shape.ToString()));
  }
  return axis;
}

absl::StatusOr<std::vector<TensorType>> InferRingShift(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  OF_ASSIGN_OR_RETURN(const int64_t axis, AxisAttr(x, attrs, 0));
  const int64_t blocks = GetIntAttr(attrs, "blocks", 1);
  if (blocks < 1 || x.shape.dim(axis) % blocks != 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute blocks=", blocks, " must be >= 1 and divide dim ", axis,
                                                   " of x ", x.shape.ToString()));
  }
  return inputs;
}

// A permutation of blocks: linear (P -> P), any axis split. Split on `axis` the devices
// must be the blocks (devices_must_divide: the compiler refuses fewer, see ring_shift.h).
std::vector<SbpSignature> RingShiftSignatures(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  std::vector<SbpSignature> signatures = op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/true, {});
  const Sbp split = Sbp::Split(GetIntAttr(attrs, "axis", 0));
  for (SbpSignature& signature : signatures) {
    if (signature.inputs[0] == split) signature.devices_must_divide = GetIntAttr(attrs, "blocks", 1);
  }
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferRingCausalMask(const std::vector<TensorType>& inputs,
                                                            const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  OF_RETURN_IF_ERROR(AxisAttr(x, attrs, 2).status());
  const int64_t rank = x.shape.rank();
  if (x.shape.dim(rank - 2) != x.shape.dim(rank - 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x ", x.shape.ToString(), " must be square in its last two dimensions [..., s, s] (a query block x a key "
        "block), got ", x.shape.dim(rank - 2), " x ", x.shape.dim(rank - 1)));
  }
  if (GetIntAttr(attrs, "step", 0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute step=", GetIntAttr(attrs, "step", 0), " must be >= 0"));
  }
  return inputs;
}

// As causal_mask: the last two axes whole, linear only with fill = 0.
std::vector<SbpSignature> RingCausalMaskSignatures(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  return op_util::UnarySignatures(rank, GetFloatAttr(attrs, "fill", -1e9) == 0.0, {rank - 2, rank - 1});
}

}  // namespace

OpDefinition RingShiftDefinition() {
  return {"ring_shift", {"x"}, {"out"}, InferRingShift, RingShiftSignatures, "ring_shift"};
}

OpDefinition RingCausalMaskDefinition() {
  return {"ring_causal_mask", {"x"}, {"out"}, InferRingCausalMask, RingCausalMaskSignatures, "ring_causal_mask"};
}

}  // namespace oneflow
