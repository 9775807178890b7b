#include "oneflow_core/comm/ucx/exchange.h"

#include <poll.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/compute_activity.h"
#include "oneflow_core/comm/ucx/peer_check.h"

namespace oneflow {
namespace ucx_backend {

using gloo_backend::PositionOfSlot;

namespace {

constexpr uint64_t kTagPointToPoint = uint64_t{1} << 47;
constexpr uint64_t kTagSlotMask = kTagPointToPoint - 1;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

}  // namespace

UcxExchange::UcxExchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
                         std::string prefix)
    : mesh_(mesh),
      slot_(slot),
      position_(PositionOfSlot(slot)),
      deadline_(deadline),
      timeout_(timeout),
      prefix_(std::move(prefix)) {}

UcxExchange::~UcxExchange() {
  bool pending = false;
  for (Transfer& transfer : transfers_) {
    if (transfer.request == nullptr) continue;
    // A receive still posted would write into memory the caller gets back: cancel it. A
    // send cannot be cancelled; its request is released below and completes on its own.
    if (transfer.receiving) ucp_request_cancel(mesh_->worker(), transfer.request);
    pending = true;
  }
  if (pending) {
    // A cancelled receive completes on the next progress; bound the wait all the same.
    const absl::Time stop = absl::Now() + absl::Seconds(1);
    for (;;) {
      ucp_worker_progress(mesh_->worker());
      bool receiving = false;
      for (Transfer& transfer : transfers_) {
        if (transfer.request == nullptr) continue;
        if (ucp_request_check_status(transfer.request) != UCS_INPROGRESS) {
          ucp_request_free(transfer.request);
          transfer.request = nullptr;
        } else {
          receiving |= transfer.receiving;
        }
      }
      if (!receiving || absl::Now() >= stop) break;
    }
  }
  for (Transfer& transfer : transfers_) {
    if (transfer.request != nullptr) ucp_request_free(transfer.request);
  }
}

uint64_t UcxExchange::Tag(int64_t sender, int phase) const {
  const uint64_t slot = slot_ + static_cast<uint64_t>(phase);
  const uint64_t point_to_point = (slot & gloo_backend::kPointToPointSlots) ? kTagPointToPoint : 0;
  return (static_cast<uint64_t>(sender) << 48) | point_to_point | (slot & kTagSlotMask);
}

Exchange::Op UcxExchange::Send(int64_t peer, int phase, const void* data, int64_t bytes,
                               Verb waiting_for) {
  return Post(peer, phase, const_cast<void*>(data), bytes, /*receiving=*/false, waiting_for);
}

Exchange::Op UcxExchange::Recv(int64_t peer, int phase, void* data, int64_t bytes,
                               Verb waiting_for) {
  return Post(peer, phase, data, bytes, /*receiving=*/true, waiting_for);
}

Exchange::Op UcxExchange::ReceiveUpTo(int64_t peer, int phase, void* data, int64_t capacity,
                                      Verb waiting_for) {
  return Post(peer, phase, data, capacity, /*receiving=*/true, waiting_for, /*exact=*/false);
}

int64_t UcxExchange::ReceivedBytes(Op op) const {
  return op == kNoOp ? 0 : static_cast<int64_t>(transfers_[op].info.length);
}

Exchange::Op UcxExchange::Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving,
                               Verb waiting_for, bool exact) {
  if (!status_.ok() || bytes == 0) return kNoOp;
  if (mesh_->failed()) {
    status_ = Stopped(absl::StrCat("rank ", peer, " ", gloo_backend::VerbText(waiting_for)));
    return kNoOp;
  }
  transfers_.emplace_back();
  Transfer& transfer = transfers_.back();
  transfer.peer = peer;
  transfer.bytes = bytes;
  transfer.receiving = receiving;
  transfer.waiting_for = waiting_for;
  transfer.exact = exact;
  ucp_request_param_t param = {};
  ucs_status_ptr_t request;
  if (receiving) {
    // Always a request, and its sender tag and length through the callback: one path for
    // a message that was waiting and one that arrives later.
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = [](void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
      Transfer* received = static_cast<Transfer*>(user_data);
      if (status == UCS_OK && info != nullptr) received->info = *info;
    };
    param.user_data = &transfer;
    request = ucp_tag_recv_nbx(mesh_->worker(), data, static_cast<size_t>(bytes), Tag(peer, phase),
                               kFullMask, &param);
  } else if (slot_ & gloo_backend::kPointToPointSlots) {
    // communicator.h: a Send returns once the receiver has matched it.
    request = ucp_tag_send_sync_nbx(mesh_->endpoint(peer), data, static_cast<size_t>(bytes),
                                    Tag(rank(), phase), &param);
  } else {
    request = ucp_tag_send_nbx(mesh_->endpoint(peer), data, static_cast<size_t>(bytes),
                               Tag(rank(), phase), &param);
  }
  const Op op = static_cast<Op>(transfers_.size()) - 1;
  if (UCS_PTR_IS_ERR(request)) {
    status_ = Report(transfer, Outcome::kBroken, ucs_status_string(UCS_PTR_STATUS(request)), {});
    return kNoOp;
  }
  if (request == nullptr) {  // a send completed in place (receives always get a request)
    transfer.done = true;
    return op;
  }
  transfer.request = request;
  return op;
}

