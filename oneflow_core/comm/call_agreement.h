// What one rank's collective call is, as far as the other ranks must agree on it, and the
// one check every backend applies when the ranks of a call meet (communicator.h: "all
// ranks make the same sequence of collective calls"). The in-process backend compares the
// posts its ranks share; the Gloo backend compares the fixed-size call headers its ranks
// exchange (gloo/call_header.h), where only a summary of the counts travels. Both produce
// their verdict here, so a disagreement reads the same on every backend.
//
// A disagreement is a plan or runtime bug, never a user error: the graph compiler fixes the
// order of collectives and the plan verifier checks it. Catching it before any payload
// moves matters because the alternatives are worse: ranks that disagree on the counts would
// read or write past their buffers (or, over Gloo, abort the process), and ranks that
// disagree on the payload format would decode bytes in the wrong format without an error.
#ifndef ONEFLOW_CORE_COMM_CALL_AGREEMENT_H_
#define ONEFLOW_CORE_COMM_CALL_AGREEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/sbp.h"

namespace oneflow {

// The values travel in Gloo's call header as integers: append, never renumber.
enum class CollectiveKind : int16_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAllToAll,
  kBroadcast
};

// "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"; "an unknown
// collective" for a value outside the enum (a malformed header).
const char* CollectiveKindName(CollectiveKind kind);

// A call's per-rank counts (or byte matrix) reduced to three numbers that fit a fixed-size
// header. Equal counts give equal summaries on every rank; different counts give different
// summaries except for a 64-bit hash collision.
struct CountsSummary {
  int64_t size = 0;
  int64_t sum = 0;
  uint64_t fingerprint = 0;  // FNV-1a over the counts' little-endian bytes

  bool operator==(const CountsSummary& other) const {
    return size == other.size && sum == other.sum && fingerprint == other.fingerprint;
  }
  bool operator!=(const CountsSummary& other) const { return !(*this == other); }
};

CountsSummary SummarizeCounts(absl::Span<const int64_t> counts);

// One rank's call. Fields a kind does not use hold their defaults, so ranks never disagree
// on them.
struct CallDescription {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  uint32_t payload_format = 0;  // CollectiveOptions::payload_format
  int64_t count = 0;            // all_reduce: elements; broadcast: bytes
  CountsSummary counts_summary;
  // The counts themselves, when `counts_known`: always for this rank's own call; for a
  // peer's only where the backend can read them (in-process), not where only the summary
  // travelled (Gloo).
  std::vector<int64_t> counts;
  bool counts_known = false;
  int64_t root = 0;                     // broadcast
  ReduceOp reduce_op = ReduceOp::kSum;  // all_reduce, reduce_scatter
};

// This rank's call: `count` for all_reduce and broadcast, `counts` (per-rank counts or the
// byte matrix) for the others, `root` for broadcast; the reduction and the payload format
// come from `options` (the reduction only for all_reduce and reduce_scatter).
CallDescription DescribeCall(CollectiveKind kind, const CollectiveOptions& options, int64_t count,
                             absl::Span<const int64_t> counts, int64_t root);

// OK when rank `peer`'s call `theirs` matches rank `me`'s call `mine`. Otherwise
// INVALID_ARGUMENT naming the first field that differs, from `me`'s point of view:
//
//   the ranks disagree on the call (a plan or runtime bug): rank 1 called all_gather where
//   rank 0 called all_reduce
//
// Fields compare in the order kind, payload format, count, counts, root, reduction. The
// payload format comes before the counts because a different encoding usually changes the
// byte counts too, and the format is the cause worth reporting. Counts compare by summary,
// and by value too where both are known; the message shows the peer's counts where known
// and their summary otherwise.
absl::Status CheckCallsAgree(int64_t me, const CallDescription& mine, int64_t peer,
                             const CallDescription& theirs);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_CALL_AGREEMENT_H_
