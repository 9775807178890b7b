#include "oneflow_core/comm/gloo/call_header.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow {
namespace gloo_backend {
namespace {

// "oneflow2": the header of a build whose layout differs (the first had no payload
// format) is reported as malformed instead of being misread.
constexpr uint64_t kMagic = 0x6f6e65666c6f7732;

}  // namespace

CallHeader MakeCallHeader(int64_t rank, const CallDescription& call) {
  CallHeader header;
  header.magic = kMagic;
  header.rank = rank;
  header.kind = static_cast<int16_t>(call.kind);
  header.reduce_op = static_cast<int16_t>(call.reduce_op);
  header.payload_format = call.payload_format;
  header.root = call.root;
  header.count = call.count;
  header.counts_size = call.counts_summary.size;
  header.counts_sum = call.counts_summary.sum;
  header.counts_fingerprint = call.counts_summary.fingerprint;
  return header;
}

CallDescription DescriptionOf(const CallHeader& header) {
  CallDescription call;
  call.kind = static_cast<CollectiveKind>(header.kind);
  call.reduce_op = static_cast<ReduceOp>(header.reduce_op);
  call.payload_format = header.payload_format;
  call.root = header.root;
  call.count = header.count;
  call.counts_summary = {header.counts_size, header.counts_sum, header.counts_fingerprint};
  return call;
}

absl::Status CheckHeadersAgree(int64_t me, const CallDescription& mine,
                               absl::Span<const CallHeader> theirs) {
  for (int64_t peer = 0; peer < static_cast<int64_t>(theirs.size()); ++peer) {
    if (peer == me) continue;
    if (theirs[peer].magic != kMagic) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the ranks disagree on the call (a plan or runtime bug): rank %d sent a "
                          "malformed call header (magic %#x)",
                          peer, theirs[peer].magic));
    }
    const absl::Status agree = CheckCallsAgree(me, mine, peer, DescriptionOf(theirs[peer]));
    if (!agree.ok()) return agree;
  }
  return absl::OkStatus();
}

absl::Status Arrive(Exchange& exchange, const CallDescription& mine) {
  const int64_t size = exchange.size();
  const CallHeader header = MakeCallHeader(exchange.rank(), mine);
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
        exchange.Send(peer, /*phase=*/0, &header, sizeof(CallHeader), Exchange::Verb::kArrive));
  }
  absl::Status status = exchange.WaitAll(receives);
  if (status.ok()) status = exchange.WaitAll(sends);
  if (!status.ok()) return status;
  status = CheckHeadersAgree(exchange.rank(), mine, theirs);
  return status.ok() ? status : exchange.Fail(status);
}

}  // namespace gloo_backend
}  // namespace oneflow
