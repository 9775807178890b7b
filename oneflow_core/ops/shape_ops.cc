// Ops that rearrange or reduce: reshape, transpose, reduce_sum, reduce_mean.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// reshape(x, shape=[...]): one dimension may be -1 and is inferred.
absl::StatusOr<std::vector<TensorType>> InferReshape(const std::vector<TensorType>& inputs,
                                                     const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  std::vector<int64_t> dims = GetIntsAttr(attrs, "shape");
  int64_t known = 1;
  int64_t inferred_axis = -1;
  for (int64_t axis = 0; axis < static_cast<int64_t>(dims.size()); ++axis) {
    if (dims[axis] == -1 && inferred_axis < 0) {
      inferred_axis = axis;
    } else if (dims[axis] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute shape=[", absl::StrJoin(dims, ", "),
          "] is invalid; dimensions must be >= 0, with at most one -1"));
    } else {
      known *= dims[axis];
    }
  }
  if (inferred_axis >= 0 && known > 0 && x.shape.NumElements() % known == 0) {
    dims[inferred_axis] = x.shape.NumElements() / known;
    known *= dims[inferred_axis];
  }
  if (known != x.shape.NumElements() || (inferred_axis >= 0 && dims[inferred_axis] < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape ", x.ToString(), " (", x.shape.NumElements(), " elements) to [",
        absl::StrJoin(GetIntsAttr(attrs, "shape"), ", "), "]"));
  }
  return std::vector<TensorType>{{Shape(std::move(dims)), x.dtype}};
}

// Prefix products: prefix[i] = elements in dims [0, i).
std::vector<int64_t> Prefixes(const Shape& shape) {
  std::vector<int64_t> prefix(shape.rank() + 1, 1);
  for (int64_t i = 0; i < shape.rank(); ++i) prefix[i + 1] = prefix[i] * shape.dim(i);
  return prefix;
}

// The axis j of `to` where a split of `from` axis i lands, and the condition, or -1.
// Splitting axis i gives each device a contiguous block of the elements after the
// first prefix[i] ones; it is a split of axis j of the result when both shapes have
// the same prefix before the axes and
//   - the axes are equal: always;
//   - axis i is itself split into axes j..k of `to` ([b*s, h] -> [b, s, nh, hd]: h ->
//     nh, hd): when the devices divide to.dim(j), so every device holds whole heads;
//   - axes i..m merge into axis j ([b, s, nh, hd] -> [b*s, h]): when the devices divide
//     from.dim(i).
// (Balanced splits of different lengths agree only when both are even.)
struct ReshapeSplit {
  int64_t to_axis = -1;
  int64_t devices_must_divide = 0;
};

ReshapeSplit MatchSplit(const Shape& from, const Shape& to, int64_t i) {
  const std::vector<int64_t> from_prefix = Prefixes(from);
  const std::vector<int64_t> to_prefix = Prefixes(to);
  for (int64_t j = 0; j < to.rank(); ++j) {
    if (to_prefix[j] != from_prefix[i]) continue;
    if (to.dim(j) == from.dim(i)) return {j, 0};
    if (to.dim(j) > 1 && to.dim(j) < from.dim(i)) {
      for (int64_t k = j + 1; k < to.rank(); ++k) {
        if (to_prefix[k + 1] == from_prefix[i + 1]) return {j, to.dim(j)};
      }
    }
    if (from.dim(i) > 1 && to.dim(j) > from.dim(i)) {
      for (int64_t m = i + 1; m < from.rank(); ++m) {
        if (from_prefix[m + 1] == to_prefix[j + 1]) return {j, from.dim(i)};
      }
    }
  }
  return {};
}

