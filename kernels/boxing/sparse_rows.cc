#include "kernels/boxing/sparse_rows.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/reduce.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The payload_format (communicator.h) of each exchange: 'S' 'R' in the top bytes, then
// the exchange. A rank that runs dense while its peers run sparse, or that is one step
// ahead of them, then fails the call agreement instead of reading bytes it did not expect.
constexpr uint32_t kRowMaskFormat = 0x53520001;     // AllGather of bit-packed row masks
constexpr uint32_t kRowCountFormat = 0x53520002;    // AllGather of int64 row counts
constexpr uint32_t kRowsFormat = 0x53520003;        // AllToAll of whole rows, row order
constexpr uint32_t kIndexedRowsFormat = 0x53520004;  // AllGather of int32 indices + rows

constexpr int64_t kIndexBytes = sizeof(int32_t);
constexpr int64_t kCountBytes = sizeof(int64_t);

absl::Status Error(absl::StatusCode code, const CollectiveOptions& options, absl::string_view call,
                   absl::string_view message) {
  return absl::Status(code, absl::StrCat(options.description,
                                         options.description.empty() ? "" : ": ", call, ": ",
                                         message));
}

// The options of one exchange inside a call: its format, and the description with the
// exchange named after the caller's (errors still start with the caller's description).
CollectiveOptions ExchangeOptions(const CollectiveOptions& options, uint32_t format,
                                  absl::string_view what) {
  CollectiveOptions exchange = options;
  exchange.payload_format = format;
  exchange.description = options.description.empty()
                             ? std::string(what)
                             : absl::StrCat(options.description, " (", what, ")");
  return exchange;
}

// Checks of the arguments every rank passes alike: a failure here is the same on every
// rank, before any communication, so nobody waits.
absl::Status CheckSharedArguments(const RowSparseArgs& args, const CollectiveOptions& options,
                                  absl::string_view call, bool reduces) {
  if (args.communicator == nullptr) {
    return Error(absl::StatusCode::kInvalidArgument, options, call, "no communicator");
  }
  if (args.rows < 0 || args.row_bytes < 0) {
    return Error(absl::StatusCode::kInvalidArgument, options, call,
                 absl::StrCat("rows (", args.rows, ") and row_bytes (", args.row_bytes,
                              ") must be >= 0"));
  }
  if (reduces && args.dtype != DType::kF32) {
    return Error(absl::StatusCode::kUnimplemented, options, call,
                 absl::StrCat("reduces f32 rows only, not ", DTypeName(args.dtype)));
  }
  if (reduces && options.reduce_op != ReduceOp::kSum) {
    return Error(absl::StatusCode::kUnimplemented, options, call,
                 "reduces by sum only (a row nobody touched is a zero, the identity of the "
                 "sum and of no other reduction)");
  }
  if (args.row_bytes % SizeOf(args.dtype) != 0) {
    return Error(absl::StatusCode::kInvalidArgument, options, call,
                 absl::StrCat("row_bytes ", args.row_bytes, " is not a whole number of ",
                              DTypeName(args.dtype), " elements"));
  }
  return absl::OkStatus();
}

struct BufferArgument {
  absl::string_view name;
  const void* buffer;
  int64_t bytes;
};

// Checks of what may differ between ranks (the row set, the buffers). A failure aborts
// the group so that the peers, which passed their own checks, fail promptly too.
absl::Status CheckLocalArguments(const RowSparseArgs& args, const CollectiveOptions& options,
                                 absl::string_view call, absl::string_view set_name,
                                 const RowSet& set,
                                 std::initializer_list<BufferArgument> buffers) {
  absl::Status status;
  if (set.rows() != args.rows) {
    status = Error(absl::StatusCode::kInvalidArgument, options, call,
                   absl::StrCat("rank ", args.communicator->rank(), "'s ", set_name,
                                " row set is over ", set.rows(), " rows, not the tensor's ",
                                args.rows));
  }
  for (const BufferArgument& buffer : buffers) {
    if (status.ok() && buffer.buffer == nullptr && buffer.bytes > 0) {
      status = Error(absl::StatusCode::kInvalidArgument, options, call,
                     absl::StrCat("rank ", args.communicator->rank(), "'s ", buffer.name,
                                  " is null but must hold ", buffer.bytes, " bytes"));
    }
  }
  if (!status.ok()) args.communicator->Abort(status);
  return status;
}

