// The row-sparse collectives against the communicator's dense ones, on in-process groups
// of 4 ranks (16 rows), 3 ranks (10 rows: slices of 4, 3 and 3) and 2 ranks (5 rows),
// each rank on its own thread: the same bits on the rows that matter and zeros elsewhere,
// whichever side runs; the bytes against their formulas; the automatic decision on both
// sides of its threshold; the errors.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/boxing/sparse_rows.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"

namespace oneflow {
namespace {

using ::testing::HasSubstr;

// A group and one row set per rank.
struct Routing {
  int64_t ranks;
  int64_t rows;
  std::vector<std::vector<int64_t>> sets;  // per rank; duplicates and -1 allowed
};

// Rank 2 of the 4-rank routing and rank 1 of the 3-rank one use nothing; some rows are
// used by nobody, some by every rank but one (row 15 / 9: a zero row between -0.0s
// makes +0.0), some by every rank (rows 1 and 4 of the 2-rank routing: -0.0 stays).
const std::vector<Routing>& Routings() {
  static const auto* routings = new std::vector<Routing>{
      {4, 16, {{0, 1, 5, 9, 15, 5}, {0, 2, 3, 4, 12, 15}, {-1}, {1, 6, 7, 13, 14, 15, -1}}},
      {3, 10, {{0, 4, 5, 9}, {}, {0, 1, 2, 3, 7, 9}}},
      {2, 5, {{0, 1, 4}, {1, 2, 4}}},
  };
  return *routings;
}

std::vector<RowSet> Sets(const Routing& routing) {
  std::vector<RowSet> sets;
  for (const std::vector<int64_t>& ids : routing.sets) {
    sets.push_back(*RowSet::FromRows(ids, routing.rows));
  }
  return sets;
}

std::unique_ptr<InProcessGroup> Group(int64_t ranks) {
  return std::move(InProcessGroup::Create(ranks, "sparse")).value();
}

CollectiveOptions Options() {
  CollectiveOptions options;
  options.timeout = absl::Seconds(20);
  options.description = "test";
  return options;
}

// Values whose rank-order sum differs from other orders (magnitudes 1e-3 to 1e3), with a
// -0.0 in element 0 of every row: -0 + -0 = -0 but -0 + +0 = +0, so a zero row that is
// skipped instead of added shows.
float Value(int64_t rank, int64_t row, int64_t element) {
  if (element == 0) return -0.0f;
  const int64_t h = (rank * 7919 + row * 104729 + element * 1299709) % 1000003;
  return static_cast<float>(h % 2001 - 1000) * std::pow(10.0f, static_cast<float>(h % 7) - 3);
}

// Rank `rank`'s partial value: Value() in its rows, +0.0 elsewhere.
std::vector<float> PartialInput(int64_t rank, const RowSet& set, int64_t row_floats) {
  std::vector<float> input(set.rows() * row_floats, 0.0f);
  for (int64_t row : set.sorted_rows()) {
    for (int64_t e = 0; e < row_floats; ++e) input[row * row_floats + e] = Value(rank, row, e);
  }
  return input;
}

bool SameBits(const void* a, const void* b, int64_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;
}

const SparseDecision kDecisions[] = {SparseDecision::kSparse, SparseDecision::kAuto,
                                     SparseDecision::kDense};

TEST(RowSetTest, FromIds) {
  const int32_t ids[] = {7, -1, 3, 7, 0};
  const RowSet set = *RowSet::FromIds(ids, DType::kI32, 5, 9);
  EXPECT_EQ(set.rows(), 9);
  EXPECT_EQ(set.size(), 3);
  EXPECT_THAT(set.sorted_rows(), ::testing::ElementsAre(0, 3, 7));
  EXPECT_TRUE(set.contains(3));
  EXPECT_FALSE(set.contains(4));
  EXPECT_FALSE(set.contains(-1));
  EXPECT_FALSE(set.contains(9));
  EXPECT_THAT(set.mask(), ::testing::ElementsAre(0x89, 0x00));
  EXPECT_EQ(RowSet::All(10).size(), 10);
  EXPECT_THAT(RowSet::All(10).mask(), ::testing::ElementsAre(0xff, 0x03));
}

TEST(RowSetTest, IdOutOfRangeIsNamed) {
  const int64_t ids[] = {4, -3, 50000};
  const absl::StatusOr<RowSet> set = RowSet::FromIds(ids, DType::kI64, 3, 50000);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set.status().message(),
            "id 50000 at index 2 is out of range: valid ids are [0, 50000) (negative ids mean "
            "none)");
  const float floats[] = {1.0f};
  EXPECT_EQ(RowSet::FromIds(floats, DType::kF32, 1, 4).status().message(),
            "row ids must be i32 or i64, not f32");
}

// S(0) -> B: needed rows hold the dense all-gather's bytes, other rows zero, on both
// sides; f32 rows and odd-sized u8 rows.
TEST(SparseRowsTest, AllGatherMatchesDense) {
  for (const Routing& routing : Routings()) {
    for (const auto& [dtype, row_bytes] : {std::pair{DType::kF32, int64_t{12}},
                                           std::pair{DType::kU8, int64_t{5}}}) {
      for (SparseDecision decision : kDecisions) {
        SCOPED_TRACE(::testing::Message() << routing.ranks << " ranks, row_bytes " << row_bytes
                                          << ", decision " << static_cast<int>(decision));
        const std::vector<RowSet> sets = Sets(routing);
        std::unique_ptr<InProcessGroup> group = Group(routing.ranks);
        const int64_t total = routing.rows * row_bytes;
        std::vector<std::vector<char>> sparse(routing.ranks, std::vector<char>(total, 'x'));
        std::vector<std::vector<char>> dense(routing.ranks, std::vector<char>(total));
        std::vector<absl::Status> statuses(routing.ranks);
        RunOnRankThreads(routing.ranks, [&](int64_t rank) {
          Communicator& communicator = group->communicator(rank);
          const Range mine = BalancedPart(routing.rows, routing.ranks, rank);
          std::vector<char> owned(mine.size() * row_bytes);
          for (size_t i = 0; i < owned.size(); ++i) owned[i] = static_cast<char>(rank * 37 + i);
          const RowSparseArgs args{routing.rows, row_bytes, dtype, &communicator, decision};
          statuses[rank] = SparseAllGatherRows(args, sets[rank], owned.data(),
                                               sparse[rank].data(), Options(), nullptr);
          std::vector<int64_t> counts;
          for (int64_t r = 0; r < routing.ranks; ++r) {
            counts.push_back(BalancedPart(routing.rows, routing.ranks, r).size() * row_bytes);
          }
          if (statuses[rank].ok()) {
            statuses[rank] =
                communicator.AllGather(owned.data(), dense[rank].data(), counts, Options());
          }
        });
        const std::vector<char> zeros(row_bytes, 0);
        for (int64_t rank = 0; rank < routing.ranks; ++rank) {
          ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
          for (int64_t row = 0; row < routing.rows; ++row) {
            const void* want = sets[rank].contains(row) ? dense[rank].data() + row * row_bytes
                                                        : zeros.data();
            EXPECT_TRUE(SameBits(sparse[rank].data() + row * row_bytes, want, row_bytes))
                << "rank " << rank << " row " << row;
          }
        }
      }
    }
  }
}

// P -> S(0): the slice equals the dense reduce-scatter's bit for bit, rows touched by
// nobody included (+0.0).
TEST(SparseRowsTest, ReduceScatterMatchesDense) {
  constexpr int64_t kRowFloats = 5;
  constexpr int64_t kRowBytes = kRowFloats * 4;
  for (const Routing& routing : Routings()) {
    for (SparseDecision decision : kDecisions) {
      SCOPED_TRACE(::testing::Message() << routing.ranks << " ranks, decision "
                                        << static_cast<int>(decision));
      const std::vector<RowSet> sets = Sets(routing);
      std::unique_ptr<InProcessGroup> group = Group(routing.ranks);
      std::vector<std::vector<float>> sparse(routing.ranks), dense(routing.ranks);
      std::vector<absl::Status> statuses(routing.ranks);
      RunOnRankThreads(routing.ranks, [&](int64_t rank) {
        Communicator& communicator = group->communicator(rank);
        const Range mine = BalancedPart(routing.rows, routing.ranks, rank);
        const std::vector<float> input = PartialInput(rank, sets[rank], kRowFloats);
        sparse[rank].assign(mine.size() * kRowFloats, 123.0f);
        dense[rank].assign(mine.size() * kRowFloats, 0.0f);
        const RowSparseArgs args{routing.rows, kRowBytes, DType::kF32, &communicator, decision};
        statuses[rank] = SparseReduceScatterRows(args, sets[rank], input.data(),
                                                 sparse[rank].data(), Options(), nullptr);
        std::vector<int64_t> counts;
        for (int64_t r = 0; r < routing.ranks; ++r) {
          counts.push_back(BalancedPart(routing.rows, routing.ranks, r).size() * kRowFloats);
        }
        if (statuses[rank].ok()) {
          statuses[rank] =
              communicator.ReduceScatter(input.data(), dense[rank].data(), counts, Options());
        }
      });
      for (int64_t rank = 0; rank < routing.ranks; ++rank) {
        ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
        EXPECT_TRUE(SameBits(sparse[rank].data(), dense[rank].data(),
                             sparse[rank].size() * sizeof(float)))
            << "rank " << rank;
      }
    }
  }
}

// P -> B: every rank's output equals the dense all-reduce's bit for bit.
TEST(SparseRowsTest, AllReduceMatchesDense) {
  constexpr int64_t kRowFloats = 5;
  constexpr int64_t kRowBytes = kRowFloats * 4;
  for (const Routing& routing : Routings()) {
    for (SparseDecision decision : kDecisions) {
      SCOPED_TRACE(::testing::Message() << routing.ranks << " ranks, decision "
                                        << static_cast<int>(decision));
      const std::vector<RowSet> sets = Sets(routing);
      std::unique_ptr<InProcessGroup> group = Group(routing.ranks);
      const int64_t count = routing.rows * kRowFloats;
      std::vector<std::vector<float>> sparse(routing.ranks, std::vector<float>(count, 123.0f));
      std::vector<std::vector<float>> dense(routing.ranks, std::vector<float>(count));
      std::vector<absl::Status> statuses(routing.ranks);
      RunOnRankThreads(routing.ranks, [&](int64_t rank) {
        Communicator& communicator = group->communicator(rank);
        const std::vector<float> input = PartialInput(rank, sets[rank], kRowFloats);
        const RowSparseArgs args{routing.rows, kRowBytes, DType::kF32, &communicator, decision};
        statuses[rank] = SparseAllReduceRows(args, sets[rank], input.data(), sparse[rank].data(),
                                             Options(), nullptr);
        if (statuses[rank].ok()) {
          statuses[rank] = communicator.AllReduce(input.data(), dense[rank].data(), count, Options());
        }
      });
      for (int64_t rank = 0; rank < routing.ranks; ++rank) {
        ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
        EXPECT_TRUE(SameBits(sparse[rank].data(), dense[rank].data(), count * sizeof(float)))
            << "rank " << rank;
      }
    }
  }
}

// Runs one of the three collectives (0 all-gather, 1 reduce-scatter, 2 all-reduce) of f32
// rows on every rank with `sets`, and returns the ranks' traffic.
std::vector<RowSparseTraffic> Traffic(int kind, int64_t ranks, int64_t rows, int64_t row_bytes,
                                      const std::vector<RowSet>& sets, SparseDecision decision) {
  std::unique_ptr<InProcessGroup> group = Group(ranks);
  std::vector<RowSparseTraffic> traffic(ranks);
  std::vector<absl::Status> statuses(ranks);
  const int64_t row_floats = row_bytes / 4;
  RunOnRankThreads(ranks, [&](int64_t rank) {
    const RowSparseArgs args{rows, row_bytes, DType::kF32, &group->communicator(rank), decision};
    const Range mine = BalancedPart(rows, ranks, rank);
    std::vector<float> whole = PartialInput(rank, sets[rank], row_floats);
    std::vector<float> slice(mine.size() * row_floats, 1.0f);
    std::vector<float> output(rows * row_floats);
    switch (kind) {
      case 0:
        statuses[rank] = SparseAllGatherRows(args, sets[rank], slice.data(), output.data(),
                                             Options(), &traffic[rank]);
        break;
      case 1:
        statuses[rank] = SparseReduceScatterRows(args, sets[rank], whole.data(), slice.data(),
                                                 Options(), &traffic[rank]);
        break;
      default:
        statuses[rank] = SparseAllReduceRows(args, sets[rank], whole.data(), output.data(),
                                             Options(), &traffic[rank]);
    }
  });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
  return traffic;
}

int64_t SumPayload(const std::vector<RowSparseTraffic>& traffic) {
  int64_t sum = 0;
  for (const RowSparseTraffic& t : traffic) sum += t.payload_bytes;
  return sum;
}

// The payload summed over ranks is exactly the formula of sparse_rows.h on a fixed
// routing, and 0 when every rank uses only rows it owns.
TEST(SparseRowsTest, PayloadBytesFollowTheFormulas) {
  constexpr int64_t kRowBytes = 8;
  for (const Routing& routing : Routings()) {
    const std::vector<RowSet> sets = Sets(routing);
    int64_t gather = 0, scatter = 0, touched_rows = 0;
    for (int64_t row = 0; row < routing.rows; ++row) {
      int64_t users = 0;
      for (const RowSet& set : sets) users += set.contains(row) ? 1 : 0;
      int64_t owner = 0;
      while (BalancedPart(routing.rows, routing.ranks, owner).end <= row) ++owner;
      const int64_t owner_uses = sets[owner].contains(row) ? 1 : 0;
      gather += kRowBytes * (users - owner_uses);
      scatter += kRowBytes * (users - owner_uses);
      touched_rows += users;
    }
    const std::vector<RowSparseTraffic> g =
        Traffic(0, routing.ranks, routing.rows, kRowBytes, sets, SparseDecision::kSparse);
    const std::vector<RowSparseTraffic> s =
        Traffic(1, routing.ranks, routing.rows, kRowBytes, sets, SparseDecision::kSparse);
    const std::vector<RowSparseTraffic> a =
        Traffic(2, routing.ranks, routing.rows, kRowBytes, sets, SparseDecision::kSparse);
    EXPECT_EQ(SumPayload(g), gather);
    EXPECT_EQ(SumPayload(s), scatter);
    EXPECT_EQ(SumPayload(a), (routing.ranks - 1) * touched_rows * (4 + kRowBytes));
    for (int64_t rank = 0; rank < routing.ranks; ++rank) {
      EXPECT_EQ(g[rank].metadata_bytes, (routing.ranks - 1) * ((routing.rows + 7) / 8));
      EXPECT_EQ(a[rank].metadata_bytes, (routing.ranks - 1) * 8);
      EXPECT_EQ(a[rank].payload_bytes,
                (routing.ranks - 1) * sets[rank].size() * (4 + kRowBytes));
      EXPECT_EQ(g[rank].sparse_calls, 1);
      EXPECT_EQ(g[rank].payload_bytes, g[rank].rows_sent * kRowBytes);
    }
  }
  // By hand, the 4-rank routing (slices [0,4) [4,8) [8,12) [12,16)): rows 0..15 are
  // needed by 2 2 1 1 1 1 1 1 0 1 0 0 1 1 1 3 ranks, among them their owner for rows
  // 0 1 4 13 14 15, so 1 1 1 1 0 1 1 1 0 1 0 0 1 0 0 2 = 11 rows travel.
  EXPECT_EQ(SumPayload(Traffic(0, 4, 16, kRowBytes, Sets(Routings()[0]), SparseDecision::kSparse)),
            11 * kRowBytes);

  const Routing own = {4, 10, {{0, 2}, {3, 5}, {6}, {9, 8}}};  // slices [0,3) [3,6) [6,8) [8,10)
  for (int kind : {0, 1}) {
    const std::vector<RowSparseTraffic> t =
        Traffic(kind, own.ranks, own.rows, kRowBytes, Sets(own), SparseDecision::kSparse);
    EXPECT_EQ(SumPayload(t), 0) << "kind " << kind;
  }
}

// The dense figures: (P-1)/P x T (all-gather, reduce-scatter) and 2(P-1)/P x T
// (all-reduce) per rank on even splits, whichever side runs.
TEST(SparseRowsTest, DenseBytesModelARing) {
  const Routing& routing = Routings()[0];  // 4 ranks, 16 rows
  const int64_t total = 16 * 8;
  for (SparseDecision decision : {SparseDecision::kSparse, SparseDecision::kDense}) {
    const auto g = Traffic(0, 4, 16, 8, Sets(routing), decision);
    const auto s = Traffic(1, 4, 16, 8, Sets(routing), decision);
    const auto a = Traffic(2, 4, 16, 8, Sets(routing), decision);
    for (int64_t rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(g[rank].dense_bytes, total * 3 / 4);
      EXPECT_EQ(s[rank].dense_bytes, total * 3 / 4);
      EXPECT_EQ(a[rank].dense_bytes, total * 6 / 4);
    }
    if (decision == SparseDecision::kDense) {
      EXPECT_EQ(g[0].payload_bytes, g[0].dense_bytes);
      EXPECT_EQ(g[0].metadata_bytes, 0);
      EXPECT_EQ(a[0].dense_calls, 1);
    }
  }
}

// kAuto runs dense for a dense row set and sparse for a sparse one, all ranks alike; for
// the all-reduce the switch is exactly at rho* = 2 / (P (1 + 4 / row_bytes)).
TEST(SparseRowsTest, AutoDecisionFlips) {
  const Routing sparse_routing = {4, 16, {{0}, {5}, {}, {15}}};
  const std::vector<RowSet> all(4, RowSet::All(16));
  for (int kind : {0, 1, 2}) {
    for (const RowSparseTraffic& t : Traffic(kind, 4, 16, 8, all, SparseDecision::kAuto)) {
      EXPECT_EQ(t.dense_calls, 1) << "kind " << kind;
      EXPECT_EQ(t.sparse_calls, 0) << "kind " << kind;
    }
    for (const RowSparseTraffic& t :
         Traffic(kind, 4, 16, 8, Sets(sparse_routing), SparseDecision::kAuto)) {
      EXPECT_EQ(t.sparse_calls, 1) << "kind " << kind;
      EXPECT_EQ(t.dense_calls, 0) << "kind " << kind;
    }
  }

  // 4 ranks, 64 rows of one float: rho* = 2 / (4 * 2) = 0.25, 16 rows per rank. At 16
  // each the sparse bytes equal the dense ones (dense wins the tie); one row fewer on one
  // rank and sparse wins.
  EXPECT_DOUBLE_EQ(AllReduceCrossoverDensity(4, 4), 0.25);
  auto sets_of = [](std::vector<int64_t> counts) {
    std::vector<RowSet> sets;
    for (int64_t rank = 0; rank < 4; ++rank) {
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < counts[rank]; ++i) ids.push_back((rank * 16 + i * 3) % 64);
      sets.push_back(*RowSet::FromRows(ids, 64));
    }
    return sets;
  };
  EXPECT_EQ(Traffic(2, 4, 64, 4, sets_of({16, 16, 16, 16}), SparseDecision::kAuto)[0].dense_calls,
            1);
  EXPECT_EQ(Traffic(2, 4, 64, 4, sets_of({16, 15, 16, 16}), SparseDecision::kAuto)[0].sparse_calls,
            1);
}

