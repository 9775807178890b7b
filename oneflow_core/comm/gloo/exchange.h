// The transfers of one call on a group of processes, as the schedules (schedules.h) and
// the call header (call_header.h) see them: sends and receives posted on the call's own
// slots, and waits on them that keep the call's deadline and turn every way a wait can end
// into this call's status. Two transports implement it: Gloo's TCP pairs
// (gloo_exchange.h) and UCX (ucx/exchange.h), so both run the same schedules and give the
// same bits and the same messages.
//
// Slots: a call owns the 256 slots [slot, slot + 256) and names one by a `phase`; a send
// matches the receive of the same slot between the same two ranks, in posting order.
// Collective call k uses slot k << 8, point-to-point message k between two ranks
// 2^62 | k << 8 (numbered per pair of ranks).
//
// How a wait ends:
//  - complete: OK;
//  - woken by a failure of the group (this rank's Abort, a peer's failure):
//    "<prefix>: stopped waiting for rank 3 to send: <the failure>" with its code;
//  - expired: DEADLINE_EXCEEDED "<prefix>: waited 1s for rank 3 to send", naming every
//    peer still owing the same thing, and the group fails with it;
//  - the connection broke: the group fails with the peer's record or as a lost
//    connection, reported as when woken.
// After the first error every post does nothing and every wait returns that error, so a
// schedule may post and wait in a straight line and look at the status at the end.
#ifndef ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_
#define ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace oneflow {
namespace gloo_backend {

constexpr uint64_t kPointToPointSlots = uint64_t{1} << 62;

class Exchange {
 public:
  // What a transfer waits for its peer to do, for messages.
  enum class Verb { kArrive, kSend, kReceive };
  // A posted transfer; kNoOp for one that moves nothing (empty, or after an error).
  using Op = int64_t;
  static constexpr Op kNoOp = -1;

  virtual ~Exchange() = default;

  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  virtual const std::string& prefix() const = 0;
  virtual const absl::Status& status() const = 0;

  // Posts `bytes` of `data` to `peer` on slot + `phase`. A collective's send completes
  // when `data` may be reused; a point-to-point one once the peer has posted the matching
  // receive.
  virtual Op Send(int64_t peer, int phase, const void* data, int64_t bytes,
                  Verb waiting_for = Verb::kReceive) = 0;
  // Posts a receive of exactly `bytes` into `data` from `peer` on slot + `phase`. The
  // peer must send exactly that many bytes, which the call header check (call_header.h)
  // guarantees.
  virtual Op Recv(int64_t peer, int phase, void* data, int64_t bytes,
                  Verb waiting_for = Verb::kSend) = 0;

  virtual absl::Status Wait(Op op) = 0;
  // Waits for each of `ops`; on expiry names every peer whose transfer is still pending.
  virtual absl::Status WaitAll(absl::Span<const Op> ops) = 0;
  // Waits for every transfer not waited for yet: a call ends only when its buffers are free.
  virtual absl::Status Finish() = 0;
  // Fails the call and the group with `status` (code kept, prefix put in front).
  virtual absl::Status Fail(const absl::Status& status) = 0;
};

// "to arrive", "to send", "to receive".
absl::string_view VerbText(Exchange::Verb verb);

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_
