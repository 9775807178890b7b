// Ops that rearrange or reduce: reshape, transpose, reduce_sum, reduce_mean, embedding.
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

// S(i) -> S(j) when the dims before the split axis hold the same number of elements in
// both shapes and the split axis keeps its size: every device then holds a contiguous
// block of rows that reshapes locally.
std::vector<SbpSignature> ReshapeSignatures(const std::vector<TensorType>& inputs,
                                            const AttrMap& attrs) {
  const Shape& in = inputs[0].shape;
  std::vector<TensorType> out = *InferReshape(inputs, attrs);
  const Shape& to = out[0].shape;
  std::vector<SbpSignature> signatures;
  int64_t in_prefix = 1;
  for (int64_t i = 0; i < in.rank(); ++i) {
    int64_t out_prefix = 1;
    for (int64_t j = 0; j < to.rank(); ++j) {
      if (in_prefix == out_prefix && in.dim(i) == to.dim(j)) {
        signatures.push_back({{Sbp::Split(i)}, {Sbp::Split(j)}});
        break;
      }
      out_prefix *= to.dim(j);
    }
    in_prefix *= in.dim(i);
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

// The normalized, sorted, de-duplicated reduction axes; empty `axes` means all axes.
absl::StatusOr<std::vector<int64_t>> ReductionAxes(const AttrMap& attrs, int64_t rank) {
  std::vector<int64_t> axes = GetIntsAttr(attrs, "axes");
  if (axes.empty()) {
    for (int64_t axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  for (int64_t& axis : axes) {
    OF_ASSIGN_OR_RETURN(axis, op_util::NormalizeAxis("axes", axis, rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
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

// embedding(table [vocab, hidden], ids [...] i32/i64) -> [..., hidden].
absl::StatusOr<std::vector<TensorType>> InferEmbedding(const std::vector<TensorType>& inputs,
                                                       const AttrMap&) {
  const TensorType& table = inputs[0];
  const TensorType& ids = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("table", table, 2));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("table", table));
  if (ids.dtype != DType::kI32 && ids.dtype != DType::kI64) {
    return absl::InvalidArgumentError(
        absl::StrCat("ids must be i32 or i64 row indices, got ", ids.ToString()));
  }
  std::vector<int64_t> dims = ids.shape.dims();
  dims.push_back(table.shape.dim(1));
  return std::vector<TensorType>{{Shape(std::move(dims)), table.dtype}};
}

std::vector<SbpSignature> EmbeddingSignatures(const std::vector<TensorType>& inputs,
                                              const AttrMap&) {
  const int64_t ids_rank = inputs[1].shape.rank();
  const Sbp B = Sbp::Broadcast();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < ids_rank; ++axis) {  // Data parallel over ids.
    signatures.push_back({{B, Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  // Hidden-parallel: each device gathers its columns.
  signatures.push_back({{Sbp::Split(1), B}, {Sbp::Split(ids_rank)}});
  // Vocab-parallel (Megatron): a device outputs rows it holds and zeros for the others.
  signatures.push_back({{Sbp::Split(0), B}, {Sbp::Partial()}});
  signatures.push_back({{Sbp::Partial(), B}, {Sbp::Partial()}});
  signatures.push_back({{B, B}, {B}});
  return signatures;
}

}  // namespace

OpDefinition ReshapeDefinition() {
  return {"reshape", {"x"}, {"out"}, InferReshape, ReshapeSignatures, "reshape"};
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

OpDefinition EmbeddingDefinition() {
  return {"embedding", {"table", "ids"}, {"out"}, InferEmbedding, EmbeddingSignatures,
          "embedding"};
}

}  // namespace oneflow
