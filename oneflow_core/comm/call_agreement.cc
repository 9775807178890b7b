#include "oneflow_core/comm/call_agreement.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/comm/collective_arguments.h"

namespace oneflow {
namespace {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "an unknown reduction";
}

std::string CountsText(absl::Span<const int64_t> counts) {
  return absl::StrCat("[", absl::StrJoin(counts, ", "), "]");
}

bool CountsDiffer(const CallDescription& mine, const CallDescription& theirs) {
  if (mine.counts_summary != theirs.counts_summary) return true;
  return mine.counts_known && theirs.counts_known && mine.counts != theirs.counts;
}

// How `theirs` differs from `mine`, as "<verb> X where rank <me> <verb> Y"; empty when
// they agree.
std::string Difference(int64_t me, const CallDescription& mine, const CallDescription& theirs) {
  if (theirs.kind != mine.kind) {
    return absl::StrCat("called ", CollectiveKindName(theirs.kind), " where rank ", me, " called ",
                        CollectiveKindName(mine.kind));
  }
  if (theirs.payload_format != mine.payload_format) {
    return absl::StrFormat("passed payload_format 0x%x where rank %d passed 0x%x",
                           theirs.payload_format, me, mine.payload_format);
  }
  if (theirs.count != mine.count) {
    return absl::StrCat("passed count ", theirs.count, " where rank ", me, " passed ", mine.count);
  }
  if (CountsDiffer(mine, theirs)) {
    const std::string own = mine.counts_known ? CountsText(mine.counts) : "other counts";
    if (theirs.counts_known) {
      return absl::StrCat("passed counts ", CountsText(theirs.counts), " where rank ", me,
                          " passed ", own);
    }
    const CountsSummary& summary = theirs.counts_summary;
    return absl::StrFormat(
        "passed %d counts summing to %d (fingerprint %#x) where rank %d passed %s", summary.size,
        summary.sum, summary.fingerprint, me, own);
  }
  if (theirs.root != mine.root) {
    return absl::StrCat("passed root ", theirs.root, " where rank ", me, " passed ", mine.root);
  }
  if (theirs.reduce_op != mine.reduce_op) {
    return absl::StrCat("reduces by ", ReduceOpName(theirs.reduce_op), " where rank ", me,
                        " reduces by ", ReduceOpName(mine.reduce_op));
  }
  return "";
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "an unknown collective";
}

CountsSummary SummarizeCounts(absl::Span<const int64_t> counts) {
  CountsSummary summary;
  summary.size = static_cast<int64_t>(counts.size());
  summary.sum = SumOf(counts);
  uint64_t hash = 0xcbf29ce484222325;
  for (int64_t count : counts) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (static_cast<uint64_t>(count) >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3;
    }
  }
  summary.fingerprint = hash;
  return summary;
}

CallDescription DescribeCall(CollectiveKind kind, const CollectiveOptions& options, int64_t count,
                             absl::Span<const int64_t> counts, int64_t root) {
  CallDescription call;
  call.kind = kind;
  call.payload_format = options.payload_format;
  call.count = count;
  call.counts_summary = SummarizeCounts(counts);
  call.counts.assign(counts.begin(), counts.end());
  call.counts_known = true;
  call.root = root;
  const bool reduces = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
  call.reduce_op = reduces ? options.reduce_op : ReduceOp::kSum;
  return call;
}

absl::Status CheckCallsAgree(int64_t me, const CallDescription& mine, int64_t peer,
                             const CallDescription& theirs) {
  const std::string difference = Difference(me, mine, theirs);
  if (difference.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the ranks disagree on the call (a plan or runtime bug): rank ", peer, " ", difference));
}

}  // namespace oneflow
