// The Exchange (gloo/exchange.h) of a UCX group: each transfer is one tagged UCX message
// on the group's worker. The tag is (sender rank << 48) | slot + phase, with the
// point-to-point bit moved from 2^62 to 2^47, so a receive matches one sender's message
// of one call; a collective's send completes when its buffer may be reused, a
// point-to-point send (ucp_tag_send_sync_nbx) once the receiver matched it, as
// communicator.h asks.
//
// A wait drives the worker itself (ucp_worker_progress) and polls for the first kSpinWait
// while no compute act of the process runs and the communicator's recent waits were
// mostly short (spin_policy.h, compute_activity.h; otherwise it
// does not spin), so a message that arrives while the thread spins is seen within a
// microsecond; after that it arms the worker and blocks on its event fd (ucp_worker_get_efd) for at most
// kBlockSlice at a time, so a long wait costs no CPU and the thread wakes as soon as UCX
// has an event. Why not sched_yield, as before: on a loaded machine a yield hands the
// core to another process for a whole time slice (milliseconds), which made 4 KiB
// all-reduces 15-60x slower than OpenMPI's (docs/collectives.md). Once it has lasted
// kCheckAfterWaiting (5 ms), a wait also calls Mesh::CheckPeers at every turn (which reads
// the store every 5-100 ms, peer_check.h); a shorter one never does.
//
// Arrival (Arrive, arrival.cc): each receive of a peer's call header takes up to a header
// plus kSmallAllReduceBytes, because a UCX receive, unlike Gloo's, survives a shorter
// message and reports its length. That lets a small all-reduce (SmallAllReduce) put its
// payload right behind its header: one message per peer and one round per call instead
// of the header's round and the payload's (half the latency of a 4 KiB all-reduce), with
// the same agreement check before anything is reduced and the same bits (rank order).
// A peer making another call sends another header, which is named as on Gloo.
//
// A peer that departed (mesh.h, departure.h) is judged per transfer: a send it consumed
// completes (its request is released when the exchange ends), a receive it sent keeps
// waiting, and a peer that left before this call fails the group naming what it had done.
#ifndef ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_
#define ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_

#include <ucp/api/ucp.h>

#include <cstdint>
#include <deque>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/call_agreement.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/comm/ucx/mesh.h"
#include "oneflow_core/comm/ucx/spin_policy.h"
#include "oneflow_core/sbp.h"

namespace oneflow {
namespace ucx_backend {

using gloo_backend::Exchange;

constexpr absl::Duration kBlockSlice = absl::Milliseconds(2);

class UcxExchange final : public Exchange {
 public:
  // `timeout` is the call's, for messages; `deadline` ends every wait. Precondition for
  // posting: the mesh is connected.
  UcxExchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
              std::string prefix);
  // Cancels the receives still pending and releases every request: after that UCX no
  // longer writes into the call's memory.
  ~UcxExchange() override;
  UcxExchange(const UcxExchange&) = delete;
  UcxExchange& operator=(const UcxExchange&) = delete;

  // MeshCommunicator (gloo/mesh_communicator.h) arrives through Arrive and runs small
  // all-reduces through SmallAllReduce.
  static constexpr bool kArrivalCarriesPayload = true;

  int64_t rank() const override { return mesh_->rank(); }
  int64_t size() const override { return mesh_->size(); }
  const std::string& prefix() const override { return prefix_; }
  const absl::Status& status() const override { return status_; }

  Op Send(int64_t peer, int phase, const void* data, int64_t bytes,
          Verb waiting_for = Verb::kReceive) override;
  Op Recv(int64_t peer, int phase, void* data, int64_t bytes,
          Verb waiting_for = Verb::kSend) override;
  absl::Status Wait(Op op) override;
  absl::Status WaitAll(absl::Span<const Op> ops) override;
  absl::Status Finish() override;
  absl::Status Fail(const absl::Status& status) override;

  // Sends this rank's header of `mine` to every peer, receives theirs and checks that they
  // agree (gloo/call_header.h's Arrive, with room for a payload behind a header).
  absl::Status Arrive(const CallDescription& mine);
  // The whole all-reduce `mine` of `count` floats in the arrival messages: each rank's
  // input behind its header to every peer, then each rank reduces all n inputs in rank
  // order. Preconditions: 0 < count * 4 <= kSmallAllReduceBytes; not arrived yet.
  absl::Status SmallAllReduce(const CallDescription& mine, const float* input, float* output,
                              int64_t count, ReduceOp op);

  // Posts a receive of at most `capacity` bytes; ReceivedBytes(op) tells how many came
  // once a wait on it returned OK.
  Op ReceiveUpTo(int64_t peer, int phase, void* data, int64_t capacity, Verb waiting_for);
  int64_t ReceivedBytes(Op op) const;

 private:
  struct Transfer {
    void* request = nullptr;  // null once complete
    int64_t peer = 0;
    int64_t bytes = 0;
    bool receiving = false;
    bool exact = true;  // a receive that must get exactly `bytes`
    Verb waiting_for = Verb::kSend;
    bool done = false;
    ucp_tag_recv_info_t info = {};  // a receive's sender tag and length
  };
  enum class Outcome { kDone, kWoken, kExpired, kBroken };

  // Whether `transfer`'s peer departed and what that means for it; kDone for a send the
  // peer consumed (the transfer is then done), kWoken after failing the group for a peer
  // that left before this call, else kExpired as "nothing decided" (keep waiting).
  Outcome JudgeDeparture(Transfer& transfer);

  uint64_t Tag(int64_t sender, int phase) const;
  Op Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving, Verb waiting_for,
          bool exact = true);
  absl::Status ArriveCarrying(const CallDescription& mine, const float* payload,
                              int64_t payload_count);
  // True when UCX has ended `transfer`: `outcome` is then kDone or kBroken (with `detail`).
  bool Test(Transfer& transfer, Outcome* outcome, std::string* detail);
  Outcome WaitFor(Transfer& transfer, std::string* detail);
  absl::Status Report(Transfer& transfer, Outcome outcome, const std::string& detail,
                      absl::Span<const Op> others);
  absl::Status Stopped(const std::string& waiting_for);

  Mesh* const mesh_;
  const uint64_t slot_;
  const CallPosition position_;  // decoded from slot_ (mesh_communicator.h's numbering)
  const absl::Time deadline_;
  const absl::Duration timeout_;
  const std::string prefix_;
  std::deque<Transfer> transfers_;  // a deque: UCX writes into `info` of pending receives
  absl::Status status_;
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_
