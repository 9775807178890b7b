#include "oneflow_core/comm/in_process/communicator.h"

#include <atomic>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/call_guard.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/in_process/collectives.h"
#include "oneflow_core/comm/in_process/group_state.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace in_process {
namespace {

// Phases of call k, relative to 2k (group_state.h).
constexpr int64_t kArrived = 1;
constexpr int64_t kDone = 2;

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(GroupState* state, int64_t rank)
      : state_(state), rank_(rank), sends_(state->size()), receives_(state->size()) {}

  int64_t size() const override { return state_->size(); }
  int64_t rank() const override { return rank_; }
  std::string Name() const override {
    return absl::StrCat("in-process group '", state_->name(), "' rank ", rank_, " of ", size());
  }

  absl::Status AllReduce(const float* input, float* output, int64_t count,
                         const CollectiveOptions& options) override {
    Post post{DescribeCall(CollectiveKind::kAllReduce, options, count, {}, 0), input, output};
    absl::Status arguments =
        count < 0
            ? absl::InvalidArgumentError(absl::StrCat("count is ", count, "; it must be >= 0"))
            : CheckBuffer("input", input, count);
    if (arguments.ok()) arguments = CheckBuffer("output", output, count);
    return RunCollective(std::move(post), arguments, options);
  }

  absl::Status ReduceScatter(const float* input, float* output, absl::Span<const int64_t> counts,
                             const CollectiveOptions& options) override {
    Post post{DescribeCall(CollectiveKind::kReduceScatter, options, 0, counts, 0), input, output};
    absl::Status arguments = CheckCounts("counts", counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, SumOf(counts));
    if (arguments.ok()) arguments = CheckBuffer("output", output, counts[rank_]);
    return RunCollective(std::move(post), arguments, options);
  }