bool Decide(SparseDecision decision, int64_t sparse_bytes, int64_t dense_bytes) {
  switch (decision) {
    case SparseDecision::kSparse:
      return true;
    case SparseDecision::kDense:
      return false;
    case SparseDecision::kAuto:
      break;
  }
  return sparse_bytes < dense_bytes;
}

void Accumulate(RowSparseTraffic* into, const RowSparseTraffic& call) {
  if (into == nullptr) return;
  into->payload_bytes += call.payload_bytes;
  into->metadata_bytes += call.metadata_bytes;
  into->dense_bytes += call.dense_bytes;
  into->rows_sent += call.rows_sent;
  into->sparse_calls += call.sparse_calls;
  into->dense_calls += call.dense_calls;
}

// Every rank's row mask, after one AllGather.
class RowMasks {
 public:
  static absl::StatusOr<RowMasks> Exchange(Communicator& communicator, const RowSet& mine,
                                           const CollectiveOptions& options,
                                           absl::string_view what) {
    RowMasks masks;
    masks.stride_ = static_cast<int64_t>(mine.mask().size());
    masks.bytes_.resize(masks.stride_ * communicator.size());
    const std::vector<int64_t> byte_counts(communicator.size(), masks.stride_);
    OF_RETURN_IF_ERROR(communicator.AllGather(mine.mask().data(), masks.bytes_.data(),
                                              byte_counts,
                                              ExchangeOptions(options, kRowMaskFormat, what)));
    return masks;
  }

  int64_t mask_bytes() const { return stride_; }
  bool Has(int64_t rank, int64_t row) const {
    return ((bytes_[rank * stride_ + (row >> 3)] >> (row & 7)) & 1) != 0;
  }
  // The rows of `range` that `rank` has.
  int64_t CountIn(int64_t rank, Range range) const {
    int64_t count = 0;
    for (int64_t row = range.begin; row < range.end; ++row) count += Has(rank, row) ? 1 : 0;
    return count;
  }

 private:
  int64_t stride_ = 0;
  std::vector<uint8_t> bytes_;
};

// A buffer for `count` elements, left uninitialized: each is written before it is read,
// and zeroing megabytes per call would cost as much as copying them.
template <typename T>
std::unique_ptr<T[]> Scratch(int64_t count) {
  return std::unique_ptr<T[]>(new T[count]);
}

std::vector<Range> RowParts(int64_t rows, int64_t ranks) {
  std::vector<Range> parts;
  parts.reserve(ranks);
  for (int64_t rank = 0; rank < ranks; ++rank) parts.push_back(BalancedPart(rows, ranks, rank));
  return parts;
}

// memset for `bytes` >= 0, where a buffer of 0 bytes may be null.
void ZeroBytes(void* buffer, int64_t bytes) {
  if (bytes > 0) std::memset(buffer, 0, bytes);
}

// Zeroes the rows of `rows` x `row_bytes` at `buffer` that are not in `kept`, a run of
// consecutive such rows per memset.
void ZeroRowsOutside(const RowSet& kept, char* buffer, int64_t row_bytes) {
  int64_t next = 0;
  for (int64_t row : kept.sorted_rows()) {
    ZeroBytes(buffer + next * row_bytes, (row - next) * row_bytes);
    next = row + 1;
  }
  ZeroBytes(buffer + next * row_bytes, (kept.rows() - next) * row_bytes);
}

// `output` (row_floats floats) = the rank-order sum of `contributions`, one per rank,
// `zeros` for a rank that did not touch the row: exactly the dense collectives' sum
// over the same rows, a zero row included (+0.0 is not quite the identity: -0 + +0 = +0).
void SumRow(absl::Span<const float* const> contributions, float* output, int64_t row_floats) {
  ReduceFloats(ReduceOp::kSum, contributions, output, row_floats);
}

}  // namespace

