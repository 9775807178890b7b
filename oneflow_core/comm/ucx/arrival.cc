// A UCX call's arrival (UcxExchange::Arrive) and the small all-reduce that carries its
// payload in the arrival message (UcxExchange::SmallAllReduce); exchange.h says why.
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/gloo/call_header.h"
#include "oneflow_core/comm/gloo/schedules.h"
#include "oneflow_core/comm/reduce.h"
#include "oneflow_core/comm/ucx/exchange.h"

namespace oneflow {
namespace ucx_backend {
namespace {

using gloo_backend::CallHeader;

// Phase 0 of every collective call carries the header, as on Gloo (schedules.h).
constexpr int kArrivalPhase = 0;
constexpr int64_t kHeaderFloats = sizeof(CallHeader) / sizeof(float);
static_assert(sizeof(CallHeader) % sizeof(float) == 0, "the payload follows the header aligned");
// The longest arrival message: a header and a small all-reduce's payload.
constexpr int64_t kArrivalCapacityFloats =
    kHeaderFloats + gloo_backend::kSmallAllReduceBytes / static_cast<int64_t>(sizeof(float));

// A peer's header as received: a message shorter than a header reads as malformed
// (magic 0), which CheckHeadersAgree reports.
CallHeader HeaderOf(const float* message, int64_t received_bytes) {
  CallHeader header;
  if (received_bytes >= static_cast<int64_t>(sizeof(CallHeader))) {
    std::memcpy(&header, message, sizeof(CallHeader));
  }
  return header;
}

std::vector<int64_t> PeersOf(int64_t me, int64_t size) {
  std::vector<int64_t> peers;
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer != me) peers.push_back(peer);
  }
  return peers;
}

}  // namespace

// Receives every peer's arrival message into `mesh_->arrival_scratch()` (slot p for peer
// p < rank, p - 1 above), sends `payload_count` floats of `payload` after this rank's
// header, and checks the headers agree. Each receive takes up to the longest arrival
// message, so a peer making a different call (with or without a payload) is named by its
// header rather than failing the transfer.
absl::Status UcxExchange::ArriveCarrying(const CallDescription& mine, const float* payload,
                                         int64_t payload_count) {
  const int64_t me = rank();
  std::vector<float>& scratch = mesh_->arrival_scratch();
  const int64_t message_floats = kHeaderFloats + payload_count;
  const size_t needed = static_cast<size_t>((size() - 1) * kArrivalCapacityFloats + message_floats);
  if (scratch.size() < needed) scratch.resize(needed);
  auto slot_of = [&](int64_t peer) {
    return scratch.data() + (peer < me ? peer : peer - 1) * kArrivalCapacityFloats;
  };
  float* message = scratch.data() + (size() - 1) * kArrivalCapacityFloats;
  const CallHeader header = gloo_backend::MakeCallHeader(me, mine);
  std::memcpy(message, &header, sizeof(CallHeader));
  if (payload_count > 0) {
    std::memcpy(message + kHeaderFloats, payload, payload_count * sizeof(float));
  }

  std::vector<Op> receives(size(), kNoOp);
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (peer == me) continue;
    receives[peer] = ReceiveUpTo(peer, kArrivalPhase, slot_of(peer),
                                 kArrivalCapacityFloats * sizeof(float), Verb::kArrive);
  }
  std::vector<Op> sends;
  for (int64_t step = 1; step < size(); ++step) {
    sends.push_back(Send((me + step) % size(), kArrivalPhase, message,
                         message_floats * sizeof(float), Verb::kArrive));
  }
  absl::Status status = WaitAll(receives);
  if (status.ok()) status = WaitAll(sends);
  if (!status.ok()) return status;
  if (payload_count > 0) {
    // A rank arriving after its peers gave up on it (their call's timeout) finds their
    // whole one-round call waiting, and no later round would tell it they failed: look
    // for a failure record (Mesh::CheckPeers: store reads at most every 5-100 ms,
    // peer_check.h, so at most 200 a second in a loop of small all-reduces) before calling
    // the call done. A peer that gave up after the last check is not seen here (the window
    // is the check interval: 5 ms with a fast store, up to 100 ms with a slow one); this
    // rank then fails at its next call. A peer that destroyed its communicator after its
    // own call completed left a departure, not a failure (mesh.h), so it does not fail
    // this call.
    mesh_->CheckPeers(absl::Now());
    if (mesh_->failed()) {
      status_ = Stopped(absl::StrCat(RanksText(PeersOf(me, size())), " to arrive"));
      return status_;
    }
  }
  std::vector<CallHeader> theirs(size());
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (peer != me) theirs[peer] = HeaderOf(slot_of(peer), ReceivedBytes(receives[peer]));
  }
  status = gloo_backend::CheckHeadersAgree(me, mine, theirs);
  if (!status.ok()) return Fail(status);
  // Calls that agree carry payloads of the same length; anything else is a bug here.
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (peer == me || ReceivedBytes(receives[peer]) == message_floats * int64_t{sizeof(float)}) {
      continue;
    }
    return Fail(absl::InternalError(absl::StrCat(
        "rank ", peer, " sent an arrival message of ", ReceivedBytes(receives[peer]),
        " bytes where ", message_floats * sizeof(float), " were expected (a bug in the UCX backend)")));
  }
  return absl::OkStatus();
}

absl::Status UcxExchange::Arrive(const CallDescription& mine) {
  return ArriveCarrying(mine, nullptr, 0);
}

absl::Status UcxExchange::SmallAllReduce(const CallDescription& mine, const float* input,
                                         float* output, int64_t count, ReduceOp op) {
  const absl::Status arrived = ArriveCarrying(mine, input, count);
  if (!arrived.ok()) return arrived;
  const std::vector<float>& scratch = mesh_->arrival_scratch();
  std::vector<const float*> inputs(size());
  for (int64_t peer = 0; peer < size(); ++peer) {
    const int64_t slot = peer < rank() ? peer : peer - 1;
    // In place, `input` is `output`: it is written only by the reduction, after every send.
    inputs[peer] = peer == rank() ? input : scratch.data() + slot * kArrivalCapacityFloats + kHeaderFloats;
  }
  ReduceFloats(op, inputs, output, count);
  return Finish();
}

}  // namespace ucx_backend
}  // namespace oneflow
