// Row-sparse collectives: the runtime half of sparse boxing. Only the rows (dim-0 slices:
// embedding rows, whole experts of an [E, ...] weight) that some rank uses travel; the
// rest of the logical [rows, ...] tensor stays where it is.
//
// Each function is one collective of a boxing step, seen from one rank, over that rank's
// communicator. Every rank of the group makes the same sequence of communicator calls
// whatever its row set (an empty set contributes zero bytes), so no rank can wait on a
// call another skips. The ranks must pass the same `rows`, `row_bytes`, `dtype` and
// `decision`; ranks that disagree fail with the communicator's INVALID_ARGUMENT ("the
// ranks disagree on the call") rather than hang, because each exchange carries its own
// payload_format tag.
//
// Algorithms (docs/sparse_boxing.md, "Row-sparse collectives", has the bytes in full):
//   SparseAllGatherRows      S(0) -> B of the needed rows: AllGather of the bit-packed
//                            row masks, then one AllToAll in which each owner sends every
//                            other rank the rows it owns that the other needs.
//   SparseReduceScatterRows  P -> S(0): AllGather of the masks, then one AllToAll in which
//                            each rank sends its touched rows to their owners.
//   SparseAllReduceRows      P -> B: AllGather of the touched-row counts, then an
//                            AllGather (uneven byte counts) of (int32 row indices, rows).
//
// Bytes (RowSparseTraffic) are what this rank addresses to other ranks: a row sent to k
// ranks counts k times, and an all-gather contribution counts once per peer (a direct
// all-gather sends it to each peer; a ring all-gather's bytes summed over ranks are the
// same). The dense collectives are modelled the same way, which makes the per-rank
// figures of a ring on even splits: (P-1)/P x T for the all-gather and the reduce-scatter
// and 2(P-1)/P x T for the all-reduce, T = rows x row_bytes.
//
// Decision (kAuto). After the metadata exchange every rank knows every rank's row set, so
// all decide alike: sparse iff the sparse payload summed over ranks is smaller than the
// dense collective's bytes summed over ranks ((P-1) T for the all-gather and the
// reduce-scatter, 2 (P-1) T for the all-reduce). The metadata is spent either way and is
// left out. For the all-reduce with every rank touching a fraction rho of the rows the
// sparse sum is (P-1) P rho rows (4 + row_bytes), so sparse wins below the crossover
//   rho* = 2 / (P (1 + b_i / (D b_v))),   b_i = 4 (index bytes), D b_v = row_bytes,
// about 2/P for wide rows (0.5 on 4 ranks): AllReduceCrossoverDensity. kSparse and kDense
// force a side; kDense skips the metadata exchange.
//
// Results. The output does not depend on the decision, and equals the dense collective's
// bit for bit on the rows that matter: the reductions sum each row over all ranks in rank
// order (((x0 + x1) + x2) ...) with ReduceFloats, as the CPU backends' dense collectives
// do, a rank that did not touch the row contributing +0.0 exactly as its zero row would.
// Rows outside a rank's `touched` set are taken as zero whatever its buffer holds there
// (they must be zero for the dense side to agree).
//
// Errors: INVALID_ARGUMENT for arguments that do not describe a call (negative sizes, a
// row set over another row count, a null buffer of nonzero size, row_bytes not a whole
// number of elements); UNIMPLEMENTED for a reduction of a dtype other than f32 or with a
// reduce_op other than kSum (a row nobody touched is a zero, the identity of the sum
// only). An argument error that can differ between ranks (a row set, a buffer) aborts the
// group, so peers fail promptly instead of waiting out their deadline. Messages start with
// options.description. Communicator errors pass through.
#ifndef KERNELS_BOXING_SPARSE_ROWS_H_
#define KERNELS_BOXING_SPARSE_ROWS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/dtype.h"

namespace oneflow {

// The rows of a logical [rows, ...] tensor that one rank uses (needs, or touched).
class RowSet {
 public:
  // The empty set over 0 rows.
  RowSet() = default;

  // The rows named by `count` ids of type `dtype` (i32 or i64) at `ids`, duplicates
  // allowed. Negative ids mean "none" (padding) and are ignored. INVALID_ARGUMENT for
  // another dtype, count < 0, rows < 0, null ids with count > 0, and an id >= rows:
  //   id 50000 at index 17 is out of range: valid ids are [0, 50000) (negative ids mean none)
  static absl::StatusOr<RowSet> FromIds(const void* ids, DType dtype, int64_t count, int64_t rows);
  // The same for ids held as int64 (tests, callers that already have rows).
  static absl::StatusOr<RowSet> FromRows(absl::Span<const int64_t> ids, int64_t rows);
  // Every row of [0, rows).
  static RowSet All(int64_t rows);

