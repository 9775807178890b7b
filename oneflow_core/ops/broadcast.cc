// The two halves of broadcasting, used by gradients: reduce_sum_like(x, like) sums x
// over the axes along which `like` was broadcast to x's shape (the gradient of a
// broadcasting add/sub/mul/div input), and broadcast_like(x, like; axes) spreads x back
// over the axes a reduction removed (the gradient of reduce_sum/reduce_mean). `like`
// supplies only a shape: the forward input whose gradient is being formed.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferReduceSumLike(const std::vector<TensorType>& inputs,
                                                           const AttrMap&) {
  const TensorType& x = inputs[0];
  const TensorType& like = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", x, "like", like));
  const int64_t lead = x.shape.rank() - like.shape.rank();
  bool broadcasts = lead >= 0;
  int64_t bad_axis = 0;
  for (int64_t axis = 0; broadcasts && axis < like.shape.rank(); ++axis) {
    const int64_t have = like.shape.dim(axis);
    broadcasts = have == 1 || have == x.shape.dim(axis + lead);
    bad_axis = axis;
  }
  if (!broadcasts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "like ", like.shape.ToString(), " does not broadcast to x ", x.shape.ToString(),
        lead < 0 ? absl::StrCat(": like has more axes than x")
                 : absl::StrCat(": like's axis ", bad_axis, " is ", like.shape.dim(bad_axis),
                                ", must be 1 or ", x.shape.dim(bad_axis + lead)),
        "; like must broadcast to x (numpy rules)"));
  }
  return std::vector<TensorType>{like};
}

// Splitting an axis that `like` keeps splits the result; splitting one it broadcast
// along leaves each device a partial sum.
std::vector<SbpSignature> ReduceSumLikeSignatures(const std::vector<TensorType>& inputs,
                                                  const AttrMap&) {
  const Shape& x = inputs[0].shape;
  const Shape& like = inputs[1].shape;
  const int64_t lead = x.rank() - like.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < x.rank(); ++axis) {
    if (x.dim(axis) == 1) continue;
    const bool kept = axis >= lead && like.dim(axis - lead) == x.dim(axis);
    if (kept) {
      signatures.push_back(
          {{Sbp::Split(axis), Sbp::Split(axis - lead)}, {Sbp::Split(axis - lead)}});
    } else {
      signatures.push_back({{Sbp::Split(axis), B}, {Sbp::Partial()}});
    }
  }
  signatures.push_back({{B, B}, {B}});
  signatures.push_back({{Sbp::Partial(), B}, {Sbp::Partial()}});
  return signatures;
}

// x is `like` reduced over `axes`, with or without the reduced axes kept as size 1.
struct BroadcastLikeForm {
  std::vector<int64_t> axes;
  bool keep_dims = false;
};

absl::StatusOr<BroadcastLikeForm> BroadcastForm(const TensorType& x, const TensorType& like,
                                                const AttrMap& attrs) {
  OF_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                      op_util::NormalizeAxes("axes", GetIntsAttr(attrs, "axes"),
                                             like.shape.rank(), /*empty_means_all=*/false));
  std::vector<int64_t> dropped, kept;
  for (int64_t axis = 0; axis < like.shape.rank(); ++axis) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
    if (!reduced) dropped.push_back(like.shape.dim(axis));
    kept.push_back(reduced ? 1 : like.shape.dim(axis));
  }
  if (x.shape == Shape(dropped)) return BroadcastLikeForm{axes, false};
  if (x.shape == Shape(kept)) return BroadcastLikeForm{axes, true};
  return absl::InvalidArgumentError(absl::StrCat(
      "x ", x.shape.ToString(), " is not like ", like.shape.ToString(), " reduced over axes=[",
      absl::StrJoin(axes, ", "), "]; expected ", Shape(dropped).ToString(), " or ",
      Shape(kept).ToString()));
}

absl::StatusOr<std::vector<TensorType>> InferBroadcastLike(const std::vector<TensorType>& inputs,
                                                           const AttrMap& attrs) {
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("x", inputs[0], "like", inputs[1]));
  OF_RETURN_IF_ERROR(BroadcastForm(inputs[0], inputs[1], attrs).status());
  return std::vector<TensorType>{inputs[1]};
}

// Splitting a broadcast axis needs the whole x on every device; splitting a kept axis
// splits x's matching axis.
std::vector<SbpSignature> BroadcastLikeSignatures(const std::vector<TensorType>& inputs,
                                                  const AttrMap& attrs) {
  const BroadcastLikeForm form = *BroadcastForm(inputs[0], inputs[1], attrs);
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  int64_t x_axis = 0;
  for (int64_t axis = 0; axis < inputs[1].shape.rank(); ++axis) {
    const bool reduced = std::binary_search(form.axes.begin(), form.axes.end(), axis);
    if (reduced) {
      signatures.push_back({{B, Sbp::Split(axis)}, {Sbp::Split(axis)}});
    } else {
      signatures.push_back({{Sbp::Split(x_axis), Sbp::Split(axis)}, {Sbp::Split(axis)}});
    }
    if (!reduced || form.keep_dims) ++x_axis;
  }
  signatures.push_back({{B, B}, {B}});
  signatures.push_back({{Sbp::Partial(), B}, {Sbp::Partial()}});
  return signatures;
}

}  // namespace

OpDefinition ReduceSumLikeDefinition() {
  return {"reduce_sum_like", {"x", "like"}, {"out"}, InferReduceSumLike, ReduceSumLikeSignatures,
          "reduce_sum_like"};
}

OpDefinition BroadcastLikeDefinition() {
  return {"broadcast_like", {"x", "like"}, {"out"}, InferBroadcastLike, BroadcastLikeSignatures,
          "broadcast_like"};
}

}  // namespace oneflow
