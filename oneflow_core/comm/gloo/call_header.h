// The header every rank sends every peer at the start of a collective call: what call it
// makes (kind, payload format, counts, root, reduction: call_agreement.h). Receiving all
// headers is the call's *arrival*: a rank that never arrives is named ("waited 1s for rank
// 3 to arrive") even when the algorithm would never talk to it directly; comparing them
// catches ranks that disagree on the call before any payload moves. That check is what
// keeps the process alive: Gloo's reader thread aborts the process when a message is
// longer than the receive posted for it, so ranks that disagree on counts must not
// exchange payloads at all.
//
// Cost: one 64-byte message to and from each peer per call, one extra network latency.
#ifndef ONEFLOW_CORE_COMM_GLOO_CALL_HEADER_H_
#define ONEFLOW_CORE_COMM_GLOO_CALL_HEADER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/call_agreement.h"
#include "oneflow_core/comm/gloo/exchange.h"

namespace oneflow {
namespace gloo_backend {

// Sent as raw bytes between ranks of one build, so plain fixed-size fields only: a
// CallDescription with its counts reduced to their summary.
struct CallHeader {
  uint64_t magic = 0;
  int64_t rank = 0;  // the sender
  int16_t kind = 0;
  int16_t reduce_op = 0;
  uint32_t payload_format = 0;
  int64_t root = 0;
  int64_t count = 0;  // all_reduce: elements; broadcast: bytes
  int64_t counts_size = 0;
  int64_t counts_sum = 0;
  uint64_t counts_fingerprint = 0;
};
static_assert(sizeof(CallHeader) == 64, "CallHeader travels as 64 raw bytes");

// The header of `rank`'s call.
CallHeader MakeCallHeader(int64_t rank, const CallDescription& call);

// What a peer's header says of its call; its counts are known by their summary only.
CallDescription DescriptionOf(const CallHeader& header);

// OK when every peer's header is well formed and its call agrees with `mine`, this rank's
// (CheckCallsAgree, call_agreement.h); otherwise INVALID_ARGUMENT for the first peer that
// differs: "the ranks disagree on the call (a plan or runtime bug): rank 1 called
// all_gather where rank 0 called all_reduce". `theirs` is indexed by rank (this rank's own
// entry is ignored).
absl::Status CheckHeadersAgree(int64_t me, const CallDescription& mine,
                               absl::Span<const CallHeader> theirs);

// Sends the header of `mine` to every peer and waits for all of theirs on phase 0 of the
// exchange, then checks they agree; a disagreement fails the group.
absl::Status Arrive(Exchange& exchange, const CallDescription& mine);

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_CALL_HEADER_H_
