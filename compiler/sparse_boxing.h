// Sparse boxing: which boxings move only the rows in use, and what they cost.
//
// A boxing is row-sparse when its tensor says which rows (dim-0 slices) each device
// uses and its conversion is one step the row-sparse collectives implement
// (kernels/boxing/sparse_rows.h):
//   all_gather S(0) -> B      a variable with Tensor::WithSparseRows(ids): each device
//                             receives only the rows its ids list (FSSDP's
//                             SparseAllGather of expert weights)
//   reduce_scatter P -> S(0)  that variable's gradient, or an op output declared sparse
//   all_reduce P -> B         (OpDefinition::sparse_row_outputs, embedding_grad): each
//                             device sends only the rows its ids list (SparseReduceScatter,
//                             a sparse embedding gradient)
// on a hierarchy axis whose other axes are B (the all-reduce also allows S(0) there: each
// group then reduces its own range of rows), on one placement, without micro-batches,
// uncompressed, and not into the loss sink. Everything else stays dense, and a hinted
// boxing that stays dense says why in its reason.
//
// The plan records the worst case (the dense bytes: the runtime falls back to the dense
// collective whenever the rows in use make it cheaper, so a call never sends more) and
// the expectation under uniform ids: a device holding n ids of a table of R rows uses
// R (1 - (1 - 1/R)^n) distinct rows on average.
#ifndef COMPILER_SPARSE_BOXING_H_
#define COMPILER_SPARSE_BOXING_H_

#include <optional>
#include <string>

#include "compiler/compilation.h"

namespace oneflow {

struct SparseBoxingChoice {
  // Set when the boxing is row-sparse.
  std::optional<SparseBoxing> sparse;
  // For the boxing's reason: what was decided and why ("" for a tensor without a rows hint).
  std::string note;
};

// Whether `boxing` (its plan already made dense) becomes row-sparse.
SparseBoxingChoice ChooseSparseBoxing(const Compilation& compilation, const Boxing& boxing);

// Whether tensor `t` says which rows each device uses (a gather or reduction of it can
// be row-sparse). The boxing insertion pass then prefers the sparse form over a
// compressed one when the rows expected in use weigh less than the compressed bytes.
bool HasRowsHint(const Compilation& compilation, int64_t t);

// Distinct rows expected among `ids` ids drawn uniformly from `rows` rows.
int64_t ExpectedDistinctRows(int64_t rows, int64_t ids);

}  // namespace oneflow

#endif  // COMPILER_SPARSE_BOXING_H_