bool UcxExchange::Test(Transfer& transfer, Outcome* outcome, std::string* detail) {
  if (transfer.request == nullptr) {
    *outcome = Outcome::kDone;
    return true;
  }
  const ucs_status_t status = ucp_request_check_status(transfer.request);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(transfer.request);
  transfer.request = nullptr;
  if (status != UCS_OK) {
    *detail = absl::StrCat(transfer.receiving ? "receiving" : "sending", " failed: ",
                           ucs_status_string(status));
    *outcome = Outcome::kBroken;
    return true;
  }
  if (transfer.receiving && transfer.exact &&
      static_cast<int64_t>(transfer.info.length) != transfer.bytes) {
    *detail = absl::StrCat("rank ", transfer.peer, " sent ", transfer.info.length, " bytes where ",
                           transfer.bytes, " were expected");
    *outcome = Outcome::kBroken;
    return true;
  }
  transfer.done = true;
  *outcome = Outcome::kDone;
  return true;
}

UcxExchange::Outcome UcxExchange::WaitFor(Transfer& transfer, std::string* detail) {
  const absl::Time start = absl::Now();
  SpinPolicy& spin_policy = mesh_->spin_policy();
  const absl::Duration spin = spin_policy.NextSpin(ComputeActsRunning());
  bool unfinished = false;  // the transfer was not done at the first look
  for (;;) {
    Outcome outcome = Outcome::kDone;
    if (Test(transfer, &outcome, detail)) {
      if (unfinished && outcome == Outcome::kDone && spin > absl::ZeroDuration()) {
        spin_policy.Record(absl::Now() - start);
      }
      return outcome;
    }
    unfinished = true;
    if (mesh_->failed()) return Outcome::kWoken;
    const absl::Time now = absl::Now();
    if (now >= deadline_) return Outcome::kExpired;
    if (ucp_worker_progress(mesh_->worker()) != 0) continue;
    if (now - start < spin) continue;
    // Only a wait that lasts looks for failed peers (peer_check.h, kCheckAfterWaiting).
    if (now - start >= kCheckAfterWaiting) mesh_->CheckPeers(now);
    if (mesh_->failed()) return Outcome::kWoken;
    if (mesh_->departed(transfer.peer) != nullptr) {
      const Outcome judged = JudgeDeparture(transfer);
      if (judged != Outcome::kExpired) return judged;
    }
    // Block until UCX has an event, the next peer check, or the deadline. Arming fails
    // with BUSY when events are pending: progress them first.
    const absl::Duration slice = std::min(kBlockSlice, deadline_ - now);
    const int event_fd = mesh_->event_fd();
    if (event_fd < 0) {
      absl::SleepFor(std::min(slice, absl::Microseconds(50)));
      continue;
    }
    if (Test(transfer, &outcome, detail)) return outcome;
    const ucs_status_t armed = ucp_worker_arm(mesh_->worker());
    if (armed == UCS_ERR_BUSY) continue;
    if (armed != UCS_OK) {
      absl::SleepFor(std::min(slice, absl::Microseconds(50)));
      continue;
    }
    pollfd descriptor = {event_fd, POLLIN, 0};
    const timespec timeout = absl::ToTimespec(slice);
    ppoll(&descriptor, 1, &timeout, nullptr);
  }
}