absl::StatusOr<RowSet> RowSet::FromIds(const void* ids, DType dtype, int64_t count,
                                       int64_t rows) {
  if (dtype != DType::kI32 && dtype != DType::kI64) {
    return absl::InvalidArgumentError(
        absl::StrCat("row ids must be i32 or i64, not ", DTypeName(dtype)));
  }
  if (count < 0 || rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat("row ids: count (", count, ") and rows (",
                                                   rows, ") must be >= 0"));
  }
  if (ids == nullptr && count > 0) {
    return absl::InvalidArgumentError(absl::StrCat("row ids: null buffer of ", count, " ids"));
  }
  RowSet set;
  set.rows_ = rows;
  set.mask_.assign((rows + 7) / 8, 0);
  for (int64_t index = 0; index < count; ++index) {
    const int64_t id = dtype == DType::kI32 ? static_cast<const int32_t*>(ids)[index]
                                            : static_cast<const int64_t*>(ids)[index];
    if (id < 0) continue;
    if (id >= rows) {
      return absl::InvalidArgumentError(absl::StrCat("id ", id, " at index ", index,
                                                     " is out of range: valid ids are [0, ",
                                                     rows, ") (negative ids mean none)"));
    }
    set.mask_[id >> 3] |= static_cast<uint8_t>(1u << (id & 7));
  }
  for (int64_t byte = 0; byte < static_cast<int64_t>(set.mask_.size()); ++byte) {
    for (uint32_t bits = set.mask_[byte]; bits != 0; bits &= bits - 1) {
      set.sorted_.push_back(byte * 8 + __builtin_ctz(bits));
    }
  }
  return set;
}

absl::StatusOr<RowSet> RowSet::FromRows(absl::Span<const int64_t> ids, int64_t rows) {
  return FromIds(ids.data(), DType::kI64, static_cast<int64_t>(ids.size()), rows);
}

RowSet RowSet::All(int64_t rows) {
  RowSet set;
  set.rows_ = rows;
  set.mask_.assign((rows + 7) / 8, 0xff);
  if (rows % 8 != 0) set.mask_.back() = static_cast<uint8_t>((1u << (rows % 8)) - 1);
  set.sorted_.resize(rows);
  for (int64_t row = 0; row < rows; ++row) set.sorted_[row] = row;
  return set;
}

double AllReduceCrossoverDensity(int64_t ranks, int64_t row_bytes) {
  if (ranks <= 1 || row_bytes <= 0) return 0;
  return 2.0 / (static_cast<double>(ranks) *
                (1.0 + static_cast<double>(kIndexBytes) / static_cast<double>(row_bytes)));
}

absl::Status SparseAllGatherRows(const RowSparseArgs& args, const RowSet& needed,
                                 const void* owned, void* output,
                                 const CollectiveOptions& options, RowSparseTraffic* traffic) {
  constexpr absl::string_view kCall = "sparse all-gather of rows";
  OF_RETURN_IF_ERROR(CheckSharedArguments(args, options, kCall, /*reduces=*/false));
  Communicator& communicator = *args.communicator;
  const int64_t ranks = communicator.size();
  const int64_t me = communicator.rank();
  const int64_t row_bytes = args.row_bytes;
  const std::vector<Range> parts = RowParts(args.rows, ranks);
  const Range mine = parts[me];
  OF_RETURN_IF_ERROR(CheckLocalArguments(
      args, options, kCall, "needed", needed,
      {{"owned slice", owned, mine.size() * row_bytes}, {"output", output, args.rows * row_bytes}}));
  const char* from = static_cast<const char*>(owned);
  char* out = static_cast<char*>(output);

  RowSparseTraffic call;
  call.dense_bytes = (ranks - 1) * mine.size() * row_bytes;
  bool sparse = false;
  std::vector<int64_t> matrix(ranks * ranks, 0);
  std::optional<RowMasks> masks;
  if (args.decision != SparseDecision::kDense) {
    OF_ASSIGN_OR_RETURN(masks, RowMasks::Exchange(communicator, needed, options,
                                                  "sparse all-gather: row masks"));
    call.metadata_bytes = (ranks - 1) * masks->mask_bytes();
    int64_t sparse_bytes = 0;
    for (int64_t src = 0; src < ranks; ++src) {
      for (int64_t dst = 0; dst < ranks; ++dst) {
        if (dst == src) continue;
        matrix[src * ranks + dst] = row_bytes * masks->CountIn(dst, parts[src]);
        sparse_bytes += matrix[src * ranks + dst];
      }
    }
    sparse = Decide(args.decision, sparse_bytes, (ranks - 1) * args.rows * row_bytes);
  }

  if (sparse) {
    // Each destination's rows in row order, destinations in rank order.
    int64_t send_bytes = 0;
    for (int64_t dst = 0; dst < ranks; ++dst) send_bytes += matrix[me * ranks + dst];
    std::unique_ptr<char[]> send = Scratch<char>(send_bytes);
    char* cursor = send.get();
    for (int64_t dst = 0; dst < ranks; ++dst) {
      if (dst == me) continue;
      for (int64_t row = mine.begin; row < mine.end; ++row) {
        if (!masks->Has(dst, row)) continue;
        std::memcpy(cursor, from + (row - mine.begin) * row_bytes, row_bytes);
        cursor += row_bytes;
        ++call.rows_sent;
      }
    }
    int64_t receive_bytes = 0;
    for (int64_t src = 0; src < ranks; ++src) receive_bytes += matrix[src * ranks + me];
    std::unique_ptr<char[]> receive = Scratch<char>(receive_bytes);
    OF_RETURN_IF_ERROR(communicator.AllToAll(
        send.get(), receive.get(), matrix,
        ExchangeOptions(options, kRowsFormat, "sparse all-gather: rows")));
    const char* received = receive.get();
    for (int64_t src = 0; src < ranks; ++src) {
      for (int64_t row = parts[src].begin; row < parts[src].end; ++row) {
        if (!needed.contains(row)) continue;
        if (src == me) {
          std::memcpy(out + row * row_bytes, from + (row - mine.begin) * row_bytes, row_bytes);
        } else {
          std::memcpy(out + row * row_bytes, received, row_bytes);
          received += row_bytes;
        }
      }
    }
    call.payload_bytes = send_bytes;
    call.sparse_calls = 1;
  } else {
    std::vector<int64_t> byte_counts(ranks);
    for (int64_t rank = 0; rank < ranks; ++rank) byte_counts[rank] = parts[rank].size() * row_bytes;
    OF_RETURN_IF_ERROR(communicator.AllGather(owned, output, byte_counts, options));
    call.payload_bytes = call.dense_bytes;
    call.rows_sent = (ranks - 1) * mine.size();
    call.dense_calls = 1;
  }
  ZeroRowsOutside(needed, out, row_bytes);
  Accumulate(traffic, call);
  return absl::OkStatus();
}

