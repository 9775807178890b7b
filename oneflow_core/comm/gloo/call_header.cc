#include "oneflow_core/comm/gloo/call_header.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/comm/collective_arguments.h"

namespace oneflow {
namespace gloo_backend {
namespace {

constexpr uint64_t kMagic = 0x6f6e65666c6f7731;  // "oneflow1"

// FNV-1a over the counts: equal counts give equal fingerprints on every rank.
uint64_t Fingerprint(absl::Span<const int64_t> counts) {
  uint64_t hash = 0xcbf29ce484222325;
  for (int64_t count : counts) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (static_cast<uint64_t>(count) >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3;
    }
  }
  return hash;
}

const char* ReduceOpName(int32_t op) {
  switch (static_cast<ReduceOp>(op)) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

const char* KindName(int32_t kind) {
  return kind >= 0 && kind <= static_cast<int32_t>(CollectiveKind::kBroadcast)
             ? CollectiveKindName(static_cast<CollectiveKind>(kind))
             : "an unknown collective";
}

// How `theirs` differs from `mine`, from rank mine.rank's view; empty when it does not.
std::string Difference(const CallHeader& mine, absl::Span<const int64_t> my_counts,
                       const CallHeader& theirs) {
  const int64_t me = mine.rank;
  if (theirs.magic != kMagic) {
    return absl::StrFormat("sent a malformed call header (magic %#x)", theirs.magic);
  }
  if (theirs.kind != mine.kind) {
    return absl::StrCat("called ", KindName(theirs.kind), " where rank ", me, " called ",
                        KindName(mine.kind));
  }
  if (theirs.count != mine.count) {
    return absl::StrCat("passed count ", theirs.count, " where rank ", me, " passed ", mine.count);
  }
  if (theirs.counts_size != mine.counts_size || theirs.counts_sum != mine.counts_sum ||
      theirs.counts_fingerprint != mine.counts_fingerprint) {
    // Only a fingerprint of the peer's counts travels; say what is known of them.
    return absl::StrFormat(
        "passed %d counts summing to %d (fingerprint %#x) where rank %d passed [%s]",
        theirs.counts_size, theirs.counts_sum, theirs.counts_fingerprint, me,
        absl::StrJoin(my_counts, ", "));
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
  return "?";
}

CallHeader MakeCallHeader(int64_t rank, CollectiveKind kind, ReduceOp reduce_op, int64_t root,
                          int64_t count, absl::Span<const int64_t> counts) {
  CallHeader header;
  header.magic = kMagic;
  header.rank = rank;
  header.kind = static_cast<int32_t>(kind);
  header.reduce_op = static_cast<int32_t>(reduce_op);
  header.root = root;
  header.count = count;
  header.counts_size = static_cast<int64_t>(counts.size());
  header.counts_sum = SumOf(counts);
  header.counts_fingerprint = Fingerprint(counts);
  return header;
}

absl::Status CheckHeadersAgree(const CallHeader& mine, absl::Span<const int64_t> my_counts,
                               absl::Span<const CallHeader> theirs) {
  for (int64_t peer = 0; peer < static_cast<int64_t>(theirs.size()); ++peer) {
    if (peer == mine.rank) continue;
    const std::string difference = Difference(mine, my_counts, theirs[peer]);
    if (!difference.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ranks disagree on the call (a plan or runtime bug): rank ", peer, " ", difference));
    }
  }
  return absl::OkStatus();
}

absl::Status Arrive(Exchange& exchange, const CallHeader& mine,
                    absl::Span<const int64_t> my_counts) {
  const int64_t size = exchange.size();
  std::vector<CallHeader> theirs(size);
  std::vector<Exchange::Op> receives;
  std::vector<Exchange::Op> sends;
  // Receives first, so a peer's header never waits for this rank to be ready for it.
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer == exchange.rank()) continue;
    receives.push_back(exchange.Recv(peer, /*phase=*/0, &theirs[peer], sizeof(CallHeader),
                                     Exchange::Verb::kArrive));
  }
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer == exchange.rank()) continue;
    sends.push_back(
        exchange.Send(peer, /*phase=*/0, &mine, sizeof(CallHeader), Exchange::Verb::kArrive));
  }
  absl::Status status = exchange.WaitAll(receives);
  if (status.ok()) status = exchange.WaitAll(sends);
  if (!status.ok()) return status;
  status = CheckHeadersAgree(mine, my_counts, theirs);
  return status.ok() ? status : exchange.Fail(status);
}

}  // namespace gloo_backend
}  // namespace oneflow
