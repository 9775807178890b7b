// The Communicator of a group of processes over a mesh of connections (a transport), with
// the schedules every such transport shares (schedules.h): Gloo's TCP pairs (gloo/mesh.h)
// and UCX (ucx/mesh.h). A transport brings
//   - a MeshType: rank(), size(), group_name(), Connect(deadline, timeout, prefix),
//     Fail(Failure), failure(); built from the transport's group options; with
//     kRecordsDeparture: when true, NoteDeparture(calls, sends, receives) is told what
//     this rank completed before the mesh is destroyed (gloo/departure.h);
//   - an ExchangeType (exchange.h) built as (MeshType*, slot, deadline, timeout, prefix),
//     with kArrivalCarriesPayload: when true, it arrives through its own Arrive(call) and
//     runs small all-reduces inside the arrival through SmallAllReduce (ucx/exchange.h);
// and gets every rule of communicator.h the same way: argument checks, one thread per
// communicator, the call header's arrival and agreement check, deadlines, and a failed
// call failing the group.
#ifndef ONEFLOW_CORE_COMM_GLOO_MESH_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_GLOO_MESH_COMMUNICATOR_H_

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/call_agreement.h"
#include "oneflow_core/comm/call_guard.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/gloo/call_header.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/comm/gloo/failure.h"
#include "oneflow_core/comm/gloo/schedules.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace gloo_backend {

template <typename MeshType, typename ExchangeType>
class MeshCommunicator final : public Communicator {
 public:
  // `backend` names the transport in messages: "gloo group 'g' rank 1 of 4".
  template <typename Options>
  MeshCommunicator(std::string backend, Options options)
      : backend_(std::move(backend)),
        connect_timeout_(options.connect_timeout),
        mesh_(std::move(options)),
        sends_(mesh_.size()),
        receives_(mesh_.size()) {}

  // No call is in progress (communicator.h), so every call counted completed or failed the
  // group; the mesh writes the counts only when it did not fail.
  ~MeshCommunicator() override {
    if constexpr (MeshType::kRecordsDeparture) mesh_.NoteDeparture(calls_, sends_, receives_);
  }

  int64_t size() const override { return mesh_.size(); }
  int64_t rank() const override { return mesh_.rank(); }
  std::string Name() const override {
    return absl::StrCat(backend_, " group '", mesh_.group_name(), "' rank ", rank(), " of ", size());
  }

  absl::Status AllReduce(const float* input, float* output, int64_t count,
                         const CollectiveOptions& options) override {
    absl::Status arguments =
        count < 0
            ? absl::InvalidArgumentError(absl::StrCat("count is ", count, "; it must be >= 0"))
            : CheckBuffer("input", input, count);
    if (arguments.ok()) arguments = CheckBuffer("output", output, count);
    const CallDescription call = DescribeCall(CollectiveKind::kAllReduce, options, count, {}, 0);
    if constexpr (ExchangeType::kArrivalCarriesPayload) {
      if (size() > 1 && count > 0 &&
          count * static_cast<int64_t>(sizeof(float)) <= kSmallAllReduceBytes) {
        return RunCollective(
            call, arguments, options,
            [&](Exchange& exchange) {
              return static_cast<ExchangeType&>(exchange).SmallAllReduce(call, input, output, count,
                                                                         options.reduce_op);
            },
            /*arrive=*/false);
      }
    }
    return RunCollective(call, arguments, options, [&](Exchange& exchange) {
      return RunAllReduce(exchange, input, output, count, options.reduce_op, scratch_);
    });
  }

  absl::Status ReduceScatter(const float* input, float* output, absl::Span<const int64_t> counts,
                             const CollectiveOptions& options) override {
    absl::Status arguments = CheckCounts("counts", counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, SumOf(counts));
    if (arguments.ok()) arguments = CheckBuffer("output", output, counts[rank()]);
    const CallDescription call =
        DescribeCall(CollectiveKind::kReduceScatter, options, 0, counts, 0);
    return RunCollective(call, arguments, options, [&](Exchange& exchange) {
      return RunReduceScatter(exchange, input, output, counts, options.reduce_op, scratch_);
    });
  }