std::vector<SbpSignature> ReshapeSignatures(const std::vector<TensorType>& inputs,
                                            const AttrMap& attrs) {
  const Shape& in = inputs[0].shape;
  std::vector<TensorType> out = *InferReshape(inputs, attrs);
  const Shape& to = out[0].shape;
  std::vector<SbpSignature> signatures;
  // An empty tensor has nothing to split, and zero prefixes would match any axis.
  for (int64_t i = 0; in.NumElements() > 0 && i < in.rank(); ++i) {
    const ReshapeSplit split = MatchSplit(in, to, i);
    if (split.to_axis < 0) continue;
    signatures.push_back(
        {{Sbp::Split(i)}, {Sbp::Split(split.to_axis)}, split.devices_must_divide});
  }
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  signatures.push_back({{Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

// transpose(x, perm=[...]): out.dim(j) = x.dim(perm[j]).
absl::StatusOr<std::vector<TensorType>> InferTranspose(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  const std::vector<int64_t> perm = GetIntsAttr(attrs, "perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = static_cast<int64_t>(perm.size()) == x.shape.rank();
  for (int64_t i = 0; is_permutation && i < x.shape.rank(); ++i) is_permutation = sorted[i] == i;
  if (!is_permutation) {
    return absl::InvalidArgumentError(absl::StrCat("attribute perm=[", absl::StrJoin(perm, ", "),
                                                   "] is not a permutation of 0..",
                                                   x.shape.rank() - 1, " for x ", x.ToString()));
  }
  std::vector<int64_t> dims;
  for (int64_t axis : perm) dims.push_back(x.shape.dim(axis));
  return std::vector<TensorType>{{Shape(std::move(dims)), x.dtype}};
}

std::vector<SbpSignature> TransposeSignatures(const std::vector<TensorType>&,
                                              const AttrMap& attrs) {
  const std::vector<int64_t> perm = GetIntsAttr(attrs, "perm");
  std::vector<SbpSignature> signatures;
  for (int64_t j = 0; j < static_cast<int64_t>(perm.size()); ++j) {
    signatures.push_back({{Sbp::Split(perm[j])}, {Sbp::Split(j)}});
  }
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  signatures.push_back({{Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

absl::StatusOr<std::vector<int64_t>> ReductionAxes(const AttrMap& attrs, int64_t rank) {
  return op_util::NormalizeAxes("axes", GetIntsAttr(attrs, "axes"), rank,
                                /*empty_means_all=*/true);
}

absl::StatusOr<std::vector<TensorType>> InferReduce(const std::vector<TensorType>& inputs,
                                                    const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, ReductionAxes(attrs, x.shape.rank()));
  const bool keep_dims = GetBoolAttr(attrs, "keep_dims", false);
  std::vector<int64_t> dims;
  for (int64_t axis = 0; axis < x.shape.rank(); ++axis) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
    if (!reduced) dims.push_back(x.shape.dim(axis));
    if (reduced && keep_dims) dims.push_back(1);
  }
  return std::vector<TensorType>{{Shape(std::move(dims)), x.dtype}};
}

// Splitting a kept axis stays a split (renumbered when axes vanish); splitting a
// reduced axis leaves each device a partial sum. reduce_mean's kernel divides by the
// logical count, so its partials add up to the mean as well.
std::vector<SbpSignature> ReduceSignatures(const std::vector<TensorType>& inputs,
                                           const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  const std::vector<int64_t> axes = *ReductionAxes(attrs, rank);
  const bool keep_dims = GetBoolAttr(attrs, "keep_dims", false);
  std::vector<SbpSignature> signatures;
  int64_t out_axis = 0;
  for (int64_t axis = 0; axis < rank; ++axis) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
    signatures.push_back(
        {{Sbp::Split(axis)}, {reduced ? Sbp::Partial() : Sbp::Split(out_axis)}});
    if (!reduced || keep_dims) ++out_axis;
  }
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  signatures.push_back({{Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

}  // namespace

OpDefinition ReshapeDefinition() {
  OpDefinition definition{"reshape", {"x"}, {"out"}, InferReshape, ReshapeSignatures, "reshape"};
  definition.attrs_for_local_shapes = [](const AttrMap& attrs, const std::vector<TensorType>& local_outputs) {
    AttrMap local = attrs;
    local["shape"] = local_outputs[0].shape.dims();
    return local;
  };
  return definition;
}

OpDefinition TransposeDefinition() {
  return {"transpose", {"x"}, {"out"}, InferTranspose, TransposeSignatures, "transpose"};
}

OpDefinition ReduceSumDefinition() {
  return {"reduce_sum", {"x"}, {"out"}, InferReduce, ReduceSignatures, "reduce_sum"};
}

OpDefinition ReduceMeanDefinition() {
  return {"reduce_mean", {"x"}, {"out"}, InferReduce, ReduceSignatures, "reduce_mean"};
}

}  // namespace oneflow
