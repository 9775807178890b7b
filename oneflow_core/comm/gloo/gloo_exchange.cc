#include "oneflow_core/comm/gloo/gloo_exchange.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"
#include "oneflow_core/comm/collective_arguments.h"

namespace oneflow {
namespace gloo_backend {
namespace {

constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365 * 10);

}  // namespace

GlooExchange::GlooExchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
                   std::string prefix)
    : mesh_(mesh),
      slot_(slot),
      position_(PositionOfSlot(slot)),
      deadline_(deadline),
      timeout_(timeout),
      prefix_(std::move(prefix)) {}

GlooExchange::~GlooExchange() {
  for (Transfer& transfer : transfers_) mesh_->UnregisterWait(transfer.buffer.get());
  // `transfers_` goes next: each buffer's destructor waits until Gloo's I/O thread holds
  // no reference to it, and later messages for it are dropped.
}

std::chrono::milliseconds GlooExchange::Remaining() const {
  if (deadline_ == absl::InfiniteFuture()) return kForever;
  const absl::Duration left = deadline_ - absl::Now();
  if (left <= absl::ZeroDuration()) return std::chrono::milliseconds(0);
  // Rounded up: a wait must not expire before the deadline.
  return std::min(kForever, std::chrono::milliseconds(absl::ToInt64Milliseconds(
                                absl::Ceil(left, absl::Milliseconds(1)))));
}

GlooExchange::Op GlooExchange::Send(int64_t peer, int phase, const void* data, int64_t bytes,
                            Verb waiting_for) {
  // Gloo reads a send buffer only; its interface takes void*.
  return Post(peer, phase, const_cast<void*>(data), bytes, /*receiving=*/false, waiting_for);
}

GlooExchange::Op GlooExchange::Recv(int64_t peer, int phase, void* data, int64_t bytes, Verb waiting_for) {
  return Post(peer, phase, data, bytes, /*receiving=*/true, waiting_for);
}

GlooExchange::Op GlooExchange::Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving,
                            Verb waiting_for) {
  if (!status_.ok() || bytes == 0) return kNoOp;
  Transfer transfer;
  transfer.buffer = mesh_->context().createUnboundBuffer(data, static_cast<size_t>(bytes));
  transfer.peer = peer;
  transfer.receiving = receiving;
  transfer.waiting_for = waiting_for;
  if (!mesh_->RegisterWait(transfer.buffer.get(), receiving)) {
    status_ = Stopped(absl::StrCat("rank ", peer, " ", VerbText(waiting_for)));
    return kNoOp;
  }
  transfers_.push_back(std::move(transfer));
  Transfer& posted = transfers_.back();
  try {
    if (receiving) {
      posted.buffer->recv(static_cast<int>(peer), slot_ + phase, 0, static_cast<size_t>(bytes));
    } else {
      posted.buffer->send(static_cast<int>(peer), slot_ + phase, 0, static_cast<size_t>(bytes));
    }
  } catch (const std::exception& error) {
    status_ = Report(posted, Outcome::kBroken, error.what(), {});
    return kNoOp;
  }
  return static_cast<Op>(transfers_.size()) - 1;
}

GlooExchange::Outcome GlooExchange::WaitFor(Transfer& transfer, std::chrono::milliseconds timeout,
                                    std::string* detail) {
  try {
    const bool completed = transfer.receiving ? transfer.buffer->waitRecv(nullptr, timeout)
                                              : transfer.buffer->waitSend(nullptr, timeout);
    if (!completed) return Outcome::kWoken;  // abortWait*: the group failed
    transfer.done = true;
    return Outcome::kDone;
  } catch (const ::gloo::IoException& error) {
    // Gloo ends an expired wait with this IoException, after closing every connection.
    *detail = error.what();
    return absl::StrContains(*detail, "Timed out waiting") ? Outcome::kExpired : Outcome::kBroken;
  } catch (const std::exception& error) {
    *detail = error.what();
    return Outcome::kBroken;
  }
}

absl::Status GlooExchange::Stopped(const std::string& waiting_for) {
  const std::optional<Failure> failure = mesh_->failure();
  if (!failure.has_value()) {
    return absl::InternalError(absl::StrCat(prefix_, ": stopped waiting for ", waiting_for,
                                            " without a failure (a bug in the Gloo backend)"));
  }
  return absl::Status(failure->code, absl::StrCat(prefix_, ": stopped waiting for ", waiting_for,
                                                  ": ", failure->WhileWaiting()));
}