absl::Status SparseReduceScatterRows(const RowSparseArgs& args, const RowSet& touched,
                                     const float* input, float* output,
                                     const CollectiveOptions& options, RowSparseTraffic* traffic) {
  constexpr absl::string_view kCall = "sparse reduce-scatter of rows";
  OF_RETURN_IF_ERROR(CheckSharedArguments(args, options, kCall, /*reduces=*/true));
  Communicator& communicator = *args.communicator;
  const int64_t ranks = communicator.size();
  const int64_t me = communicator.rank();
  const int64_t row_bytes = args.row_bytes;
  const int64_t row_floats = row_bytes / static_cast<int64_t>(sizeof(float));
  const std::vector<Range> parts = RowParts(args.rows, ranks);
  const Range mine = parts[me];
  OF_RETURN_IF_ERROR(CheckLocalArguments(
      args, options, kCall, "touched", touched,
      {{"input", input, args.rows * row_bytes}, {"output", output, mine.size() * row_bytes}}));

  RowSparseTraffic call;
  call.dense_bytes = (args.rows - mine.size()) * row_bytes;
  bool sparse = false;
  std::vector<int64_t> matrix(ranks * ranks, 0);
  std::optional<RowMasks> masks;
  if (args.decision != SparseDecision::kDense) {
    OF_ASSIGN_OR_RETURN(masks, RowMasks::Exchange(communicator, touched, options,
                                                  "sparse reduce-scatter: row masks"));
    call.metadata_bytes = (ranks - 1) * masks->mask_bytes();
    int64_t sparse_bytes = 0;
    for (int64_t src = 0; src < ranks; ++src) {
      for (int64_t dst = 0; dst < ranks; ++dst) {
        if (dst == src) continue;
        matrix[src * ranks + dst] = row_bytes * masks->CountIn(src, parts[dst]);
        sparse_bytes += matrix[src * ranks + dst];
      }
    }
    sparse = Decide(args.decision, sparse_bytes, (ranks - 1) * args.rows * row_bytes);
  }

  if (sparse) {
    // Each owner's touched rows in row order, owners in rank order.
    int64_t send_bytes = 0;
    for (int64_t dst = 0; dst < ranks; ++dst) send_bytes += matrix[me * ranks + dst];
    std::unique_ptr<float[]> send = Scratch<float>(send_bytes / sizeof(float));
    float* cursor = send.get();
    for (int64_t dst = 0; dst < ranks; ++dst) {
      if (dst == me) continue;
      for (int64_t row = parts[dst].begin; row < parts[dst].end; ++row) {
        if (!touched.contains(row)) continue;
        std::memcpy(cursor, input + row * row_floats, row_bytes);
        cursor += row_floats;
        ++call.rows_sent;
      }
    }
    int64_t receive_bytes = 0;
    std::vector<const float*> from(ranks, nullptr);  // each sender's next row
    std::vector<int64_t> offsets(ranks, 0);
    for (int64_t src = 0; src < ranks; ++src) {
      offsets[src] = receive_bytes / static_cast<int64_t>(sizeof(float));
      receive_bytes += matrix[src * ranks + me];
    }
    std::unique_ptr<float[]> receive = Scratch<float>(receive_bytes / sizeof(float));
    OF_RETURN_IF_ERROR(communicator.AllToAll(
        send.get(), receive.get(), matrix,
        ExchangeOptions(options, kRowsFormat, "sparse reduce-scatter: rows")));
    for (int64_t src = 0; src < ranks; ++src) from[src] = receive.get() + offsets[src];

    const std::vector<float> zeros(row_floats, 0.0f);
    absl::InlinedVector<const float*, 8> contributions(ranks);
    // One memset for the slice, then the sums (as in SparseAllReduceRows).
    ZeroBytes(output, mine.size() * row_bytes);
    for (int64_t row = mine.begin; row < mine.end; ++row) {
      bool anyone = false;
      for (int64_t rank = 0; rank < ranks; ++rank) {
        const float* contribution = zeros.data();
        if (masks->Has(rank, row)) {
          anyone = true;
          if (rank == me) {
            contribution = input + row * row_floats;
          } else {
            contribution = from[rank];
            from[rank] += row_floats;
          }
        }
        contributions[rank] = contribution;
      }
      if (anyone) SumRow(contributions, output + (row - mine.begin) * row_floats, row_floats);
    }
    call.payload_bytes = send_bytes;
    call.sparse_calls = 1;
  } else {
    std::vector<int64_t> counts(ranks);
    for (int64_t rank = 0; rank < ranks; ++rank) counts[rank] = parts[rank].size() * row_floats;
    OF_RETURN_IF_ERROR(communicator.ReduceScatter(input, output, counts, options));
    call.payload_bytes = call.dense_bytes;
    call.rows_sent = args.rows - mine.size();
    call.dense_calls = 1;
  }
  Accumulate(traffic, call);
  return absl::OkStatus();
}

