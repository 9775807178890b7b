// Ops that cut tensors apart or join them: slice, its gradient slice_grad (zero
// padding back to the input's shape), and concat.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// begin/end (one entry per axis, step 1) must select a box inside `shape`; returns the
// box's shape.
absl::StatusOr<Shape> SlicedShape(const std::string& arg, const Shape& shape,
                                  const AttrMap& attrs) {
  const std::vector<int64_t> begin = GetIntsAttr(attrs, "begin");
  const std::vector<int64_t> end = GetIntsAttr(attrs, "end");
  const std::string given = absl::StrCat("attributes begin=[", absl::StrJoin(begin, ", "),
                                         "] end=[", absl::StrJoin(end, ", "), "]");
  if (static_cast<int64_t>(begin.size()) != shape.rank() ||
      static_cast<int64_t>(end.size()) != shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(given, " must have one entry per axis of ",
                                                   arg, " ", shape.ToString(), " (",
                                                   shape.rank(), ")"));
  }
  std::vector<int64_t> dims;
  for (int64_t axis = 0; axis < shape.rank(); ++axis) {
    if (begin[axis] < 0 || begin[axis] > end[axis] || end[axis] > shape.dim(axis)) {
      return absl::InvalidArgumentError(absl::StrCat(
          given, " do not fit ", arg, " ", shape.ToString(), ": axis ", axis, " needs 0 <= begin <= end <= ",
          shape.dim(axis), ", got ", begin[axis], "..", end[axis]));
    }
    dims.push_back(end[axis] - begin[axis]);
  }
  return Shape(std::move(dims));
}

// Axes the slice keeps whole: splitting them gives each device its own rows of the
// result, since every device cuts the same range from the other axes.
std::vector<int64_t> WholeAxes(const Shape& shape, const AttrMap& attrs) {
  const std::vector<int64_t> begin = GetIntsAttr(attrs, "begin");
  const std::vector<int64_t> end = GetIntsAttr(attrs, "end");
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < shape.rank(); ++axis) {
    if (begin[axis] == 0 && end[axis] == shape.dim(axis)) axes.push_back(axis);
  }
  return axes;
}

absl::StatusOr<std::vector<TensorType>> InferSlice(const std::vector<TensorType>& inputs,
                                                   const AttrMap& attrs) {
  OF_ASSIGN_OR_RETURN(Shape shape, SlicedShape("x", inputs[0].shape, attrs));
  return std::vector<TensorType>{{std::move(shape), inputs[0].dtype}};
}

std::vector<SbpSignature> SliceSignatures(const std::vector<TensorType>& inputs,
                                          const AttrMap& attrs) {
  std::vector<SbpSignature> signatures;
  for (int64_t axis : WholeAxes(inputs[0].shape, attrs)) {
    signatures.push_back({{Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  signatures.push_back({{Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

// slice_grad(dy, like; begin, end): `like` (the forward input) gives the shape only.
absl::StatusOr<std::vector<TensorType>> InferSliceGrad(const std::vector<TensorType>& inputs,
                                                       const AttrMap& attrs) {
  const TensorType& dy = inputs[0];
  const TensorType& like = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("dy", dy, "like", like));
  OF_ASSIGN_OR_RETURN(Shape sliced, SlicedShape("like", like.shape, attrs));
  if (sliced != dy.shape) {
    return absl::InvalidArgumentError(absl::StrCat("dy ", dy.shape.ToString(),
                                                   " must have the sliced shape ",
                                                   sliced.ToString(), " of like ",
                                                   like.shape.ToString()));
  }
  return std::vector<TensorType>{like};
}

std::vector<SbpSignature> SliceGradSignatures(const std::vector<TensorType>& inputs,
                                              const AttrMap& attrs) {
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis : WholeAxes(inputs[1].shape, attrs)) {
    signatures.push_back({{Sbp::Split(axis), Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{B, B}, {B}});
  // Zero padding is linear; a whole `like` gives every device the whole shape.
  signatures.push_back({{Sbp::Partial(), B}, {Sbp::Partial()}});
  return signatures;
}

// concat(a, b; axis): equal on every other axis.
absl::StatusOr<std::vector<TensorType>> InferConcat(const std::vector<TensorType>& inputs,
                                                    const AttrMap& attrs) {
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("a", a, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("b", b, a.shape.rank()));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("a", a, "b", b));
  OF_ASSIGN_OR_RETURN(const int64_t axis,
                      op_util::NormalizeAxis("axis", GetIntAttr(attrs, "axis", 0), a.shape.rank()));
  std::vector<int64_t> dims = a.shape.dims();
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    if (i != axis && a.shape.dim(i) != b.shape.dim(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs a ", a.shape.ToString(), " and b ", b.shape.ToString(),
          " must match on every axis but axis=", axis, "; they differ at axis ", i, " (",
          a.shape.dim(i), " vs ", b.shape.dim(i), ")"));
    }
  }
  dims[axis] += b.shape.dim(axis);
  return std::vector<TensorType>{{Shape(std::move(dims)), a.dtype}};
}

std::vector<SbpSignature> ConcatSignatures(const std::vector<TensorType>& inputs,
                                           const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  int64_t axis = GetIntAttr(attrs, "axis", 0);
  if (axis < 0) axis += rank;
  std::vector<SbpSignature> signatures;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) signatures.push_back({{Sbp::Split(i), Sbp::Split(i)}, {Sbp::Split(i)}});
  }
  signatures.push_back({{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}});
  signatures.push_back({{Sbp::Partial(), Sbp::Partial()}, {Sbp::Partial()}});
  return signatures;
}

}  // namespace

OpDefinition SliceDefinition() {
  return {"slice", {"x"}, {"out"}, InferSlice, SliceSignatures, "slice"};
}

OpDefinition SliceGradDefinition() {
  return {"slice_grad", {"dy", "like"}, {"dx"}, InferSliceGrad, SliceGradSignatures,
          "slice_grad"};
}

OpDefinition ConcatDefinition() {
  return {"concat", {"a", "b"}, {"out"}, InferConcat, ConcatSignatures, "concat"};
}

}  // namespace oneflow