GlooExchange::Outcome GlooExchange::JudgeDeparture(Transfer& transfer) {
  mesh_->ReadDepartures();
  const std::optional<Departure> departure = mesh_->departed(transfer.peer);
  if (!departure.has_value()) return Outcome::kBroken;
  std::string why;
  switch (Judge(*departure, position_, !transfer.receiving, rank(), &why)) {
    case DepartureVerdict::kConsumed:
      // The peer's call (or receive) completed, so it holds this message; the wait broke
      // only because the peer closed its connection afterwards.
      transfer.done = true;
      return Outcome::kDone;
    case DepartureVerdict::kInFlight:
      // The peer sent it before leaving, yet the connection broke before it arrived.
      return Outcome::kBroken;
    case DepartureVerdict::kLeftBefore:
      mesh_->Fail(Failure{Failure::Source::kPeer, transfer.peer, absl::StatusCode::kAborted, why});
      return Outcome::kWoken;
  }
  return Outcome::kBroken;
}

absl::Status GlooExchange::Report(Transfer& transfer, Outcome outcome, const std::string& detail,
                              absl::Span<const Op> others) {
  const std::string waiting_for =
      absl::StrCat("rank ", transfer.peer, " ", VerbText(transfer.waiting_for));
  switch (outcome) {
    case Outcome::kDone:
      return absl::OkStatus();
    case Outcome::kWoken:
      return Stopped(waiting_for);
    case Outcome::kBroken: {
      // A connection to a peer that departed breaks when it closes: judge the transfer by
      // the peer's record before calling the connection lost.
      const Outcome judged = JudgeDeparture(transfer);
      if (judged == Outcome::kDone) return absl::OkStatus();
      if (judged == Outcome::kBroken) mesh_->FailForBrokenConnection({transfer.peer}, detail);
      return Stopped(waiting_for);
    }
    case Outcome::kExpired:
      break;
  }
  if (mesh_->failure().has_value()) return Stopped(waiting_for);
  // Name every peer still owing the same thing. Gloo closed the connections on expiry, so
  // a zero wait now completes only a transfer that had completed.
  std::vector<int64_t> late = {transfer.peer};
  for (Op other : others) {
    if (other == kNoOp) continue;
    Transfer& candidate = transfers_[other];
    if (&candidate == &transfer || candidate.done ||
        candidate.waiting_for != transfer.waiting_for) {
      continue;
    }
    std::string ignored;
    if (WaitFor(candidate, std::chrono::milliseconds(0), &ignored) != Outcome::kDone) {
      late.push_back(candidate.peer);
    }
  }
  std::sort(late.begin(), late.end());
  late.erase(std::unique(late.begin(), late.end()), late.end());
  const absl::Status expired = absl::DeadlineExceededError(
      absl::StrCat(prefix_, ": waited ", absl::FormatDuration(timeout_), " for ", RanksText(late),
                   " ", VerbText(transfer.waiting_for)));
  mesh_->Fail(
      Failure{Failure::Source::kThisRank, rank(), expired.code(), std::string(expired.message())});
  return expired;
}

absl::Status GlooExchange::Wait(Op op) {
  if (op == kNoOp || !status_.ok()) return status_;
  Transfer& transfer = transfers_[op];
  if (transfer.done) return status_;
  std::string detail;
  const Outcome outcome = WaitFor(transfer, Remaining(), &detail);
  status_ = Report(transfer, outcome, detail, {});
  return status_;
}

absl::Status GlooExchange::WaitAll(absl::Span<const Op> ops) {
  for (Op op : ops) {
    if (op == kNoOp) continue;
    if (!status_.ok()) return status_;
    Transfer& transfer = transfers_[op];
    if (transfer.done) continue;
    std::string detail;
    const Outcome outcome = WaitFor(transfer, Remaining(), &detail);
    status_ = Report(transfer, outcome, detail, ops);
  }
  return status_;
}

absl::Status GlooExchange::Finish() {
  std::vector<Op> all(transfers_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Op>(i);
  return WaitAll(all);
}

absl::Status GlooExchange::Fail(const absl::Status& status) {
  if (!status_.ok()) return status_;
  status_ = absl::Status(status.code(), absl::StrCat(prefix_, ": ", status.message()));
  mesh_->Fail(
      Failure{Failure::Source::kThisRank, rank(), status_.code(), std::string(status_.message())});
  return status_;
}

}  // namespace gloo_backend
}  // namespace oneflow