absl::Status SparseAllReduceRows(const RowSparseArgs& args, const RowSet& touched,
                                 const float* input, float* output,
                                 const CollectiveOptions& options, RowSparseTraffic* traffic) {
  constexpr absl::string_view kCall = "sparse all-reduce of rows";
  OF_RETURN_IF_ERROR(CheckSharedArguments(args, options, kCall, /*reduces=*/true));
  if (args.rows > int64_t{INT32_MAX}) {
    return Error(absl::StatusCode::kInvalidArgument, options, kCall,
                 absl::StrCat(args.rows, " rows do not fit the 4-byte row indices"));
  }
  Communicator& communicator = *args.communicator;
  const int64_t ranks = communicator.size();
  const int64_t me = communicator.rank();
  const int64_t row_bytes = args.row_bytes;
  const int64_t row_floats = row_bytes / static_cast<int64_t>(sizeof(float));
  const Range mine = BalancedPart(args.rows, ranks, me);
  OF_RETURN_IF_ERROR(CheckLocalArguments(
      args, options, kCall, "touched", touched,
      {{"input", input, args.rows * row_bytes}, {"output", output, args.rows * row_bytes}}));

  RowSparseTraffic call;
  const int64_t total_bytes = args.rows * row_bytes;
  // A reduce-scatter (T - its slice) then an all-gather ((P-1) x its slice).
  call.dense_bytes = total_bytes + (ranks - 2) * mine.size() * row_bytes;
  const int64_t entry_bytes = kIndexBytes + row_bytes;
  bool sparse = false;
  std::vector<int64_t> counts(ranks, 0);
  if (args.decision != SparseDecision::kDense) {
    const int64_t count = touched.size();
    OF_RETURN_IF_ERROR(communicator.AllGather(
        &count, counts.data(), std::vector<int64_t>(ranks, kCountBytes),
        ExchangeOptions(options, kRowCountFormat, "sparse all-reduce: row counts")));
    call.metadata_bytes = (ranks - 1) * kCountBytes;
    int64_t all_counts = 0;
    for (int64_t rank_count : counts) all_counts += rank_count;
    sparse = Decide(args.decision, (ranks - 1) * all_counts * entry_bytes,
                    2 * (ranks - 1) * total_bytes);
  }

  if (sparse) {
    // This rank's entries: its row indices (int32, increasing), then its rows.
    const int64_t count = touched.size();
    std::vector<int64_t> byte_counts(ranks);
    std::vector<int64_t> offsets(ranks);
    int64_t gathered_bytes = 0;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      offsets[rank] = gathered_bytes;
      byte_counts[rank] = counts[rank] * entry_bytes;
      gathered_bytes += byte_counts[rank];
    }
    std::unique_ptr<char[]> contribution = Scratch<char>(count * entry_bytes);
    int32_t* indices = reinterpret_cast<int32_t*>(contribution.get());
    char* rows = contribution.get() + count * kIndexBytes;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t row = touched.sorted_rows()[i];
      indices[i] = static_cast<int32_t>(row);
      std::memcpy(rows + i * row_bytes, input + row * row_floats, row_bytes);
    }
    // Row offsets are multiples of 4 (row_bytes is whole floats), so the floats stay
    // aligned in a buffer from operator new.
    std::unique_ptr<char[]> gathered = Scratch<char>(gathered_bytes);
    OF_RETURN_IF_ERROR(communicator.AllGather(
        contribution.get(), gathered.get(), byte_counts,
        ExchangeOptions(options, kIndexedRowsFormat, "sparse all-reduce: rows")));

    std::vector<const int32_t*> rank_indices(ranks);
    std::vector<const float*> rank_rows(ranks);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      const char* base = gathered.get() + offsets[rank];
      rank_indices[rank] = reinterpret_cast<const int32_t*>(base);
      rank_rows[rank] = reinterpret_cast<const float*>(base + counts[rank] * kIndexBytes);
    }
    // Zero the whole table in one memset (large enough for glibc to stream it around the
    // caches, where zeroing the gaps between touched rows one short run at a time reads
    // every line first), then sum the rows anyone touched into it, in increasing order:
    // the least of the ranks' next indices.
    ZeroBytes(output, args.rows * row_bytes);
    std::vector<int64_t> next(ranks, 0);  // each rank's next entry
    const std::vector<float> zeros(row_floats, 0.0f);
    absl::InlinedVector<const float*, 8> contributions(ranks);
    int64_t previous = -1;
    while (true) {
      int64_t row = args.rows;
      for (int64_t rank = 0; rank < ranks; ++rank) {
        if (next[rank] < counts[rank]) row = std::min<int64_t>(row, rank_indices[rank][next[rank]]);
      }
      if (row >= args.rows || row <= previous) break;  // done, or indices out of order
      for (int64_t rank = 0; rank < ranks; ++rank) {
        contributions[rank] = zeros.data();
        if (next[rank] < counts[rank] && rank_indices[rank][next[rank]] == row) {
          contributions[rank] = rank_rows[rank] + next[rank] * row_floats;
          ++next[rank];
        }
      }
      SumRow(contributions, output + row * row_floats, row_floats);
      previous = row;
    }
    for (int64_t rank = 0; rank < ranks; ++rank) {
      if (next[rank] != counts[rank]) {
        // Indices out of order or out of range: a peer that does not run this code.
        const absl::Status status = Error(
            absl::StatusCode::kInternal, options, kCall,
            absl::StrCat("rank ", rank, " sent ", counts[rank], " row indices, of which only ",
                         next[rank], " are increasing rows of [0, ", args.rows, ")"));
        communicator.Abort(status);
        return status;
      }
    }
    call.payload_bytes = (ranks - 1) * count * entry_bytes;
    call.rows_sent = (ranks - 1) * count;
    call.sparse_calls = 1;
  } else {
    OF_RETURN_IF_ERROR(communicator.AllReduce(input, output, args.rows * row_floats, options));
    call.payload_bytes = call.dense_bytes;
    call.rows_sent = row_bytes == 0 ? 0 : call.dense_bytes / row_bytes;
    call.dense_calls = 1;
  }
  Accumulate(traffic, call);
  return absl::OkStatus();
}

}  // namespace oneflow