  absl::Status AllGather(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                         const CollectiveOptions& options) override {
    absl::Status arguments = CheckCounts("byte_counts", byte_counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, byte_counts[rank()]);
    if (arguments.ok()) arguments = CheckBuffer("output", output, SumOf(byte_counts));
    const CallDescription call =
        DescribeCall(CollectiveKind::kAllGather, options, 0, byte_counts, 0);
    return RunCollective(call, arguments, options, [&](Exchange& exchange) {
      return RunAllGather(exchange, input, output, byte_counts);
    });
  }

  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    absl::Status arguments = CheckCounts("byte_counts", byte_counts, size() * size());
    if (arguments.ok()) {
      int64_t sent = 0;
      int64_t received = 0;
      for (int64_t peer = 0; peer < size(); ++peer) {
        sent += byte_counts[rank() * size() + peer];
        received += byte_counts[peer * size() + rank()];
      }
      arguments = CheckBuffer("input", input, sent);
      if (arguments.ok()) arguments = CheckBuffer("output", output, received);
    }
    const CallDescription call =
        DescribeCall(CollectiveKind::kAllToAll, options, 0, byte_counts, 0);
    return RunCollective(call, arguments, options, [&](Exchange& exchange) {
      return RunAllToAll(exchange, input, output, byte_counts);
    });
  }

  absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root,
                         const CollectiveOptions& options) override {
    absl::Status arguments = CheckRankInGroup("root", root, size());
    if (arguments.ok()) arguments = CheckBuffer("buffer", buffer, bytes);
    const CallDescription call = DescribeCall(CollectiveKind::kBroadcast, options, bytes, {}, root);
    return RunCollective(call, arguments, options, [&](Exchange& exchange) {
      return RunBroadcast(exchange, buffer, bytes, root);
    });
  }

  absl::Status Send(const void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return RunPointToPoint(/*sending=*/true, peer, data, bytes, options, [&](Exchange& exchange) {
      return RunSend(exchange, data, bytes, peer);
    });
  }

  absl::Status Recv(void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return RunPointToPoint(/*sending=*/false, peer, data, bytes, options, [&](Exchange& exchange) {
      return RunRecv(exchange, data, bytes, peer);
    });
  }

  void Abort(const absl::Status& cause) override {
    const absl::Status failure =
        cause.ok() ? absl::CancelledError("aborted with an OK status") : cause;
    mesh_.Fail(Failure{Failure::Source::kThisRank, rank(), failure.code(),
                       std::string(failure.message())});
  }

 private:
  using Body = absl::FunctionRef<absl::Status(Exchange&)>;

  // "<description>: gloo group 'g' rank 1 of 4, all_reduce call 7".
  std::string Prefix(const CollectiveOptions& options, absl::string_view what) const {
    return absl::StrCat(options.description, options.description.empty() ? "" : ": ", Name(), ", ",
                        what);
  }

  // A call that fails before communicating fails the group, so its peers fail fast.
  absl::Status FailAndAbort(const absl::Status& status, const std::string& prefix) {
    const absl::Status failed = WithContext(status, prefix);
    mesh_.Fail(
        Failure{Failure::Source::kThisRank, rank(), failed.code(), std::string(failed.message())});
    return failed;
  }

  absl::Status AbortedEarlier(const std::string& prefix) const {
    return absl::FailedPreconditionError(absl::StrCat(prefix, ": ", mesh_.failure()->Earlier()));
  }

  absl::Status RefuseSecondThread(const CollectiveOptions& options, absl::string_view what) {
    return FailAndAbort(SecondThreadError(), Prefix(options, what));
  }

  // Connects on the first call, bounded by connect_timeout as well as the call's timeout.
  absl::Status Connect(absl::Time start, absl::Time deadline, const CollectiveOptions& options,
                       const std::string& prefix) {
    const absl::Duration timeout = std::min(options.timeout, connect_timeout_);
    return mesh_.Connect(std::min(deadline, DeadlineAfter(start, connect_timeout_)), timeout,
                         prefix);
  }

  // `arrive` false: `body` does the arrival itself (kArrivalCarriesPayload).
  absl::Status RunCollective(const CallDescription& mine, const absl::Status& arguments,
                             const CollectiveOptions& options, Body body, bool arrive = true) {
    const absl::Time start = absl::Now();
    const absl::Time deadline = DeadlineAfter(start, options.timeout);
    const char* kind = CollectiveKindName(mine.kind);
    Busy busy(&busy_);
    // The call counter belongs to the thread inside the call: read it only once entered.
    if (!busy.entered()) return RefuseSecondThread(options, kind);
    const uint64_t call = ++calls_;
    const std::string prefix = Prefix(options, absl::StrCat(kind, " call ", call));
    if (!arguments.ok()) return FailAndAbort(arguments, prefix);
    if (mesh_.failure().has_value()) return AbortedEarlier(prefix);
    if (size() > 1) {
      const absl::Status connected = Connect(start, deadline, options, prefix);
      if (!connected.ok()) return connected;
    }
    ExchangeType exchange(&mesh_, call << 8, deadline, options.timeout, prefix);
    if (size() > 1 && arrive) {
      absl::Status arrived;
      if constexpr (ExchangeType::kArrivalCarriesPayload) {
        arrived = exchange.Arrive(mine);
      } else {
        arrived = gloo_backend::Arrive(exchange, mine);
      }
      if (!arrived.ok()) return arrived;
    }
    return body(exchange);
  }

  absl::Status RunPointToPoint(bool sending, int64_t peer, const void* data, int64_t bytes,
                               const CollectiveOptions& options, Body body) {
    const absl::Time start = absl::Now();
    const absl::Time deadline = DeadlineAfter(start, options.timeout);
    const std::string first_what =
        absl::StrCat(sending ? "send to rank " : "receive from rank ", peer);
    Busy busy(&busy_);
    if (!busy.entered()) return RefuseSecondThread(options, first_what);
    std::vector<int64_t>& sequences = sending ? sends_ : receives_;
    const bool valid_peer = peer >= 0 && peer < size();
    const int64_t sequence = valid_peer ? sequences[peer] + 1 : 0;
    const std::string prefix =
        Prefix(options, absl::StrCat(sending ? "send " : "receive ", sequence,
                                     sending ? " to rank " : " from rank ", peer));
    absl::Status arguments = CheckRankInGroup("peer", peer, size());
    if (arguments.ok() && peer == rank()) {
      arguments = absl::InvalidArgumentError(sending ? "a rank cannot send to itself"
                                                     : "a rank cannot receive from itself");
    }
    if (arguments.ok()) arguments = CheckBuffer("data", data, bytes);
    if (!arguments.ok()) return FailAndAbort(arguments, prefix);
    sequences[peer] = sequence;
    if (mesh_.failure().has_value()) return AbortedEarlier(prefix);
    const absl::Status connected = Connect(start, deadline, options, prefix);
    if (!connected.ok()) return connected;
    // The k-th message between two ranks uses the same slots on both, whichever way.
    ExchangeType exchange(&mesh_, kPointToPointSlots | (static_cast<uint64_t>(sequence) << 8), deadline,
                      options.timeout, prefix);
    return body(exchange);
  }

  const std::string backend_;
  const absl::Duration connect_timeout_;
  MeshType mesh_;
  std::atomic<bool> busy_{false};
  // Owned by the thread inside a call (see Busy).
  uint64_t calls_ = 0;
  std::vector<int64_t> sends_;     // messages sent so far, per peer
  std::vector<int64_t> receives_;  // messages received so far, per peer
  std::vector<float> scratch_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_MESH_COMMUNICATOR_H_