  absl::Status AllGather(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                         const CollectiveOptions& options) override {
    Post post{DescribeCall(CollectiveKind::kAllGather, options, 0, byte_counts, 0), input, output};
    absl::Status arguments = CheckCounts("byte_counts", byte_counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, byte_counts[rank_]);
    if (arguments.ok()) arguments = CheckBuffer("output", output, SumOf(byte_counts));
    return RunCollective(std::move(post), arguments, options);
  }

  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    Post post{DescribeCall(CollectiveKind::kAllToAll, options, 0, byte_counts, 0), input, output};
    absl::Status arguments = CheckCounts("byte_counts", byte_counts, size() * size());
    if (arguments.ok()) {
      int64_t sent = 0;
      int64_t received = 0;
      for (int64_t peer = 0; peer < size(); ++peer) {
        sent += byte_counts[rank_ * size() + peer];
        received += byte_counts[peer * size() + rank_];
      }
      arguments = CheckBuffer("input", input, sent);
      if (arguments.ok()) arguments = CheckBuffer("output", output, received);
    }
    return RunCollective(std::move(post), arguments, options);
  }

  absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root,
                         const CollectiveOptions& options) override {
    Post post{DescribeCall(CollectiveKind::kBroadcast, options, bytes, {}, root), buffer, buffer};
    absl::Status arguments = CheckRankInGroup("root", root, size());
    if (arguments.ok()) arguments = CheckBuffer("buffer", buffer, bytes);
    return RunCollective(std::move(post), arguments, options);
  }

  absl::Status Send(const void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override;
  absl::Status Recv(void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override;

  void Abort(const absl::Status& cause) override { state_->Abort(cause); }

 private:

  // "<description>: in-process group 'tp' rank 1 of 4, all_reduce call 7".
  std::string Prefix(const CollectiveOptions& options, absl::string_view what) const {
    return absl::StrCat(options.description, options.description.empty() ? "" : ": ", Name(), ", ",
                        what);
  }
  // This rank's own wait expired: DEADLINE_EXCEEDED naming who had not got there.
  absl::Status Expired(const CollectiveOptions& options, absl::string_view what,
                       const std::vector<int64_t>& missing, absl::string_view waiting_for) const {
    return absl::DeadlineExceededError(absl::StrCat(Prefix(options, what), ": waited ",
                                                    absl::FormatDuration(options.timeout), " for ",
                                                    RanksText(missing), " ", waiting_for));
  }
  // Another rank aborted the group while this one waited: the cause's code, both stories.
  absl::Status GaveUp(const CollectiveOptions& options, absl::string_view what,
                      const std::vector<int64_t>& missing, absl::string_view waiting_for) const {
    const absl::Status cause = state_->abort_cause();
    return absl::Status(cause.code(), absl::StrCat(Prefix(options, what), ": stopped waiting for ",
                                                   RanksText(missing), " ", waiting_for,
                                                   ": the group was aborted: ", cause.message()));
  }
  absl::Status AbortedDuring(const CollectiveOptions& options, absl::string_view what) const {
    const absl::Status cause = state_->abort_cause();
    return absl::Status(cause.code(), absl::StrCat(Prefix(options, what),
                                                   ": the group was aborted: ", cause.message()));
  }
  absl::Status AbortedEarlier(const CollectiveOptions& options, absl::string_view what) const {
    return absl::FailedPreconditionError(
        absl::StrCat(Prefix(options, what),
                     ": the group was aborted earlier: ", state_->abort_cause().message()));
  }
  // A call that fails before communicating aborts the group, so its peers fail fast.
  absl::Status FailAndAbort(const absl::Status& status, const CollectiveOptions& options,
                            absl::string_view what) {
    const absl::Status failed = WithContext(status, Prefix(options, what));
    state_->Abort(failed);
    return failed;
  }

  absl::Status RefuseSecondThread(const CollectiveOptions& options, absl::string_view what) {
    return FailAndAbort(SecondThreadError(), options, what);
  }

  absl::Status RunCollective(Post post, const absl::Status& arguments,
                             const CollectiveOptions& options);

  GroupState* const state_;
  const int64_t rank_;
  int64_t calls_ = 0;
  std::vector<int64_t> sends_;     // sends so far, per peer
  std::vector<int64_t> receives_;  // receives so far, per peer
  std::atomic<bool> busy_{false};
};

absl::Status InProcessCommunicator::RunCollective(Post post, const absl::Status& arguments,
                                                  const CollectiveOptions& options) {
  const Clock::time_point deadline = DeadlineAfter<Clock>(Clock::now(), options.timeout);
  Busy busy(&busy_);
  // The call counter belongs to the thread inside the call: read it only once entered.
  if (!busy.entered()) return RefuseSecondThread(options, CollectiveKindName(post.call.kind));
  const std::string what = absl::StrCat(CollectiveKindName(post.call.kind), " call ", calls_ + 1);
  const int64_t call = ++calls_;
  const int64_t base = 2 * call;
  if (!arguments.ok()) return FailAndAbort(arguments, options, what);
  if (state_->aborted()) return AbortedEarlier(options, what);

  // Arrive: publish the post, then wait for every rank's.
  state_->post(rank_) = std::move(post);
  if (!state_->SetPhase(rank_, base + kArrived, /*unless_aborted=*/true)) {
    return AbortedEarlier(options, what);
  }
  std::optional<absl::Status> expired;
  auto expire = [&](int64_t phase, absl::string_view waiting_for) {
    expired = Expired(options, what, state_->RanksBelow(phase), waiting_for);
    return *expired;
  };
  const WaitResult arrival = state_->Wait(
      [&] { return state_->AllReached(base + kArrived); }, deadline,
      [&]() -> std::optional<absl::Status> { return expire(base + kArrived, "to arrive"); });
  if (arrival != WaitResult::kReady) {
    // Withdraw. Nobody reads or writes this rank's buffers: see group_state.h.
    const std::vector<int64_t> missing = state_->RanksBelow(base + kArrived);
    state_->SetPhase(rank_, base + kDone, /*unless_aborted=*/false);
    return arrival == WaitResult::kExpired ? *expired : GaveUp(options, what, missing, "to arrive");
  }

  // Everyone arrived: from here on, leave only through the drain below.
  absl::Status status = CheckPostsAgree(*state_, rank_);
  if (!status.ok()) {
    status = WithContext(status, Prefix(options, what));
    state_->Abort(status);
  } else if (state_->aborted()) {
    status = AbortedDuring(options, what);
  } else {
    RunPostedCollective(*state_, rank_);
    state_->SetCompleted(rank_, call);
  }
  const CollectiveKind kind = state_->post(rank_).call.kind;
  state_->SetPhase(rank_, base + kDone, /*unless_aborted=*/false);
  const bool drained_late = state_->WaitDraining(
      [&] { return state_->AllReached(base + kDone); }, deadline,
      [&] { return expire(base + kDone, "to finish reading and writing its buffers"); });
  if (drained_late && status.ok()) status = *expired;
  // A peer that skipped its chunk (it saw the abort) left a chunk of this output unwritten.
  if (status.ok() && kind == CollectiveKind::kAllReduce && !state_->AllCompleted(call)) {
    status = AbortedDuring(options, what);
  }
  return status;
}

absl::Status InProcessCommunicator::Send(const void* data, int64_t bytes, int64_t peer,
                                         const CollectiveOptions& options) {
  const Clock::time_point deadline = DeadlineAfter<Clock>(Clock::now(), options.timeout);
  Busy busy(&busy_);
  if (!busy.entered()) return RefuseSecondThread(options, absl::StrCat("send to rank ", peer));
  const int64_t sequence = peer >= 0 && peer < size() ? sends_[peer] + 1 : 0;
  const std::string what = absl::StrCat("send ", sequence, " to rank ", peer);
  absl::Status arguments = CheckRankInGroup("peer", peer, size());
  if (arguments.ok() && peer == rank_) {
    arguments = absl::InvalidArgumentError("a rank cannot send to itself");
  }
  if (arguments.ok()) arguments = CheckBuffer("data", data, bytes);
  if (!arguments.ok()) return FailAndAbort(arguments, options, what);
  sends_[peer] = sequence;

  Channel& channel = state_->channel(rank_, peer);
  if (!state_->Offer(channel, sequence, data, bytes)) return AbortedEarlier(options, what);
  std::optional<absl::Status> expired;
  const WaitResult result = state_->Wait(
      [&] { return channel.done.load(std::memory_order_acquire) >= sequence; }, deadline,
      [&]() -> std::optional<absl::Status> {
        if (channel.claimed >= sequence) return std::nullopt;  // the receiver is copying
        expired = Expired(options, what, {peer}, "to receive");
        return expired;
      });
  if (result == WaitResult::kExpired) return *expired;
  if (result == WaitResult::kAborted) {
    if (state_->Withdraw(channel, sequence)) return GaveUp(options, what, {peer}, "to receive");
    // The receiver claimed the data before the abort and is copying it: wait it out.
    state_->WaitDraining([&] { return channel.done.load(std::memory_order_acquire) >= sequence; },
                         Clock::time_point::max(), [] { return absl::OkStatus(); });
  }
  return WithContext(channel.receive_status, Prefix(options, what));
}

absl::Status InProcessCommunicator::Recv(void* data, int64_t bytes, int64_t peer,
                                         const CollectiveOptions& options) {
  const Clock::time_point deadline = DeadlineAfter<Clock>(Clock::now(), options.timeout);
  Busy busy(&busy_);
  if (!busy.entered()) return RefuseSecondThread(options, absl::StrCat("receive from rank ", peer));
  const int64_t sequence = peer >= 0 && peer < size() ? receives_[peer] + 1 : 0;
  const std::string what = absl::StrCat("receive ", sequence, " from rank ", peer);
  absl::Status arguments = CheckRankInGroup("peer", peer, size());
  if (arguments.ok() && peer == rank_) {
    arguments = absl::InvalidArgumentError("a rank cannot receive from itself");
  }
  if (arguments.ok()) arguments = CheckBuffer("data", data, bytes);
  if (!arguments.ok()) return FailAndAbort(arguments, options, what);
  receives_[peer] = sequence;
  if (state_->aborted()) return AbortedEarlier(options, what);

  Channel& channel = state_->channel(peer, rank_);
  std::optional<absl::Status> expired;
  const WaitResult result = state_->Wait(
      [&] { return channel.posted.load(std::memory_order_acquire) >= sequence; }, deadline,
      [&]() -> std::optional<absl::Status> {
        expired = Expired(options, what, {peer}, "to send");
        return expired;
      });
  if (result == WaitResult::kExpired) return *expired;
  if (result == WaitResult::kAborted || !state_->Claim(channel, sequence)) {
    return GaveUp(options, what, {peer}, "to send");
  }
  absl::Status status = absl::OkStatus();
  if (channel.bytes != bytes) {
    status = absl::InvalidArgumentError(absl::StrCat(Prefix(options, what), ": rank ", peer,
                                                     " sends ", channel.bytes, " bytes but ", bytes,
                                                     " are expected"));
  } else if (bytes > 0) {
    std::memcpy(data, channel.data, bytes);
  }
  channel.receive_status = status;
  state_->MarkReceived(channel, sequence);
  if (!status.ok()) state_->Abort(status);
  return status;
}

}  // namespace
}  // namespace in_process

absl::StatusOr<std::unique_ptr<InProcessGroup>> InProcessGroup::Create(int64_t size,
                                                                       std::string name) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("in-process group '", name, "' of ", size, " ranks; a group needs >= 1"));
  }
  return std::unique_ptr<InProcessGroup>(
      new InProcessGroup(std::make_unique<in_process::GroupState>(size, std::move(name))));
}

InProcessGroup::InProcessGroup(std::unique_ptr<in_process::GroupState> state)
    : state_(std::move(state)) {
  for (int64_t rank = 0; rank < state_->size(); ++rank) {
    communicators_.push_back(
        std::make_unique<in_process::InProcessCommunicator>(state_.get(), rank));
  }
}

InProcessGroup::~InProcessGroup() = default;

Communicator& InProcessGroup::communicator(int64_t rank) { return *communicators_[rank]; }

}  // namespace oneflow