UcxExchange::Outcome UcxExchange::JudgeDeparture(Transfer& transfer) {
  const Departure* departure = mesh_->departed(transfer.peer);
  if (departure == nullptr) return Outcome::kExpired;
  std::string why;
  switch (Judge(*departure, position_, !transfer.receiving, rank(), &why)) {
    case DepartureVerdict::kConsumed:
      // The peer's call (or receive) completed, so it holds this message; UCX's own
      // completion waits for an acknowledgement the departed peer may never send.
      transfer.done = true;
      return Outcome::kDone;
    case DepartureVerdict::kInFlight:
      return Outcome::kExpired;
    case DepartureVerdict::kLeftBefore:
      mesh_->Fail(Failure{Failure::Source::kPeer, transfer.peer, absl::StatusCode::kAborted, why});
      return Outcome::kWoken;
  }
  return Outcome::kExpired;
}

absl::Status UcxExchange::Stopped(const std::string& waiting_for) {
  const std::optional<Failure> failure = mesh_->failure();
  if (!failure.has_value()) {
    return absl::InternalError(absl::StrCat(prefix_, ": stopped waiting for ", waiting_for,
                                            " without a failure (a bug in the UCX backend)"));
  }
  return absl::Status(failure->code, absl::StrCat(prefix_, ": stopped waiting for ", waiting_for,
                                                  ": ", failure->WhileWaiting()));
}

absl::Status UcxExchange::Report(Transfer& transfer, Outcome outcome, const std::string& detail,
                                 absl::Span<const Op> others) {
  const std::string waiting_for =
      absl::StrCat("rank ", transfer.peer, " ", gloo_backend::VerbText(transfer.waiting_for));
  switch (outcome) {
    case Outcome::kDone:
      return absl::OkStatus();
    case Outcome::kWoken:
      return Stopped(waiting_for);
    case Outcome::kBroken: {
      // A transfer with a peer that departed breaks when its endpoint closes: judge it
      // by the peer's record before calling the connection lost.
      mesh_->ReadDepartures();
      const Outcome judged = JudgeDeparture(transfer);
      if (judged == Outcome::kDone) return absl::OkStatus();
      if (judged == Outcome::kWoken) return Stopped(waiting_for);
      mesh_->FailForBrokenConnection({transfer.peer}, detail);
      return Stopped(waiting_for);
    }
    case Outcome::kExpired:
      break;
  }
  if (mesh_->failed()) return Stopped(waiting_for);
  // Name every peer still owing the same thing.
  std::vector<int64_t> late = {transfer.peer};
  ucp_worker_progress(mesh_->worker());
  for (Op other : others) {
    if (other == kNoOp) continue;
    Transfer& candidate = transfers_[other];
    if (&candidate == &transfer || candidate.done ||
        candidate.waiting_for != transfer.waiting_for) {
      continue;
    }
    Outcome ignored_outcome;
    std::string ignored;
    if (!Test(candidate, &ignored_outcome, &ignored) || ignored_outcome != Outcome::kDone) {
      late.push_back(candidate.peer);
    }
  }
  std::sort(late.begin(), late.end());
  late.erase(std::unique(late.begin(), late.end()), late.end());
  const absl::Status expired = absl::DeadlineExceededError(
      absl::StrCat(prefix_, ": waited ", absl::FormatDuration(timeout_), " for ", RanksText(late),
                   " ", gloo_backend::VerbText(transfer.waiting_for)));
  mesh_->Fail(
      Failure{Failure::Source::kThisRank, rank(), expired.code(), std::string(expired.message())});
  return expired;
}

absl::Status UcxExchange::Wait(Op op) {
  if (op == kNoOp || !status_.ok()) return status_;
  Transfer& transfer = transfers_[op];
  if (transfer.done) return status_;
  std::string detail;
  const Outcome outcome = WaitFor(transfer, &detail);
  status_ = Report(transfer, outcome, detail, {});
  return status_;
}

absl::Status UcxExchange::WaitAll(absl::Span<const Op> ops) {
  for (Op op : ops) {
    if (op == kNoOp) continue;
    if (!status_.ok()) return status_;
    Transfer& transfer = transfers_[op];
    if (transfer.done) continue;
    std::string detail;
    const Outcome outcome = WaitFor(transfer, &detail);
    status_ = Report(transfer, outcome, detail, ops);
  }
  return status_;
}

absl::Status UcxExchange::Finish() {
  std::vector<Op> all(transfers_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Op>(i);
  return WaitAll(all);
}

absl::Status UcxExchange::Fail(const absl::Status& status) {
  if (!status_.ok()) return status_;
  status_ = absl::Status(status.code(), absl::StrCat(prefix_, ": ", status.message()));
  mesh_->Fail(
      Failure{Failure::Source::kThisRank, rank(), status_.code(), std::string(status_.message())});
  return status_;
}

}  // namespace ucx_backend
}  // namespace oneflow
