// embedding(table [vocab, hidden], ids [...]) -> [..., hidden] gathers rows; its
// gradient embedding_grad(ids, dy; vocab) -> [vocab, hidden] scatter-adds dy's rows.
//
// Both kernels know which rows of the table their device holds (the device slice), so
// a vocab-parallel table (S(0)) works: the forward gathers the rows it holds and writes
// zeros for the others (a partial sum over devices); the backward adds only the rows
// it holds.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

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

// embedding_grad(ids [...], dy [..., hidden]; vocab) -> dtable [vocab, hidden].
absl::StatusOr<std::vector<TensorType>> InferEmbeddingGrad(const std::vector<TensorType>& inputs,
                                                           const AttrMap& attrs) {
  const TensorType& ids = inputs[0];
  const TensorType& dy = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("ids", ids));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", dy));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dy", dy, ids.shape.rank() + 1));
  const std::vector<int64_t>& dims = dy.shape.dims();
  if (Shape(std::vector<int64_t>(dims.begin(), dims.end() - 1)) != ids.shape) {
    return absl::InvalidArgumentError(absl::StrCat("dy ", dy.shape.ToString(),
                                                   " must be ids ", ids.shape.ToString(),
                                                   " plus a hidden axis"));
  }
  const int64_t vocab = GetIntAttr(attrs, "vocab", 0);
  if (vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute vocab=", vocab, " must be > 0 (the rows of the forward table)"));
  }
  return std::vector<TensorType>{{Shape{vocab, dims.back()}, dy.dtype}};
}

std::vector<SbpSignature> EmbeddingGradSignatures(const std::vector<TensorType>& inputs,
                                                  const AttrMap&) {
  const int64_t ids_rank = inputs[0].shape.rank();
  const Sbp B = Sbp::Broadcast();
  const Sbp P = Sbp::Partial();
  std::vector<SbpSignature> signatures;
  // Data parallel: each device adds its examples' rows, a partial sum of the table.
  for (int64_t axis = 0; axis < ids_rank; ++axis) {
    signatures.push_back({{Sbp::Split(axis), Sbp::Split(axis)}, {P}});
  }
  // Hidden-parallel: each device accumulates its columns.
  signatures.push_back({{B, Sbp::Split(ids_rank)}, {Sbp::Split(1)}});
  // Vocab-parallel, the backward of table S(0) -> P: every device sees all ids and the
  // whole dy and adds only the rows it holds.
  signatures.push_back({{B, B}, {Sbp::Split(0)}});
  signatures.push_back({{B, P}, {P}});
  signatures.push_back({{B, B}, {B}});
  return signatures;
}

}  // namespace

OpDefinition EmbeddingDefinition() {
  return {"embedding", {"table", "ids"}, {"out"}, InferEmbedding, EmbeddingSignatures,
          "embedding"};
}

OpDefinition EmbeddingGradDefinition() {
  OpDefinition definition{"embedding_grad", {"ids", "dy"}, {"dtable"}, InferEmbeddingGrad,
                          EmbeddingGradSignatures, "embedding_grad"};
  // Only the rows of the ids the device saw get gradient: their reduction can be sparse.
  definition.sparse_row_outputs = {{"dtable", "ids"}};
  return definition;
}

}  // namespace oneflow