  // The row count of the logical tensor.
  int64_t rows() const { return rows_; }
  // The number of rows in the set.
  int64_t size() const { return static_cast<int64_t>(sorted_.size()); }
  bool empty() const { return sorted_.empty(); }
  // False for a row outside [0, rows()).
  bool contains(int64_t row) const {
    return row >= 0 && row < rows_ && ((mask_[row >> 3] >> (row & 7)) & 1) != 0;
  }
  // The rows in increasing order.
  absl::Span<const int64_t> sorted_rows() const { return sorted_; }
  // Bit (row % 8) of byte row / 8 is set for the rows in the set; (rows() + 7) / 8 bytes,
  // the unused high bits of the last byte clear. This is what travels as metadata.
  absl::Span<const uint8_t> mask() const { return mask_; }

 private:
  int64_t rows_ = 0;
  std::vector<int64_t> sorted_;
  std::vector<uint8_t> mask_;
};

enum class SparseDecision {
  kAuto,    // the side with fewer modelled bytes; the same on every rank
  kSparse,  // always the row-sparse algorithm
  kDense,   // always the communicator's dense collective (no metadata exchange)
};

// This rank's bytes, accumulated over calls (add them up over ranks for a group total).
struct RowSparseTraffic {
  // What this rank sent of row values (and, for the all-reduce, their 4-byte indices),
  // on whichever side ran: the dense collective's modelled bytes when it ran dense.
  int64_t payload_bytes = 0;
  // Row-mask or row-count bytes this rank sent ((P-1) x its mask or its 8-byte count).
  int64_t metadata_bytes = 0;
  // What the dense collective makes this rank send, whichever side ran: all-gather
  // (P-1) x its S(0) slice; reduce-scatter T - its slice; all-reduce (a reduce-scatter
  // then an all-gather over the S(0) row split) T + (P-2) x its slice.
  int64_t dense_bytes = 0;
  // Rows in payload_bytes, a row counted once per destination (dense: dense bytes /
  // row_bytes).
  int64_t rows_sent = 0;
  int64_t sparse_calls = 0;
  int64_t dense_calls = 0;
};

struct RowSparseArgs {
  int64_t rows = 0;       // of the logical [rows, ...] tensor
  int64_t row_bytes = 0;  // bytes of one row (the product of the other dims x dtype size)
  DType dtype = DType::kF32;
  Communicator* communicator = nullptr;  // the group; its size() splits the rows
  SparseDecision decision = SparseDecision::kAuto;
};

// The sparse side's density threshold for SparseAllReduceRows with `ranks` ranks that
// each touch a fraction rho of the rows: kAuto picks sparse iff rho < this, i.e.
// 2 / (ranks (1 + 4 / row_bytes)).
double AllReduceCrossoverDensity(int64_t ranks, int64_t row_bytes);

// S(0) -> B of the rows used. `owned` is this rank's S(0) slice: rows
// BalancedPart(rows, P, rank) of the tensor, dense ((slice rows) x row_bytes bytes);
// `output` the whole [rows, ...] buffer (rows x row_bytes). Afterwards every row in
// `needed` holds its owner's values (this rank's own rows too) and every other row is
// zero. Any dtype: rows travel as bytes. `traffic` may be null (here and below).
absl::Status SparseAllGatherRows(const RowSparseArgs& args, const RowSet& needed,
                                 const void* owned, void* output,
                                 const CollectiveOptions& options, RowSparseTraffic* traffic);

// P -> S(0) of f32 rows. `input` is this rank's whole [rows, ...] partial value, zero
// outside the rows of `touched` (the sparse side reads only those rows, the dense side
// all of them); `output` its S(0) slice: each row the rank-order sum over ranks, 0 for
// rows touched by nobody. Input and output must not overlap.
absl::Status SparseReduceScatterRows(const RowSparseArgs& args, const RowSet& touched,
                                     const float* input, float* output,
                                     const CollectiveOptions& options, RowSparseTraffic* traffic);

// P -> B of f32 rows (the gradient of a replicated embedding table): every rank's
// `output` (rows x row_bytes) gets the rank-order sum of all ranks' touched rows; rows
// touched by nobody are 0. `input` as for the reduce-scatter; it must not overlap output.
absl::Status SparseAllReduceRows(const RowSparseArgs& args, const RowSet& touched,
                                 const float* input, float* output,
                                 const CollectiveOptions& options, RowSparseTraffic* traffic);

}  // namespace oneflow

#endif  // KERNELS_BOXING_SPARSE_ROWS_H_
