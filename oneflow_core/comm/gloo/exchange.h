// The transfers of one call on a Gloo group: sends and receives posted as Gloo unbound
// buffers on the call's own slots, and waits on them that keep the call's deadline and
// turn every way a wait can end into this call's status.
//
// Slots: a call owns the 256 slots [slot, slot + 256) and names one by a `phase`; Gloo
// matches a send with the receive of the same slot on the same connection, in posting
// order. Collective call k uses slot k << 8, point-to-point message k between two ranks
// 2^62 | k << 8 (exchange numbers are per connection), the mesh its own slots above 2^63.
//
// Every transfer gets its own buffer, so a wait knows its peer: a broken connection, an
// expiry or a failure elsewhere is reported as "... rank 3 to send". How a wait ends:
//  - complete: OK;
//  - woken by Mesh::Fail (this rank's Abort, a peer's failure seen by the watcher):
//    "<prefix>: stopped waiting for rank 3 to send: <the failure>" with its code;
//  - expired: DEADLINE_EXCEEDED "<prefix>: waited 1s for rank 3 to send", and the group
//    fails with it (Gloo has closed every connection already);
//  - the connection broke: the group fails with the peer's record or as a lost
//    connection (Mesh::FailForBrokenConnection), reported as when woken.
// After the first error every post does nothing and every wait returns that error, so a
// schedule may post and wait in a straight line and look at the status at the end.
#ifndef ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_
#define ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gloo/transport/unbound_buffer.h"
#include "oneflow_core/comm/gloo/mesh.h"

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

  // `timeout` is the call's, for messages; `deadline` ends every wait. Precondition for
  // posting: the mesh is connected.
  Exchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
           std::string prefix);
  // Unregisters and frees the buffers; after that Gloo no longer touches the call's memory.
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  int64_t rank() const { return mesh_->rank(); }
  int64_t size() const { return mesh_->size(); }
  const std::string& prefix() const { return prefix_; }
  const absl::Status& status() const { return status_; }

  // Posts `bytes` of `data` to `peer` on slot + `phase`, to complete once the peer posted
  // the matching receive and the bytes are handed to the kernel.
  Op Send(int64_t peer, int phase, const void* data, int64_t bytes,
          Verb waiting_for = Verb::kReceive);
  // Posts a receive of exactly `bytes` into `data` from `peer` on slot + `phase`. The
  // peer must send exactly that many bytes (Gloo's reader aborts the process on a longer
  // message), which the call header check (call_header.h) guarantees.
  Op Recv(int64_t peer, int phase, void* data, int64_t bytes, Verb waiting_for = Verb::kSend);

  absl::Status Wait(Op op);
  // Waits for each of `ops`; on expiry names every peer whose transfer is still pending.
  absl::Status WaitAll(absl::Span<const Op> ops);
  // Waits for every transfer not waited for yet: a call ends only when its buffers are free.
  absl::Status Finish();
  // Fails the call and the group with `status` (code kept, prefix put in front).
  absl::Status Fail(const absl::Status& status);

 private:
  struct Transfer {
    std::unique_ptr<::gloo::transport::UnboundBuffer> buffer;
    int64_t peer = 0;
    bool receiving = false;
    Verb waiting_for = Verb::kSend;
    bool done = false;
  };
  enum class Outcome { kDone, kWoken, kExpired, kBroken };

  Op Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving, Verb waiting_for);
  Outcome WaitFor(Transfer& transfer, std::chrono::milliseconds timeout, std::string* detail);
  absl::Status Report(const Transfer& transfer, Outcome outcome, const std::string& detail,
                      absl::Span<const Op> others);
  std::chrono::milliseconds Remaining() const;
  absl::Status Stopped(const std::string& waiting_for);

  Mesh* const mesh_;
  const uint64_t slot_;
  const absl::Time deadline_;
  const absl::Duration timeout_;
  const std::string prefix_;
  std::vector<Transfer> transfers_;
  absl::Status status_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_EXCHANGE_H_