// Every rank empty: zeros out, nothing sent but the metadata.
TEST(SparseRowsTest, AllRowSetsEmpty) {
  const std::vector<RowSet> empty(3, *RowSet::FromRows({}, 10));
  for (int kind : {0, 1, 2}) {
    for (const RowSparseTraffic& t : Traffic(kind, 3, 10, 8, empty, SparseDecision::kAuto)) {
      EXPECT_EQ(t.sparse_calls, 1);
      EXPECT_EQ(t.payload_bytes, 0);
      EXPECT_GT(t.metadata_bytes, 0);
    }
  }
}

TEST(SparseRowsTest, ReductionsAreF32SumOnly) {
  std::unique_ptr<InProcessGroup> group = Group(1);
  const RowSet set = RowSet::All(2);
  std::vector<float> input(4), output(4);
  RowSparseArgs args{2, 8, DType::kI32, &group->communicator(0), SparseDecision::kAuto};
  absl::Status status =
      SparseAllReduceRows(args, set, input.data(), output.data(), Options(), nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(status.message(), "test: sparse all-reduce of rows: reduces f32 rows only, not i32");
  args.dtype = DType::kF32;
  CollectiveOptions max = Options();
  max.reduce_op = ReduceOp::kMax;
  status = SparseReduceScatterRows(args, set, input.data(), output.data(), max, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("reduces by sum only"));
  args.row_bytes = 6;
  status = SparseAllReduceRows(args, set, input.data(), output.data(), Options(), nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("row_bytes 6 is not a whole number of f32 elements"));
}

// A row set over the wrong row count on one rank fails there with INVALID_ARGUMENT and
// aborts the group, so its peers fail at once instead of waiting out the deadline.
TEST(SparseRowsTest, LocalArgumentErrorAbortsTheGroup) {
  std::unique_ptr<InProcessGroup> group = Group(3);
  std::vector<absl::Status> statuses(3);
  const auto start = std::chrono::steady_clock::now();
  RunOnRankThreads(3, [&](int64_t rank) {
    const RowSet set = RowSet::All(rank == 1 ? 9 : 10);
    std::vector<float> input(20), output(20);
    const RowSparseArgs args{10, 8, DType::kF32, &group->communicator(rank), SparseDecision::kAuto};
    statuses[rank] =
        SparseAllReduceRows(args, set, input.data(), output.data(), Options(), nullptr);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(statuses[1].message(),
            "test: sparse all-reduce of rows: rank 1's touched row set is over 9 rows, not the "
            "tensor's 10");
  for (int64_t rank : {0, 2}) {
    EXPECT_FALSE(statuses[rank].ok());
    EXPECT_THAT(statuses[rank].message(), HasSubstr("row set is over 9 rows")) << statuses[rank];
  }
}

// Ranks that disagree on the decision fail the call agreement instead of hanging.
TEST(SparseRowsTest, RanksThatDisagreeOnTheDecisionFail) {
  std::unique_ptr<InProcessGroup> group = Group(2);
  std::vector<absl::Status> statuses(2);
  RunOnRankThreads(2, [&](int64_t rank) {
    const RowSet set = RowSet::All(4);
    std::vector<float> owned(4), output(8);
    const RowSparseArgs args{4, 4, DType::kF32, &group->communicator(rank),
                             rank == 0 ? SparseDecision::kDense : SparseDecision::kSparse};
    statuses[rank] = SparseAllGatherRows(args, set, owned.data(), output.data(), Options(), nullptr);
  });
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("disagree")) << status;
  }
}

}  // namespace
}  // namespace oneflow
